"""Pure pieces of flexq.kuberay: KubeRay's commands, the runtime-env policy, pod builders, autoscaler rules."""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

import pytest
import yaml

from flexq.kuberay import autoscaler, commands, names, pods, runtime_env

DATA = Path(__file__).resolve().parent / "data"


def _rayjob(job_id: int = 1) -> dict:
    obj = yaml.safe_load((DATA / "rayjob-tpu-v6e-dws.yaml").read_text().replace("${JOB_ID}", str(job_id)))
    obj["metadata"].update({"namespace": "default", "uid": "u1"})
    return obj


def _cluster(rj: dict, name: str = "rayjob-tpu-v6e-dws-1-abcde") -> dict:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default", "uid": "u2"},
        "spec": rj["spec"]["rayClusterSpec"],
    }


def test_rand_suffix_uses_kubernetes_alphabet_and_names():
    s = names.rand_suffix(random.Random(1))
    assert len(s) == 5 and set(s) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert names.head_service_name("rj") == "rj-head-svc"
    assert names.cluster_of_service("rj-abcde-head-svc") == "rj-abcde"
    assert names.cluster_of_service("head-svc") is None
    assert names.dashboard_url("c", "ns") == "c-head-svc.ns.svc.cluster.local:8265"


def test_head_and_worker_pods_look_like_kuberay_s():
    rj = _rayjob()
    c = _cluster(rj)
    head = pods.head_pod(c, name="h")
    labels = head["metadata"]["labels"]
    assert labels[names.LABEL_CLUSTER] == "rayjob-tpu-v6e-dws-1-abcde"
    assert labels[names.LABEL_NODE_TYPE] == "head" and labels[names.LABEL_GROUP] == "headgroup"
    args = head["spec"]["containers"][0]["args"][0]
    assert args.startswith("ulimit -n 65536; ray start --head --block")
    assert "--num-cpus=2" in args and "--memory=4294967296" in args
    assert [c["name"] for c in head["spec"]["containers"]] == [
        "ray-head",
        "autoscaler",
    ]  # in-tree autoscaling
    group = c["spec"]["workerGroupSpecs"][0]
    w = pods.worker_pod(c, group, name="w", replica_name="r0", replica_index=0, host_index=3)
    wargs = w["spec"]["containers"][0]["args"][0]
    assert "--address=rayjob-tpu-v6e-dws-1-abcde-head-svc.default.svc.cluster.local:6379" in wargs
    assert "--num-cpus=8" in wargs and """--resources='{"TPU":4}'""" in wargs
    env = {e["name"]: e.get("value") for e in w["spec"]["containers"][0]["env"]}
    assert env["TPU_WORKER_ID"] == "3" and env["TPU_NAME"] == "r0"
    assert w["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert w["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_parse_ray_start_round_trips_and_falls_back_to_resources():
    rj = _rayjob()
    c = _cluster(rj)
    w = pods.worker_pod(
        c, c["spec"]["workerGroupSpecs"][0], name="w", replica_name="r", replica_index=0, host_index=0
    )
    spec = commands.parse_ray_start(w)
    assert (spec.head, spec.num_cpus, spec.memory, spec.resources) == (False, 8, 16 * 2**30, {"TPU": 4.0})
    bare = {
        "metadata": {"labels": {names.LABEL_NODE_TYPE: "worker"}},
        "spec": {"containers": [{"resources": {"limits": {"cpu": "1500m", "google.com/tpu": "4"}}}]},
    }
    spec = commands.parse_ray_start(bare)
    assert (spec.num_cpus, spec.resources) == (2, {"TPU": 4.0})


def test_submitter_script_is_kuberay_s_and_rewrites_for_local_run():
    rj = _rayjob()
    job = pods.submitter_job(
        rj,
        job_id="rayjob-tpu-v6e-dws-1-498t6",
        dashboard_url=names.dashboard_url("rayjob-tpu-v6e-dws-1-abcde", "default"),
    )
    assert job["metadata"]["name"] == "rayjob-tpu-v6e-dws-1" and job["spec"]["backoffLimit"] == 2
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    script = container["args"][0]
    assert (
        "ray job submit --address http://rayjob-tpu-v6e-dws-1-abcde-head-svc.default.svc.cluster.local:8265"
        " --no-wait" in script
    )
    assert "--submission-id rayjob-tpu-v6e-dws-1-498t6 -- python /app/train.py ; fi ; ray job logs" in script
    assert commands.runtime_env_of(script) == {"pip": ["jax[tpu]==0.8.2", "pandas==2.3.3"]}
    pod = {
        "metadata": {"labels": job["spec"]["template"]["metadata"]["labels"]},
        "spec": job["spec"]["template"]["spec"],
    }
    assert not names.is_ray_node_pod(pod)
    # a submitter by who created it: the Job that the RayJob controls and names after itself, never its command
    assert names.created_by_kuberay(pod, (job, rj)) == "submitter"
    assert names.created_by_kuberay(pod, ()) is None
    assert names.created_by_kuberay(pod, (job,)) is None
    other = {**job, "metadata": {**job["metadata"], "name": "not-the-rayjob"}}
    assert names.created_by_kuberay(pod, (other, rj)) is None
    assert commands.submitter_script_of(pod) == script
    host, port = commands.submitter_target(script)
    assert commands.service_of_host(host, "x") == ("default", "rayjob-tpu-v6e-dws-1-abcde-head-svc")
    local = commands.rewrite_submitter(
        script,
        local_address="127.0.0.1:40001",
        runtime_env={"env_vars": {"A": "1"}},
        mounts={"/app": "/tmp/p/mounts/app"},
    )
    assert "svc.cluster.local" not in local
    assert "ray job submit --address http://127.0.0.1:40001 --no-wait" in local
    assert "-- python /tmp/p/mounts/app/train.py ;" in local
    assert "ray job status" not in local  # replaced by an HTTP probe of /api/jobs/<id>
    assert commands.runtime_env_of(local) == {"env_vars": {"A": "1"}}
    shlex.split(local.replace(";", " ; "))  # still well-formed shell words


def test_rewrite_paths_only_touches_whole_mount_paths():
    mounts = {"/app": "/L/app", "/app/data": "/L/data"}
    text = "python /app/train.py --d /app/data/x --u http://h:1/app/y /apple /app"
    assert (
        commands.rewrite_paths(text, mounts)
        == "python /L/app/train.py --d /L/data/x --u http://h:1/app/y /apple /L/app"
    )


@pytest.mark.parametrize(
    "req,installed,verdict",
    [
        ("pandas==2.3.3", "3.1.1", "substituted: using installed pandas==3.1.1 (requested ==2.3.3)"),
        ("jax[tpu]==0.8.2", "0.10.2", "extra [tpu] dropped"),
        ("numpy>=1", "2.4.6", "satisfied by installed numpy==2.4.6"),
    ],
    ids=["pin-differs", "tpu-extra", "satisfied"],
)
def test_runtime_env_policy_accepts_installed_projects(req, installed, verdict):
    d = runtime_env.decide({"pip": [req], "env_vars": {"X": "1"}}, version_of=lambda _n: installed)
    assert d.error == "" and d.runtime_env == {"env_vars": {"X": "1"}}
    assert verdict in d.lines[0]


@pytest.mark.parametrize(
    "renv,needle",
    [
        ({"pip": ["not-here==1"]}, "not-here is not installed"),
        ({"conda": {"dependencies": ["x"]}}, "'conda' is not supported"),
        ({"pip": ["bad req ==="]}, "not a valid requirement"),
    ],
    ids=["missing", "conda", "invalid"],
)
def test_runtime_env_policy_refuses_clearly(renv, needle):
    d = runtime_env.decide(renv, version_of=lambda _n: None)
    assert d.error and needle in d.error and d.lines[-1].startswith("refused: ")


def test_runtime_env_policy_on_the_tutorial_with_this_venv():
    d = runtime_env.decide(json.loads(pods.runtime_env_json(_rayjob())))
    assert d.error == "" and len(d.lines) == 2


STATUS = """======== Autoscaler status: 2026-12-02 11:43:14.876588 ========
Node status
---------------------------------------------------------------
Active:
 1 headgroup
Idle:
 4 tpu-group
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/18.0 CPU

Pending Demands:
 {'TPU': 4.0}: 4+ pending tasks/actors
 {'CPU': 1.0} * 2 (PACK): 1+ pending placement groups
"""


def test_parse_ray_status():
    load = autoscaler.parse_status(STATUS)
    assert load.active == {"headgroup": 1} and load.idle == {"tpu-group": 4}
    assert load.demands.count({"TPU": 4.0}) == 4 and load.demands.count({"CPU": 1.0}) == 2


def test_autoscaler_grows_toward_max_and_shrinks_when_idle():
    group = _rayjob()["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]  # replicas 1, min 1, max 2, 4 hosts
    load = autoscaler.parse_status(STATUS)
    assert autoscaler.decide([group], load, {}, busy=False) == {"tpu-group": 2}
    assert autoscaler.decide([group], load, {}, busy=True) == {}
    assert autoscaler.decide([{**group, "replicas": 2}], load, {}, busy=False) == {}  # at maxReplicas
    idle = autoscaler.RayLoad(idle={"tpu-group": 8})
    g2 = {**group, "replicas": 2}
    assert autoscaler.decide([g2], idle, {"tpu-group": 30.0}, busy=False) == {}
    assert autoscaler.decide([g2], idle, {"tpu-group": 61.0}, busy=False) == {"tpu-group": 1}
    assert autoscaler.decide([group], idle, {"tpu-group": 600.0}, busy=False) == {}  # at minReplicas
