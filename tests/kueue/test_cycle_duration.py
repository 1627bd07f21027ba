"""Issue 48, item 4: how fast Kueue admits (kueue#14477). Kueue pops one Workload per ClusterQueue per scheduling
cycle; a cycle takes ``TwinSettings.kueue_cycle_seconds`` of the twin's clock (free by default; 2.4 s on
kueue#14477's production cluster), so a deep queue on free quota drains at one admission per cycle while a shallow
queue beside it is admitted at once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flexq import Twin
from flexq.errors import InputError, Invalid
from flexq.semantics.conditions import find_condition
from flexq.simulate.study import load_study
from tests.kueue.kueue_builders import one_queue

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from kueue_cycle_drain import drain


@pytest.mark.parametrize("cycle", [0.01, 2.4])
def test_a_deep_queue_drains_one_head_per_cycle_and_a_shallow_one_does_not_wait(cycle: float) -> None:
    waits = drain(60, cycle)
    deep = sorted(waits["deep"])
    assert len(deep) == 60
    assert deep[-1] == pytest.approx(59 * cycle, abs=1e-3)  # the last of 60 heads: 59 cycles after the first
    assert all(b - a == pytest.approx(cycle, abs=1e-3) for a, b in zip(deep, deep[1:], strict=False))
    assert (
        max(waits["shallow"]) <= cycle + 1e-3
    )  # its own ClusterQueue's head, in the next cycle at the latest


def test_free_cycles_admit_a_deep_queue_at_one_instant() -> None:
    assert max(drain(60, 0.0)["deep"]) == 0.0


def test_the_twin_with_a_cycle_duration_and_its_refusals() -> None:
    assert Twin(clock="virtual").core.settings.kueue_cycle_seconds == 0.0
    t = Twin(clock="virtual", kueue_cycle_seconds=0.01)
    try:
        t.apply(one_queue(cpu="100"))
        t0 = t.now()
        for i in range(20):
            t.apply(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": f"j{i}", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {"name": "c", "image": "b", "resources": {"requests": {"cpu": "1"}}}
                                ],
                            }
                        }
                    },
                }
            )
        t.advance(0.1)
        reserved = [
            w
            for w in t.list("workload", "default")
            if (find_condition(w, "QuotaReserved") or {}).get("status") == "True"
        ]
        assert 5 <= len(reserved) <= 12, len(reserved)  # ~one per 10 ms cycle, not all 20 at once
        t.advance(1)
        assert all(
            (find_condition(w, "QuotaReserved") or {}).get("status") == "True"
            for w in t.list("workload", "default")
        )
        assert t.now() - t0 < 2
    finally:
        t.close()
    with pytest.raises(Invalid, match="kueue_cycle_seconds"):
        Twin(clock="virtual", kueue_cycle_seconds=-1)


def test_the_study_knob(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "examples" / "tutorial-week"
    for f in src.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_text(f.read_text())
    base = (src / "simulation.yaml").read_text()
    (tmp_path / "simulation.yaml").write_text(base + "\nsettings: {kueue_cycle_seconds: 2s}\n")
    study = load_study(str(tmp_path / "simulation.yaml"))
    assert {v.settings.get("kueue_cycle_seconds") for v in study.variants} == {2.0}
    (tmp_path / "simulation.yaml").write_text(base + "\nsettings: {kueue_cycle_seconds: -1}\n")
    with pytest.raises(InputError, match="kueue_cycle_seconds"):
        load_study(str(tmp_path / "simulation.yaml"))
