"""The batch/v1 Job controller through the Twin SDK, on the virtual clock."""

from __future__ import annotations

from flexq import Twin

from .kube_builders import add_node, condition, events, job, kubelet, node


def pods_of(twin: Twin, name: str) -> list[dict]:
    return twin.list("Pod", "default", label_selector=f"job-name={name}")


def test_job_runs_its_pod_to_completion(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("hello", run=30))
    twin.advance(1)
    pods = pods_of(twin, "hello")
    assert len(pods) == 1
    p = pods[0]
    uid = twin.get("Job", "hello")["metadata"]["uid"]
    assert p["metadata"]["name"].startswith("hello-") and len(p["metadata"]["name"]) == len("hello-") + 5
    assert p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid
    assert p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "hello"
    assert p["metadata"]["ownerReferences"][0]["uid"] == uid
    assert p["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    st = twin.get("Job", "hello")["status"]
    assert (st["active"], st["ready"], st["startTime"]) == (1, 1, "2027-01-01T00:00:00Z")
    twin.advance(30)
    st = twin.get("Job", "hello")["status"]
    assert st["succeeded"] == 1 and "active" not in st and st["completionTime"] == "2027-01-01T00:00:31Z"
    # the pod ended at 30; its event syncs the job one syncJobBatchPeriod (1 s) later, as upstream batches them
    assert [c["type"] for c in st["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert condition(twin.get("Job", "hello"), "Complete")["reason"] == "CompletionsReached"
    assert "finalizers" not in pods_of(twin, "hello")[0]["metadata"]
    assert "finished after 30s" in twin.logs("job/hello")
    assert [e["reason"] for e in events(twin, "hello")] == ["SuccessfulCreate", "Completed"]


def test_parallelism_and_completions(twin: Twin) -> None:
    add_node(twin, node("n1", cpu="8"))
    twin.apply(job("par", run=10, parallelism=2, completions=5))
    twin.advance(1)
    assert twin.get("Job", "par")["status"]["active"] == 2
    twin.advance(10)
    st = twin.get("Job", "par")["status"]
    assert (st["succeeded"], st["active"]) == (2, 2)
    twin.advance(22)  # pods end at 10, 21 and 32; each batch's sync (1 s after) creates the next ones
    st = twin.get("Job", "par")["status"]
    assert st["succeeded"] == 5 and condition(twin.get("Job", "par"), "Complete")["status"] == "True"
    assert len(pods_of(twin, "par")) == 5


def test_backoff_limit_with_growing_creation_delay(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("bad", run=5, outcome="Failed", backoffLimit=2))
    twin.advance(
        5
    )  # first pod fails at t=5; the job syncs 1 s later (batched); the next pod comes 10 s after 5
    assert "failed" not in twin.get("Job", "bad")["status"]
    twin.advance(1)
    assert twin.get("Job", "bad")["status"]["failed"] == 1 and len(pods_of(twin, "bad")) == 1
    twin.advance(8)
    assert len(pods_of(twin, "bad")) == 1
    twin.advance(1)
    assert len(pods_of(twin, "bad")) == 2
    twin.run_until_idle(3600)
    j = twin.get("Job", "bad")
    assert j["status"]["failed"] == 3
    failed = condition(j, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    assert condition(j, "FailureTarget")["status"] == "True" and "completionTime" not in j["status"]
    # pods created at t=0, 15 (5+10) and 40 (20+20): the back-off counts from each failed pod's finishedAt
    # (getFinishedTime), not from the sync; the third fails at 45 and the job's sync at 46 fails it
    assert failed["lastTransitionTime"] == "2027-01-01T00:00:46Z"
    assert events(twin, "bad", "BackoffLimitExceeded")[0]["type"] == "Warning"


def test_suspend_and_resume_like_kueue_does(twin: Twin) -> None:
    add_node(twin, node("n1"))
    add_node(twin, node("tpu-host", pool="on-demand"))
    twin.apply(job("q", run=100, suspend=True))
    twin.advance(5)
    j = twin.get("Job", "q")
    assert pods_of(twin, "q") == [] and condition(j, "Suspended")["reason"] == "JobSuspended"
    assert "startTime" not in j["status"]
    # Kueue injects the flavor's node labels while the job is suspended, then unsuspends it
    twin.patch(
        "Job",
        "q",
        {"spec": {"template": {"spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "on-demand"}}}}},
    )
    twin.patch("Job", "q", {"spec": {"suspend": False}})
    twin.advance(1)
    j = twin.get("Job", "q")
    cond = condition(j, "Suspended")
    assert (cond["status"], cond["reason"]) == ("False", "JobResumed")
    assert j["status"]["startTime"] == "2027-01-01T00:00:05Z"
    (p,) = pods_of(twin, "q")
    assert p["spec"]["nodeName"] == "tpu-host"
    twin.advance(10)
    twin.patch("Job", "q", {"spec": {"suspend": True}})
    twin.advance(1)
    j = twin.get("Job", "q")
    assert pods_of(twin, "q") == [] and "failed" not in j["status"] and "active" not in j["status"]
    assert condition(j, "Suspended")["status"] == "True"
    assert [e["reason"] for e in events(twin, "q")].count("SuccessfulDelete") == 1


def test_active_deadline_fails_the_job_and_stops_its_pods(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("slow", run=100, activeDeadlineSeconds=30))
    twin.advance(31)
    j = twin.get("Job", "slow")
    failed = condition(j, "Failed")
    assert (failed["reason"], failed["lastTransitionTime"]) == ("DeadlineExceeded", "2027-01-01T00:00:30Z")
    assert failed["message"] == "Job was active longer than specified deadline"
    assert j["status"]["failed"] == 1 and pods_of(twin, "slow") == []


def test_ttl_after_finished_deletes_job_and_pods(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("short", run=10, ttlSecondsAfterFinished=60))
    twin.advance(69)
    assert twin.try_get("Job", "short") is not None
    twin.advance(2)
    assert twin.try_get("Job", "short") is None
    assert twin.list("Pod") == []


def test_pod_deleted_by_someone_else_counts_as_failed_and_is_replaced(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("victim", run=100))
    twin.advance(1)
    (p,) = pods_of(twin, "victim")
    twin.delete("Pod", p["metadata"]["name"])
    twin.advance(1)
    assert twin.try_get("Pod", p["metadata"]["name"]) is None
    assert twin.get("Job", "victim")["status"]["failed"] == 1
    twin.advance(10)
    (q,) = pods_of(twin, "victim")
    assert q["metadata"]["name"] != p["metadata"]["name"]


def test_indexed_job(twin: Twin) -> None:
    add_node(twin, node("n1", cpu="8"))
    twin.apply(job("idx", run=10, parallelism=3, completions=3, completionMode="Indexed"))
    twin.advance(1)
    pods = pods_of(twin, "idx")
    assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods) == [
        "0",
        "1",
        "2",
    ]
    p0 = next(p for p in pods if p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "0")
    assert p0["metadata"]["name"].startswith("idx-0-") and p0["spec"]["hostname"] == "idx-0"
    assert {"name": "JOB_COMPLETION_INDEX", "value": "0"} in p0["spec"]["containers"][0]["env"]
    twin.advance(10)
    st = twin.get("Job", "idx")["status"]
    assert (st["succeeded"], st["completedIndexes"]) == (3, "0-2")
    assert condition(twin.get("Job", "idx"), "Complete")["status"] == "True"


def test_unschedulable_job_pod_stays_pending_and_counts_active(twin: Twin) -> None:
    add_node(twin, node("n1", cpu="500m"))
    twin.apply(job("huge", run=10))
    twin.advance(60)
    st = twin.get("Job", "huge")["status"]
    assert (st["active"], st["ready"]) == (1, 0)
    (p,) = pods_of(twin, "huge")
    assert condition(p, "PodScheduled")["reason"] == "Unschedulable"


def test_on_failure_restarts_count_toward_the_backoff_limit(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("flaky", run=5, outcome="Failed", restart="OnFailure", backoffLimit=2))
    twin.run_until_idle(3600)
    j = twin.get("Job", "flaky")
    assert condition(j, "Failed")["reason"] == "BackoffLimitExceeded"
    # one pod: fails at 5, restarts after 10 s back-off, fails again at 20 -> two restarts reach the limit,
    # which the job's batched sync (1 s after the pod's event) sees
    assert condition(j, "Failed")["lastTransitionTime"] == "2027-01-01T00:00:21Z"
    assert pods_of(twin, "flaky") == [] and j["status"]["failed"] == 1


def test_deleting_a_running_job_takes_its_pods_and_stops_them(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("gone", run=100, parallelism=2, completions=2))
    twin.advance(5)
    assert len(pods_of(twin, "gone")) == 2
    twin.delete("Job", "gone")
    twin.advance(1)
    assert twin.list("Pod") == []
    assert not kubelet(twin).running


def test_same_seed_same_run() -> None:
    def run() -> list[tuple]:
        t = Twin(clock="virtual", seed=7)
        try:
            for i in range(3):
                add_node(t, node(f"n{i}", cpu="2"))
            for i in range(4):
                t.apply(job(f"j{i}", run=10 + i, parallelism=2, completions=3))
            t.run_until_idle(3600)
            return [
                (
                    p["metadata"]["name"],
                    p["spec"]["nodeName"],
                    p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"],
                )
                for p in t.list("Pod")
            ] + [(e["metadata"]["name"], e["reason"], e["message"]) for e in t.list("Event")]
        finally:
            t.close()

    first = run()
    assert len(first) > 20 and first == run()


def test_a_burst_of_pod_events_costs_one_sync_of_the_job(twin: Twin) -> None:
    """Pod events sync their Job after syncJobBatchPeriod (1 s), as kube-controller-manager's
    ``enqueueSyncJobBatched``: 300 pods created, bound and started in the same instant are one sync of the
    job, not one each (each sync looks at every pod of the job: a Job of thousands of pods was quadratic)."""
    add_node(twin, node("n1", cpu="400"))
    key = {"controller": "job-controller", "result": "success"}
    before = twin.metric("controller_runtime_reconcile_total", key) or 0
    twin.apply(job("wide", run=30, parallelism=300, completions=300))
    twin.advance(20)  # made at the client's rate: 30 at once, then 20 a second (issue 49)
    assert twin.get("Job", "wide")["status"]["active"] == 300
    syncs = twin.metric("controller_runtime_reconcile_total", key) - before
    # at most one sync a second for the pods' events (600+ of them: bound, started, ready) and the next pods,
    # plus the create and the job's own status writes
    assert syncs <= 50, syncs
    twin.run_until_idle(3600)
    assert twin.get("Job", "wide")["status"]["succeeded"] == 300


def test_a_wide_job_is_built_at_the_clients_rate(twin: Twin) -> None:
    """``parallelism: 100000`` (issues 36, 49): the Job controller creates at most 500 pods a sync
    (MaxPodCreateDeletePerSync) and no faster than its client allows (kube-controller-manager's QPS 20, burst 30):
    the burst at once, then the pods' events wake it a second later for what the client refilled meanwhile."""
    twin.apply(job("wide", run=600, parallelism=100_000, completions=100_000))
    twin.advance(0.5)
    assert len(pods_of(twin, "wide")) == 30
    assert twin.get("Job", "wide")["status"]["active"] == 30
    twin.advance(1)
    assert len(pods_of(twin, "wide")) == 50
    twin.patch("Job", "wide", {"spec": {"suspend": True}})
    twin.advance(1)  # suspended: the active pods go, 500 a sync
    assert pods_of(twin, "wide") == []
    assert twin.get("Job", "wide")["status"].get("active") is None
