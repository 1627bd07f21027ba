"""Issue 46: a job admitted before the instant has had its nodes in the making since its admission.

The forward run asked for a waiting job's nodes at the instant of the state, so a job whose nodes were minutes from
Ready was predicted to start a whole provisioning time later (a shallow queue's admitted jobs missed their
interval by a minute or two). The autoscaler asks when the pods appear, at admission: the run now counts the
nodes' provisioning from the job's admission."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.eta import EtaConfig, estimate, state_from_twin
from tests.eta.helpers import rayjob, tutorial_cluster


@pytest.mark.parametrize(("provision", "after"), [(900, 600), (1200, 300), (600, 420)])
def test_nodes_under_way_are_not_asked_for_again(provision: int, after: int) -> None:
    twin = Twin(clock="virtual", seed=provision)
    p = tutorial_profile()
    p["metadata"]["name"] = "default"
    p["spec"]["defaults"]["provisionTime"] = {"fixed": f"{provision}s"}
    p["spec"]["rules"][0]["provisionTime"] = {"fixed": f"{provision}s"}
    twin.core.project.create(p)
    tutorial_cluster(twin, profile=False)
    twin.apply(rayjob(1, run=1800))
    twin.advance(after)
    state = state_from_twin(twin)
    # the cluster shows no TPU node Ready yet: the model's provisioning time is its prior, here the cloud's own
    cfg = EtaConfig(
        replicas=8, horizon=86400.0, workers=1, prior_provision=(float(provision), float(provision))
    )
    fc = estimate(state, cfg)
    (job,) = fc.jobs.values()
    assert job.role == "reserved" and job.median is not None, job.reasoning
    # the nodes were asked for at admission: what is left of their provisioning, not all of it again
    assert job.median <= provision - after + 60.0, (job.median, job.reasoning)
