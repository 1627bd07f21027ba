"""Capacity tiers (issue 51, kueue#15500) with Kueue's Concurrent Admission (KEP-8691, gate ConcurrentAdmission):
examples/capacity-tiers/simulation-concurrent.yaml cut down to a few jobs, run by the simulator on the real twin.
A job waiting on DWS is admitted on a reservation when its quota frees: that tier's Variant is admitted and runs
the job, the dws Variant is deactivated. With TryPreferredFlavors (the default) a running job moves too, at the
cost of a restart: when a1's res-a slice frees, b1 (older, running on res-b) moves to res-a, and d1 takes res-b;
with DWS granting d1 first, d1 is evicted from DWS and restarts on res-b (its work lost). With
RetainFirstAdmission, a job that started stays. And a study whose ClusterQueue Concurrent Admission's
webhook refuses is refused, with upstream's message."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexq.errors import InputError
from flexq.simulate.engine import Sim
from flexq.simulate.run_result import RunResult
from flexq.simulate.study import load_study

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity-tiers"
PROVISION = 90.0

# a1, a2 fill res-a, b1 res-b; d1 then waits on DWS (its dws Variant holds dws quota, its ProvisioningRequest not
# granted). a1 ends at about 32 minutes: one slice of res-a frees, and none again for hours
TRACE = """submit,queue,kind,name,template,run,class
0,user-queue,RayJob,a1,rayjob-template-heads.yaml,30m,experiment
0,user-queue,RayJob,a2,rayjob-template-heads.yaml,4h,training
0,user-queue,RayJob,b1,rayjob-template-heads.yaml,4h,training
5m,user-queue,RayJob,d1,rayjob-template-heads.yaml,30m,experiment
"""

# a layout a user might try first: the heads' CPU flavor in a resource group of its own
TWO_GROUPS = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-cpu}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: default-pool}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-cpu
      resources: [{name: cpu, nominalQuota: 80}, {name: memory, nominalQuota: 160Gi}]
  - coveredResources: [google.com/tpu]
    flavors:
    - {name: res-a, resources: [{name: google.com/tpu, nominalQuota: 32}]}
    - {name: res-b, resources: [{name: google.com/tpu, nominalQuota: 16}]}
    - {name: dws, resources: [{name: google.com/tpu, nominalQuota: 1000000000}]}
"""


