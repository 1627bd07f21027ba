"""`flexq status` and the dashboard read a Workload the same way (issue 39, item 4): its state, its job (the
controller owner, never merely the first owner reference) and how long it waited for admission.

Before, the two had their own copies and disagreed: an elastic job's replaced slice (Finished with reason
``WorkloadSliceReplaced``) was "Replaced" in the CLI and "Finished" on the dashboard, a Workload whose only owner
reference is not a controller showed that owner as its job, and a finished Workload's wait kept growing on the
dashboard (its Admitted condition no longer True) while the CLI stopped it at the finish.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flexq.cli import status as cli_status
from flexq.clock import format_time
from flexq.http.dashboard import views

T0 = 1_798_761_600.0
TYPES = ("Finished", "Admitted", "PodsReady", "QuotaReserved", "Evicted")
REASONS = ("Succeeded", "Failed", "WorkloadSliceReplaced", "Deleted", "")


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    conds = []
    for t in draw(st.lists(st.sampled_from(TYPES), unique=True, max_size=5)):
        conds.append(
            {
                "type": t,
                "status": draw(st.sampled_from(["True", "False"])),
                "reason": draw(st.sampled_from(REASONS)) if t == "Finished" else "Because",
                "message": f"{t} message",
                "lastTransitionTime": format_time(T0 + draw(st.integers(0, 7200))),
            }
        )
    refs = [
        {
            "apiVersion": "ray.io/v1",
            "kind": kind,
            "name": f"{kind.lower()}-{i}",
            "uid": f"u{i}",
            "controller": ctl,
        }
        for i, (kind, ctl) in enumerate(
            draw(st.lists(st.tuples(st.sampled_from(["RayJob", "Job"]), st.booleans()), max_size=2))
        )
    ]
    wl: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "wl",
            "namespace": "default",
            "creationTimestamp": format_time(T0),
            "ownerReferences": refs,
        },
        "spec": {"queueName": "user-queue", "podSets": []},
        "status": {"conditions": conds},
    }
    if draw(st.booleans()):
        wl["spec"]["active"] = draw(st.booleans())
    return wl


@settings(max_examples=300, deadline=None, database=None)
@given(workloads(), st.integers(0, 10_000))
def test_status_and_dashboard_agree(wl: dict[str, Any], later: int) -> None:
    now = T0 + 7200 + later
    [row] = cli_status.workload_rows(cli_status.StatusSnapshot(workloads=[wl]), now)
    page = views._workload_row(wl, [], [], {}, {}, now)
    assert row.state == page["state"]
    assert row.job == page["job"]
    assert row.waited == page["waited"]


def test_a_replaced_slice_and_an_owner_that_is_not_a_controller() -> None:
    wl = {
        "metadata": {
            "name": "wl",
            "namespace": "default",
            "creationTimestamp": format_time(T0),
            "ownerReferences": [{"kind": "RayJob", "name": "other", "uid": "u1"}],  # no controller
        },
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "WorkloadSliceReplaced",
                    "message": "replaced",
                    "lastTransitionTime": format_time(T0 + 600),
                }
            ]
        },
    }
    [row] = cli_status.workload_rows(cli_status.StatusSnapshot(workloads=[wl]), T0 + 3600)
    page = views._workload_row(wl, [], [], {}, {}, T0 + 3600)
    assert row.state == page["state"] == "Replaced"
    assert row.job == page["job"] == ""
    assert row.waited == page["waited"] == 600.0  # up to the finish, not to now
