"""``flexq simulate`` with the user's own scheduling.k8s.io PriorityClasses: a trace's ``priority`` naming a
PriorityClass (not a WorkloadPriorityClass) puts it on the jobs' pod templates, where Kueue reads it
(``priorityClassRef`` group ``scheduling.k8s.io``), and a bare Workload gets a ``priorityClassRef`` to the class
and its value (one naming a WorkloadPriorityClass was refused before: v1beta2 has no ``priorityClassName``);
a WorkloadPriorityClass of the same name wins."""

from __future__ import annotations

from pathlib import Path

import yaml

from flexq import Twin
from flexq.simulate import load_study, preflight, run_one
from flexq.simulate.objects import build_object
from flexq.simulate.trace import read_trace
from tests.simulate.conftest import QUEUES

CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pc-high}
value: 500
"""


def test_a_trace_priority_may_name_a_priority_class(tmp_path: Path) -> None:
    (tmp_path / "queues.yaml").write_text(QUEUES.replace("QUOTA", "1") + "---\n" + CLASSES)
    (tmp_path / "t.csv").write_text(
        "submit,name,kind,queue,priority,podsets,run\n"
        "0,low,Job,q,,main:1:cpu=1,60\n"
        "0,wl,Workload,q,pc-high,main:1:cpu=1,60\n"
        "1,high,Job,q,pc-high,main:1:cpu=1,60\n"
    )
    (tmp_path / "simulation.yaml").write_text(
        yaml.safe_dump({"name": "pc", "manifests": ["queues.yaml"], "trace": "t.csv"})
    )
    study = load_study(tmp_path)
    preflight(study)  # the PriorityClass is a known priority name
    jobs = read_trace(tmp_path / "t.csv")
    by_name = {j.name: j for j in jobs}
    job = build_object(by_name["high"], {}, {"pc-high": 500})
    assert job["spec"]["template"]["spec"]["priorityClassName"] == "pc-high"
    assert "kueue.x-k8s.io/priority-class" not in job["metadata"]["labels"]
    assert (
        build_object(by_name["high"], {"pc-high": 3}, {"pc-high": 500})["metadata"]["labels"][
            "kueue.x-k8s.io/priority-class"
        ]
        == "pc-high"
    )
    twin = Twin(clock="virtual", kueue="0.19.2")  # queues.yaml is v1beta1, as written (0.19 serves it)
    try:
        twin.apply((tmp_path / "queues.yaml").read_text())
        twin.create(job)
        twin.create(build_object(by_name["wl"], {}, {"pc-high": 500}))
        twin.advance(1)
        specs = {w["metadata"]["name"]: w["spec"] for w in twin.list("Workload", "default")}
        assert specs["wl"]["priority"] == 500
        assert specs["wl"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "pc-high",
        }
        (job_wl,) = [s for n, s in specs.items() if n != "wl"]
        assert job_wl["priority"] == 500 and job_wl["priorityClassRef"]["name"] == "pc-high"
    finally:
        twin.close()
    result = run_one(study, study.variants[0].name, 0)
    rows = {r["job"]: r for r in result.jobs}
    assert rows["wl"]["admitted"] == 0.0  # quota for one job: the Workload of priority 500 goes first
    assert rows["high"]["priority"] == "pc-high"
    assert rows["high"]["admitted"] < rows["low"]["admitted"]  # submitted later, admitted first: priority 500
