"""The SDK's reading of a twin's cluster as the forecast reads any cluster (``flexq.forecast.state``).

Owns: ``state_from_twin``: one hop onto the twin's loop takes the stored objects; the node pools come from the
twin's GKE API (inferred from what Kubernetes shows when there is no GKE cluster); what the twin declares of
itself (its CapacityProfile in force, its executor: ``flexq.forecast.declared``) unless it is read as a real
cluster would be (``declared=False``: what the calibration bench measures).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from flexq.forecast.state import KINDS, KUEUE_CONFIG, ClusterState, events_read, infer_pools, pools_from_gke

if TYPE_CHECKING:
    from flexq.twin import Twin

__all__ = ["state_from_twin"]


def state_from_twin(twin: Twin, declared: bool = True) -> ClusterState:
    """The current cluster of ``twin``, node pools from its GKE API. One hop onto the twin's loop takes the
    stored objects (references: a stored object is never changed in place, a write stores a new one); they are
    copied off the loop, so a live twin's writes never wait for the copy. ``declared``: with what the twin
    declares of itself (``ClusterState.twin``: its CapacityProfile in force and its executor, the truth a real
    cluster keeps to itself); False reads it as a real cluster."""
    import json

    store = twin.store
    kinds = []
    for attr, _group, _versions, plural in KINDS:
        try:
            kinds.append((attr, store.info(plural).kind))
        except Exception:  # a kind this cluster does not serve (the RayOperator addon off)
            continue

    def take() -> tuple[float, dict[str, list[dict]], dict | None, dict | None]:
        refs = {attr: list(store.peek_list(kind)) for attr, kind in kinds}
        said = twin.runtime.declaration() if declared else None
        return twin.now(), refs, store.peek("ConfigMap", KUEUE_CONFIG[1], KUEUE_CONFIG[0]), said

    now, refs, config, said = twin._call(take)
    st = ClusterState(now=now)
    for attr, items in refs.items():
        if attr == "events":
            items = events_read(items)
        items = json.loads(json.dumps(items))
        if attr in ("rayjobs", "batch_jobs"):
            kind = "RayJob" if attr == "rayjobs" else "Job"
            items = [{**i, "kind": kind} for i in items]
        setattr(st, attr, items)
    st.kueue_config = json.loads(json.dumps(config)) if config is not None else None
    settings = twin.runtime.settings
    st.kueue_version = twin.core.settings.kueue.version
    if said is not None:
        st.twin = json.loads(json.dumps(said))
    if settings.gke_cluster:
        st.cluster = {
            "project": settings.gke_project,
            "location": settings.gke_location,
            "name": settings.gke_cluster,
        }
        path = (
            f"/v1/projects/{settings.gke_project}/locations/{settings.gke_location}/clusters/"
            f"{settings.gke_cluster}/nodePools"
        )
        with contextlib.suppress(Exception):
            st.node_pools = pools_from_gke(twin.gke("GET", path).get("nodePools") or [])
    if not st.node_pools:
        st.node_pools = infer_pools(st)
    return st
