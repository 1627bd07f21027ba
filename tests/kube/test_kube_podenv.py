"""ConfigMap files and the GKE TPU environment a node gives a pod (pure)."""

from __future__ import annotations

import pytest

from flexq.kube import job_rules
from flexq.kube.podenv import configmap_files, tpu_env
from flexq.semantics.nodefit import node_info

from .kube_builders import node, pod, tpu_node

CMS = {"script": {"data": {"train.py": "print(1)", "extra.txt": "x"}}}


def with_volume(source: dict, mount: dict) -> dict:
    p = pod("p")
    p["spec"]["volumes"] = [{"name": "v", "configMap": source}]
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", **mount}]
    return p


def test_configmap_mounts_all_keys_items_and_subpath() -> None:
    files, missing = configmap_files(with_volume({"name": "script"}, {"mountPath": "/app"}), CMS.get)
    assert files == {"/app": {"train.py": "print(1)", "extra.txt": "x"}} and missing == []
    files, _ = configmap_files(
        with_volume(
            {"name": "script", "items": [{"key": "train.py", "path": "t.py"}]}, {"mountPath": "/app"}
        ),
        CMS.get,
    )
    assert files == {"/app": {"t.py": "print(1)"}}
    files, _ = configmap_files(
        with_volume({"name": "script"}, {"mountPath": "/etc/train.py", "subPath": "train.py"}), CMS.get
    )
    assert files == {"/etc": {"train.py": "print(1)"}}


def test_missing_configmap_is_reported_unless_optional() -> None:
    assert configmap_files(with_volume({"name": "nope"}, {"mountPath": "/a"}), CMS.get) == (
        {},
        [("v", "nope")],
    )
    assert configmap_files(with_volume({"name": "nope", "optional": True}, {"mountPath": "/a"}), CMS.get) == (
        {},
        [],
    )


def test_tpu_env_splits_a_pool_into_slices_by_name() -> None:
    nodes = [node_info(tpu_node(f"n{i}", "dws", topology="2x4")) for i in range(4)]  # 2 hosts per slice
    p = pod("w", tpu=4)
    envs = [tpu_env(p, n, nodes) for n in nodes]
    assert [(e["TPU_NAME"], e["TPU_WORKER_ID"]) for e in envs] == [
        ("dws-0", "0"),
        ("dws-0", "1"),
        ("dws-1", "0"),
        ("dws-1", "1"),
    ]
    assert envs[3]["TPU_WORKER_HOSTNAMES"] == "n2,n3" and envs[0]["TPU_ACCELERATOR_TYPE"] == "v6e-8"
    assert tpu_env(pod("cpu-only"), nodes[0], nodes) == {}
    assert tpu_env(p, node_info(node("plain")), nodes) == {}


@pytest.mark.parametrize(
    ("accel", "topology", "expected"),
    [
        ("tpu-v6e-slice", "4x4", "v6e-16"),
        ("tpu-v5p-slice", "2x2x2", "v5p-16"),
        ("tpu-v4-podslice", "2x2x1", "v4-8"),
        ("tpu-v5-lite-podslice", "2x4", "v5litepod-8"),
    ],
)
def test_accelerator_type_names(accel: str, topology: str, expected: str) -> None:
    n = tpu_node("n", "pool", topology=topology)
    n["metadata"]["labels"]["cloud.google.com/gke-tpu-accelerator"] = accel
    info = node_info(n)
    assert tpu_env(pod("w", tpu=4), info, [info])["TPU_ACCELERATOR_TYPE"] == expected


def test_completed_indexes_round_trip() -> None:
    assert job_rules.format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert job_rules.parse_indexes("0-2,4,6-7") == {0, 1, 2, 4, 6, 7}
    assert job_rules.parse_indexes(None) == set() and job_rules.format_indexes(set()) == ""
    assert [job_rules.creation_backoff(n) for n in (0, 1, 2, 3, 7)] == [0, 10, 20, 40, 360]


def test_gke_slice_annotation_defines_the_slice() -> None:
    objs = [tpu_node(f"n{i}", "dws", topology="2x4") for i in range(4)]
    for i, o in enumerate(objs):
        o["metadata"]["annotations"] = {"gke.twin.flexq.dev/slice": "bbb" if i in (0, 3) else "aaa"}
    nodes = [node_info(o) for o in objs]
    envs = {n.name: tpu_env(pod("w", tpu=4), n, nodes) for n in nodes}
    assert {k: (e["TPU_NAME"], e["TPU_WORKER_ID"]) for k, e in envs.items()} == {
        "n0": ("dws-bbb", "0"),
        "n3": ("dws-bbb", "1"),
        "n1": ("dws-aaa", "0"),
        "n2": ("dws-aaa", "1"),
    }
    assert envs["n3"]["TPU_WORKER_HOSTNAMES"] == "n0,n3"
