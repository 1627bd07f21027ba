"""A twin killed between any two journal writes acts on every acknowledged object once it restarts.

The run is deterministic (virtual clock, seeded): a client submits Kueue-managed batch Jobs one by one while
the twin admits and runs them. Every committed journal transaction is a possible ``kill -9`` point: the state
SQLite holds right after it is copied aside, a new twin is started on that copy (what ``flexq up`` does after
a crash), the client resubmits the Jobs it had not seen acknowledged, and then every Job must finish, exactly
once (one Workload, one pod), with ClusterQueue quota never exceeded. The slow variant restarts after every
commit; the fast one after every seventh.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from flexq import Twin
from flexq.store import Journal
from flexq.store.store import WatchEvent

QUOTA_CPU = 2
JOBS = 6
SUBMIT_EVERY = 1.0  # virtual seconds between two submissions
RUN_SECONDS = "3"
START = 1_800_000_000.0

QUEUE = f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: f}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups: [{{coveredResources: [cpu], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: {QUOTA_CPU}}}]}}]}}]
---
{{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {{name: lq, namespace: default}},
  spec: {{clusterQueue: cq}}}}
"""


def node() -> dict:
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def job(i: int) -> dict:
    ann = {"twin.flexq.dev/run-seconds": RUN_SECONDS}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"j{i}", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "template": {
                "metadata": {"annotations": ann},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            }
        },
    }


class QuotaWatch:
    """Fails the run if the workloads holding quota ever need more cpu than the ClusterQueue has."""

    def __init__(self, twin: Twin) -> None:
        self.holding: dict[str, int] = {}
        self.peak = 0
        twin.store.watch(self.on_event, ["Workload"])

    def on_event(self, ev: WatchEvent) -> None:
        wl = ev.object
        name = wl["metadata"]["name"]
        conds = {c["type"]: c["status"] for c in (wl.get("status") or {}).get("conditions") or []}
        adm = (wl.get("status") or {}).get("admission")
        if (
            ev.type != "DELETED"
            and conds.get("QuotaReserved") == "True"
            and conds.get("Finished") != "True"
            and adm
        ):
            self.holding[name] = sum(
                int(str(ps.get("resourceUsage", {}).get("cpu", "0")).rstrip("m") or 0)
                for ps in adm["podSetAssignments"]
            )
        else:
            self.holding.pop(name, None)
        self.peak = max(self.peak, sum(self.holding.values()))
        assert self.peak <= QUOTA_CPU, f"over quota: {self.holding}"


def setup(twin: Twin) -> None:
    twin.apply(QUEUE)
    if twin.store.try_get("Node", "n1") is None:  # a node registering itself
        twin.store.create(node(), keep_status=True)


def submit_due(twin: Twin, submitted: set[int]) -> None:
    """The client: submit every Job whose time has come and that was not acknowledged yet."""
    for i in range(JOBS):
        if i not in submitted and twin.now() >= START + i * SUBMIT_EVERY:
            twin.apply(job(i))  # create-or-update, as kubectl apply
            submitted.add(i)


def drive(twin: Twin, submitted: set[int], until: float) -> None:
    """Run the twin on its virtual clock, submitting as the schedule says, until ``until``."""
    while twin.now() < until:
        submit_due(twin, submitted)
        due = [START + i * SUBMIT_EVERY for i in range(JOBS) if i not in submitted]
        nxt = min([t for t in due if t > twin.now()] + [until])
        twin.advance(min(0.25, nxt - twin.now()) if due else until - twin.now())
    submit_due(twin, submitted)


