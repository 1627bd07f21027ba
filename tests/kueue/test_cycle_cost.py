"""A scheduling cycle costs what changed, not how many ClusterQueues exist — with the same outcome.

- ``QueueManager.heads`` visits only the queues that may have a head, and ``begin_shape``/``shape_changed``
  compare only the queues a cycle touched: a differential test over random operations against the full scans
  (every queue popped in name order, ``shape()`` before and after).
- ``preemption.TreeMemo`` answers a preemption search asked again of an unchanged cohort tree from what it
  found before: the same answer as a fresh search, a miss once the tree's version moves, and whole runs over
  several cohorts give the same jobs with and without it.
"""

from __future__ import annotations

import gc
import random
from pathlib import Path

import pytest
import yaml

from flexq.kueue.preemption import TreeMemo, make_oracle
from flexq.kueue.queues import QueueManager
from flexq.kueue.snapshot import ClusterQueueSnapshot, CohortSnapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo
from flexq.simulate import load_study, run_one

from .kueue_builders import admit, cq, fq, ps, psa, rf, rg, wl

NOW = 1767225600.0
REASONS = ["NoFit", "PendingPreemption", "PreemptionNoCandidates", "FailedAfterNomination", "Generic"]


def _manager(n: int) -> QueueManager:
    m = QueueManager()
    for i in range(n):
        m.add_or_update_cluster_queue(
            {
                "metadata": {"name": f"cq-{i:02d}"},
                "spec": {"namespaceSelector": {}},
                "status": {"conditions": [{"type": "Active", "status": "True"}]},
            }
        )
        m.add_or_update_local_queue(
            {"metadata": {"name": "lq", "namespace": f"ns-{i:02d}"}, "spec": {"clusterQueue": f"cq-{i:02d}"}}
        )
    return m


def _reference_heads(m: QueueManager) -> list[str]:
    """Which heads the full scan would pop (every active queue in name order), without popping."""
    out = []
    for name in sorted(m.cluster_queues):
        q = m.cluster_queues[name]
        if q.active and q.items:
            out.append(name)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_heads_and_shape_match_the_full_scans(seed: int) -> None:
    rnd = random.Random(seed)
    m = _manager(30)
    serial = 0
    for _step in range(400):
        m.begin_shape()
        before = m.shape()
        op = rnd.random()
        if op < 0.45:
            serial += 1
            i = rnd.randrange(30)
            w = wl(f"w{serial}", ps(cpu="1"), priority=rnd.randrange(3), queue="lq", ns=f"ns-{i:02d}")
            m.add_or_update_workload(w, NOW)
        elif op < 0.8:
            expected = _reference_heads(m)
            heads = m.heads()
            assert [h.cluster_queue for h in heads] == expected
            for h in heads:
                if rnd.random() < 0.3:
                    m.forget_head(h)  # admitted
                else:
                    m.requeue_workload(h, rnd.choice(REASONS), NOW)
        elif op < 0.9:
            names = rnd.sample(sorted(m.cluster_queues), 5)
            m.flush(names, NOW, lambda ns: {})
        else:
            name = f"cq-{rnd.randrange(30):02d}"
            q = m.cluster_queues[name]
            m.add_or_update_cluster_queue(
                {
                    "metadata": {"name": name},
                    "spec": {"namespaceSelector": {}},
                    "status": {"conditions": [{"type": "Active", "status": "False" if q.active else "True"}]},
                }
            )
        assert m.shape_changed() == (before != m.shape())


def test_heads_visit_only_the_queues_with_pending_workloads() -> None:
    m = _manager(50)
    m.add_or_update_workload(wl("a", ps(cpu="1"), queue="lq", ns="ns-07"), NOW)
    assert m._ready == {"cq-07"}
    (h,) = m.heads()
    assert h.key == "ns-07/a" and m._ready == set()
    m.requeue_workload(h, "PendingPreemption", NOW)
    assert m._ready == {"cq-07"}


def _tree_snapshot():
    queues = [
        cq("a", rg(fq("default", cpu="4")), cohort="co", preemption={"reclaimWithinCohort": "Any"}),
        cq("b", rg(fq("default", cpu="4")), cohort="co"),
    ]
    admitted = [
        WorkloadInfo.from_obj(admit(wl(f"b{i}", ps(cpu="2"), priority=0), "b", psa(cpu=("default", "2"))))
        for i in range(4)
    ]
    return build_snapshot(queues, [], [rf("default")], admitted)


