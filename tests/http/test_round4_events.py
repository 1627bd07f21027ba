"""Issue 49, item 4 over the wire: a tenant who may only create and patch Deployments in its namespace (kubectl,
with its own token) floods and flaps one; the Events the twin's controllers write about the Deployment and its
ReplicaSets are tens (client-go's EventCorrelator: similar events combined, 25 per object then one per five
minutes), not one per pod made or deleted."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.http.conftest import Served
from tests.http.test_rbac_served import kubeconfig_with, kubectl_as, token_for

NS = "round4-events"


@pytest.fixture(scope="module")
def tenant(served: Served, tmp_path_factory: pytest.TempPathFactory) -> str:
    served.kubectl("create", "namespace", NS)
    served.kubectl("create", "serviceaccount", "tenant", "-n", NS)
    served.kubectl(
        "create", "role", "deploy", "-n", NS, "--verb=get,create,patch", "--resource=deployments.apps"
    )
    served.kubectl(
        "create", "rolebinding", "deploy", "-n", NS, "--role=deploy", f"--serviceaccount={NS}:tenant"
    )
    return kubeconfig_with(served, token_for(served, NS, "tenant"), Path(tmp_path_factory.mktemp("t")) / "kc")


def _owner_events(served: Served) -> Counter:
    items = json.loads(served.kubectl("get", "events", "-n", NS, "-o", "json").stdout)["items"]
    return Counter(
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"])
        for e in items
        if e["involvedObject"]["kind"] in ("Deployment", "ReplicaSet")
    )


def _pods(served: Served) -> int:
    return len(json.loads(served.kubectl("get", "pods", "-n", NS, "-o", "json").stdout)["items"])


def test_a_flooded_and_flapped_deployment_writes_tens_of_events(served: Served, tenant: str) -> None:
    r = kubectl_as(
        served, tenant, "create", "deployment", "flood", "-n", NS, "--image=busybox", "--replicas=80"
    )
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    while _pods(served) < 80 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _pods(served) == 80
    events = _owner_events(served)
    created = sum(n for (kind, _, reason), n in events.items() if reason == "SuccessfulCreate")
    assert created == 10, events  # nine "Created pod: <name>", then one combined Event for the rest
    items = json.loads(served.kubectl("get", "events", "-n", NS, "-o", "json").stdout)["items"]
    combined = [e for e in items if e["message"].startswith("(combined from similar events): Created pod: ")]
    assert len(combined) == 1 and combined[0]["count"] > 1
    for i in range(12):  # flap: 0 <-> 40
        patch = json.dumps({"spec": {"replicas": 0 if i % 2 == 0 else 40}})
        r = kubectl_as(served, tenant, "patch", "deployment", "flood", "-n", NS, "--type=merge", "-p", patch)
        assert r.returncode == 0, r.stderr
        time.sleep(0.3)
    time.sleep(2)
    events = _owner_events(served)
    per_object = Counter()
    for (kind, name, _), n in events.items():
        per_object[(kind, name)] += n
    assert all(n <= 25 for n in per_object.values()), per_object  # the spam filter's burst, per object
    assert sum(events.values()) <= 60, events
