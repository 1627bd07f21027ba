"""core/v1 and batch/v1 objects read back as a real API server writes them: the ``SetDefaults_*`` of
``pkg/apis/core/v1`` and ``pkg/apis/batch/v1``, and what the registry strategies, the service IP allocator
and the priority admission plugin set on create, on every path (``Twin.apply``, the store, controllers).
Pod templates embedded in custom resources stay as written."""

from __future__ import annotations

import copy

import pytest

from flexq import Twin
from flexq.api.core import Container, PodSpec, ServiceSpec
from flexq.api.core_defaults import image_pull_policy, qos_class
from flexq.api.kinds import REGISTRY
from flexq.api.scheme import ADMIT, admit
from flexq.errors import Forbidden, Invalid


def _pod(*containers: dict, **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers or [{"name": "c", "image": "busybox"}]), **spec},
    }


def _job(name: str = "j", **spec: object) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
            },
            **spec,
        },
    }


def _svc(**spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("registry.local:5000/team/img", "Always"),  # a registry port is not a tag
        ("registry.local:5000/team/img:v1", "IfNotPresent"),
        ("img@sha256:" + "a" * 64, "IfNotPresent"),
        ("img:latest@sha256:" + "a" * 64, "Always"),
    ],
    ids=[
        "no-tag",
        "latest",
        "tag",
        "registry-port-no-tag",
        "registry-port-tag",
        "digest",
        "latest-and-digest",
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_a_pod_reads_back_with_the_api_servers_defaults(twin: Twin) -> None:
    pod = twin.apply(
        _pod(
            {
                "name": "main",
                "image": "busybox",
                "ports": [{"containerPort": 8080}],
                "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "readinessProbe": {"httpGet": {"port": 8080}},
                "livenessProbe": {"grpc": {"port": 9090}},
                "volumeMounts": [{"name": "script", "mountPath": "/s"}],
            },
            initContainers=[{"name": "init", "image": "busybox:1.36"}],
            volumes=[
                {"name": "script", "configMap": {"name": "train"}},
                {"name": "scratch"},
                {"name": "key", "secret": {"secretName": "k", "defaultMode": 0o600}},
            ],
        )
    )[0]
    spec = pod["spec"]
    main, init = spec["containers"][0], spec["initContainers"][0]
    assert {
        k: main[k]
        for k in ("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy", "resources")
    } == {
        "imagePullPolicy": "Always",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
    }
    assert init["imagePullPolicy"] == "IfNotPresent" and init["terminationMessagePolicy"] == "File"
    assert main["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert main["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "metadata.name"}
    assert main["readinessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert main["livenessProbe"]["grpc"] == {"port": 9090, "service": ""}
    assert spec["volumes"] == [
        {"name": "script", "configMap": {"name": "train", "defaultMode": 420}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "key", "secret": {"secretName": "k", "defaultMode": 0o600}},
    ]
    assert {
        k: spec[k]
        for k in (
            "dnsPolicy",
            "enableServiceLinks",
            "restartPolicy",
            "schedulerName",
            "securityContext",
            "terminationGracePeriodSeconds",
            "priority",
            "preemptionPolicy",
        )
    } == {
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert pod["metadata"]["generation"] == 1  # PodObservedGenerationTracking (v1.33+)


def test_what_the_user_set_is_kept(twin: Twin) -> None:
    pod = twin.apply(
        _pod(
            {
                "name": "c",
                "image": "busybox",
                "imagePullPolicy": "Never",
                "terminationMessagePolicy": "FallbackToLogsOnError",
            },
            restartPolicy="Never",
            dnsPolicy="Default",
            terminationGracePeriodSeconds=0,
            enableServiceLinks=False,
            schedulerName="other",
        )
    )[0]
    spec = pod["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert (
        spec["restartPolicy"],
        spec["dnsPolicy"],
        spec["terminationGracePeriodSeconds"],
        spec["enableServiceLinks"],
        spec["schedulerName"],
    ) == ("Never", "Default", 0, False, "other")


def test_requests_default_to_limits_and_give_the_qos_class(twin: Twin) -> None:
    pod = twin.apply(
        _pod({"name": "c", "image": "x", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}})
    )[0]
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert pod["status"]["qosClass"] == "Guaranteed"


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        (
            {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}},
            "BestEffort",
        ),  # cpu/memory only
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}, "Burstable"),
        ({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}, "Burstable"),  # no memory limit
    ],
    ids=["none", "tpu-only", "cpu-request", "requests-below-limits", "equal", "cpu-only"],
)
def test_qos_class(resources: dict, qos: str) -> None:
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": resources}]}}) == qos


