"""Each Node's kubelet Lease in kube-node-lease (what ``kubectl describe node`` reads)."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.errors import Invalid

NODE = """
apiVersion: v1
kind: Node
metadata: {name: hand-made}
"""


def test_a_node_holds_its_lease_until_it_goes(twin: Twin) -> None:
    twin.apply(NODE)
    twin.advance(1)
    lease = twin.get("Lease", "hand-made", "kube-node-lease")
    node = twin.get("Node", "hand-made")
    assert lease["spec"]["holderIdentity"] == "hand-made" and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["spec"]["renewTime"].endswith("Z") and "." in lease["spec"]["renewTime"]
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "hand-made", "uid": node["metadata"]["uid"]}
    ]
    # a kubelet whose Lease is deleted writes a new one
    twin.delete("Lease", "hand-made", "kube-node-lease")
    twin.advance(1)
    assert twin.get("Lease", "hand-made", "kube-node-lease")["spec"]["holderIdentity"] == "hand-made"
    twin.delete("Node", "hand-made")
    twin.advance(1)
    assert twin.list("Lease", "kube-node-lease") == []
    # other Leases are the user's (leader election): validated, left alone
    with pytest.raises(Invalid, match="spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"):
        twin.apply("""
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock, namespace: default}
spec: {holderIdentity: me, leaseDurationSeconds: 0}
""")
