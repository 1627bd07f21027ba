"""Hostile HTTP requests against a served twin (hypothesis, seeded): never a 5xx, a refusal changes nothing, and
nobody waits — not the hostile request, nor a well-behaved client polling beside it.

Each example sends a batch of requests built from hostile parts: every verb on collection and object paths of a
few kinds (names that are odd, long or absent), query parameters with bad values (``watch``,
``timeoutSeconds``, ``limit``, ``continue``, selectors, ``dryRun``, ``fieldValidation``, ``fieldManager``,
``force``, ``propagationPolicy``), content types (JSON, YAML, the patch types, protobuf, CBOR, text), and
bodies: mutated manifests (the SDK fuzz's mutations), ``metadata: null`` and non-string names, JSON and YAML
nested deep, YAML alias bombs, duplicate keys, DeleteOptions of the wrong types, json-patches of odd paths,
3 MiB bodies. A probe thread meanwhile reads one object every 20 ms; every request (hostile or probe) must
answer within a bound far above a loaded machine's scheduling noise and far below a hang (a server that blocks
a reader behind a hostile request, or waits on a body that never comes, answers in tens of seconds or never).
The probe's slowest answer is measured per example, so one slow moment fails one example, not every example
after it (hypothesis would otherwise shrink for minutes on a state it cannot change).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from flexq import Twin
from flexq.http.server import Server
from tests.api.test_api_malformed import BASES as KIND_BASES
from tests.api.test_fuzz_manifests import _mutate, mutation

pytestmark = pytest.mark.slow

LIMIT_S = 5.0  # a hang, not a speed target (speed lives in bench/)
CM = "/api/v1/namespaces/default/configmaps"
CQ = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
RJ = "/apis/ray.io/v1/namespaces/default/rayjobs"
BASES = {
    **KIND_BASES,
    "cm": lambda: {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm"},
        "data": {"a": "1"},
        "binaryData": {"b": "eA=="},
    },
}
COLLECTIONS = {CM: "cm", CQ: "cq", WL: "wl", RJ: "rayjob"}
NAMES = ["fuzz", "Not_A_Name", "a" * 300, "%2e%2e", "x.y", "-", "0", "%00"]


def _bomb(levels: int = 8) -> str:
    doc = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, levels + 1):
        doc += f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  x: y\nbomb:\n  " + doc.replace(
        "\n", "\n  "
    )


def _continue(rv: Any) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "a\x00"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


RAW_BODIES: list[tuple[bytes, str]] = [
    (_bomb().encode(), "application/yaml"),
    (b"[" * 5000 + b"]" * 5000, "application/json"),
    (("a:\n" + "".join("  " * i + "- \n" for i in range(1, 300))).encode(), "application/yaml"),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  name: dup2\n", "application/yaml"),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 2020-01-01\n", "application/yaml"),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: .inf\n", "application/yaml"),
    (b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": null}', "application/json"),
    (b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}}', "application/json"),
    (
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": {"a": NaN}}',
        "application/json",
    ),
    (b'{"dryRun": 1}', "application/json"),
    (b'{"preconditions": "x"}', "application/json"),
    (b'{"propagationPolicy": 7}', "application/json"),
    (b'[{"op": "remove", "path": ""}]', "application/json-patch+json"),
    (b'[{"op": "replace", "path": "/metadata/uid", "value": "x"}]', "application/json-patch+json"),
    (b'[{"op": "move", "from": "/nope", "path": 5}]', "application/json-patch+json"),
    (b'[{"op": "frobnicate", "path": ""}]', "application/json-patch+json"),
    (b'{"spec": null}', "application/merge-patch+json"),
    (b'{"metadata": "x"}', "application/merge-patch+json"),
    (b'{"metadata": {"labels": [1]}}', "application/strategic-merge-patch+json"),
    (b"\xff\xfe\x00garbage", "application/json"),
    (b"\x0a\x05hello", "application/vnd.kubernetes.protobuf"),
    (b"\xa1\x01\x02", "application/cbor"),
    (
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"a": "'
        + b"x" * (3 * 1024 * 1024)
        + b'"}}',
        "application/json",
    ),
    (
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big2"}, "data": {"a": "'
        + b"x" * (2 * 1024 * 1024)
        + b'"}}',
        "application/json",
    ),
    (
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b64"}, "binaryData": {"a": "!!"}}',
        "application/json",
    ),
    (b"", "application/json"),
]
QUERY = {
    "watch": ["1", "true", "nonsense"],
    "timeoutSeconds": ["nan", "1e400", "-1", "0", "1", "abc", "99999999999999999999"],
    "limit": ["-1", "0", "1", "abc", "1e3", "99999999999999999999"],
    "continue": ["abc", "!!", _continue("1e999"), _continue(10**400), _continue(None), _continue(5)],
    "labelSelector": ["a===b", "a in (", "!", "a=b", "x" * 2000],
    "fieldSelector": ["metadata.name=x", "spec.nope=1", "a", "metadata.name!=%"],
    "dryRun": ["All", "Some", ""],
    "fieldValidation": ["Strict", "Warn", "Ignore", "Sometimes"],
    "fieldManager": ["fuzz", "", "m" * 200],
    "force": ["true", "maybe"],
    "propagationPolicy": ["Orphan", "Sideways"],
    "resourceVersion": ["0", "abc", "-5", "1e999"],
    "gracePeriodSeconds": ["-1", "x"],
}
CTYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
]


@st.composite
def hostile_request(draw: st.DrawFn) -> tuple[str, str, dict, bytes, str]:
    collection = draw(st.sampled_from(sorted(COLLECTIONS)))
    named = draw(st.booleans())
    path = collection + (f"/{draw(st.sampled_from(NAMES))}" if named else "")
    if named and draw(st.integers(0, 9)) == 0:
        path += "/status"
    method = draw(
        st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"] if named else ["GET", "POST", "DELETE"])
    )
    query = {k: draw(st.sampled_from(v)) for k, v in QUERY.items() if draw(st.integers(0, 5)) == 0}
    if query.get("watch") and query.get("timeoutSeconds") in (None, "0", "99999999999999999999"):
        query["timeoutSeconds"] = "1"  # a valid watch lasts a second (a bad timeout is refused at once)
    kind = draw(st.integers(0, 2))
    if kind == 0:
        body, ctype = draw(st.sampled_from(RAW_BODIES))
    else:
        doc = _mutate(BASES[COLLECTIONS[collection]](), draw(st.lists(mutation(), min_size=0, max_size=2)))
        ctype = draw(st.sampled_from(CTYPES))
        try:
            text = (
                yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))
                if "yaml" in ctype
                else json.dumps(doc)
            )
        except (TypeError, ValueError, yaml.YAMLError):
            text = json.dumps(doc, default=str)
        body = text.encode()
    return method, path, query, body, ctype


class Probe:
    """A well-behaved client reading one object every 20 ms; records its slowest answer."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url, self.headers = url, headers
        self.slowest, self.count, self.errors = 0.0, 0, []  # type: ignore[var-annotated]
        self.slowest_ever = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        s = requests.Session()
        while not self.stop.is_set():
            t0 = time.perf_counter()
            r = s.get(
                self.url + "/api/v1/namespaces/quiet/configmaps/probe", headers=self.headers, timeout=30
            )
            dt = time.perf_counter() - t0
            self.slowest, self.count = max(self.slowest, dt), self.count + 1
            self.slowest_ever = max(self.slowest_ever, dt)
            if r.status_code != 200:
                self.errors.append(r.status_code)
            self.stop.wait(0.02)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, str, dict[str, str], Probe]]:
    home = tmp_path_factory.mktemp("fuzz")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home, tls=False).start()
    headers = {"Authorization": f"Bearer {server.creds.token}"}
    twin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quiet"}})
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "probe", "namespace": "quiet"},
            "data": {"a": "1"},
        }
    )
    for base in ("cm", "cq", "wl"):
        doc = BASES[base]()
        doc["metadata"]["name"] = "fuzz"
        twin.apply(doc)
    probe = Probe(server.url, headers)
    probe.thread.start()
    try:
        yield twin, server.url, headers, probe
    finally:
        probe.stop.set()
        probe.thread.join(10)
        server.stop()
        twin.close()


