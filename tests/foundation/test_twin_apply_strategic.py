"""``Twin.apply`` of a built-in kind sends what kubectl sends: a three-way *strategic* merge patch, so lists
merge by their patch merge key (containers and env by name, ports by containerPort, volumes by name,
volumeMounts by mountPath, finalizers as a set), an item a webhook or controller added stays, and an item
dropped from the manifest goes; lists without a merge strategy (tolerations, args) are replaced whole, and
custom resources keep JSON merge patch. Also the server side: the directives kubectl sends over HTTP."""

from __future__ import annotations

import copy
import json

import pytest

from flexq import Twin
from flexq.errors import BadRequest, UnsupportedMediaType
from flexq.store.patch import patch_schema, strategic_merge_patch, three_way_strategic_patch
from flexq.twin import LAST_APPLIED

POD_SPEC = patch_schema("", "Pod")


def template(containers: list[dict], volumes: list[dict] | None = None) -> dict:
    spec: dict = {"containers": containers}
    if volumes is not None:
        spec["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {"metadata": {"labels": {"app": "t"}}, "spec": spec},
    }


def main(
    image: str = "busybox:1",
    env: tuple[str, ...] = ("A",),
    mounts: tuple[str, ...] = ("/data",),
    ports: tuple[int, ...] = (8080,),
) -> dict:
    return {
        "name": "main",
        "image": image,
        "env": [{"name": e, "value": e.lower()} for e in env],
        "volumeMounts": [{"name": "data", "mountPath": m} for m in mounts],
        "ports": [{"containerPort": p} for p in ports],
    }


def names(items: list[dict], key: str = "name") -> list:
    return [i[key] for i in items]


def controller_adds(twin: Twin, kind: str, name: str, change: object) -> None:
    """What a controller does: read, change, update (never touching last-applied-configuration)."""
    cur = twin.store.get(kind, name)
    change(cur)  # type: ignore[operator]
    twin.store.update(cur)


def test_reapply_keeps_items_a_controller_added_and_drops_items_removed_from_the_manifest(twin: Twin) -> None:
    first = template([main(env=("A", "B"), ports=(8080, 9090))], volumes=[{"name": "data", "emptyDir": {}}])
    twin.apply(first)

    def add(obj: dict) -> None:
        spec = obj["template"]["spec"]
        spec["containers"][0]["env"].append({"name": "INJECTED", "value": "1"})
        spec["containers"][0]["volumeMounts"].append({"name": "certs", "mountPath": "/certs"})
        spec["containers"].append({"name": "sidecar", "image": "proxy:1"})
        spec["volumes"].append({"name": "certs", "secret": {"secretName": "c"}})

    controller_adds(twin, "PodTemplate", "t", add)
    second = template(
        [main(image="busybox:2", env=("A",), ports=(8080,))], volumes=[{"name": "data", "emptyDir": {}}]
    )
    spec = twin.apply(second)[0]["template"]["spec"]
    assert names(spec["containers"]) == ["main", "sidecar"]
    c = spec["containers"][0]
    assert c["image"] == "busybox:2"
    assert names(c["env"]) == ["A", "INJECTED"]  # B was dropped from the manifest; the controller's stays
    assert names(c["ports"], "containerPort") == [8080]
    assert names(c["volumeMounts"], "mountPath") == ["/data", "/certs"]
    assert names(spec["volumes"]) == ["data", "certs"]
    rv = twin.get("PodTemplate", "t")["metadata"]["resourceVersion"]
    twin.apply(second)  # unchanged: nothing written, though kubectl's patch still names the order
    assert twin.get("PodTemplate", "t")["metadata"]["resourceVersion"] == rv


def test_removing_a_container_and_a_volume_from_the_manifest_removes_them(twin: Twin) -> None:
    twin.apply(
        template(
            [main(), {"name": "helper", "image": "h"}],
            volumes=[{"name": "data", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}}],
        )
    )
    spec = twin.apply(template([main()], volumes=[{"name": "data", "emptyDir": {}}]))[0]["template"]["spec"]
    assert names(spec["containers"]) == ["main"] and names(spec["volumes"]) == ["data"]


def test_the_manifest_order_wins_and_server_only_items_keep_their_place(twin: Twin) -> None:
    twin.apply(template([main(env=("A", "B", "C"))]))
    controller_adds(
        twin,
        "PodTemplate",
        "t",
        lambda o: o["template"]["spec"]["containers"][0]["env"].insert(1, {"name": "X", "value": "x"}),
    )  # between A and B
    env = twin.apply(template([main(env=("A", "C", "B"))]))[0]["template"]["spec"]["containers"][0]["env"]
    assert names(env) == ["A", "X", "C", "B"]  # X stays after A, where it stood on the server


