"""flexq: a local twin of GKE + Kueue + KubeRay for on-demand-first, DWS flex-start fallback training.

The SDK's front door is ``Twin``; the command is ``flexq``.
"""

from flexq.twin import Twin

__all__ = ["Twin", "__version__"]
__version__ = "0.1.0"
