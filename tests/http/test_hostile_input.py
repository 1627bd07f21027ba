"""Issue 12's hostile inputs, one test per shape: each answered as the API server answers it (a 4xx
``Status`` naming the field or the limit), quickly, and nothing stored."""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

import pytest

from tests.http.conftest import Served

CM = "/api/v1/namespaces/default/configmaps"
CQ = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
JSON, YAML = "application/json", "application/yaml"


def _cm(name: str, **extra: Any) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


def _send(
    served: Served, method: str, path: str, body: Any = None, ctype: str = JSON, raw: bytes | None = None
) -> tuple[int, dict]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    r = served.http(method, path, data=data, headers={"Content-Type": ctype})
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"text": r.text}


@pytest.fixture(scope="module")
def ready(served: Served) -> Served:
    code, _ = _send(served, "POST", CM, _cm("target", data={"a": "1"}))
    assert code in (201, 409)
    return served


def _bomb(levels: int = 8) -> bytes:
    doc = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, levels + 1):
        doc += f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  x: y\nextra:\n  "
        + doc.replace("\n", "\n  ")
    ).encode()


# -- item 1: an alias bomb and oversized bodies ------------------------------------------------------
def test_yaml_alias_bomb_is_refused_at_once_and_others_keep_being_served(ready: Served) -> None:
    slowest = [0.0]
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            assert ready.http("GET", f"{CM}/target").status_code == 200
            slowest[0] = max(slowest[0], time.perf_counter() - t0)

    t = threading.Thread(target=probe)
    t.start()
    try:
        t0 = time.perf_counter()
        code, status = _send(ready, "POST", CM, ctype=YAML, raw=_bomb())
        took = time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
    assert code == 413 and status["reason"] == "RequestEntityTooLarge", status
    assert took < 2 and slowest[0] < 2, (took, slowest[0])
    assert _send(ready, "GET", f"{CM}/bomb")[0] == 404


def test_recursive_yaml_alias_is_refused(ready: Served) -> None:
    code, status = _send(
        ready,
        "POST",
        CM,
        ctype=YAML,
        raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rec\nx: &a [1, *a]\n",
    )
    assert code == 400 and "refers to itself" in status["message"]


def test_configmap_data_over_one_mebibyte_is_invalid(ready: Served) -> None:
    code, status = _send(ready, "POST", CM, _cm("big", data={"a": "x" * (1024 * 1024 + 1)}))
    assert code == 422 and status["details"]["causes"][0]["field"] == "[]", status
    assert "must have at most 1048576 bytes" in status["message"]


# -- item 6: 500s that are 400/422 -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "raw", "code", "text"),
    [
        (
            "POST",
            CM,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": None},
            JSON,
            None,
            422,
            "metadata.name",
        ),
        (  # the update handler's checkName: the body names no object (issue 48)
            "PUT",
            f"{CM}/target",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": None},
            JSON,
            None,
            400,
            "the name of the object () does not match the name on the URL (target)",
        ),
        (
            "PATCH",
            f"{CM}/target?fieldManager=m",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": None},
            "application/apply-patch+yaml",
            None,
            200,
            "",
        ),
        (
            "POST",
            CM,
            _cm("x") | {"metadata": {"name": 5}},
            JSON,
            None,
            400,
            "ObjectMeta.metadata.name of type string",
        ),
        (
            "POST",
            CM,
            None,
            YAML,
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: .inf\n",
            400,
            "unsupported value",
        ),
        ("POST", CM, None, JSON, b"[" * 1500 + b"]" * 1500, 400, "max depth"),
        ("POST", CM, None, YAML, b"a: " + b"[" * 1500 + b"]" * 1500, 400, ""),
        ("DELETE", f"{CM}/target", {"dryRun": 1}, JSON, None, 400, "DeleteOptions.dryRun"),
        ("DELETE", f"{CM}/target", {"preconditions": "x"}, JSON, None, 400, "DeleteOptions.preconditions"),
        (
            "PATCH",
            f"{CM}/target",
            [{"op": "remove", "path": ""}],
            "application/json-patch+json",
            None,
            422,
            "remove",
        ),
        (
            "PATCH",
            f"{CM}/target",
            [{"op": "x", "path": ""}],
            "application/json-patch+json",
            None,
            400,
            "operation",
        ),
        ("PATCH", f"{CM}/target", {"metadata": "x"}, "application/merge-patch+json", None, 400, "metadata"),
    ],
    ids=[
        "metadata-null-post",
        "metadata-null-put",
        "metadata-null-apply",
        "name-int",
        "name-inf",
        "json-deep",
        "yaml-deep",
        "delete-dryrun-int",
        "delete-preconditions-string",
        "json-patch-remove-root",
        "json-patch-unknown-op",
        "merge-patch-metadata-string",
    ],
)
def test_hostile_shapes_get_4xx(
    ready: Served, method: str, path: str, body: Any, ctype: str, raw: bytes | None, code: int, text: str
) -> None:
    got, status = _send(ready, method, path, body, ctype, raw)
    assert got == code, status
    if code >= 400:
        assert status["kind"] == "Status" and text in status["message"], status


