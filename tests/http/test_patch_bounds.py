"""A few KB of patch must not grow an object a millionfold (issue 36): the API server's bounds on JSON patch
``copy`` (JSONPatchMaxCopyBytes, 3 MiB in all), on the number of operations (10,000), and on the patched
object's size for every patch type — over real HTTPS with the twin's token, kubectl where kubectl sends it.
And a twin whose loop died says so: ``/healthz`` and ``/readyz`` fail, writes answer 503 at once, and
``serve`` returns so the process exits."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from flexq import Twin
from flexq.http.server import serve

from .conftest import Served

CM = "/api/v1/namespaces/default/configmaps"


def _configmap(served: Served, name: str, annotation_bytes: int = 100) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": {"a": "x" * annotation_bytes}},
    }
    r = served.http("POST", CM, json=body)
    assert r.status_code == 201, r.text


def test_copy_bomb_refused_by_kubectl_patch(served: Served) -> None:
    """13 copies of the annotations into themselves (each doubles them; the twin grew to gigabytes at 25): the
    copies stop at 3 MiB in all, answered 422 with json-patch's words, at once, and the object is unchanged
    (bench/hardening.py sends 30)."""
    _configmap(served, "bomb", 1000)
    ops = [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/c{i}"}
        for i in range(13)
    ]
    t0 = time.monotonic()
    r = served.kubectl("patch", "configmap", "bomb", "--type=json", "-p", json.dumps(ops), check=False)
    took = time.monotonic() - t0
    assert r.returncode != 0
    assert "Unable to complete the copy, the accumulated size increase of copy is" in r.stderr, r.stderr
    assert "exceeding the limit 3145728" in r.stderr, r.stderr
    assert took < 5, took
    got = served.http("GET", f"{CM}/bomb").json()
    assert list(got["metadata"]["annotations"]) == ["a"]


def test_copies_under_the_limit_apply(served: Served) -> None:
    _configmap(served, "fewcopies", 1000)
    ops = [
        {"op": "copy", "from": "/metadata/annotations/a", "path": f"/metadata/annotations/c{i}"}
        for i in range(3)
    ]
    r = served.http(
        "PATCH",
        f"{CM}/fewcopies",
        data=json.dumps(ops),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert r.status_code == 200, r.text
    assert sorted(r.json()["metadata"]["annotations"]) == ["a", "c0", "c1", "c2"]


def test_too_many_operations_is_413(served: Served) -> None:
    _configmap(served, "manyops")
    ops = [{"op": "test", "path": "/metadata/name", "value": "manyops"}] * 10_001
    r = served.http(
        "PATCH",
        f"{CM}/manyops",
        data=json.dumps(ops),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert r.status_code == 413, r.text
    assert r.json()["message"] == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    )


@pytest.mark.parametrize("ctype", ["application/merge-patch+json", "application/strategic-merge-patch+json"])
def test_merge_patches_cannot_grow_an_object_past_the_limit(served: Served, ctype: str) -> None:
    """Each patch is under the 3 MiB body limit; the object they build is refused once past it (413)."""
    name = "grow-" + ctype.split("/")[1].split("-")[0]
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    big = "y" * (1536 * 1024)
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}}
    r = served.http("POST", leases, json=lease | {"spec": {"holderIdentity": big}})
    assert r.status_code == 201, r.text[:300]
    patch = json.dumps({"spec": {"preferredHolder": big + "z"}})
    r = served.http("PATCH", f"{leases}/{name}", data=patch, headers={"Content-Type": ctype})
    assert r.status_code == 413, r.text[:300]
    assert "the patched object is larger than the limit of 3145728 bytes" in r.json()["message"]
    assert "preferredHolder" not in served.http("GET", f"{leases}/{name}").json()["spec"]


def test_a_dead_loop_takes_health_down_and_serve_returns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    twin = Twin(clock="real", home=home, executor="simulated")
    ready, stop, codes = threading.Event(), threading.Event(), []
    runner = threading.Thread(target=lambda: codes.append(serve(twin.core, home, ready=ready, stop=stop)))
    runner.start()
    try:
        assert ready.wait(30)
        info = json.loads((home / "server.json").read_text())
        token = (home / "pki" / "token").read_text().strip()

        def get(path: str, **kw: object) -> requests.Response:
            return requests.request(
                kw.pop("method", "GET"),  # type: ignore[arg-type]
                info["url"] + path,
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                verify=info["ca"],
                timeout=20,
                **kw,  # type: ignore[arg-type]
            )

        assert get("/readyz").text == "ok"
        assert get("/healthz?verbose").text == "[+]ping ok\n[+]flexq-loop ok\nhealthz check passed\n"

        def die() -> None:
            raise SystemExit("a callback ended the loop")

        twin.core.loop.post(die)
        deadline = time.monotonic() + 10
        while twin.core.loop.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        for name in ("healthz", "livez", "readyz"):
            r = get(f"/{name}")
            assert r.status_code == 500, (name, r.text)
            assert r.text == f"[+]ping ok\n[-]flexq-loop failed: reason withheld\n{name} check failed\n"
        t0 = time.monotonic()
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}}
        r = get(CM, method="POST", data=json.dumps(body))
        assert r.status_code == 503 and time.monotonic() - t0 < 5, r.text
        assert "the twin's event loop has stopped (SystemExit)" in r.json()["message"]
        runner.join(10)
        assert codes == [1]
        assert not (home / "server.json").exists()
    finally:
        stop.set()
        runner.join(10)
        twin.close()
