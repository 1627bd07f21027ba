"""``flexq fallback`` as the ServiceAccount of ``flexq fallback manifests``, bound to exactly the ClusterRole and
Role those manifests grant, through a served twin that authorizes every request with RBAC as the API server
does — on a stock-out, moving a Kueue-managed RayCluster to plan B. Any 403 the twin answers it (the server's
denial log, the process's errors) fails the test.

Kueue's RayCluster integration (``pkg/controller/jobs/raycluster``: suspend the queue-labelled RayCluster, make
its Workload, inject the admitted flavors' node labels and unsuspend it, suspend it again when its Workload is
evicted) is not in the twin's Kueue, so this test plays that part itself, with the admin's credential; everything
the fallback does goes through its own token. The rules are the least that let the policy's calls
(``flexq.fallback.kubeapi``: ``list``, ``get``, ``replace`` = update, ``merge_patch`` = patch, ``delete``, events
created and counted, its state ConfigMap) succeed; today's ``rayclusters: [get]`` fails here on the first patch.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.cli.fallback_manifests import CLUSTER_RULES, FORECAST_CLUSTER_RULES, SA_NAME, manifests_yaml
from flexq.clock import format_time
from flexq.fallback.model import ANN_MOVED, OPT_IN_LABEL
from flexq.http.server import Server
from tests.fallback.test_process import PROJECT, STOCKOUT

NAME = "tpu-cluster"


def _wait(pred: Any, what: str, seconds: float = 120.0, step: Any = None) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if step is not None:
            step()
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def raycluster() -> dict[str, Any]:
    """The tutorial's cluster spec as a RayCluster of its own, queued as Kueue's RayCluster integration takes one."""
    spec = yaml.safe_load(T.rayjob_yaml(1))["spec"]["rayClusterSpec"]
    spec.pop("enableInTreeAutoscaling", None)
    spec["suspend"] = True  # Kueue's webhook suspends a queued RayCluster
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": spec,
    }


def workload(rc: dict) -> dict:
    """The Workload Kueue's RayCluster integration makes for it (``raycluster-<name>``, owned by the cluster)."""
    head = rc["spec"]["headGroupSpec"]["template"]
    worker = rc["spec"]["workerGroupSpecs"][0]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"raycluster-{NAME}",
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/job-uid": rc["metadata"]["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": NAME,
                    "uid": rc["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {"name": "head", "count": 1, "template": head},
                {"name": "tpu-group", "count": worker["numOfHosts"], "template": worker["template"]},
            ],
        },
    }


def _flavor_labels(twin: Twin) -> dict[str, dict[str, str]]:
    return {f["metadata"]["name"]: f["spec"].get("nodeLabels") or {} for f in twin.list("ResourceFlavor")}


def play_kueue_raycluster_integration(twin: Twin) -> None:
    """One step of Kueue's RayCluster reconciler, for the one RayCluster of this test (the admin's writes)."""
    rc = twin.get("RayCluster", NAME)
    wl = next(
        (w for w in twin.list("Workload", "default") if w["metadata"]["name"].startswith("raycluster-")), None
    )
    conds = {c["type"]: c["status"] for c in ((wl or {}).get("status") or {}).get("conditions") or []}
    suspended = bool(rc["spec"].get("suspend"))
    if wl is None:
        if suspended:
            twin.create(workload(rc))
        return
    admission = (wl.get("status") or {}).get("admission") or {}
    if conds.get("Admitted") == "True" and suspended and wl["spec"].get("active", True):
        labels = _flavor_labels(twin)
        flavors = {
            p["name"]: next(iter(p["flavors"].values())) for p in admission.get("podSetAssignments") or []
        }
        head = rc["spec"]["headGroupSpec"]["template"]["spec"].get("nodeSelector") or {}
        workers = rc["spec"]["workerGroupSpecs"]
        tpu = workers[0]["template"]["spec"].get("nodeSelector") or {}
        workers = json.loads(json.dumps(workers))
        workers[0]["template"]["spec"]["nodeSelector"] = {**tpu, **labels[flavors["tpu-group"]]}
        twin.patch(
            "RayCluster",
            NAME,
            {
                "spec": {
                    "suspend": False,
                    "headGroupSpec": {
                        "template": {"spec": {"nodeSelector": {**head, **labels[flavors["head"]]}}}
                    },
                    "workerGroupSpecs": workers,
                }
            },
            "default",
        )
    elif conds.get("Evicted") == "True":
        # evicted: the job framework stops the job, then takes the Workload's quota reservation back
        if not suspended:
            twin.patch("RayCluster", NAME, {"spec": {"suspend": True}}, "default")
        if conds.get("QuotaReserved") == "True":
            now = format_time(twin.now())
            kept = [c for c in wl["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted")]
            unset = [
                {
                    "type": t,
                    "status": "False",
                    "reason": r,
                    "message": "The workload is deactivated",
                    "lastTransitionTime": now,
                    "observedGeneration": wl["metadata"].get("generation", 1),
                }
                for t, r in (("QuotaReserved", "Pending"), ("Admitted", "NoReservation"))
            ]
            twin.patch(
                "Workload",
                wl["metadata"]["name"],
                {"status": {"conditions": kept + unset, "admission": None}},
                "default",
                subresource="status",
            )