def _study(d: Path, dws_wait: str) -> Any:
    for f in EXAMPLE.glob("*.yaml"):
        if not f.name.startswith("simulation"):
            shutil.copy(f, d / f.name)
    (d / "trace.csv").write_text(TRACE)
    (d / "two-groups.yaml").write_text(TWO_GROUPS)
    doc = yaml.safe_load(
        (EXAMPLE / "simulation-concurrent.yaml").read_text()
    )  # its cluster, reservations, queues
    doc.pop("generator")
    doc["trace"], doc["until"], doc["keepFinished"] = "trace.csv", "3h", True
    doc["capacity"]["defaults"] |= {
        "provisionTime": {"fixed": f"{PROVISION:g}s"},
        "queueWait": {"fixed": dws_wait},
    }
    ca = next(v for v in doc["variants"] if v["name"] == "concurrent-admission")
    doc["variants"].append(
        {
            "name": "two-groups",
            "manifests": ["kueue-concurrent-admission.yaml", "two-groups.yaml", *ca["manifests"][1:]],
        }
    )
    (d / "simulation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_study(d)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """DWS grants after 3 h: d1 is still waiting when a1's slice frees."""
    return _study(tmp_path_factory.mktemp("tiers-ca"), "3h")


@pytest.fixture(scope="module")
def study_fast_dws(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """DWS grants after 15 min: d1 is running on DWS when a1's slice frees."""
    return _study(tmp_path_factory.mktemp("tiers-ca-fast"), "15m")


def _run(study: Any, variant: str) -> tuple[RunResult, list[dict[str, Any]]]:
    """One run: the result and every Workload left (finished jobs are kept)."""
    sim = Sim(study, study.variant(variant), 0, study.jobs(study.seed))
    try:
        sim.setup()
        r = sim.run(None)
        return r, sim.twin.list("workload", "default")
    finally:
        sim.twin.close()


def _jobs(r: RunResult) -> dict[str, dict[str, Any]]:
    out = {}
    for j in r.jobs:
        flavors = dict(p.split("=", 1) for p in j["flavors"].split(",") if "=" in p)
        out[j["job"]] = {**j, "tpu": flavors.get("tpu-group"), "pod_sets": set(flavors.values())}
    return out


def _freed(r: RunResult, flavor: str = "res-a") -> float:
    """When the TPU quota reserved on ``flavor`` first fell (a1 ended)."""
    series = r.reserved["cluster-queue/" + flavor + "/google.com/tpu"]
    return next(t for (_t0, q0), (t, q) in zip(series, series[1:], strict=False) if q < q0)


def _workloads_of(wls: list[dict[str, Any]], job: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The job's Parent and its Variants by flavor."""
    mine = [w for w in wls if w["metadata"]["name"].startswith(f"rayjob-{job}-")]
    parent = next(w for w in mine if "-variant-" not in w["metadata"]["name"])
    variants = {
        w["metadata"]["annotations"]["kueue.x-k8s.io/workload-allowed-resource-flavors"]: w
        for w in mine
        if "-variant-" in w["metadata"]["name"]
    }
    return parent, variants


def _cond(wl: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in wl["status"]["conditions"] if c["type"] == kind)


def test_a_job_waiting_on_dws_is_admitted_on_the_freed_reservation_by_its_variant(study) -> None:
    r, wls = _run(study, "concurrent-admission")
    jobs = _jobs(r)
    freed = _freed(r)
    assert 1800 < freed < 2100  # a1: 30 minutes after its nodes came up
    # b1, older in Kueue's order and running on res-b, is the first to use the freed res-a slice: its res-a Variant
    # is admitted, its res-b Variant evicted (FlavorMigration), and it restarts on res-a (35 minutes of work lost)
    assert jobs["b1"]["tpu"] == "res-a" and jobs["b1"]["started"] < freed
    _parent, b1 = _workloads_of(wls, "b1")
    assert _cond(b1["res-b"], "Evicted")["reason"] == "FlavorMigration"
    # d1, waiting on DWS, is admitted on res-b, freed by b1, in the same instant
    d1 = jobs["d1"]
    assert d1["wait_dws"] > 0  # its dws Variant held dws quota, its ProvisioningRequest not granted
    assert d1["tpu"] == "res-b" and d1["pod_sets"] == {"res-b"}  # every pod set on the Variant's flavor
    assert 0 <= d1["admitted"] - freed < 5  # the next scheduling cycles: no pass, no eviction of its own
    assert d1["started"] - freed < 60  # res-b's slice was up (b1's)
    assert d1["finished"] - d1["started"] - d1["run"] < 60  # it ran once: nothing lost
    parent, variants = _workloads_of(wls, "d1")
    assert set(variants) == {"res-a", "res-b", "dws"}
    assert _cond(parent, "Admitted")["message"].startswith("The variant rayjob-d1-variant-res-b-")
    assert _cond(variants["res-b"], "Admitted")["status"] == "True"
    assert (
        variants["dws"]["spec"]["active"] is False
    )  # deactivated: a less preferred flavor, its request gone


def test_kueue_alone_on_the_same_layout_keeps_the_job_on_dws(study) -> None:
    r, _wls = _run(study, "kueue-alone-heads")
    d1 = _jobs(r)["d1"]
    assert (
        d1["tpu"] == "dws" and d1["started"] is None
    )  # DWS grants it 3 h after it asked: past this run's end


def test_try_preferred_flavors_moves_a_job_running_on_dws_at_the_cost_of_a_restart(study_fast_dws) -> None:
    r, wls = _run(study_fast_dws, "concurrent-admission")
    jobs = _jobs(r)
    d1 = jobs["d1"]
    freed = _freed(r)
    assert d1["started"] < freed  # DWS granted it first: running on dws-pool
    assert d1["tpu"] == "res-b" and d1["evictions"] >= 1  # res-b, freed by b1's move to res-a
    lost = d1["finished"] - d1["started"] - d1["run"]
    assert freed - d1["started"] - 60 < lost < freed - d1["started"] + 300  # its run on DWS, and the restart
    _parent, variants = _workloads_of(wls, "d1")
    assert _cond(variants["dws"], "Evicted")["reason"] == "FlavorMigration"
    # with RetainFirstAdmission it stays where it started
    r, _wls = _run(study_fast_dws, "concurrent-retain")
    d1 = _jobs(r)["d1"]
    assert d1["tpu"] == "dws" and d1["finished"] - d1["started"] - d1["run"] < 60


def test_the_study_refuses_a_layout_concurrent_admission_refuses(study) -> None:
    sim = Sim(study, study.variant("two-groups"), 0, study.jobs(study.seed))
    try:
        with pytest.raises(InputError) as err:
            sim.setup()
    finally:
        sim.twin.close()
    text = str(err.value)
    assert text.startswith("two-groups.yaml:7 (document 2): the API refused ClusterQueue/cluster-queue: ")
    assert text.endswith(
        "spec.resourceGroups: Invalid value: 2: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy "
        "is defined"
    )
