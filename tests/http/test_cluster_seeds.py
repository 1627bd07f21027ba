"""What a real cluster seeds for its clients, seen through real kubectl and the Python client: the
``kubernetes`` Service in ``default`` (ClusterIP, 443 ``https``, as on GKE), a ``kube-root-ca.crt`` ConfigMap
holding the API server's CA in every namespace and a ``default`` ServiceAccount in every namespace, each
made for a new namespace and re-made when deleted; and none duplicated when the twin restarts on its state."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from flexq import Twin
from tests.http.conftest import Served


@pytest.fixture(scope="module")
def core(served: Served) -> client.CoreV1Api:
    cfg = client.Configuration()
    cfg.host = served.url
    cfg.ssl_ca_cert = served.ca
    cfg.api_key = {"authorization": f"Bearer {served.token}"}
    return client.CoreV1Api(client.ApiClient(cfg))


def _eventually(check: Callable[[], object], timeout: float = 15) -> object:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_the_kubernetes_service(served: Served) -> None:
    out = served.kubectl("get", "svc", "kubernetes", "-n", "default").stdout.splitlines()
    assert out[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert out[1].split()[:5] == ["kubernetes", "ClusterIP", "34.118.224.1", "<none>", "443/TCP"]
    labels = served.kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.metadata.labels}").stdout
    assert '"component":"apiserver"' in labels and '"provider":"kubernetes"' in labels
    served.kubectl("delete", "svc", "kubernetes")
    assert _eventually(lambda: served.kubectl("get", "svc", "kubernetes", check=False).returncode == 0)


def test_every_namespace_has_the_root_ca_and_a_default_service_account(
    served: Served, core: client.CoreV1Api
) -> None:
    ca = Path(served.ca).read_text()
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        cm = _eventually(
            lambda ns=ns: (
                served.kubectl("get", "cm", "kube-root-ca.crt", "-n", ns, check=False).returncode == 0
            )
        )
        assert cm, ns
        assert core.read_namespaced_config_map("kube-root-ca.crt", ns).data == {"ca.crt": ca}
        assert core.read_namespaced_service_account("default", ns).metadata.name == "default"
    served.kubectl("create", "namespace", "team-a")
    assert _eventually(
        lambda: [s.metadata.name for s in core.list_namespaced_service_account("team-a").items] == ["default"]
    )
    got = _eventually(lambda: served.kubectl("get", "cm", "-n", "team-a", "-o", "name").stdout.split())
    assert got == ["configmap/kube-root-ca.crt"]
    cm = core.read_namespaced_config_map("kube-root-ca.crt", "team-a")
    assert cm.metadata.annotations["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used"
    )
    uid = cm.metadata.uid
    served.kubectl("delete", "cm", "kube-root-ca.crt", "-n", "team-a")
    served.kubectl("delete", "sa", "default", "-n", "team-a")

    def remade() -> bool:
        cms = core.list_namespaced_config_map("team-a").items
        sas = core.list_namespaced_service_account("team-a").items
        return [c.metadata.uid != uid for c in cms] == [True] and len(sas) == 1

    assert _eventually(remade)
    core.patch_namespaced_config_map("kube-root-ca.crt", "team-a", {"data": {"ca.crt": "tampered"}})
    assert _eventually(
        lambda: core.read_namespaced_config_map("kube-root-ca.crt", "team-a").data == {"ca.crt": ca}
    )


def test_seeds_are_not_duplicated_across_restarts(tmp_path: Path) -> None:
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()

    def seeds(twin: Twin) -> list[tuple[str, str, str, str]]:
        out = []
        for kind in ("ServiceAccount", "ConfigMap", "Service", "PriorityClass"):
            for o in twin.list(kind):
                m = o["metadata"]
                out.append((kind, m.get("namespace", ""), m["name"], m["uid"]))
        return sorted(out)

    first = Twin(clock="virtual", home=tmp_path, kube_ca_b64=ca)
    first.run_until_idle()
    before = seeds(first)
    first.close()
    again = Twin(clock="virtual", home=tmp_path, kube_ca_b64=ca)
    again.run_until_idle()
    try:
        assert seeds(again) == before
        assert len([s for s in before if s[0] == "ConfigMap"]) == 5  # one kube-root-ca.crt per namespace
        assert [s[2] for s in before if s[0] == "PriorityClass"] == [
            "system-cluster-critical",
            "system-node-critical",
        ]
    finally:
        again.close()
