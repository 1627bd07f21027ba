"""Issue 49: an entrypoint must not outlive its job, nor leave files behind.

A tenant whose only right is ``create rayjobs`` submits, with kubectl and its own token, a RayJob whose
entrypoint starts children that shed everything an environment variable could track (``setsid env -i sleep``,
a double fork that ``execve``s with an empty environment) and writes 100 MiB to ``/dev/shm`` and 20 MiB to its
temp directory. Once the job ends (its cluster deleted: ``shutdownAfterJobFinishes``), and once ``flexq down``
stops a twin whose cluster still runs, the test looks from outside: no process of it runs, and none of its
files remain anywhere (the host's ``/dev/shm``, the executor's and Ray's directories). Slow: real Ray.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.http.server import Server
from flexq.kuberay import confine
from flexq.kuberay.local_ray_executor import LocalRayExecutor
from flexq.kuberay.pod_processes import storage_limit

pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(confine.abi() == 0, reason="this kernel has no Landlock"),
]

# $1: the tag every process and file of this job carries in its name or arguments
ENTRYPOINT = r"""
tag="$1"
setsid env -i /bin/sleep "600.$tag" </dev/null >/dev/null 2>&1 &
python3 -c '
import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "599." + sys.argv[1]], {})
    os._exit(0)
