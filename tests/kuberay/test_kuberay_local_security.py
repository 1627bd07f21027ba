"""Issue 17, without starting Ray: how the local Ray executor keeps its nodes on loopback with a token.

The pods keep KubeRay's upstream ``ray start`` (``--dashboard-host=0.0.0.0``); what the executor runs instead binds
to loopback, turns Ray's token authentication on with an owner-only token file, and hands the token to
``kubectl port-forward`` for the dashboard port. The real processes' sockets are checked in
``tests/ray/test_ray_network.py``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from flexq.kuberay import names
from flexq.kuberay.local_ray_executor import LocalRayExecutor
from flexq.kuberay.ray_node import LocalPod, ensure_token, hooks_dir
from flexq.runtime.executor import PodLaunch
from tests.ray.ray_harness import Logs, Slice, tutorial_rayjob


def _pod(ex: LocalRayExecutor, slice_: Slice, pod: dict, kind: str) -> LocalPod:
    cluster = ex._cluster(("default", "c"))
    launch = PodLaunch(
        pod=pod, node={"metadata": {"name": "n"}}, files={}, env={}, logs=Logs(), notify=lambda: None
    )
    return LocalPod(
        key=("default", pod["metadata"]["name"]),
        kind=kind,
        launch=launch,
        cluster=cluster,
        marker=f"{ex._token}:1",
        container="ray",
        dir=ex.base_dir / "pods" / "p",
    )


def test_the_pods_keep_kuberays_command_and_the_executor_runs_the_loopback_one(tmp_path: Path) -> None:
    ex = LocalRayExecutor(tmp_path / "ray")
    try:
        s = Slice(ex, tutorial_rayjob(1), "c")
        head_cmd = " ".join(
            s.head["spec"]["containers"][0]["args"] or s.head["spec"]["containers"][0]["command"]
        )
        assert "--dashboard-host=0.0.0.0" in head_cmd  # what KubeRay writes, unchanged in the pod
        head, worker = _pod(ex, s, s.head, "head"), _pod(ex, s, s.workers[0], "worker")
        head_argv = ex._ray_start_argv(head, tmp_path / "t")
        assert "--dashboard-host=127.0.0.1" in head_argv and "--node-ip-address=127.0.0.1" in head_argv
        assert not [a for a in head_argv if "0.0.0.0" in a]
        worker_argv = ex._ray_start_argv(worker, tmp_path / "t")
        assert worker_argv[:2] == [ex.python, "-c"] and "resolve_ip_for_localhost" in worker_argv[2]
        assert "--node-ip-address=127.0.0.1" in worker_argv
        assert f"--address=127.0.0.1:{head.cluster.gcs}" in worker_argv

        head_env, worker_env = ex._env(head), ex._env(worker)
        for env in (head_env, worker_env):
            # the cluster's own token (derived from the executor's), by path, in the executor's directory
            token_file = Path(env["RAY_AUTH_TOKEN_PATH"])
            assert env["RAY_AUTH_MODE"] == "token" and token_file == head.cluster.token_file
            assert token_file.read_text() == ex.cluster_token("default", "c") != ex.ray_token
            assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
            assert "RAY_AUTH_TOKEN" not in env and head.cluster.token not in "".join(env.values())
            # a clean environment: nothing of the twin's own, a home and temp dir of the pod's
            assert not {"FLEXQ_HOME", "KUBECONFIG", "CLOUDSDK_CONFIG"} & set(env)
            assert env["HOME"] == str(head.dir / "home") if env is head_env else True
            assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ex.base_dir / "py")
        assert head_env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
        assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in worker_env  # a worker's ray start refuses it
    finally:
        ex.shutdown()
    assert not ex.token_file.exists()  # the executor's own token goes with its directory
    assert not (ex.base_dir / "py").exists()  # and so does the nodes' sitecustomize


def test_a_pods_env_cannot_turn_token_auth_off(tmp_path: Path) -> None:
    ex = LocalRayExecutor(tmp_path / "ray")
    try:
        s = Slice(ex, tutorial_rayjob(1), "c")
        s.head["spec"]["containers"][0]["env"] = [
            {"name": "RAY_AUTH_MODE", "value": "disabled"},
            {"name": "RAY_AUTH_TOKEN", "value": "mine"},
            {"name": "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "value": "1"},
        ]
        env = ex._env(_pod(ex, s, s.head, "head"))
        assert env["RAY_AUTH_MODE"] == "token" and "RAY_AUTH_TOKEN" not in env
        assert env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    finally:
        ex.shutdown()


def test_the_token_file_is_owner_only_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "home" / "ray" / "auth_token"
    token = ensure_token(path)
    assert len(token) == 64 and int(token, 16) >= 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert ensure_token(path) == token  # reused, not replaced
    path.chmod(0o644)
    assert ensure_token(path) == token and stat.S_IMODE(path.stat().st_mode) == 0o600

    ex = LocalRayExecutor(tmp_path / "ray", token_file=path)
    ex.shutdown()
    assert path.read_text() == token  # a token the twin's home keeps survives the executor


def test_the_twin_keeps_its_ray_token_in_its_home(tmp_path: Path) -> None:
    from flexq import Twin

    twin = Twin(clock="real", home=tmp_path / "home", executor="ray")
    try:
        ex = next(e for e in twin.core.current().executors if isinstance(e, LocalRayExecutor))
        assert ex.token_file == tmp_path / "home" / "ray" / "auth_token"
        assert stat.S_IMODE(ex.token_file.stat().st_mode) == 0o600
    finally:
        twin.close()


def test_port_forward_to_a_running_head_gets_the_dashboard_token(tmp_path: Path) -> None:
    ex = LocalRayExecutor(tmp_path / "ray")
    try:
        s = Slice(ex, tutorial_rayjob(1), "c")
        pod = _pod(ex, s, s.head, "head")
        pod.phase = "Running"
        ex._pods[pod.key] = pod
        state = ex.poll(pod.key)
        assert state is not None and state.ports[names.PORT_DASHBOARD] == pod.cluster.dashboard
        token = ex.cluster_token("default", "c")
        assert state.http_headers == {names.PORT_DASHBOARD: {"X-Ray-Authorization": f"Bearer {token}"}}
        assert ex.auth_headers("default", "c") == {"Authorization": f"Bearer {token}"}
        pod.done.set()  # it never ran a process: nothing for shutdown to wait for
    finally:
        ex.shutdown()


def test_the_nodes_sitecustomize_keeps_a_loopback_jax_coordinator_on_loopback(tmp_path: Path) -> None:
    """Without importing JAX: a stand-in ``jax.distributed`` records the bind address it is given."""
    ex = LocalRayExecutor(tmp_path / "ray")
    try:
        fake = tmp_path / "fake"
        (fake / "jax").mkdir(parents=True)
        (fake / "jax" / "__init__.py").write_text("")
        (fake / "jax" / "distributed.py").write_text(
            "def initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None,"
            " cluster_detection_method=None, initialization_timeout=300, heartbeat_timeout_seconds=100,"
            " shutdown_timeout_seconds=300, coordinator_bind_address=None):\n"
            "    return coordinator_bind_address\n"
        )
        code = (
            "import jax.distributed as d\n"
            "print(d.initialize('127.0.0.1:1234', 4, 0), d.initialize('10.0.0.1:1234', 4, 0),"
            " d.initialize('127.0.0.1:1234', 4, 0, coordinator_bind_address='0.0.0.0:1'))\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks_dir(ex.base_dir)), str(fake)])}
        env.pop("JAX_COORDINATOR_BIND_ADDRESS", None)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.stdout.split() == ["127.0.0.1:1234", "None", "0.0.0.0:1"], out.stderr
    finally:
        ex.shutdown()


def test_flexq_up_says_which_executor_runs_and_what_it_means() -> None:
    from flexq.kuberay import confine
    from flexq.twin import executor_note

    assert executor_note("simulated").startswith("executor: simulated - no pod's code runs on this machine")
    ray = executor_note("ray")
    assert ray.startswith("executor: real Ray - RayJob entrypoints")
    assert ("confined by Landlock" in ray) == (confine.abi() > 0)
    assert "docs/security.md" in ray and "\n" not in ray
