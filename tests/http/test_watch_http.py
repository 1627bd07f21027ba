"""Watch streams over raw HTTP: initial events and bookmarks, Table events, selectors, timeouts."""

from __future__ import annotations

import json
import threading
import time

from tests.http.conftest import Served

CM = "/api/v1/namespaces/default/configmaps"


def _events(
    served: Served, query: str, headers: dict[str, str] | None = None, until: int = 100, action: object = None
) -> list[dict]:
    r = served.http("GET", f"{CM}?watch=true&{query}", headers=headers or {}, stream=True)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    out: list[dict] = []
    if action is not None:
        threading.Timer(0.5, action).start()  # type: ignore[arg-type]
    for line in r.iter_lines():
        if line:
            out.append(json.loads(line))
            if len(out) >= until:
                break
    r.close()
    return out


def test_initial_events_then_bookmark_then_timeout(served: Served) -> None:
    served.twin.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wi-1", "labels": {"w": "init"}}}
    )
    t0 = time.monotonic()
    evs = _events(
        served,
        "labelSelector=w%3Dinit&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    )
    assert time.monotonic() - t0 < 8
    assert [e["type"] for e in evs][:2] == ["ADDED", "BOOKMARK"]
    assert evs[0]["object"]["metadata"]["name"] == "wi-1"
    assert evs[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(evs[1]["object"]["metadata"]["resourceVersion"]) >= int(
        evs[0]["object"]["metadata"]["resourceVersion"]
    )


def test_leaving_the_selector_is_a_delete(served: Served) -> None:
    served.twin.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ws-1", "labels": {"w": "sel"}}}
    )

    def relabel() -> None:
        served.twin.patch("ConfigMap", "ws-1", {"metadata": {"labels": {"w": "other"}}}, "default")

    evs = _events(served, "labelSelector=w%3Dsel&timeoutSeconds=5", until=2, action=relabel)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
        ("ADDED", "ws-1"),
        ("DELETED", "ws-1"),
    ]


def test_table_events_for_kubectl_get_w(served: Served) -> None:
    served.twin.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wt-1"}, "data": {"a": "1", "b": "2"}}
    )
    evs = _events(
        served,
        "fieldSelector=metadata.name%3Dwt-1&timeoutSeconds=2",
        headers={"Accept": "application/json;as=Table;g=meta.k8s.io;v=v1,application/json"},
        until=1,
    )
    table = evs[0]["object"]
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["wt-1", 2]
