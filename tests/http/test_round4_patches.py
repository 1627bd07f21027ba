"""Issue 49, item 1 over the wire: a tenant who may only create and patch ConfigMaps in its namespace (kubectl, with
its own token) sends a JSON patch of 2,000 ``move`` operations over a 100,000-element list, and a strategic merge
of 40,000 finalizers, while the admin writes every 100 ms. Each patch is answered and no other write waits on it
for seconds: the patch types do work linear in what they touch, as the API server does.

Before (1efbae1), the move bomb took 41.6 s of the write path here and the finalizers 17 s, and every write
waited for them. The bound below is a stall guard, not a speed figure (those are ``bench/hardening.py``'s): a
loaded machine's writes take a fraction of it, the quadratic work several times it."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.http.conftest import Served
from tests.http.test_rbac_served import kubeconfig_with, token_for

NS = "round4-patches"
STALL = 10.0  # seconds no write may wait for another's patch


@pytest.fixture(scope="module")
def tenant(served: Served, tmp_path_factory: pytest.TempPathFactory) -> str:
    served.kubectl("create", "namespace", NS)
    served.kubectl("create", "serviceaccount", "tenant", "-n", NS)
    served.kubectl("create", "role", "cm", "-n", NS, "--verb=get,create,patch", "--resource=configmaps")
    served.kubectl("create", "rolebinding", "cm", "-n", NS, "--role=cm", f"--serviceaccount={NS}:tenant")
    return kubeconfig_with(served, token_for(served, NS, "tenant"), Path(tmp_path_factory.mktemp("t")) / "kc")


def _patch_while_probed(
    served: Served, kubeconfig: str, args: list[str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``kubectl patch`` as the tenant while the admin writes a ConfigMap every 100 ms; the slowest write."""
    worst, stop, failed = [0.0], threading.Event(), []

    def probe() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            t = time.monotonic()
            try:
                r = requests.patch(
                    f"{served.url}/api/v1/namespaces/{NS}/configmaps/probe",
                    data=json.dumps({"data": {"i": str(i)}}),
                    headers={
                        "Authorization": f"Bearer {served.token}",
                        "Content-Type": "application/merge-patch+json",
                    },
                    verify=served.ca,
                    timeout=120,
                )
                if r.status_code != 200:
                    failed.append(f"{r.status_code} {r.text[:200]}")
            except requests.RequestException as err:
                failed.append(repr(err))
            worst[0] = max(worst[0], time.monotonic() - t)
            stop.wait(0.1)

    th = threading.Thread(target=probe, daemon=True)
    th.start()
    try:
        time.sleep(0.3)
        env = dict(os.environ, KUBECONFIG=kubeconfig)
        r = subprocess.run(["kubectl", "patch", *args], env=env, capture_output=True, text=True, timeout=300)
        time.sleep(0.3)
    finally:
        stop.set()
        th.join(timeout=150)
    assert not failed, failed[:3]
    print(f"kubectl patch {args[4]}: worst write {worst[0]:.2f} s")
    return r, worst[0]


def test_a_move_bomb_and_a_long_strategic_merge_stall_no_write(
    served: Served, tenant: str, tmp_path: Path
) -> None:
    served.kubectl("create", "configmap", "probe", "-n", NS)
    served.kubectl("create", "configmap", "moves", "-n", NS, "--kubeconfig", tenant)
    ops: list[dict] = [{"op": "add", "path": "/x", "value": list(range(100_000))}]
    for _ in range(1000):
        ops += [{"op": "move", "from": "/x", "path": "/y"}, {"op": "move", "from": "/y", "path": "/x"}]
    ops.append({"op": "remove", "path": "/x"})
    fins = {"metadata": {"finalizers": [f"example.com/f{i}" for i in range(40_000)]}}
    for what, kind, body in (("the move bomb", "json", ops), ("40,000 finalizers", "strategic", fins)):
        path = tmp_path / f"{kind}.json"
        path.write_text(json.dumps(body))
        r, worst = _patch_while_probed(
            served, tenant, ["configmap", "moves", "-n", NS, f"--type={kind}", "--patch-file", str(path)]
        )
        assert r.returncode == 0, r.stderr[-500:]
        assert worst < STALL, f"a write waited {worst:.1f} s for {what}"
    got = json.loads(served.kubectl("get", "configmap", "moves", "-n", NS, "-o", "json").stdout)
    assert len(got["metadata"]["finalizers"]) == 40_000 and "x" not in got
    served.kubectl(
        "patch", "configmap", "moves", "-n", NS, "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
