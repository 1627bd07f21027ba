"""The machine catalog: shapes, topologies, labels, allocatable and prices."""

import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

from flexq.api import gke_catalog as c


@pytest.mark.parametrize(
    ("machine", "topology", "hosts"),
    [
        ("ct6e-standard-4t", "4x4", 4),
        ("ct6e-standard-4t", "2x2", 1),
        ("ct6e-standard-4t", "2x4", 2),
        ("ct6e-standard-4t", "16x16", 64),
        ("ct6e-standard-8t", "2x4", 1),
        ("ct6e-standard-1t", "1x1", 1),
        ("ct5lp-hightpu-4t", "4x8", 8),
        ("ct5p-hightpu-4t", "2x2x1", 1),
        ("ct5p-hightpu-4t", "2x2x2", 2),
        ("ct5p-hightpu-4t", "4x4x4", 16),
        ("ct4p-hightpu-4t", "2x4x4", 8),
    ],
    ids=lambda v: str(v),
)
def test_hosts_per_slice_is_chips_over_chips_per_vm(machine: str, topology: str, hosts: int) -> None:
    mt = c.machine_type(machine)
    assert c.hosts_per_slice(mt, topology) == hosts
    assert c.topology_chips(topology) == hosts * mt.chips


@pytest.mark.parametrize(
    ("machine", "topology"),
    [
        ("ct6e-standard-4t", "3x3"),  # not a v6e topology
        ("ct6e-standard-8t", "4x4"),  # 8t is single-host only
        ("ct6e-standard-1t", "2x2"),
        ("ct6e-standard-4t", "2x2x2"),  # 3-D topology on a 2-D generation
        ("ct5p-hightpu-4t", "4x4"),  # 2-D topology on v5p
        ("n2-standard-16", "2x2"),  # not a TPU machine
        ("ct6e-standard-4t", "4by4"),
    ],
)
def test_invalid_topologies_are_refused(machine: str, topology: str) -> None:
    with pytest.raises(c.CatalogError):
        c.hosts_per_slice(c.machine_type(machine), topology)


def test_unknown_machine_type() -> None:
    with pytest.raises(c.CatalogError, match='Machine type "ct9-huge" is not supported'):
        c.machine_type("ct9-huge")


def test_v6e_node_labels_taints_and_resources() -> None:
    mt = c.machine_type("ct6e-standard-4t")
    labels = c.node_labels(
        mt, pool="dws-pool", topology="4x4", model=c.FLEX_START, queued=True, zone="us-east5-b"
    )
    assert labels[c.LABEL_NODEPOOL] == "dws-pool"
    assert labels[c.LABEL_TPU_ACCELERATOR] == "tpu-v6e-slice"
    assert labels[c.LABEL_TPU_TOPOLOGY] == "4x4"
    assert labels[c.LABEL_FLEX_START] == "true"
    assert labels[c.LABEL_PROVISIONING] == "flex-start"
    assert labels[c.LABEL_MAX_RUN_DURATION] == str(7 * 86400)
    assert labels["topology.kubernetes.io/region"] == "us-east5"
    taints = c.node_taints(mt, queued=True)
    assert {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"} in taints
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in taints
    alloc = c.allocatable(mt)
    assert alloc["google.com/tpu"] == "4"
    # the tutorial's worker (8 CPU, 16Gi) fits: 179.48 cores allocatable
    assert alloc["cpu"] == "179480m"


def test_on_demand_cpu_node_has_no_tpu_labels_or_taints() -> None:
    mt = c.machine_type("n2-standard-16")
    labels = c.node_labels(
        mt, pool="default-pool", topology=None, model=c.ON_DEMAND, queued=False, zone="us-east5-b"
    )
    assert c.LABEL_TPU_ACCELERATOR not in labels and c.LABEL_FLEX_START not in labels
    assert labels[c.LABEL_PROVISIONING] == "standard"
    assert c.node_taints(mt, queued=False) == []
    # GKE's documented reservation: 16 cores -> 110m reserved (15890m allocatable)
    assert c.allocatable(mt)["cpu"] == "15890m"


def test_gpu_nodes() -> None:
    mt = c.machine_type("a3-highgpu-8g")
    assert c.allocatable(mt)["nvidia.com/gpu"] == "8"
    assert (
        c.node_labels(mt, pool="p", topology=None, model=c.SPOT, queued=False, zone="us-central1-a")[
            c.LABEL_ACCELERATOR
        ]
        == "nvidia-h100-80gb"
    )
    assert c.node_taints(mt, queued=False) == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]


def test_prices() -> None:
    v6e = c.machine_type("ct6e-standard-4t")
    assert c.price_per_hour(v6e, c.FLEX_START) == 4 * Fraction("1.35")
    assert c.price_per_hour(v6e, c.ON_DEMAND) == 4 * Fraction("2.70")
    assert c.price_per_hour(c.machine_type("e2-medium"), c.ON_DEMAND) == Fraction("0.033503")
    with pytest.raises(c.CatalogError):
        c.price_per_hour(c.machine_type("ct4p-hightpu-4t"), c.FLEX_START)
    for mt in c.MACHINE_TYPES.values():  # every model offered is cheaper than on-demand
        for model in (c.SPOT, c.FLEX_START):
            p = mt.prices.for_model(model)
            assert p is None or 0 < p < mt.prices.on_demand, (mt.name, model)


