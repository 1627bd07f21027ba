"""What a sweep's point asks of the project's quota: the TPU chips its node pools reach at their maximum."""

from __future__ import annotations

from typing import Any

from flexq.api import gke_catalog as catalog


def tpu_chips(cluster: dict[str, Any] | None) -> dict[str, int]:
    """The TPU chips the cluster's node pools reach at their maximum size, per GKE quota: ``"<region> <TPU
    generation> <on-demand|preemptible>"`` -> chips (a multi-host slice's VMs each hold ``chips`` of them).
    GKE's TPU quota is per region and TPU family, and flex-start and spot VMs use the preemptible quota
    (docs/simulate.md); a pool of fixed size counts its ``nodes``."""
    location = str((cluster or {}).get("location") or "")
    parts = location.split("-")
    region = "-".join(parts[:2]) if len(parts) >= 3 else location  # us-east5-b -> us-east5
    out: dict[str, int] = {}
    for p in (cluster or {}).get("nodePools") or []:
        if not isinstance(p, dict) or not catalog.is_known_machine_type(str(p.get("machineType", ""))):
            continue
        mt = catalog.machine_type(str(p["machineType"]))
        if mt.tpu is None or not mt.chips:
            continue
        auto = p.get("autoscaling") or {}
        top = auto.get("max")
        nodes = int(top) if top is not None else int(p.get("nodes") or 0)
        quota = "preemptible" if p.get("flexStart") or p.get("spot") else "on-demand"
        key = f"{region} {mt.tpu.name} {quota}"
        out[key] = out.get(key, 0) + nodes * mt.chips
    return out


def chips_text(chips: dict[str, int]) -> str:
    """``us-east5 v6e: 16 on-demand + 672 preemptible chips`` (one clause per region and family)."""
    by: dict[str, list[str]] = {}
    for key, n in sorted(chips.items()):
        region, gen, quota = key.split(" ")
        by.setdefault(f"{region} {gen}", []).append(f"{n} {quota}")
    return "; ".join(f"{k}: {' + '.join(v)} chips" for k, v in by.items()) or "no TPU"