def test_tree_memo_answers_an_unchanged_tree_as_a_fresh_search() -> None:
    trees = TreeMemo()
    pending = WorkloadInfo.from_obj(wl("p", ps(cpu="4"), priority=1), "a")
    version = [0]

    def answers() -> tuple:
        snap = _tree_snapshot()
        snap.tree_key = lambda c: (1, "co", version[0])
        memo: dict = {}
        answer = make_oracle(snap, NOW, memo, trees)(snap.cq("a"), pending, ("default", "cpu"), 4000)
        return answer, sorted(t.info.key for ts in memo.values() for t in ts)

    fresh = answers()
    assert fresh[0][0] == "Reclaim" and len(fresh[1]) == 2
    assert (trees.hits, trees.misses) == (0, 1)
    assert answers() == fresh
    assert (trees.hits, trees.misses) == (1, 1)
    version[0] += 1  # a workload holding quota in the tree changed
    assert answers() == fresh
    assert (trees.hits, trees.misses) == (1, 2)


def _generator(tmp: Path) -> Path:
    """Kueue's large-scale file cut to 2 cohorts of 20 ClusterQueues (1,200 workloads, preemptions in both)."""
    root = Path(__file__).resolve().parents[2]
    doc = yaml.safe_load((root / "examples" / "kueue-large-scale" / "generator.yaml").read_text())
    doc["cohorts"][0]["count"] = 2
    doc["cohorts"][0]["queuesSets"][0]["count"] = 20
    path = tmp / "generator.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_runs_over_several_cohort_trees_are_the_same_without_the_memo(monkeypatch, tmp_path) -> None:
    study = load_study(_generator(tmp_path))
    hits: list[int] = []
    real = TreeMemo.table

    def counted(self, tree):
        table = real(self, tree)
        hits.append(self.hits)
        return table

    monkeypatch.setattr(TreeMemo, "table", counted)
    with_memo = run_one(study, study.variants[0].name, 0)
    assert hits and hits[-1] > 0  # answers were reused
    monkeypatch.setattr(TreeMemo, "table", lambda self, tree: None)
    without = run_one(study, study.variants[0].name, 0)
    assert with_memo.jobs == without.jobs
    assert with_memo.preemptions == without.preemptions and with_memo.evictions == without.evictions


def test_a_cycle_copies_only_the_trees_of_its_heads_and_the_rest_as_they_were() -> None:
    """``Snapshot.clone_trees``: the heads' cohort trees are copied at once; another tree is copied when first
    asked for, and the cache copies it before changing it, so the copy is as of the snapshot."""
    base = build_snapshot(
        [
            cq("a1", rg(fq("default", cpu="4")), cohort="a"),
            cq("a2", rg(fq("default", cpu="4")), cohort="a"),
            cq("b1", rg(fq("default", cpu="4")), cohort="b"),
            cq("lone", rg(fq("default", cpu="4"))),
        ],
        [],
        [rf("default")],
        [WorkloadInfo.from_obj(admit(wl("w", ps(cpu="2")), "b1", psa(cpu=("default", "2"))))],
    )
    part = base.clone_trees(["a2"], {"a1": 3})
    assert set(part.cluster_queues) == {"a1", "a2"} and set(part.cohorts) == {"a"}
    assert part.cq("a1").generation == 3 and part.cq("a1").parent is part.cohorts["a"]
    w = base.cq("b1").workloads["default/w"]
    part.materialize("b1")  # what the cache does before it changes the tree in its base
    base.remove_workload(w)
    assert part.cq("b1").usage == {("default", "cpu"): 2000} and "default/w" in part.cq("b1").workloads
    assert base.cq("b1").usage == {("default", "cpu"): 0}
    assert part.cq("lone").parent is None and part.cq("nope") is None
    eager = base.clone()
    assert {n: (q.usage, sorted(q.workloads)) for n, q in eager.cluster_queues.items() if n != "b1"} == {
        n: (part.cq(n).usage, sorted(part.cq(n).workloads)) for n in ("a1", "a2", "lone")
    }


def test_a_released_copy_is_freed_without_the_collector() -> None:
    """``Snapshot.release`` (the end of a scheduler cycle): a copy's cohorts no longer hold their children, so
    the copy goes by reference counting — not left, cohort trees of every cycle's heads, to the collector — and
    the base it was copied from keeps its own links."""
    base = build_snapshot(
        [
            cq("a1", rg(fq("default", cpu="4")), cohort="a"),
            cq("a2", rg(fq("default", cpu="4")), cohort="a"),
            cq("lone", rg(fq("default", cpu="4"))),
        ],
        [],
        [rf("default")],
        [],
    )
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        part = base.clone_trees(["a1", "lone"], {})
        assert part.cq("a2").parent is part.cohorts["a"]
        part.release()
        del part
        gc.set_debug(gc.DEBUG_SAVEALL)  # what only the collector would have freed
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if isinstance(o, CohortSnapshot | ClusterQueueSnapshot)]
        assert not left, f"a released copy was left to the collector: {left}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert [q.name for q in base.cohorts["a"].child_cqs] == ["a1", "a2"]


