"""Real kubectl and the official Python client off the tutorial's happy path, against one served twin with the
tutorial's GKE cluster: what an ML platform engineer types while exploring, answered as a real API server
answers it (field selectors checked per kind, the Event printer, Nodes the clients can decode, ...)."""

from __future__ import annotations

import json
import re
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from flexq.cli.tutorial import create_cluster_request
from tests.http.conftest import Served, tutorial_queue_yaml

EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "explore.1", "namespace": "default"},
    "involvedObject": {"kind": "ConfigMap", "name": "explore", "namespace": "default", "fieldPath": "data"},
    "reason": "Checked",
    "message": "  looked at it  ",
    "type": "Normal",
    "source": {"component": "explorer", "host": "laptop"},
    "reportingComponent": "explorer-ctl",
    "firstTimestamp": "2026-01-01T00:00:00Z",
    "lastTimestamp": "2026-01-01T00:00:00Z",
    "count": 3,
}


@pytest.fixture(scope="module")
def cluster(served: Served) -> Served:
    """The served twin with the tutorial's cluster (its default pool's nodes registered) and Kueue objects."""
    path, body = create_cluster_request("explore")
    served.twin.gke("POST", path, body)
    deadline = time.monotonic() + 60
    while len(served.twin.list("Node")) < 3:
        assert time.monotonic() < deadline, "the default pool's nodes never registered"
        time.sleep(0.2)
    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    served.kubectl("apply", "-f", "-", input=json.dumps(EVENT))
    return served


@pytest.fixture(scope="module")
def api(cluster: Served) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = cluster.url
    cfg.ssl_ca_cert = cluster.ca
    cfg.api_key = {"authorization": f"Bearer {cluster.token}"}
    return client.ApiClient(cfg)


def test_python_client_decodes_nodes(cluster: Served, api: client.ApiClient) -> None:
    # NodeSystemInfo's machineID, systemUUID and bootID are required: the client refused the whole list
    nodes = client.CoreV1Api(api).list_node().items
    assert len(nodes) == 3
    info = nodes[0].status.node_info
    assert len(info.machine_id) == 32 and info.system_uuid.count("-") == 4 and info.boot_id.count("-") == 4
    assert info.kubelet_version.startswith("v1.34")


def test_field_selectors_are_checked_per_kind(cluster: Served, api: client.ApiClient) -> None:
    def refused(*args: str) -> str:
        r = cluster.kubectl("get", *args, check=False)
        assert r.returncode != 0, r.stdout
        return r.stderr

    assert "field label not supported: spec.foo" in refused("pods", "--field-selector", "spec.foo=bar")
    assert '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"' in refused(
        "configmaps", "--field-selector", "data.x=1"
    )
    # a cluster-scoped custom resource selects on its name only; a node has no namespace field either
    assert "field label not supported: metadata.namespace" in refused(
        "clusterqueues", "--field-selector", "metadata.namespace=x"
    )
    assert "field label not supported: metadata.namespace" in refused(
        "nodes", "--field-selector", "metadata.namespace=x"
    )
    assert "field label not supported: spec.clusterQueue" in refused(
        "localqueues", "--field-selector", "spec.clusterQueue=cluster-queue"
    )
    lq = cluster.kubectl("get", "lq", "--field-selector", "metadata.namespace=default", "-o", "name").stdout
    assert lq.split() == ["localqueue.kueue.x-k8s.io/user-queue"]
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api).list_namespaced_pod("default", field_selector="spec.nope=1")
    assert exc.value.status == 400 and "field label not supported: spec.nope" in exc.value.body
    # watches are checked the same way
    r = cluster.kubectl("get", "pods", "-w", "--field-selector", "spec.foo=bar", check=False, timeout=10)
    assert r.returncode != 0 and "field label not supported: spec.foo" in r.stderr

    # spec.unschedulable is selected as "false" when the field is absent (schedulable nodes)
    names = cluster.kubectl("get", "nodes", "-o", "name").stdout.split()
    free = "--field-selector=spec.unschedulable=false"
    assert cluster.kubectl("get", "nodes", free, "-o", "name").stdout.split() == names
    cluster.kubectl("cordon", names[0].split("/")[1])
    try:
        assert cluster.kubectl("get", "nodes", free, "-o", "name").stdout.split() == names[1:]
        cordoned = cluster.kubectl("get", "nodes", "--field-selector=spec.unschedulable!=false", "-o", "name")
        assert cordoned.stdout.split() == names[:1]
    finally:
        cluster.kubectl("uncordon", names[0].split("/")[1])

    # an Event's source is its component; reportingComponent and involvedObject.* select too
    for sel in (
        "source=explorer",
        "involvedObject.name=explore,type=Normal",
        "involvedObject.fieldPath=data",
    ):
        out = cluster.kubectl("get", "events", "--field-selector", sel, "-o", "name").stdout.split()
        assert out == ["event/explore.1"], sel
    assert cluster.kubectl("get", "events", "--field-selector", "source=other", "-o", "name").stdout == ""