@pytest.fixture(scope="module", params=["rules", "forecast"])
def cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """A served twin with the tutorial's cluster and queues, one per way the fallback decides (``--decide-by``)."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    home = tmp_path_factory.mktemp("fallback-least-privilege")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(STOCKOUT)

        def done(op: dict) -> None:
            path = f"/v1/projects/{PROJECT}/locations/us-east5-b/operations/{op['name']}"
            _wait(lambda: twin.gke("GET", path)["status"] == "DONE", "a GKE operation")

        done(twin.gke("POST", *T.create_cluster_request(PROJECT)))
        for dws in (False, True):
            done(twin.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws)))
        env = dict(os.environ, KUBECONFIG=kubeconfig, COLUMNS="300", PYTHONPATH=os.pathsep.join(sys.path))

        def kubectl(*args: str, input: str | None = None) -> str:
            r = subprocess.run(
                ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
            )
            assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
            return r.stdout

        kubectl("apply", "-f", "-", input=T.queue_yaml(api="v1beta2"))
        kubectl("label", "localqueue", "user-queue", f"{OPT_IN_LABEL}=true")
        kubectl("create", "configmap", "jax-train-script", f"--from-literal=train.py={T.train_script()}")
        yield twin, kubeconfig, env, kubectl, request.param
    finally:
        server.stop()
        twin.close()


def sa_kubeconfig(kubeconfig: str, token: str, path: Path) -> str:
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    for u in cfg["users"]:
        if u["name"] == "flexq":
            u["user"] = {"token": token}
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.slow
def test_the_fallback_moves_a_raycluster_under_its_own_cluster_role(
    cluster: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Deciding by forecast, the fallback also lists ProvisioningRequests and reads Kueue's configuration: its
    manifests grant exactly that more (``FORECAST_CLUSTER_RULES``, the ``flexq-fallback-forecast`` Role)."""
    twin, kubeconfig, env, kubectl, decide_by = cluster
    caplog.set_level(logging.DEBUG, logger="flexq.http.auth")
    kubectl("apply", "-f", "-", input=manifests_yaml(decide_by=decide_by))
    granted = yaml.safe_load(kubectl("get", "clusterrole", SA_NAME, "-o", "yaml"))["rules"]
    assert granted == CLUSTER_RULES + (FORECAST_CLUSTER_RULES if decide_by == "forecast" else [])
    token = kubectl("create", "token", SA_NAME, "-n", "flexq-system", "--duration=2h").strip()
    as_sa = sa_kubeconfig(kubeconfig, token, tmp_path / "fallback-sa")
    who = json.loads(
        subprocess.run(
            ["kubectl", "auth", "whoami", "-o", "json"],
            env=dict(env, KUBECONFIG=as_sa),
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    )
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:flexq-system:{SA_NAME}"

    twin.create(raycluster())
    step = lambda: play_kueue_raycluster_integration(twin)  # noqa: E731
    _wait(
        lambda: any(
            e["reason"] == "FailedScaleUp" and "out of resources" in (e.get("message") or "")
            for e in twin.list("Event", "default")
        ),
        "the cluster autoscaler to report the stock-out of the RayCluster's TPU pods",
        step=step,
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "fallback",
            "--kubeconfig",
            as_sa,
            "--grace",
            "1",
            "--interval",
            "1",
            "--provisioning-wait-prior",
            "0",
            "--decide-by",
            decide_by,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        moved = _wait(
            lambda: (twin.get("RayCluster", NAME)["metadata"].get("annotations") or {}).get(ANN_MOVED),
            "the fallback to move the RayCluster",
            step=step,
        )
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    except AssertionError as exc:
        proc.kill()
        out, err = proc.communicate()
        wls = [
            (w["metadata"]["name"], w["spec"].get("active"), (w.get("status") or {}).get("conditions"))
            for w in twin.list("Workload", "default")
        ]
        rc = twin.get("RayCluster", NAME)
        raise AssertionError(
            f"{exc}\nfallback stdout:\n{out}\nstderr:\n{err}\nworkloads: {wls}\n"
            f"raycluster: suspend={rc['spec'].get('suspend')} annotations={rc['metadata'].get('annotations')}"
        ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    denials = [
        r.getMessage() for r in caplog.records if r.name == "flexq.http.auth" and "denied" in r.getMessage()
    ]
    assert denials == [], "\n".join(denials)
    assert "forbidden" not in err.lower(), err
    assert proc.returncode == 0, err
    assert moved.startswith("on-demand stocked out (") and moved.endswith("→ moved to dws"), moved
    verbs = [ln.split()[1] for ln in out.splitlines()[1:]]
    assert {"trip", "evict", "move"} <= set(verbs), out
    # the RayCluster restricted away from the stocked-out pool (an update), its Workload deleted, an Event
    rc = twin.get("RayCluster", NAME)
    terms = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {
        "key": "cloud.google.com/gke-nodepool",
        "operator": "NotIn",
        "values": ["on-demand-pool"],
    } in terms[0]["matchExpressions"]
    reasons = {e["reason"] for e in twin.list("Event", "default") if e["involvedObject"].get("name") == NAME}
    assert {"FallbackEvicting", "FallbackMoved"} <= reasons, reasons
    assert twin.get("ConfigMap", "flexq-fallback", namespace="kueue-system")["data"]
