"""The time a job's pods take from their nodes Ready to all ready is read from the cluster's own starts (a real
GKE node pulls a TPU image for minutes; the twin's kubelet starts pods at once), not taken as "up to 5 s"
everywhere: a forecast that assumed 5 s put every start on a real cluster minutes early, and on a live twin
seconds late, outside the low end of its interval."""

from __future__ import annotations

import random
from typing import Any

from flexq.api.gke_catalog import LABEL_NODEPOOL
from flexq.clock import format_time
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.jobs import StateView
from flexq.forecast.model import POD_START_SECONDS
from flexq.forecast.state import ClusterState
from tests.eta.helpers import waiting_state

T0 = 1_800_000_000.0


def _cond(kind: str, at: float, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "lastTransitionTime": format_time(T0 + at)}


def _flavor(name: str, pool: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeLabels": {LABEL_NODEPOOL: pool}}}


def _node(name: str, pool: str, ready: float) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {LABEL_NODEPOOL: pool}, "creationTimestamp": format_time(T0)},
        "status": {"conditions": [_cond("Ready", ready)]},
    }


def _workload(name: str, flavor: str, admitted: float, ready: float, finished: float | None = None) -> dict:
    conds = [_cond("QuotaReserved", admitted), _cond("Admitted", admitted), _cond("PodsReady", ready)]
    if finished is not None:
        conds.append(_cond("Finished", finished))
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": format_time(T0)},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "workers", "count": 4}]},
        "status": {
            "conditions": conds,
            "admission": {
                "clusterQueue": "cluster-queue",
                "podSetAssignments": [{"name": "workers", "flavors": {"google.com/tpu": flavor}, "count": 4}],
            },
        },
    }


def _state(workloads: list[dict], nodes: list[dict]) -> ClusterState:
    return ClusterState(
        now=T0 + 3000,
        flavors=[_flavor("on-demand", "od-pool"), _flavor("dws", "dws-pool")],
        nodes=nodes,
        workloads=workloads,
    )


def test_the_pods_start_is_read_from_the_nodes_made_for_a_job_or_from_its_admission() -> None:
    state = _state(
        [
            # nodes made for it (Ready at 90 s), its pods ready two minutes later: the image pull
            _workload("made", "on-demand", admitted=0, ready=210),
            # on nodes already up (none Ready between its admission and its start): from the admission
            _workload("reused", "dws", admitted=1000, ready=1150),
            # finished, and no node of its pool left from then: its nodes may have been made and removed since,
            # so its 600 s would hold their making; left out
            _workload("gone", "on-demand", admitted=2000, ready=2600, finished=2900),
        ],
        [_node("od-1", "od-pool", ready=90), _node("dws-1", "dws-pool", ready=500)],
    )
    model = fit(state, EtaConfig())
    assert sorted(model.pod_starts) == [120.0, 150.0]
    assert any(line.startswith("pods start: 2m") and "from 2 jobs" in line for line in model.describe())
    # a forward run draws one of them, within the second the API's whole-second times leave either side; or, as
    # often as the next start is faster than both seen (1 in 3), sooner; never slower than the slowest seen when
    # that is past the prior's 5 s
    rng = random.Random(7)
    draws = [model.draw_pod_start(rng) for _ in range(600)]
    assert all(0.0 <= d <= 151.0 for d in draws)
    assert not [d for d in draws if 121.0 < d < 149.0]
    sooner = sum(d < 119.0 for d in draws)
    assert 140 <= sooner <= 260, sooner
    assert {round(d / 30) for d in draws if d >= 119.0} == {4, 5}  # both seen starts are drawn
    # and a bootstrap replica keeps only starts that were seen
    assert set(model.bootstrap(rng).pod_starts) <= {120.0, 150.0}


def test_with_no_start_seen_the_prior_stands_and_says_so() -> None:
    model = fit(_state([], [_node("od-1", "od-pool", ready=90)]), EtaConfig())
    assert model.pod_starts == []
    rng = random.Random(3)
    assert all(0.0 <= model.draw_pod_start(rng) <= POD_START_SECONDS for _ in range(200))
    assert any(line.startswith("pods start: within 5s") for line in model.describe())


def test_on_a_twin_a_jobs_end_comes_as_long_after_its_declared_run_as_the_twin_showed() -> None:
    """The twin declares a job's run (its run-seconds); its Workload is Finished a second after that run (181 s for
    180): the forecast adds what the finished jobs showed, and nothing where the twin declares no run."""
    state = waiting_state(1, 4, run=180, gap=3, settle=900)
    model = fit(state, EtaConfig())
    assert model.run_lags and all(lag == 1.0 for lag in model.run_lags), model.run_lags
    entry = next(e for e in StateView.of(state).entries if e.role in ("pending", "reserved", "running"))
    lags = [
        model.draw_run(entry, 0.0, random.Random(i), end_lag=True)
        - model.draw_run(entry, 0.0, random.Random(i))
        for i in range(300)
    ]
    assert all(0.0 <= lag <= 2.0 for lag in lags) and sum(lags) / len(lags) > 0.5
    as_real = fit(state.__class__.from_dict({**state.to_dict(), "twin": None}), EtaConfig())
    assert as_real.run_lags == []
    assert all(
        as_real.draw_run(entry, 0.0, random.Random(i), end_lag=True)
        == as_real.draw_run(entry, 0.0, random.Random(i))
        for i in range(20)
    )
