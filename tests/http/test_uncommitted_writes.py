"""A write of a group commit (``WriteBatch``) is seen by no client before it is on disk: a watch hears it, and a
get or list returns it, only once the batch has committed — as etcd never serves a write it has not committed, so
a crash can never undo something a client was shown."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.http.server import Server
from flexq.store import Journal, Store

CM = "/api/v1/namespaces/default/configmaps"


class _GatedCommits:
    """The journal's SQLite connection, with the COMMIT of a group of API writes (the journal holds writes
    already applied in memory: ``uncommitted``) held until ``gate`` opens, once ``armed``. A controller's own
    write, committed alone, passes."""

    def __init__(self, journal: Journal) -> None:
        self.journal, self.db = journal, journal._db
        self.armed, self.gate, self.waiting = False, threading.Event(), threading.Event()

    def execute(self, sql: str, *args: Any) -> Any:
        if self.armed and sql == "COMMIT" and self.journal.uncommitted:
            self.waiting.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def test_watch_get_and_list_wait_for_the_group_commit(tmp_path: Path) -> None:
    home = tmp_path / "twin"
    twin = Twin(clock="real", home=home, executor="simulated", check_readonly=True)
    server = Server(twin.core, home).start()
    info = server.write_files()
    auth = {"Authorization": f"Bearer {server.creds.token}"}
    journal = twin.core.journal
    assert journal is not None
    gated = _GatedCommits(journal)
    journal._db = gated
    seen: list[str] = []
    ready = threading.Event()

    def watch() -> None:
        with requests.get(
            server.url + CM + "?watch=1&resourceVersion=" + rv,
            headers=auth,
            verify=info["ca"],
            stream=True,
            timeout=60,
        ) as r:
            ready.set()
            for line in r.iter_lines():
                if line:
                    ev = json.loads(line)
                    if ev["type"] == "ADDED":
                        seen.append(ev["object"]["metadata"]["name"])
                        return

    try:
        for _ in range(
            300
        ):  # the cluster's own kube-root-ca.crt comes once the server has its CA: let it settle
            listed = requests.get(server.url + CM, headers=auth, verify=info["ca"], timeout=30).json()
            if any(o["metadata"]["name"] == "kube-root-ca.crt" for o in listed["items"]):
                break
            threading.Event().wait(0.05)
        rv = listed["metadata"]["resourceVersion"]
        with ThreadPoolExecutor(4) as pool:
            watcher = pool.submit(watch)
            assert ready.wait(30)
            gated.armed = True
            created = pool.submit(
                requests.post, server.url + CM, json=_cm("held"), headers=auth, verify=info["ca"], timeout=60
            )
            assert gated.waiting.wait(30), "the write never reached its commit"
            # the write is in the store's memory, its commit not done: nobody may see it yet
            got = pool.submit(
                requests.get, server.url + CM + "/held", headers=auth, verify=info["ca"], timeout=60
            )
            lst = pool.submit(requests.get, server.url + CM, headers=auth, verify=info["ca"], timeout=60)
            threading.Event().wait(1.0)
            assert seen == [] and not got.done() and not lst.done() and not created.done()
            gated.armed = False
            gated.gate.set()
            assert created.result().status_code == 201
            assert got.result().status_code == 200
            assert [o["metadata"]["name"] for o in lst.result().json()["items"]] == [
                "held",
                "kube-root-ca.crt",
            ]
            watcher.result(timeout=30)
            assert seen == ["held"]
    finally:
        gated.gate.set()
        server.stop()
        twin.close()


def test_a_committed_watcher_hears_a_write_of_an_open_transaction_after_the_commit(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state.db")
    store = Store(default_registry(), VirtualClock(), journal=journal, namespaces=["default"])
    plain: list[str] = []
    committed: list[str] = []
    store.watch(lambda ev: plain.append(ev.object["metadata"]["name"]), ["ConfigMap"])
    store.watch(lambda ev: committed.append(ev.object["metadata"]["name"]), ["ConfigMap"], committed=True)
    store.create(_cm("alone"))  # its own transaction: committed before anyone hears it
    assert plain == committed == ["alone"] and not journal.uncommitted
    with journal.transaction():
        store.create(_cm("a"))
        store.create(_cm("b"))
        assert plain == ["alone", "a", "b"] and committed == ["alone"] and journal.uncommitted
    assert committed == ["alone", "a", "b"] and not journal.uncommitted
    try:
        with journal.transaction():
            store.create(_cm("lost"))
            raise RuntimeError("the batch fails before its commit")
    except RuntimeError:
        pass
    assert committed == ["alone", "a", "b"] and not journal.uncommitted  # never heard: never on disk
    journal.close()