@pytest.mark.parametrize(
    ("class_name", "priority"),
    [
        (None, 0),
        ("system-cluster-critical", 2000000000),
        ("system-node-critical", 2000001000),
    ],
)
def test_priority_comes_from_the_priority_class(twin: Twin, class_name: str | None, priority: int) -> None:
    spec = {"priorityClassName": class_name} if class_name else {}
    pod = twin.apply(_pod(**spec))[0]
    assert pod["spec"]["priority"] == priority
    assert pod["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_an_unknown_priority_class_is_refused(twin: Twin) -> None:
    with pytest.raises(Forbidden, match='pods "p" is forbidden: no PriorityClass with name high was found'):
        twin.apply(_pod(priorityClassName="high"))
    assert twin.list("Pod") == []


def test_a_job_template_gets_pod_spec_defaults_but_not_the_pod_only_ones(twin: Twin) -> None:
    job = twin.apply(_job())[0]
    tmpl = job["spec"]["template"]["spec"]
    assert tmpl["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert tmpl["securityContext"] == {} and tmpl["schedulerName"] == "default-scheduler"
    assert "enableServiceLinks" not in tmpl and "priority" not in tmpl


def test_the_job_controllers_pods_get_the_pod_defaults_too(twin: Twin) -> None:
    twin.apply(_job())
    twin.run_until_idle()
    pods = twin.list("Pod", namespace="default")
    assert pods, "the job controller created no pod"
    for pod in pods:
        assert pod["spec"]["enableServiceLinks"] is True and pod["spec"]["priority"] == 0
        assert pod["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
        assert pod["status"]["qosClass"] == "BestEffort"


def test_job_defaults(twin: Twin) -> None:
    job = twin.apply(_job())[0]
    spec, uid = job["spec"], job["metadata"]["uid"]
    assert {
        k: spec[k]
        for k in (
            "completions",
            "parallelism",
            "backoffLimit",
            "completionMode",
            "suspend",
            "podReplacementPolicy",
            "manualSelector",
        )
    } == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "manualSelector": False,
    }
    # a Job without labels takes its template's, the generated selector labels included
    assert job["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    assert job["status"] == {}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"parallelism": 3}, {"parallelism": 3, "backoffLimit": 6}),  # a work queue: completions stay unset
        ({"completions": 4}, {"completions": 4, "parallelism": 1}),
        (
            {"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1},
            {"backoffLimit": 2**31 - 1},
        ),
        (
            {
                "podFailurePolicy": {
                    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
                }
            },
            {
                "podReplacementPolicy": "Failed",
                "podFailurePolicy": {
                    "rules": [
                        {
                            "action": "Ignore",
                            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                        }
                    ]
                },
            },
        ),
    ],
    ids=["parallelism-only", "completions-only", "backoff-limit-per-index", "pod-failure-policy"],
)
def test_job_defaults_that_depend_on_the_spec(spec: dict, expected: dict) -> None:
    out = admit(REGISTRY.resolve("Job"), _job(**spec))["spec"]
    assert {k: out.get(k) for k in expected} == expected
    if "completions" not in spec and "parallelism" in spec:
        assert "completions" not in out


def test_a_job_with_labels_keeps_them_and_one_without_takes_the_templates(twin: Twin) -> None:
    own = _job("own")
    own["metadata"]["labels"] = {"team": "a"}
    own["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    assert twin.apply(own)[0]["metadata"]["labels"] == {"team": "a"}
    bare = _job("bare")
    bare["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    assert twin.apply(bare)[0]["metadata"]["labels"] == {"app": "x"}  # as on create, before the selector


def test_an_indexed_job_needs_completions() -> None:
    with pytest.raises(Invalid) as err:
        admit(REGISTRY.resolve("Job"), _job(completionMode="Indexed", parallelism=2))
    assert [c.field for c in err.value.causes] == ["spec.completions"]


def test_a_job_whose_template_has_no_restart_policy_is_refused_as_always() -> None:
    job = _job()
    del job["spec"]["template"]["spec"]["restartPolicy"]
    with pytest.raises(Invalid, match='Unsupported value: "Always"'):
        admit(REGISTRY.resolve("Job"), job)


def test_a_service_reads_back_with_its_defaults_and_allocations(twin: Twin) -> None:
    svc = twin.apply(
        _svc(
            selector={"app": "x"}, ports=[{"port": 80}, {"name": "m", "port": 8080, "targetPort": "metrics"}]
        )
    )[0]
    spec = svc["spec"]
    assert spec["ports"] == [
        {"port": 80, "protocol": "TCP", "targetPort": 80},
        {"name": "m", "port": 8080, "targetPort": "metrics", "protocol": "TCP"},
    ]
    assert {
        k: spec[k]
        for k in ("type", "sessionAffinity", "internalTrafficPolicy", "ipFamilies", "ipFamilyPolicy")
    } == {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
    }
    assert spec["clusterIPs"] == [spec["clusterIP"]] and spec["clusterIP"].startswith("34.118.")
    assert "externalTrafficPolicy" not in spec
    assert svc["status"] == {"loadBalancer": {}}


@pytest.mark.parametrize(
    ("spec", "expected", "absent"),
    [
        (
            {"clusterIP": "None", "selector": {"a": "b"}},
            {"clusterIPs": ["None"], "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]},
            [],
        ),
        ({"clusterIP": "None"}, {"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4"]}, []),
        (
            {"type": "ExternalName", "externalName": "example.com"},
            {"sessionAffinity": "None"},
            ["clusterIP", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"],
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80}]},
            {"externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster"},
            ["allocateLoadBalancerNodePorts"],
        ),
        (
            {"type": "LoadBalancer", "ports": [{"port": 80}]},
            {"externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True},
            [],
        ),
        (
            {"sessionAffinity": "ClientIP"},
            {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}},
            [],
        ),
    ],
    ids=["headless", "headless-no-selector", "external-name", "node-port", "load-balancer", "client-ip"],
)
def test_service_defaults_by_type(twin: Twin, spec: dict, expected: dict, absent: list[str]) -> None:
    out = twin.apply(_svc(**spec))[0]["spec"]
    assert {k: out.get(k) for k in expected} == expected
    assert [k for k in absent if k in out] == []


def test_a_namespace_gets_its_label_finalizer_and_phase_and_keeps_its_spec_on_update(twin: Twin) -> None:
    ns = twin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})[0]
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    changed = copy.deepcopy(ns)
    changed["metadata"]["labels"]["team"] = "a"
    changed["spec"] = {}
    out = twin.store.update(changed, admission=ADMIT)
    assert out["spec"] == {"finalizers": ["kubernetes"]}
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a", "team": "a"}


