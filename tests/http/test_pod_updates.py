"""Issue 49, item 3: pod updates as the API server allows them (``ValidatePodUpdate``), over real HTTPS with kubectl
as a tenant who may only get, create and patch pods in a ``restricted`` namespace.

A compliant pod may have its images changed, its ``activeDeadlineSeconds`` set or lowered and tolerations added;
a patch that makes it privileged, joins a host namespace, adds ``SYS_ADMIN``, adds a container or ephemeral
containers is refused, 422 "pod updates may not ..." (ephemeral containers go through their own subresource), and
nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.http.conftest import Served
from tests.http.test_rbac_served import kubeconfig_with, kubectl_as, token_for

NS = "pod-updates"

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
        "containers": [
            {
                "name": "c",
                "image": "busybox:1",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def tenant(served: Served, tmp_path_factory: pytest.TempPathFactory) -> str:
    served.kubectl("create", "namespace", NS)
    served.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=restricted")
    served.kubectl("create", "serviceaccount", "tenant", "-n", NS)
    served.kubectl("create", "role", "pods", "-n", NS, "--verb=get,create,patch", "--resource=pods")
    served.kubectl("create", "rolebinding", "pods", "-n", NS, "--role=pods", f"--serviceaccount={NS}:tenant")
    kc = kubeconfig_with(served, token_for(served, NS, "tenant"), tmp_path_factory.mktemp("tenant") / "kc")
    can = served.kubectl(
        "auth", "can-i", "patch", "pods", "-n", NS, f"--as=system:serviceaccount:{NS}:tenant"
    )
    assert can.stdout.strip() == "yes"
    return kc


def _patch(served: Served, kc: str, patch: object, kind: str = "strategic") -> tuple[int, str]:
    r = kubectl_as(served, kc, "patch", "pod", "p", "-n", NS, f"--type={kind}", "-p", json.dumps(patch))
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("patch", "kind"),
    [
        ({"spec": {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}}, "strategic"),
        ({"spec": {"hostNetwork": True}}, "merge"),
        ({"spec": {"hostPID": True}}, "merge"),
        (
            {
                "spec": {
                    "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]
                }
            },
            "strategic",
        ),
        ({"spec": {"containers": [{"name": "extra", "image": "busybox:1"}]}}, "strategic"),
        ({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox:1"}]}}, "merge"),
    ],
    ids=["privileged", "host-network", "host-pid", "sys-admin", "extra-container", "ephemeral"],
)
def test_a_pod_update_beyond_the_mutable_fields_is_refused(
    served: Served, tenant: str, tmp_path: Path, patch: object, kind: str
) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(POD))
    served.kubectl(
        "delete", "pod", "p", "-n", NS, "--ignore-not-found", "--wait=false", "--grace-period=0", "--force"
    )
    created = kubectl_as(served, tenant, "create", "-f", str(path))
    assert created.returncode == 0, created.stderr
    before = json.loads(served.kubectl("get", "pod", "p", "-n", NS, "-o", "json").stdout)
    code, out = _patch(served, tenant, patch, kind)
    assert code == 1, out
    assert "is invalid" in out and "pod updates may not" in out, out
    after = json.loads(served.kubectl("get", "pod", "p", "-n", NS, "-o", "json").stdout)
    assert (
        after["spec"] == before["spec"]
        and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    )


def test_the_mutable_fields_change(served: Served, tenant: str, tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(POD))
    served.kubectl(
        "delete", "pod", "p", "-n", NS, "--ignore-not-found", "--wait=false", "--grace-period=0", "--force"
    )
    created = kubectl_as(served, tenant, "create", "-f", str(path))
    assert created.returncode == 0, created.stderr
    code, out = _patch(served, tenant, {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}})
    assert code == 0, out
    code, out = _patch(served, tenant, {"spec": {"activeDeadlineSeconds": 600}}, "merge")
    assert code == 0, out
    code, out = _patch(served, tenant, {"spec": {"activeDeadlineSeconds": 900}}, "merge")
    assert code == 1 and "must be less than or equal to previous value" in out, out
    # tolerations have no merge key (a strategic merge replaces the list, dropping the defaults: refused); a
    # JSON patch adds one
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    code, out = _patch(served, tenant, {"spec": {"tolerations": [toleration]}})
    assert code == 1 and "only additions to existing tolerations" in out, out
    code, out = _patch(
        served, tenant, [{"op": "add", "path": "/spec/tolerations/-", "value": toleration}], "json"
    )
    assert code == 0, out
    got = json.loads(served.kubectl("get", "pod", "p", "-n", NS, "-o", "json").stdout)["spec"]
    assert got["containers"][0]["image"] == "busybox:2" and got["activeDeadlineSeconds"] == 600
    assert {"key": "k", "operator": "Exists", "effect": "NoSchedule"} in got["tolerations"]
