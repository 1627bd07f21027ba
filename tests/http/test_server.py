"""``serve``: the files a served twin leaves in its home, credentials reused across restarts, clean stop."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from pathlib import Path

import requests
import yaml

from flexq import Twin
from flexq.http.server import client_env, serve


def _serve(twin: Twin, home: Path) -> tuple[threading.Thread, threading.Event]:
    ready, stop = threading.Event(), threading.Event()
    t = threading.Thread(
        target=serve, args=(twin.core, home), kwargs={"ready": ready, "stop": stop}, daemon=True
    )
    t.start()
    assert ready.wait(30)
    return t, stop


def test_serve_writes_client_files_and_reuses_credentials(tmp_path: Path) -> None:
    twin = Twin(clock="real", home=tmp_path, executor="simulated")
    try:
        t, stop = _serve(twin, tmp_path)
        info = json.loads((tmp_path / "server.json").read_text())
        assert info["pid"] == os.getpid() and info["url"].startswith("https://127.0.0.1:")
        assert int((tmp_path / "pid").read_text()) == os.getpid()
        assert stat.S_IMODE(os.stat(info["token_file"]).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(tmp_path / "pki" / "ca.key").st_mode) == 0o600
        cfg = yaml.safe_load((tmp_path / "kubeconfig").read_text())
        assert cfg["current-context"] == "flexq" and cfg["clusters"][0]["cluster"]["server"] == info["url"]
        env = dict(os.environ, **client_env(tmp_path))
        out = subprocess.run(
            ["kubectl", "get", "ns", "default", "-o", "name"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout.strip() == "namespace/default", out.stderr
        r = requests.get(info["url"] + "/version", verify=info["ca"], timeout=10)
        assert r.json()["major"] == "1"
        ca_before = Path(info["ca"]).read_text()
        stop.set()
        t.join(15)
        assert not (tmp_path / "server.json").exists() and not (tmp_path / "pid").exists()
        # a second run keeps the CA and token, so kubeconfigs written earlier stay valid
        t, stop = _serve(twin, tmp_path)
        info2 = json.loads((tmp_path / "server.json").read_text())
        assert Path(info2["ca"]).read_text() == ca_before
        assert Path(info2["token_file"]).read_text() == Path(info["token_file"]).read_text()
        stop.set()
        t.join(15)
    finally:
        twin.close()


def test_kubeconfig_keeps_other_contexts(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gke_p_l_c",
                "clusters": [{"name": "gke_p_l_c", "cluster": {"server": "https://10.0.0.1"}}],
                "users": [{"name": "gke_p_l_c", "user": {}}],
                "contexts": [{"name": "gke_p_l_c", "context": {"cluster": "gke_p_l_c", "user": "gke_p_l_c"}}],
            }
        )
    )
    twin = Twin(clock="real", home=tmp_path, executor="simulated")
    try:
        t, stop = _serve(twin, tmp_path)
        cfg = yaml.safe_load((tmp_path / "kubeconfig").read_text())
        assert {c["name"] for c in cfg["contexts"]} == {"flexq", "gke_p_l_c"}
        assert cfg["current-context"] == "gke_p_l_c"
        stop.set()
        t.join(15)
    finally:
        twin.close()
