"""Real kubectl (1.32) against a live twin served over HTTPS: the tutorial's Kueue objects and more."""

from __future__ import annotations

import json
import time

import yaml

from tests.http.conftest import Served, tutorial_queue_yaml


def test_discovery_lists_the_tutorial_kinds(served: Served) -> None:
    out = served.kubectl("api-resources").stdout
    for line in (
        "clusterqueues",
        "localqueues",
        "workloads",
        "resourceflavors",
        "provisioningrequestconfigs",
    ):
        assert line in out
    assert "kueue.x-k8s.io/v1beta2" in out
    assert '"gitVersion": "v1.34.1-gke.1829001"' in served.kubectl("version", "-o", "json").stdout


def test_apply_tutorial_queue_with_validation(served: Served) -> None:
    r = served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in r.stdout
    assert "localqueue.kueue.x-k8s.io/user-queue created" in r.stdout
    again = served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    assert "resourceflavor.kueue.x-k8s.io/on-demand unchanged" in again.stdout
    assert "localqueue.kueue.x-k8s.io/user-queue unchanged" in again.stdout
    cq = json.loads(
        served.kubectl("get", "clusterqueue.v1beta1.kueue.x-k8s.io", "cluster-queue", "-o", "json").stdout
    )
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] == ["dws"]
    v2 = json.loads(served.kubectl("get", "cq", "cluster-queue", "-o", "json").stdout)
    assert v2["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_unknown_field_is_refused_when_validating_and_dropped_when_not(served: Served) -> None:
    bad = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "bad-queue", "namespace": "default"},
        "spec": {"clusterQueue": "cluster-queue", "foo": "bar"},
    }
    r = served.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0
    assert 'strict decoding error: unknown field "spec.foo"' in r.stderr
    r = served.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(bad))
    assert "bad-queue created" in r.stdout
    served.kubectl("delete", "lq", "bad-queue")


def test_get_prints_kueue_columns(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    out = served.kubectl("get", "clusterqueues").stdout.splitlines()
    assert out[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert out[1].split()[0] == "cluster-queue"
    wide = served.kubectl("get", "lq", "-A", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:3] == ["NAMESPACE", "NAME", "CLUSTERQUEUE"]
    assert "user-queue" in wide[1] and "cluster-queue" in wide[1]
    rf = served.kubectl("get", "rf").stdout
    assert "AGE" in rf and "on-demand" in rf and "dws" in rf


def test_explain_clusterqueue_spec(served: Served) -> None:
    out = served.kubectl("explain", "clusterqueue.spec").stdout
    assert "KIND:       ClusterQueue" in out
    assert "resourceGroups" in out and "admissionChecksStrategy" in out
    deep = served.kubectl("explain", "clusterqueue.spec.resourceGroups.flavors").stdout
    assert "resources" in deep


def test_describe_shows_object_and_events(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    cq = served.twin.get("ClusterQueue", "cluster-queue")
    served.twin.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "cq.1", "namespace": "default"},
            "involvedObject": {
                "kind": "ClusterQueue",
                "name": "cluster-queue",
                "uid": cq["metadata"]["uid"],
                "apiVersion": "kueue.x-k8s.io/v1beta2",
            },
            "reason": "FlexqTest",
            "message": "hello from the test",
            "type": "Normal",
            "count": 1,
            "firstTimestamp": cq["metadata"]["creationTimestamp"],
            "lastTimestamp": cq["metadata"]["creationTimestamp"],
        }
    )
    out = served.kubectl("describe", "clusterqueue", "cluster-queue").stdout
    assert "Name:" in out and "cluster-queue" in out
    assert "FlexqTest" in out and "hello from the test" in out


