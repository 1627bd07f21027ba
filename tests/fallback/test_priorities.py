"""The fallback with priorities, on the virtual twin: Kueue's order (higher priority first) in the hedge back to
plan A, plan A's room kept for the higher class, the explain report naming the higher-priority jobs a move could
affect, Kueue's admission order in ``semantics``, and a cohort's quota in the view."""

from __future__ import annotations

from flexq.fallback.model import ANN_MOVED, FallbackConfig
from flexq.fallback.view import ClusterView
from flexq.semantics.workloads import admission_order
from flexq.testing.fallback_family import PRIORITY_CLASSES
from tests.fallback.conftest import submit
from tests.fallback.test_hedge import JOB, _state, _step, _twin
from tests.fallback.test_scenarios import _controller, _flavor, _workload


def _classes(twin) -> None:
    for name in ("high", "low"):
        twin.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": PRIORITY_CLASSES[name],
            }
        )


def _submit(twin, job: int, run_seconds: int, priority: str) -> None:
    """The tutorial's RayJob with a WorkloadPriorityClass label."""
    from flexq.cli import tutorial as T

    doc = T.rayjob_yaml(job).replace(
        "    kueue.x-k8s.io/queue-name: user-queue",
        f"    kueue.x-k8s.io/queue-name: user-queue\n    kueue.x-k8s.io/priority-class: {priority}",
    )
    doc = doc.replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)
    twin.advance(2)


def _moved(twin, job: int) -> str:
    return (twin.get("rayjob", JOB.format(job), "default")["metadata"].get("annotations") or {}).get(
        ANN_MOVED, ""
    )


def test_the_higher_priority_job_goes_back_to_plan_a_first_and_the_lower_one_keeps_plan_b(make_twin):
    """Two on-demand slices of quota, one slice up (job 1, low) when the stock-out begins. Job 2 (low) is moved
    to DWS (2 h away); job 3 (high), submitted later, goes to DWS too (the quota capped to the slice up), and so
    does job 4 (low, once job 1's head has left it CPU quota), Kueue's own choice under the cap. When job 1 ends, its slice is idle: Kueue would give it
    to the high job first, so job 3 goes back — not job 2, the older (before: oldest first). Job 2 goes back to
    on-demand too (as its probe, then onto the slice job 3 leaves): the fallback had moved it off on-demand, where
    it held quota before the high job came (without the fallback it would have been there, waiting). Job 4 stays on DWS while a high job arrived
    lately (plan A's room is what the next high job gets at once), and explain() says why."""
    twin = _twin(make_twin, None, "2h")
    _classes(twin)
    _submit(twin, 1, 30 * 60, "low")
    _step(twin, 1, 20)  # running on the slice up; the stock-out begins at 15 minutes
    assert _state(twin, 1) == "Running"
    _submit(twin, 2, 20 * 60, "low")
    for _ in range(8):
        _step(twin, 2, 1)
        if "moved to dws" in _moved(twin, 2):
            break
    assert "moved to dws" in _moved(twin, 2)
    _submit(twin, 3, 10 * 60, "high")
    _step(twin, 3, 1)
    assert _flavor(_workload(twin, JOB.format(3))) == "dws"
    _step(twin, 3, 14)  # job 1 ends at about 32 minutes: its slice goes to job 3 (high), not to job 2 (older)
    assert "moved to on-demand" in _moved(twin, 3) or "back to on-demand" in _moved(twin, 3), _moved(twin, 3)
    assert _flavor(_workload(twin, JOB.format(3))) == "on-demand"
    _submit(twin, 4, 10 * 60, "low")  # (its head's CPU quota: job 1's, now free)
    _step(twin, 4, 2)
    assert _flavor(_workload(twin, JOB.format(4))) == "dws"
    _step(twin, 3, 10)  # job 3 ends (10 minutes); job 2, moved off on-demand, has gone back there
    assert _state(twin, 3) == "Complete"
    assert "back to on-demand" in _moved(twin, 2), _moved(twin, 2)
    for _ in range(40):
        _step(twin, 2, 1)
        if _state(twin, 2) == "Complete":
            break
    assert _state(twin, 2) == "Complete"  # on on-demand's slice, long before DWS's 2 h
    assert _flavor(_workload(twin, JOB.format(4))) == "dws"  # the slice idle again: job 4 stays on plan B
    line = next(x for x in _controller(twin).policy.explain() if JOB.format(4) in x)
    assert "priority 1000" in line and "arrived in its cohort" in line, line