def test_a_changed_volume_source_replaces_the_old_one(twin: Twin) -> None:
    twin.apply(template([main()], volumes=[{"name": "data", "emptyDir": {}}]))
    spec = twin.apply(template([main()], volumes=[{"name": "data", "configMap": {"name": "cm"}}]))[0][
        "template"
    ]["spec"]
    assert names(spec["volumes"]) == ["data"] and spec["volumes"][0].keys() == {"name", "configMap"}


def test_a_pod_reapplied_after_a_webhook_injected_a_sidecar_keeps_it(twin: Twin) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["example.com/a"]},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1"}],
        },
    }
    twin.apply(manifest)
    # what a mutating webhook does at creation, and a controller's finalizer
    cur = twin.store.get("Pod", "p")
    cur["spec"]["containers"].append(
        {  # as the API server defaults a container (it came with the pod's create)
            "name": "sidecar",
            "image": "proxy:1",
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    )
    cur["metadata"]["finalizers"].append("example.com/controller")
    # a webhook's sidecar comes at the pod's admission (an update may not add a container: ValidatePodUpdate),
    # so the stored pod is written here as that admission would have left it, past the suite's write check
    twin.store.check_writes = False
    twin.store.update(cur)
    twin.store.check_writes = True
    again = copy.deepcopy(manifest)
    again["spec"]["containers"][0]["image"] = "busybox:2"
    again["metadata"]["finalizers"] = []  # dropped from the manifest: removed; the controller's stays
    # (a list without a merge strategy, such as tolerations, replaces the live one: for a Pod that is an update
    # removing the tolerations admission added, which ValidatePodUpdate refuses, as kubectl users meet it)
    pod = twin.apply(again)[0]
    assert [(c["name"], c["image"]) for c in pod["spec"]["containers"]] == [
        ("main", "busybox:2"),
        ("sidecar", "proxy:1"),
    ]
    assert pod["metadata"]["finalizers"] == ["example.com/controller"]
    assert (
        json.loads(pod["metadata"]["annotations"][LAST_APPLIED])["spec"]["containers"][0]["image"]
        == "busybox:2"
    )


def test_a_job_reapplied_keeps_what_was_injected_into_its_template(twin: Twin) -> None:
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "env": [{"name": "A"}]}],
                }
            },
        },
    }
    twin.apply(manifest)
    cur = twin.store.get("Job", "j")
    tspec = cur["spec"]["template"]["spec"]
    tspec["containers"][0]["env"].append({"name": "TPU_WORKER_ID", "value": "0"})
    tspec["volumes"] = [{"name": "ws", "emptyDir": {}}]
    tspec["schedulingGates"] = [{"name": "example.com/gate"}]
    twin.store.update(cur)
    again = copy.deepcopy(manifest)
    again["spec"]["parallelism"] = 2
    job = twin.apply(again)[0]
    tspec = job["spec"]["template"]["spec"]
    assert job["spec"]["parallelism"] == 2
    assert names(tspec["containers"][0]["env"]) == ["A", "TPU_WORKER_ID"]
    assert names(tspec["volumes"]) == ["ws"] and names(tspec["schedulingGates"]) == ["example.com/gate"]
    assert job["spec"]["selector"]  # server-set fields still survive


def test_custom_resources_still_get_a_json_merge_patch(twin_v1beta1: Twin) -> None:
    twin = twin_v1beta1  # a v1beta1 ClusterQueue (Kueue 0.19.2)
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]},
                        {"name": "b", "resources": [{"name": "cpu", "nominalQuota": 1}]},
                    ],
                }
            ],
        },
    }
    twin.apply(cq)
    cq["spec"]["resourceGroups"][0]["flavors"] = cq["spec"]["resourceGroups"][0]["flavors"][1:]
    out = twin.apply(cq)[0]
    assert names(out["spec"]["resourceGroups"][0]["flavors"]) == ["b"]
    with pytest.raises(UnsupportedMediaType):
        twin.patch("ClusterQueue", "cq", {"spec": {"cohort": "x"}}, patch_type="strategic")


