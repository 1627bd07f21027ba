"""Capacity tiers (issue 51, kueue#15500): the three-tier example (examples/capacity-tiers: reservations res-a and
res-b, then DWS) cut down to four minutes of traffic, run by the simulator on the real twin. A job Kueue put on
DWS because the reservations' quota was in use is promoted onto a reservation when its quota frees — within the
delay the fallback states — only when the reservation can take it, in Kueue's order; not with ``promote: false``
nor with Kueue alone. And ``flexq fallback``'s flags for it."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexq.cli import fallback as cli_fallback
from flexq.cli.main import build_parser
from flexq.fallback.controller import BATCH_SECONDS
from flexq.fallback.model import FallbackConfig
from flexq.fallback.returning import RETURN_SETTLE_SECONDS
from flexq.simulate.engine import Sim
from flexq.simulate.run_result import RunResult
from flexq.simulate.study import load_study

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity-tiers"
DWS_WAIT = 3 * 3600.0

# a1, a2 fill res-a, b1 res-b; then, on DWS (3 h to a grant): p1 and d2 of a higher priority, d1. p1's workers are
# pinned to dws-pool by its own node selector: first in Kueue's order, but Kueue would never put it on res-a. a1 ends
# at about 32 minutes: one slice of res-a frees, and none again before DWS grants d1 (a2, b1 and d2 run past it)
TRACE = """submit,queue,kind,name,template,run,class,priority
0,user-queue,RayJob,a1,rayjob-template.yaml,30m,experiment,
0,user-queue,RayJob,a2,rayjob-template.yaml,4h,training,
0,user-queue,RayJob,b1,rayjob-template.yaml,4h,training,
4m,user-queue,RayJob,p1,rayjob-dws-only.yaml,30m,urgent,high
5m,user-queue,RayJob,d1,rayjob-template.yaml,30m,experiment,
6m,user-queue,RayJob,d2,rayjob-template.yaml,3h,urgent,high
"""

PRIORITY = """apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("tiers")
    for f in EXAMPLE.glob("*.yaml"):
        if f.name != "simulation.yaml":
            shutil.copy(f, d / f.name)
    template = (EXAMPLE / "rayjob-template.yaml").read_text()
    pinned = "cloud.google.com/gke-tpu-topology: 4x4\n"
    assert pinned in template
    (d / "rayjob-dws-only.yaml").write_text(
        template.replace(pinned, pinned + "              cloud.google.com/gke-nodepool: dws-pool\n")
    )
    (d / "trace.csv").write_text(TRACE)
    (d / "priority.yaml").write_text(PRIORITY)
    doc = yaml.safe_load((EXAMPLE / "simulation.yaml").read_text())  # its cluster, reservations and queues
    doc.pop("generator")
    doc["trace"], doc["until"] = "trace.csv", "5h"
    doc["capacity"]["defaults"] |= {"provisionTime": {"fixed": "90s"}, "queueWait": {"fixed": "3h"}}
    for v in doc["variants"]:
        v["manifests"].append("priority.yaml")
    flexq = next(v for v in doc["variants"] if v["name"] == "fallback-rules")
    doc["variants"].append({**flexq, "name": "no-promote", "settings": {"fallback": {"promote": False}}})
    (d / "simulation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_study(d)


def _run(study: Any, variant: str) -> tuple[RunResult, Any]:
    """One run; the result and the fallback's controller (None with Kueue alone)."""
    sim = Sim(study, study.variant(variant), 0, study.jobs(study.seed))
    try:
        sim.setup()
        controllers = sim.twin.core.current().manager.controllers
        ctl = next((c for c in controllers if c.name == "flexq-fallback"), None)
        return sim.run(None), ctl
    finally:
        sim.twin.close()


def _jobs(r: RunResult) -> dict[str, dict[str, Any]]:
    out = {}
    for j in r.jobs:
        flavors = dict(p.split("=", 1) for p in j["flavors"].split(",") if "=" in p)
        out[j["job"]] = {**j, "tpu": flavors.get("tpu-group")}
    return out


def _freed(r: RunResult, flavor: str = "res-a") -> float:
    """When the TPU quota reserved on ``flavor`` first fell (a1 ended)."""
    series = r.reserved["cluster-queue/" + flavor + "/google.com/tpu"]
    return next(t for (_t0, q0), (t, q) in zip(series, series[1:], strict=False) if q < q0)


def test_a_job_waiting_on_dws_is_promoted_onto_the_freed_reservation_within_the_stated_delay(study) -> None:
    """The fallback (by rules) states its delay: a pass follows a Workload's change within ``BATCH_SECONDS``
    (``flexq fallback``: within ``--interval``) and a job it sends back is given ``RETURN_SETTLE_SECONDS`` to be
    admitted. d2 (of the higher priority: Kueue's order) is admitted on res-a that soon after a1's slice frees, once;
    p1, which Kueue would never put on res-a, and d1, for which no quota is free then, stay on DWS untouched."""
    r, ctl = _run(study, "fallback-rules")
    jobs = _jobs(r)
    freed = _freed(r)
    assert 1800 < freed < 2100  # a1: 30 minutes after its nodes came up
    d2 = jobs["d2"]
    assert d2["tpu"] == "res-a" and d2["evictions"] == 1 and d2["wait_dws"] > 0
    assert 0 < d2["admitted"] - freed <= BATCH_SECONDS + RETURN_SETTLE_SECONDS
    assert d2["started"] - freed < 600  # res-a's slice was up and idle: no scale-up to wait for
    for name in ("d1", "p1"):
        assert jobs[name]["tpu"] == "dws" and jobs[name]["evictions"] == 0, jobs[name]
        assert jobs[name]["started"] >= jobs[name]["submit"] + DWS_WAIT  # DWS's grant
    assert [a.verb for a in ctl.actions if a.verb in ("return", "returned")] == ["return", "returned"]
    assert r.provisioning["total"] == 3  # d2's ProvisioningRequest, and no new one: it went to res-a


def test_without_promotion_the_job_stays_on_dws_as_with_kueue_alone(study) -> None:
    for variant in ("no-promote", "kueue-alone"):
        r, ctl = _run(study, variant)
        jobs = _jobs(r)
        for name in ("p1", "d1", "d2"):
            assert jobs[name]["tpu"] == "dws" and jobs[name]["evictions"] == 0, (variant, jobs[name])
            assert jobs[name]["started"] >= jobs[name]["submit"] + DWS_WAIT
        if ctl is not None:
            assert not [a for a in ctl.actions if a.verb in ("return", "returned")]
        assert r.evictions == {}


def test_decided_by_forecast_the_promotion_starts_the_job_when_the_forecast_said(study) -> None:
    """Deciding by forecast, the promotion is made with the forecast's figures ("starts in ~X if moved"): d2
    starts within a pass, X and the forecast's tolerance of the freeing."""
    r, ctl = _run(study, "fallback-forecast")
    jobs = _jobs(r)
    d2 = jobs["d2"]
    assert d2["tpu"] == "res-a" and d2["evictions"] == 1
    verdict = next(v for k, v in ctl.policy.judge.last.items() if "rayjob-d2-" in k)
    assert verdict.make and verdict.candidate.endswith(":res-a"), verdict.describe()
    tolerance = ctl.policy.cfg.forecast_tolerance_seconds
    assert d2["started"] - _freed(r) <= BATCH_SECONDS + verdict.start_move + tolerance
    assert jobs["d1"]["tpu"] == jobs["p1"]["tpu"] == "dws"


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser("fallback").parse_args(["fallback", *argv])


def test_the_promotion_flags(capsys) -> None:
    cfg = cli_fallback.config_from_args(_parse("--promote-flavor", "res-a", "--promote-flavor", "res-b"))
    assert cfg.promote and cfg.promote_flavors == ["res-a", "res-b"]
    cfg = cli_fallback.config_from_args(_parse("--no-promote"))
    assert not cfg.promote and cfg.promote_flavors == []
    with pytest.raises(SystemExit):
        _parse("--promote-flavor", "Res_A")
    err = capsys.readouterr().err
    assert "--promote-flavor: 'Res_A' is not a ResourceFlavor name (lowercase letters" in err
    with pytest.raises(ValueError, match="promote_flavors: 'x y' is not a ResourceFlavor name"):
        FallbackConfig(promote_flavors=["x y"])


def test_the_contention_guard_flag(capsys) -> None:
    """``--contention-limit``: the guard, off by default (1), on from the CLI as from a study's settings."""
    assert cli_fallback.config_from_args(_parse()).contention_limit == 1.0
    assert cli_fallback.config_from_args(_parse("--contention-limit", "0.03")).contention_limit == 0.03
    for bad in ("1.5", "-0.1", "soon", "nan"):
        with pytest.raises(SystemExit):
            _parse("--contention-limit", bad)
        assert "--contention-limit" in capsys.readouterr().err
