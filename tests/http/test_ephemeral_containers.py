"""Issue 49, item 3: the ``pods/ephemeralcontainers`` subresource (404 before), over real HTTPS with kubectl as a
tenant in a ``restricted`` namespace: ``kubectl debug`` adds an ephemeral container only with the right on the
subresource, and only one Pod Security allows; an update through it changes nothing but the ephemeral
containers, may not remove or change an existing one, and refuses the fields an ephemeral container may not set;
a plain pod patch that adds one stays refused."""

from __future__ import annotations

import json

import pytest

from tests.http.conftest import Served
from tests.http.test_rbac_served import kubeconfig_with, kubectl_as, token_for

NS = "ephemeral"
RESTRICTED_SC = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": NS},
    "spec": {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [{"name": "c", "image": "busybox:1", "securityContext": RESTRICTED_SC}],
    },
}
SUB = f"/api/v1/namespaces/{NS}/pods/p/ephemeralcontainers"


@pytest.fixture(scope="module")
def tenants(served: Served, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(a debugger's kubeconfig, a pod editor's kubeconfig without the subresource, the debugger's token)."""
    served.kubectl("create", "namespace", NS)
    served.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=restricted")
    for sa, resources in (("debugger", "pods,pods/ephemeralcontainers"), ("editor", "pods")):
        served.kubectl("create", "serviceaccount", sa, "-n", NS)
        served.kubectl(
            "create", "role", sa, "-n", NS, "--verb=get,create,patch,update", f"--resource={resources}"
        )
        served.kubectl("create", "rolebinding", sa, "-n", NS, f"--role={sa}", f"--serviceaccount={NS}:{sa}")
    base = tmp_path_factory.mktemp("kc")
    tok = token_for(served, NS, "debugger")
    debugger = kubeconfig_with(served, tok, base / "debugger")
    editor = kubeconfig_with(served, token_for(served, NS, "editor"), base / "editor")
    path = base / "pod.json"
    path.write_text(json.dumps(POD))
    created = kubectl_as(served, editor, "create", "-f", str(path))
    assert created.returncode == 0, created.stderr
    return debugger, editor, tok


def _pod(served: Served) -> dict:
    return json.loads(served.kubectl("get", "pod", "p", "-n", NS, "-o", "json").stdout)


def test_kubectl_debug_adds_an_ephemeral_container_as_upstream(
    served: Served, tenants: tuple[str, str, str]
) -> None:
    debugger, editor, _ = tenants
    # without the right on pods/ephemeralcontainers: 403 naming the subresource
    r = kubectl_as(
        served, editor, "debug", "p", "-n", NS, "--image=busybox:1", "--profile=restricted", "-c", "d0"
    )
    assert r.returncode != 0 and "pods/ephemeralcontainers" in r.stderr and "forbidden" in r.stderr, r.stderr
    # a debug container Pod Security's restricted level refuses (the sysadmin profile is privileged)
    r = kubectl_as(
        served, debugger, "debug", "p", "-n", NS, "--image=busybox:1", "--profile=sysadmin", "-c", "d1"
    )
    assert r.returncode != 0 and 'violates PodSecurity "restricted:latest"' in r.stderr, r.stderr
    assert not _pod(served)["spec"].get("ephemeralContainers")
    # a compliant one is added, and nothing else changes
    before = _pod(served)
    r = kubectl_as(
        served, debugger, "debug", "p", "-n", NS, "--image=busybox:1", "--profile=restricted", "-c", "dbg"
    )
    assert r.returncode == 0, r.stderr
    after = _pod(served)
    assert [c["name"] for c in after["spec"]["ephemeralContainers"]] == ["dbg"]
    assert {k: v for k, v in after["spec"].items() if k != "ephemeralContainers"} == before["spec"]
    # the subresource reads as the pod
    got = served.http("GET", SUB, token=tenants[2])
    assert got.status_code == 200 and got.json()["kind"] == "Pod" and got.json()["metadata"]["name"] == "p"


def _put(served: Served, token: str, pod: dict) -> tuple[int, str]:
    r = served.http(
        "PUT", SUB, token=token, data=json.dumps(pod), headers={"Content-Type": "application/json"}
    )
    return r.status_code, r.json().get("message", "")


def test_an_update_through_the_subresource_is_checked(served: Served, tenants: tuple[str, str, str]) -> None:
    debugger, _, token = tenants
    pod = _pod(served)
    if not pod["spec"].get("ephemeralContainers"):
        r = kubectl_as(
            served, debugger, "debug", "p", "-n", NS, "--image=busybox:1", "--profile=restricted", "-c", "dbg"
        )
        assert r.returncode == 0, r.stderr
        pod = _pod(served)
    eph = pod["spec"]["ephemeralContainers"]
    # removing or changing an existing one
    code, msg = _put(served, token, {**pod, "spec": {**pod["spec"], "ephemeralContainers": []}})
    assert code == 422 and 'existing ephemeral containers "dbg" may not be removed' in msg, msg
    changed = [{**eph[0], "image": "busybox:2"}]
    code, msg = _put(served, token, {**pod, "spec": {**pod["spec"], "ephemeralContainers": changed}})
    assert (
        code == 422
        and 'spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral containers "dbg" may not be changed'
        in msg
    ), msg
    # fields an ephemeral container may not set, a taken name, a target that is no container
    bad = [
        {**eph[0]},
        {
            "name": "x",
            "image": "busybox:1",
            "ports": [{"containerPort": 80}],
            "securityContext": RESTRICTED_SC,
        },
        {"name": "c", "image": "busybox:1", "securityContext": RESTRICTED_SC},
        {"name": "y", "image": "busybox:1", "targetContainerName": "nope", "securityContext": RESTRICTED_SC},
    ]
    code, msg = _put(served, token, {**pod, "spec": {**pod["spec"], "ephemeralContainers": bad}})
    assert code == 422, msg
    assert "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container" in msg, (
        msg
    )
    assert 'spec.ephemeralContainers[2].name: Duplicate value: "c"' in msg, msg
    assert 'spec.ephemeralContainers[3].targetContainerName: Not found: "nope"' in msg, msg
    # other fields sent through the subresource are the live pod's, not the request's
    extra = [{**eph[0]}, {"name": "e2", "image": "busybox:1", "securityContext": RESTRICTED_SC}]
    spec = {**pod["spec"], "ephemeralContainers": extra, "hostNetwork": True, "activeDeadlineSeconds": 5}
    code, msg = _put(served, token, {**pod, "spec": spec})
    assert code == 200, msg
    now = _pod(served)["spec"]
    assert [c["name"] for c in now["ephemeralContainers"]] == ["dbg", "e2"]
    assert "hostNetwork" not in now and "activeDeadlineSeconds" not in now
    # a plain pod patch adding an ephemeral container stays refused
    patch = json.dumps(
        {"spec": {"ephemeralContainers": [*now["ephemeralContainers"], {"name": "z", "image": "b"}]}}
    )
    r = kubectl_as(served, debugger, "patch", "pod", "p", "-n", NS, "--type=merge", "-p", patch)
    assert r.returncode != 0 and "pod updates may not change fields" in r.stderr, r.stderr
    # verbs the subresource does not serve (asked by the admin: a tenant's is 403 first, as upstream's)
    r = served.http("DELETE", SUB)
    assert r.status_code == 405, r.text
