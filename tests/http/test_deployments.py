"""Deployments roll out in the twin (issue 36): the Deployment -> ReplicaSet -> Pod chain of
kube-controller-manager, through kubectl over HTTPS — ``kubectl rollout status``, a template change rolling to a
new ReplicaSet, ``kubectl delete`` taking everything with it — and a Deployment whose pods Pod Security refuses
does not roll out, with upstream's FailedCreate on its ReplicaSet."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from flexq.kube.deployment_controller import template_hash

from .conftest import Served

IMAGE = "registry.example.com/flexq-fallback@sha256:" + "0123456789abcdef" * 4


def _deployment(name: str, ns: str, replicas: int, image: str = "busybox", **pod: object) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": image}], **pod},
                },
            },
        }
    )


@pytest.fixture(scope="module")
def nodes(served: Served) -> Served:
    for i in range(2):
        name = f"deploy-node-{i}"
        served.twin.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        served.twin.patch(
            "node",
            name,
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                    "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                }
            },
            subresource="status",
        )
    served.kubectl("create", "namespace", "dep")
    return served


def _json(served: Served, *args: str) -> dict:
    return json.loads(served.kubectl(*args, "-o", "json").stdout)


def _until(check: object, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


def test_a_deployment_rolls_out_rolls_on_and_goes_with_its_replica_sets(nodes: Served) -> None:
    k = nodes.kubectl
    k("apply", "-f", "-", input=_deployment("web", "dep", 3))
    r = k("rollout", "status", "deployment/web", "-n", "dep", "--timeout=60s", timeout=70)
    assert 'deployment "web" successfully rolled out' in r.stdout
    dep = _json(nodes, "get", "deployment", "web", "-n", "dep")
    assert dep["status"]["readyReplicas"] == 3 and dep["status"]["availableReplicas"] == 3
    conds = {c["type"]: c for c in dep["status"]["conditions"]}
    assert conds["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    (rs,) = _json(nodes, "get", "rs", "-n", "dep", "-l", "app=web")["items"]
    first = rs["metadata"]["name"]
    assert (
        first
        == f"web-{template_hash(_json(nodes, 'get', 'deployment', 'web', '-n', 'dep')['spec']['template'])}"
    )
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    table = k("get", "rs", "-n", "dep").stdout.split("\n")
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert table[1].split()[:4] == [first, "3", "3", "3"]
    pods = _json(nodes, "get", "pods", "-n", "dep", "-l", "app=web")["items"]
    assert len(pods) == 3 and all(p["metadata"]["ownerReferences"][0]["name"] == first for p in pods)

    # a new template: a second ReplicaSet takes over, the first goes to 0 (kept: revisionHistoryLimit)
    k("set", "image", "deployment/web", "c=busybox:1.36", "-n", "dep")
    k("rollout", "status", "deployment/web", "-n", "dep", "--timeout=60s", timeout=70)
    sets = {
        r["metadata"]["name"]: r for r in _json(nodes, "get", "rs", "-n", "dep", "-l", "app=web")["items"]
    }
    assert len(sets) == 2 and sets[first]["spec"]["replicas"] == 0
    (second,) = [n for n in sets if n != first]
    assert sets[second]["spec"]["replicas"] == 3
    assert sets[second]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    _until(lambda: len(_json(nodes, "get", "pods", "-n", "dep", "-l", "app=web")["items"]) == 3)
    events = k("get", "events", "-n", "dep", "--field-selector", "reason=ScalingReplicaSet").stdout
    assert f"Scaled up replica set {first} from 0 to 3" in events
    # maxSurge 25% of 3 rounds up to 1, maxUnavailable rounds down to 0: one pod at a time
    assert f"Scaled up replica set {second} from 0 to 1" in events
    assert f"Scaled down replica set {first} from 3 to 2" in events
    assert f"Scaled down replica set {first} from 1 to 0" in events

    # scaled through the spec
    k("patch", "deployment", "web", "-n", "dep", "--type=merge", "-p", '{"spec":{"replicas":1}}')
    k("rollout", "status", "deployment/web", "-n", "dep", "--timeout=60s", timeout=70)
    _until(lambda: len(_json(nodes, "get", "pods", "-n", "dep", "-l", "app=web")["items"]) == 1)

    k("delete", "deployment", "web", "-n", "dep")
    _until(lambda: not _json(nodes, "get", "rs", "-n", "dep", "-l", "app=web")["items"])
    _until(lambda: not _json(nodes, "get", "pods", "-n", "dep", "-l", "app=web")["items"])


def test_recreate_takes_the_old_pods_down_first(nodes: Served) -> None:
    body = json.loads(_deployment("batchy", "dep", 2))
    body["spec"]["strategy"] = {"type": "Recreate"}
    nodes.kubectl("apply", "-f", "-", input=json.dumps(body))
    nodes.kubectl("rollout", "status", "deployment/batchy", "-n", "dep", "--timeout=60s", timeout=70)
    nodes.kubectl("set", "image", "deployment/batchy", "c=busybox:1.36", "-n", "dep")
    nodes.kubectl("rollout", "status", "deployment/batchy", "-n", "dep", "--timeout=60s", timeout=70)

    def images() -> list[str]:
        pods = _json(nodes, "get", "pods", "-n", "dep", "-l", "app=batchy")["items"]
        return sorted(c["image"] for p in pods for c in p["spec"]["containers"])

    _until(lambda: images() == ["busybox:1.36", "busybox:1.36"])
    events = _json(nodes, "get", "events", "-n", "dep", "--field-selector", "reason=ScalingReplicaSet")[
        "items"
    ]
    said = [e["message"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]
    downs = [
        i for i, m in enumerate(said) if "Scaled down replica set batchy-" in m and m.endswith("from 2 to 0")
    ]
    ups = [
        i for i, m in enumerate(said) if "Scaled up replica set batchy-" in m and m.endswith("from 0 to 2")
    ]
    assert len(ups) == 2 and len(downs) == 1 and ups[0] < downs[0] < ups[1], said  # old down before new up
    nodes.kubectl("delete", "deployment", "batchy", "-n", "dep")


def test_a_deployment_whose_pods_pod_security_refuses_does_not_roll_out(nodes: Served) -> None:
    k = nodes.kubectl
    k("create", "namespace", "dep-r")
    k("label", "namespace", "dep-r", "pod-security.kubernetes.io/enforce=restricted")
    k("apply", "-f", "-", input=_deployment("loose", "dep-r", 2))
    r = k("rollout", "status", "deployment/loose", "-n", "dep-r", "--timeout=3s", check=False, timeout=20)
    assert r.returncode != 0
    (rs,) = _json(nodes, "get", "rs", "-n", "dep-r")["items"]
    name = rs["metadata"]["name"]

    def refused() -> list[dict]:
        evs = _json(nodes, "get", "events", "-n", "dep-r", "--field-selector", "reason=FailedCreate")["items"]
        return [e for e in evs if e["involvedObject"]["name"] == name]

    _until(lambda: bool(refused()))
    message = refused()[0]["message"]
    assert message.startswith(
        f'Error creating: pods "{name}-" is forbidden: violates PodSecurity "restricted:latest": '
        "allowPrivilegeEscalation != false"
    ), message
    # backed off, not retried at one instant: a handful of attempts in a couple of seconds
    time.sleep(2)
    assert sum(e.get("count", 1) for e in refused()) <= 6
    assert not _json(nodes, "get", "pods", "-n", "dep-r")["items"]


def test_the_fallback_s_own_deployment_rolls_out_under_pod_security_restricted(nodes: Served) -> None:
    """``flexq fallback manifests`` (a Namespace enforcing "restricted", its RBAC, a Deployment): applied to the
    twin, the Deployment's pod passes Pod Security and ``kubectl rollout status`` completes, as on GKE."""
    text = subprocess.run(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "fallback",
            "manifests",
            "--namespace",
            "fb-roll",
            "--image",
            IMAGE,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    nodes.kubectl("apply", "-f", "-", input=text)
    ns = _json(nodes, "get", "namespace", "fb-roll")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    r = nodes.kubectl(
        "rollout", "status", "deploy/flexq-fallback", "-n", "fb-roll", "--timeout=60s", timeout=70
    )
    assert 'deployment "flexq-fallback" successfully rolled out' in r.stdout
    want = _json(nodes, "get", "deploy", "flexq-fallback", "-n", "fb-roll")["spec"]["replicas"]
    pods = _json(nodes, "get", "pods", "-n", "fb-roll")["items"]
    assert len(pods) == want >= 1
    assert all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["spec"]["serviceAccountName"] == "flexq-fallback" for p in pods)
