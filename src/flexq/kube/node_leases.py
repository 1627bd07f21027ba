"""The kubelet's node Lease: every Node holds a ``coordination.k8s.io/v1`` Lease of its name in
``kube-node-lease`` (``holderIdentity`` the node, ``leaseDurationSeconds`` 40, ``renewTime``, owned by the
Node), which ``kubectl describe node`` reads for its ``Lease:`` section.

Owns those Leases: created when a Node first appears (or its Lease is gone), deleted with the Node. A real
kubelet renews its Lease every 10 s; the twin's nodes post no heartbeats after registering (their Ready
condition keeps its first ``lastHeartbeatTime`` too), so the Lease keeps the ``renewTime`` of its creation.
Must not import other domain packages.
"""

from __future__ import annotations

import contextlib
import datetime as _dt

from flexq.api.coordination import NODE_LEASE_NAMESPACE, NODE_LEASE_SECONDS
from flexq.errors import AlreadyExists, NotFound
from flexq.runtime import Controller, Result, Watch
from flexq.store.store import WatchEvent


def _node_of_lease(ev: WatchEvent) -> list[tuple[str, str]]:
    m = ev.object["metadata"]
    return [("", m["name"])] if m.get("namespace") == NODE_LEASE_NAMESPACE else []


def micro_time(ts: float) -> str:
    """``metav1.MicroTime`` (RFC 3339 with microseconds)."""
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NodeLeases(Controller):
    """Keeps one Lease per Node in ``kube-node-lease``."""

    name = "node-lease"

    def watches(self) -> list[Watch]:
        return [Watch("Node", self._node_keys), Watch("Lease", _node_of_lease)]

    def _node_keys(self, ev: WatchEvent) -> list[tuple[str, str]]:
        """A Node's create and delete; its update only when it marks the Node for deletion (its Lease goes) or
        while it has no Lease (one is made): any other update (its Ready condition) finds nothing to do."""
        md = ev.object["metadata"]
        if (
            ev.type == "MODIFIED"
            and ev.old is not None
            and ev.old["metadata"].get("deletionTimestamp") == md.get("deletionTimestamp")
            and self.store.peek("Lease", md["name"], NODE_LEASE_NAMESPACE) is not None
        ):
            return []
        return [("", md["name"])]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        name = key[1]
        node = self.store.peek("Node", name)
        lease = self.store.peek("Lease", name, NODE_LEASE_NAMESPACE)
        if node is None or node["metadata"].get("deletionTimestamp"):
            if lease is not None:
                with contextlib.suppress(NotFound):
                    self.store.delete("Lease", name, NODE_LEASE_NAMESPACE)
            return None
        if lease is not None:
            return None
        if self.store.peek("Namespace", NODE_LEASE_NAMESPACE) is None:
            return None
        meta = node["metadata"]
        with contextlib.suppress(AlreadyExists):
            self.store.create(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": name,
                        "namespace": NODE_LEASE_NAMESPACE,
                        "ownerReferences": [
                            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta.get("uid")}
                        ],
                    },
                    "spec": {
                        "holderIdentity": name,
                        "leaseDurationSeconds": NODE_LEASE_SECONDS,
                        "renewTime": micro_time(self.ctx.now()),
                    },
                },
                take=True,
            )
        return None
