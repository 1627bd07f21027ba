"""Deployments roll out in a served twin with nodes, through real kubectl (issue 36): ``rollout status``, the
ReplicaSet ``kubectl get rs`` shows, a template change making a new ReplicaSet while the old one goes to 0,
``kubectl scale`` through the scale subresource, ``rollout restart``, ``rollout history``, and ``kubectl delete
deployment`` taking its ReplicaSets and pods with it (the garbage collector, through owner references); a pod
Pod Security refuses is the ReplicaSet's ``FailedCreate``, the rollout does not complete and the twin backs off."""

from __future__ import annotations

import json
import time

import pytest

from flexq.api import podsecurity

from .conftest import Served

NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
"""

WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: dep-a}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.27
        resources: {requests: {cpu: 100m, memory: 64Mi}}
"""


@pytest.fixture(scope="module")
def cluster(served: Served) -> Served:
    for name in ("dep-node-1", "dep-node-2"):
        served.kubectl("apply", "-f", "-", input=NODE.format(name=name))
    served.kubectl("create", "namespace", "dep-a")
    served.kubectl("create", "namespace", "dep-r")
    served.kubectl("label", "namespace", "dep-r", f"{podsecurity.ENFORCE}=restricted")
    return served


def _json(served: Served, *args: str) -> dict:
    return json.loads(served.kubectl(*args, "-o", "json").stdout)


def _rollout(served: Served, name: str, ns: str) -> str:
    r = served.kubectl("rollout", "status", f"deployment/{name}", "-n", ns, "--timeout=60s", timeout=90)
    return r.stdout


def _wait_gone(served: Served, what: str, ns: str, label: str) -> str:
    out = ""
    for _ in range(40):
        out = served.kubectl("get", what, "-n", ns, "-l", label, "-o", "name").stdout.strip()
        if not out:
            return out
        time.sleep(0.25)
    return out


