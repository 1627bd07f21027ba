"""``flexq simulate STUDY --sweep SWEEP.yaml``: search the knobs of a configuration for a better one.

A sweep file names the knobs to turn, the values of each, and how to search them::

    base: tutorial                # the study's variant every point starts from (default: the first)
    replicas: 2                   # seeds per point; every point runs the same seeds (common random numbers)
    search: grid                  # every combination, or {random: 24, seed: 1}: that many combinations drawn
    knobs:
    - {name: dws-max, kind: poolMax, pool: dws-pool, values: [16, 32, 64]}
    - {kind: retryLimit, config: dws-config, values: [3, 6]}              # ProvisioningRequestConfig retries
    - {kind: nominalQuota, clusterQueue: cluster-queue, flavor: on-demand, resource: google.com/tpu,
       values: [16, 32]}
    - {kind: flavorOrder, clusterQueue: cluster-queue,
       values: [[default-cpu, on-demand, dws], [default-cpu, dws, on-demand]]}
    - {kind: podsReadyTimeout, values: [10m, 30m]}                        # Kueue's waitForPodsReady.timeout
    - {kind: fallback, values: [false, true, {grace_seconds: 30}]}       # flexq's fallback (queues opted in)
    - {kind: setting, path: fallback.backoff_seconds, values: [300, 600]} # any twin setting
    - {kind: field, object: ClusterQueue/cluster-queue, path: "spec.preemption.withinClusterQueue",
       values: [Never, LowerPriority]}                                    # any field of any manifest object
    - {kind: cluster, path: "nodePools[name=on-demand-pool].autoscaling.max", values: [4, 8]}
    - {kind: variant, values: [tutorial, compute-class]}                  # start from another variant
    - {kind: manifests, values: [[queue-tutorial.yaml, train-script.yaml], [queue-cc.yaml, train-script.yaml]]}
    - {kind: object, values: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}]}
                                                                          # create or replace a whole object

Each point is a variant of the study (``p00``, ``p01``, …) run like any other, on every core or on a Ray
cluster. Out come ``sweep.csv``/``sweep.json`` (each point's knob values, jobs lost, censored mean and p95
wait, cost, goodput, and whether it is on the Pareto front of (jobs lost, censored mean wait, cost)),
``pareto.png``, ``best.diff`` (the recommended point's manifests and cluster against the base's, whole
objects), ``best.yaml`` (the objects it changes or adds, whole, for ``kubectl apply -f``; the node pools'
changes as ``gcloud`` commands in its comments) and the report. A knob set to the value the base already has
(given, or Kueue's default: ``backoffLimitCount`` 3, ``waitForPodsReady.timeout`` 30m) changes nothing; a
change to Kueue's configuration starts from the whole configuration Kueue's manifests install
(``kueue.config.shipped_configuration``) when the study does not give one. The recommended point ranks first (fewest jobs lost, then the lowest censored mean wait) among the
points that cost no more than the base (or, when the base itself lost work, no more per unit of work that ran
to its end: cost / goodput); the point that ranks first whatever its cost is named too.
``run_sweep`` is the Python API. The package has the simulator's shape: ``spec`` (the sweep file, its knobs and
points) -> ``flexq.simulate.change`` (a point applied to the base; what the recommended point changes: the room
below both the sweep and the what-ifs) -> ``run`` (every point on the same seeds, ranked) -> ``results`` and
``report`` (the Pareto front, the budget rule, the files), ``quota`` (the TPU chips a point needs). Must not
import flexq.http.
"""

from __future__ import annotations

from flexq.simulate.sweep.report import plain_value, write_sweep
from flexq.simulate.sweep.results import SweepResult, cost_per_work, pareto
from flexq.simulate.sweep.run import run_sweep
from flexq.simulate.sweep.spec import SweepSpec, load_sweep, points

__all__ = [
    "SweepSpec",
    "load_sweep",
    "points",
    "run_sweep",
    "SweepResult",
    "pareto",
    "cost_per_work",
    "plain_value",
    "write_sweep",
]
