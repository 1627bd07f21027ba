"""The ETA reads Kueue 0.19.2's legacy reasons too (issue 48: UnadmittedWorkloadsObservability is off there, so a
job no flavor fits says ``Pending``, not ``ExceedsMaxQuota``/``NoMatchingFlavor``): it is still said to never start,
not given a time."""

from __future__ import annotations

from flexq import Twin
from flexq.eta import EtaConfig, estimate, fmt_eta, state_from_twin
from tests.eta.helpers import rayjob, tutorial_cluster, unrunnable


def test_a_job_no_flavor_fits_is_said_so_on_0_19_2() -> None:
    twin = Twin(clock="virtual", seed=5, kueue="0.19.2")
    try:
        tutorial_cluster(twin, dws_max=16)
        twin.create(rayjob(1))
        twin.create(unrunnable())
        twin.advance(120)
        wl = next(w for w in twin.list("workload", "default") if "too-big" in w["metadata"]["name"])
        reason = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")["reason"]
        assert reason == "Pending"  # 0.19.2's word
        fc = estimate(state_from_twin(twin), EtaConfig(replicas=2, workers=1, horizon=86400.0))
    finally:
        twin.close()
    j = fc.find("too-big")
    assert j is not None and j.cannot and j.median is None, j and j.reasoning
    assert fmt_eta(j, fc.horizon) == "never (no flavor fits)"
