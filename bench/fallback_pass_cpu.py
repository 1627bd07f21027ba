"""The fallback pass's own CPU (issue 51 acceptance 5): generated one-day scenarios (six with priorities, six
without, family seed 7) run through the whole twin (``flexq.simulate``'s engine), each fallback pass timed alone.

    .venv/bin/python bench/fallback_pass_cpu.py
"""

import tempfile
import time
from pathlib import Path

from flexq.fallback import policy as P
from flexq.simulate import load_study
from flexq.simulate.engine import run_one
from flexq.testing.fallback_family import family, priority_family, write_study

acc = [0.0, 0]
orig = P.FallbackPolicy.run_once


def timed(self):
    t = time.process_time()
    try:
        return orig(self)
    finally:
        acc[0] += time.process_time() - t
        acc[1] += 1


P.FallbackPolicy.run_once = timed
scs = [s.__class__(**{**s.__dict__, "days": 1.0}) for s in priority_family(6, seed=7)] + [
    s.__class__(**{**s.__dict__, "days": 1.0}) for s in family(6, seed=7)
]
days = 0.0
total = 0.0
for sc in scs:
    study = load_study(write_study(sc, Path(tempfile.mkdtemp())))
    t = time.process_time()
    run_one(study, "fallback", 0)
    total += time.process_time() - t
    days += sc.days
print(
    f"{len(scs)} scenarios, {days:g} simulated days: fallback passes {acc[1]}, fallback CPU {acc[0]:.2f} s "
    f"({1000 * acc[0] / acc[1]:.2f} ms per pass, {7 * acc[0] / days:.1f} s per simulated week); the whole run {total:.1f} s"
)
