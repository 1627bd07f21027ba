"""The planner's quota cause names the ClusterQueue whose jobs waited and sizes its change by that queue's own
jobs. Kueue's message names only the flavor and resource; summed over every ClusterQueue, the waits of many queues
that each waited a little once made one cause, and its change raised the first queue's quota by the whole
cluster's count of waiting jobs (Kueue's large-scale file: "raise cq-0-0-cohort-0's rf cpu nominalQuota from 20
to 17900" for a mean wait of 1 s, and a what-if run of the whole file to test it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import flexq


def _queue_set(name: str, count: int, quota: int, jobs: int, run_ms: int) -> dict[str, Any]:
    return {
        "className": name,
        "count": count,
        "nominalQuota": quota,
        "borrowingLimit": 0,
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
        "workloadsSets": [
            {
                "count": jobs,
                "creationIntervalMs": 1000,
                "workloads": [
                    {"className": f"{name}-job", "runtimeMs": run_ms, "priority": 50, "request": 1}
                ],
            }
        ],
    }


def _causes(tmp_path: Path, sets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    path = tmp_path / "generator.yaml"
    path.write_text(yaml.safe_dump({"cohorts": [{"className": "cohort", "count": 1, "queuesSets": sets}]}))
    res = flexq.simulate(path, workers=1, plots=False)
    return res.documents["default"]["causes"], [v.name for v in res.study.variants]


def test_the_change_goes_to_the_queue_that_waited_sized_by_its_own_jobs(tmp_path: Path) -> None:
    causes, _ = _causes(
        tmp_path,
        [
            _queue_set("roomy", 3, 100, 20, 60_000),
            _queue_set("most", 1, 2, 20, 120_000),  # 18 jobs wait, up to 16 at once
            _queue_set("some", 1, 4, 10, 300_000),  # 6 jobs wait, 10 min and more in all
        ],
    )
    quota = [c for c in causes if c["code"] == "QuotaWait"]
    assert len(quota) == 1, causes
    (knob,) = quota[0]["knobs"]
    assert knob["clusterQueue"].startswith("most-"), quota[0]
    assert "1 other ClusterQueue waited" in quota[0]["evidence"], quota[0]["evidence"]
    # sized by its own waiting jobs (at most 18 at once, one cpu each): 2 + 9 steps of ... at most 2 + 18
    assert 2 < knob["value"] <= 2 + 18, knob
    assert quota[0]["jobsDelayed"] + quota[0]["jobsLost"] <= 18


def test_many_queues_each_waiting_a_little_make_no_cause_and_no_what_if_run(tmp_path: Path) -> None:
    # 30 ClusterQueues of one cpu, three 100 s jobs each: every queue waits 5 min in all (2.5 h summed)
    causes, variants = _causes(tmp_path, [_queue_set("cq", 30, 1, 3, 100_000)])
    assert not [c for c in causes if c["code"] == "QuotaWait"], causes
    assert variants == ["default"]