@pytest.mark.parametrize(
    ("gen", "label", "machine", "single", "multi"),
    [
        (
            "v6e",
            "tpu-v6e-slice",
            "ct6e-standard-4t",
            "2x2",
            {"2x4": 2, "4x4": 4, "4x8": 8, "8x8": 16, "16x16": 64},
        ),
        (
            "v5e",
            "tpu-v5-lite-podslice",
            "ct5lp-hightpu-4t",
            "2x2",
            {"2x4": 2, "4x4": 4, "8x16": 32, "16x16": 64},
        ),
        (
            "v5p",
            "tpu-v5p-slice",
            "ct5p-hightpu-4t",
            "2x2x1",
            {"2x2x2": 2, "2x2x4": 4, "4x4x4": 16, "16x16x24": 1536},
        ),
        ("v4", "tpu-v4-podslice", "ct4p-hightpu-4t", "2x2x1", {"2x2x2": 2, "2x4x4": 8, "8x16x16": 512}),
    ],
)
def test_every_tpu_generation_single_and_multi_host(
    gen: str, label: str, machine: str, single: str, multi: dict[str, int]
) -> None:
    g = c.TPU_GENERATIONS[gen]
    mt = c.machine_type(machine)
    assert mt.tpu is g and g.accelerator_label == label and mt.chips == 4
    assert c.valid_topologies(mt)[0] == single and not c.is_multi_host(mt, single)
    assert c.hosts_per_slice(mt, single) == 1 and c.hosts_per_slice(mt, None) == 1
    for topology, hosts in multi.items():
        assert c.hosts_per_slice(mt, topology) == hosts == c.topology_chips(topology) // mt.chips
        assert c.is_multi_host(mt, topology)
    labels = c.node_labels(mt, pool="p", topology=None, model=c.ON_DEMAND, queued=False, zone="us-east5-a")
    assert labels[c.LABEL_TPU_TOPOLOGY] == single and labels[c.LABEL_TPU_ACCELERATOR] == label
    assert c.capacity(mt)[c.RESOURCE_TPU] == c.allocatable(mt)[c.RESOURCE_TPU] == "4"
    assert g.chip_price.on_demand > 0 and (g.chip_price.flex_start is None) == (gen == "v4")


@pytest.mark.parametrize(
    ("family", "gpu_type", "machines"),
    [
        ("A100 40GB", "nvidia-tesla-a100", {"a2-highgpu-1g": 1, "a2-highgpu-8g": 8}),
        ("A100 80GB", "nvidia-a100-80gb", {"a2-ultragpu-1g": 1, "a2-ultragpu-8g": 8}),
        ("H100", "nvidia-h100-80gb", {"a3-highgpu-1g": 1, "a3-highgpu-8g": 8}),
        ("H100 Mega", "nvidia-h100-mega-80gb", {"a3-megagpu-8g": 8}),
        ("H200", "nvidia-h200-141gb", {"a3-ultragpu-8g": 8}),
        ("L4", "nvidia-l4", {"g2-standard-4": 1, "g2-standard-8": 1, "g2-standard-16": 1}),
    ],
)
def test_gpu_families(family: str, gpu_type: str, machines: dict[str, int]) -> None:
    for name, gpus in machines.items():
        mt = c.machine_type(name)
        assert (mt.gpu_type, mt.gpus, mt.is_gpu, mt.is_tpu) == (gpu_type, gpus, True, False), family
        assert c.allocatable(mt)[c.RESOURCE_GPU] == str(gpus) and c.RESOURCE_TPU not in c.allocatable(mt)
        assert all(mt.prices.for_model(m) for m in c.PROVISIONING_MODELS), (name, "every model is priced")
        assert (
            c.node_labels(mt, pool="g", topology=None, model=c.FLEX_START, queued=True, zone="us-central1-a")[
                c.LABEL_ACCELERATOR
            ]
            == gpu_type
        )


def test_the_tutorials_machines_and_their_allocatable() -> None:
    # GKE's reservation formula (plan-node-sizes): 720 GiB -> 21.16 GiB + 100 MiB eviction threshold reserved
    v6e = c.allocatable(c.machine_type("ct6e-standard-4t"))
    assert v6e["memory"] == f"{720 * 1024 * 1024 - (math.ceil(21.16 * 1024) + 100) * 1024}Ki" == "732684288Ki"
    n2 = c.allocatable(c.machine_type("n2-standard-16"))  # the default pool: 64 GiB -> 5.48 GiB + 100 MiB
    assert n2["memory"] == f"{64 * 1024 * 1024 - (math.ceil(5.48 * 1024) + 100) * 1024}Ki"
    assert c.capacity(c.machine_type("n2-standard-16"))["cpu"] == "16"


def test_every_price_in_the_catalog_cites_its_source() -> None:
    """Each priced entry (TPU generation, GPU or CPU machine) has a [SOURCE] tag on the comment lines above it,
    and each tag is one the module docstring defines."""
    src = Path(c.__file__).read_text()
    defined = set(re.findall(r"^\s+\[([A-Z-]+)\]", c.__doc__ or "", re.M))
    assert {"TPU-PRICING", "GKE-CA", "GPU-PRICING", "ASSUMED"} <= defined
    lines = src.splitlines()
    priced = [
        i
        for i, line in enumerate(lines)
        if re.search(r"^\s+Prices\(on_demand=|^\s+_gpu\(\"|^\s+\*\[_vm\(|^\s+_shared_e2\(\"", line)
    ]
    assert len(priced) >= 20
    for i in priced:
        above = "\n".join(lines[max(0, i - 6) : i + 1])
        tags = set(re.findall(r"\[([A-Z-]+)\]", above))
        assert tags & defined, f"uncited price at catalog.py:{i + 1}: {lines[i].strip()}"
        assert tags <= defined | {"x"}, tags