def _random_tree(rnd: random.Random, preempting: bool = False):
    """Cohorts two levels deep (some with their own quota), ClusterQueues with borrowing and lending limits,
    and workloads holding quota in them. ``preempting``: preemption policies drawn per ClusterQueue, workloads of
    several priorities reserved at several times, more queues and workloads."""
    from .kueue_builders import cohort

    cohorts = [cohort("root", rg(fq("default", cpu=str(rnd.randrange(0, 6)))))]
    for i in range(rnd.randrange(1, 3)):
        cohorts.append(cohort(f"mid{i}", rg(fq("default", cpu=str(rnd.randrange(0, 4)))), parent="root"))
    queues, admitted = [], []
    for i in range(rnd.randrange(2, 7 if preempting else 6)):
        nominal = rnd.randrange(0, 8)
        bl = rnd.choice([None, str(rnd.randrange(0, 6))])
        ll = rnd.choice([None, str(rnd.randrange(0, nominal + 1))])
        parent = rnd.choice([c["metadata"]["name"] for c in cohorts])
        policy = (
            {
                "withinClusterQueue": rnd.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
                "reclaimWithinCohort": rnd.choice(["Never", "LowerPriority", "Any"]),
                "borrowWithinCohort": rnd.choice(
                    [
                        {"policy": "Never"},
                        {"policy": "LowerPriority", "maxPriorityThreshold": rnd.randrange(0, 3)},
                    ]
                ),
            }
            if preempting
            else None
        )
        queues.append(
            cq(f"q{i}", rg(fq("default", cpu=(str(nominal), bl, ll))), cohort=parent, preemption=policy)
        )
        for j in range(rnd.randrange(0, 6 if preempting else 5)):
            size = str(rnd.randrange(1, 4))
            if preempting:
                w = admit(
                    wl(f"w{i}-{j}", ps(cpu=size), priority=rnd.randrange(0, 4)),
                    f"q{i}",
                    psa(cpu=("default", size)),
                    at=f"2026-01-01T00:00:{rnd.randrange(10, 60)}Z",
                )
            else:
                w = admit(wl(f"w{i}-{j}", ps(cpu=size)), f"q{i}", psa(cpu=("default", size)))
            admitted.append(WorkloadInfo.from_obj(w))
    return build_snapshot(queues, cohorts, [rf("default")], admitted)


@pytest.mark.parametrize("one", [False, True], ids=["any", "one-resource"])
@pytest.mark.parametrize("seed", range(40))
def test_released_usage_is_what_the_snapshot_would_hold(seed: int, one: bool) -> None:
    """``preemption.Released`` (the usage a search's candidates release, kept beside the snapshot) against a
    copy of the snapshot changed in place by the same removals and additions, in the same order: every node's
    usage and every ClusterQueue's available capacity, over random trees with borrowing and lending limits; the
    general one and the one for a single flavor-resource (``ReleasedOne``)."""
    from flexq.kueue.released import Released, ReleasedOne

    rnd = random.Random(seed)
    snap = _random_tree(rnd)
    fr = ("default", "cpu")
    rel = ReleasedOne(fr) if one else Released({fr})
    mirror = snap.clone()
    pool = [i for q in snap.cluster_queues.values() for i in q.workloads.values()]
    taken: list[WorkloadInfo] = []
    before = {n: dict(q.usage) for n, q in snap.cluster_queues.items()}
    for _ in range(30):
        if taken and (not pool or rnd.random() < 0.4):
            info = taken.pop(rnd.randrange(len(taken)))
            rel.add(info, snap.cq(info.cluster_queue))
            mirror.add_workload(info)
            pool.append(info)
        elif pool:
            info = pool.pop(rnd.randrange(len(pool)))
            rel.remove(info, snap.cq(info.cluster_queue))
            mirror.remove_workload(info)
            taken.append(info)
        for name, q in snap.cluster_queues.items():
            m = mirror.cq(name)
            assert m is not None
            assert rel.usage(q, fr) == m.usage.get(fr, 0), (name, seed)
            assert max(0, rel.available(q, fr)) == m.available(fr), (name, seed)
        for name, c in snap.cohorts.items():
            assert rel.usage(c, fr) == mirror.cohorts[name].usage.get(fr, 0), (name, seed)
    assert {n: dict(q.usage) for n, q in snap.cluster_queues.items()} == before  # the snapshot untouched


