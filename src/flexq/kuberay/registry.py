"""The explicit list of what flexq.kuberay contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns the RayCluster, RayJob and in-tree autoscaler controllers for one cluster;
the RayJob controller reads Ray job statuses through the simulated dashboard (for simulated RayJobs, or every
RayJob when the twin's executor is simulated) and the live one (the local Ray executor's clusters);
``executors(settings)`` returns the local Ray executor when the twin runs real Ray (``settings.executor ==
"ray"``, the live twin's default); with ``"simulated"`` it returns none and the kube package's simulated
executor runs every pod. ``settings.ray_dir`` (optional) is where the executor keeps pod files and Ray's
temp dirs; by default a private temp dir removed at shutdown. ``settings.ray_token_file`` (optional) is
where the token of its Ray clusters' token authentication is kept (the twin's home: ``ray/auth_token``); by
default a file in the executor's directory, removed with it. The executor runs Ray as processes of this
Python, so it needs the ``ray`` extra (``pip install 'flexq[ray]'``): without it, asking for it is a
``MissingExtra`` error naming the extra, before anything starts.
"""

from __future__ import annotations

from pathlib import Path

from flexq.errors import require_extra
from flexq.runtime import Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store

from .autoscaler import AutoscalerController
from .dashboards import LiveDashboard, RayDashboard, SimulatedDashboard
from .local_ray_executor import LocalRayExecutor
from .raycluster_controller import RayClusterController
from .rayjob_controller import RayJobController


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster."""
    rays = [ex for ex in ctx.executors if isinstance(ex, LocalRayExecutor)]
    simulated = ctx.settings.executor == "simulated" or not rays
    dashboards: list[RayDashboard] = [SimulatedDashboard(every_rayjob=simulated), LiveDashboard(rays)]
    return [
        RayClusterController(ctx),
        RayJobController(ctx, dashboards),
        AutoscalerController(ctx, sources=rays),
    ]


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (none for KubeRay: the operator brings only CRDs)."""


def executors(settings: TwinSettings) -> list[PodExecutor]:
    """The local Ray executor when the twin runs real Ray; nothing otherwise."""
    if settings.executor != "ray":
        return []
    require_extra("ray", 'running pods on real Ray (executor "ray"; executor "simulated" needs nothing more)')
    ray_dir, token_file = settings.ray_dir, settings.ray_token_file
    return [
        LocalRayExecutor(
            Path(ray_dir) if ray_dir else None, token_file=Path(token_file) if token_file else None
        )
    ]
