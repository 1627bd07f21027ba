"""The machine catalog: GCE machine types GKE node pools can use, their accelerators, shapes and prices.

Owns: ``MachineType`` (vCPU, memory, accelerator, chips or GPUs per VM), TPU generations with their valid
slice topologies (``hosts per slice = chips in topology / chips per VM``), the GKE node labels and taints a
node of each type gets, node allocatable (GKE's documented reservation formula), and hourly prices per
provisioning model (on-demand, spot, flex-start). Pure data and pure functions.

Must not import anything from flexq except ``flexq.api.quantity``.

Price sources (USD per hour; cited per figure below):
  [TPU-PRICING]  https://cloud.google.com/tpu/pricing (per chip-hour; VM vCPU/RAM are included in the chip price,
                 GKE-CA: "For TPU, cpu and memory are not billed"), via research/cloud.md §3.
  [GKE-CA]       GoogleCloudPlatform/cluster-autoscaler pkg/cloudprovider/gke/machinetypes/
                 deprecated_machine_types_config.go (instance price overrides, family vCPU / GB rates,
                 preemptible discounts), via research/cloud.md §2.4, §2.6 and read directly.
  [GPU-PRICING]  https://cloud.google.com/compute/gpus-pricing and DWS SKUs, via research/cloud.md §3.
  [ASSUMED]      no primary figure found; the ratio used is written next to it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from flexq.api import wellknown

__all__ = [
    "GCLOUD_OAUTH_SCOPES",
    "ON_DEMAND",
    "SPOT",
    "FLEX_START",
    "ProvisioningModel",
    "PROVISIONING_MODELS",
    "TpuGeneration",
    "MachineType",
    "Prices",
    "TPU_GENERATIONS",
    "MACHINE_TYPES",
    "machine_type",
    "is_known_machine_type",
    "topology_chips",
    "hosts_per_slice",
    "is_multi_host",
    "valid_topologies",
    "allocatable",
    "capacity",
    "node_labels",
    "node_taints",
    "price_per_hour",
    "CatalogError",
    "LABEL_NODEPOOL",
    "LABEL_TPU_ACCELERATOR",
    "LABEL_TPU_TOPOLOGY",
    "LABEL_ACCELERATOR",
    "LABEL_FLEX_START",
    "LABEL_PROVISIONING",
    "LABEL_QUEUED",
    "LABEL_MAX_RUN_DURATION",
    "LABEL_PROVISIONING_REQUEST",
    "LABEL_SPOT",
    "TAINT_TPU",
    "TAINT_GPU",
    "TAINT_QUEUED",
    "RESOURCE_TPU",
    "RESOURCE_GPU",
]

ProvisioningModel = Literal["on-demand", "spot", "flex-start"]
ON_DEMAND: ProvisioningModel = "on-demand"
SPOT: ProvisioningModel = "spot"
FLEX_START: ProvisioningModel = "flex-start"
PROVISIONING_MODELS: tuple[ProvisioningModel, ...] = (ON_DEMAND, SPOT, FLEX_START)

# The OAuth scopes gcloud adds to every node config it creates (recorded from Google Cloud SDK 528.0.0); GKE's
# API takes them as a node config's default too.
GCLOUD_OAUTH_SCOPES = (
    "https://www.googleapis.com/auth/devstorage.read_only",
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring",
    "https://www.googleapis.com/auth/service.management.readonly",
    "https://www.googleapis.com/auth/servicecontrol",
    "https://www.googleapis.com/auth/trace.append",
)

# Node labels and taints (research/cloud.md §2.2, §2.3).
LABEL_NODEPOOL = "cloud.google.com/gke-nodepool"
LABEL_TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
LABEL_TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
LABEL_ACCELERATOR = "cloud.google.com/gke-accelerator"
LABEL_FLEX_START = "cloud.google.com/gke-flex-start"
LABEL_PROVISIONING = "cloud.google.com/gke-provisioning"
LABEL_QUEUED = "cloud.google.com/gke-queued"
LABEL_MAX_RUN_DURATION = "cloud.google.com/gke-max-run-duration-seconds"
LABEL_PROVISIONING_REQUEST = "autoscaling.gke.io/provisioning-request"
LABEL_SPOT = "cloud.google.com/gke-spot"
RESOURCE_TPU = wellknown.RESOURCE_TPU
RESOURCE_GPU = "nvidia.com/gpu"
TAINT_TPU = {"key": RESOURCE_TPU, "value": "present", "effect": "NoSchedule"}
TAINT_GPU = {"key": RESOURCE_GPU, "value": "present", "effect": "NoSchedule"}
TAINT_QUEUED = {"key": LABEL_QUEUED, "value": "true", "effect": "NoSchedule"}

FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600  # research/cloud.md §2.1: flex-start VMs run at most 7 days


class CatalogError(ValueError):
    """A machine type or topology the catalog does not know, with GKE's wording."""


