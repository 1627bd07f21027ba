"""controller-runtime's metrics of the twin's controllers, on each cluster's ``/metrics`` page as on Kueue's:
reconciles by result, errors, work queue adds, retries and depth."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.loop import EventLoop, Rngs
from flexq.runtime import Context, Controller, Manager, Result
from flexq.store import Store
from flexq.store.logs import PodLogs

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j", "namespace": "default"},
    "spec": {
        "template": {
            "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "30"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        }
    },
}


def _samples(text: str, name: str) -> dict[tuple, float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_a_jobs_run_counts_reconciles_per_controller_and_result() -> None:
    twin = Twin(clock="virtual")
    try:
        before = _samples(twin.metrics(), "controller_runtime_reconcile_total")
        twin.create(JOB)
        twin.advance(120)
        assert twin.get("Job", "j")["status"].get("active") == 1  # the job controller made its pod
        after = _samples(twin.metrics(), "controller_runtime_reconcile_total")
        key = (("controller", "job-controller"), ("result", "success"))
        assert after[key] > before.get(key, 0)
        assert {dict(k)["result"] for k in after} == {"success", "error", "requeue", "requeue_after"}
        adds = twin.metric("workqueue_adds_total", {"name": "job-controller"})
        assert adds >= after[key] - before.get(key, 0)  # each reconcile was queued first
        assert twin.metric("workqueue_depth", {"name": "job-controller"}) == 0  # the loop has drained it
    finally:
        twin.close()


class _Flaky(Controller):
    name = "flaky"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.calls = 0

    def reconcile(self, key: object) -> Result | None:
        self.calls += 1
        if self.calls <= 2:
            raise RuntimeError("not yet")
        return Result(requeue_after=30) if self.calls == 3 else None


def test_errors_retries_and_requeues_are_counted() -> None:
    loop = EventLoop(VirtualClock(0))
    registry = CollectorRegistry(auto_describe=False)
    store = Store(default_registry(), loop.clock, namespaces=["default"])
    ctx = Context(
        store=store,
        loop=loop,
        rngs=Rngs(1),
        logs=PodLogs(None),
        cluster="c",
        project=store,
        executors=[],
        metrics=registry,
    )
    manager = Manager(ctx)
    flaky = _Flaky(ctx)
    manager.add(flaky)
    flaky.enqueue("k")
    loop.run_until_idle(3600)
    assert flaky.calls == 4

    def value(metric: str, **labels: str) -> float | None:
        return registry.get_sample_value(metric, {"controller": "flaky", **labels})

    assert value("controller_runtime_reconcile_total", result="error") == 2
    assert value("controller_runtime_reconcile_total", result="requeue_after") == 1
    assert value("controller_runtime_reconcile_total", result="success") == 1
    assert value("controller_runtime_reconcile_errors_total") == 2
    assert value("workqueue_retries_total", name="flaky") == 2
    assert value("workqueue_adds_total", name="flaky") == 4
    assert value("workqueue_depth", name="flaky", priority="") == 0
