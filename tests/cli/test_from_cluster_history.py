"""``flexq simulate --from-cluster`` on an idle twin that ran the tutorial (issue 50, acceptance 3): the study it
writes runs, with the finished jobs as its traffic, and its horizon (what its node pools are billed over) follows
the cluster's own history, said in the output; a cluster that has run nothing gets no study, and says why."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.cli.main import main
from flexq.http.server import Server
from tests.eta.helpers import TRAIN, rayjob
from tests.waiting import wait_for as _wait_for

PROJECT = "history-project"
PROFILE = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {"defaults": {"provisionTime": {"fixed": "1s"}, "queueWait": {"fixed": "3s"}}},
}


def wait_for(pred: Any, timeout: float = 90.0, what: str = "") -> Any:
    return _wait_for(pred, timeout, what)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, str]]:
    home = tmp_path_factory.mktemp("history-twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(PROFILE)

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(done, what="the cluster")
        for dws in (False, True):
            twin.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
            wait_for(done, what="a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(TRAIN)
        yield twin, kubeconfig
    finally:
        server.stop()
        twin.close()


def _finished(twin: Twin) -> int:
    return sum(
        any(
            c["type"] == "Finished" and c["status"] == "True"
            for c in (w.get("status") or {}).get("conditions") or []
        )
        for w in twin.list("Workload", "default")
    )


def test_a_cluster_that_ran_nothing_gets_no_unrunnable_study(served, tmp_path, capsys) -> None:
    _twin, kc = served
    rc = main(["simulate", "--from-cluster", str(tmp_path / "s"), "--kubeconfig", kc])
    err = " ".join(capsys.readouterr().err.split())
    assert rc == 1 and "no job running or waiting, and none finished to take as traffic" in err, err
    assert not (tmp_path / "s" / "simulation.yaml").exists()


@pytest.mark.slow
def test_an_idle_cluster_that_ran_the_tutorial_gives_a_study_of_its_finished_jobs(
    served, tmp_path, capsys
) -> None:
    twin, kc = served
    # the tutorial: job 1 on the on-demand quota, job 2 (submitted while job 1 holds it) through DWS
    twin.create(rayjob(1, run=20))
    time.sleep(2)
    twin.create(rayjob(2, run=10))
    wait_for(lambda: _finished(twin) == 2, 120, "both jobs finished")
    capsys.readouterr()
    study = tmp_path / "study"
    assert main(["simulate", "--from-cluster", str(study), "--kubeconfig", kc]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the 2 job(s) the cluster finished, as its traffic" in out, out
    assert "horizon and billing: the cluster's own history: 2 finished job(s) from" in out, out
    rows = [json.loads(line) for line in (study / "trace.jsonl").read_text().splitlines()]
    assert [r["name"] for r in rows] == ["rayjob-tpu-v6e-dws-1", "rayjob-tpu-v6e-dws-2"]
    assert rows[0]["submit"] == 0 and 1 <= rows[1]["submit"] <= 10, rows
    assert all(r["outcome"] == "Succeeded" for r in rows)
    assert 15 <= rows[0]["run"] <= 60 and 5 <= rows[1]["run"] <= 60, rows  # from pods ready to the end
    job2 = yaml.safe_load((study / rows[1]["template"]).read_text())
    text = yaml.safe_dump(job2)
    assert "consume-provisioning-request" not in text and "dws-pool" not in text  # Kueue's injections gone
    sim = yaml.safe_load((study / "simulation.yaml").read_text())
    until = float(str(sim["until"]).rstrip("s"))
    assert until < 3600, sim["until"]  # the history's span plus 10 min, not 7 days
    # the study runs: both jobs again, and the default pool is billed over the history's horizon only
    res_out = tmp_path / "out"
    assert (
        main(["simulate", str(study), "-j", "1", "--no-progress", "--no-plots", "--out", str(res_out)]) == 0
    )
    doc = json.loads((res_out / "as-is.json").read_text())["replicas"][0]
    assert doc["jobs"]["total"] == 2 and doc["jobs"]["succeeded"] == 2, doc["jobs"]
    # 3 n2-standard-16 default-pool nodes (about $0.78 an hour each) over less than an hour, not a week's $630
    assert doc["costUSD"]["total"] < 20, doc["costUSD"]