# -- the patch kubectl computes ------------------------------------------------------------------------------
def test_the_three_way_patch_is_what_kubectl_sends() -> None:
    original = {"spec": {"containers": [{"name": "a", "env": [{"name": "X"}, {"name": "Y"}]}]}}
    modified = {"spec": {"containers": [{"name": "a", "env": [{"name": "X"}]}]}}
    current = {
        "spec": {"containers": [{"name": "a", "env": [{"name": "X"}, {"name": "Y"}]}, {"name": "sidecar"}]}
    }
    assert three_way_strategic_patch(original, modified, current, POD_SPEC or {}) == {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [
                {
                    "name": "a",
                    "$setElementOrder/env": [{"name": "X"}],
                    "env": [{"name": "Y", "$patch": "delete"}],
                }
            ],
        }
    }
    assert three_way_strategic_patch(
        modified,
        modified,
        strategic_merge_patch(
            current, three_way_strategic_patch(original, modified, current, POD_SPEC or {}), POD_SPEC
        ),
        POD_SPEC or {},
    ) == {"spec": {"$setElementOrder/containers": [{"name": "a"}]}}  # the sidecar makes the orders differ


def test_finalizers_diff_as_a_set() -> None:
    meta = {"metadata": {"finalizers": ["a", "b"]}}
    patch = three_way_strategic_patch(
        meta,
        {"metadata": {"finalizers": ["b", "c"]}},
        {"metadata": {"finalizers": ["a", "b", "z"]}},
        POD_SPEC or {},
    )
    assert patch == {
        "metadata": {
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "$setElementOrder/finalizers": ["b", "c"],
        }
    }


# -- the server side, as kubectl patches over HTTP ------------------------------------------------------------
POD = {
    "metadata": {"finalizers": ["f1", "f2"]},
    "spec": {
        "containers": [
            {"name": "a", "image": "1", "ports": [{"containerPort": 80}, {"containerPort": 81}]},
            {"name": "b", "image": "1"},
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "t1"}, {"key": "t2"}],
    },
}


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        pytest.param(
            {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}},
            lambda p: names(p["spec"]["containers"]) == ["a"],
            id="patch-delete-item",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "image": "2"}]}},  # upstream puts a new item first
            lambda p: names(p["spec"]["containers"]) == ["c", "a", "b"],
            id="new-item-merged-in",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "a", "image": "2"}]}},
            lambda p: [(c["name"], c["image"]) for c in p["spec"]["containers"]] == [("b", "2"), ("a", "2")],
            id="patch-order-wins",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 82}]}]}},
            lambda p: (
                names(p["spec"]["containers"][0]["ports"], "containerPort") == [82, 80, 81]
                and p["spec"]["containers"][0]["image"] == "1"
            ),
            id="nested-keyed-list-merges",
        ),
        pytest.param(
            {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}},
            lambda p: names(p["spec"]["containers"]) == ["b", "a"],
            id="set-element-order",
        ),
        pytest.param(
            {"spec": {"containers": [{"$patch": "replace"}, {"name": "z", "image": "9"}]}},
            lambda p: names(p["spec"]["containers"]) == ["z"],
            id="patch-replace-list",
        ),
        pytest.param(
            {"spec": {"tolerations": [{"key": "t3"}]}},
            lambda p: p["spec"]["tolerations"] == [{"key": "t3"}],
            id="unkeyed-list-replaced",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["f3", "f1"]}},
            lambda p: p["metadata"]["finalizers"] == ["f3", "f1", "f2"],
            id="scalar-set-merge",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}},
            lambda p: p["metadata"]["finalizers"] == ["f2"],
            id="delete-from-primitive-list",
        ),
        pytest.param(
            {
                "spec": {
                    "volumes": [
                        {"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
                    ]
                }
            },
            lambda p: p["spec"]["volumes"] == [{"name": "v", "secret": {"secretName": "s"}}],
            id="retain-keys",
        ),
        pytest.param(
            {"spec": {"$patch": "replace", "containers": []}},
            lambda p: p["spec"] == {"containers": []},
            id="patch-replace-map",
        ),
    ],
)
def test_strategic_merge_directives(patch: dict, check: object) -> None:
    out = strategic_merge_patch(copy.deepcopy(POD), patch, POD_SPEC)
    assert check(out)  # type: ignore[operator]


def test_an_item_without_its_merge_key_is_refused() -> None:
    with pytest.raises(BadRequest):
        strategic_merge_patch(POD, {"spec": {"containers": [{"image": "x"}]}}, POD_SPEC)


def test_a_strategic_patch_through_the_store_merges_containers_by_name(twin: Twin) -> None:
    twin.apply(template([main(), {"name": "helper", "image": "h"}]))
    out = twin.patch(
        "PodTemplate",
        "t",
        {"template": {"spec": {"containers": [{"name": "helper", "image": "h2"}]}}},
        patch_type="strategic",
    )
    assert [(c["name"], c["image"]) for c in out["template"]["spec"]["containers"]] == [
        ("main", "busybox:1"),
        ("helper", "h2"),
    ]
