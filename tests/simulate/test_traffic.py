"""Traffic and study parsing without running anything: traces, the generator, Kueue's generator.yaml naming,
the objects submitted, the GKE requests of the short cluster form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flexq.errors import InputError
from flexq.simulate import preflight
from flexq.simulate.generator import generate
from flexq.simulate.kueue_generator import kueue_generator
from flexq.simulate.objects import build_object
from flexq.simulate.study import cluster_requests, load_study
from flexq.simulate.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]


def test_csv_trace_with_pod_sets_builds_each_kind(tmp_path) -> None:
    (tmp_path / "t.csv").write_text(
        "submit,name,kind,queue,priority,podsets,run,outcome,class\n"
        '2h,ray-1,RayJob,q,high,"head:1:cpu=2;workers:3:cpu=8;google.com/tpu=4",90,Failed,big\n'
        "0,job-1,Job,q,,main:4:cpu=1,30s,,small\n"
        "30,wl-1,Workload,q,100,main:2:cpu=500m,1m,,\n"
    )
    with pytest.raises(
        InputError, match=r"t.csv:2 \(podsets\): pod set 'google.com/tpu=4' is not name:count"
    ):
        read_trace(tmp_path / "t.csv")
    (tmp_path / "t.csv").write_text(
        (tmp_path / "t.csv").read_text().replace(";google.com/tpu=4", ",memory=1Gi")
    )
    jobs = read_trace(tmp_path / "t.csv")
    assert [j.name for j in jobs] == ["job-1", "wl-1", "ray-1"]  # sorted by submit time
    ray, job, wl = build_object(jobs[2]), build_object(jobs[0]), build_object(jobs[1], {"high": 1000})
    assert ray["kind"] == "RayJob" and ray["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
    assert ray["metadata"]["annotations"] == {
        "twin.flexq.dev/run-seconds": "90",
        "twin.flexq.dev/outcome": "Failed",
    }
    groups = ray["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [(g["groupName"], g["replicas"]) for g in groups] == [("workers", 3)]
    assert (
        job["spec"]["parallelism"] == 4
        and job["spec"]["template"]["metadata"]["annotations"]["twin.flexq.dev/run-seconds"] == "30"
    )
    assert wl["spec"]["priority"] == 100 and wl["spec"]["podSets"][0]["count"] == 2


def test_jsonl_trace_and_template(tmp_path) -> None:
    (tmp_path / "job.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "x", "labels": {"team": "${QUEUE}"}},
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
                    }
                },
            }
        )
    )
    (tmp_path / "t.jsonl").write_text(
        '{"submit": 5, "kind": "Job", "queue": "q", "template": "job.yaml"}\n\n'
        '{"submit": 1, "kind": "Job", "queue": "q", "template": "job.yaml"}\n'
    )
    jobs = read_trace(tmp_path / "t.jsonl")
    obj = build_object(jobs[0])
    assert obj["metadata"]["name"] == "job-00001" and obj["metadata"]["labels"]["team"] == "q"
    (tmp_path / "bad.jsonl").write_text(
        '{"submit": 5, "queue": "q", "template": "job.yaml", "kind": "Pod"}\n'
    )
    with pytest.raises(InputError, match=r"bad.jsonl:1 \(kind\): unknown kind 'Pod'"):
        read_trace(tmp_path / "bad.jsonl")


def test_generator_is_seeded() -> None:
    spec = {
        "count": 50,
        "arrivals": {"exponential": {"mean": "1m"}},
        "mix": [
            {
                "kind": "Job",
                "podsets": "main:1:cpu=1",
                "queue": "q",
                "run": {"uniform": {"min": 1, "max": 9}},
            },
            {"kind": "Workload", "podsets": "main:1:cpu=1", "queue": "q", "weight": 3, "failed": 0.5},
        ],
    }
    a, b, c = (
        generate(spec, 1, "s", Path(".")),
        generate(spec, 1, "s", Path(".")),
        generate(spec, 2, "s", Path(".")),
    )
    assert a == b and a != c and len(a) == 50
    assert {j.kind for j in a} == {"Job", "Workload"} and {j.outcome for j in a} == {"Succeeded", "Failed"}
    with pytest.raises(InputError, match=r"generator.mix\[0\].run"):
        generate({**spec, "mix": [{**spec["mix"][0], "run": {"gamma": 1}}]}, 1, "s", Path("."))


def test_kueue_generator_names_follow_the_harness() -> None:
    doc = yaml.safe_load((ROOT / "examples/kueue-baseline/generator.yaml").read_text())
    objs, jobs = kueue_generator(doc, "generator.yaml", scale=0.01)
    cqs = [o["metadata"]["name"] for o in objs if o["kind"] == "ClusterQueue"]
    assert len(cqs) == 30 and cqs[0] == "cq-0-0-cohort-0" and "cq-0-5-cohort-4" in cqs
    assert objs[0] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf"},
    }
    first = [j for j in jobs if j.namespace == "cq-0-0-cohort-0"]
    assert {(j.name, j.submit, j.priority) for j in first} == {
        ("small-0-0-0", 0.1, 50),
        ("small-0-1-0", 0.2, 50),
        ("small-0-2-0", 0.3, 50),
        ("medium-1-0-0", 0.5, 100),
        ("large-2-0-0", 1.2, 200),
    }


def test_cluster_short_form_and_gcloud_bodies(tmp_path) -> None:
    project, location, name, reqs = cluster_requests(
        {
            "project": "p",
            "location": "us-east5-b",
            "name": "c",
            "addons": ["RayOperator"],
            "nodePools": [
                {"name": "default-pool", "machineType": "n2-standard-16", "nodes": 3},
                {
                    "name": "dws",
                    "machineType": "ct6e-standard-4t",
                    "tpuTopology": "4x4",
                    "flexStart": True,
                    "queuedProvisioning": True,
                    "autoscaling": {"min": 0, "max": 8},
                },
            ],
        }
    )
    assert (project, location, name) == ("p", "us-east5-b", "c")
    assert reqs[0][2]["cluster"]["addonsConfig"] == {"rayOperatorConfig": {"enabled": True}}
    pool = reqs[1][2]["nodePool"]
    assert pool["queuedProvisioning"] == {"enabled": True} and pool["placementPolicy"] == {
        "tpuTopology": "4x4"
    }
    # the `requests` form: the bodies gcloud sends (here the tutorial's), preflighted through the GKE API
    from flexq.cli import tutorial

    bodies = [
        tutorial.create_cluster_request("flexq-sim"),
        tutorial.create_node_pool_request("flexq-sim", dws=True),
    ]
    (tmp_path / "q.yaml").write_text(tutorial.queue_yaml().replace("on-demand-pool", "dws-pool"))
    (tmp_path / "t.csv").write_text("submit,queue,kind,podsets\n0,user-queue,Job,main:1:cpu=1\n")
    (tmp_path / "simulation.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "gcloud",
                "cluster": {
                    "project": "flexq-sim",
                    "location": "us-east5-b",
                    "requests": [{"path": p, "body": b} for p, b in bodies],
                },
                "manifests": ["q.yaml"],
                "trace": "t.csv",
                "capacity": "fast",
            }
        )
    )
    preflight(load_study(tmp_path))
    (tmp_path / "simulation.yaml").write_text(
        (tmp_path / "simulation.yaml").read_text().replace("capacity: fast", "capacity: nonsense")
    )
    with pytest.raises(InputError, match="'nonsense' is neither a named profile"):
        load_study(tmp_path)


def test_kueue_generator_pod_count_is_tas_only_as_upstream() -> None:
    """Upstream's runner builds a one-pod Workload outside TAS (``podCount`` is documented "for TAS")."""
    doc = yaml.safe_load((ROOT / "examples/kueue-baseline/generator.yaml").read_text())
    doc["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["workloads"][0]["podCount"] = 3
    _objs, jobs = kueue_generator(doc, "generator.yaml", scale=0.01)
    assert {ps.count for j in jobs for ps in j.pod_sets} == {1}
