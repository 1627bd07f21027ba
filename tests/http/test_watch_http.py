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


def test_an_event_is_serialised_once_for_every_watcher(served: Served) -> None:
    """kube-apiserver's cachingObject: watchers of the same version get the same line, encoded once."""
    from flexq.http.kube.watch import LINES

    rv = served.twin.store.resource_version
    lines: list[list[bytes]] = [[], [], []]

    def watch(i: int) -> None:
        r = served.http(
            "GET",
            f"{CM}?watch=true&resourceVersion={rv}&labelSelector=w%3Donce&timeoutSeconds=5",
            stream=True,
        )
        for line in r.iter_lines():
            if line:
                lines[i].append(line)
                break
        r.close()

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the three are subscribed
    before = LINES.encoded
    served.twin.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wo-1", "labels": {"w": "once"}}}
    )
    for t in threads:
        t.join(10)
    assert [len(ls) for ls in lines] == [1, 1, 1]
    assert lines[0] == lines[1] == lines[2]
    assert json.loads(lines[0][0])["object"]["metadata"]["name"] == "wo-1"
    assert LINES.encoded - before == 1


def test_event_lines_are_kept_by_identity_type_and_version() -> None:
    from flexq.http.kube.watch import EventLines

    cache = EventLines(size=2)
    a, b = {"n": 1}, {"n": 1}
    calls: list[str] = []

    def enc(tag: str) -> bytes:
        calls.append(tag)
        return tag.encode()

    assert cache.line("ADDED", a, "v1", lambda: enc("a")) == b"a"
    assert cache.line("ADDED", a, "v1", lambda: enc("again")) == b"a"  # the same object: not encoded again
    assert cache.line("MODIFIED", a, "v1", lambda: enc("a-mod")) == b"a-mod"  # another type
    assert cache.line("ADDED", b, "v1", lambda: enc("b")) == b"b"  # an equal object is another object
    assert cache.line("ADDED", a, "v1", lambda: enc("a2")) == b"a2"  # bounded: the oldest went
    assert calls == ["a", "a-mod", "b", "a2"] and cache.encoded == 4