os.wait()
' "$tag"
dd if=/dev/zero of="/dev/shm/fq-$tag" bs=1M count=100 2>/dev/null; echo "PROBE SHM $(du -m "/dev/shm/fq-$tag" | cut -f1)"
dd if=/dev/zero of="${TMPDIR:-/tmp}/fq-$tag-tmp" bs=1M count=20 2>/dev/null; echo "PROBE TMP $?"
echo "PROBE ALIVE $(ps -eo args | grep -c -e "[6]00\.$tag" -e "[5]99\.$tag")"
"""


def _procs_with(tag: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if tag in cmd and state not in ("Z", "X") and int(entry) != os.getpid():
            found.append(f"{entry}: {cmd}")
    return found


def _files_with(tag: str, roots: Iterable[Path]) -> list[str]:
    found = []
    for root in roots:
        if not root.exists():
            continue
        for dirpath, _dirs, files in os.walk(root):
            found += [os.path.join(dirpath, f) for f in files if tag in f]
    return found


def _gone(tag: str, roots: Iterable[Path], within: float = 60.0) -> tuple[list[str], list[str]]:
    """Processes and files of ``tag`` still there after ``within`` seconds of waiting for them to go."""
    deadline = time.monotonic() + within
    while True:
        procs, files = _procs_with(tag), _files_with(tag, roots)
        if (not procs and not files) or time.monotonic() > deadline:
            return procs, files
        time.sleep(1)


def _rayjob(name: str, tag: str, *, shutdown: bool) -> dict:
    head = {
        "serviceAccountName": "runner",
        "containers": [
            {
                "name": "ray-head",
                "image": "rayproject/ray:2.49.0",
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                "volumeMounts": [{"name": "probe", "mountPath": "/app"}],
            }
        ],
        "volumes": [{"name": "probe", "configMap": {"name": "probe"}}],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "entrypoint": f"bash /app/probe.sh {tag}",
            "shutdownAfterJobFinishes": shutdown,
            "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}}},
        },
    }


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "cpu-node", "labels": {"kubernetes.io/hostname": "cpu-node"}},
    "status": {
        "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
        "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
    },
}


def _tenant(kubectl, kubeconfig: str, tmp_path: Path) -> str:
    """team-a, its ServiceAccounts, the probe ConfigMap; a kubeconfig whose only right is ``create rayjobs``."""
    kubectl("create", "namespace", "team-a")
    kubectl("-n", "team-a", "create", "serviceaccount", "submitter")
    kubectl("-n", "team-a", "create", "serviceaccount", "runner")
    kubectl("-n", "team-a", "create", "role", "rayjobs-only", "--verb=create", "--resource=rayjobs.ray.io")
    kubectl(
        "-n",
        "team-a",
        "create",
        "rolebinding",
        "rb",
        "--role=rayjobs-only",
        "--serviceaccount=team-a:submitter",
    )
    kubectl("-n", "team-a", "create", "configmap", "probe", "--from-literal=probe.sh=" + ENTRYPOINT)
    token = kubectl("-n", "team-a", "create", "token", "submitter").strip()
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    cfg["users"] = [{"name": "flexq", "user": {"token": token}}]
    tenant = tmp_path / "tenant-kubeconfig"
    tenant.write_text(yaml.safe_dump(cfg))
    return str(tenant)


def _kubectl_for(env: dict[str, str]):
    def kubectl(*args: str, input: str | None = None, kubeconfig: str | None = None) -> str:
        e = dict(env, KUBECONFIG=kubeconfig) if kubeconfig else env
        r = subprocess.run(["kubectl", *args], env=e, input=input, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    return kubectl


def _wait_status(kubectl, name: str, want: Iterable[str], timeout: float = 1500) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        out = kubectl("-n", "team-a", "get", "rayjob", name, "-o", "json")
        st = json.loads(out).get("status") or {}
        if st.get("jobDeploymentStatus") in want:
            return st
        assert time.monotonic() < deadline, f"the RayJob did not end: {st}"
        time.sleep(2)


def _probe(logs: str) -> dict[str, str]:
    lines = [line for line in logs.splitlines() if line.startswith("PROBE ")]
    assert lines, logs[-3000:]
    return {line.split(" ")[1]: line.partition(" ")[2].partition(" ")[2] for line in lines}


def test_a_finished_rayjob_leaves_no_process_and_no_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    twin = Twin(clock="real", home=home, executor="ray", ray_dir=str(tmp_path / "ray"))
    server = Server(twin.core, home).start()
    info = server.write_files()
    env = dict(os.environ, KUBECONFIG=info["kubeconfig"])
    ex = next(e for e in twin.core.current().executors if isinstance(e, LocalRayExecutor))
    kubectl = _kubectl_for(env)
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    try:
        twin.create(NODE)
        tenant = _tenant(kubectl, info["kubeconfig"], tmp_path)
        kubectl(
            "create", "-f", "-", input=json.dumps(_rayjob("leaver", tag, shutdown=True)), kubeconfig=tenant
        )
        st = _wait_status(kubectl, "leaver", ("Complete", "Failed"))
        probe = _probe(kubectl("-n", "team-a", "logs", "job/leaver"))
        assert st["jobStatus"] == "SUCCEEDED", (st, probe)
        assert probe["ALIVE"] == "2", probe  # both children ran detached while the job did
        roots = [Path("/dev/shm"), tmp_path, ex.base_dir] + ([ex._ray_root] if ex._ray_root else [])
        # the job ended and its cluster is deleted: nothing of it is left, checked from outside
        procs, files = _gone(tag, roots)
        assert not procs, procs
        assert not files, files
    finally:
        server.stop()
        twin.close()
    assert not _procs_with(tag)


def test_flexq_down_ends_a_running_clusters_detached_children(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "FLEXQ_HOME": str(home), "COLUMNS": "220", "KUBECONFIG": str(home / "kubeconfig")}

    def flexq(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flexq.cli", *args], capture_output=True, text=True, env=env, timeout=240
        )

    up = flexq("up", "--executor", "ray", "--timeout", "200")
    assert up.returncode == 0, up.stdout + up.stderr
    info = json.loads((home / "server.json").read_text())
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    kubectl = _kubectl_for(env)
    try:
        kubectl("create", "-f", "-", input=json.dumps(NODE))
        tenant = _tenant(kubectl, str(home / "kubeconfig"), tmp_path)
        # the cluster outlives the job: its detached children live on in the head pod until `flexq down`
        kubectl(
            "create", "-f", "-", input=json.dumps(_rayjob("stayer", tag, shutdown=False)), kubeconfig=tenant
        )
        st = _wait_status(kubectl, "stayer", ("Complete", "Failed"))
        assert st["jobStatus"] == "SUCCEEDED", st
        assert _procs_with(tag), "the detached children should run while their cluster does"
    finally:
        down = flexq("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "killed after the timeout" not in down.stdout
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    roots = [Path("/dev/shm"), home, *tmp.glob("flexq-ray-*"), *tmp.glob("fqray-*")]
    procs, files = _gone(tag, roots, within=30)
    assert not procs, procs
    assert not files, files
    with_pid = Path(f"/proc/{info['pid']}")
    assert not with_pid.exists() or "Z" in (with_pid / "stat").read_text().rsplit(")", 1)[1].split()[0]


def test_without_a_cgroup_the_supervisor_ends_them_and_dev_shm_is_refused(tmp_path: Path) -> None:
    """A host with no writable cgroup v2 and no user namespaces: each pod's supervisor (a child subreaper)
    holds what sheds its marker, and ``/dev/shm`` is not writable (Ray's object store goes to its temp dir)."""
    from tests.ray.ray_harness import Slice, tutorial_rayjob, wait_for

    ex = LocalRayExecutor(tmp_path / "ray", isolation="supervisor", private_shm=False)
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    rj = tutorial_rayjob(8)
    rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["numOfHosts"] = 1
    s = Slice(
        ex, rj, "rayjob-8-sup3r", entrypoint=f"bash /app/probe.sh {tag}", files={"probe.sh": ENTRYPOINT}
    )
    try:
        s.start_cluster()
        ready = [s.head, *s.workers]
        wait_for(
            lambda: all((st := s.state(p)) and st.ready for p in ready), 900, "cluster", detail=s.describe
        )
        s.launch(s.submitter, "gke-default-pool-1")
        wait_for(
            lambda: (st := s.state(s.submitter)) and st.phase == "Succeeded",
            300,
            "the job",
            detail=s.describe,
        )
        probe = _probe(s.logs.of(s.submitter["metadata"]["name"]))
        assert probe["ALIVE"] == "2" and probe["TMP"] == "0", probe
        assert not Path(f"/dev/shm/fq-{tag}").exists()  # refused: not the pod's own here
        assert _procs_with(tag), "the detached children should run while their cluster does"
        s.stop_all()
        procs, files = _gone(tag, [Path("/dev/shm"), tmp_path], within=30)
        assert not procs, procs
        assert not files, files
    finally:
        ex.shutdown()
    assert not _procs_with(tag)


FILL = r"""
tag="$1"
dd if=/dev/zero of="${TMPDIR:-/tmp}/fq-$tag-fill" bs=1M count=700 2>/dev/null
echo "PROBE FILLED $?"
/bin/sleep "596.$tag"
"""


def test_a_pod_past_its_ephemeral_storage_limit_is_evicted_and_its_files_go(tmp_path: Path) -> None:
    """A pod's disk (its directory and its TMPDIR) is bounded as the kubelet bounds it: past the containers'
    ``limits.ephemeral-storage`` the pod is evicted (reason ``Evicted``, the kubelet's message), and nothing of
    it stays."""
    from tests.ray.ray_harness import Slice, tutorial_rayjob, wait_for

    ex = LocalRayExecutor(tmp_path / "ray", scratch_check_s=1.0)
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    rj = tutorial_rayjob(9)
    rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["numOfHosts"] = 1
    head = rj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head.setdefault("resources", {}).setdefault("limits", {})["ephemeral-storage"] = "500Mi"
    s = Slice(ex, rj, "rayjob-9-ev1ct", entrypoint=f"bash /app/fill.sh {tag}", files={"fill.sh": FILL})
    try:
        s.start_cluster()
        ready = [s.head, *s.workers]
        wait_for(
            lambda: all((st := s.state(p)) and st.ready for p in ready), 900, "cluster", detail=s.describe
        )
        assert storage_limit(ex._pods[s.key(s.head)].launch.pod, ex.scratch_bytes) == 500 * 1024**2
        s.launch(s.submitter, "gke-default-pool-1")
        st = wait_for(
            lambda: (h := s.state(s.head)) is not None and h.phase == "Failed" and h,
            300,
            "the head's eviction",
            detail=s.describe,
        )
        assert st.reason == "Evicted", st
        assert st.message == "Pod ephemeral local storage usage exceeds the total limit of containers 500Mi. "
        procs, files = _gone(tag, [Path("/dev/shm"), tmp_path], within=30)
        assert not procs, procs
        assert not files, files
    finally:
        s.stop_all()
        ex.shutdown()
    assert not _procs_with(tag)
