"""flexq: a local twin of GKE + Kueue + KubeRay for on-demand-first, DWS flex-start fallback training.

The SDK's front door is ``Twin``; the command is ``flexq``; ``flexq.simulate(...)`` is the capacity simulator
(``flexq.simulate``). Both are imported on first use, so that light commands (``flexq env``) do not pay for
loading every controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flexq.twin import Twin

__all__ = ["Twin", "simulate", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Twin":
        from flexq.twin import Twin

        return Twin
    if name == "simulate":  # the package, callable: flexq.simulate(study, out=...)
        import importlib

        return importlib.import_module("flexq.simulate")
    raise AttributeError(f"module 'flexq' has no attribute {name!r}")
