"""The cluster the KubeRay twin tests run in: the tutorial's train.py ConfigMap, a CPU node for the head and
submitter, and a 4-host v6e 4x4 on-demand slice for the workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from flexq import Twin
from tests.kube.kube_builders import add_node, node, tpu_node

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def cluster(twin: Twin) -> Twin:
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script", "namespace": "default"},
            "data": {"train.py": (DATA / "train.py").read_text()},
        }
    )
    add_node(twin, node("gke-default-pool-0", cpu="16", memory="64Gi"))
    for i in range(4):
        add_node(twin, tpu_node(f"gke-on-demand-pool-{i}", "on-demand-pool"))
    return twin
