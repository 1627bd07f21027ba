"""Twin-only knobs are objects like any other: a CapacityProfile applies through the cluster's API."""

from __future__ import annotations

from flexq import Twin


def test_capacity_profile_applies_and_reads_back(twin: Twin) -> None:
    twin.apply("""
apiVersion: twin.flexq.dev/v1alpha1
kind: CapacityProfile
metadata: {name: default}
spec:
  rules:
  - match: {provisioningModels: [on-demand]}
    available: 0
""")
    got = twin.get("capacityprofile", "default")
    assert got["spec"]["rules"][0]["available"] == 0
    assert twin.get("capprof", "default")["metadata"]["name"] == "default"