def test_events_print_like_the_api_server(cluster: Served) -> None:
    # printEvent: no leading NAME column; Subobject, Source, First Seen, Count and Name only with -o wide
    lines = cluster.kubectl("get", "events", "--field-selector", "reason=Checked").stdout.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[1:] == ["Normal", "Checked", "configmap/explore", "looked", "at", "it"]
    wide = cluster.kubectl("get", "events", "-o", "wide", "--field-selector", "reason=Checked").stdout
    head, row = wide.splitlines()
    assert head.split() == [
        *("LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE"),
        *("FIRST", "SEEN", "COUNT", "NAME"),
    ]
    assert row.split()[1:] == [
        *("Normal", "Checked", "configmap/explore", "data", "explorer,", "laptop", "looked", "at", "it"),
        *(row.split()[-3], "3", "explore.1"),
    ]
    every = cluster.kubectl("get", "events", "-A", "--field-selector", "reason=Checked").stdout.splitlines()
    assert every[0].split()[:3] == ["NAMESPACE", "LAST", "SEEN"] and every[1].split()[0] == "default"


def test_secrets_as_an_api_server_keeps_them(cluster: Served, api: client.ApiClient) -> None:
    # kubectl create secret sends protobuf; get prints printSecret's columns; describe shows sizes only
    cluster.kubectl("create", "secret", "generic", "hf-token", "--from-literal=token=abc123")
    lines = cluster.kubectl("get", "secrets").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "DATA", "AGE"] and lines[1].split()[:3] == [
        "hf-token",
        "Opaque",
        "1",
    ]
    assert cluster.kubectl("get", "secret", "hf-token", "-o", "jsonpath={.data.token}").stdout == "YWJjMTIz"
    assert "token:  6 bytes" in cluster.kubectl("describe", "secret", "hf-token").stdout
    got = client.CoreV1Api(api).read_namespaced_secret("hf-token", "default")
    assert got.type == "Opaque" and got.data == {"token": "YWJjMTIz"}
    out = cluster.kubectl("get", "secrets", "--field-selector", "type=Opaque", "-o", "name").stdout.split()
    assert out == ["secret/hf-token"]

    # stringData is written into data (over a data key of the same name) and never stored itself
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "wandb"},
        "data": {"key": "b2xk", "other": "eA=="},
        "stringData": {"key": "s3cr3t"},
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    stored = json.loads(cluster.kubectl("get", "secret", "wandb", "-o", "json").stdout)
    assert stored["data"] == {"key": "czNjcjN0", "other": "eA=="} and "stringData" not in stored
    manifest["stringData"] = {"key": "new"}
    assert "secret/wandb configured" in cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest)).stdout

    def refused(*args: str, input: str | None = None) -> str:
        r = cluster.kubectl(*args, input=input, check=False)
        assert r.returncode != 0, r.stdout
        return r.stderr

    tls = {**manifest, "metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "YQ=="}}
    del tls["stringData"]
    assert "data[tls.key]: Required value" in refused("create", "-f", "-", input=json.dumps(tls))
    assert 'type: Invalid value: "example.com/other": field is immutable' in refused(
        "patch", "secret", "wandb", "-p", '{"type": "example.com/other"}'
    )
    cluster.kubectl("patch", "secret", "wandb", "-p", '{"immutable": true}')
    assert "data: Forbidden: field is immutable when `immutable` is set" in refused(
        "patch", "secret", "wandb", "-p", '{"stringData": {"key": "x"}}'
    )
    assert "illegal base64 data" in refused(
        "create", "-f", "-", input=json.dumps({**tls, "type": "Opaque", "data": {"k": "!!"}})
    )


APPLIED = """apiVersion: v1
kind: ServiceAccount
metadata: {name: trainer}
secrets: [{name: s1}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [VERBS]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""


def test_apply_changes_every_built_in_kind(cluster: Served) -> None:
    # client-side apply sends a strategic merge patch for every kind compiled into kubectl: the API server
    # takes it for all built-ins (a Role or Deployment changed and re-applied was refused with a 415)
    def apply(verbs: str, replicas: int, sa_secret: str = "s1") -> str:
        doc = APPLIED.replace("VERBS", verbs).replace("REPLICAS", str(replicas)).replace("s1", sa_secret)
        return cluster.kubectl("apply", "-f", "-", input=doc).stdout

    assert apply("get", 1).count(" created") == 3
    out = apply("get, list", 2, "s2")
    for name in ("serviceaccount/trainer", "role.rbac.authorization.k8s.io/reader", "deployment.apps/web"):
        assert f"{name} configured" in out, out
    assert apply("get, list", 2, "s2").count(" unchanged") == 3
    role = json.loads(cluster.kubectl("get", "role", "reader", "-o", "json").stdout)
    assert role["rules"][0]["verbs"] == ["get", "list"]
    assert cluster.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}").stdout == "2"
    # a ServiceAccount's secrets merge by name under a strategic merge patch
    cluster.kubectl("patch", "sa", "trainer", "-p", '{"secrets": [{"name": "s3"}]}')
    sa = json.loads(cluster.kubectl("get", "sa", "trainer", "-o", "json").stdout)
    assert sorted(s["name"] for s in sa["secrets"]) == ["s2", "s3"]


def test_describe_node_shows_its_lease(cluster: Served) -> None:
    node = cluster.kubectl("get", "nodes", "-o", "name").stdout.split()[0].split("/")[1]
    out = cluster.kubectl("describe", "node", node).stdout
    assert "Failed to get lease" not in out
    assert f"HolderIdentity:  {node}" in out
    leases = cluster.kubectl("get", "leases", "-A").stdout.splitlines()
    assert leases[0].split() == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
    assert sum(1 for ln in leases[1:] if ln.split()[0] == "kube-node-lease") == 3


def test_logs_with_timestamps_since_and_bad_options(cluster: Served) -> None:
    cluster.kubectl("run", "logger", "--image=busybox", "--restart=Never")
    deadline = time.monotonic() + 30
    while not cluster.kubectl("logs", "logger", check=False).stdout:
        assert time.monotonic() < deadline, "the pod never logged"
        time.sleep(0.2)
    plain = cluster.kubectl("logs", "logger").stdout.splitlines()
    stamped = cluster.kubectl("logs", "logger", "--timestamps").stdout.splitlines()
    assert len(stamped) >= len(plain) >= 1
    # the kubelet's format: RFC 3339 with nine fractional digits, then a space and the line
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamped[0].split(" ", 1)[0])
    assert stamped[0].split(" ", 1)[1] == plain[0]
    # the same line keeps the time it was written
    assert cluster.kubectl("logs", "logger", "--timestamps").stdout.splitlines()[0] == stamped[0]
    assert cluster.kubectl("logs", "logger", "--since=1h").stdout.splitlines()[: len(plain)] == plain
    assert (
        cluster.kubectl("logs", "logger", "--since-time=2000-01-01T00:00:00Z").stdout.splitlines()[0]
        == plain[0]
    )
    assert cluster.kubectl("logs", "logger", "--since-time=2999-01-01T00:00:00Z").stdout == ""
    assert cluster.kubectl("logs", "logger", "--tail=1", "--timestamps").stdout.count("\n") == 1

    def refused(query: str) -> str:
        r = cluster.http("GET", f"/api/v1/namespaces/default/pods/logger/log?{query}")
        assert r.status_code == 422, (query, r.status_code, r.text)
        return r.json()["message"]

    assert refused("sinceSeconds=0") == (
        'PodLogOptions "logger" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0'
    )
    assert "tailLines: Invalid value: -3: must be greater than or equal to 0" in refused("tailLines=-3")
    assert "at most one of `sinceTime` or `sinceSeconds` may be specified" in refused(
        "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z"
    )


def test_explain_shows_untyped_fields_as_objects(cluster: Served) -> None:
    # a field the twin keeps as sent is an Object to kubectl explain, as in a CRD's schema, without the
    # twin's own class name or docstring
    out = cluster.kubectl("explain", "rayjob.status").stdout
    assert "FIELD: status <Object>" in out and "Loose" not in out and "unknown fields" not in out
    deep = cluster.kubectl("explain", "rayjob.spec.rayClusterSpec").stdout
    assert "autoscalerOptions\t<Object>" in deep and "Loose" not in deep
