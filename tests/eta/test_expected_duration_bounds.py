"""Issue 49 (the ETA service): a tenant's ``flexq.dev/expected-duration`` is a claim, bounded where it is read.

"99999999999999999999999h" (3.6e26 s) or "1h" x 1000 used to be taken as is: one job then held its quota for
ever in every forward run and every job behind it read "not within 7d". Now a text over 64 characters, a
duration that does not parse, is not positive or is over 30 days is read as no estimate (the job's class
history is used), and the others keep their ETAs."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.eta import EtaConfig, estimate, state_from_twin
from flexq.forecast.declared import expected_duration
from tests.eta.helpers import rayjob, tutorial_cluster


def _job(value: str) -> dict:
    return {"metadata": {"annotations": {"flexq.dev/expected-duration": value}}}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("45m", 2700.0),
        ("2h", 7200.0),
        ("720h", 30 * 86400.0),
        ("721h", None),
        ("99999999999999999999999h", None),
        ("1h" * 1000, None),
        ("0s", None),
        ("-5m", None),
        ("soon", None),
        ("1e400s", None),
    ],
)
def test_the_annotation_is_read_within_bounds(value: str, seconds: float | None) -> None:
    assert expected_duration(_job(value)) == seconds


def test_an_absurd_claim_is_read_as_no_estimate_and_the_forecast_says_so() -> None:
    twin = Twin(clock="virtual", seed=11)
    try:
        tutorial_cluster(twin, dws_max=4)
        for i in (1, 2):
            twin.create(rayjob(i))
            twin.advance(60)
        hog, fair = rayjob(3), rayjob(4)
        hog["metadata"]["annotations"]["flexq.dev/expected-duration"] = "99999999999999999999999h"
        fair["metadata"]["annotations"]["flexq.dev/expected-duration"] = "45m"
        for job in (hog, fair):
            twin.create(job)
            twin.advance(60)
        fc = estimate(
            state_from_twin(twin, declared=False), EtaConfig(replicas=2, workers=1, horizon=2 * 86400.0)
        )
    finally:
        twin.close()
    by_job = {name.split("/")[1].rsplit("-", 1)[0]: j for name, j in fc.jobs.items()}
    hog_run = next(r for r in by_job["rayjob-rayjob-tpu-v6e-dws-3"].reasoning if r.startswith("its run time"))
    fair_run = next(
        r for r in by_job["rayjob-rayjob-tpu-v6e-dws-4"].reasoning if r.startswith("its run time")
    )
    assert "annotation" not in hog_run, hog_run  # the claim is not taken: the class history or the prior is
    assert "flexq.dev/expected-duration annotation (45m" in fair_run, fair_run
