"""A GKE node pool's size limits as the cluster autoscaler reads them: the hosts of one slice (a multi-host TPU
pool grows and shrinks by whole slices) and the autoscaling bounds (``minNodeCount`` / ``maxNodeCount``, or the
``total*`` ones of a location policy).

Pure: functions of the pool object.
"""

from __future__ import annotations

from typing import Any

__all__ = ["hosts_per_slice", "max_nodes", "min_nodes"]


def hosts_per_slice(pool: dict[str, Any]) -> int:
    return max(1, pool["status"].get("hostsPerSlice", 1))


def max_nodes(pool: dict[str, Any]) -> int:
    auto = pool["spec"].get("autoscaling") or {}
    return int(auto.get("maxNodeCount", auto.get("totalMaxNodeCount", 0)) or 0)


def min_nodes(pool: dict[str, Any]) -> int:
    auto = pool["spec"].get("autoscaling") or {}
    return int(auto.get("minNodeCount", auto.get("totalMinNodeCount", 0)) or 0)
