"""Named, ready-made capacity profiles for ``flexq simulate`` (``capacity: <name>`` in a simulation file).

Each is a ``CapacityProfile`` (``docs/capacity-profile.md``) built from the twin's own profiles in
``flexq.api.capacity_profile``; relative times count from the start of the simulated traffic (the simulator sets
``spec.origin``). Pure data; must not import anything in flexq but ``flexq.api``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from flexq.api.capacity_profile import harsh_profile, live_default_profile, tutorial_profile

__all__ = ["NAMED_PROFILES", "named_profile"]


def _tutorial() -> dict[str, Any]:
    return tutorial_profile()


def _stockout_2h() -> dict[str, Any]:
    """The tutorial's cloud, with no on-demand TPUs at all for the first two hours."""
    p = tutorial_profile()
    p["metadata"]["name"] = "2h-on-demand-stockout"
    p["spec"]["rules"].insert(
        0,
        {
            "match": {"machineTypes": ["ct*"], "provisioningModels": ["on-demand"]},
            "windows": [{"start": "0s", "end": "2h", "available": 0}],
        },
    )
    return p


def _stockout_week() -> dict[str, Any]:
    """The tutorial's cloud over a week of stock-outs: on-demand v6e is gone for a few hours every day
    (longer on days 3 and 5), DWS grants after an exponential wait (mean 45 min, at most 8 h)."""
    p = tutorial_profile()
    p["metadata"]["name"] = "stockout-week"
    windows = []
    for day in range(8):
        start_h, length_h = (9, 4) if day not in (2, 4) else (6, 14)
        windows.append(
            {"start": f"{day * 24 + start_h}h", "end": f"{day * 24 + start_h + length_h}h", "available": 0}
        )
    p["spec"]["rules"][0]["windows"] = windows
    p["spec"]["defaults"]["queueWait"] = {"exponential": {"mean": "45m"}, "max": "8h"}
    return p


def _hard_week() -> dict[str, Any]:
    p = harsh_profile()
    p["metadata"]["name"] = "hard-week"
    return p


def _fast() -> dict[str, Any]:
    return live_default_profile()


NAMED_PROFILES: dict[str, Callable[[], dict[str, Any]]] = {
    "tutorial": _tutorial,
    "2h-on-demand-stockout": _stockout_2h,
    "stockout-week": _stockout_week,
    "hard-week": _hard_week,
    "fast": _fast,
}


def named_profile(name: str) -> dict[str, Any] | None:
    """A fresh copy of the named profile, or None."""
    make = NAMED_PROFILES.get(name)
    return copy.deepcopy(make()) if make else None
