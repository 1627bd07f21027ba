"""Issue 49: the ETA of many waiting jobs costs in proportion to them, and ``flexq status`` reads each kind once.

``flexq status -A`` with 5,000 waiting jobs took 57.6 s with the ETA column: every job's queue position was a scan
of every job (quadratic), each Workload's job a scan of every job, and the status read Workloads, RayJobs and
Events once for its rows and again for the forecast. Timing belongs in ``bench/status_many.py``; these guard the
shape: the work per waiting job does not grow with their number, and each kind is listed once.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from flexq import Twin
from flexq.eta import EtaConfig, estimate, naive_eta
from flexq.forecast import jobs as eta_jobs
from flexq.forecast.state import ClusterState
from tests.eta.helpers import rayjob, waiting_state


@pytest.fixture(scope="module")
def small() -> ClusterState:
    return waiting_state(seed=11, jobs=4, run=3600, gap=5, settle=120)


def _grown(state: ClusterState, n: int) -> ClusterState:
    """``state`` with ``n`` more pending Workloads (and their RayJobs), copies of one that waits."""
    out = ClusterState.from_dict(copy.deepcopy(state.to_dict()))
    pending = next(w for w in out.workloads if not (w.get("status") or {}).get("admission"))
    job_name = pending["metadata"]["ownerReferences"][0]["name"]
    job = next(j for j in out.rayjobs if j["metadata"]["name"] == job_name)
    for i in range(n):
        wl, rj = copy.deepcopy(pending), copy.deepcopy(job)
        name = f"copy-{i:05d}"
        rj["metadata"].update(name=name, uid=f"uid-rj-{i}")
        wl["metadata"].update(name=f"rayjob-{name}-abcde", uid=f"uid-wl-{i}")
        wl["metadata"]["ownerReferences"][0].update(name=name, uid=f"uid-rj-{i}")
        out.workloads.append(wl)
        out.rayjobs.append(rj)
    return out


class _Counted(dict):
    """A RayJob that counts how often it is looked into."""

    reads = 0

    def get(self, *args: Any) -> Any:
        _Counted.reads += 1
        return super().get(*args)


def _reads_per_job(monkeypatch: pytest.MonkeyPatch, state: ClusterState, what: Any) -> float:
    """How many times an JobEntry's namespace is read and a RayJob looked into, per Workload, while ``what``
    runs on ``state`` (a queue position or a job lookup that scans every job counts each job it passes)."""
    calls = {"n": 0}
    original = eta_jobs.JobEntry.namespace

    def namespace(self: eta_jobs.JobEntry) -> str:
        calls["n"] += 1
        return original.fget(self)  # type: ignore[misc]

    state.rayjobs = [_Counted(j) for j in state.rayjobs]
    _Counted.reads = 0
    monkeypatch.setattr(eta_jobs.JobEntry, "namespace", property(namespace))
    what(state)
    monkeypatch.undo()
    return (calls["n"] + _Counted.reads) / len(state.workloads)


@pytest.mark.parametrize(
    "what",
    [
        # six hours: the reads per job do not depend on how far the forward runs go, and a week of the grown
        # state's DWS retries (its copies churn through the one-slice pool's back-offs) costs minutes
        lambda st: estimate(st, EtaConfig(replicas=2, workers=1, horizon=6 * 3600.0)),
        lambda st: naive_eta(st),
    ],
    ids=["estimate", "naive"],
)
def test_the_work_per_waiting_job_does_not_grow_with_their_number(monkeypatch, small, what) -> None:
    per_job = [_reads_per_job(monkeypatch, _grown(small, n), what) for n in (100, 400)]
    # linear: the same per job whatever their number (quadratic: four times as many with four times the jobs)
    assert per_job[1] <= per_job[0] * 1.3, per_job


def test_flexq_status_lists_each_kind_once(monkeypatch, tmp_path: Path, capsys) -> None:
    """``flexq status -A`` with its ETA column over real HTTPS: one list per kind, shared by rows and forecast."""
    from flexq.cli import kubeclient
    from flexq.cli import tutorial as T
    from flexq.cli.main import main
    from flexq.http.server import Server
    from tests.eta.helpers import SLOW_DWS_PROFILE as PROFILE
    from tests.waiting import wait_for

    home = tmp_path / "home"
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(PROFILE)
        twin.gke("POST", *T.create_cluster_request("shape"))

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        wait_for(done, what="the cluster")
        for dws in (False, True):
            twin.gke("POST", *T.create_node_pool_request("shape", dws=dws))
            wait_for(done, what="a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        for i in range(1, 6):
            twin.create(rayjob(i, run=3600))
        wait_for(lambda: len(twin.list("Workload")) == 5, what="five workloads")
        lists: list[str] = []
        get = kubeclient.get_json

        def get_json(api: Any, path: str, *a: Any, **k: Any) -> Any:  # every GET the command makes
            lists.append(path)
            return get(api, path, *a, **k)

        monkeypatch.setattr(kubeclient, "get_json", get_json)
        monkeypatch.setenv("COLUMNS", "250")
        assert main(["status", "-A", "--kubeconfig", kubeconfig]) == 0
        out = capsys.readouterr().out
        assert "ETA" in out and "rayjob-tpu-v6e-dws-5" in out, out
        assert sorted(lists) == sorted(set(lists)), sorted(lists)  # nothing asked twice
        assert any(p.endswith("/workloads") for p in lists) and any(p.endswith("/rayjobs") for p in lists), (
            lists
        )
    finally:
        server.stop()
        twin.close()
