"""Issue 36, item 1: a tenant who may create a RayJob must not own the machine.

A served twin running real Ray. A ServiceAccount whose only right is ``create rayjobs`` in ``team-a`` submits,
with kubectl and its own token, a RayJob whose entrypoint tries what the hostile tenant did: read the twin's
home (its admin token, ServiceAccount key, CA key, kubeconfig, database, Ray token), list it, read the twin
process's memory through ``/proc``, and reach the API — with ``kubectl auth can-i`` and the only token it
has, its pod's ServiceAccount token. Every read is refused (Landlock), its environment holds nothing of the
twin's, and the API answers as that ServiceAccount. A Pod created directly with ``ray job submit`` in its
command is never run on this machine. Slow: one real Ray cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.http.server import Server
from flexq.kuberay import confine, localproc
from flexq.kuberay.local_ray_executor import LocalRayExecutor

pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(confine.abi() == 0, reason="this kernel has no Landlock"),
]

PROBE = r"""
sa="$1"; home="$2"; twin_pid="$3"
for f in pki/token pki/sa.key pki/ca.key pki/server.key kubeconfig state.db ray/auth_token server.json; do
  if head -c1 "$home/$f" >/dev/null 2>&1; then echo "PROBE READ $f"; else echo "PROBE DENIED $f"; fi
done
if ls "$home" >/dev/null 2>&1; then echo "PROBE LISTED home"; else echo "PROBE DENIED listing"; fi
if head -c1 "/proc/$twin_pid/mem" >/dev/null 2>&1; then echo "PROBE READ mem"; else echo "PROBE DENIED mem"; fi
echo "PROBE ENV $(env | grep -c -e FLEXQ_HOME -e KUBECONFIG -e CLOUDSDK)"
for d in /dev/loop0 /dev/kvm /dev/fuse /dev/loop-control; do
  if [ -e "$d" ]; then if (exec 3<>"$d") 2>/dev/null; then echo "PROBE DEVOPEN $d"; else echo "PROBE DEVDENIED $d"; fi; fi
done
if (echo x > /dev/null && head -c1 /dev/urandom >/dev/null) 2>/dev/null; then echo "PROBE DEVNULL ok"; fi
k() { kubectl --server="https://${KUBERNETES_PORT#tcp://}" \
  --certificate-authority="$sa/ca.crt" --token="$(cat "$sa/token")" "$@" 2>&1; }
