"""``flexq fallback`` as its own process against a served twin through a kubeconfig, as against GKE.

The twin runs the tutorial's cluster, node pools and queues WITHOUT its in-twin fallback; on-demand TPUs are
stocked out. The process (``python -m flexq.cli fallback --kubeconfig ...``) sees the cluster autoscaler's
events through the Kubernetes API, moves the job to ``dws``, and real kubectl shows its Events; ``flexq status``
shows its note.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.fallback.model import ANN_MOVED, OPT_IN_LABEL
from flexq.http.server import Server
from tests.waiting import wait_for

PROJECT = "flexq-twin"
JOB = "rayjob-tpu-v6e-dws-1"
STOCKOUT = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {
        "rules": [
            {
                "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                "windows": [{"start": "0s", "available": 0}],
            },
            {"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "5s"}},
        ]
    },
}


def _wait(pred, what: str, seconds: float = 180.0):
    """``tests.waiting.wait_for`` with this module's argument order and its longer default (a loaded machine:
    the fallback's passes and the twin share two cores with the rest of the suite)."""
    return wait_for(pred, seconds, what)


@contextlib.contextmanager
def _served_cluster(home: Path):
    """The tutorial's cluster, node pools and queues on a served twin (no in-twin fallback), stocked out."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    twin = Twin(
        clock="real", home=home, executor="simulated"
    )  # no fallback=True: the process is the fallback
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(STOCKOUT)

        def done(op: dict) -> None:
            _wait(
                lambda: (
                    twin.gke("GET", f"/v1/projects/{PROJECT}/locations/us-east5-b/operations/{op['name']}")[
                        "status"
                    ]
                    == "DONE"
                ),
                "a GKE operation",
            )

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
        yield twin, kubeconfig, env, kubectl
    finally:
        server.stop()
        twin.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with _served_cluster(tmp_path_factory.mktemp("fallback-process")) as c:
        yield c


@pytest.fixture
def fresh_cluster(tmp_path: Path):
    with _served_cluster(tmp_path / "home") as c:
        yield c


def _flexq(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flexq.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_the_process_moves_a_stocked_out_job_to_dws_and_kubectl_shows_it(cluster) -> None:
    twin, kubeconfig, env, kubectl = cluster
    assert not any(c.name == "flexq-fallback" for c in twin.core.current().manager.controllers)
    doc = T.rayjob_yaml(1).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "30"',
    )
    kubectl("apply", "-f", "-", input=doc)
    # the stock-out itself: GCE's capacity error on a TPU pod (a NotTriggerScaleUp naming no capacity error,
    # e.g. for a pod no pool fits yet, is not evidence, and the test must not start on one)
    _wait(
        lambda: any(
            e["reason"] == "FailedScaleUp"
            and "out of resources" in (e.get("message") or "")
            and (e.get("involvedObject") or {}).get("kind") == "Pod"
            for e in twin.list("Event", "default")
        ),
        "the cluster autoscaler to report the stock-out",
    )
    flags = ["--kubeconfig", kubeconfig, "--grace", "1", "--interval", "1", "--provisioning-wait-prior", "0"]

    # the evidence must be older than the grace period (1 s, on second-resolution event times): ask again
    # until it is, as the process's own loop would; each answer is a whole, separate dry run
    tries: list[str] = []

    def dry_run_trips() -> bool:
        dry = _flexq(env, "fallback", *flags, "--once", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        tries.append(dry.stdout)
        return "would trip" in dry.stdout and "would evict" in dry.stdout

    try:
        _wait(dry_run_trips, "a dry run to see the stock-out", seconds=60)
    except AssertionError:
        raise AssertionError("\n---\n".join(tries)) from None
    # the dry run says what it sees and why: the queues in scope, the breaker, and the job's decision
    assert "queues in scope: default/user-queue -> cluster-queue" in tries[-1], tries[-1]
    assert "stocked out: on-demand (" in tries[-1] and "would move to dws" in tries[-1], tries[-1]
    # deciding by forecast, --explain JOB says what the forecast says of that job, with its figures
    explained = _flexq(env, "fallback", *flags, "--decide-by", "forecast", "--explain", JOB)
    assert explained.returncode == 0, explained.stderr
    lines = [ln for ln in explained.stdout.splitlines() if ln.startswith("  ")]
    assert len(lines) == 1 and JOB in lines[0], explained.stdout
    assert "forecast (" in lines[0] and "if moved" in lines[0] and "valued cost" in lines[0], lines[0]
    nobody = _flexq(env, "fallback", *flags, "--explain", "no-such-job")
    assert "no-such-job: no job of that name waits or runs in a queue in scope" in nobody.stdout, (
        nobody.stdout
    )
    job = json.loads(kubectl("get", "rayjob", JOB, "-o", "json"))
    assert ANN_MOVED not in (job["metadata"].get("annotations") or {})  # a dry run changes nothing
    assert "flexq-fallback" not in kubectl("get", "configmaps", "-n", "kueue-system", "-o", "name")

    proc = subprocess.Popen(
        [sys.executable, "-m", "flexq.cli", "fallback", *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        moved = _wait(
            lambda: (
                json.loads(kubectl("get", "rayjob", JOB, "-o", "json"))["metadata"].get("annotations") or {}
            ).get(ANN_MOVED),
            "the move",
        )
        assert moved.startswith("on-demand stocked out (") and moved.endswith("→ moved to dws"), moved
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("flexq fallback: watching https://127.0.0.1:")
    verbs = [ln.split()[1] for ln in lines[1:]]
    assert [v for v in verbs if v != "quota"] == ["trip", "evict", "move"], out
    # the stocked-out flavor's quota capped through the API server (PUT on the ClusterQueue), the admin's kept
    assert "quota" in verbs, out
    cq = json.loads(kubectl("get", "clusterqueue", "cluster-queue", "-o", "json"))
    assert "fallback.flexq.dev/quota" in cq["metadata"]["annotations"], cq["metadata"]

    # the job runs on plan B and finishes
    def on_dws() -> bool:
        for wl in json.loads(kubectl("get", "workloads", "-o", "json"))["items"]:
            for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
                if psa["name"] == "tpu-group" and "dws" in psa["flavors"].values():
                    return True
        return False

    _wait(on_dws, "Kueue to admit the job on dws")
    events = kubectl(
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={JOB}",
        "-o",
        "custom-columns=REASON:.reason,SOURCE:.source.component,TYPE:.type,MESSAGE:.message",
    )
    rows = [ln.split(None, 3) for ln in events.splitlines()[1:]]
    assert ["FallbackEvicting", "flexq-fallback", "Warning"] in [r[:3] for r in rows], events
    assert ["FallbackMoved", "flexq-fallback", "Normal"] in [r[:3] for r in rows], events
    described = kubectl("describe", "rayjob", JOB)
    assert "FallbackEvicting" in described and "FallbackMoved" in described and "flexq-fallback" in described
    assert "moved to dws" in described
    state = json.loads(kubectl("get", "configmap", "flexq-fallback", "-n", "kueue-system", "-o", "json"))
    assert json.loads(state["data"]["on-demand"])["code"], state  # the breaker survives the process

    status = _flexq(env, "status", "--kubeconfig", kubeconfig, "-o", "json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert any(r["why"].startswith(moved) for r in rows), rows
    table = _flexq(env, "status", "--kubeconfig", kubeconfig)
    assert "moved to dws" in table.stdout, table.stdout

    _wait(
        lambda: (
            json.loads(kubectl("get", "rayjob", JOB, "-o", "json"))
            .get("status", {})
            .get("jobDeploymentStatus")
            == "Complete"
        ),
        "the job to finish on dws",
        120,
    )


def _lease(kubectl) -> dict:
    try:
        return json.loads(kubectl("get", "lease", "flexq-fallback", "-n", "kueue-system", "-o", "json"))[
            "spec"
        ]
    except AssertionError:
        return {}


def _moves(kubectl, job: str) -> int:
    """The fallback's Events that moved or steered ``job`` to another flavor."""
    out = kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={job}", "-o", "custom-columns=R:.reason"
    )
    return sum(1 for r in out.split()[1:] if r in ("FallbackMoved", "FallbackSteered"))


