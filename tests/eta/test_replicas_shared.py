"""The fast forward runs shared with other processes give the forecast one process gives.

A deep queue's replicas take seconds each (``bench/eta_cost.py``: 100 waiting jobs behind a one-slice DWS pool),
so ``flexq.eta.replicas`` hands the rest to ``EtaConfig.workers`` other processes once they would take
``PARALLEL_AFTER_SECONDS`` at the pace the first one shows. Replica ``r`` draws from its own seed: where it runs must not
change what it says, nor the order the results come back in. Here the threshold is 0, so a small state is shared.
"""

from __future__ import annotations

import pytest

from flexq.eta import EtaConfig, estimate, replicas
from tests.eta.helpers import waiting_state


@pytest.fixture(scope="module")
def state():
    return waiting_state(seed=5, jobs=8, declared=False)


def _fields(fc) -> dict:
    return {k: (j.median, j.low, j.high, j.started, j.plan, j.waits_for) for k, j in sorted(fc.jobs.items())}


def test_shared_replicas_say_what_one_process_says(state, monkeypatch) -> None:
    one = estimate(state, EtaConfig(replicas=11, workers=1, horizon=86400.0))
    monkeypatch.setattr(replicas, "PARALLEL_AFTER_SECONDS", 0.0)
    shared = estimate(state, EtaConfig(replicas=11, workers=2, horizon=86400.0))
    assert shared.replicas == one.replicas == 11
    assert _fields(shared) == _fields(one)
    assert any(j.median is not None for j in one.jobs.values())


def test_a_deadline_still_stops_shared_replicas_after_the_fewest(state, monkeypatch) -> None:
    monkeypatch.setattr(replicas, "PARALLEL_AFTER_SECONDS", 0.0)
    fc = estimate(state, EtaConfig(replicas=400, workers=2, horizon=86400.0), budget=0.0)
    assert replicas.MIN_REPLICAS <= fc.replicas < 400


SCRIPT = """
import json
from flexq.eta import EtaConfig, estimate, replicas
from tests.eta.helpers import waiting_state

state = waiting_state(seed=5, jobs=8, declared=False)
replicas.PARALLEL_AFTER_SECONDS = 0.0
fc = estimate(state, EtaConfig(replicas=11, workers=2, horizon=86400.0))
print(json.dumps({"replicas": fc.replicas, "medians": {k: j.median for k, j in sorted(fc.jobs.items())}}))
"""


def test_a_script_without_a_main_guard_still_gets_its_forecast(state, tmp_path) -> None:
    """Other processes re-run a script that has no ``if __name__ == "__main__":`` and multiprocessing refuses
    them: the forecast's remaining runs then run in the script's own process, with the same answer."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "no_guard.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    one = estimate(state, EtaConfig(replicas=11, workers=1, horizon=86400.0))
    assert got["replicas"] == 11
    assert got["medians"] == {k: j.median for k, j in sorted(one.jobs.items())}
