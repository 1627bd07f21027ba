"""``flexq fallback manifests`` applied to the served twin with real kubectl (server-side dry run and for real),
and the twin refusing broken RBAC objects and Deployments with the API server's words; the Deployment's pod
checked against the Pod Security Standards' "restricted" profile (issue 27 item 3, issue 28 item 10) by the
twin's own Pod Security admission, and rolled out on nodes: ``kubectl rollout status`` completes (issue 36)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexq.api import podsecurity
from flexq.cli.fallback_manifests import CLUSTER_RULES, manifests, manifests_yaml


def _manifests(*args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "fallback", "manifests", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


DIGEST = "sha256:" + "0123456789abcdef" * 4
WHEEL = "https://files.example.com/dist/flexq-0.1.0-py3-none-any.whl"
WHEEL_SHA = "ab" * 32


def restricted_violations(pod: dict) -> list[str]:
    """What the Pod Security Standards' "restricted" level (baseline included) finds wrong with ``pod`` (a pod
    spec), in kube-apiserver's words: the twin's own admission check (one rule, one place)."""
    return podsecurity.violations("restricted", pod)


def _checks(found: list[str]) -> list[str]:
    """The names of the checks failed (the text before each reason's parenthesis)."""
    return sorted(f.split(" (", 1)[0] for f in found)


def test_the_checker_knows_the_restricted_profile() -> None:
    """The checker itself, on the Deployment flexq shipped before (python:3.11-slim running `pip install` as root
    through `sh -c`): each of its gaps is named."""
    old = {
        "containers": [
            {
                "name": "fallback",
                "image": "python:3.11-slim",
                "command": ["/bin/sh", "-c", "pip install flexq==0.1.0 && exec flexq fallback --in-cluster"],
                "securityContext": {"allowPrivilegeEscalation": False},
            }
        ]
    }
    assert _checks(restricted_violations(old)) == [
        "runAsNonRoot != true",
        "seccompProfile",
        "unrestricted capabilities",
    ]
    worse = {**old, "hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    assert {"host namespaces", "hostPath volumes", "restricted volume types"} <= set(
        _checks(restricted_violations(worse))
    )


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"image": f"registry.example.com/flexq-fallback@{DIGEST}"},
        {"package": WHEEL, "package_sha256": WHEEL_SHA},
    ],
    ids=["default-image", "image-by-digest", "wheel"],
)
def test_the_pod_passes_the_restricted_profile_and_runs_no_shell(kw: dict) -> None:
    docs = manifests(**kw)
    ns = docs[0]
    assert ns["kind"] == "Namespace"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    dep = docs[-1]
    pod = dep["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    assert pod["securityContext"]["runAsUser"] == 65532  # the Dockerfile's USER
    for c in [*(pod.get("initContainers") or []), *pod["containers"]]:
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert Path(c["command"][0]).name not in ("sh", "bash", "ash", "dash"), c["command"]
        assert "-c" not in c["command"][:3]
    if "image" in kw:
        assert pod["containers"][0]["image"] == kw["image"]  # referenced by its digest, as given
        assert pod["containers"][0]["command"][:5] == [
            "flexq",
            "fallback",
            "--in-cluster",
            "--leader-elect",
            "--state-namespace",
        ]
    if "package" in kw:
        init = pod["initContainers"][0]
        assert (
            init["command"][:4] == ["python", "-m", "pip", "install"]
            and "--require-hashes" in init["command"]
        )
        cm = next(d for d in docs if d["kind"] == "ConfigMap")
        req = cm["data"]["requirements.txt"]
        assert req.startswith(f"flexq @ {WHEEL} \\\n    --hash=sha256:{WHEEL_SHA}\n")
        # every requirement carries its hashes (pip refuses the whole install otherwise)
        assert "kubernetes==" in req and req.count("--hash=sha256:") > 50
        assert WHEEL not in str(
            dep
        )  # what the user gave is in the requirements file only, never in a command


@pytest.mark.parametrize(
    "args, says",
    [
        (["--image", "x; rm -rf /"], "--image: not an image reference: 'x; rm -rf /'"),
        (["--image", "Upper/Case"], "--image: not an image reference"),
        (
            ["--package", "http://plain.example/flexq-0.1.0-py3-none-any.whl", "--package-sha256", WHEEL_SHA],
            "--package: not an https URL of a wheel",
        ),
        (
            ["--package", WHEEL + " --index-url https://evil.example", "--package-sha256", WHEEL_SHA],
            "--package: not an https URL of a wheel",
        ),
        (["--package", WHEEL], "--package-sha256: the wheel's SHA-256"),
        (["--package", WHEEL, "--package-sha256", "XYZ"], "--package-sha256: the wheel's SHA-256"),
        (
            ["--package", WHEEL, "--package-sha256", WHEEL_SHA, "--image", "a/b"],
            "--image and --package: give one",
        ),
        (
            ["--package", WHEEL, "--package-sha256", WHEEL_SHA, "--python-image", "py thon"],
            "--python-image: not",
        ),
    ],
    ids=["shell", "upper-case", "http", "injected-option", "no-hash", "bad-hash", "both", "python-image"],
)
def test_what_cannot_go_into_a_manifest_is_refused(args: list[str], says: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "fallback", "manifests", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert says in " ".join(r.stderr.split()), r.stderr


def test_an_image_or_a_package_is_required_and_a_tag_gets_a_note_to_pin_the_digest() -> None:
    none = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "fallback", "manifests"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert none.returncode == 2 and none.stdout == ""
    assert "give --image" in none.stderr and "--package" in none.stderr and "\n" not in none.stderr.strip()
    tagged = subprocess.run(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "fallback",
            "manifests",
            "--image",
            "r.example/flexq-fallback:0.1.0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tagged.returncode == 0 and "pin it by digest" in " ".join(tagged.stderr.split())
    pinned = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "fallback", "manifests", "--image", f"r.example/f@{DIGEST}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert pinned.returncode == 0 and pinned.stderr == ""


IMAGE = f"r.example/flexq-fallback@{DIGEST}"


def test_manifests_apply_with_server_dry_run(served) -> None:
    text = _manifests("--image", IMAGE)
    assert text == manifests_yaml(image=IMAGE)
    # every object written whole (no YAML anchors), and the why of the state namespace said
    assert "&id" not in text and "*id" not in text
    assert text.startswith("# flexq's fallback keeps its state") and "kueue-system" in text.splitlines()[0]
    pod = next(d for d in yaml.safe_load_all(text) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["readinessProbe"]["httpGet"]["port"] == main["livenessProbe"]["httpGet"]["port"] == "metrics"
    assert "--metrics-port" in main["command"]
    kinds = [d["kind"] for d in yaml.safe_load_all(text)]
    assert kinds == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "PodDisruptionBudget",
        "Deployment",
    ]
    # as on a real API server, a server-side dry run creates no namespace, so what goes into a new one is
    # refused for want of it
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
    assert r.returncode != 0 and 'namespaces "flexq-system" not found' in r.stderr, r.stderr
    served.kubectl("create", "namespace", "flexq-system")
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    for line in (
        "namespace/flexq-system configured (server dry run)",
        "serviceaccount/flexq-fallback created (server dry run)",
        "clusterrole.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "clusterrolebinding.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "role.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "rolebinding.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "deployment.apps/flexq-fallback created (server dry run)",
        "poddisruptionbudget.policy/flexq-fallback created (server dry run)",
    ):
        assert line in r.stdout, r.stdout
    assert (
        "flexq-fallback" not in served.kubectl("get", "clusterroles", "-o", "name").stdout
    )  # nothing stored
    assert (
        "flexq-fallback" not in served.kubectl("get", "deploy,sa", "-n", "flexq-system", "-o", "name").stdout
    )


def test_the_wheel_install_applies_with_server_dry_run(served) -> None:
    """The --package form (an init container, a ConfigMap of hashed requirements) against the twin, its
    namespace included: refused for want of it, then accepted once it exists."""
    text = _manifests("--namespace", "fb-wheel", "--package", WHEEL, "--package-sha256", WHEEL_SHA)
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
    assert r.returncode != 0 and 'namespaces "fb-wheel" not found' in r.stderr, r.stderr
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump(next(yaml.safe_load_all(text))))  # the Namespace
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    assert "namespace/fb-wheel unchanged (server dry run)" in r.stdout, r.stdout
    assert "configmap/flexq-fallback-requirements created (server dry run)" in r.stdout, r.stdout
    assert "deployment.apps/flexq-fallback created (server dry run)" in r.stdout, r.stdout
    ns = yaml.safe_load(served.kubectl("get", "namespace", "fb-wheel", "-o", "yaml").stdout)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_manifests_apply_and_read_back(served) -> None:
    image = f"registry.example.com/flexq-fallback@{DIGEST}"
    text = _manifests("--namespace", "fb-test", "--image", image)
    served.kubectl("apply", "-f", "-", input=text)
    dep = yaml.safe_load(
        served.kubectl("get", "deploy", "flexq-fallback", "-n", "fb-test", "-o", "yaml").stdout
    )
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    assert container["command"] == [
        "flexq",
        "fallback",
        "--in-cluster",
        "--leader-elect",
        "--state-namespace",
        "kueue-system",
        "--metrics-port",
        "9090",
    ]
    assert restricted_violations(dep["spec"]["template"]["spec"]) == []  # as stored, with the API's defaults
    # the API server's defaults
    assert dep["spec"]["revisionHistoryLimit"] == 10 and dep["spec"]["progressDeadlineSeconds"] == 600
    assert dep["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    cr = yaml.safe_load(served.kubectl("get", "clusterrole", "flexq-fallback", "-o", "yaml").stdout)
    assert cr["rules"] == CLUSTER_RULES
    crb = yaml.safe_load(served.kubectl("get", "clusterrolebinding", "flexq-fallback", "-o", "yaml").stdout)
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "flexq-fallback", "namespace": "fb-test"}]
    served.kubectl("get", "sa", "flexq-fallback", "-n", "fb-test")
    served.kubectl("get", "role,rolebinding", "flexq-fallback", "-n", "kueue-system")
    again = served.kubectl("apply", "-f", "-", input=text)
    assert "deployment.apps/flexq-fallback unchanged" in again.stdout, again.stdout
    # roleRef is immutable
    crb["roleRef"]["name"] = "other"
    r = served.kubectl("replace", "-f", "-", input=yaml.safe_dump(crb), check=False)
    assert r.returncode != 0 and "cannot change roleRef" in r.stderr, r.stderr
    served.kubectl("delete", "--ignore-not-found", "-f", "-", input=text, timeout=60)


def test_kubectl_create_serviceaccount_generator(served) -> None:
    served.kubectl("create", "serviceaccount", "pb-sa", "-n", "default")
    sa = yaml.safe_load(served.kubectl("get", "sa", "pb-sa", "-n", "default", "-o", "yaml").stdout)
    assert sa["kind"] == "ServiceAccount" and sa["metadata"]["name"] == "pb-sa"
    served.kubectl("delete", "sa", "pb-sa", "-n", "default")


def _refused(served, doc: dict) -> str:
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert r.returncode != 0, r.stdout
    return r.stderr


def test_broken_manifests_are_refused_with_the_api_servers_text(served) -> None:
    docs = list(yaml.safe_load_all(manifests_yaml(image=IMAGE)))
    cr, crb = docs[2], docs[3]
    dep = next(d for d in docs if d["kind"] == "Deployment")

    bad = yaml.safe_load(yaml.safe_dump(cr))
    del bad["rules"][0]["verbs"]
    err = _refused(served, bad)
    assert 'The ClusterRole "flexq-fallback" is invalid: ' in err, err
    assert "rules[0].verbs: Required value: verbs must contain at least one value" in err, err

    bad = yaml.safe_load(yaml.safe_dump(cr))
    del bad["rules"][0]["apiGroups"]
    assert (
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        in _refused(served, bad)
    )

    bad = yaml.safe_load(yaml.safe_dump(crb))
    bad["roleRef"]["kind"] = "Role"
    assert 'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"' in _refused(served, bad)

    bad = yaml.safe_load(yaml.safe_dump(crb))
    del bad["subjects"][0]["namespace"]
    assert "subjects[0].namespace: Required value" in _refused(served, bad)

    bad = yaml.safe_load(yaml.safe_dump(dep))
    bad["spec"]["selector"]["matchLabels"] = {"app": "other"}
    err = _refused(served, bad)
    assert 'The Deployment "flexq-fallback" is invalid: ' in err, err
    assert (
        "spec.template.metadata.labels: Invalid value" in err
        and "`selector` does not match template `labels`" in err
    ), err

    bad = yaml.safe_load(yaml.safe_dump(dep))
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert (
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
        in _refused(served, bad)
    )

    bad = yaml.safe_load(yaml.safe_dump(dep))
    del bad["spec"]["template"]["spec"]["containers"]
    assert "spec.template.spec.containers" in _refused(served, bad)
    assert "flexq-fallback" not in served.kubectl("get", "clusterroles", "-o", "name").stdout


NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
"""


def test_the_fallback_deployment_rolls_out_in_its_restricted_namespace(served) -> None:
    """The manifests applied for real to a twin with nodes: the Deployment's pods pass Pod Security (the
    namespace enforces "restricted"), are scheduled and run Ready on the twin's kubelet (its simulated executor
    runs no image; the readiness probe is an HTTP probe the kubelet does not make, so Ready comes with Running),
    and ``kubectl rollout status`` completes (issue 36)."""
    for name in ("fb-node-1", "fb-node-2"):
        served.kubectl("apply", "-f", "-", input=NODE.format(name=name))
    text = _manifests("--namespace", "fb-roll", "--image", IMAGE)
    served.kubectl("apply", "-f", "-", input=text)
    r = served.kubectl(
        "rollout", "status", "deploy/flexq-fallback", "-n", "fb-roll", "--timeout=60s", timeout=90
    )
    assert 'deployment "flexq-fallback" successfully rolled out' in r.stdout, r.stdout
    pods = yaml.safe_load(
        served.kubectl(
            "get", "pods", "-n", "fb-roll", "-l", "app.kubernetes.io/name=flexq-fallback", "-o", "yaml"
        ).stdout
    )["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["status"]["phase"] == "Running"
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
        assert restricted_violations(pod["spec"]) == []
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    events = served.kubectl(
        "get", "events", "-n", "fb-roll", "--field-selector", "reason=FailedCreate", "-o", "name"
    )
    assert events.stdout.strip() == ""
    served.kubectl("delete", "--ignore-not-found", "-f", "-", input=text, timeout=60)