def test_settled_cohort_trees_sit_out_cycles_with_the_same_outcome(monkeypatch, tmp_path) -> None:
    """A cohort tree whose last cycle changed nothing, and nothing it reads changed since, is not scheduled
    again until something does (``Scheduler._settle``): whole runs over several trees give the same jobs,
    preemptions and evictions with it and without it, with fewer nominations."""
    from flexq.kueue.cycle import _Cycle
    from flexq.kueue.scheduler import Scheduler

    study = load_study(_generator(tmp_path))
    # cycles back to back at one instant (free cycles): what settling saves is the repeats of those
    study.variants[0].settings["kueue_cycle_seconds"] = 0.0
    calls = [0]
    real = _Cycle.assign

    def counted(self, *a):
        calls[0] += 1
        return real(self, *a)

    monkeypatch.setattr(_Cycle, "assign", counted)
    settled = run_one(study, study.variants[0].name, 0)
    with_settling = calls[0]
    calls[0] = 0
    monkeypatch.setattr(Scheduler, "_settle", lambda self, start: None)
    every = run_one(study, study.variants[0].name, 0)
    assert settled.jobs == every.jobs
    assert settled.preemptions == every.preemptions and settled.evictions == every.evictions
    assert with_settling < calls[0], (with_settling, calls[0])


def test_a_change_in_a_settled_tree_wakes_it() -> None:
    """A settled tree's queues are out of ``heads`` until a queue of the tree changes (even one that was not
    settled) or ``wake_all``; waking dates the heads' scan progress to the current cycle."""
    m = _manager(4)
    trees = {"cq-00": "t1", "cq-01": "t1", "cq-02": "t2", "cq-03": "t2"}
    m.tree_of = trees.get
    woken: list[list[str]] = []
    m.on_wake = lambda qs: woken.append([q.name for q in qs])
    m.add_or_update_workload(wl("a", ps(cpu="1"), queue="lq", ns="ns-00"), NOW)
    m.add_or_update_workload(wl("b", ps(cpu="1"), queue="lq", ns="ns-02"), NOW)
    m.settle("t1", ["cq-00"])
    assert [h.cluster_queue for h in m.heads()] == ["cq-02"]
    m.add_or_update_workload(wl("c", ps(cpu="1"), queue="lq", ns="ns-01"), NOW)  # another queue of t1
    assert woken == [["cq-00"]] and m._ready >= {"cq-00", "cq-01"}
    m.settle("t1", ["cq-00", "cq-01"])
    m.wake_all()
    assert woken[-1] == ["cq-00", "cq-01"]


def test_a_one_resource_search_finds_what_the_general_one_finds(monkeypatch) -> None:
    """A preemption search that reads one flavor-resource keeps its released usage as plain numbers and asks
    ``fits`` and ``valid`` written out (``ReleasedOne``, ``_fits_of``, ``_valid_of``): over random trees, policies and preemptors (60 trees,
    three preemptors per ClusterQueue), it takes the same targets, in the same order, for the same reasons, as
    the general search."""
    from flexq.kueue import preemption as pre

    fr = ("default", "cpu")
    cases = []
    for seed in range(60):
        rnd = random.Random(seed)
        snap = _random_tree(rnd, preempting=True)
        for name in sorted(snap.cluster_queues):
            for k in range(3):
                w = wl(f"p-{name}-{k}", ps(cpu="1"), priority=rnd.randrange(0, 5))
                cases.append(
                    (snap, name, WorkloadInfo.from_obj(w, name), 1000 * rnd.randrange(1, 6))
                )  # milli-cpu

    def search() -> list[list[tuple[str, str, str]]]:
        out = []
        for snap, name, preemptor, qty in cases:
            q = snap.cq(name)
            assert q is not None
            ctx = pre._Ctx(snap, preemptor, q, {fr}, {fr: qty}, 0.0)
            out.append([(t.info.key, t.reason, t.cluster_queue) for t in pre._classical(ctx)])
        return out

    fast = search()
    monkeypatch.setattr(pre, "released_for", pre.Released)
    monkeypatch.setattr(pre, "_fits_of", lambda ctx, rel: ctx.fits)
    monkeypatch.setattr(pre, "_valid_of", lambda ctx, rel: ctx.valid)
    assert search() == fast
    found = sum(1 for t in fast if t)
    assert found >= len(cases) // 5, f"only {found} of {len(cases)} searches found a target"
