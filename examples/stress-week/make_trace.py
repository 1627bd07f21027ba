"""Writes trace.csv: a team's week of RayJobs, drawn once (seed 2026) by flexq simulate's generator.

    python examples/stress-week/make_trace.py

About 5,300 RayJobs over 7 days, busier from 08:00 to 20:00 on weekdays (3x) and quiet at weekends (0.3x):
debug runs (60 %, median 4 minutes), experiments (35 %, median 20 minutes) and trainings (5 %, median 2 hours),
3 % of them failing. Every job is the tutorial's RayJob (rayjob-template.yaml) on the queue user-queue.
The same spec works inline as `generator:` in simulation.yaml (then each replica draws its own week).
"""

from __future__ import annotations

import csv
from pathlib import Path

from flexq.simulate.traffic import generate

HERE = Path(__file__).parent
SPEC = {
    "seed": 2026,
    "duration": "7d",
    "arrivals": {"exponential": {"mean": "60s"}},
    "diurnal": {"busyHours": [8, 20], "busyFactor": 3, "weekend": 0.3},
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