def test_wait_and_watch(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    served.kubectl("patch", "cq", "cluster-queue", "--type=merge", "-p", '{"spec":{"cohortName":null}}')
    # the watch must outlast two kubectl starts and the patch on a loaded CI machine (4 s did not, once)
    watcher = served.popen("get", "cq", "-w", "--request-timeout=12s")
    waiter = served.popen(
        "wait", "--for=jsonpath={.spec.cohortName}=team-a", "cq/cluster-queue", "--timeout=20s"
    )
    time.sleep(1.0)
    served.kubectl("patch", "cq", "cluster-queue", "--type=merge", "-p", '{"spec":{"cohortName":"team-a"}}')
    out, err = waiter.communicate(timeout=25)
    assert waiter.returncode == 0, err
    assert "condition met" in out
    watched, _ = watcher.communicate(timeout=30)
    lines = watched.splitlines()
    assert lines[0].split()[:2] == ["NAME", "COHORT"]
    assert any(line.split()[:2] == ["cluster-queue", "team-a"] for line in lines[1:])
    for _ in range(50):  # Kueue's controller writes the Active condition; wait for whatever it says
        conds = (served.twin.get("ClusterQueue", "cluster-queue").get("status") or {}).get("conditions") or []
        active = next((c["status"] for c in conds if c["type"] == "Active"), None)
        if active:
            break
        time.sleep(0.1)
    cond = served.kubectl(
        "wait", f"--for=condition=Active={active}", "cq/cluster-queue", "--timeout=15s", check=False
    )
    assert cond.returncode == 0 and "condition met" in cond.stdout


def test_server_side_apply_with_conflicts(served: Served) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "labels": {"team": "a"}},
        "data": {"x": "1", "y": "2"},
    }
    r = served.kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-", input=json.dumps(cm))
    assert "serverside-applied" in r.stdout
    cm2 = {**cm, "data": {"x": "9"}}
    r = served.kubectl(
        "apply", "--server-side", "--field-manager=bob", "-f", "-", input=json.dumps(cm2), check=False
    )
    assert r.returncode != 0 and "conflict" in r.stderr and ".data.x" in r.stderr
    served.kubectl(
        "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-", input=json.dumps(cm2)
    )
    got = json.loads(served.kubectl("get", "cm", "ssa", "-o", "json", "--show-managed-fields").stdout)
    assert got["data"] == {"x": "9", "y": "2"}
    managers = {m["manager"] for m in got["metadata"]["managedFields"]}
    assert managers == {"alice", "bob"}
    # alice stops applying y: it goes, because nobody else owns it
    served.kubectl(
        "apply", "--server-side", "--field-manager=alice", "-f", "-", input=json.dumps({**cm, "data": {}})
    )
    got = json.loads(served.kubectl("get", "cm", "ssa", "-o", "json").stdout)
    assert got["data"] == {"x": "9"}


def test_create_configmap_from_file_and_label_and_delete(served: Served, tmp_path: object) -> None:
    from pathlib import Path

    f = Path(str(tmp_path)) / "train.py"
    f.write_text("print('Training Complete!')\n")
    served.kubectl("create", "configmap", "jax-train-script", f"--from-file={f}")
    got = yaml.safe_load(served.kubectl("get", "cm", "jax-train-script", "-o", "yaml").stdout)
    assert got["data"]["train.py"] == "print('Training Complete!')\n"
    served.kubectl("label", "cm", "jax-train-script", "app=demo")
    assert "jax-train-script" in served.kubectl("get", "cm", "-l", "app=demo").stdout
    assert "No resources found" in served.kubectl("get", "cm", "-l", "app=other").stderr
    served.kubectl("delete", "cm", "jax-train-script")
    r = served.kubectl("get", "cm", "jax-train-script", check=False)
    assert r.returncode == 1 and 'configmaps "jax-train-script" not found' in r.stderr


def test_pod_logs_plain_tail_and_follow(served: Served) -> None:
    served.twin.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "logger", "namespace": "default"},
            "spec": {
                "containers": [{"name": "main", "image": "busybox"}],
                "nodeSelector": {"no-such-node": "x"},
            },
        }
    )
    logs = served.twin.runtime.logs
    logs.write("default", "logger", "main", "line 1\nline 2\nline 3\n")
    assert served.kubectl("logs", "logger").stdout == "line 1\nline 2\nline 3\n"
    assert served.kubectl("logs", "logger", "--tail=1").stdout == "line 3\n"
    follower = served.popen("logs", "-f", "logger", "--request-timeout=10s")
    time.sleep(1.0)
    logs.write("default", "logger", "main", "Training Complete!\n")
    time.sleep(1.0)
    served.twin.delete("Pod", "logger", "default")
    out, _ = follower.communicate(timeout=15)
    assert out.endswith("Training Complete!\n") and out.startswith("line 1")
    r = served.kubectl("logs", "logger", check=False)
    assert r.returncode != 0 and "not found" in r.stderr


def test_tutorial_rayjob_kinds_in_one_get_and_describe_workload(served: Served) -> None:
    from flexq.cli.tutorial import rayjob_yaml

    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    served.kubectl("apply", "-f", "-", input=rayjob_yaml(1))
    rayjobs = served.popen("get", "rayjobs", "-w", "--request-timeout=3s")
    for _ in range(100):
        wls = served.twin.list("Workload", "default")
        if wls:
            break
        time.sleep(0.1)
    assert wls, "Kueue made no Workload for the RayJob"
    name = wls[0]["metadata"]["name"]
    out = served.kubectl(
        "get", "workloads,clusterqueues,localqueues,rayjobs,provisioningrequests", "-A"
    ).stdout
    assert f"workload.kueue.x-k8s.io/{name}" in out
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue" in out
    assert "localqueue.kueue.x-k8s.io/user-queue" in out
    assert "rayjob.ray.io/rayjob-tpu-v6e-dws-1" in out
    header = next(line for line in out.splitlines() if line.startswith("NAMESPACE") and "QUEUE" in line)
    assert header.split()[:5] == ["NAMESPACE", "NAME", "QUEUE", "RESERVED", "IN"]
    desc = served.kubectl("describe", "workload", name).stdout
    assert f"Name:         {name}" in desc and "user-queue" in desc
    watched, _ = rayjobs.communicate(timeout=15)
    assert watched.splitlines()[0].split()[:3] == ["NAME", "JOB", "STATUS"]
    assert "rayjob-tpu-v6e-dws-1" in watched
