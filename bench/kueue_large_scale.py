"""Kueue's large-scale scheduler performance file through ``flexq simulate -j 1`` (issue 35 acceptance 3).

The file is ``examples/kueue-large-scale/generator.yaml`` as upstream ships it (20 cohorts x 100 ClusterQueues,
30 workloads per queue: 60,000 workloads). ``--cohorts N`` runs a slice of it: the same file with N cohorts
(100 ClusterQueues each, the same workloads per queue). Each run is ``flexq simulate FILE -j 1 --no-plots``
in a child process, as a user runs it; printed: wall time, the child's CPU time and peak RSS (``wait4``), CPU
per workload, whether every workload was admitted and finished (``jobs.csv``), and the average time to
admission per class next to Kueue's thresholds (upstream's ``rangespec.yaml``). ``--growth`` runs the slices at
1, 5 and 20 cohorts (100, 500, 2,000 ClusterQueues) and prints how CPU per workload grows from the smallest.
``--python`` runs another interpreter (another tree's venv, or ``PYTHONPATH`` set for it) for a before/after.

    .venv/bin/python bench/kueue_large_scale.py                  # the whole file
    .venv/bin/python bench/kueue_large_scale.py --cohorts 1 5    # 100 and 500 ClusterQueues
    .venv/bin/python bench/kueue_large_scale.py --growth

The machine's load moves wall time: the 1-minute load average is printed beside each run.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "examples" / "kueue-large-scale" / "generator.yaml"
# upstream's rangespec.yaml for large-scale: average time to admission per class (ms)
THRESHOLDS_MS = {"small": 841_000, "medium": 308_000, "large": 128_000}


def sliced(cohorts: int, out: Path) -> Path:
    """The file with ``cohorts`` cohorts (the queues and workloads of each as upstream's)."""
    doc = yaml.safe_load(FILE.read_text())
    doc["cohorts"][0]["count"] = cohorts
    path = out / f"generator-{cohorts}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def expected(path: Path) -> int:
    doc = yaml.safe_load(path.read_text())
    total = 0
    for c in doc["cohorts"]:
        for qs in c["queuesSets"]:
            total += c["count"] * qs["count"] * sum(ws["count"] for ws in qs["workloadsSets"])
    return total


def run(path: Path, python: str, out: Path) -> dict:
    cmd = [python, "-m", "flexq.cli.main", "simulate", str(path), "-j", "1", "--out", str(out)]
    cmd += ["--no-plots", "--no-progress"]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with open(out.parent / f"{out.name}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}); see {out.parent / (out.name + '.log')}")
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    waits: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["admitted"]:
            waits[r["class"]].append(float(r["admitted"]) - float(r["submit"]))
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "workloads": len(rows),
        "admitted": sum(1 for r in rows if r["admitted"]),
        "succeeded": sum(1 for r in rows if r["outcome"] == "Succeeded"),
        "tta_ms": {c: 1000 * sum(w) / len(w) for c, w in sorted(waits.items())},
        "load": load,
    }


def report(cohorts: int, want: int, r: dict) -> None:
    print(
        f"{cohorts * 100} ClusterQueues, {want} workloads: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s "
        f"({1e6 * r['cpu'] / want:.0f} µs per workload), peak RSS {r['rss_mib']:.0f} MiB; "
        f"admitted {r['admitted']}/{want}, succeeded {r['succeeded']}; load {r['load']:.1f}"
    )
    print(
        "  average time to admission: "
        + ", ".join(
            f"{c} {ms:,.0f} ms (threshold {THRESHOLDS_MS.get(c, 0):,} ms)" for c, ms in r["tta_ms"].items()
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cohorts", type=int, nargs="+", default=[20], help="slices to run (100 queues each)")
    ap.add_argument("--growth", action="store_true", help="run 1, 5 and 20 cohorts; print the CPU growth")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs flexq simulate")
    args = ap.parse_args()
    runs = [1, 5, 20] if args.growth else args.cohorts
    per: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="kueue-large-scale-") as tmp:
        for n in runs:
            path = FILE if n == 20 else sliced(n, Path(tmp))
            want = expected(path)
            r = run(path, args.python, Path(tmp) / f"out-{n}")
            report(n, want, r)
            per[n] = r["cpu"] / want
            if r["admitted"] != want:
                print(f"  NOT every workload admitted: {want - r['admitted']} never were")
    if len(per) > 1:
        small = min(per)
        print(
            "CPU per workload growth from "
            + f"{small * 100} ClusterQueues: "
            + ", ".join(f"{n * 100}: {per[n] / per[small]:.2f}x" for n in sorted(per) if n != small)
        )


if __name__ == "__main__":
    main()
