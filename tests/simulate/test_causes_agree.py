"""Causes and the sweep agree by construction (issue 33, acceptance 2): every change a cause shows was run on the
same seeds and its measured effect is in the output; none makes its variant lose more jobs; in a sweep, each is
a point of the sweep with those very figures, so the recommended point is never beaten by a shown change at no
more than the base's cost. A few small weeks here; bench/planner_family.py runs a family of 20 and more."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import flexq
from flexq.simulate import load_study, run_sweep
from flexq.simulate.sweep.results import within_budget

DATA = Path(__file__).with_name("data")
WEEKS = {
    "planb": {
        "knobs": [
            {"kind": "fallback", "values": [False, True]},
            {"kind": "retryLimit", "config": "dws-config", "values": [3, 6]},
        ]
    },
    "lost": {
        "base": "dws-tight",
        "knobs": [{"kind": "poolMax", "pool": "dws-pool", "values": [2, 4]}],
    },
}


def _shown(doc: dict) -> list[dict]:
    return [o for c in doc["causes"] for o in c["options"]]


@pytest.mark.parametrize("week", sorted(WEEKS))
def test_every_shown_change_was_run_and_helps(tmp_path, week) -> None:
    study = tmp_path / week
    shutil.copytree(DATA / week, study)
    res = flexq.simulate(study, workers=1, plots=False)
    for name, doc in res.documents.items():
        for c in doc["causes"]:
            for o in c["options"]:
                t = o["tested"]
                assert t["helps"] and t["effect"] in c["change"], (name, c["code"], o)
                # the change as kubectl applies it: whole objects, node pools as gcloud commands
                assert t["apply"].startswith("# The changes, whole objects: kubectl apply -f"), t["apply"]
                if any(k["kind"] == "poolMax" for k in o["knobs"]):
                    assert "gcloud container node-pools update" in t["apply"]
                assert t["whatIf"]["jobsLost"] <= t["base"]["jobsLost"], (name, o)
            for o in c.get("tried", []):
                assert o["change"] not in c["change"]  # what did not help is not shown
        lost = doc["replicas"][0]["jobs"]["lost"]
        assert sum(c["jobsLost"] for c in doc["causes"]) <= lost, name  # one cause per lost job


@pytest.mark.parametrize("week", sorted(WEEKS))
def test_the_sweep_runs_the_base_causes_changes_as_its_own_points(tmp_path, week) -> None:
    study = tmp_path / week
    shutil.copytree(DATA / week, study)
    res = run_sweep(load_study(study), WEEKS[week], workers=1, plots=False)
    rows = {r["point"]: r for r in res.rows}
    base_doc = res.documents[res.base]
    shown = _shown(base_doc)
    assert shown, "these weeks have causes with a change that helps"
    rec = rows[res.recommended]
    for o in shown:
        row = rows[o["tested"]["variant"]]  # the very point the cause's change ran as
        what = o["tested"]["whatIf"]
        assert (row["jobsLost"], row["waitCensoredMeanSeconds"], row["costUSD"]) == (
            what["jobsLost"],
            what["waitCensoredMeanSeconds"],
            what["costUSD"],
        )
        if within_budget(row, rows[res.base]):
            assert (rec["jobsLost"], rec["waitCensoredMeanSeconds"]) <= (
                row["jobsLost"],
                row["waitCensoredMeanSeconds"],
            ), (res.recommended, o["change"])
