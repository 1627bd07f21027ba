"""What deciding by forecast costs the fallback: a pass's forecast work, on a few jobs and on a deep queue.

The tutorial's cluster in a virtual twin with flexq's fallback on (``decide_by`` forecast, and rules for the
comparison), on-demand TPUs stocked out for the first ``--stockout`` hours and DWS granting after ``--dws-wait``;
``--jobs`` tutorial RayJobs submitted a minute apart (5: the tutorial's scale; 120: a deep queue), the twin run for
``--hours``. Printed per setting: the process's CPU for the whole run, the fallback's passes, the passes that ran
a forecast, the forward runs they made, the CPU of those forecasts (per forecast pass: median and max), and what the
jobs got (started, mean wait to start, moves made and refused).

    .venv/bin/python bench/fallback_forecast_cost.py
    .venv/bin/python bench/fallback_forecast_cost.py --jobs 5,120 --hours 6
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import yaml

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.clock import format_time, parse_time
from flexq.fallback.model import OPT_IN_LABEL

PROJECT = "bench-project"


def _profile(stockout_h: float, dws_wait: str) -> dict[str, Any]:
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": {
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                    "windows": [{"start": "0s", "end": f"{int(stockout_h * 3600)}s", "available": 0}],
                },
                {"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": dws_wait}},
            ]
        },
    }


def _twin(decide_by: str, stockout_h: float, dws_wait: str) -> Twin:
    twin = Twin(clock="virtual", seed=5, fallback={"decide_by": decide_by})
    twin.core.project.create(_profile(stockout_h, dws_wait))
    twin.gke("POST", *T.create_cluster_request(PROJECT))
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        body["nodePool"]["autoscaling"]["maxNodeCount"] *= 4  # room for four slices each
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    queues = T.queue_yaml(api="v1beta2")
    for q in ("16", "40"):
        queues = queues.replace(f"nominalQuota: {q}", f"nominalQuota: {int(q) * 4}")
    queues = queues.replace("nominalQuota: 75Gi", "nominalQuota: 300Gi")
    twin.apply(queues)
    twin.patch("localqueue", "user-queue", {"metadata": {"labels": {OPT_IN_LABEL: "true"}}}, "default")
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def _rayjob(i: int, run: int) -> dict[str, Any]:
    obj = yaml.safe_load(T.rayjob_yaml(i))
    obj["metadata"].setdefault("annotations", {})["twin.flexq.dev/run-seconds"] = str(run)
    return obj


def one(decide_by: str, jobs: int, hours: float, stockout_h: float, dws_wait: str) -> dict[str, Any]:
    twin = _twin(decide_by, stockout_h, dws_wait)
    try:
        ctl = next(c for c in twin.core.current().manager.controllers if c.name == "flexq-fallback")
        judge = ctl.policy.judge
        per_pass: list[float] = []
        if judge is not None:
            inner = judge.judge

            def timed(*a: Any, **kw: Any) -> Any:
                t0 = time.process_time()
                try:
                    return inner(*a, **kw)
                finally:
                    per_pass.append(time.process_time() - t0)

            judge.judge = timed  # type: ignore[method-assign]
        t0 = time.process_time()
        start = twin.now()
        for i in range(1, jobs + 1):
            twin.create(_rayjob(i, 1800 + 300 * (i % 5)))
            twin.advance(60)
        twin.advance(max(0.0, hours * 3600 - (twin.now() - start)))
        cpu = time.process_time() - t0
        waits = []
        for job in twin.list("rayjob", "default"):
            t = (job.get("status") or {}).get("startTime")
            if t:
                waits.append(parse_time(t) - parse_time(job["metadata"]["creationTimestamp"]))
        verbs = [a.verb for a in ctl.actions]
        return {
            "cpu": cpu,
            "forecastPasses": len(per_pass),
            "runs": judge.runs if judge is not None else 0,
            "forecastCpu": sum(per_pass),
            "perPassMedian": statistics.median(per_pass) if per_pass else 0.0,
            "perPassMax": max(per_pass) if per_pass else 0.0,
            "started": len(waits),
            "meanWait": statistics.mean(waits) if waits else 0.0,
            "moves": verbs.count("move"),
            "refused": verbs.count("refuse"),
            "at": format_time(twin.now()),
        }
    finally:
        twin.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="5,120", help="comma-separated job counts")
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--stockout", type=float, default=3.0, help="hours on-demand is stocked out")
    ap.add_argument("--dws-wait", default="20m")
    args = ap.parse_args(argv)
    for n in (int(x) for x in args.jobs.split(",")):
        for mode in ("rules", "forecast"):
            r = one(mode, n, args.hours, args.stockout, args.dws_wait)
            print(
                f"{n:4d} jobs, decide by {mode:<8}: CPU {r['cpu']:7.1f} s for {args.hours:g} h; forecast passes "
                f"{r['forecastPasses']:4d}, forward runs {r['runs']:5d}, forecast CPU {r['forecastCpu']:6.1f} s "
                f"(per pass median {r['perPassMedian']:.3f} s, max {r['perPassMax']:.3f} s); started {r['started']}/{n}, "
                f"mean wait to start {r['meanWait'] / 60:.1f} min; moves {r['moves']}, refused {r['refused']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
