"""The type gate: mypy is clean on the packages the rules name, and the rest only gets better.

``STRICT`` packages must have no mypy error. Every other package has a ceiling in ``mypy_ratchet.json``; the test
fails when a package goes over it, and asks for the ceiling to be lowered when a package got better, so the
count only goes down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RATCHET = Path(__file__).with_name("mypy_ratchet.json")
STRICT = ("semantics", "runtime", "store", "kueue", "kube", "fallback")


def _errors_per_package() -> Counter[str]:
    out = subprocess.run([sys.executable, "-m", "mypy", "src/flexq"], cwd=ROOT, capture_output=True, text=True)
    counts: Counter[str] = Counter()
    for line in out.stdout.splitlines():
        m = re.match(r"src/flexq/([a-z_]+)(?:/|\.py)[^:]*:\d+: error:", line)
        if m:
            counts[m.group(1)] += 1
    assert "error:" in out.stdout or out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return counts


@pytest.mark.slow
def test_mypy_strict_packages_clean_and_the_rest_on_a_ratchet() -> None:
    counts = _errors_per_package()
    ceilings: dict[str, int] = json.loads(RATCHET.read_text())
    dirty_strict = {p: counts[p] for p in STRICT if counts[p]}
    assert not dirty_strict, f"mypy errors in packages that must be clean: {dirty_strict}"
    over = {p: (n, ceilings.get(p, 0)) for p, n in counts.items() if n > ceilings.get(p, 0)}
    assert not over, f"mypy errors above the ratchet (package: (now, ceiling)): {over}"
    lower = {p: (counts[p], c) for p, c in ceilings.items() if counts[p] < c}
    assert not lower, f"fewer mypy errors than the ratchet allows: lower {RATCHET.name} to {dict(counts)}"