def test_without_priorities_the_oldest_waiting_job_goes_back_as_before(make_twin):
    """The same week without priorities: the idle slice goes to the oldest job waiting on DWS (job 2)."""
    twin = _twin(make_twin, None, "2h")
    submit(twin, 1, 30 * 60)
    _step(twin, 1, 20)
    submit(twin, 2, 20 * 60)
    for _ in range(8):
        _step(twin, 2, 1)
        if "moved to dws" in _moved(twin, 2):
            break
    submit(twin, 3, 10 * 60)
    _step(twin, 3, 15)
    assert _flavor(_workload(twin, JOB.format(2))) == "on-demand"
    assert "back to on-demand" in _moved(twin, 2), _moved(twin, 2)


def test_kueues_admission_order_is_priority_then_the_queue_order_timestamp():
    def wl(name: str, prio: int | None, created: str, evicted: tuple[str, str] | None = None) -> dict:
        conds = []
        if evicted is not None:
            conds.append(
                {"type": "Evicted", "status": "True", "reason": evicted[0], "lastTransitionTime": evicted[1]}
            )
        spec = {} if prio is None else {"priority": prio}
        return {
            "metadata": {"name": name, "uid": name, "creationTimestamp": created},
            "spec": spec,
            "status": {"conditions": conds},
        }

    old_low = wl("a", 100, "2026-01-01T00:00:00Z")
    new_high = wl("b", 1000, "2026-01-01T01:00:00Z")
    unset = wl("c", None, "2026-01-01T00:30:00Z")
    # evicted for an admission check: queued at its eviction, behind a younger job of the same priority
    requeued = wl("d", 100, "2025-12-31T00:00:00Z", ("AdmissionCheck", "2026-01-01T02:00:00Z"))
    preempted = wl("e", 100, "2025-12-31T00:00:00Z", ("Preempted", "2026-01-01T02:00:00Z"))
    got = [
        w["metadata"]["name"]
        for w in sorted([old_low, new_high, unset, requeued, preempted], key=admission_order)
    ]
    assert got == ["b", "e", "a", "d", "c"]


def test_a_cohorts_unused_quota_counts_as_free_for_its_members(make_twin):
    """Two ClusterQueues in a cohort, one slice of on-demand quota each: the second, empty, lends its slice, so
    the first may take a job beyond its own quota (Kueue's borrowing) — and not once the cohort's quota is used."""
    twin = make_twin(None, on_demand_slices=1)
    cq = twin.get("clusterqueue", "cluster-queue")
    other = {
        "apiVersion": cq["apiVersion"],
        "kind": "ClusterQueue",
        "metadata": {"name": "team-b"},
        "spec": {
            **{k: v for k, v in cq["spec"].items() if k in ("resourceGroups", "namespaceSelector")},
            "cohortName": "tpu",
        },
    }
    twin.apply(other)
    twin.patch("clusterqueue", "cluster-queue", {"spec": {"cohortName": "tpu"}})
    submit(twin, 1, 3600)
    _step(twin, 1, 5)
    view = ClusterView(_controller(twin).api, FallbackConfig())
    w = next(x for x in view.workloads if x.current)
    needs = w.pod_set_needs([ps for ps, fs in w.assigned.items() if "on-demand" in fs])
    assert view.cohort_of("cluster-queue") == view.cohort_of("team-b") == "tpu"
    assert view.quota_free("cluster-queue", "on-demand", needs)  # team-b's slice, borrowed
    twin.patch("clusterqueue", "cluster-queue", {"spec": {"cohortName": None}})
    view = ClusterView(_controller(twin).api, FallbackConfig())
    assert not view.quota_free("cluster-queue", "on-demand", needs)  # alone: its one slice is taken
