"""The manifests that run ``flexq fallback`` inside a cluster, built from one place (``manifests``).

Owns: ``manifests`` (the objects: a Namespace that enforces the Pod Security Standards' "restricted" profile,
ServiceAccount, the least-privilege ClusterRole and Role with their bindings — ``CLUSTER_RULES`` are exactly what
the fallback's pass does through ``flexq.fallback.kubeapi``, and deciding by forecast adds what its forward run
reads — and a Deployment of two replicas under leader election whose pod passes that profile: non-root, read-only
root filesystem, every capability dropped, seccomp RuntimeDefault, with a PodDisruptionBudget letting a drain take
one of them at a time) and ``manifests_yaml`` (the same as a YAML stream). The pod runs either an image with flexq
preinstalled (``--image``: the repository's ``Dockerfile`` builds it; referenced by digest when given one) or,
with ``--package URL --package-sha256``, the Python image with flexq's wheel and its core dependencies installed
by an init container from hashes only (the wheel's, and the lock's: ``cli/deploy/requirements.txt``, in a
ConfigMap). No command is a shell line: every argument is a list item, and what the user gives is validated (an
image reference, an https URL of a wheel, a SHA-256) before it is written (``ManifestError`` says which option is
wrong). Pure: builds objects, prints nothing (``flexq.cli.fallback`` parses the options and prints).
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from flexq import __version__
from flexq.api.wellknown import KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE
from flexq.semantics.pods import image_reference_error

SA_NAME = "flexq-fallback"
IMAGE = (
    f"flexq-fallback:{__version__}"  # what `docker build -t flexq-fallback:<version> .` makes (Dockerfile)
)
PYTHON_IMAGE = "python:3.11-slim"  # the init container's and the pod's image with --package
METRICS_PORT = 9090  # the in-cluster Deployment's metrics port, probed by the kubelet
RUN_AS = 65532  # the Dockerfile's USER: a numeric uid, so that the kubelet can check runAsNonRoot
SITE = "/opt/flexq"  # --package: where the init container installs flexq (an emptyDir)
# exactly what FallbackPolicy does through KubernetesAPI (flexq.fallback.kubeapi), per resource
CLUSTER_RULES: list[dict[str, Any]] = [
    # one pass reads one view (flexq.fallback.view): lists, never a get per object
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list", "patch", "delete"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["localqueues", "resourceflavors", "admissionchecks", "provisioningrequestconfigs"],
        "verbs": ["list"],
    },
    # update: a stocked-out flavor's nominal quota is capped while its backoff runs, then put back
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["list", "update"]},
    # the jobs Kueue manages (lists: one view per pass); update, patch: a job moved off a flavor is annotated,
    # then restricted — a RayCluster Kueue manages itself like a RayJob (tests/fallback/test_least_privilege.py)
    {"apiGroups": ["ray.io"], "resources": ["rayjobs", "rayclusters"], "verbs": ["list", "update", "patch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "update", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    # patch: a stocked-out flavor's nodes kept from scale-down (cluster-autoscaler.kubernetes.io/scale-down-disabled)
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "get", "create", "patch"]},
]


# deciding by forecast (--decide-by forecast) also reads what the forward run needs: the ProvisioningRequests
# (DWS's waits so far) and Kueue's configuration (waitForPodsReady, the requeuing strategy)
FORECAST_CLUSTER_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["provisioningrequests"], "verbs": ["list"]},
]
FORECAST_CONFIG_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": [KUEUE_CONFIG_NAME]},
]
FORECAST_ROLE = f"{SA_NAME}-forecast"


def _state_rules(state_name: str) -> list[dict[str, Any]]:
    # ``create`` cannot be limited by resourceNames (the name is not known at authorization time)
    return [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get", "update"],
            "resourceNames": [state_name],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        # leader election (--leader-elect): the Lease named like the state, as controller-runtime's manager asks
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "update"],
            "resourceNames": [state_name],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]


class ManifestError(ValueError):
    """An option of ``flexq fallback manifests`` that cannot go into a manifest (said with the option)."""


_WHEEL_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*\.whl")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_image(image: str, option: str = "--image") -> str:
    """``image`` if it is an image reference (``[registry/]name[:tag][@sha256:digest]``), else ManifestError."""
    if image_reference_error(image) is not None:  # the kubelet's own grammar (flexq.semantics.pods)
        raise ManifestError(
            f"{option}: not an image reference: {image[:100]!r} (want [REGISTRY/]NAME[:TAG][@sha256:DIGEST])"
        )
    return image


def pinned(image: str) -> bool:
    """Whether ``image`` is referenced by its digest."""
    return "@sha256:" in image


def lock_text() -> str:
    """flexq's core dependencies pinned with hashes (``cli/deploy/requirements.txt``; the Dockerfile's too)."""
    return (resources.files("flexq.cli") / "deploy" / "requirements.txt").read_text(encoding="utf-8")


def package_requirements(package: str, sha256: str) -> str:
    """The requirements file the init container installs with ``--require-hashes``: flexq's wheel at
    ``package`` (an https URL) with its SHA-256, then the core dependencies from the lock."""
    if len(package) > 2048 or not _WHEEL_URL.fullmatch(package):
        raise ManifestError(
            f"--package: not an https URL of a wheel (…/flexq-{__version__}-py3-none-any.whl): {package[:100]!r}"
        )
    if not _SHA256.fullmatch(sha256 or ""):
        raise ManifestError(
            "--package-sha256: the wheel's SHA-256, 64 lower-case hex digits (sha256sum FILE), is required "
            "with --package"
        )
    return f"flexq @ {package} \\\n    --hash=sha256:{sha256}\n" + lock_text()


def _restricted(container: dict[str, Any]) -> dict[str, Any]:
    """A container as the Pod Security Standards' "restricted" profile wants it (with the pod's context)."""
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    return container


def manifests(
    namespace: str = "flexq-system",
    image: str | None = None,
    package: str | None = None,
    package_sha256: str | None = None,
    python_image: str = PYTHON_IMAGE,
    state_namespace: str = "kueue-system",
    state_name: str = "flexq-fallback",
    extra_args: list[str] | None = None,
    decide_by: str = "rules",
) -> list[dict[str, Any]]:
    """The objects that run ``flexq fallback --in-cluster`` in a cluster (see the module docstring): with
    ``image`` (default ``IMAGE``) an image with flexq installed; with ``package`` (an https URL of flexq's
    wheel, and its ``package_sha256``) ``python_image`` with flexq installed at start from hashes."""
    if image is not None and package is not None:
        raise ManifestError("--image and --package: give one (an image with flexq, or a wheel to install)")
    labels = {"app.kubernetes.io/name": SA_NAME, "app.kubernetes.io/part-of": "flexq"}
    ns_labels = {
        **labels,
        # the Pod Security admission enforces the strictest profile in the fallback's namespace
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }
    subject = [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": namespace}]
    rbac = "rbac.authorization.k8s.io"
    args = [
        "fallback",
        "--in-cluster",
        "--leader-elect",
        "--state-namespace",
        state_namespace,
        "--metrics-port",
        str(METRICS_PORT),
        *(["--decide-by", "forecast"] if decide_by == "forecast" else []),
        *(extra_args or []),
    ]
    env = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},  # the root filesystem is read-only
        {"name": "HOME", "value": "/tmp"},
    ]
    tmp = {"name": "tmp", "mountPath": "/tmp"}
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    resources_ = {"requests": {"cpu": "100m", "memory": "192Mi"}, "limits": {"memory": "384Mi"}}
    extra: list[dict[str, Any]] = []
    init: list[dict[str, Any]] = []
    if package is None:
        main = {
            "name": "fallback",
            "image": check_image(image or IMAGE),
            "imagePullPolicy": "IfNotPresent",
            "command": ["flexq", *args],
            "env": env,
            "resources": resources_,
            "volumeMounts": [tmp],
        }
    else:
        requirements = package_requirements(package, package_sha256 or "")
        check_image(python_image, "--python-image")
        extra.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{SA_NAME}-requirements", "namespace": namespace, "labels": labels},
                "data": {"requirements.txt": requirements},
            }
        )
        volumes += [
            {"name": "site", "emptyDir": {"sizeLimit": "512Mi"}},
            {"name": "requirements", "configMap": {"name": f"{SA_NAME}-requirements"}},
        ]
        site = {"name": "site", "mountPath": SITE}
        init.append(
            _restricted(
                {
                    "name": "install",
                    "image": python_image,
                    "imagePullPolicy": "IfNotPresent",
                    # flexq's wheel and every dependency from their hashes only, as files (no build, no shell)
                    "command": [
                        "python",
                        "-m",
                        "pip",
                        "install",
                        "--no-cache-dir",
                        "--disable-pip-version-check",
                        "--no-warn-script-location",
                        "--require-hashes",
                        "--only-binary=:all:",
                        "--target",
                        SITE,
                        "-r",
                        "/etc/flexq-fallback/requirements.txt",
                    ],
                    "env": env,
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "256Mi"},
                        "limits": {"memory": "512Mi"},
                    },
                    "volumeMounts": [
                        tmp,
                        site,
                        {"name": "requirements", "mountPath": "/etc/flexq-fallback", "readOnly": True},
                    ],
                }
            )
        )
        main = {
            "name": "fallback",
            "image": python_image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["python", "-m", "flexq.cli", *args],
            "env": [*env, {"name": "PYTHONPATH", "value": SITE}],
            "resources": resources_,
            "volumeMounts": [tmp, {**site, "readOnly": True}],
        }
    # ready once the process answers on its metrics port (leader or standby); alive while its loop makes rounds:
    # /healthz fails once no election round or pass has ended for --stalled-after (default 2 min), and the kubelet
    # restarts a replica whose loop is stuck though its HTTP server answers
    probe: dict[str, Any] = {"periodSeconds": 20, "timeoutSeconds": 5}
    main["ports"] = [{"name": "metrics", "containerPort": METRICS_PORT}]
    main["readinessProbe"] = dict(
        probe, httpGet={"path": "/metrics", "port": "metrics"}, initialDelaySeconds=5
    )
    main["livenessProbe"] = dict(
        probe, httpGet={"path": "/healthz", "port": "metrics"}, initialDelaySeconds=60, failureThreshold=3
    )
    pod: dict[str, Any] = {
        "serviceAccountName": SA_NAME,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    if init:
        pod["initContainers"] = init
    pod["containers"] = [_restricted(main)]
    pod["volumes"] = volumes
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": ns_labels}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SA_NAME, "namespace": namespace, "labels": labels},
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": SA_NAME, "labels": labels},
            "rules": CLUSTER_RULES + (FORECAST_CLUSTER_RULES if decide_by == "forecast" else []),
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SA_NAME, "labels": labels},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": SA_NAME},
            "subjects": subject,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": SA_NAME, "namespace": state_namespace, "labels": labels},
            "rules": _state_rules(state_name),
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": SA_NAME, "namespace": state_namespace, "labels": labels},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": SA_NAME},
            "subjects": subject,
        },
        *(
            [
                {
                    "apiVersion": f"{rbac}/v1",
                    "kind": "Role",
                    "metadata": {
                        "name": FORECAST_ROLE,
                        "namespace": KUEUE_CONFIG_NAMESPACE,
                        "labels": labels,
                    },
                    "rules": FORECAST_CONFIG_RULES,
                },
                {
                    "apiVersion": f"{rbac}/v1",
                    "kind": "RoleBinding",
                    "metadata": {
                        "name": FORECAST_ROLE,
                        "namespace": KUEUE_CONFIG_NAMESPACE,
                        "labels": labels,
                    },
                    "roleRef": {"apiGroup": rbac, "kind": "Role", "name": FORECAST_ROLE},
                    "subjects": subject,
                },
            ]
            if decide_by == "forecast"
            else []
        ),
        *extra,
        {
            # a node drain or upgrade takes one replica at a time: the other holds the Lease meanwhile
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": SA_NAME, "namespace": namespace, "labels": labels},
            "spec": {
                "maxUnavailable": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": SA_NAME}},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": SA_NAME, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": 2,  # leader election: one acts, the other takes over within the Lease's 15 s
                "selector": {"matchLabels": {"app.kubernetes.io/name": SA_NAME}},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
    ]


def manifests_yaml(**kw: Any) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # every object written whole: no &id001 / *id001
            return True

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:  # the requirements file as a block
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    state = kw.get("state_namespace", "kueue-system")
    head = (
        f"# flexq's fallback keeps its state (ConfigMap flexq-fallback) and its leader-election Lease in {state}\n"
        "# (--state-namespace): beside Kueue, whose Workloads it acts on, where Kueue's operators already look;\n"
        "# the Role there allows those two objects and nothing else.\n"
    )
    return head + yaml.dump_all(manifests(**kw), Dumper=Dumper, sort_keys=False)
