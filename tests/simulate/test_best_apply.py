"""best.yaml is what to apply (issue 33, acceptance 3): applied with the real ``kubectl apply`` to a served twin
holding the base's manifests, the objects it leaves behave as the recommended point: read back from the twin
and simulated, they give the recommended point's jobs.csv, job for job."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.api.kueue_convert import convert_text
from flexq.http.server import Server
from flexq.simulate import load_study, run_sweep, simulate
from flexq.simulate.change import apply_yaml
from flexq.simulate.results import csv_text
from flexq.simulate.study import Manifest, Variant

DATA = Path(__file__).with_name("data") / "planb"
KINDS = "resourceflavors,clusterqueues,localqueues,admissionchecks,provisioningrequestconfigs,configmaps"
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    r = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def _as_manifest(listing: str) -> str:
    """The objects kubectl read back, as a manifest: what the cluster holds, without the server's fields."""
    docs = []
    for obj in yaml.safe_load(listing)["items"]:
        md = obj["metadata"]
        if obj["kind"] == "ConfigMap" and md["name"] == "kube-root-ca.crt":
            continue
        for k in SERVER_FIELDS:
            md.pop(k, None)
        (md.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
        obj.pop("status", None)
        docs.append(obj)
    return yaml.safe_dump_all(docs, sort_keys=False)


def _rows(text: str) -> list[list[str]]:
    """jobs.csv without the variant's name (the first column)."""
    return [line.split(",", 1)[1] for line in text.splitlines()[1:]]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs the kubectl binary")
def test_best_yaml_applied_with_kubectl_gives_the_recommended_points_jobs(tmp_path) -> None:
    study_dir = tmp_path / "planb"
    shutil.copytree(DATA, study_dir)
    study = load_study(study_dir)
    sweep = {
        "knobs": [
            {"kind": "retryLimit", "config": "dws-config", "values": [6]},
            {"kind": "podsReadyTimeout", "values": ["20m", "45m"]},
        ]
    }
    res = run_sweep(study, sweep, out=tmp_path / "sweep", workers=1, plots=False)
    assert (tmp_path / "sweep" / "best.yaml").read_text() == res.apply
    # the recommended point (best.yaml), and a grid point that changes Kueue's configuration and a
    # ProvisioningRequestConfig (its best.yaml had it been recommended)
    for point in dict.fromkeys([res.recommended, "p00"]):
        text = (
            res.apply if point == res.recommended else apply_yaml(res.variants[res.base], res.variants[point])
        )
        if point == "p00":
            kinds = {d["kind"] for d in yaml.safe_load_all(text) if d}
            assert {"ProvisioningRequestConfig", "ConfigMap"} <= kinds, text
            cm = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "ConfigMap")
            conf = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
            # a Kueue configuration applied whole: the install's settings stay beside the change
            assert (
                conf["leaderElection"]["leaderElect"]
                and "ray.io/rayjob" in conf["integrations"]["frameworks"]
            )
            assert conf["waitForPodsReady"]["timeout"] == "20m"
        (tmp_path / f"{point}.yaml").write_text(text)
        held = _applied(tmp_path / point, study_dir, study, tmp_path / f"{point}.yaml")
        chosen = res.variants[point]
        (study_dir / "applied.yaml").write_text(held)
        applied = Variant(
            "applied", chosen.cluster, [Manifest("applied.yaml", held)], chosen.capacity, "", chosen.settings
        )
        again = copy.copy(study)
        again.variants = [applied]
        again.replicas = res.documents[point]["aggregate"]["replicas"]
        ran = simulate(again, workers=1, plots=False, whatif=False)
        want = csv_text([r for r in res.runs if r.variant == point])
        assert _rows(csv_text(ran.runs)) == _rows(want), point


def _applied(home: Path, study_dir: Path, study, best: Path) -> str:
    """A served twin running the base (its manifests applied with kubectl), then ``best`` applied with kubectl;
    what it holds then, read back with kubectl."""
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    kubeconfig = str(server.kubeconfig_path())
    try:
        for m in study.variant("base").manifests:
            # the study's cluster runs Kueue 0.20.7 (the default), which serves only v1beta2: the base's v1beta1
            # objects are there as an upgraded cluster holds them, converted (flexq convert FILE | kubectl apply)
            text = convert_text((study_dir / m.source).read_text(), m.source).text
            _kubectl(kubeconfig, "apply", "-f", "-", stdin=text)
        out = _kubectl(kubeconfig, "apply", "-f", str(best))
        assert "configured" in out or "created" in out, out
        return _as_manifest(_kubectl(kubeconfig, "get", KINDS, "-A", "-o", "yaml"))
    finally:
        server.stop()
        twin.close()
