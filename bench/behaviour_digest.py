"""The per-job results of two whole-twin runs as JSON, to check that a speed change changes no behaviour.

``week``: ``bench/week_rayjobs.py``'s ``week_results`` for ``--jobs`` RayJobs (seed 1), the virtual instant
of each job's first admission and the bill. ``baseline``: ``bench/whole_twin_baseline.py`` at ``--cohorts``
and ``--scale``, per Job: the virtual instant of its first admission, its startTime and completionTime, its
Workload's conditions (type, status, reason, lastTransitionTime) and admission. Both also print a digest of
every stored object (without resourceVersions) at the end. Write before and after a change and compare
the files byte for byte::

    .venv/bin/python bench/behaviour_digest.py --out before.json
    ... change ...
    .venv/bin/python bench/behaviour_digest.py --out after.json && cmp before.json after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import week_rayjobs
import whole_twin_baseline as wtb

from flexq import Twin


def _state_digest(twin: Twin) -> str:
    """A digest of every stored object but its resourceVersion (of the cluster's store). resourceVersions count
    the store's writes, so a change that saves a write the real system does not make (the kube-scheduler's
    binding, one write upstream) renumbers every later version; an Event's ``involvedObject.resourceVersion``
    copies one, so it is left out too."""
    h = hashlib.sha256()
    rows = []
    for kk, obj in twin.store.all_objects():
        obj["metadata"].pop("resourceVersion", None)
        if kk == "events":
            (obj.get("involvedObject") or {}).pop("resourceVersion", None)
        rows.append((kk, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], obj))
    for row in sorted(rows, key=lambda r: r[:3]):
        h.update(json.dumps(row, sort_keys=True).encode())
    return h.hexdigest()


def week(jobs: int, seed: int) -> dict:
    twin, submitted, _wall, cpu = week_rayjobs.run_week(jobs, seed)
    try:
        res = week_rayjobs.week_results(twin, submitted)
        return {
            "results": {k: list(v) for k, v in sorted(res.items())},
            "admitted": dict(sorted(week_rayjobs.ADMITTED.items())),
            "bill": twin.billing(),
            "objects": _state_digest(twin),
            "_cpu": cpu,
        }
    finally:
        twin.close()


def baseline(cohorts: int, scale: float) -> dict:
    twin = wtb.make_twin(cohorts)
    rec = wtb.Recorder(twin)
    t0 = twin.now()
    plan = []
    for c in range(cohorts):
        for q in range(wtb.QUEUES_PER_COHORT):
            ns = f"cq-0-{q}-cohort-{c}"
            for si, (cls, count, interval, runtime, _p, cpu) in enumerate(wtb.CLASSES):
                for i in range(max(1, int(count * scale))):
                    plan.append((round(t0 + (i + 1) * interval, 6), ns, f"{cls}-{si}-{i}", cls, runtime, cpu))
    plan.sort()
    c0 = time.process_time()
    for at, ns, name, cls, runtime, cpu in plan:
        if at > twin.now():
            twin.advance(at - twin.now())
        twin.create(wtb.job(ns, name, cls, runtime, cpu))
    twin.run_until_idle(3600)
    cpu_s = time.process_time() - c0
    try:
        wls = {}
        for w in twin.list("Workload"):
            md = w["metadata"]
            owner = (md.get("ownerReferences") or [{}])[0].get("name", md["name"])
            st = w.get("status") or {}
            wls[(md["namespace"], owner)] = {
                "conditions": [
                    [c["type"], c["status"], c.get("reason"), c.get("lastTransitionTime")]
                    for c in st.get("conditions") or ()
                ],
                "admission": st.get("admission"),
            }
        out = {}
        for j in twin.list("Job"):
            md = j["metadata"]
            key = (md["namespace"], md["name"])
            st = j.get("status") or {}
            out[f"{key[0]}/{key[1]}"] = {
                "admitted": rec.admitted.get(key),
                "start": st.get("startTime"),
                "completion": st.get("completionTime"),
                "workload": wls.get(key),
            }
        return {"jobs": dict(sorted(out.items())), "objects": _state_digest(twin), "_cpu": cpu_s}
    finally:
        twin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--cohorts", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--only", choices=["week", "baseline"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    res = {}
    if args.only in (None, "week"):
        res["week"] = week(args.jobs, 1)
    if args.only in (None, "baseline"):
        res["baseline"] = baseline(args.cohorts, args.scale)
    cpu = {k: round(v.pop("_cpu"), 2) for k, v in res.items()}
    Path(args.out).write_text(json.dumps(res, sort_keys=True, indent=1) + "\n")
    print(f"wrote {args.out}; process CPU of the runs (s): {cpu}")


if __name__ == "__main__":
    main()
