"""``GkeCache.internal_ips``: the GKE nodes' InternalIP addresses, kept per Node event (a new node takes the
lowest free one: ``gke.nodes`` asks the cache instead of gathering every node's addresses again)."""

from __future__ import annotations

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.gke.cache import GkeCache
from flexq.store import Store


def _node(name: str, ip: str, pool: str | None = "default-pool") -> dict:
    labels = {"cloud.google.com/gke-nodepool": pool} if pool else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]
        },
    }


def test_internal_ips_follow_the_gke_nodes() -> None:
    store = Store(default_registry(), VirtualClock())
    cache = GkeCache(store)
    store.create(_node("a", "10.128.0.2"), keep_status=True)
    store.create(_node("b", "10.128.0.3"), keep_status=True)
    store.create(_node("hand-made", "10.128.0.9", pool=None), keep_status=True)  # not a GKE node
    assert cache.internal_ips == {"10.128.0.2": 1, "10.128.0.3": 1}
    b = store.peek("Node", "b")
    assert b is not None
    store.update_status({**b, "status": {"addresses": [{"type": "InternalIP", "address": "10.128.0.4"}]}})
    assert cache.internal_ips == {"10.128.0.2": 1, "10.128.0.4": 1}
    store.delete("Node", "a")
    assert cache.internal_ips == {"10.128.0.4": 1}
    cache.close()
