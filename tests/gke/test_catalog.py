"""The machine catalog: shapes, topologies, labels, allocatable and prices."""

from fractions import Fraction

import pytest

from flexq.gke import catalog as c


@pytest.mark.parametrize(("machine", "topology", "hosts"), [
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
], ids=lambda v: str(v))
def test_hosts_per_slice_is_chips_over_chips_per_vm(machine: str, topology: str, hosts: int) -> None:
    mt = c.machine_type(machine)
    assert c.hosts_per_slice(mt, topology) == hosts
    assert c.topology_chips(topology) == hosts * mt.chips


@pytest.mark.parametrize(("machine", "topology"), [
    ("ct6e-standard-4t", "3x3"),       # not a v6e topology
    ("ct6e-standard-8t", "4x4"),       # 8t is single-host only
    ("ct6e-standard-1t", "2x2"),
    ("ct6e-standard-4t", "2x2x2"),     # 3-D topology on a 2-D generation
    ("ct5p-hightpu-4t", "4x4"),        # 2-D topology on v5p
    ("n2-standard-16", "2x2"),         # not a TPU machine
    ("ct6e-standard-4t", "4by4"),
])
def test_invalid_topologies_are_refused(machine: str, topology: str) -> None:
    with pytest.raises(c.CatalogError):
        c.hosts_per_slice(c.machine_type(machine), topology)


def test_unknown_machine_type() -> None:
    with pytest.raises(c.CatalogError, match='Machine type "ct9-huge" is not supported'):
        c.machine_type("ct9-huge")


def test_v6e_node_labels_taints_and_resources() -> None:
    mt = c.machine_type("ct6e-standard-4t")
    labels = c.node_labels(mt, pool="dws-pool", topology="4x4", model=c.FLEX_START, queued=True, zone="us-east5-b")
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
    labels = c.node_labels(mt, pool="default-pool", topology=None, model=c.ON_DEMAND, queued=False,
                           zone="us-east5-b")
    assert c.LABEL_TPU_ACCELERATOR not in labels and c.LABEL_FLEX_START not in labels
    assert labels[c.LABEL_PROVISIONING] == "standard"
    assert c.node_taints(mt, queued=False) == []
    # GKE's documented reservation: 16 cores -> 110m reserved (15890m allocatable)
    assert c.allocatable(mt)["cpu"] == "15890m"


def test_gpu_nodes() -> None:
    mt = c.machine_type("a3-highgpu-8g")
    assert c.allocatable(mt)["nvidia.com/gpu"] == "8"
    assert c.node_labels(mt, pool="p", topology=None, model=c.SPOT, queued=False,
                         zone="us-central1-a")[c.LABEL_ACCELERATOR] == "nvidia-h100-80gb"
    assert c.node_taints(mt, queued=False) == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


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