def test_a_deployment_rolls_out_scales_updates_and_goes(cluster: Served) -> None:
    k = cluster.kubectl
    k("apply", "-f", "-", input=WEB)
    assert 'deployment "web" successfully rolled out' in _rollout(cluster, "web", "dep-a")

    rss = _json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]
    assert len(rss) == 1
    rs = rss[0]
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    ref = rs["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "Deployment",
        "web",
        True,
        True,
    )
    table = k("get", "rs", "-n", "dep-a").stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert table[1].split()[:4] == [f"web-{pod_hash}", "3", "3", "3"]

    pods = _json(cluster, "get", "pods", "-n", "dep-a", "-l", "app=web")["items"]
    assert len(pods) == 3
    for pod in pods:
        assert (
            pod["metadata"]["name"].startswith(f"web-{pod_hash}-")
            and len(pod["metadata"]["name"]) == len(f"web-{pod_hash}-") + 5
        )
        assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"].startswith("dep-node-")
        assert pod["metadata"]["ownerReferences"][0]["name"] == f"web-{pod_hash}"

    dep = _json(cluster, "get", "deploy", "web", "-n", "dep-a")
    st = dep["status"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"], st["availableReplicas"]) == (
        3,
        3,
        3,
        3,
    )
    assert st["observedGeneration"] == dep["metadata"]["generation"]
    conds = {c["type"]: c for c in st["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["reason"]) == (
        "True",
        "MinimumReplicasAvailable",
    )
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conds["Progressing"]["message"] == f'ReplicaSet "web-{pod_hash}" has successfully progressed.'
    events = _json(cluster, "get", "events", "-n", "dep-a", "--field-selector", "reason=ScalingReplicaSet")
    assert f"Scaled up replica set web-{pod_hash} from 0 to 3" in [e["message"] for e in events["items"]]

    # kubectl scale: the scale subresource
    assert "deployment.apps/web scaled" in k("scale", "deployment/web", "-n", "dep-a", "--replicas=5").stdout
    _rollout(cluster, "web", "dep-a")
    assert len(_json(cluster, "get", "pods", "-n", "dep-a", "-l", "app=web")["items"]) == 5
    scale = json.loads(k("get", "--raw", "/apis/apps/v1/namespaces/dep-a/deployments/web/scale").stdout)
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 5}
    assert scale["status"] == {"replicas": 5, "selector": "app=web"}

    # a template change: a new ReplicaSet, revision 2, the old one scaled to 0
    k("set", "image", "deployment/web", "c=nginx:1.28", "-n", "dep-a")
    _rollout(cluster, "web", "dep-a")
    rss = _json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]
    by_rev = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r for r in rss}
    assert sorted(by_rev) == ["1", "2"]
    assert by_rev["1"]["metadata"]["name"] == f"web-{pod_hash}" and by_rev["1"]["spec"]["replicas"] == 0
    assert by_rev["2"]["spec"]["replicas"] == 5 and by_rev["2"]["status"]["availableReplicas"] == 5
    pods = _json(cluster, "get", "pods", "-n", "dep-a", "-l", "app=web")["items"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.28"} and len(pods) == 5
    assert (
        "deployment.kubernetes.io/revision" in k("get", "deploy", "web", "-n", "dep-a", "-o", "yaml").stdout
    )

    # kubectl rollout restart: a third ReplicaSet
    k("rollout", "restart", "deployment/web", "-n", "dep-a")
    _rollout(cluster, "web", "dep-a")
    history = k("rollout", "history", "deployment/web", "-n", "dep-a").stdout
    assert [ln.split()[0] for ln in history.splitlines()[2:] if ln.strip()] == ["1", "2", "3"], history
    assert len(_json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]) == 3

    # kubectl rollout undo: revision 2's ReplicaSet is the new one again, as revision 4
    k("rollout", "undo", "deployment/web", "-n", "dep-a")
    _rollout(cluster, "web", "dep-a")
    rss = _json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]
    live = [r for r in rss if r["spec"]["replicas"]]
    assert len(live) == 1 and live[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    assert live[0]["metadata"]["name"] == by_rev["2"]["metadata"]["name"]

    # paused: a template change makes no ReplicaSet until resumed
    k("rollout", "pause", "deployment/web", "-n", "dep-a")
    k("set", "image", "deployment/web", "c=nginx:1.29", "-n", "dep-a")
    dep = _json(cluster, "get", "deploy", "web", "-n", "dep-a")
    for _ in range(40):
        if dep["status"].get("observedGeneration") == dep["metadata"]["generation"]:
            break
        time.sleep(0.25)
        dep = _json(cluster, "get", "deploy", "web", "-n", "dep-a")
    assert {c["type"]: c for c in dep["status"]["conditions"]}["Progressing"]["reason"] == "DeploymentPaused"
    assert len(_json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]) == 3
    k("rollout", "resume", "deployment/web", "-n", "dep-a")
    _rollout(cluster, "web", "dep-a")
    assert len(_json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=web")["items"]) == 4

    # kubectl delete: the ReplicaSets and pods go with it
    k("delete", "deployment", "web", "-n", "dep-a", timeout=60)
    assert _wait_gone(cluster, "rs", "dep-a", "app=web") == ""
    assert _wait_gone(cluster, "pods", "dep-a", "app=web") == ""


def test_a_recreate_deployment_replaces_every_pod(cluster: Served) -> None:
    text = WEB.replace("name: web", "name: rec").replace("app: web", "app: rec")
    text = text.replace("  replicas: 3\n", "  replicas: 2\n  strategy: {type: Recreate}\n")
    cluster.kubectl("apply", "-f", "-", input=text)
    _rollout(cluster, "rec", "dep-a")
    cluster.kubectl("set", "image", "deployment/rec", "c=nginx:1.28", "-n", "dep-a")
    _rollout(cluster, "rec", "dep-a")
    rss = _json(cluster, "get", "rs", "-n", "dep-a", "-l", "app=rec")["items"]
    assert sorted(r["spec"]["replicas"] for r in rss) == [0, 2]
    msgs = [
        e["message"]
        for e in _json(
            cluster, "get", "events", "-n", "dep-a", "--field-selector", "involvedObject.name=rec"
        )["items"]
    ]
    assert any(m.endswith("from 2 to 0") and m.startswith("Scaled down replica set rec-") for m in msgs), msgs
    cluster.kubectl("delete", "deployment", "rec", "-n", "dep-a", timeout=60)


def test_a_refused_pod_is_failed_create_and_the_rollout_waits_without_spinning(cluster: Served) -> None:
    text = WEB.replace("name: web, namespace: dep-a", "name: bad, namespace: dep-r").replace(
        "app: web", "app: bad"
    )
    cluster.kubectl("apply", "-f", "-", input=text)
    r = cluster.kubectl(
        "rollout", "status", "deployment/bad", "-n", "dep-r", "--timeout=5s", check=False, timeout=30
    )
    assert r.returncode != 0, r.stdout
    assert "timed out waiting for the condition" in r.stderr, r.stderr
    rs = _json(cluster, "get", "rs", "-n", "dep-r", "-l", "app=bad")["items"][0]
    name = rs["metadata"]["name"]
    assert rs["spec"]["replicas"] == 3 and rs["status"]["replicas"] == 0
    failure = {c["type"]: c for c in rs["status"]["conditions"]}["ReplicaFailure"]
    assert failure["reason"] == "FailedCreate"
    assert failure["message"].startswith(
        f'pods "{name}-" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false'
    )
    events = _json(cluster, "get", "events", "-n", "dep-r", "--field-selector", "reason=FailedCreate")[
        "items"
    ]
    assert len(events) == 1, events
    ev = events[0]
    assert ev["involvedObject"]["kind"] == "ReplicaSet" and ev["involvedObject"]["name"] == name
    assert ev["message"] == "Error creating: " + failure["message"]
    # backing off (5 ms doubling): some twenty tries in the first minutes, not thousands at once
    first = ev["count"]
    time.sleep(1.0)
    again = _json(cluster, "get", "events", "-n", "dep-r", "--field-selector", "reason=FailedCreate")[
        "items"
    ][0]
    assert first <= 20 and again["count"] - first <= 3, (first, again["count"])
    dep = _json(cluster, "get", "deploy", "bad", "-n", "dep-r")
    conds = {c["type"]: c for c in dep["status"]["conditions"]}
    assert conds["Available"]["reason"] == "MinimumReplicasUnavailable"
    assert conds["ReplicaFailure"]["reason"] == "FailedCreate"
    assert _json(cluster, "get", "pods", "-n", "dep-r", "-l", "app=bad")["items"] == []
    cluster.kubectl("delete", "deployment", "bad", "-n", "dep-r", timeout=60)
    assert _wait_gone(cluster, "rs", "dep-r", "app=bad") == ""
