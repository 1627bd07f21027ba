"""Capacity tiers (kueue#15500): how promptly a job waiting on DWS uses reservation capacity when it frees.

    .venv/bin/python bench/capacity_tiers.py [--replicas 4] [--study FILE ...] [--variants NAME ...]

Runs the studies' variants on ``--replicas`` draws of their generator, one run at a time. By default both
studies of examples/capacity-tiers: ``simulation.yaml`` (Kueue alone, flexq's fallback by rules, by forecast)
and ``simulation-concurrent.yaml`` (the same traffic on the layout Kueue's Concurrent Admission accepts: Kueue
alone, Concurrent Admission with TryPreferredFlavors and with RetainFirstAdmission, the fallback by rules). For every job that was waiting on DWS (its quota reserved on the DWS flavor, its
ProvisioningRequest not granted) when reservation quota freed — the quota reserved on a reservation flavor fell —
it measures how long after the first such freeing the job started: on the reservation (promoted) or on DWS (it
never moved). A job that never started counts until the horizon (censored). Printed per variant, over all
replicas: how many such jobs, how many started on a reservation, that delay's median, p90 and max; the jobs lost,
the mean wait to start of every job (censored), the bill as the twin counts it (a reservation's node-hours at the
on-demand price while its nodes exist), and the flex-start bill alone — what differs between variants when the
reservations are paid in full whether used or not, as GCE bills them — and the fallback's promotions; the jobs
restarted after they had started (Concurrent Admission's FlavorMigration evicts a running job) and the work they
lost: a finished job's time from its first start to its end beyond its run time (the simulated executor runs a
job ``run`` seconds from its last start), in slice-hours per run. Then, per
freeing of reservation quota while jobs waited on DWS: how long until the first of them started (one freed slice
takes one job: how long it went unused by them, at most). The figures and what they answer: docs/capacity-tiers.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from flexq.simulate.engine import run_one
from flexq.simulate.run_result import RunResult
from flexq.simulate.study import load_study

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("simulation.yaml", "simulation-concurrent.yaml")
RESTART_SLACK = 60.0  # seconds from first start to end beyond the run time that are not a restart
RESERVATION_FLAVORS = ("res-a", "res-b")
DWS_FLAVOR = "dws"
TPU = "google.com/tpu"
WORKERS = "tpu-group"  # the RayJob's TPU pod set (rayjob-template.yaml's worker group)


def freeings(r: RunResult, flavors: tuple[str, ...] = RESERVATION_FLAVORS) -> list[float]:
    """The instants the TPU quota reserved on a reservation flavor fell (capacity freed), sorted."""
    out: list[float] = []
    for key, series in r.reserved.items():
        _cq, flavor, resource = key.split("/", 2)  # "cq/flavor/resource" (a resource name has a slash)
        if resource != TPU or flavor not in flavors:
            continue
        out.extend(t for (_t0, q0), (t, q) in zip(series, series[1:], strict=False) if q < q0)
    return sorted(out)


def promptness(r: RunResult, flavors: tuple[str, ...] = RESERVATION_FLAVORS) -> list[dict[str, Any]]:
    """Each job that waited on DWS when reservation quota freed: the first freeing in its wait, how long after it
    the job started (to the horizon when it never did: ``censored``), and where it ran."""
    frees = freeings(r, flavors)
    out = []
    for j in r.jobs:
        if (j.get("wait_dws") or 0.0) <= 0.0:
            continue
        since = j["submit"] + (
            j.get("wait_quota") or 0.0
        )  # its DWS quota: reserved once the quota wait ended
        end = j["started"] if j["started"] is not None else r.horizon
        first = next((f for f in frees if since <= f < end), None)
        if first is None:
            continue
        ran = dict(p.split("=", 1) for p in (j.get("flavors") or "").split(",") if "=" in p)
        out.append(
            {
                "job": j["job"],
                "freed": first,
                "delay": end - first,
                "censored": j["started"] is None,
                # where its workers ran (the head's and submitter's small pod sets may get another flavor:
                # without Concurrent Admission, Kueue assigns each pod set its own)
                "promoted": any(f in flavors for f in ran.get(WORKERS, "").split("+")),
            }
        )
    return out


def first_takers(r: RunResult, flavors: tuple[str, ...] = RESERVATION_FLAVORS) -> list[float]:
    """For each freeing of reservation quota while at least one job waited on DWS: seconds until the first of
    those jobs started (a freed slice can take one job: this is how long it went to waste, at most)."""
    spans = []
    for j in r.jobs:
        if (j.get("wait_dws") or 0.0) > 0.0:
            since = j["submit"] + (j.get("wait_quota") or 0.0)
            spans.append((since, j["started"] if j["started"] is not None else r.horizon))
    out = []
    for f in freeings(r, flavors):
        starts = [end for since, end in spans if since <= f < end]
        if starts:
            out.append(min(starts) - f)
    return out


def lost_work(r: RunResult) -> list[float]:
    """Each finished job's seconds from its first start to its end beyond its run time, when more than
    ``RESTART_SLACK``: the work a restart threw away, and the restart (a job that ran once has about 1 s)."""
    out = []
    for j in r.jobs:
        if j["started"] is None or j["finished"] is None:
            continue
        extra = j["finished"] - j["started"] - j["run"]
        if extra > RESTART_SLACK:
            out.append(extra)
    return out


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    i = q * (len(s) - 1)
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def summary(runs: list[RunResult]) -> dict[str, Any]:
    rows = [p for r in runs for p in promptness(r)]
    delays = [p["delay"] / 60.0 for p in rows]
    first = [x / 60.0 for r in runs for x in first_takers(r)]
    jobs = [j for r in runs for j in r.jobs]
    billed = sum(
        n["pricePerHour"] * (n["billedUntil"] - n["created"]) / 3600.0 for r in runs for n in r.node_records
    )
    flex = sum(
        n["pricePerHour"] * (n["billedUntil"] - n["created"]) / 3600.0
        for r in runs
        for n in r.node_records
        if n["model"] == "flex-start"
    )
    return {
        "waiting": len(rows),
        "promoted": sum(p["promoted"] for p in rows),
        "censored": sum(p["censored"] for p in rows),
        "p50": quantile(delays, 0.5),
        "p90": quantile(delays, 0.9),
        "max": max(delays, default=float("nan")),
        "freeings": len(first),
        "first50": quantile(first, 0.5),
        "first90": quantile(first, 0.9),
        "firstmax": max(first, default=float("nan")),
        "lost": sum(bool(j["lost"]) for j in jobs),
        "jobs": len(jobs),
        "mean_wait": statistics.fmean(j["wait_censored"] for j in jobs) / 60.0 if jobs else float("nan"),
        "billed": billed / len(runs),
        "flex": flex / len(runs),
        "promotions": sum(r.fallback_actions.get("returned", 0) for r in runs),
        "restarted": sum(len(lost_work(r)) for r in runs),
        "lost_h": sum(x for r in runs for x in lost_work(r)) / 3600.0 / len(runs),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--study", nargs="+", default=[str(ROOT / "examples" / "capacity-tiers" / f) for f in STUDIES]
    )
    ap.add_argument("--replicas", type=int, default=4)
    ap.add_argument("--variants", nargs="*", default=None)
    args = ap.parse_args(argv)
    studies = [load_study(path) for path in args.study]
    plan = [
        (study, v.name)
        for study in studies
        for v in study.variants
        if not args.variants or v.name in args.variants
    ]
    for study in studies:
        print(
            f"study {study.name}: {sum(s is study for s, _ in plan)} variants x {args.replicas} replicas "
            f"(seed {study.seed})"
        )
    header = (
        f"{'variant':<20} {'on DWS at a freeing':>19} {'promoted':>8} {'never started':>13} "
        f"{'delay p50 (min)':>15} {'p90':>6} {'max':>6} {'lost':>8} {'mean wait (min)':>15} "
        f"{'billed $/run':>12} {'flex-start $/run':>16} {'promotions':>10} {'restarted':>9} "
        f"{'lost slice-h/run':>16} {'CPU s':>6}"
    )
    print(header)
    per_freeing = []
    for study, name in plan:
        cpu0 = time.process_time()
        runs = [run_one(study, name, i) for i in range(args.replicas)]
        s = summary(runs)
        cpu = time.process_time() - cpu0
        per_freeing.append(
            f"{name:<20} {s['freeings']:>28} {s['first50']:>15.1f} {s['first90']:>6.1f} {s['firstmax']:>6.1f}"
        )
        print(
            f"{name:<20} {s['waiting']:>19} {s['promoted']:>8} {s['censored']:>13} {s['p50']:>15.1f} "
            f"{s['p90']:>6.1f} {s['max']:>6.1f} {s['lost']:>3} of {s['jobs']:<3} {s['mean_wait']:>15.1f} "
            f"{s['billed']:>12,.0f} {s['flex']:>16,.0f} {s['promotions']:>10} {s['restarted']:>9} "
            f"{s['lost_h']:>16.1f} {cpu:>6.1f}",
            flush=True,
        )
    print()
    print("per freeing of reservation quota while jobs waited on DWS: until the first of them started")
    print(f"{'variant':<20} {'freeings with a DWS waiter':>28} {'delay p50 (min)':>15} {'p90':>6} {'max':>6}")
    for line in per_freeing:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
