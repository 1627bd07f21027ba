"""The kubelet and the simulated executor through the Twin SDK, on the virtual clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from flexq import Twin
from flexq.runtime.executor import PodKey, PodLaunch, PodRunState

from .kube_builders import add_node, condition, events, kubelet, node, pod, tpu_node

RUN30 = {"twin.flexq.dev/run-seconds": "30"}


def test_pod_runs_then_succeeds_with_kubelet_status(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("p", annotations=RUN30))
    twin.advance(10)
    p = twin.get("Pod", "p")
    st = p["status"]
    assert st["phase"] == "Running"
    assert [c["type"] for c in st["conditions"]] == [
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert all(c["status"] == "True" for c in st["conditions"])
    assert st["hostIP"] == "10.128.0.2" and st["podIP"].startswith("10.64.")
    assert st["startTime"] == "2027-01-01T00:00:00Z" and st["qosClass"] == "Burstable"
    cs = st["containerStatuses"][0]
    assert cs["ready"] and cs["started"] and cs["state"]["running"]["startedAt"] == "2027-01-01T00:00:00Z"
    assert events(twin, "p", "Started")[0]["message"] == "Started container main"
    twin.advance(25)
    st = twin.get("Pod", "p")["status"]
    assert st["phase"] == "Succeeded"
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"], term["finishedAt"]) == (0, "Completed", "2027-01-01T00:00:30Z")
    assert condition(twin.get("Pod", "p"), "Ready")["reason"] == "PodCompleted"
    log = twin.logs("p")
    assert "running on node n1 for 30s" in log and "finished after 30s: Succeeded" in log


def test_failed_outcome_and_restart_policy_on_failure_backs_off(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("never", annotations={**RUN30, "twin.flexq.dev/outcome": "Failed"}))
    twin.apply(pod("again", restart="OnFailure", annotations={**RUN30, "twin.flexq.dev/outcome": "Failed"}))
    twin.advance(31)
    term = twin.get("Pod", "never")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert twin.get("Pod", "never")["status"]["phase"] == "Failed" and (term["exitCode"], term["reason"]) == (
        1,
        "Error",
    )
    st = twin.get("Pod", "again")["status"]
    cs = st["containerStatuses"][0]
    assert st["phase"] == "Running" and cs["restartCount"] == 1
    assert (
        cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        and cs["lastState"]["terminated"]["exitCode"] == 1
    )
    twin.advance(10)  # back-off 10 s, then it runs again for 30 s
    assert "running" in twin.get("Pod", "again")["status"]["containerStatuses"][0]["state"]
    twin.advance(30)
    cs = twin.get("Pod", "again")["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 2 and "back-off 20s" in cs["state"]["waiting"]["message"]
    assert events(twin, "again", "BackOff")


def test_always_pods_run_until_deleted_and_take_their_logs_along(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("server", restart="Always", annotations=RUN30))
    twin.advance(3600)
    assert twin.get("Pod", "server")["status"]["phase"] == "Running"
    assert "until stopped" in twin.logs("server")
    twin.delete("Pod", "server")
    twin.advance(1)
    assert twin.logs("server") == ""
    assert not kubelet(twin).running


def test_missing_configmap_keeps_container_creating_until_it_exists(twin: Twin) -> None:
    add_node(twin, node("n1"))
    p = pod("head", annotations=RUN30)
    p["spec"]["volumes"] = [{"name": "script", "configMap": {"name": "jax-train-script"}}]
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "script", "mountPath": "/app"}]
    twin.apply(p)
    twin.advance(5)
    st = twin.get("Pod", "head")["status"]
    assert st["phase"] == "Pending"
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    assert (
        events(twin, "head", "FailedMount")[0]["message"]
        == 'MountVolume.SetUp failed for volume "script" : configmap "jax-train-script" not found'
    )
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": "print('hi')"},
        }
    )
    twin.advance(1)
    assert twin.get("Pod", "head")["status"]["phase"] == "Running"
    assert "mounted /app: train.py" in twin.logs("head")


def test_missing_secret_volume_keeps_container_creating_until_it_exists(twin: Twin) -> None:
    add_node(twin, node("n1"))
    p = pod("head", annotations=RUN30)
    p["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": "gcs-key"}}]
    twin.apply(p)
    twin.advance(5)
    st = twin.get("Pod", "head")["status"]
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    assert (
        events(twin, "head", "FailedMount")[0]["message"]
        == 'MountVolume.SetUp failed for volume "creds" : secret "gcs-key" not found'
    )
    twin.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "gcs-key"}, "data": {}})
    twin.advance(1)
    assert twin.get("Pod", "head")["status"]["phase"] == "Running"


def test_env_from_a_missing_configmap_is_create_container_config_error(twin: Twin) -> None:
    add_node(twin, node("n1"))
    p = pod("w", annotations=RUN30)
    p["spec"]["containers"][0]["env"] = [
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "x", "optional": True}}},
    ]
    twin.apply(p)
    twin.advance(5)
    waiting = twin.get("Pod", "w")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'configmap "settings" not found'}
    assert events(twin, "w", "Failed")[0]["message"] == 'Error: configmap "settings" not found'
    # the ConfigMap without the key: still blocked, now on the key (kubelet_pods.go's message)
    twin.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}
    )
    twin.advance(1)
    waiting = twin.get("Pod", "w")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["message"] == "couldn't find key mode in ConfigMap default/settings"
    twin.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    )
    twin.advance(1)
    assert twin.get("Pod", "w")["status"]["phase"] == "Running"


def test_an_image_reference_the_kubelet_cannot_parse_is_invalid_image_name(twin: Twin) -> None:
    add_node(twin, node("n1"))
    p = pod("bad", annotations=RUN30)
    p["spec"]["containers"][0]["image"] = "Rayproject/Ray:2.53.0"
    twin.apply(p)
    twin.advance(60)
    st = twin.get("Pod", "bad")["status"]
    assert st["phase"] == "Pending"
    waiting = st["containerStatuses"][0]["state"]["waiting"]
    msg = (
        'Failed to apply default image tag "Rayproject/Ray:2.53.0": couldn\'t parse image reference '
        '"Rayproject/Ray:2.53.0": invalid reference format: repository name must be lowercase'
    )
    assert waiting == {"reason": "InvalidImageName", "message": msg}
    assert [e["message"] for e in events(twin, "bad", "InspectFailed")] == [msg]


def test_deleted_node_fails_its_pods_as_node_lost(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("p", restart="Always"))
    twin.advance(1)
    twin.delete("Node", "n1")
    twin.advance(1)
    st = twin.get("Pod", "p")["status"]
    assert (st["phase"], st["reason"]) == ("Failed", "NodeLost")
    assert condition(twin.get("Pod", "p"), "DisruptionTarget")["reason"] == "DeletionByPodGC"
    assert st["containerStatuses"][0]["state"]["terminated"]["reason"] == "ContainerStatusUnknown"


def test_tpu_hosts_get_gke_tpu_environment(twin: Twin) -> None:
    for i in range(4):
        add_node(twin, tpu_node(f"gke-tpu-{i}", "on-demand"))
    tol = [{"key": "google.com/tpu", "operator": "Exists"}]
    for i in range(4):
        twin.apply(pod(f"w{i}", tpu=4, tolerations=tol, restart="Always"))
    twin.advance(1)
    envs = {}
    for i in range(4):
        line = next(x for x in twin.logs(f"w{i}").splitlines() if "TPU environment" in x)
        envs[twin.get("Pod", f"w{i}")["spec"]["nodeName"]] = dict(
            kv.split("=", 1) for kv in line.split(": ")[1].split()
        )
    assert sorted(e["TPU_WORKER_ID"] for e in envs.values()) == ["0", "1", "2", "3"]
    assert envs["gke-tpu-2"] == {
        "TPU_ACCELERATOR_TYPE": "v6e-16",
        "TPU_TOPOLOGY": "4x4",
        "TPU_WORKER_ID": "2",
        "TPU_NAME": "on-demand",
        "TPU_WORKER_HOSTNAMES": "gke-tpu-0,gke-tpu-1,gke-tpu-2,gke-tpu-3",
    }


@dataclass
class ManualExecutor:
    """A test executor: claims pods labelled ``manual``; the test moves them by hand."""

    name: str = "manual"
    launches: dict[PodKey, PodLaunch] = field(default_factory=dict)
    states: dict[PodKey, PodRunState] = field(default_factory=dict)
    stopped: list[PodKey] = field(default_factory=list)

    def accepts(self, pod: dict, owners: object = ()) -> bool:
        return "manual" in (pod["metadata"].get("labels") or {})

    def start(self, launch: PodLaunch) -> None:
        key = (launch.pod["metadata"]["namespace"], launch.pod["metadata"]["name"])
        self.launches[key] = launch
        self.states[key] = PodRunState("Pending", reason="ContainerCreating")

    def poll(self, key: PodKey) -> PodRunState | None:
        return self.states.get(key)

    def stop(self, key: PodKey) -> None:
        self.stopped.append(key)

    def shutdown(self) -> None:
        pass

    def move(self, key: PodKey, state: PodRunState) -> None:
        self.states[key] = state
        self.launches[key].notify()


def test_first_accepting_executor_runs_the_pod_and_notify_wakes_the_kubelet(twin: Twin) -> None:
    ex = ManualExecutor()
    twin.core.current().executors.insert(0, ex)
    add_node(twin, node("n1"))
    p = pod("m", restart="Always")
    p["metadata"]["labels"] = {"manual": "yes"}
    twin.apply(p)
    twin.apply(pod("other", restart="Always"))
    twin.advance(1)
    assert list(ex.launches) == [("default", "m")]
    launch = ex.launches[("default", "m")]
    assert launch.node["metadata"]["name"] == "n1" and launch.now is not None and launch.now() == twin.now()
    assert twin.get("Pod", "m")["status"]["phase"] == "Pending"
    ex.move(("default", "m"), PodRunState("Running", ready=False, pod_ip="127.0.0.1"))
    twin.advance(1)
    st = twin.get("Pod", "m")["status"]
    assert (
        st["phase"] == "Running"
        and st["podIP"] == "127.0.0.1"
        and condition({"status": st}, "Ready")["status"] == "False"
    )
    ex.move(("default", "m"), PodRunState("Running", ready=True, pod_ip="127.0.0.1"))
    twin.advance(1)
    assert condition(twin.get("Pod", "m"), "Ready")["status"] == "True"
    twin.delete("Pod", "m")
    twin.advance(1)
    assert ex.stopped == [("default", "m")]


def test_a_restarted_twin_resumes_running_pods_on_their_original_clock(tmp_path) -> None:
    from flexq.clock import DEFAULT_EPOCH

    first = Twin(clock="virtual", home=tmp_path)
    add_node(first, node("n1"))
    first.apply(pod("p", annotations={"twin.flexq.dev/run-seconds": "60"}))
    first.advance(20)
    assert first.get("Pod", "p")["status"]["phase"] == "Running"
    first.close()
    second = Twin(clock="virtual", home=tmp_path, start=DEFAULT_EPOCH + 20)
    try:
        second.advance(39)
        assert second.get("Pod", "p")["status"]["phase"] == "Running"
        second.advance(2)
        st = second.get("Pod", "p")["status"]
        assert st["phase"] == "Succeeded"
        assert st["containerStatuses"][0]["state"]["terminated"]["finishedAt"] == "2027-01-01T00:01:00Z"
    finally:
        second.close()


def test_init_containers_show_while_the_executor_is_pending(twin: Twin) -> None:
    ex = ManualExecutor()
    twin.core.current().executors.insert(0, ex)
    add_node(twin, node("n1"))
    p = pod("worker", restart="Always")
    p["metadata"]["labels"] = {"manual": "yes"}
    p["spec"]["initContainers"] = [{"name": "wait-gcs-ready", "image": "ray"}]
    twin.apply(p)
    twin.advance(1)
    st = twin.get("Pod", "worker")["status"]
    assert st["phase"] == "Pending"
    assert condition({"status": st}, "Initialized")["reason"] == "ContainersNotInitialized"
    assert "running" in st["initContainerStatuses"][0]["state"]
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    ex.move(("default", "worker"), PodRunState("Running", ready=True))
    twin.advance(1)
    st = twin.get("Pod", "worker")["status"]
    assert condition({"status": st}, "Initialized")["status"] == "True"
    assert st["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_logs_of_a_finished_pod_go_with_it_and_a_new_pod_of_that_name_starts_clean(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("p", annotations={"twin.flexq.dev/run-seconds": "5"}))
    twin.advance(6)
    assert "finished after 5s" in twin.logs("p")
    twin.delete("Pod", "p")
    twin.advance(1)
    assert twin.logs("p") == ""
    twin.apply(pod("p", annotations={"twin.flexq.dev/run-seconds": "7"}))
    twin.advance(1)
    assert "for 7s" in twin.logs("p") and "for 5s" not in twin.logs("p")


def test_live_twin_runs_a_simulated_pod_on_the_wall_clock() -> None:
    live = Twin(clock="real", executor="simulated")
    try:
        live.core.loop.call_sync(lambda: add_node(live, node("n1")))
        live.apply(pod("quick", annotations={"twin.flexq.dev/run-seconds": "0.3"}))
        deadline = 100
        while deadline and live.get("Pod", "quick").get("status", {}).get("phase") != "Succeeded":
            live.advance(0.05)
            deadline -= 1
        assert live.get("Pod", "quick")["status"]["phase"] == "Succeeded"
    finally:
        live.close()


def test_noexecute_taints_evict_pods_that_do_not_tolerate_them(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("plain", restart="Always"))
    twin.apply(
        pod(
            "patient",
            restart="Always",
            tolerations=[
                {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
            ],
        )
    )
    twin.apply(pod("stoic", restart="Always", tolerations=[{"key": "maintenance", "operator": "Exists"}]))
    twin.advance(5)
    twin.patch(
        "Node",
        "n1",
        {
            "spec": {
                "taints": [
                    {
                        "key": "maintenance",
                        "value": "true",
                        "effect": "NoExecute",
                        "timeAdded": "2027-01-01T00:00:05Z",
                    }
                ]
            }
        },
    )
    twin.advance(1)
    assert twin.try_get("Pod", "plain") is None
    assert (
        events(twin, "plain", "TaintManagerEviction")[0]["message"]
        == "Marking for deletion Pod default/plain"
    )
    assert twin.get("Pod", "patient")["status"]["phase"] == "Running"
    twin.advance(30)
    assert twin.try_get("Pod", "patient") is None
    assert twin.get("Pod", "stoic")["status"]["phase"] == "Running"
