"""The official ``kubernetes`` Python client against a served twin: CRUD, status, patches and watch."""

from __future__ import annotations

import threading
from collections import deque

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.http.conftest import Served, tutorial_queue_yaml


@pytest.fixture(scope="module")
def api(served: Served) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = served.url
    cfg.ssl_ca_cert = served.ca
    cfg.api_key = {"authorization": f"Bearer {served.token}"}
    return client.ApiClient(cfg)


def test_core_crud(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="pc", labels={"app": "x"}), data={"a": "1"})
    created = v1.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.metadata.resource_version
    got = v1.read_namespaced_config_map("pc", "default")
    assert got.data == {"a": "1"}
    got.data["b"] = "2"
    replaced = v1.replace_namespaced_config_map("pc", "default", got)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    stale = got
    stale.data["c"] = "3"
    with pytest.raises(ApiException) as exc:
        v1.replace_namespaced_config_map("pc", "default", stale)
    assert exc.value.status == 409
    patched = v1.patch_namespaced_config_map("pc", "default", {"data": {"z": "9"}})
    assert patched.data == {"a": "1", "b": "2", "z": "9"}
    names = [c.metadata.name for c in v1.list_namespaced_config_map("default", label_selector="app=x").items]
    assert names == ["pc"]
    assert v1.list_namespaced_config_map("default", label_selector="app=y").items == []
    st = v1.delete_namespaced_config_map("pc", "default")
    assert (st["status"] if isinstance(st, dict) else st.status) == "Success"
    with pytest.raises(ApiException) as exc:
        v1.read_namespaced_config_map("pc", "default")
    assert exc.value.status == 404


def test_custom_objects_and_status(served: Served, api: client.ApiClient) -> None:
    served.twin.apply(tutorial_queue_yaml())
    co = client.CustomObjectsApi(api)
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "team-b"},
        "spec": {"clusterQueue": "cluster-queue"},
    }
    made = co.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "default", "localqueues", lq)
    assert made["metadata"]["namespace"] == "default"
    lst = co.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "localqueues")
    assert {i["metadata"]["name"] for i in lst["items"]} >= {"team-b", "user-queue"}
    assert lst["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    cq = co.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "cluster-queue")
    assert cq["spec"]["resourceGroups"][0]["flavors"][1]["name"] == "on-demand"
    status = co.get_cluster_custom_object_status(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues", "cluster-queue"
    )
    assert status["metadata"]["name"] == "cluster-queue"
    co.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "default", "localqueues", "team-b")
    with pytest.raises(ApiException) as exc:
        co.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "default", "localqueues", "team-b")
    assert exc.value.status == 404


def test_watch_sees_added_modified_deleted_and_resumes(served: Served, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    start_rv = v1.list_namespaced_config_map("default").metadata.resource_version
    seen: list[tuple[str, str, str]] = []
    done = threading.Event()

    def run() -> None:
        w = watch.Watch()
        for ev in w.stream(
            v1.list_namespaced_config_map, "default", resource_version=start_rv, timeout_seconds=20
        ):
            seen.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
            if ev["type"] == "DELETED" and ev["object"].metadata.name == "w1":
                w.stop()
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
    v1.patch_namespaced_config_map("w1", "default", {"data": {"k": "v"}})
    v1.delete_namespaced_config_map("w1", "default")
    assert done.wait(25)
    assert [(t_, n) for t_, n, _ in seen if n == "w1"] == [
        ("ADDED", "w1"),
        ("MODIFIED", "w1"),
        ("DELETED", "w1"),
    ]
    # resuming from the first event replays the rest
    first_rv = next(rv for t_, n, rv in seen if n == "w1")
    replay = [
        e["type"]
        for e in watch.Watch().stream(
            v1.list_namespaced_config_map, "default", resource_version=first_rv, timeout_seconds=1
        )
    ]
    assert replay[:2] == ["MODIFIED", "DELETED"]


def test_watch_from_a_too_old_version_is_gone(served: Served, api: client.ApiClient) -> None:
    store = served.twin.store
    v1 = client.CoreV1Api(api)
    for i in range(3):
        served.twin.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"old{i}"}})
    saved = store.watchers.history
    store.watchers.history = deque(list(saved)[-2:], maxlen=2)  # a short memory, as after a compaction
    try:
        with pytest.raises(ApiException) as exc:
            list(
                watch.Watch().stream(
                    v1.list_namespaced_config_map, "default", resource_version="1", timeout_seconds=2
                )
            )
        assert exc.value.status == 410
        assert "too old resource version" in str(exc.value)
    finally:
        store.watchers.history = deque(store.watchers.history, maxlen=saved.maxlen)