@dataclass(frozen=True)
class Prices:
    """USD per VM-hour for each provisioning model; ``None`` where the model is not offered."""

    on_demand: float
    spot: float | None
    flex_start: float | None

    def for_model(self, model: ProvisioningModel) -> float | None:
        return {ON_DEMAND: self.on_demand, SPOT: self.spot, FLEX_START: self.flex_start}[model]


@dataclass(frozen=True)
class TpuGeneration:
    """One TPU generation: its GKE accelerator label, Ray/Cloud TPU naming, topologies and chip prices."""

    name: str  # "v6e"
    accelerator_label: str  # value of cloud.google.com/gke-tpu-accelerator
    cores_per_chip: int  # for the Cloud TPU "pod type" name (v6e-16, v5p-16)
    dims: int  # 2 for v5e/v6e, 3 for v4/v5p
    multi_host_topologies: tuple[str, ...]  # topologies for the 4-chip multi-host machine type
    chip_price: Prices  # per chip-hour
    flex_start_supported: bool = True


@dataclass(frozen=True)
class MachineType:
    """A GCE machine type as GKE sees it."""

    name: str
    vcpus: int
    memory_gb: float  # GCE "GB" = GiB (vm-instance-pricing: "1 GB is 2^30 bytes")
    prices: Prices
    tpu: TpuGeneration | None = None
    chips: int = 0  # TPU chips per VM
    single_host_topologies: tuple[str, ...] = ()
    gpu_type: str = ""  # e.g. nvidia-h100-80gb
    gpus: int = 0
    shared_core: bool = False  # e2-micro/small/medium: allocatable computed from 1 core (GKE-CA comment)
    extra_labels: dict[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.name.split("-", 1)[0]

    @property
    def is_tpu(self) -> bool:
        return self.tpu is not None

    @property
    def is_gpu(self) -> bool:
        return self.gpus > 0


# The tables below are hand-aligned data, one priced entry per line under the comment citing its source
# (tests/gke/test_catalog.py checks every price cites one): the formatter leaves them as written.
# fmt: off
# -- TPU generations --------------------------------------------------------------------------------------------
# Topologies: research/cloud.md §2.4 (GKE TPU docs); multi-host topologies use the 4-chip machine type.
_V6E = TpuGeneration(
    "v6e", "tpu-v6e-slice", 1, 2,
    ("2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    # [TPU-PRICING] us-east5 (the tutorial's region): OD 2.70, DWS flex-start 1.35, spot 1.4033 per chip-hour.
    Prices(on_demand=2.70, spot=1.4033, flex_start=1.35),
)
_V5E = TpuGeneration(
    "v5e", "tpu-v5-lite-podslice", 1, 2,
    ("2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    # [TPU-PRICING] us-west4: OD 1.20, flex-start 0.60, spot 0.5779 per chip-hour.
    Prices(on_demand=1.20, spot=0.5779, flex_start=0.60),
)
_V5P = TpuGeneration(
    "v5p", "tpu-v5p-slice", 2, 3,
    ("2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16", "16x16x16", "16x16x24"),
    # [TPU-PRICING] OD 4.20 per chip-hour; flex-start and spot [ASSUMED] 0.5 x OD (GKE-CA uses 0.5 for spot).
    Prices(on_demand=4.20, spot=2.10, flex_start=2.10),
)
_V4 = TpuGeneration(
    "v4", "tpu-v4-podslice", 2, 3,
    ("2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x12", "8x8x16", "8x16x16"),
    # [GKE-CA] ct4p-hightpu-4t 12.88/h = 3.22 per chip-hour; preemptible factor 3.88/12.88 -> 0.97 per chip-hour.
    # Flex-start is not offered for v4 (research/cloud.md §2.1).
    Prices(on_demand=3.22, spot=0.97, flex_start=None),
    flex_start_supported=False,
)
TPU_GENERATIONS: dict[str, TpuGeneration] = {g.name: g for g in (_V6E, _V5E, _V5P, _V4)}


def _tpu(name: str, gen: TpuGeneration, chips: int, vcpus: int, memory_gb: float,
         single: tuple[str, ...]) -> MachineType:
    p = gen.chip_price
    return MachineType(
        name=name, vcpus=vcpus, memory_gb=memory_gb, tpu=gen, chips=chips, single_host_topologies=single,
        prices=Prices(on_demand=round(p.on_demand * chips, 6),
                      spot=None if p.spot is None else round(p.spot * chips, 6),
                      flex_start=None if p.flex_start is None else round(p.flex_start * chips, 6)),
    )


def _vm(name: str, vcpus: int, memory_gb: float, cpu_rate: float, mem_rate: float, spot_ratio: float,
        flex_ratio: float | None = None, **kw: object) -> MachineType:
    """A VM priced by its family's per-vCPU and per-GB rates."""
    od = round(vcpus * cpu_rate + memory_gb * mem_rate, 6)
    return MachineType(name=name, vcpus=vcpus, memory_gb=memory_gb,
                       prices=Prices(od, round(od * spot_ratio, 6),
                                     None if flex_ratio is None else round(od * flex_ratio, 6)),
                       **kw)  # type: ignore[arg-type]


def _gpu(name: str, vcpus: int, memory_gb: float, gpu_type: str, gpus: int, od: float, spot: float,
         flex: float) -> MachineType:
    return MachineType(name=name, vcpus=vcpus, memory_gb=memory_gb, gpu_type=gpu_type, gpus=gpus,
                       prices=Prices(on_demand=od, spot=spot, flex_start=flex))


def _shared_e2(name: str, memory_gb: float) -> MachineType:
    """A shared-core e2 type: 2 vCPUs listed, priced and made allocatable as 1 core ([GKE-CA] comment)."""
    od = round(1 * 0.021811 + memory_gb * 0.002923, 6)
    return MachineType(name, 2, memory_gb, Prices(od, round(od * 0.006543 / 0.021811, 6), None), shared_core=True)


# [GKE-CA] family rates (USD per vCPU-hour, per GB-hour) and preemptible discount ratios.
_N2 = (0.031611, 0.004237, 0.009483 / 0.031611)   # N2 rates = GKE-CA a2 family pricingInfo (Cascade Lake)
_E2 = (0.021811, 0.002923, 0.006543 / 0.021811)   # GKE-CA e2 family pricingInfo
# Flex-start for CPU-only VMs: [ASSUMED] 0.53 x OD (DWS-DOC: flex-start is "discounted up to 53%").
_CPU_FLEX = 0.53
# GPU flex-start where no DWS SKU was found: [ASSUMED] 0.45 x OD (H100 DWS SKU ratio 0.43-0.45, cloud.md §3).
_GPU_FLEX = 0.45

_MACHINES: list[MachineType] = [
    # -- TPU v6e (Trillium). vCPU / memory: [GKE-CA] deprecated_tpu_config.go via research/cloud.md §2.4.
    _tpu("ct6e-standard-1t", _V6E, 1, 44, 176, ("1x1",)),
    _tpu("ct6e-standard-4t", _V6E, 4, 180, 720, ("2x2",)),
    _tpu("ct6e-standard-8t", _V6E, 8, 180, 1440, ("2x4",)),
    # -- TPU v5e
    _tpu("ct5lp-hightpu-1t", _V5E, 1, 24, 48, ("1x1",)),
    _tpu("ct5lp-hightpu-4t", _V5E, 4, 112, 192, ("2x2",)),
    _tpu("ct5lp-hightpu-8t", _V5E, 8, 224, 384, ("2x4",)),
    # -- TPU v5p and v4
    _tpu("ct5p-hightpu-4t", _V5P, 4, 208, 448, ("2x2x1",)),
    _tpu("ct4p-hightpu-4t", _V4, 4, 240, 407, ("2x2x1",)),
    # -- GPUs. [GKE-CA] instance price overrides (OD) and preemptible overrides (spot).
    # A100 40GB: no preemptible override in GKE-CA; spot from [GPU-PRICING] 1.5399/GPU-h vs OD 2.93391 -> x0.525.
    # A100 flex-start: [GPU-PRICING] DWS 1.61365/GPU-h vs 2.93391 -> x0.55 of the VM price [ASSUMED for the VM part].
    _gpu("a2-highgpu-1g", 12, 85, "nvidia-tesla-a100", 1, 3.673385, round(3.673385 * 0.525, 6),
         round(3.673385 * 0.55, 6)),
    _gpu("a2-highgpu-8g", 96, 680, "nvidia-tesla-a100", 8, 29.38708, round(29.38708 * 0.525, 6),
         round(29.38708 * 0.55, 6)),
    # A100 80GB: [GKE-CA] OD 5.0688 / 40.5504, preemptible 1.6 / 12.8; flex [GPU-PRICING] 1.846198/3.92808 = x0.47.
    _gpu("a2-ultragpu-1g", 12, 170, "nvidia-a100-80gb", 1, 5.0688, 1.6, round(5.0688 * 0.47, 6)),
    _gpu("a2-ultragpu-8g", 96, 1360, "nvidia-a100-80gb", 8, 40.5504, 12.8, round(40.5504 * 0.47, 6)),
    # H100: [GKE-CA] OD 84.94, spot 35.67; flex ≈37.7 = 8 x 4.200761 DWS GPU SKU + 208 vCPU x 0.010934
    # + 1872 GB x 0.000952 ([GPU-PRICING], research/cloud.md §3).
    _gpu("a3-highgpu-1g", 26, 234, "nvidia-h100-80gb", 1, 10.62, 4.46, round(10.62 * _GPU_FLEX, 6)),
    _gpu("a3-highgpu-8g", 208, 1872, "nvidia-h100-80gb", 8, 84.94, 35.67, 37.6998),
    _gpu("a3-megagpu-8g", 208, 1872, "nvidia-h100-mega-80gb", 8, 93.40, 65.39, round(93.40 * _GPU_FLEX, 6)),
    # H200 / B200: [GKE-CA] OD 140.1, preemptible 98.085 (a4 carries the same placeholder price in GKE-CA).
    _gpu("a3-ultragpu-8g", 224, 2952, "nvidia-h200-141gb", 8, 140.1, 98.085, round(140.1 * _GPU_FLEX, 6)),
    _gpu("a4-highgpu-8g", 224, 3968, "nvidia-b200", 8, 140.1, 98.085, round(140.1 * _GPU_FLEX, 6)),
    # L4: [GKE-CA] g2 overrides: OD 0.76 / 0.91 ..., preemptible 0.23 / 0.27 ...
    _gpu("g2-standard-4", 4, 16, "nvidia-l4", 1, 0.76, 0.23, round(0.76 * _GPU_FLEX, 6)),
    _gpu("g2-standard-8", 8, 32, "nvidia-l4", 1, 0.91, 0.27, round(0.91 * _GPU_FLEX, 6)),
    _gpu("g2-standard-16", 16, 64, "nvidia-l4", 1, 1.20, 0.36, round(1.20 * _GPU_FLEX, 6)),
    # -- CPU types (the tutorial's default pool is n2-standard-16).
    *[_vm(f"n2-standard-{n}", n, 4 * n, *_N2, flex_ratio=_CPU_FLEX) for n in (2, 4, 8, 16, 32)],
    *[_vm(f"e2-standard-{n}", n, 4 * n, *_E2, flex_ratio=_CPU_FLEX) for n in (2, 4, 8, 16)],
    # e2 shared-core: [GKE-CA] comment: "allocatable and price are computed based off of 1 core"
    # (e2-medium = 1 x 0.021811 + 4 x 0.002923 = 0.033503, the list price on vm-instance-pricing).
    _shared_e2("e2-medium", 4),
    _shared_e2("e2-small", 2),
]
# fmt: on
MACHINE_TYPES: dict[str, MachineType] = {m.name: m for m in _MACHINES}


def is_known_machine_type(name: str) -> bool:
    return name in MACHINE_TYPES


def machine_type(name: str) -> MachineType:
    """The catalog entry, or CatalogError with GKE's message for an unknown machine type."""
    try:
        return MACHINE_TYPES[name]
    except KeyError:
        raise CatalogError(f'Machine type "{name}" is not supported.') from None


_TOPOLOGY = re.compile(r"^\d+x\d+(x\d+)?$")


def topology_chips(topology: str) -> int:
    """Chips in a slice: the product of the topology's dimensions ("4x4" -> 16)."""
    if not _TOPOLOGY.match(topology):
        raise CatalogError(f'Invalid TPU topology "{topology}": expected a format like "2x2" or "2x2x1".')
    return math.prod(int(d) for d in topology.split("x"))


def valid_topologies(mt: MachineType) -> tuple[str, ...]:
    """Every topology GKE accepts for this TPU machine type (single-host first)."""
    if mt.tpu is None:
        return ()
    multi = mt.tpu.multi_host_topologies if mt.chips == 4 else ()
    return mt.single_host_topologies + tuple(t for t in multi if t not in mt.single_host_topologies)


def hosts_per_slice(mt: MachineType, topology: str | None) -> int:
    """Nodes (TPU VMs) in one slice = chips in topology / chips per VM; 1 for non-TPU types.

    Raises CatalogError when the topology is not valid for the machine type.
    """
    if mt.tpu is None:
        if topology:
            raise CatalogError(
                f'TPU topology "{topology}" is only supported for TPU machine types; '
                f'"{mt.name}" is not a TPU machine type.'
            )
        return 1
    if topology is None:
        return 1  # single-host default topology
    chips = topology_chips(topology)
    if topology not in valid_topologies(mt):
        raise CatalogError(
            f'Invalid TPU topology "{topology}" for machine type "{mt.name}". Supported topologies: '
            f"{', '.join(valid_topologies(mt))}."
        )
    return chips // mt.chips


def is_multi_host(mt: MachineType, topology: str | None) -> bool:
    """A multi-host TPU slice (more chips in the topology than one VM has): its nodes come and go together."""
    return hosts_per_slice(mt, topology) > 1


def _reserved_cpu_milli(cores: int) -> int:
    """GKE's kube-reserved CPU: 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above 4.

    Source: https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes (allocatable resources).
    """
    tiers = [(1, 0.06), (1, 0.01), (2, 0.005), (math.inf, 0.0025)]
    left, milli = float(cores), 0.0
    for size, rate in tiers:
        take = min(left, size)
        milli += take * 1000 * rate
        left -= take
        if left <= 0:
            break
    return math.ceil(milli)


def _reserved_memory_mi(memory_gib: float) -> int:
    """GKE's kube-reserved memory (25% of first 4 GiB, 20% next 4, 10% next 8, 6% next 112, 2% above 128)
    plus the 100 MiB eviction threshold. Machines under 1 GiB reserve 255 MiB. Same source as above."""
    if memory_gib < 1:
        return 255 + 100
    tiers = [(4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02)]
    left, mib = memory_gib, 0.0
    for size, rate in tiers:
        take = min(left, size)
        mib += take * 1024 * rate
        left -= take
        if left <= 0:
            break
    return math.ceil(mib) + 100


def capacity(mt: MachineType) -> dict[str, str]:
    """Node ``status.capacity`` as the kubelet reports it (pods = GKE's default max pods per node, 110)."""
    out = {
        "cpu": str(mt.vcpus),
        "memory": f"{int(mt.memory_gb * 1024 * 1024)}Ki",
        "pods": "110",
        "ephemeral-storage": "98831908Ki",
    }
    if mt.chips:
        out[RESOURCE_TPU] = str(mt.chips)
    if mt.gpus:
        out[RESOURCE_GPU] = str(mt.gpus)
    return out


def allocatable(mt: MachineType) -> dict[str, str]:
    """Node ``status.allocatable``: capacity minus GKE's CPU and memory reservations."""
    cores = 1 if mt.shared_core else mt.vcpus  # [GKE-CA]: shared-core e2 allocatable is computed from 1 core
    cpu_milli = cores * 1000 - _reserved_cpu_milli(cores)
    mem_ki = int(mt.memory_gb * 1024 * 1024) - _reserved_memory_mi(mt.memory_gb) * 1024
    out = {"cpu": f"{cpu_milli}m", "memory": f"{mem_ki}Ki", "pods": "110", "ephemeral-storage": "47060071478"}
    if mt.chips:
        out[RESOURCE_TPU] = str(mt.chips)
    if mt.gpus:
        out[RESOURCE_GPU] = str(mt.gpus)
    return out


def node_labels(
    mt: MachineType,
    *,
    pool: str,
    topology: str | None,
    model: ProvisioningModel,
    queued: bool,
    zone: str,
    max_run_seconds: int | None = None,
) -> dict[str, str]:
    """The labels GKE puts on a node of this pool (research/cloud.md §2.2)."""
    labels = {
        LABEL_NODEPOOL: pool,
        "cloud.google.com/machine-family": mt.family,
        "node.kubernetes.io/instance-type": mt.name,
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": zone.rsplit("-", 1)[0] if zone.count("-") >= 2 else zone,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        LABEL_PROVISIONING: {ON_DEMAND: "standard", SPOT: "spot", FLEX_START: "flex-start"}[model],
    }
    if mt.tpu is not None:
        labels[LABEL_TPU_ACCELERATOR] = mt.tpu.accelerator_label
        labels[LABEL_TPU_TOPOLOGY] = topology or mt.single_host_topologies[0]
    if mt.gpus:
        labels[LABEL_ACCELERATOR] = mt.gpu_type
    if model == SPOT:
        labels[LABEL_SPOT] = "true"
    if model == FLEX_START:
        labels[LABEL_FLEX_START] = "true"
        labels[LABEL_MAX_RUN_DURATION] = str(max_run_seconds or FLEX_START_MAX_RUN_SECONDS)
    if queued:
        labels[LABEL_QUEUED] = "true"  # research/cloud.md §2.2: treated as a label too [partly unverified]
    return labels


def node_taints(mt: MachineType, *, queued: bool) -> list[dict[str, str]]:
    """The taints GKE puts on a node of this pool (research/cloud.md §2.3)."""
    taints: list[dict[str, str]] = []
    if mt.tpu is not None:
        taints.append(dict(TAINT_TPU))
    if mt.gpus:
        taints.append(dict(TAINT_GPU))
    if queued:
        taints.append(dict(TAINT_QUEUED))
    return taints


def price_per_hour(mt: MachineType, model: ProvisioningModel) -> Fraction:
    """USD per node-hour for the provisioning model, as an exact Fraction of the cited decimal figure.

    Raises CatalogError when the model is not offered for the machine type (v4 flex-start, e2 shared-core flex).
    """
    value = mt.prices.for_model(model)
    if value is None:
        raise CatalogError(f'Provisioning model "{model}" is not offered for machine type "{mt.name}".')
    return Fraction(str(value))
