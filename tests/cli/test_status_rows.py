"""``flexq status`` rows: the pure function over plain objects, then over what the twin's controllers write."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flexq import Twin
from flexq.api import gke_catalog as catalog
from flexq.cli import status as st
from flexq.cli import tutorial
from flexq.cli.views import status_text
from flexq.clock import format_duration, format_time

T0 = 1_800_000_000.0
HEAD = {
    "name": "head",
    "count": 1,
    "template": {
        "spec": {
            "nodeSelector": {"cloud.google.com/gke-nodepool": "default-pool"},
            "containers": [{"name": "ray-head", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}],
        }
    },
}
TPU = {
    "name": "tpu-group",
    "count": 4,
    "template": {
        "spec": {
            "nodeSelector": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
            },
            "containers": [
                {
                    "name": "ray-worker",
                    "resources": {"limits": {"cpu": "8", "google.com/tpu": "4", "memory": "16Gi"}},
                }
            ],
        }
    },
}


def cond(ctype: str, status: str, reason: str, message: str, at: float) -> dict:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(at),
    }


def workload(
    name: str,
    *conds: dict,
    flavors: tuple[str, str] | None = None,
    checks: list | None = None,
    active: bool = True,
    created: float = T0,
) -> dict:
    status: dict = {"conditions": list(conds)}
    if flavors:
        status["admission"] = {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {"name": "head", "count": 1, "flavors": {"cpu": flavors[0], "memory": flavors[0]}},
                {
                    "name": "tpu-group",
                    "count": 4,
                    "flavors": {"cpu": flavors[1], "memory": flavors[1], "google.com/tpu": flavors[1]},
                },
            ],
        }
    if checks:
        status["admissionChecks"] = checks
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": format_time(created),
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "controller": True,
                    "name": name.removeprefix("rayjob-").rsplit("-", 1)[0],
                    "uid": "x",
                }
            ],
        },
        "spec": {"queueName": "user-queue", "active": active, "podSets": [HEAD, TPU]},
        "status": status,
    }


def flavor(name: str, pool: str) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": pool}},
    }


def node(name: str, pool: str, machine: str, provisioning: str = "standard") -> dict:
    mt = catalog.machine_type(machine)
    model = {"standard": "on-demand", "spot": "spot", "flex-start": "flex-start"}[provisioning]
    labels = catalog.node_labels(
        mt,
        pool=pool,
        topology="4x4" if mt.tpu else None,
        model=model,  # type: ignore[arg-type]
        queued=False,
        zone="us-east5-b",
    )
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


FLAVORS = [
    flavor("default-cpu", "default-pool"),
    flavor("on-demand", "on-demand-pool"),
    flavor("dws", "dws-pool"),
]
NODES = [node("n1", "default-pool", "n2-standard-16")]
RESERVED = cond(
    "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue", T0 + 5
)


@pytest.mark.parametrize(
    "wl, state, why",
    [
        (
            workload(
                "rayjob-a-1",
                cond(
                    "QuotaReserved",
                    "False",
                    "Pending",
                    "couldn't assign flavors to pod set tpu-group: insufficient quota",
                    T0,
                ),
            ),
            "Pending",
            "couldn't assign flavors to pod set tpu-group: insufficient quota",
        ),
        (
            workload(
                "rayjob-b-1",
                RESERVED,
                cond(
                    "Admitted",
                    "False",
                    "UnsatisfiedAdmissionChecks",
                    "The workload has failed admission checks",
                    T0 + 5,
                ),
                flavors=("default-cpu", "dws"),
                checks=[
                    {
                        "name": "dws-prov",
                        "state": "Pending",
                        "message": "Provisioning Request wasn't provisioned.",
                    }
                ],
            ),
            "QuotaReserved",
            "dws-prov: Pending (Provisioning Request wasn't provisioned.)",
        ),
        (
            workload(
                "rayjob-c-1",
                RESERVED,
                cond("Admitted", "True", "Admitted", "The workload is admitted", T0 + 5),
                cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", T0 + 5),
                flavors=("default-cpu", "on-demand"),
            ),
            "Admitted",
            "Not all pods are ready or succeeded",
        ),
        (
            workload(
                "rayjob-d-1",
                RESERVED,
                cond("Admitted", "True", "Admitted", "", T0 + 5),
                cond("PodsReady", "True", "Started", "All pods reached readiness", T0 + 60),
                flavors=("default-cpu", "on-demand"),
            ),
            "Running",
            "",
        ),
        (
            workload(
                "rayjob-e-1",
                RESERVED,
                cond("Admitted", "True", "Admitted", "", T0 + 5),
                cond("Finished", "True", "Succeeded", "Job finished successfully", T0 + 600),
                flavors=("default-cpu", "on-demand"),
            ),
            "Succeeded",
            "Job finished successfully",
        ),
        (
            workload(
                "rayjob-f-1",
                cond(
                    "Evicted",
                    "True",
                    "DeactivatedDueToAdmissionCheck",
                    "The workload is deactivated due to an AdmissionCheck",
                    T0 + 100,
                ),
                active=False,
            ),
            "Deactivated",
            "The workload is deactivated due to an AdmissionCheck",
        ),
        (
            workload(
                "rayjob-g-1",
                cond("Evicted", "True", "AdmissionCheck", "Evicted due to AdmissionCheck", T0 + 100),
                cond("Requeued", "False", "AdmissionCheck", "Evicted due to AdmissionCheck", T0 + 100),
            ),
            "Evicted",
            "Evicted due to AdmissionCheck",
        ),
    ],
    ids=["pending", "quota-reserved-dws", "admitted", "running", "succeeded", "deactivated", "evicted"],
)
def test_state_and_why(wl: dict, state: str, why: str) -> None:
    [row] = st.workload_rows(st.StatusSnapshot(workloads=[wl], flavors=FLAVORS, nodes=NODES), T0 + 900)
    assert (row.state, row.why) == (state, why)
    assert row.job == f"RayJob/{wl['metadata']['ownerReferences'][0]['name']}"
    assert row.queue == "user-queue"


def test_plan_waited_and_cost_on_demand() -> None:
    wl = workload(
        "rayjob-job-1",
        RESERVED,
        cond("Admitted", "True", "Admitted", "", T0 + 30),
        cond("Finished", "True", "Succeeded", "done", T0 + 30 + 3600),
        flavors=("default-cpu", "on-demand"),
    )
    [row] = st.workload_rows(st.StatusSnapshot(workloads=[wl], flavors=FLAVORS, nodes=NODES), T0 + 99999)
    assert row.plan == (("head", "default-cpu"), ("tpu-group", "on-demand"))
    assert row.flavor_of("tpu-group") == "on-demand" and row.cluster_queue == "cluster-queue"
    assert row.waited == 30
    v6e = catalog.machine_type("ct6e-standard-4t")
    n2 = catalog.machine_type("n2-standard-16")
    # One hour: four whole v6e hosts on demand (no nodes left: inferred from the TPU selector) plus 2 of the
    # head node's 16 vCPUs.
    want = 4 * catalog.price_per_hour(v6e, "on-demand") + catalog.price_per_hour(n2, "on-demand") * Fraction(
        2, 16
    )
    assert row.cost == pytest.approx(float(want))
    assert float(4 * catalog.price_per_hour(v6e, "on-demand")) == pytest.approx(43.2)


def test_cost_uses_flex_start_price_and_node_labels() -> None:
    checks = [
        {
            "name": "dws-prov",
            "state": "Ready",
            "message": "Provisioning Request was successfully provisioned.",
            "podSetUpdates": [
                {
                    "name": "tpu-group",
                    "annotations": {
                        "autoscaling.x-k8s.io/consume-provisioning-request": "rayjob-job-2-dws-prov-1",
                        "autoscaling.x-k8s.io/provisioning-class-name": "queued-provisioning.gke.io",
                    },
                }
            ],
        }
    ]
    wl = workload(
        "rayjob-job-2",
        RESERVED,
        cond("Admitted", "True", "Admitted", "", T0 + 100),
        flavors=("default-cpu", "dws"),
        checks=checks,
    )
    pr = {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": "rayjob-job-2-dws-prov-1",
            "namespace": "default",
            "ownerReferences": [{"kind": "Workload", "name": "rayjob-job-2", "uid": "uid-rayjob-job-2"}],
        },
        "status": {
            "conditions": [
                cond("Accepted", "True", "Accepted", "", T0 + 6),
                cond("Provisioned", "True", "Provisioned", "Provisioned.", T0 + 99),
            ]
        },
    }
    v6e = catalog.machine_type("ct6e-standard-4t")
    half_hour = T0 + 100 + 1800
    # Without nodes: flex-start inferred from the check's podSetUpdates (consume-provisioning-request).
    [row] = st.workload_rows(
        st.StatusSnapshot(workloads=[wl], provisioning_requests=[pr], flavors=FLAVORS), half_hour
    )
    assert row.cost == pytest.approx(float(4 * catalog.price_per_hour(v6e, "flex-start")) / 2)
    assert row.provisioning == "rayjob-job-2-dws-prov-1: Provisioned (Provisioned.)"
    assert row.waited == 100 and row.state == "Admitted"
    # With DWS nodes present, their labels decide (here, spot-labelled nodes would be billed as spot).
    spot_nodes = [*NODES, node("t1", "dws-pool", "ct6e-standard-4t", "spot")]
    [row] = st.workload_rows(
        st.StatusSnapshot(workloads=[wl], provisioning_requests=[pr], flavors=FLAVORS, nodes=spot_nodes),
        half_hour,
    )
    n2 = catalog.machine_type("n2-standard-16")
    want = (4 * catalog.price_per_hour(v6e, "spot") + catalog.price_per_hour(n2, "on-demand") / 8) / 2
    assert row.cost == pytest.approx(float(want))


def test_latest_provisioning_request_and_its_state() -> None:
    wl = workload(
        "rayjob-job-3",
        RESERVED,
        flavors=("default-cpu", "dws"),
        checks=[{"name": "dws-prov", "state": "Pending", "message": ""}],
    )

    def pr(n: int, *conds: dict) -> dict:
        return {
            "metadata": {
                "name": f"rayjob-job-3-dws-prov-{n}",
                "namespace": "default",
                "ownerReferences": [{"kind": "Workload", "name": "rayjob-job-3", "uid": "uid-rayjob-job-3"}],
            },
            "status": {"conditions": list(conds)},
        }

    failed = pr(1, cond("Failed", "True", "Failed", "no capacity", T0))
    # attempt 10 sorts after attempt 9 (numerically, not as text)
    prs = [
        pr(
            10,
            cond("Accepted", "True", "Accepted", "", T0),
            cond("Provisioned", "False", "Waiting", "ETA 12:00", T0),
        ),
        failed,
        pr(9),
    ]
    [row] = st.workload_rows(st.StatusSnapshot(workloads=[wl], provisioning_requests=prs), T0 + 60)
    assert row.provisioning == "rayjob-job-3-dws-prov-10: Accepted (ETA 12:00)"
    assert row.why == "dws-prov: Pending; ProvisioningRequest attempt 10: Accepted (ETA 12:00)"
    assert st.provisioning_state(failed) == ("Failed", "no capacity")
    assert st.provisioning_state(pr(2)) == ("Created", "")


def test_rows_sorted_by_creation_and_rendered() -> None:
    late = workload("rayjob-late-1", created=T0 + 50)
    early = workload("rayjob-early-1", created=T0)
    rows = st.workload_rows(st.StatusSnapshot(workloads=[late, early]), T0 + 100)
    assert [r.workload for r in rows] == ["rayjob-early-1", "rayjob-late-1"]
    assert [r.waited for r in rows] == [100, 50]
    text = status_text(rows)
    assert "JOB" in text and "early" in text and "1m40s" in text and "$0.00" in text
    assert st.rows_as_dicts(rows)[0]["waitedSeconds"] == 100


def test_the_fallbacks_note_leads_the_why_column() -> None:
    """A job flexq's fallback moved says so, in one line, in WHY (and in the JSON rows), ahead of Kueue's words."""
    from flexq.fallback.model import ANN_MOVED

    assert st.FALLBACK_MOVED == ANN_MOVED
    note = "on-demand stocked out (ZONE_RESOURCE_POOL_EXHAUSTED) for 5m12s → moved to dws"
    moved = workload(
        "rayjob-moved-1",
        RESERVED,
        cond("Admitted", "True", "Admitted", "admitted", T0 + 9),
        flavors=("default-cpu", "dws"),
    )
    other = workload("rayjob-other-1", cond("QuotaReserved", "False", "Pending", "insufficient quota", T0))
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "moved", "namespace": "default", "annotations": {ANN_MOVED: note}},
    }
    stranger = {**job, "metadata": {**job["metadata"], "namespace": "elsewhere"}}
    rows = st.workload_rows(
        st.StatusSnapshot(workloads=[moved, other], flavors=FLAVORS, jobs=[stranger, job]), T0 + 60
    )
    by = {r.workload: r for r in rows}
    assert by["rayjob-moved-1"].why == f"{note}; waiting for pods"
    assert by["rayjob-other-1"].why == "insufficient quota"
    assert note in status_text(rows, width=400)
    assert st.rows_as_dicts(rows)[[r.workload for r in rows].index("rayjob-moved-1")]["why"].startswith(note)
    running = workload(
        "rayjob-moved-1",
        RESERVED,
        cond("Admitted", "True", "Admitted", "", T0 + 9),
        cond("PodsReady", "True", "PodsReady", "", T0 + 30),
        flavors=("default-cpu", "dws"),
    )
    [row] = st.workload_rows(st.StatusSnapshot(workloads=[running], jobs=[job]), T0 + 60)
    assert (row.state, row.why) == ("Running", note)


@pytest.mark.parametrize(
    "secs, text", [(0, "0s"), (59.9, "59s"), (61, "1m01s"), (3600, "1h00m"), (90061, "1d01h"), (-5, "0s")]
)
def test_format_duration(secs: float, text: str) -> None:
    assert format_duration(secs) == text


def test_rows_from_the_twins_controllers() -> None:
    """The tutorial on a virtual twin: rows say job 1 is on on-demand, job 2 waits for DWS, then both finish."""
    twin = Twin(clock="virtual")
    try:
        op = twin.gke("POST", *tutorial.create_cluster_request("p"))
        twin.run_until_idle(600)
        assert (
            twin.gke("GET", f"/v1/projects/p/locations/us-east5-b/operations/{op['name']}")["status"]
            == "DONE"
        )
        for dws in (False, True):
            twin.gke("POST", *tutorial.create_node_pool_request("p", dws=dws))
            twin.advance(120)
        twin.apply(tutorial.queue_yaml(api="v1beta2"))
        twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "jax-train-script"},
                "data": {"train.py": tutorial.train_script()},
            }
        )
        for i in (1, 2):
            import yaml

            job = yaml.safe_load(tutorial.rayjob_yaml(i))
            job["metadata"]["annotations"]["twin.flexq.dev/run-seconds"] = "600"
            twin.apply(job)
        twin.advance(3)

        def rows() -> dict[str, st.WorkloadRow]:
            snap = st.StatusSnapshot(
                workloads=twin.list("Workload", "default"),
                provisioning_requests=twin.list("ProvisioningRequest", "default"),
                nodes=twin.list("Node"),
                flavors=twin.list("ResourceFlavor"),
            )
            return {r.job: r for r in st.workload_rows(snap, twin.now())}

        now = rows()
        one, two = now["RayJob/rayjob-tpu-v6e-dws-1"], now["RayJob/rayjob-tpu-v6e-dws-2"]
        assert one.flavor_of("tpu-group") == "on-demand" and one.state in ("Admitted", "Running")
        assert two.flavor_of("tpu-group") == "dws" and two.state == "QuotaReserved"
        assert "dws-prov: Pending" in two.why and "ProvisioningRequest attempt 1: Accepted" in two.why
        assert two.provisioning.startswith(f"{two.workload}-dws-prov-1: Accepted")
        twin.run_until_idle(3 * 3600)
        end = rows()
        assert {r.state for r in end.values()} == {"Succeeded"}
        one, two = end["RayJob/rayjob-tpu-v6e-dws-1"], end["RayJob/rayjob-tpu-v6e-dws-2"]
        # Ten minutes of a v6e 4x4 slice: on demand 43.20 $/h, flex-start half of it; plus a bit of head.
        assert 43.2 / 6 <= one.cost < 43.2 / 6 * 1.3
        assert 21.6 / 6 <= two.cost < 21.6 / 6 * 1.3
        assert two.waited > one.waited
    finally:
        twin.close()
