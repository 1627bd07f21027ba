"""How long ``flexq status -A`` takes with many waiting jobs, as a user runs it (issue 49: ≤ 3 s with 5,000).

A live twin with the tutorial's cluster, node pools and queues, one job running and ``--jobs`` (5,000) tutorial
RayJobs waiting behind it, is built in this process and closed; then it is served as ``flexq up`` serves it: the
daemon (``python -m flexq.cli.daemon``, simulated executor, HTTPS) over the same home, its ETA service refreshing in
the background. Then ``flexq status -A`` in a process of its own against the twin's kubeconfig, its output to a
file, as a user's shell runs it: wall seconds with the ETA column (the default) and without it (``--no-eta``), best
of ``--runs``, and the command's own CPU seconds (on a loaded machine the wall time is mostly waiting). With the
ETA service (the default) the column is the service's latest forecast, and the bench says how long the service took
to make its first one; ``--no-service`` serves the twin without one (``--eta-period 0``), as a real cluster is:
``flexq status`` then computes the ETA itself. ``--home DIR`` keeps the built twin there and serves it again on
the next run (no rebuild). ``--profile`` prints the top of a cProfile of one run with the ETA column (in this
process).

    .venv/bin/python bench/status_many.py
    .venv/bin/python bench/status_many.py --jobs 5000 --runs 3 --profile
    .venv/bin/python bench/status_many.py --home /tmp/status-home --no-service
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "status-bench"
PROFILE = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {"defaults": {"provisionTime": {"fixed": "1s"}, "queueWait": {"fixed": "3h"}}},
}
TRAIN = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "jax-train-script", "namespace": "default"},
    "data": {"train.py": "print('training')\n"},
}


def rayjob(i: int, namespace: str) -> dict[str, Any]:
    obj = yaml.safe_load(T.rayjob_yaml(i))
    obj["metadata"]["namespace"] = namespace
    obj["metadata"].setdefault("annotations", {})["twin.flexq.dev/run-seconds"] = "36000"
    return obj


def wait_for(pred: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def build(home: Path, jobs: int, namespaces: int) -> None:
    """The twin's state in ``home``: the tutorial's cluster, pools and queues, ``jobs`` RayJobs (one admitted)."""
    twin = Twin(clock="real", home=home, executor="simulated")
    try:
        twin.core.project.create(PROFILE)

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(done, 120, "the cluster")
        for dws in (False, True):
            twin.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
            wait_for(done, 120, "a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        names = ["default", *(f"team-{i}" for i in range(1, namespaces))]
        for ns in names[1:]:
            twin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            lq = next(d for d in yaml.safe_load_all(T.queue_yaml(api="v1beta2")) if d["kind"] == "LocalQueue")
            lq["metadata"]["namespace"] = ns
            twin.create(lq)
        for ns in names:
            twin.create({**TRAIN, "metadata": {**TRAIN["metadata"], "namespace": ns}})
        t = time.monotonic()
        for i in range(1, jobs + 1):
            twin.create(rayjob(i, names[i % len(names)]))
        wait_for(lambda: len(twin.list("Workload")) >= jobs, 1800, f"{jobs} workloads")
        time.sleep(5)  # let Kueue settle (one admitted, the rest waiting)
        print(f"built: {jobs} RayJobs in {len(names)} namespaces in {time.monotonic() - t:.0f}s", flush=True)
    finally:
        twin.close()


def serve(home: Path, service: bool) -> subprocess.Popen:
    """The twin of ``home`` served as ``flexq up`` serves it (with its ETA service unless not ``service``)."""
    (home / "server.json").unlink(missing_ok=True)
    log = open(home.parent / "twin.log", "ab")  # noqa: SIM115 - kept for the process's life
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexq.cli.daemon", "--home", str(home), "--executor", "simulated"]
        + ([] if service else ["--eta-period", "0"]),
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,  # its own process group, ended whole (its ETA service's worker too)
    )
    wait_for(lambda: (home / "server.json").exists() or proc.poll() is not None, 300, "the twin to serve")
    if proc.poll() is not None:
        raise SystemExit(f"the twin did not start: {(home.parent / 'twin.log').read_text()[-2000:]}")
    return proc


def forecast_served(kubeconfig: str) -> bool:
    """Whether the twin serves its ETA service's forecast yet (``flexq.cli.kubeclient.served_forecast``)."""
    from flexq.cli import kubeclient

    try:
        return kubeclient.served_forecast(kubeclient.connect(kubeconfig)) is not None
    except kubeclient.ClientError as exc:
        if exc.status != 503:  # 503: not made yet
            raise
        return False


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_status(kubeconfig: str, *extra: str) -> tuple[float, float, str]:
    """(wall seconds, the command's CPU seconds, its output)."""
    env = {**os.environ, "KUBECONFIG": kubeconfig, "COLUMNS": "200"}
    with tempfile.TemporaryFile("w+") as out:
        cpu = _child_cpu()
        t = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-m", "flexq.cli", "status", "-A", *extra],
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=900,
        )
        wall = time.monotonic() - t
        cpu = _child_cpu() - cpu
        out.seek(0)
        text = out.read()
    if r.returncode != 0:
        raise SystemExit(f"flexq status failed: {r.stderr}")
    return wall, cpu, text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--namespaces", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--home", default=None, help="keep the built twin here (and reuse it when it is there)")
    ap.add_argument("--no-service", action="store_true", help="serve the twin without its ETA service")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        home = Path(args.home) if args.home else Path(d) / "home"
        if not (home / "state.db").exists():
            build(home, args.jobs, args.namespaces)
        t = time.monotonic()
        proc = serve(home, not args.no_service)
        kubeconfig = str(home / "kubeconfig")
        try:
            print(f"served (flexq up's daemon) in {time.monotonic() - t:.0f}s", flush=True)
            if not args.no_service:
                wait_for(lambda: forecast_served(kubeconfig), 1800, "the ETA service's first forecast")
                print(
                    f"the ETA service's first forecast: {time.monotonic() - t:.0f}s after the daemon started",
                    flush=True,
                )
            for label, extra in (("with the ETA column", ()), ("without it (--no-eta)", ("--no-eta",))):
                walls, cpus = [], []
                for _ in range(args.runs):
                    wall, cpu, text = run_status(kubeconfig, *extra)
                    walls.append(wall)
                    cpus.append(cpu)
                rows = sum(1 for line in text.splitlines() if "rayjob-tpu-v6e-dws-" in line)
                etas = sum(
                    1
                    for line in text.splitlines()
                    if "rayjob-tpu-v6e-dws-" in line and (" in " in line or "not within" in line)
                )
                source = (
                    "the ETA service's forecast"
                    if not args.no_service
                    else "computed by the command (no ETA service)"
                )
                print(
                    f"flexq status -A, {args.jobs} jobs, {label}"
                    + (f" ({source})" if not extra else "")
                    + f": best {min(walls):.2f}s (runs: {', '.join(f'{w:.2f}' for w in walls)}), "
                    f"CPU {min(cpus):.2f}s; {rows} rows, {etas} with an ETA; "
                    f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
                    flush=True,
                )
            if args.profile:
                from flexq.cli.main import main as flexq_main

                os.environ["KUBECONFIG"] = kubeconfig
                prof = cProfile.Profile()
                buf = io.StringIO()
                saved = sys.stdout
                sys.stdout = buf
                try:
                    prof.runcall(flexq_main, ["status", "-A"])
                finally:
                    sys.stdout = saved
                stats = io.StringIO()
                pstats.Stats(prof, stream=stats).sort_stats("cumulative").print_stats(40)
                print(stats.getvalue())
        finally:
            proc.terminate()  # as flexq down: SIGTERM, then SIGKILL past a bound (the ETA service's worker
            try:  # finishes the forecast it is computing before the daemon's interpreter exits)
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)


if __name__ == "__main__":
    main()
