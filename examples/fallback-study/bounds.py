"""Lower bounds on the mean wait to start that any fallback policy can reach in scenarios (b) and (c).

    python examples/fallback-study/bounds.py results-b results-c     # the directories `flexq simulate` wrote

Both bounds take the jobs (submission time, run time) from the `tutorial` variant's jobs.csv and give every job
an oracle: it knows the capacity, starts on an on-demand slice the moment one is free (FIFO, no provisioning
time, no scale-up delay), and otherwise waits for the sooner of such a slice and its DWS grant (an exponential
draw, mean 30 minutes as in the study's profile, plus one minute to provision). Averaged over 300 seeds.

(b): jobs submitted outside the stock-outs and the 45 minutes after each keep the tutorial run's waits — a policy
that must change nothing without a stock-out cannot change them — and jobs submitted in the 45 minutes after a
stock-out wait 0. Jobs submitted during a stock-out get the oracle over three slices, either all three free at
the stock-out's start (generous) or busy until the tutorial run's jobs on them end (as the run had them).

(c): all jobs get the oracle; on-demand slices can be created only 04:00-05:00. Either the three slices, once up,
are never removed (generous: idle on-demand nodes kept and billed), or a slice idle 10 minutes is removed (the
cluster autoscaler's scale-down) and comes back only in a window.
"""

from __future__ import annotations

import csv
import random
import statistics
import sys
from pathlib import Path

H = 3600.0
DWS_MEAN = 1800.0
PROVISION = 60.0
SEEDS = 300
WINDOWS_B = [(s * H, (s + 2) * H) for s in (1, 9, 15, 25, 33, 39, 49, 57, 63, 73, 81, 87)]


def jobs(results: str) -> list[dict[str, str]]:
    rows = list(csv.DictReader((Path(results) / "jobs.csv").open(encoding="utf-8")))
    return sorted((r for r in rows if r["variant"] == "tutorial"), key=lambda r: float(r["submit"]))


def serve(rng: random.Random, free_at: list[float], t: float, run: float) -> float:
    """The oracle's wait for one job (taking the slice if it goes there)."""
    grant = t + rng.expovariate(1 / DWS_MEAN) + PROVISION
    i = min(range(len(free_at)), key=lambda k: free_at[k])
    start = max(t, free_at[i])
    if start <= grant:
        free_at[i] = start + run
        return start - t
    return grant - t


def bound_b(rows: list[dict[str, str]], busy_at_start: bool) -> float:
    other, during = 0.0, {}
    for r in rows:
        t = float(r["submit"])
        win = next(((a, b) for a, b in WINDOWS_B if a <= t < b), None)
        if win is not None:
            during.setdefault(win, []).append((t, float(r["run"])))
        elif not any(b <= t < b + 0.75 * H for _, b in WINDOWS_B):
            other += float(r["wait_start"])
    on_demand = [
        (float(r["started"]), float(r["started"]) + float(r["run"]))
        for r in rows
        if "tpu-group=on-demand" in r["flavors"] and r["started"]
    ]
    totals = []
    for seed in range(SEEDS):
        rng, total = random.Random(seed), other
        for (a, _b), js in sorted(during.items()):
            ends = sorted(e for s, e in on_demand if s <= a < e)[:3] if busy_at_start else []
            free_at = ends + [a] * (3 - len(ends))
            total += sum(serve(rng, free_at, t, run) for t, run in js)
        totals.append(total / len(rows) / 60)
    return statistics.mean(totals)


def bound_c(rows: list[dict[str, str]], keep_forever: bool) -> float:
    def window(t: float) -> bool:
        return 4 * H <= t % (24 * H) < 5 * H

    def next_window(t: float) -> float:
        while not window(t):
            t = (t // H + 1) * H
        return t

    totals = []
    for seed in range(SEEDS):
        rng, total = random.Random(seed), 0.0
        free_at: list[float | None] = [None, None, None]  # None: no slice up
        for r in rows:
            t, run = float(r["submit"]), float(r["run"])
            grant = t + rng.expovariate(1 / DWS_MEAN) + PROVISION
            best = None
            for i, f in enumerate(free_at):
                if f is None or (not keep_forever and t - f > 600 and not window(t)):
                    cand = next_window(t) + PROVISION  # (re)created in a window
                else:
                    cand = max(t, f)
                if best is None or cand < best[0]:
                    best = (cand, i)
            assert best is not None
            start, i = best
            if start <= grant:
                free_at[i] = start + run
                total += start - t
            else:
                total += grant - t
        totals.append(total / len(rows) / 60)
    return statistics.mean(totals)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: bounds.py RESULTS_B RESULTS_C")
    b, c = jobs(argv[0]), jobs(argv[1])
    tut_b = statistics.mean(float(r["wait_start"]) for r in b) / 60
    tut_c = statistics.mean(float(r["wait_start"]) for r in c) / 60
    print(f"(b) tutorial {tut_b:.1f} min, target 0.5x = {tut_b / 2:.1f} min")
    for busy in (False, True):
        lb = bound_b(b, busy)
        what = "slices busy as in the tutorial run" if busy else "all three slices free"
        print(f"    oracle, {what} at each stock-out's start: >= {lb:.2f} min ({lb / tut_b:.2f}x)")
    print(f"(c) tutorial {tut_c:.1f} min, target 0.5x = {tut_c / 2:.1f} min")
    for keep in (True, False):
        lb = bound_c(c, keep)
        what = "slices never removed" if keep else "a slice idle 10 min removed"
        print(f"    oracle, {what}: >= {lb:.1f} min ({lb / tut_c:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1:])