echo "PROBE WHOAMI $(k auth whoami -o jsonpath='{.status.userInfo.username}')"
echo "PROBE CANI-ALL $(k auth can-i '*' '*' -A)"
echo "PROBE CANI-BIND $(k auth can-i create clusterrolebindings -A)"
echo "PROBE CANI-SECRETS $(k auth can-i get secrets -n team-a)"
"""


def _manifests(home: Path) -> list[dict]:
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
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    return [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "probe", "namespace": "team-a"},
            "spec": {
                "entrypoint": f"bash /app/probe.sh {sa} {home} {os.getpid()}",
                "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}}},
            },
        }
    ]


def test_a_rayjob_cannot_read_the_twins_home_nor_act_beyond_its_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    twin = Twin(clock="real", home=home, executor="ray", ray_dir=str(tmp_path / "ray"))
    server = Server(twin.core, home).start()
    info = server.write_files()
    env = dict(os.environ, KUBECONFIG=info["kubeconfig"])
    ex = next(e for e in twin.core.current().executors if isinstance(e, LocalRayExecutor))
    try:

        def kubectl(*args: str, input: str | None = None, kubeconfig: str | None = None) -> str:
            e = dict(env, KUBECONFIG=kubeconfig) if kubeconfig else env
            r = subprocess.run(
                ["kubectl", *args], env=e, input=input, capture_output=True, text=True, timeout=60
            )
            assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
            return r.stdout

        twin.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "cpu-node", "labels": {"kubernetes.io/hostname": "cpu-node"}},
                "status": {
                    "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                },
            }
        )
        kubectl("create", "namespace", "team-a")
        kubectl("-n", "team-a", "create", "serviceaccount", "submitter")
        kubectl("-n", "team-a", "create", "serviceaccount", "runner")
        kubectl(
            "-n", "team-a", "create", "role", "rayjobs-only", "--verb=create", "--resource=rayjobs.ray.io"
        )
        kubectl(
            "-n",
            "team-a",
            "create",
            "rolebinding",
            "rb",
            "--role=rayjobs-only",
            "--serviceaccount=team-a:submitter",
        )
        kubectl("-n", "team-a", "create", "configmap", "probe", "--from-literal=probe.sh=" + PROBE)
        token = kubectl("-n", "team-a", "create", "token", "submitter").strip()
        cfg = yaml.safe_load(Path(info["kubeconfig"]).read_text())
        cfg["users"] = [{"name": "flexq", "user": {"token": token}}]
        tenant = tmp_path / "tenant-kubeconfig"
        tenant.write_text(yaml.safe_dump(cfg))
        # the tenant may create a RayJob, and nothing else
        kubectl("create", "-f", "-", input=json.dumps(_manifests(home)[0]), kubeconfig=str(tenant))
        assert (
            "no"
            in subprocess.run(
                ["kubectl", "auth", "can-i", "get", "secrets", "-n", "team-a"],
                env=dict(env, KUBECONFIG=str(tenant)),
                capture_output=True,
                text=True,
            ).stdout
        )

        # a Pod created directly, with "ray job submit" in its command: never run on this machine
        kubectl(
            "-n",
            "team-a",
            "run",
            "forged",
            "--image=rayproject/ray",
            "--restart=Never",
            "--command",
            "--",
            "bash",
            "-c",
            f"ray job submit --address http://x:8265 -- cat {home}/pki/token",
        )

        deadline = time.monotonic() + 1500
        while True:
            rj = twin.try_get("RayJob", "probe", "team-a") or {}
            if (rj.get("status") or {}).get("jobDeploymentStatus") in ("Complete", "Failed"):
                break
            assert time.monotonic() < deadline, f"the RayJob did not end: {rj.get('status')}"
            time.sleep(2)
        logs = kubectl("-n", "team-a", "logs", "job/probe")
        lines = [line for line in logs.splitlines() if line.startswith("PROBE ")]
        probe = {line.split(" ")[1]: line.partition(" ")[2].partition(" ")[2] for line in lines}
        assert lines, logs[-3000:]
        assert not [line for line in lines if line.startswith("PROBE READ") or "LISTED" in line], lines
        assert len([line for line in lines if line.startswith("PROBE DENIED")]) == 10, lines
        assert probe["ENV"] == "0", lines
        # issue 49: no block device, /dev/kvm nor /dev/fuse; /dev/null and /dev/urandom work
        assert not [line for line in lines if line.startswith("PROBE DEVOPEN")], lines
        assert [line for line in lines if line.startswith("PROBE DEVDENIED")], lines
        assert probe["DEVNULL"] == "ok", lines
        assert probe["WHOAMI"] == "system:serviceaccount:team-a:runner", lines
        assert probe["CANI-ALL"] == "no" and probe["CANI-BIND"] == "no", lines
        assert probe["CANI-SECRETS"] == "no", lines

        forged = twin.get("Pod", "forged", "team-a")
        assert "[flexq simulated]" in twin.logs("forged", "team-a")
        assert ex.poll(("team-a", "forged")) is None
        # simulated: it runs its simulated minute (and may have ended by now, on a loaded machine), never on Ray
        assert forged["status"]["phase"] in ("Running", "Pending", "Succeeded")
        if forged["status"]["phase"] == "Succeeded":
            assert "[flexq simulated] finished after 60s: Succeeded" in twin.logs("forged", "team-a")
    finally:
        server.stop()
        twin.close()
    assert not localproc.owned_pids(ex._token + ":")
