"""Writes trace.csv: a team's two days of RayJobs for the fallback study, drawn once (seed 2026).

    python examples/fallback-study/make_trace.py

Shaped like examples/tutorial-week's trace (the same mix of debug runs, experiments and trainings, busier from
08:00 to 20:00), thinned to a few hundred jobs so the whole study (3 scenarios x 5 variants) runs in minutes.
Every job is the tutorial's RayJob (rayjob-template.yaml: a CPU head, one v6e 4x4 slice) on the queue user-queue.
"""

from __future__ import annotations

import csv
from pathlib import Path

from flexq.simulate.traffic import generate

HERE = Path(__file__).parent
SPEC = {
    "seed": 2026,
    "duration": "2d",
    "arrivals": {"exponential": {"mean": "6m"}},
    "diurnal": {"busyHours": [8, 20], "busyFactor": 3, "weekend": 1},
    "mix": [
        {
            "name": "debug",
            "weight": 60,
            "kind": "RayJob",
            "template": "rayjob-template.yaml",
            "queue": "user-queue",
            "class": "debug",
            "run": {"lognormal": {"median": "4m", "sigma": 0.6}},
            "failed": 0.03,
        },
        {
            "name": "experiment",
            "weight": 35,
            "kind": "RayJob",
            "template": "rayjob-template.yaml",
            "queue": "user-queue",
            "class": "experiment",
            "run": {"lognormal": {"median": "20m", "sigma": 0.7}},
            "failed": 0.03,
        },
        {
            "name": "training",
            "weight": 5,
            "kind": "RayJob",
            "template": "rayjob-template.yaml",
            "queue": "user-queue",
            "class": "training",
            "run": {"lognormal": {"median": "2h", "sigma": 0.5}},
            "failed": 0.03,
        },
    ],
}


def main() -> None:
    jobs = generate(SPEC, 0, "make_trace.py", HERE)
    with (HERE / "trace.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["submit", "name", "kind", "queue", "class", "template", "run", "outcome"])
        for j in jobs:
            w.writerow(
                [
                    f"{j.submit:.3f}",
                    j.name,
                    j.kind,
                    j.queue,
                    j.klass,
                    "rayjob-template.yaml",
                    f"{j.run:.3f}",
                    j.outcome,
                ]
            )
    print(f"wrote {len(jobs)} jobs to {HERE / 'trace.csv'}")


if __name__ == "__main__":
    main()