def run_and_restart_everywhere(tmp_path: Path, every: int) -> int:
    """The whole run once, recording crash points; then a restart from each. Returns the number of restarts."""
    end = START + JOBS * SUBMIT_EVERY + 60
    points: list[tuple[Path, float]] = []
    original = Journal.transaction
    count = 0
    twin: Twin | None = None

    @contextmanager
    def transaction(self: Journal) -> Iterator[None]:
        nonlocal count
        outer = not self._in_tx
        with original(self):
            yield
        if outer and twin is not None:
            count += 1
            if count % every == 0:
                path = tmp_path / f"commit-{count:05d}" / "state.db"
                path.parent.mkdir(parents=True)
                copy = sqlite3.connect(path)
                self._db.backup(copy)
                copy.close()
                points.append((path, twin.now()))

    Journal.transaction = transaction  # type: ignore[method-assign]
    try:
        twin = Twin(clock="virtual", home=tmp_path / "first", start=START - 1)
        setup(twin)
        drive(twin, set(), end)
    finally:
        Journal.transaction = original  # type: ignore[method-assign]
    check(twin, range(JOBS))
    twin.close()
    assert len(points) >= 20, len(points)

    for path, now in points:
        acked = {int(j["metadata"]["name"][1:]) for j in _jobs_in(path)}
        revived = Twin(clock="virtual", home=path.parent, start=now)
        try:
            quota = QuotaWatch(revived)
            setup(
                revived
            )  # the client re-applies its queues (kubectl apply: unchanged objects stay as they are)
            drive(revived, set(acked), end)
            try:
                check(revived, range(JOBS))
            except AssertionError as exc:
                raise AssertionError(
                    f"after a kill at {path.parent.name} (acknowledged: {sorted(acked)}): {exc}"
                ) from None
            assert quota.peak <= QUOTA_CPU
        finally:
            revived.close()
    return len(points)


def _jobs_in(path: Path) -> list[dict]:
    import json

    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT body FROM objects WHERE kind='jobs.batch'").fetchall()
    finally:
        db.close()
    return [json.loads(r[0]) for r in rows]


def check(twin: Twin, expected: range) -> None:
    """Every Job finished once: Complete, one Workload (Finished, Succeeded), one pod, uids unique."""
    jobs = {j["metadata"]["name"]: j for j in twin.list("jobs", "default")}
    assert sorted(jobs) == sorted(f"j{i}" for i in expected)
    workloads = twin.list("workloads", "default")
    pods = twin.list("pods", "default")
    for name, j in jobs.items():
        uid = j["metadata"]["uid"]
        conds = {c["type"]: c["status"] for c in (j.get("status") or {}).get("conditions") or []}
        owned = [w for w in workloads if any(r["uid"] == uid for r in w["metadata"]["ownerReferences"])]
        assert len(owned) == 1, f"{name}: {len(owned)} workloads (suspend={j['spec'].get('suspend')})"
        wconds = {c["type"]: (c["status"], c["reason"]) for c in owned[0]["status"]["conditions"]}
        assert wconds.get("Finished") == ("True", "Succeeded"), f"{name}: workload {wconds}"
        assert conds.get("Complete") == "True", f"{name}: {conds}"
        mine = [p for p in pods if any(r["uid"] == uid for r in p["metadata"].get("ownerReferences") or [])]
        assert len(mine) == 1, f"{name} ran {len(mine)} pods"
    uids = [o["metadata"]["uid"] for _, o in twin.store.all_objects()]
    assert len(uids) == len(set(uids)), "two objects share a uid"


def test_a_kill_between_journal_writes_leaves_no_job_behind(tmp_path: Path) -> None:
    assert run_and_restart_everywhere(tmp_path, every=7) >= 20


@pytest.mark.slow
def test_a_kill_after_every_journal_write_leaves_no_job_behind(tmp_path: Path) -> None:
    assert run_and_restart_everywhere(tmp_path, every=1) >= 150


def test_a_restarted_twin_never_hands_out_a_stored_uid_or_name(tmp_path: Path) -> None:
    """uids and generated names come from seeded streams: a restart must not replay the first run's."""
    first = Twin(clock="virtual", home=tmp_path)
    made = [
        first.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-"}})[0]
        for _ in range(5)
    ]
    del first  # killed: nothing closed
    for _ in range(2):
        again = Twin(clock="virtual", home=tmp_path)
        made += [
            again.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-"}})
            for _ in range(5)
        ]
        again.close()
    uids = [o["metadata"]["uid"] for o in made] + [ns["metadata"]["uid"] for ns in again.list("namespaces")]
    assert len(set(uids)) == len(uids)
    assert len({o["metadata"]["name"] for o in made}) == len(made)
