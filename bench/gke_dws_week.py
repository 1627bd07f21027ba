"""A simulated week of DWS on the virtual clock: how fast the GKE twin runs, and what the week costs.

    .venv/bin/python bench/gke_dws_week.py [--requests 40] [--seed 7]

The tutorial's cluster and pools, a capacity profile where on-demand v6e has one 4x4 slice and DWS grants
a request after an exponential wait (mean 6 h, capped at 3 days), and ``--requests`` queued-provisioning
requests of a 4x4 slice arriving every 4 hours, each consumed by 4 workers that train for 3 hours
(``maxRunDurationSeconds`` 4 h). Printed: wall time, virtual time, loop steps per second, how many requests
were provisioned / revoked / failed, the mean and max DWS wait, and the bill per pool and provisioning model.
Wall and CPU time are both printed: the machine is shared, so wall time alone is noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time

from flexq.clock import parse_time
from flexq.gke.billing import billing_of
from flexq.testing.gke_twin import H, provisioning_request, tpu_pod, tutorial_twin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    spec = {
        "seed": args.seed,
        "defaults": {"provisionTime": {"uniform": {"min": "60s", "max": "120s"}}},
        "rules": [
            {"match": {"provisioningModels": ["on-demand"], "machineTypes": ["ct6e-*"]}, "available": 4},
            {
                "match": {"provisioningModels": ["queued"]},
                "queueWait": {"exponential": {"mean": "6h"}, "max": "3d"},
            },
        ],
    }
    wall0, cpu0 = time.perf_counter(), time.process_time()
    t = tutorial_twin(spec)
    # each request's pool may hold one slice at a time: let the DWS pool hold many
    t.gke(
        "POST",
        "/v1/projects/proj-x/locations/us-east5-b/clusters/tpu-cluster/nodePools/dws-pool:setAutoscaling",
        {"autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 4 * args.requests}},
    )
    t.advance(60)
    start = t.now()
    steps = 0
    created: dict[str, float] = {}
    for i in range(args.requests):
        name = f"dws-{i}"
        provisioning_request(t, name, params={"maxRunDurationSeconds": str(int(4 * H))})
        created[name] = t.now()
        for w in range(4):
            t.apply(tpu_pod(f"{name}-w{w}", "dws-pool", run_seconds=3 * H, queued=True, consume=name))
        steps += t.advance(4 * H)
    steps += t.advance(4 * 86400)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    outcome = {"Provisioned": 0, "CapacityRevoked": 0, "Failed": 0, "deleted": 0}
    waits = []
    for name, at in created.items():
        pr = t.try_get("ProvisioningRequest", name, "default")
        outcome["deleted"] += pr is None  # terminal for 7 days: GKE deletes it
        conds = {
            c["type"]: c
            for c in ((pr or {}).get("status") or {}).get("conditions", [])
            if c["status"] == "True"
        }
        for k in ("Provisioned", "CapacityRevoked", "Failed"):
            outcome[k] += k in conds
        if "Provisioned" in conds:
            waits.append(parse_time(conds["Provisioned"]["lastTransitionTime"]) - at)
    bill = billing_of(t.core.project, "proj-x", "us-east5-b", "tpu-cluster", t.now())
    print(f"requests            {args.requests}")
    print(f"virtual time        {(t.now() - start) / 86400:.1f} days")
    print(f"wall time           {wall:.2f} s  (CPU {cpu:.2f} s)")
    print(f"loop steps          {steps}  ({steps / wall:.0f} per wall second)")
    print(
        f"provisioned         {outcome['Provisioned']}  revoked {outcome['CapacityRevoked']}  "
        f"failed {outcome['Failed']}  deleted after the 7-day TTL {outcome['deleted']}"
    )
    if waits:
        print(
            f"DWS wait            mean {statistics.mean(waits) / 3600:.2f} h, max {max(waits) / 3600:.2f} h"
        )
    print(f"node-hours          {bill['nodeHours']:.1f}")
    print(f"cost per pool       {bill['pools']}")
    print(f"cost per model      {bill['provisioningModels']}")
    t.close()


if __name__ == "__main__":
    main()
