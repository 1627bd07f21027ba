"""Node registration for Nodes nobody else looks after (``kubectl apply -f node.yaml`` on a twin).

Owns the ``status`` of a Node that has no ``status.conditions`` at all, i.e. one created by hand rather
than by the twin's GKE node pools (which always write a ``Ready`` condition and stay its only writer):
it is given what a registering kubelet posts — ``capacity`` and ``allocatable`` (from the annotation
``twin.flexq.dev/capacity``, a JSON map such as ``{"cpu": "8", "memory": "32Gi", "google.com/tpu": "4"}``,
else ``DEFAULT_CAPACITY``), ``Ready=True`` (reason ``KubeletReady``), an ``InternalIP`` address and
``nodeInfo``. Written once; later changes are the user's. Must not import other domain packages.
"""

from __future__ import annotations

import hashlib
import json

from flexq.api.core_defaults import kubelet_ids
from flexq.clock import format_time
from flexq.runtime import Controller, Result, Watch
from flexq.store.store import WatchEvent

ANN_CAPACITY = "twin.flexq.dev/capacity"
DEFAULT_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}


def registered_status(node: dict, now: float) -> dict:
    """The status a kubelet posts when it registers ``node``."""
    raw = (node["metadata"].get("annotations") or {}).get(ANN_CAPACITY)
    try:
        extra = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        extra = {}
    capacity = {
        **DEFAULT_CAPACITY,
        **{str(k): str(v) for k, v in (extra if isinstance(extra, dict) else {}).items()},
    }
    digest = hashlib.sha256(node["metadata"]["name"].encode()).digest()
    ts = format_time(now)
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": ts,
                "lastTransitionTime": ts,
            }
        ],
        "addresses": [
            {"type": "InternalIP", "address": f"10.128.{digest[0]}.{digest[1] or 1}"},
            {"type": "Hostname", "address": node["metadata"]["name"]},
        ],
        "nodeInfo": {
            "kubeletVersion": "v1.34.1",
            "containerRuntimeVersion": "containerd://1.7.28",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "osImage": "flexq twin node",
            "kernelVersion": "",
            "kubeProxyVersion": "",
            **kubelet_ids(node["metadata"]["name"]),
        },
    }


def _unregistered(ev: WatchEvent) -> bool:
    """A Node event the registration may act on: a create, or an update that leaves the Node without conditions."""
    return ev.type == "ADDED" or (
        ev.type == "MODIFIED" and not (ev.object.get("status") or {}).get("conditions")
    )


class NodeRegistration(Controller):
    """Posts a registering kubelet's status on hand-made Nodes."""

    name = "node-registration"

    def watches(self) -> list[Watch]:
        # it posts a status only on a Node without conditions: a delete, or an update leaving conditions, has
        # nothing for it
        return [Watch("Node", predicate=_unregistered)]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        node = self.store.peek("Node", key[1])  # read-only
        if node is None or (node.get("status") or {}).get("conditions"):
            return None
        node = dict(node)  # only its top-level status is replaced
        node["status"] = registered_status(node, self.ctx.now())
        self.store.update_status(node)
        return None
