"""Issue 28 items 3-5: ``flexq submit``, ``flexq logs -f`` and ``flexq status`` against a served twin (in this
process, real clock, simulated executor) through the official ``kubernetes`` client, and ``flexq status``'s
words for a kubeconfig that is missing, names no context, or points at a twin that is not running."""

from __future__ import annotations

import argparse
import io
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from flexq import Twin
from flexq.cli import observe
from flexq.cli import tutorial as T
from flexq.cli.main import main
from flexq.http.server import Server

PROJECT = "flexq-twin"


def wait_for(cond: Callable[[], object], timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, str]]:
    home = tmp_path_factory.mktemp("twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    try:
        for path, body in (
            T.create_cluster_request(PROJECT),
            T.create_node_pool_request(PROJECT, dws=False),
            T.create_node_pool_request(PROJECT, dws=True),
        ):
            twin.gke("POST", path, body)
            wait_for(
                lambda: all(
                    o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation")
                ),
                what="GKE operations",
            )
        twin.apply(T.queue_yaml(api="v1beta2"))
        yield twin, str(server.kubeconfig_path())
    finally:
        server.stop()
        twin.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, " ".join(out.err.split())


def test_submit_refuses_a_queue_that_does_not_exist(served, capsys, tmp_path: Path) -> None:
    twin, kc = served
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    rc, _, err = run(
        capsys, "submit", str(script), "--name", "typo", "--queue", "user-queu", "--kubeconfig", kc
    )
    assert rc == 1
    assert 'LocalQueue "user-queu" not found in namespace "default" (LocalQueues there: user-queue)' in err, (
        err
    )
    assert "did you mean --queue user-queue?" in err, err  # issue 50
    assert twin.try_get("rayjob", "typo", "default") is None
    assert twin.try_get("configmap", "typo-script", "default") is None  # nothing written
    rc, _, err = run(capsys, "submit", str(script), "--name", "typo", "-n", "kube-public", "--kubeconfig", kc)
    assert rc == 1 and 'not found in namespace "kube-public" (there is none)' in err, err


def test_a_taken_name_never_replaces_the_queued_jobs_script(served, capsys, tmp_path: Path) -> None:
    """A 409 on the RayJob's name changes nothing: job 1 keeps its script (it used to be replaced), and the
    message names a free name. A ConfigMap that holds another script is refused too; the same script is reused."""
    twin, kc = served
    v1, v2 = tmp_path / "v1" / "train.py", tmp_path / "v2" / "train.py"
    for path, text in ((v1, "print('v1')\n"), (v2, "print('v2')\n")):
        path.parent.mkdir()
        path.write_text(text)
    # eight 4x4 slices cannot fit the tutorial's quota: the job stays queued, as a real one waiting for DWS would
    flags = ["--topology", "8x8", "--kubeconfig", kc]
    rc, out, err = run(capsys, "submit", str(v1), "--name", "dup", *flags)
    assert rc == 0, err
    assert "configmap/dup-script created" in out and "rayjob.ray.io/dup created (queue user-queue)" in out
    rc, out, err = run(capsys, "submit", str(v2), "--name", "dup", *flags)
    assert rc == 1 and out == ""
    assert 'rayjob.ray.io "dup" already exists in namespace "default"' in err and "--name dup-2" in err, err
    assert twin.get("configmap", "dup-script", "default")["data"] == {"train.py": "print('v1')\n"}
    # another job naming the first one's ConfigMap: refused with other contents, reused with the same
    rc, _, err = run(capsys, "submit", str(v2), "--name", "other", "--configmap", "dup-script", *flags)
    assert rc == 1 and 'configmap "dup-script" already exists' in err and "--configmap dup-script-2" in err, (
        err
    )
    assert twin.try_get("rayjob", "other", "default") is None
    assert twin.get("configmap", "dup-script", "default")["data"] == {"train.py": "print('v1')\n"}
    rc, out, err = run(capsys, "submit", str(v1), "--name", "other", "--configmap", "dup-script", *flags)
    assert rc == 0 and "configmap/dup-script unchanged (the same script)" in out, err
    twin.delete("rayjob", "other", "default")


def test_logs_follow_says_what_a_queued_job_waits_for(served, capsys, tmp_path: Path) -> None:
    twin, kc = served
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert main(["submit", str(script), "--name", "queued", "--topology", "8x8", "--kubeconfig", kc]) == 0
    wait_for(
        lambda: any(
            "queued" in w["metadata"]["name"] and w.get("status") for w in twin.list("workload", "default")
        ),
        what="the workload's status",
    )
    capsys.readouterr()
    rc, _, err = run(capsys, "logs", "-f", "queued", "--pod-running-timeout", "2s", "--kubeconfig", kc)
    assert rc == 1
    # Kueue holds it: no flavor has the quota, or (on DWS) no node pool can take an 8x8 slice, so the
    # ProvisioningRequest fails, the check goes to Retry and Kueue evicts it until the requeue time (kueue#18785)
    assert re.search(
        r"waiting for RayJob queued: (Kueue has not admitted it yet|quota is reserved; its "
        r"admission checks are not ready yet|Kueue evicted it; it waits to be admitted again) "
        r"\(queue user-queue; \w+: ",
        err,
    ), err
    assert "gave up after --pod-running-timeout 2s: RayJob queued is still waiting" in err, err
    assert "no pods found" not in err
    # without -f: said at once, with how to wait
    rc, _, err = run(capsys, "logs", "queued", "--kubeconfig", kc)
    assert rc == 1 and "RayJob queued has no running pod yet: " in err and "(queue user-queue; " in err, err
    assert "`flexq logs -f queued` waits for it" in err
    # a job that does not exist is said at once, not after waiting for pods
    t0 = time.monotonic()
    rc, _, err = run(capsys, "logs", "-f", "no-such-job", "--kubeconfig", kc)
    assert rc == 1 and 'no RayJob or Job named "no-such-job" in namespace "default"' in err, err
    assert time.monotonic() - t0 < 15  # not the old 20 s wait for pods (a bound, not a speed target)
    twin.delete("rayjob", "queued", "default")


def test_status_watch_has_a_header_and_time_per_update_and_ends_on_ctrl_c(served) -> None:
    twin, kc = served
    out = io.StringIO()
    console, err = Console(file=out, width=200), Console(file=io.StringIO())
    args = argparse.Namespace(
        kubeconfig=kc,
        context=None,
        namespace="default",
        all_namespaces=False,
        output="table",
        watch=True,
        interval=0.2,
    )
    rounds = []
    doc = yaml.safe_load(T.rayjob_yaml(5))
    doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "nowhere"

    def sleep(_: float) -> None:
        rounds.append(1)
        if len(rounds) == 1:
            twin.apply(doc)
            wait_for(
                lambda: any(
                    "dws-5" in w["metadata"]["name"] and w.get("status") for w in twin.list("workload")
                ),
                what="the new workload",
            )
        elif len(rounds) == 3:
            raise KeyboardInterrupt  # Ctrl-C

    assert observe.cmd_status(args, console, err, sleep=sleep) == 130
    text = out.getvalue()
    update = text[text.index("changed") - 40 :]
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  1 changed", update), text
    assert "JOB" in update and "rayjob-tpu-v6e-dws-5" in update, update  # the update has its header
    twin.delete("rayjob", "rayjob-tpu-v6e-dws-5", "default")


def test_status_watch_json_documents_carry_the_time(served) -> None:
    twin, kc = served
    out = io.StringIO()
    args = argparse.Namespace(
        kubeconfig=kc,
        context=None,
        namespace="default",
        all_namespaces=False,
        output="json",
        watch=True,
        interval=0.2,
    )
    assert observe.cmd_status(args, Console(file=out, width=200), Console(file=io.StringIO()), rounds=0) == 0
    import json

    docs = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    assert docs and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["observedAt"]) for d in docs)