def test_pod_templates_in_custom_resources_stay_as_written() -> None:
    template = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}]}}
    rc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": template}},
    }
    out = admit(REGISTRY.resolve("RayCluster"), rc)
    assert out["spec"]["headGroupSpec"]["template"] == template


@pytest.mark.parametrize("kind", ["Pod", "Service", "Job", "Namespace"])
def test_reapplying_an_unchanged_manifest_writes_nothing(twin: Twin, kind: str) -> None:
    manifest = {
        "Pod": _pod(
            {"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}, volumes=[{"name": "v"}]
        ),
        "Service": _svc(selector={"a": "b"}, ports=[{"port": 80}]),
        "Job": _job(),
        "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}},
    }[kind]
    first = twin.apply(copy.deepcopy(manifest))[0]
    before = twin.store.resource_version
    again = twin.apply(copy.deepcopy(manifest))[0]
    assert twin.store.resource_version == before
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("model", "field", "key", "strategy"),
    [
        (PodSpec, "containers", "name", "merge"),
        (PodSpec, "initContainers", "name", "merge"),
        (PodSpec, "volumes", "name", "merge,retainKeys"),
        (Container, "ports", "containerPort", "merge"),
        (Container, "env", "name", "merge"),
        (Container, "volumeMounts", "mountPath", "merge"),
        (ServiceSpec, "ports", "port", "merge"),
    ],
)
def test_lists_publish_their_patch_merge_keys(model: type, field: str, key: str, strategy: str) -> None:
    """kubectl's client-side apply merges these lists by key (read from the OpenAPI schema), so the fields
    defaulted inside them do not make a re-applied manifest "configured"."""
    prop = model.model_json_schema(by_alias=True)["properties"][field]
    assert (prop.get("x-kubernetes-patch-merge-key"), prop.get("x-kubernetes-patch-strategy")) == (
        key,
        strategy,
    )


NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
TPU = {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (None, [NOT_READY, UNREACHABLE]),
        ([TPU], [TPU, NOT_READY, UNREACHABLE]),
        # already tolerated (by key, by an empty key, or with no effect): nothing added for it
        ([{**NOT_READY, "tolerationSeconds": 30}], [{**NOT_READY, "tolerationSeconds": 30}, UNREACHABLE]),
        ([{"operator": "Exists"}], [{"operator": "Exists"}]),
        (
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, NOT_READY],
        ),
    ],
)
def test_default_toleration_seconds_on_create(twin: Twin, given: list | None, want: list) -> None:
    spec = {"tolerations": given} if given is not None else {}
    pod = twin.apply(_pod(**spec))[0]
    assert pod["spec"]["tolerations"] == want
    # an update does not add them again (admission on create only)
    again = twin.patch("Pod", "p", {"metadata": {"labels": {"touched": "yes"}}}, namespace="default")
    assert again["spec"]["tolerations"] == want


def test_generation_only_where_the_api_server_keeps_one(twin: Twin) -> None:
    twin.apply(_svc(ports=[{"port": 80}], selector={"app": "a"}))
    twin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}})
    twin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    twin.apply(_job())
    twin.apply(_pod())
    for kind, name, ns in (
        ("Service", "s", "default"),
        ("ConfigMap", "cm", "default"),
        ("Namespace", "team-a", None),
    ):
        assert "generation" not in twin.get(kind, name, ns)["metadata"], kind
    twin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "2"}})
    assert "generation" not in twin.get("ConfigMap", "cm", "default")["metadata"]
    assert twin.get("Job", "j", "default")["metadata"]["generation"] == 1
    assert twin.get("Pod", "p", "default")["metadata"]["generation"] == 1


def test_node_ports_are_allocated_for_node_port_services(twin: Twin) -> None:
    svc = twin.apply(
        _svc(
            type="NodePort",
            selector={"app": "a"},
            ports=[{"name": "http", "port": 80}, {"name": "x", "port": 81, "nodePort": 31000}],
        )
    )[0]
    ports = svc["spec"]["ports"]
    assert 30000 <= ports[0]["nodePort"] <= 32767 and ports[0]["nodePort"] != 31000
    assert ports[1]["nodePort"] == 31000
    plain = twin.apply({**_svc(selector={"app": "b"}, ports=[{"port": 80}]), "metadata": {"name": "plain"}})[
        0
    ]
    assert "nodePort" not in plain["spec"]["ports"][0]


def test_defaulting_leaves_the_callers_object_alone_unless_it_is_the_store_s_own_copy() -> None:
    """``admit`` defaults a copy of what it is given; the store, which admits a copy it made itself, lets the
    defaulters fill that copy in place (one copy fewer per write): the same stored object either way."""
    info = REGISTRY.by_gvk("v1", "Pod")
    given = _pod()
    kept = copy.deepcopy(given)
    shared = admit(info, given)
    assert given == kept  # not defaulted in place
    own = copy.deepcopy(given)
    assert admit(info, own, private=True) == shared
    assert own["spec"]["containers"][0]["imagePullPolicy"] == "Always"  # the store's copy, filled in place
    twin = Twin(clock="virtual")
    try:
        body = _pod()
        twin.store.create(body)
        assert body == _pod()  # the store copies what it is given before it is defaulted
    finally:
        twin.close()
