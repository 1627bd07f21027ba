"""Does the planner check its own diagnosis, in any week? (issue 33, acceptance 2.)

Over the tutorial's week (``examples/tutorial-week``, its ``sweep.yaml``) and a seeded family of weeks
(``flexq.testing.fallback_family``: stock-outs none / short and frequent / long and rare / a whole day, DWS pools
tight and ample, DWS waits short and long, load 30-95 %, one- and two-slice RayJobs, priorities, spot), on the
tutorial's configuration:

1. ``flexq simulate`` with its what-ifs: every change a cause shows must carry its measured effect (run on the
   same seeds) in the text shown, and none may lose more jobs than the variant it is suggested for; the causes'
   "jobs lost" must not add up to more than the jobs lost (one cause per job);
2. a sweep around it (the fallback on or off x the DWS pool at its size or twice it; the tutorial week: its own
   sweep.yaml): each change the base's causes show must be a point of the sweep with the very same figures, and
   the recommended point must not be beaten (fewer jobs lost, or as many and a shorter censored wait) by a shown
   change that costs no more than the base.

    .venv/bin/python bench/planner_family.py                       # the tutorial week + 20 weeks of 7 days
    .venv/bin/python bench/planner_family.py --weeks 4 --days 2 --no-tutorial

Prints one line per week and the totals: suggestions shown, tried and dropped, violations of each rule (all 0
when the planner keeps its word), and the wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import flexq
from flexq.simulate import load_study, run_sweep
from flexq.simulate.sweep import load_sweep
from flexq.simulate.sweep.results import within_budget
from flexq.testing.fallback_family import family, write_study

ROOT = Path(__file__).resolve().parent.parent


def check_simulation(doc: dict[str, Any]) -> dict[str, int]:
    """Rule 1 on one variant's document."""
    out = {"causes": 0, "shown": 0, "tried": 0, "noEffect": 0, "worse": 0, "doubleCounted": 0}
    for c in doc["causes"]:
        out["causes"] += 1
        for o in c["options"]:
            out["shown"] += 1
            t = o.get("tested") or {}
            if not t.get("effect") or t["effect"] not in c.get("change", ""):
                out["noEffect"] += 1
            if t.get("whatIf", {}).get("jobsLost", 0) > t.get("base", {}).get("jobsLost", 0):
                out["worse"] += 1
        out["tried"] += len(c.get("tried") or [])
    if sum(c["jobsLost"] for c in doc["causes"]) > doc["replicas"][0]["jobs"]["lost"]:
        out["doubleCounted"] += 1
    return out


def check_sweep(res: Any) -> dict[str, int]:
    """Rule 2 on one sweep."""
    rows = {r["point"]: r for r in res.rows}
    rec = rows[res.recommended]
    out = {"sweepShown": 0, "notAPoint": 0, "figuresDiffer": 0, "beatsRecommended": 0}
    for c in res.documents[res.base]["causes"]:
        for o in c["options"]:
            out["sweepShown"] += 1
            row = rows.get(o["tested"]["variant"])
            if row is None:
                out["notAPoint"] += 1
                continue
            w = o["tested"]["whatIf"]
            if (row["jobsLost"], row["waitCensoredMeanSeconds"], row["costUSD"]) != (
                w["jobsLost"],
                w["waitCensoredMeanSeconds"],
                w["costUSD"],
            ):
                out["figuresDiffer"] += 1
            if within_budget(row, rows[res.base]) and (row["jobsLost"], row["waitCensoredMeanSeconds"]) < (
                rec["jobsLost"],
                rec["waitCensoredMeanSeconds"],
            ):
                out["beatsRecommended"] += 1
    return out


def week(path: Path, variant: str, sweep: Any, workers: int) -> tuple[dict[str, int], str]:
    study = load_study(path, variants=[variant])
    res = flexq.simulate(study, workers=workers, plots=False)
    doc = res.documents[variant]
    figures = check_simulation(doc)
    spec = load_sweep(sweep, load_study(path))
    sw = run_sweep(load_study(path), spec, workers=workers, plots=False)
    figures.update(check_sweep(sw))
    figures["lost"] = int(doc["replicas"][0]["jobs"]["lost"])
    figures["jobs"] = int(doc["replicas"][0]["jobs"]["total"])
    rec = {r["point"]: r for r in sw.rows}[sw.recommended]
    figures["recLost"] = int(round(rec["jobsLost"]))
    return figures, sw.recommended + (f" ({rec['cause']})" if rec.get("cause") else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weeks", type=int, default=20)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=None)
    ap.add_argument("--no-tutorial", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    totals: dict[str, int] = {}
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        todo: list[tuple[str, Path, str, Any]] = []
        if not args.no_tutorial:
            tut = ROOT / "examples" / "tutorial-week"
            todo.append(("tutorial-week", tut, "tutorial", str(tut / "sweep.yaml")))
        for sc in family(args.weeks, args.seed):
            sc = dataclasses.replace(sc, days=args.days)
            path = write_study(sc, Path(tmp))
            dws = 4 * sc.dws_slices
            sweep = {
                "base": "tutorial",
                "replicas": 1,
                "knobs": [
                    {"name": "fallback", "kind": "fallback", "values": [False, True]},
                    {"name": "dws-max", "kind": "poolMax", "pool": "dws-pool", "values": [dws, 2 * dws]},
                ],
            }
            todo.append((sc.name, path, "tutorial", sweep))
        for name, path, variant, sweep in todo:
            w0 = time.monotonic()
            figures, rec = week(path, variant, sweep, args.jobs)
            for k, v in figures.items():
                totals[k] = totals.get(k, 0) + v
            line = (
                f"{name:28s} jobs {figures['jobs']:4d} lost {figures['lost']:3d} -> recommended {rec} "
                f"(lost {figures['recLost']}); causes {figures['causes']}, changes shown {figures['shown']}, "
                f"dropped {figures['tried']}; violations: no effect {figures['noEffect']}, worse "
                f"{figures['worse']}, double-counted {figures['doubleCounted']}, not a sweep point "
                f"{figures['notAPoint']}, figures differ {figures['figuresDiffer']}, beats the recommended "
                f"{figures['beatsRecommended']}  [{time.monotonic() - w0:.0f} s]"
            )
            lines.append(line)
            print(line, flush=True)
    print()
    print(
        f"{len(lines)} weeks: changes shown {totals.get('shown', 0)} (each with its measured effect), dropped as not "
        f"helping {totals.get('tried', 0)}; jobs lost {totals.get('lost', 0)} on the tutorial's configuration, "
        f"{totals.get('recLost', 0)} at the sweeps' recommended points"
    )
    bad = {
        k: totals.get(k, 0)
        for k in ("noEffect", "worse", "doubleCounted", "notAPoint", "figuresDiffer", "beatsRecommended")
    }
    print("violations:", ", ".join(f"{k} {v}" for k, v in bad.items()))
    print(f"wall {time.monotonic() - t0:.0f} s")
    return 1 if any(bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