# -- kubeconfig problems (no twin needed) -------------------------------------------------------------------
def _status(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc, _, err = run(capsys, "status", *argv)
    assert rc == 1
    assert "Traceback" not in err and "Invalid kube-config" not in err, err
    return err


def test_a_missing_kubeconfig_says_what_to_do(capsys, tmp_path: Path) -> None:
    err = _status(capsys, "--kubeconfig", str(tmp_path / "nope"))
    assert f"no kubeconfig at {tmp_path / 'nope'}" in err
    assert 'start the twin with `flexq up` and point kubectl at it with `eval "$(flexq env)"`' in err, err


def test_a_kubeconfig_without_its_context_says_what_to_do(capsys, tmp_path: Path) -> None:
    kc = tmp_path / "config"
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "flexq", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "flexq", "user": {"token": "t"}}],
        "contexts": [{"name": "flexq", "context": {"cluster": "flexq", "user": "flexq"}}],
        "current-context": "",
    }
    kc.write_text(yaml.safe_dump(cfg))
    err = _status(capsys, "--kubeconfig", str(kc))
    assert "names no current context (its contexts: flexq): kubectl config use-context flexq" in err, err
    err = _status(capsys, "--kubeconfig", str(kc), "--context", "gke_p_z_gone")
    assert (
        'has no context "gke_p_z_gone" (--context; its contexts: flexq): kubectl config use-context flexq'
        in err
    )


def test_a_twin_that_is_not_running_says_what_to_do(capsys, tmp_path: Path) -> None:
    kc = tmp_path / "config"
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "flexq", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "flexq", "user": {"token": "t"}}],
        "contexts": [{"name": "flexq", "context": {"cluster": "flexq", "user": "flexq"}}],
        "current-context": "flexq",
    }
    kc.write_text(yaml.safe_dump(cfg))
    err = _status(capsys, "--kubeconfig", str(kc))
    assert "cannot reach the cluster at 127.0.0.1:1: connection refused; if it is flexq's twin" in err, err
    assert "flexq up" in err and 'eval "$(flexq env)"' in err


def test_eta_of_a_misspelled_job_says_which_one_is_meant(served, capsys) -> None:
    """Issue 50: ``flexq eta JOB`` with a job name one typo away from a waiting job names it."""
    twin, kc = served
    for job_id in (1, 2):  # job 1 takes the on-demand slice, job 2 waits on DWS
        twin.apply(T.rayjob_yaml(job_id))
    wait_for(
        lambda: any(
            "rayjob-tpu-v6e-dws-2-" in w["metadata"]["name"]
            and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions", []))
            for w in twin.list("workload", "default")
        ),
        what="job 2's workload",
    )
    rc, _, err = run(capsys, "eta", "rayjob-tpu-v6e-dws-22", "--replicas", "2", "--kubeconfig", kc)
    assert rc == 1, err
    assert 'no waiting job "rayjob-tpu-v6e-dws-22"' in err and "did you mean rayjob-tpu-v6e-dws-2?" in err, (
        err
    )
