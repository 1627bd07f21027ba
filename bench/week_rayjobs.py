"""A team's week of tutorial-shaped RayJobs through the whole twin, on the virtual clock.

The tutorial's cluster (its ``clusters create`` body, except that the default pool's VMs are spot, so some
Ray heads are preempted), its two TPU pools (plan A on demand, plan B DWS flex-start queued provisioning)
and its queue configuration (``dws-tpu-queue.yaml``: Kueue tries on-demand first, falls back to DWS with the
``dws-prov`` ProvisioningRequest check), under a capacity profile with nightly on-demand v6e stock-outs
(02:00-05:00 every day), DWS waits (exponential, mean 3 min, at most 30 min) and spot preemption
(exponential, mean 1 day per VM). ``--jobs`` RayJobs made from the tutorial's ``rayjob-tpu-v6e-dws.yaml``
(CPU head, a 4-host v6e 4x4 worker group, the elastic-job annotation) arrive as a Poisson process at the
rate of 10,000 a week, each training for 20-40 s on the simulated executor (``twin.flexq.dev/run-seconds``),
submitted through ``flexq.Twin``'s public methods. Everything runs: Kueue, the ProvisioningRequest check,
GKE's autoscaler and DWS, the kube-scheduler and kubelet, KubeRay.

Prints wall time, peak RSS and the week's outcome: jobs per plan, how they ended, waits (submission to
admission) and the bill. ``--profile FILE`` writes a cProfile. ``week_results(jobs, seed)`` returns the
per-job results (the determinism test compares two runs).

    .venv/bin/python bench/week_rayjobs.py [--jobs 10000] [--seed 1] [--profile week.prof]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import random
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "week-project"
WEEK = 7 * 86400.0
PER_WEEK = 10_000
ADMITTED: dict[str, float] = {}  # RayJob -> virtual time of its first admission (filled by run_week's watch)
DAY = 86400.0


def profile(days: int) -> dict[str, Any]:
    windows = [
        {"start": f"{int(d * DAY + 2 * 3600)}s", "end": f"{int(d * DAY + 5 * 3600)}s", "available": 0}
        for d in range(days + 1)
    ]
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": {
            "seed": 11,
            "defaults": {"provisionTime": {"uniform": {"min": "30s", "max": "90s"}}},
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                    "windows": windows,
                },
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"exponential": {"mean": "3m"}, "max": "30m"},
                },
                {"match": {"provisioningModels": ["spot"]}, "preemption": {"exponential": {"mean": "1d"}}},
            ],
        },
    }


def make_twin(seed: int, days: int) -> Twin:
    twin = Twin(clock="virtual", seed=seed)
    twin.apply(profile(days))
    path, body = T.create_cluster_request(PROJECT)
    body["cluster"]["nodePools"][0]["config"]["spot"] = True
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    twin.apply(profile(days))  # the GKE cluster's own store reads the profile too
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def run_week(
    jobs: int,
    seed: int,
    prof: cProfile.Profile | None = None,
    observe: Callable[[Twin], None] | None = None,
) -> tuple[Twin, dict[str, float], float, float]:
    """Submit ``jobs`` RayJobs over their share of a week and run until every one has ended (or two more days).
    ``observe`` is called with the twin once its cluster is set up, before the first RayJob (to add watches).
    Returns the twin (open), the submission times, and the wall and process CPU seconds of the run."""
    days = max(1, int(jobs / PER_WEEK * 7 + 0.999))
    twin = make_twin(seed, days)
    if observe is not None:
        observe(twin)
    template = yaml.safe_load(T.rayjob_yaml("x"))
    rng = random.Random(seed)
    t = twin.now()
    arrivals = []
    for i in range(jobs):
        t += rng.expovariate(PER_WEEK / WEEK)
        arrivals.append((t, f"rayjob-{i:05d}", rng.uniform(20, 40)))
    submitted: dict[str, float] = {}
    done: set[str] = set()
    ADMITTED.clear()

    def on_rayjob(ev: Any) -> None:  # an observer: which RayJobs have ended
        st = ev.object.get("status") or {}
        if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
            done.add(ev.object["metadata"]["name"])

    def on_workload(ev: Any) -> None:  # a Workload deactivated (its DWS request was rejected) ends its job
        owners = [r["name"] for r in ev.object["metadata"].get("ownerReferences") or ()]
        if (ev.object.get("spec") or {}).get("active") is False:
            done.update(owners)
        if _cond(ev.object, "Admitted").get("status") == "True":
            for o in owners:
                ADMITTED.setdefault(o, twin.now())  # the first admission, at the virtual instant it happened

    twin.store.watch(on_rayjob, ["RayJob"])
    twin.store.watch(on_workload, ["Workload"])
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    for at, name, run_s in arrivals:
        if at > twin.now():
            twin.advance(at - twin.now())
        job = copy.deepcopy(template)
        job["metadata"]["name"] = name
        job["metadata"]["annotations"]["twin.flexq.dev/run-seconds"] = f"{run_s:.0f}"
        twin.create(job)
        submitted[name] = twin.now()
    deadline = (
        twin.now() + 2 * DAY
    )  # the last ones may wait for DWS; then stop (timers such as spot never end)
    while len(done) < len(submitted) and twin.now() < deadline:
        twin.advance(600)
    if prof:
        prof.disable()
    return twin, submitted, time.perf_counter() - wall0, time.process_time() - cpu0


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == typ), {})


def week_results(twin: Twin, submitted: dict[str, float]) -> dict[str, tuple]:
    """Per RayJob: (deployment status, job status, plan (the TPU flavor), admitted at, Workload finish reason)."""
    wls: dict[str, dict] = {}
    for w in twin.list("Workload", "default"):
        owner = (w["metadata"].get("ownerReferences") or [{}])[0].get("name", "")
        wls.setdefault(owner, w)  # the first slice of an elastic job
    out = {}
    for rj in twin.list("RayJob", "default"):
        name = rj["metadata"]["name"]
        if name not in submitted:
            continue
        w = wls.get(name, {})
        adm = (w.get("status") or {}).get("admission") or {}
        plan = next(
            (
                set(a["flavors"].values())
                for a in adm.get("podSetAssignments", [])
                if a["name"] == "tpu-group"
            ),
            set(),
        )
        admitted = _cond(w, "Admitted")
        st = rj.get("status") or {}
        out[name] = (
            st.get("jobDeploymentStatus"),
            st.get("jobStatus"),
            ",".join(sorted(plan)),
            admitted.get("lastTransitionTime"),
            _cond(w, "Finished").get("reason"),
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=PER_WEEK)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the run to FILE")
    args = ap.parse_args()
    prof = cProfile.Profile() if args.profile else None
    load0 = os.getloadavg()[0]
    twin, submitted, wall, cpu = run_week(args.jobs, args.seed, prof)
    if prof:
        prof.dump_stats(args.profile)
    res = week_results(twin, submitted)
    plans: dict[str, int] = {}
    ends: dict[str, int] = {}
    waits = []
    for name, (dep, _js, plan, _admitted, finish) in res.items():
        plans[plan or "(never admitted)"] = plans.get(plan or "(never admitted)", 0) + 1
        ends[f"{dep}/{finish}"] = ends.get(f"{dep}/{finish}", 0) + 1
        if name in ADMITTED:
            waits.append(ADMITTED[name] - submitted[name])
    bill = twin.billing()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    virtual = twin.now() - min(submitted.values(), default=twin.now())
    print(
        f"{args.jobs} tutorial-shaped RayJobs, seed {args.seed}: wall {wall:.1f} s (process CPU {cpu:.1f} s; "
        "cluster setup not included) [target <= 20 s for 10,000], "
        f"peak RSS {rss:.0f} MiB [target <= 2048 MiB]"
    )
    print(
        f"  virtual time from the first submission to the end {virtual / 86400:.2f} days; load average {load0:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs"
    )
    print("  jobs per plan (TPU flavor): " + ", ".join(f"{k} {v}" for k, v in sorted(plans.items())))
    print(
        "  how they ended (RayJob deployment status / Workload Finished reason): "
        + ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))
    )
    if waits:
        q = statistics.quantiles(waits, n=20) if len(waits) > 1 else [waits[0]] * 19
        print(
            f"  wait from submission to first admission: mean {statistics.mean(waits):.0f} s, median "
            f"{statistics.median(waits):.0f} s, p95 {q[18]:.0f} s, max {max(waits):.0f} s"
        )
    print(
        f"  cost: total ${bill.get('total', 0):.2f}; per pool "
        + ", ".join(f"{k} ${v:.2f}" for k, v in (bill.get("pools") or {}).items())
        + "; per flavor "
        + ", ".join(f"{k} ${v:.2f}" for k, v in (bill.get("flavors") or {}).items())
    )
    twin.close()


if __name__ == "__main__":
    main()
