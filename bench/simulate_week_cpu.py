"""CPU per run of a ~100-RayJob stock-out week through ``flexq simulate``'s public path (issue 24 item 6).

The week is ``examples/tutorial-week`` (a team's ~93 RayJobs on the tutorial's cluster under three 5-hour
on-demand stock-outs). Each run is ``flexq.simulate.run_one(study, variant, 0)``, timed with process CPU
time (the machine is shared: wall time says little), ``--repeats`` times; the figures are the min and the
median. Runs:

- every variant of the study without flexq's fallback (``tutorial``, ``dws-pool-16``);
- points of ``examples/tutorial-week/sweep.yaml`` without the fallback, built by the sweep module's own
  ``apply_point`` (``--points``; by default the DWS pool at 16 and at 4 nodes with ``pods-ready-timeout``
  10m: jobs evicted by waitForPodsReady and requeued, a different week from the variants').

For each run it also prints the event loop's steps and, from one more run with every store watched and
every controller's ``reconcile`` counted (not timed), the store writes and reconciles per RayJob, with the
controllers that reconcile most.

``--digest DIR`` writes, per run, ``<run>.jobs.csv`` (the run's ``jobs.csv``, every column) and
``<run>.run.json`` (everything else the run returned but its loop steps: nodes, ProvisioningRequests,
evictions, preemptions, admission waits, the pending and waiting series, quota usage) so that before and
after a speed change can be compared byte for byte::

    .venv/bin/python bench/simulate_week_cpu.py --digest /tmp/before      # on the old tree
    .venv/bin/python bench/simulate_week_cpu.py --digest /tmp/after       # on the new tree
    diff -r /tmp/before /tmp/after

    .venv/bin/python bench/simulate_week_cpu.py [--repeats 5] [--runs tutorial dws-pool-16 ...] [--profile F]

Figures (2026-12-04, issue 24 item 6; the machine shared with three other sessions, load 3-7, so CPU seconds
move by 20 %; callgrind's instruction counts of one run, setup subtracted, do not):

    run              writes/RayJob  reconciles/RayJob  instructions before -> after   CPU min before -> after
    tutorial         201 -> 195     297                10.95 G -> 9.85 G  (1.11x)     2.27 s -> 2.00 s
    dws-pool-16      200 -> 193     301                11.71 G -> 9.66 G  (1.21x)     2.35 s -> 2.03 s
    dws16-ready10m    70 -> 69      181                 6.75 G -> 4.57 G  (1.48x)     1.10 s -> 0.86 s
    dws4-ready10m    196 -> 190     382                12.16 G -> 10.47 G (1.16x)     2.59 s -> 2.53 s

(before: main at e72b887; CPU: min of 5 runs of each tree, interleaved). Every run's jobs.csv and results are
byte-identical before and after (``--digest``). Where the rest goes (py-spy, tutorial): Kueue's controllers about
38 %, validation 13-17 %, the store's commits, indexes and watch fan-out about 27 %, copies about 9 %.

Figures (2026-12-05, issue 47: validated once at the face, a simulated twin writing only the Events it reads,
writes returning the stored version read-only; before: 1efbae1; machine load 6-13, so CPU seconds say little):

    run              writes/RayJob  validations/RayJob  reconciles/RayJob  instructions before -> after
    tutorial         181 -> 130     15.7 -> 11.2        269 -> 268         10.51 G -> 9.69 G  (0.92x)
    dws-pool-16      194 -> 134     15.3 -> 11.2        302 -> 302
    dws16-ready10m    70 -> 52       7.0 -> 4.7         182 -> 182
    dws4-ready10m    200 -> 145     18.2 -> 12.7        288 -> 288         11.62 G -> 10.71 G (0.92x)

Every run's jobs.csv and results byte-identical (``--digest``). The validations left are the API server's
defaulting of the built-in objects KubeRay and Kueue build from a custom resource's template (pods, services,
the submitter Job, PodTemplates) and the SDK's creates.

Figures (2026-12-06, issue 47: Kueue's Events through the cluster's recorder, so a simulation writes none of them;
the store carved into rooms; before: 3714f75; callgrind, one run each, setup subtracted; CPU: min of 3 with the
machine quiet, load 1-2):

    run              writes/RayJob  validations/RayJob  reconciles/RayJob  instructions before -> after   CPU min
    tutorial         130 -> 113     11.2 -> 11.2        268 -> 268         10.11 G -> 9.95 G  (0.98x)     1.87 -> 1.77 s
    dws-pool-16      134 -> 120     11.2 -> 11.2        302 -> 301                                        2.16 -> 2.05 s
    dws16-ready10m    52 -> 45       4.7 -> 4.7         182 -> 182                                        0.84 -> 0.85 s
    dws4-ready10m    145 -> 125     12.7 -> 12.7        288 -> 287         11.15 G -> 10.96 G (0.98x)     2.28 -> 1.90 s

Every run's jobs.csv and results byte-identical (``--digest``). The Events left are the cluster autoscaler's
(the recorder and the GKE metrics read them) and their expiry an hour later.

Figures (2026-12-06, issue 47: the built-in objects KubeRay and Kueue build from a custom resource's template
admitted as built (``scheme.BUILT``: validated, not serialised again), the autoscaler's simulation in the
scheduler's integers, a replica's later hosts placed on their slice only, a new node's address and the capacity
profile's times not worked out again per node, the scheduler's flush retries keeping their queue entry; before:
7302b06; callgrind, one run each, setup subtracted; CPU: min of 2 x 3 runs per tree, interleaved, load 4-5 on 2
cores (other sessions alongside)):

    run              writes/RayJob  validations/RayJob  reconciles/RayJob  instructions before -> after   CPU min
    tutorial         113            11.2                267                8.96 G -> 8.31 G  (0.93x)      1.84 -> 1.73 s
    dws-pool-16      120            11.2                300                                               2.03 -> 1.90 s
    dws16-ready10m    45             4.7                182                4.69 G -> 4.07 G  (0.87x)      0.87 -> 0.78 s
    dws4-ready10m    125            12.7                287                                               2.11 -> 1.91 s

Counts unchanged (as many validations, each cheaper). Every run's jobs.csv and results byte-identical
(``--digest``), and ``bench/behaviour_digest.py``'s digests too. What is left (py-spy, tutorial and dws4-ready10m):
store commits and watch fan-out 18 %, the cluster autoscaler 12 % (its scheduling simulation on pod events, most
of its reconciles deciding nothing), KubeRay's RayCluster controller 11 %, validation of the objects built from
templates 6 %, Kueue's controllers about 30 %.

Figures (2026-12-07, issue 47: watch predicates on the fields each controller reads, and keys that keep their turn
and are skipped where a dropped event would reorder an instant's writes; before: 099fe8e; callgrind of the
tutorial, one run each, setup subtracted, both trees with warm bytecode caches; CPU: min of 2 x 3 runs per tree,
interleaved, load 6-8 on 2 cores (other sessions alongside): CPU seconds say little):

    run              writes/RayJob  validations/RayJob  reconciles/RayJob  loop steps/RayJob  instructions        CPU min
    tutorial         113            11.2                267 -> 226         305 -> 270         9.26 G -> 8.85 G    1.80 -> 1.70 s
    dws-pool-16      120            11.2                300 -> 253         358 -> 318                             1.91 -> 1.83 s
    dws16-ready10m    45             4.7                182 -> 168         276 -> 264                             0.79 -> 0.78 s
    dws4-ready10m    125            12.7                287 -> 244         325 -> 288                             1.99 -> 1.91 s

(instructions 0.955x; the whole twin, ``bench/whole_twin_baseline.py --cohorts 1 --scale 0.3``, callgrind with its
setup: 18.04 G -> 17.94 G, 0.994x, and 282 -> 284 jobs per CPU second, median of 3 paired runs at load 7). Writes
and validations unchanged; every run's jobs.csv and results byte-identical (``--digest``), and
``bench/behaviour_digest.py``'s output too (its digest of every stored object included: a predicate that drops an
event moves its controller's later work of that virtual instant earlier in the loop, and with it the order of the
instant's Events, so the kubelet's own status writes are judged with ``Watch.unchanged`` instead: the key keeps
its turn and its reconcile is skipped). Where the reconciles went: Kueue's RayJob reconciler 2426 -> 1709 (a
RayJob's rayClusterStatus, its RayCluster's ready replicas), its Job reconciler 344 -> 154 (a submitter Job
without a queue), GKE billing 2053 -> 1542, the kubelet 1752 -> 1168 (584 skipped in turn), KubeRay's RayCluster
controller 1128 -> 700 (its pods' PodScheduled and binding), node registration 831 -> 276, node leases
1107 -> 828, KubeRay's autoscaler 602 -> 0 (no Ray to read in a simulation). The reconciles saved were cheap
ones: what is left is the cluster autoscaler's simulation on pod events (most of its 1842 reconciles decide
nothing, but each reads the clock: scale-down counts a node's idle time from when a reconcile saw it idle),
Kueue's cycle timers and the RayJob controller's state machine, which moves on its own status writes. Batching
the autoscaler's changes at upstream's 10 s ``--scan-interval`` (measured on branch h47c-scan, not merged):
its reconciles 1842 -> 569, all 226 -> 214 per RayJob, but 38 of the tutorial's 93 jobs start at another time
(median +10 s).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import flexq.simulate
from flexq.simulate import load_study, run_one
from flexq.simulate.change import apply_point
from flexq.simulate.results import csv_text
from flexq.simulate.sweep import load_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_floor import _observe  # every store write and every reconcile, counted

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "examples" / "tutorial-week"
# sweep points without the fallback (knob name -> value; the knobs not named keep the base's first value)
POINTS: dict[str, dict[str, Any]] = {
    "dws16-ready10m": {"dws-max-nodes": 16, "pr-retries": 3, "pods-ready-timeout": "10m", "fallback": False},
    "dws4-ready10m": {"dws-max-nodes": 4, "pr-retries": 3, "pods-ready-timeout": "10m", "fallback": False},
}


def load(runs: list[str]) -> flexq.simulate.Study:
    """The study with its fallback-free variants and the named sweep points as variants."""
    study = load_study(STUDY)
    spec = load_sweep(STUDY / "sweep.yaml", study)
    base = study.variant(spec.base) if spec.base else study.variants[0]
    variants = [v for v in study.variants if not v.settings.get("fallback")]
    for name in runs:
        if name in POINTS:
            point = {k.label(): POINTS[name].get(k.label(), k.values[0]) for k in spec.knobs}
            variants.append(apply_point(study, base, spec.knobs, point, name))
    study.variants = [v for v in variants if v.name in runs]
    missing = set(runs) - {v.name for v in study.variants}
    if missing:
        raise SystemExit(
            f"no such run: {sorted(missing)} (variants without the fallback, or {sorted(POINTS)})"
        )
    return study


def timed(study: flexq.simulate.Study, name: str) -> tuple[float, flexq.simulate.RunResult]:
    t = time.process_time()
    res = run_one(study, name, 0)
    return time.process_time() - t, res


def counted(study: flexq.simulate.Study, name: str) -> tuple[Counter[tuple[str, str]], Counter[str], int]:
    """One more run of ``name`` with every store write, every reconcile and every admission (``scheme.admit``:
    schema validation and defaults) counted (the counting is bench code hooked on the run's twin once it is set
    up; it is not timed)."""
    from flexq.api import scheme
    from flexq.simulate import engine

    writes: Counter[tuple[str, str]] = Counter()
    reconciles: Counter[str] = Counter()
    admitted = [0]
    setup, admit = engine.Sim.setup, scheme.admit

    def observed(self: Any) -> None:
        setup(self)
        _observe(self.twin, writes, reconciles)
        admitted[0] = 0

    def counting(*a: Any, **kw: Any) -> Any:
        admitted[0] += 1
        return admit(*a, **kw)

    engine.Sim.setup = observed  # type: ignore[method-assign]
    scheme.admit = counting
    try:
        run_one(study, name, 0)
    finally:
        engine.Sim.setup = setup  # type: ignore[method-assign]
        scheme.admit = admit
    return writes, reconciles, admitted[0]


def digest(out: Path, name: str, res: flexq.simulate.RunResult) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.jobs.csv").write_text(csv_text([res]), encoding="utf-8")
    rest = {k: v for k, v in dataclasses.asdict(res).items() if k not in ("jobs", "steps")}
    (out / f"{name}.run.json").write_text(json.dumps(rest, sort_keys=True, indent=1, default=str) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each (min and median are printed)")
    ap.add_argument(
        "--runs",
        nargs="+",
        default=["tutorial", "dws-pool-16", *POINTS],
        help=f"variants of the study without the fallback, or sweep points: {', '.join(POINTS)}",
    )
    ap.add_argument("--digest", metavar="DIR", type=Path, help="write each run's jobs.csv and results there")
    ap.add_argument("--no-counts", action="store_true", help="skip the counted run (writes, reconciles)")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of one run of the first --runs there")
    args = ap.parse_args()
    study = load(args.runs)
    load0 = os.getloadavg()[0]
    total_min = 0.0
    for v in study.variants:
        name = v.name
        cpus, res = [], None
        for _ in range(args.repeats):
            cpu, res = timed(study, name)
            cpus.append(cpu)
        assert res is not None
        jobs = len(res.jobs)
        outcomes = Counter(r["outcome"] for r in res.jobs)
        total_min += min(cpus)
        print(
            f"{name}: {jobs} RayJobs ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}), "
            f"{res.steps} loop steps ({res.steps / jobs:.0f} per RayJob)"
        )
        print(
            f"  CPU per run: min {min(cpus):.2f} s, median {statistics.median(cpus):.2f} s over {len(cpus)} "
            f"({min(cpus) / jobs * 1000:.1f} ms per RayJob at the min)"
        )
        if not args.no_counts:
            writes, reconciles, admitted = counted(study, name)
            print(
                f"  store writes {sum(writes.values()) / jobs:.0f} per RayJob, reconciles "
                f"{sum(reconciles.values()) / jobs:.0f} per RayJob, validations (admissions) "
                f"{admitted / jobs:.1f} per RayJob"
            )
            print(
                "    writes: "
                + ", ".join(f"{k} {t.lower()} {n / jobs:.1f}" for (k, t), n in writes.most_common(8))
            )
            print("    reconciles: " + ", ".join(f"{k} {n / jobs:.1f}" for k, n in reconciles.most_common(8)))
        if args.digest:
            digest(args.digest, name, res)
    print(
        f"sum of the min CPU per run over {len(study.variants)} runs: {total_min:.2f} s; load average "
        f"{load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs"
    )
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run_one(study, study.variants[0].name, 0)
        prof.disable()
        prof.dump_stats(args.profile)
        print(f"profile of {study.variants[0].name} written to {args.profile}")


if __name__ == "__main__":
    main()