def test_yaml_date_name_stays_a_string(ready: Served) -> None:
    code, obj = _send(
        ready, "POST", CM, ctype=YAML, raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 2020-01-01\n"
    )
    assert code == 201 and obj["metadata"]["name"] == "2020-01-01"


@pytest.mark.parametrize("rv", ["1e999", 1e300, None, "5"])
def test_continue_token_with_a_bad_rv_is_400(ready: Served, rv: Any) -> None:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "a\x00"}).replace("1e+300", "1e999")
    token = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    code, status = _send(ready, "GET", f"{CM}?limit=1&continue={token}")
    assert code == 400 and "continue key is not valid" in status["message"]


# -- item 10: watch parameters ----------------------------------------------------------------------
@pytest.mark.parametrize("timeout", ["nan", "1e400", "-1", "1.5", "inf"])
def test_watch_timeout_seconds_must_be_a_non_negative_integer(ready: Served, timeout: str) -> None:
    r = ready.http("GET", f"{CM}?watch=1&timeoutSeconds={timeout}")
    assert r.status_code == 400 and "timeoutSeconds" in r.json()["message"]


# -- item 11: validation gaps ------------------------------------------------------------------------
def test_binary_data_must_be_base64(ready: Served) -> None:
    code, status = _send(ready, "POST", CM, _cm("bd", binaryData={"a": "!!!not base64"}))
    assert code == 422 and status["details"]["causes"][0]["field"] == "binaryData[a]"


def test_put_with_another_uid_is_a_conflict(ready: Served) -> None:
    code, status = _send(
        ready, "PUT", f"{CM}/target", _cm("target") | {"metadata": {"name": "target", "uid": "other"}}
    )
    assert code == 409 and "Precondition failed: UID in precondition: other" in status["message"]


def test_json_patch_of_the_uid_is_invalid(ready: Served) -> None:
    code, status = _send(
        ready,
        "PATCH",
        f"{CM}/target",
        [{"op": "replace", "path": "/metadata/uid", "value": "x"}],
        "application/json-patch+json",
    )
    assert code == 422 and status["details"]["causes"][0]["field"] == "metadata.uid"
    assert "field is immutable" in status["message"]


def test_duplicate_yaml_keys_are_refused(ready: Served) -> None:
    code, status = _send(
        ready,
        "POST",
        CM,
        ctype=YAML,
        raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  name: dup2\n",
    )
    assert code == 400 and 'key "name" already set in map' in status["message"]
    assert _send(ready, "GET", f"{CM}/dup2")[0] == 404


def test_workload_pod_set_count_is_int32(ready: Served) -> None:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "big"},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 2**63,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }
    code, status = _send(ready, "POST", WL, body)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.podSets[0].count", status


# -- item 8: server-side apply conflicts -------------------------------------------------------------
def test_reapply_after_another_manager_took_a_field_conflicts(ready: Served) -> None:
    path = f"{CM}/ssa"
    applied = json.dumps(_cm("ssa", data={"a": "1", "b": "2"}))
    apply_ct = "application/apply-patch+yaml"
    assert _send(ready, "PATCH", f"{path}?fieldManager=alice", ctype=apply_ct, raw=applied.encode())[0] == 201
    r = ready.http(
        "PATCH",
        path,
        data=json.dumps({"data": {"a": "bob"}}),
        headers={"Content-Type": "application/merge-patch+json", "User-Agent": "bobctl/1.0"},
    )
    assert r.status_code == 200
    owners = {e["manager"]: e["fieldsV1"] for e in r.json()["metadata"]["managedFields"]}
    assert owners == {"alice": {"f:data": {"f:b": {}}}, "bobctl": {"f:data": {"f:a": {}}}}
    code, status = _send(ready, "PATCH", f"{path}?fieldManager=alice", ctype=apply_ct, raw=applied.encode())
    assert code == 409 and status["reason"] == "Conflict", status
    assert 'conflict with "bobctl" using v1' in status["message"] and ".data.a" in status["message"]
    assert status["details"]["causes"][0]["field"] == ".data.a"
    assert _send(ready, "GET", path)[1]["data"]["a"] == "bob"
    code, obj = _send(
        ready, "PATCH", f"{path}?fieldManager=alice&force=true", ctype=apply_ct, raw=applied.encode()
    )
    assert code == 200 and obj["data"] == {"a": "1", "b": "2"}
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["alice"]