STATS = {"requests": 0, "refused": 0, "slowest": 0.0}


def _version(twin: Twin, path: str) -> Any:
    """The resourceVersion of the object a path names (None: absent; the collection: the store's own)."""
    parts = path.split("/")
    coll = next(c for c in COLLECTIONS if path.startswith(c))
    rest = path[len(coll) :].strip("/").split("/")
    if not rest[0]:
        return ("collection", twin.store.resource_version) if coll == CM else None
    kind = {"cm": "ConfigMap", "cq": "ClusterQueue", "wl": "Workload", "rayjob": "RayJob"}[COLLECTIONS[coll]]
    del parts
    try:
        obj = twin.store.peek(kind, rest[0], "default")
    except Exception:
        return None
    return None if obj is None else obj["metadata"].get("resourceVersion")


@seed(20261203)
@settings(
    max_examples=110,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(st.lists(hostile_request(), min_size=10, max_size=10))
def test_hostile_requests_never_fail_the_server(target: Any, batch: list) -> None:
    twin, url, headers, probe = target
    probe.slowest = 0.0  # this example's
    session = requests.Session()
    for method, path, query, body, ctype in batch:
        before = _version(twin, path)
        t0 = time.perf_counter()
        r = session.request(
            method,
            url + path,
            params=query,
            data=body or None,
            headers={**headers, "Content-Type": ctype},
            timeout=30,
            stream=True,
        )
        content = r.raw.read(1 << 16, decode_content=True)  # a watch streams: its first events are enough
        r.close()
        dt = time.perf_counter() - t0
        STATS["requests"] += 1
        STATS["slowest"] = max(STATS["slowest"], dt)
        what = f"{method} {path}?{query} [{ctype}] {body[:200]!r}"
        assert r.status_code < 500, f"{r.status_code} for {what}: {content[:300]!r}"
        assert dt < LIMIT_S or query.get("watch"), f"{dt:.2f}s for {what}"
        if r.status_code >= 400:
            STATS["refused"] += 1
            if r.status_code != 409 or b"AlreadyExists" not in content:
                assert r.headers.get("content-type", "").startswith("application/json"), what
                status = json.loads(content)
                assert status["kind"] == "Status" and status["code"] == r.status_code, what
            if isinstance(before, tuple) or method == "GET":
                continue  # a collection write's effect is not one object's; reads change nothing anyway
            assert _version(twin, path) == before, f"a refused request changed the object: {what}"
    assert probe.slowest < LIMIT_S, f"the probe waited {probe.slowest:.2f}s"


def test_at_least_a_thousand_requests_ran(target: Any) -> None:
    _, _, _, probe = target
    print(f"hostile requests: {STATS}, probe: {probe.count} reads, slowest {probe.slowest_ever:.3f}s")
    assert STATS["requests"] >= 1000, STATS
    assert STATS["refused"] > 300, STATS
    assert probe.count > 20 and not probe.errors and probe.slowest_ever < LIMIT_S, (
        probe.count,
        probe.slowest_ever,
    )
