"""The dashboard of a busy cluster does not stall the twin: its overview is built off the twin's loop from an index
the store's watch keeps (it renders while the loop is held), one page of workloads at a time, and an event stream
for a cluster that does not exist is a 404, not a stream that fails after its headers."""

from __future__ import annotations

import threading

import requests

from flexq.clock import format_time
from flexq.http.dashboard import PREFIX, views
from flexq.http.dashboard.index import StoreIndex
from flexq.store import Store
from tests.http.conftest import Served


def _session(served: Served) -> requests.Session:
    s = requests.Session()
    s.trust_env = False
    s.verify = served.ca
    s.headers["Authorization"] = f"Bearer {served.token}"
    return s


def _workloads(served: Served, n: int, ns: str = "dash") -> None:
    store = served.twin.core.current().store
    done = threading.Event()

    def run() -> None:
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, take=True)
        for i in range(n):
            store.create(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "metadata": {"name": f"wl-{i:04d}", "namespace": ns},
                    "spec": {
                        "queueName": "nowhere",
                        "podSets": [
                            {
                                "name": "main",
                                "count": 1,
                                "template": {"spec": {"containers": [{"name": "c"}]}},
                            }
                        ],
                    },
                },
                take=True,
            )
        done.set()

    served.twin.core.loop.post(run)
    assert done.wait(60)


def test_the_overview_pages_its_workloads(served: Served) -> None:
    _workloads(served, views.PAGE_SIZE + 30)
    s = _session(served)
    first = s.get(served.url + f"{PREFIX}/part/overview", timeout=30)
    assert first.status_code == 200
    assert first.text.count('<tr class="wl"') == views.PAGE_SIZE
    assert f"of {views.PAGE_SIZE + 30 + _others(served)}" in first.text and 'rel="next"' in first.text
    last = s.get(served.url + f"{PREFIX}/?page=999", timeout=30)  # past the end: the last page
    assert last.status_code == 200 and 'rel="prev"' in last.text and 'rel="next"' not in last.text
    assert "page=" in last.text.split('id="live"')[1].split(">")[0]  # the live part refreshes the same page


def _others(served: Served) -> int:
    return len(served.twin.list("Workload")) - views.PAGE_SIZE - 30


def test_the_dashboard_renders_while_the_twins_loop_is_busy(served: Served) -> None:
    s = _session(served)
    assert s.get(served.url + f"{PREFIX}/", timeout=30).status_code == 200  # the index and the costs, once
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # a long reconcile, a big write: anything that keeps the loop busy
        held.set()
        release.wait(30)

    served.twin.core.loop.post(hold)
    try:
        assert held.wait(10)
        r = s.get(served.url + f"{PREFIX}/part/overview", timeout=5)
        assert r.status_code == 200 and 'class="wl"' in r.text
        wl = served.twin.core.current().store.peek_list("Workload")[0]["metadata"]
        r = s.get(served.url + f"{PREFIX}/workloads/{wl['namespace']}/{wl['name']}", timeout=5)
        assert r.status_code == 200 and wl["name"] in r.text
    finally:
        release.set()


def test_an_event_stream_for_an_unknown_cluster_is_a_404(served: Served) -> None:
    s = _session(served)
    r = s.get(served.url + f"{PREFIX}/events?cluster=no-such-cluster", timeout=10, stream=True)
    assert r.status_code == 404 and r.json()["message"] == 'cluster "no-such-cluster" not found'
    r = s.get(served.url + f"{PREFIX}/part/overview?cluster=no-such-cluster", timeout=10)
    assert r.status_code == 404


def test_the_index_follows_the_store(served: Served) -> None:
    """``StoreIndex`` against the store it watches: prefix ranges, owners, deletions, and a fill that meets the
    watch halfway (what the watch told of is newer than the list)."""
    store: Store = served.twin.core.current().store
    index = StoreIndex(store)
    done = threading.Event()
    now = format_time(served.twin.now())

    def event(name: str, about: str, kind: str = "Pod") -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": "idx"},
            "involvedObject": {"kind": kind, "name": about, "namespace": "idx"},
            "reason": "FailedScaleUp",
            "message": "m",
            "firstTimestamp": now,
            "lastTimestamp": now,
        }

    def run() -> None:
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "idx"}}, take=True)
        store.create(event("e1", "job-a-x1"), take=True)
        store.create(event("e2", "job-a-x2"), take=True)
        store.create(event("e3", "job-ab-x1"), take=True)
        index.subscribe()
        store.create(event("e4", "job-a-x3"), take=True)  # the watch tells of it before the fill
        store.delete("Event", "e2", "idx")  # the list may still hold it; the watch says it is gone
        done.set()

    served.twin.core.loop.post(run)
    assert done.wait(10)
    index.fill()
    try:
        names = sorted(e["metadata"]["name"] for e in index.events_about("idx", "", "job-a-"))
        assert names == ["e1", "e4"]
        assert [e["metadata"]["name"] for e in index.events_about("idx", "job-ab-x1")] == ["e3"]
        done.clear()
        served.twin.core.loop.post(lambda: (store.delete("Event", "e1", "idx"), done.set()))
        assert done.wait(10)
        assert [e["metadata"]["name"] for e in index.events_about("idx", "", "job-a-")] == ["e4"]
    finally:
        served.twin.core.loop.post(index.stop)