def test_lists_page_with_limit_and_continue(served: Served, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    for i in range(7):
        v1.create_namespaced_config_map(
            "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"page-{i}", labels={"paging": "yes"})),
        )
    first = v1.list_namespaced_config_map("default", limit=3, label_selector="paging=yes")
    names = [c.metadata.name for c in first.items]
    assert names == ["page-0", "page-1", "page-2"] and first.metadata._continue
    assert first.metadata.remaining_item_count is None  # not counted when a selector filters
    token, pages = first.metadata._continue, 1
    while token:
        nxt = v1.list_namespaced_config_map("default", limit=3, label_selector="paging=yes", _continue=token)
        assert nxt.metadata.resource_version == first.metadata.resource_version  # the first page's version
        names += [c.metadata.name for c in nxt.items]
        token, pages = nxt.metadata._continue, pages + 1
    assert names == [f"page-{i}" for i in range(7)] and pages == 3
    whole = v1.list_namespaced_config_map("default", limit=2)
    assert whole.metadata.remaining_item_count == len(v1.list_namespaced_config_map("default").items) - 2
    with pytest.raises(ApiException) as exc:
        v1.list_namespaced_config_map("default", limit=2, _continue="not-a-token")
    assert exc.value.status == 400 and "continue key is not valid" in exc.value.body
    # kubectl pages with --chunk-size and prints one table, the same as unpaged
    chunked = served.kubectl("get", "configmaps", "-l", "paging=yes", "--chunk-size=2", "-o", "name").stdout
    assert chunked.split() == [f"configmap/page-{i}" for i in range(7)]
    for i in range(7):
        v1.delete_namespaced_config_map(f"page-{i}", "default")


def test_a_continued_list_resumes_after_the_tokens_key_even_if_that_object_is_gone(
    served: Served, api: client.ApiClient
) -> None:
    """The next page starts after the last key shown, whatever changed between the pages: the shown object
    deleted, a new one sorting before the token (not shown), one sorting after it (shown)."""
    v1 = client.CoreV1Api(api)
    for ns in ("pg-a", "pg-b"):
        v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        for i in range(4):
            v1.create_namespaced_config_map(
                ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"c{i}", labels={"pg": "y"}))
            )
    first = v1.list_config_map_for_all_namespaces(limit=5, label_selector="pg=y")
    seen = [(c.metadata.namespace, c.metadata.name) for c in first.items]
    assert seen == [("pg-a", f"c{i}") for i in range(4)] + [("pg-b", "c0")]
    v1.delete_namespaced_config_map("c0", "pg-b")  # the token's own key
    for ns, name in (("pg-a", "c9"), ("pg-b", "c5")):  # one before the token, one after
        v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"pg": "y"}))
        )
    rest = v1.list_config_map_for_all_namespaces(
        limit=10, label_selector="pg=y", _continue=first.metadata._continue
    )
    assert [(c.metadata.namespace, c.metadata.name) for c in rest.items] == [
        ("pg-b", "c1"),
        ("pg-b", "c2"),
        ("pg-b", "c3"),
        ("pg-b", "c5"),
    ]
    assert not rest.metadata._continue
    for ns in ("pg-a", "pg-b"):
        v1.delete_namespace(ns)
