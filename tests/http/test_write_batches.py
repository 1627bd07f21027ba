"""Writes from many clients at once run on the loop in batches, one journal commit per batch (``WriteBatch``):
every acknowledged write is on disk, and a refused write in a batch undoes only itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from flexq import Twin
from flexq.http.server import Server

CM = "/api/v1/namespaces/default/configmaps"


def _name(i: int) -> str:
    return f"cm-{i}" if i % 5 else f"Not_A_DNS_Name-{i}"  # every fifth is refused (422)


def test_concurrent_writes_are_acknowledged_durable_and_refused_alone(tmp_path: Path) -> None:
    home = tmp_path / "twin"
    twin = Twin(clock="real", home=home, executor="simulated", check_readonly=True)
    server = Server(twin.core, home).start()
    info = server.write_files()
    auth = {"Authorization": f"Bearer {server.creds.token}"}

    def create(i: int) -> int:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": _name(i)},
            "data": {"i": str(i)},
        }
        r = requests.post(server.url + CM, json=body, headers=auth, verify=info["ca"], timeout=30)
        return r.status_code

    def patch(i: int) -> int:
        r = requests.patch(
            f"{server.url}{CM}/cm-{i}",
            data='{"data":{"patched":"yes"}}',
            headers={**auth, "Content-Type": "application/merge-patch+json"},
            verify=info["ca"],
            timeout=30,
        )
        return r.status_code

    try:
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(create, range(40)))
            assert codes == [201 if i % 5 else 422 for i in range(40)]
            patched = list(pool.map(patch, range(40)))
        assert patched == [200 if i % 5 else 404 for i in range(40)]
        listed = requests.get(server.url + CM, headers=auth, verify=info["ca"], timeout=30).json()
        assert sorted(o["metadata"]["name"] for o in listed["items"]) == sorted(
            [f"cm-{i}" for i in range(40) if i % 5] + ["kube-root-ca.crt"]  # and the cluster's own
        )
    finally:
        server.stop()
        twin.close()
    again = Twin(clock="real", home=home, executor="simulated")  # what the journal holds
    try:
        kept = {
            o["metadata"]["name"]: o["data"]
            for o in again.list("ConfigMap", "default")
            if o["metadata"]["name"] != "kube-root-ca.crt"
        }
        assert kept == {f"cm-{i}": {"i": str(i), "patched": "yes"} for i in range(40) if i % 5}
    finally:
        again.close()
