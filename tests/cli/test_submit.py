"""``flexq submit``: the objects it builds, the YAML it prints, and what the twin does with them."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.cli import submit, tutorial
from flexq.cli.main import main
from flexq.cli.status import StatusSnapshot, workload_rows

TUTORIAL_FLAGS = dict(
    name="rayjob-tpu-v6e-dws-1", configmap="jax-train-script", pip=["jax[tpu]==0.8.2", "pandas==2.3.3"]
)


def test_tutorial_flags_rebuild_the_tutorials_manifest() -> None:
    cm, job = submit.build_objects(submit.SubmitSpec(**TUTORIAL_FLAGS), "train.py", tutorial.train_script())
    assert job == yaml.safe_load(tutorial.rayjob_yaml(1))
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "jax-train-script"},
        "data": {"train.py": tutorial.train_script()},
    }


def test_dry_run_prints_yaml_that_round_trips(tmp_path: Path) -> None:
    script = tmp_path / "my_train.py"
    script.write_text("print('hello')\n")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(
            [
                "submit",
                str(script),
                "--dry-run",
                "--pip",
                "jax==0.10.2,numpy",
                "--topology",
                "2x4",
                "--queue",
                "team-a",
                "-n",
                "research",
            ]
        )
    assert rc == 0
    cm, job = list(yaml.safe_load_all(out.getvalue()))
    assert cm["data"] == {"my_train.py": "print('hello')\n"}
    assert cm["metadata"] == {"name": "rayjob-my-train-script", "namespace": "research"}
    assert job["metadata"]["name"] == "rayjob-my-train"
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "team-a"}
    assert job["spec"]["entrypoint"] == "python /app/my_train.py"
    assert job["spec"]["runtimeEnvYAML"] == "pip:\n  - jax==0.10.2\n  - numpy\n"
    workers = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    # 2x4 v6e fits one 8-chip host (ct6e-standard-8t): one host of 8 chips rather than two of 4.
    assert workers["numOfHosts"] == 1
    assert workers["template"]["spec"]["containers"][0]["resources"]["requests"]["google.com/tpu"] == "8"
    assert workers["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "2x4"


@pytest.mark.parametrize(
    "accelerator, topology, machine, hosts",
    [
        ("tpu-v6e-slice", "4x4", "ct6e-standard-4t", 4),
        ("tpu-v6e-slice", "2x2", "ct6e-standard-4t", 1),
        ("tpu-v6e-slice", "8x8", "ct6e-standard-4t", 16),
        ("tpu-v5-lite-podslice", "4x4", "ct5lp-hightpu-4t", 4),
        ("tpu-v5p-slice", "2x2x4", "ct5p-hightpu-4t", 4),
    ],
)
def test_choose_machine(accelerator: str, topology: str, machine: str, hosts: int) -> None:
    mt = submit.choose_machine(accelerator, topology)
    assert (mt.name, submit.catalog_hosts(mt, topology)) == (machine, hosts)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"accelerator": "tpu-v9-slice"}, 'no TPU machine type offers accelerator "tpu-v9-slice"'),
        ({"topology": "3x3"}, 'with topology "3x3"'),
        ({"machine_type": "ct6e-standard-4t", "topology": "4x4x4"}, "Invalid TPU topology"),
        ({"name": "Bad_Name"}, "invalid job name"),
        ({"replicas": 3, "max_replicas": 2}, "--replicas"),
    ],
)
def test_bad_flags(kwargs: dict, message: str) -> None:
    spec = submit.SubmitSpec(**{"name": "job", **kwargs})
    with pytest.raises(submit.SubmitError, match=message.replace("(", r"\(").replace("[", r"\[")):
        submit.build_objects(spec, "t.py", "")


def test_submitted_job_is_admitted_by_the_twin(twin: Twin) -> None:
    """What submit builds passes the twin's validation and Kueue's RayJob webhook, and gets a plan."""
    op = twin.gke("POST", *tutorial.create_cluster_request("p"))
    twin.run_until_idle(600)
    assert op["operationType"] == "CREATE_CLUSTER"
    for dws in (False, True):
        twin.gke("POST", *tutorial.create_node_pool_request("p", dws=dws))
        twin.advance(120)
    twin.apply(tutorial.queue_yaml(api="v1beta2"))
    spec = submit.SubmitSpec(
        name="rayjob-mine", pip=["jax"], annotations={"twin.flexq.dev/run-seconds": "60"}
    )
    twin.apply(submit.build_objects(spec, "train.py", "print('training')\n"))
    twin.advance(5)
    rows = workload_rows(StatusSnapshot(workloads=twin.list("Workload", "default")), twin.now())
    assert [(r.job, r.flavor_of("tpu-group")) for r in rows] == [("RayJob/rayjob-mine", "on-demand")]
    twin.run_until_idle(3600)
    assert twin.get("RayJob", "rayjob-mine", "default")["status"]["jobDeploymentStatus"] == "Complete"