def _on_dws(kubectl, job: str) -> bool:
    for wl in json.loads(kubectl("get", "workloads", "-o", "json"))["items"]:
        owner = (wl["metadata"].get("ownerReferences") or [{}])[0].get("name")
        for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
            if owner == job and psa["name"] == "tpu-group" and "dws" in psa["flavors"].values():
                return True
    return False


@pytest.mark.slow
def test_two_replicas_one_leader_the_other_takes_over_after_a_kill(fresh_cluster, tmp_path: Path) -> None:
    """Two ``flexq fallback --leader-elect`` processes: one holds the Lease and moves the stocked-out job; the
    leader is killed with SIGKILL; the other takes the Lease over within the lease duration and moves the next
    job; no job is moved twice (one FallbackMoved Event each)."""
    twin, kubeconfig, env, kubectl = fresh_cluster
    lease = ["--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1"]
    flags = ["--kubeconfig", kubeconfig, "--grace", "1", "--interval", "1", "--leader-elect", *lease]
    flags += ["--provisioning-wait-prior", "0"]
    logs = [tmp_path / f"replica-{i}.log" for i in range(2)]
    procs = []
    for log in logs:
        with log.open("w") as f:  # each replica's output in a file: read back when something fails
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "flexq.cli", "fallback", *flags],
                    env=env,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )

    def seen() -> str:
        """What the replicas said and what the cluster shows of the jobs (for a failure's message)."""
        parts = [
            f"--- replica {p.pid}:\n{log.read_text()[-4000:]}" for p, log in zip(procs, logs, strict=True)
        ]
        parts.append(kubectl("get", "workloads", "-o", "wide"))
        for job in ("rayjob-tpu-v6e-dws-5", "rayjob-tpu-v6e-dws-6"):
            parts.append(kubectl("get", "events", "--field-selector", f"involvedObject.name={job}"))
        return "\n".join(parts)

    try:
        holder = _wait(lambda: _lease(kubectl).get("holderIdentity"), "a leader")
        pids = {p.pid: p for p in procs}
        leader = next(p for pid, p in pids.items() if f"_{pid}_" in holder)
        other = next(p for p in procs if p is not leader)
        jobs = ["rayjob-tpu-v6e-dws-5", "rayjob-tpu-v6e-dws-6"]

        def submit(i: int) -> None:
            kubectl(
                "apply",
                "-f",
                "-",
                input=T.rayjob_yaml(i).replace(
                    'kueue.x-k8s.io/elastic-job: "true"',
                    'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "30"',
                ),
            )

        def moved(job: str) -> bool:
            anns = (
                json.loads(kubectl("get", "rayjob", job, "-o", "json"))["metadata"].get("annotations") or {}
            )
            return "moved to dws" in anns.get(ANN_MOVED, "")

        submit(5)
        # killed in the middle of the move (or just after): the new leader finishes it, never moves it again
        _wait(
            lambda: (
                '"step": "'
                in (
                    json.loads(kubectl("get", "rayjob", jobs[0], "-o", "json"))["metadata"].get("annotations")
                    or {}
                ).get("fallback.flexq.dev/move", "")
            ),
            "the leader to start moving job 5",
        )
        transitions = int(_lease(kubectl).get("leaseTransitions") or 0)
        leader.send_signal(signal.SIGKILL)
        leader.wait(timeout=30)
        killed = time.monotonic()
        new = _wait(
            lambda: (h := _lease(kubectl).get("holderIdentity")) and h != holder and h,
            "the other replica to take the Lease over",
            30,
        )
        took = time.monotonic() - killed
        assert f"_{other.pid}_" in new and took <= 6 + 3, (new, took)  # lease duration + a retry or two
        assert int(_lease(kubectl).get("leaseTransitions") or 0) == transitions + 1
        _wait(lambda: moved(jobs[0]) and _on_dws(kubectl, jobs[0]), "job 5 on dws")
        submit(6)
        try:
            _wait(
                lambda: _on_dws(kubectl, jobs[1]),
                "job 6 on dws (steered by the new leader, or by its quota cap)",
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{seen()}") from None
        time.sleep(3)  # a few more passes of the new leader: nothing is moved again
        assert [_moves(kubectl, j) for j in jobs] in ([1, 1], [1, 0]), [_moves(kubectl, j) for j in jobs]
        other.send_signal(signal.SIGTERM)
        other.wait(timeout=30)
        out = logs[procs.index(other)].read_text()
        assert other.returncode == 0, out
        assert "leading: this replica acts" in out, out
        assert not _lease(kubectl).get("holderIdentity")  # released on a clean stop
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_once_against_an_unreachable_cluster_fails_cleanly(tmp_path: Path) -> None:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
                "users": [{"name": "x", "user": {"token": "t"}}],
            }
        )
    )
    r = _flexq(
        dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), "fallback", "--kubeconfig", str(cfg), "--once"
    )
    assert r.returncode == 1
    assert "cannot reach the cluster at https://127.0.0.1:9" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
