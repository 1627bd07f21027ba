"""The apps/v1 Deployment and ReplicaSet controllers through the Twin SDK, on the virtual clock: the steps of a
rolling update (maxSurge rounded up, maxUnavailable down), Recreate, minReadySeconds, the progress deadline,
revisionHistoryLimit, scaling to 0 and back, and a refused pod backing off rather than spinning (issue 36). The
same behaviour through kubectl over HTTPS is tests/http/test_deployments.py."""

from __future__ import annotations

import copy

import pytest

from flexq import Twin
from flexq.api import podsecurity
from flexq.kube import deployment_rules as rules

from .kube_builders import add_node, condition, events, node


def deployment(name: str, replicas: int, ns: str = "default", **spec: object) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
            **spec,
        },
    }


def with_image(dep: dict, image: str) -> dict:
    out = copy.deepcopy(dep)
    out["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return out


def sets(twin: Twin, name: str, ns: str = "default") -> dict[str, dict]:
    """The Deployment's ReplicaSets by revision."""
    return {
        rs["metadata"]["annotations"][rules.ANN_REVISION]: rs
        for rs in twin.list("ReplicaSet", ns, label_selector=f"app={name}")
    }


def scaling(twin: Twin, name: str) -> list[str]:
    return [e["message"] for e in events(twin, name, "ScalingReplicaSet")]


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "want"),
    [
        (4, "25%", "25%", (1, 1)),
        (10, "30%", "15%", (3, 1)),  # 3.0 up, 1.5 down
        (3, "25%", "25%", (1, 0)),  # 0.75 up to 1, down to 0
        (3, 0, 0, (0, 1)),  # both 0: one may be unavailable
        (5, 2, "50%", (2, 2)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailable_down(
    replicas: int, surge: object, unavailable: object, want: tuple[int, int]
) -> None:
    dep = deployment(
        "d",
        replicas,
        strategy={
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        },
    )
    assert rules.resolve_fenceposts(dep) == want


def test_the_template_hash_is_stable_and_ignores_its_own_label() -> None:
    t = deployment("d", 1)["spec"]["template"]
    h = rules.template_hash(t)
    assert h == rules.template_hash(copy.deepcopy(t)) and h != rules.template_hash(t, 1)
    assert all(c in "bcdfghjklmnpqrstvwxz2456789" for c in h) and 1 <= len(h) <= 10
    labelled = copy.deepcopy(t)
    labelled["metadata"]["labels"][rules.TEMPLATE_HASH] = h
    assert rules.same_template(t, labelled)


def test_a_rolling_update_goes_one_surge_step_at_a_time(twin: Twin) -> None:
    add_node(twin, node("n1", cpu="8"))
    dep = deployment("web", 4)  # 25%/25%: surge 1, unavailable 1
    twin.apply(dep)
    twin.advance(5)
    (first,) = sets(twin, "web").values()
    first_name = first["metadata"]["name"]
    assert first["status"]["availableReplicas"] == 4
    d = twin.get("Deployment", "web", "default")
    assert d["metadata"]["annotations"][rules.ANN_REVISION] == "1"
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"

    twin.apply(with_image(dep, "nginx:1.28"))
    twin.advance(30)
    by_rev = sets(twin, "web")
    second = by_rev["2"]["metadata"]["name"]
    assert by_rev["1"]["spec"]["replicas"] == 0 and by_rev["2"]["status"]["availableReplicas"] == 4
    msgs = scaling(twin, "web")
    # up by the surge (5 pods at most), then down to keep 3 available, as kube-controller-manager steps it
    assert msgs[:3] == [
        f"Scaled up replica set {first_name} from 0 to 4",
        f"Scaled up replica set {second} from 0 to 1",
        f"Scaled down replica set {first_name} from 4 to 3",
    ]
    assert msgs[-1] == f"Scaled down replica set {first_name} from 1 to 0"
    st = twin.get("Deployment", "web", "default")["status"]
    assert (st["replicas"], st["updatedReplicas"], st["availableReplicas"]) == (4, 4, 4)
    assert "unavailableReplicas" not in st
    assert len(twin.list("Pod", "default", label_selector="app=web")) == 4

    # scaled to 0 and back: the same ReplicaSet, no new revision
    twin.patch("Deployment", "web", {"spec": {"replicas": 0}}, "default")
    twin.advance(5)
    assert twin.list("Pod", "default", label_selector="app=web") == []
    assert sets(twin, "web")["2"]["spec"]["replicas"] == 0
    twin.patch("Deployment", "web", {"spec": {"replicas": 2}}, "default")
    twin.advance(5)
    assert sorted(sets(twin, "web")) == ["1", "2"] and sets(twin, "web")["2"]["status"]["readyReplicas"] == 2

    twin.delete("Deployment", "web", "default")
    twin.advance(5)
    assert twin.list("ReplicaSet", "default") == [] and twin.list("Pod", "default") == []


def test_recreate_scales_the_old_set_to_zero_before_the_new_one_is_made(twin: Twin) -> None:
    add_node(twin, node("n1"))
    dep = deployment("rec", 2, strategy={"type": "Recreate"})
    twin.apply(dep)
    twin.advance(5)
    twin.apply(with_image(dep, "nginx:1.28"))
    twin.advance(30)
    by_rev = sets(twin, "rec")
    old, new = by_rev["1"]["metadata"]["name"], by_rev["2"]["metadata"]["name"]
    assert scaling(twin, "rec") == [
        f"Scaled up replica set {old} from 0 to 2",
        f"Scaled down replica set {old} from 2 to 0",
        f"Scaled up replica set {new} from 0 to 2",
    ]
    created = [e for e in events(twin, new, "SuccessfulCreate")]
    deleted = [e for e in events(twin, old, "SuccessfulDelete")]
    assert len(created) == 2 and len(deleted) == 2
    assert max(e["lastTimestamp"] for e in deleted) <= min(e["firstTimestamp"] for e in created)


def test_min_ready_seconds_delays_availability(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(deployment("slow", 2, minReadySeconds=20))
    twin.advance(5)
    d = twin.get("Deployment", "slow", "default")
    assert d["status"]["readyReplicas"] == 2 and "availableReplicas" not in d["status"]
    assert d["status"]["unavailableReplicas"] == 2
    assert condition(d, "Available")["reason"] == "MinimumReplicasUnavailable"
    twin.advance(20)
    d = twin.get("Deployment", "slow", "default")
    assert d["status"]["availableReplicas"] == 2 and condition(d, "Available")["status"] == "True"
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"


def test_a_rollout_that_cannot_progress_exceeds_its_deadline(twin: Twin) -> None:
    add_node(twin, node("n1"))
    dep = deployment("stuck", 2, progressDeadlineSeconds=30)
    dep["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "none-such"}  # never scheduled
    twin.apply(dep)
    twin.advance(10)
    d = twin.get("Deployment", "stuck", "default")
    rs_name = next(iter(sets(twin, "stuck").values()))["metadata"]["name"]
    assert condition(d, "Progressing")["reason"] in ("NewReplicaSetCreated", "ReplicaSetUpdated")
    assert rules.rollout_message(d)[1] is False
    twin.advance(30)
    d = twin.get("Deployment", "stuck", "default")
    prog = condition(d, "Progressing")
    assert (prog["status"], prog["reason"], prog["message"]) == (
        "False",
        "ProgressDeadlineExceeded",
        f'ReplicaSet "{rs_name}" has timed out progressing.',
    )
    assert rules.rollout_message(d) == ('deployment "stuck" exceeded its progress deadline', False)


def test_revision_history_limit_deletes_the_oldest_empty_sets(twin: Twin) -> None:
    add_node(twin, node("n1"))
    dep = deployment("hist", 1, revisionHistoryLimit=1)
    for i in range(4):
        twin.apply(with_image(dep, f"nginx:1.{20 + i}"))
        twin.advance(20)
    assert sorted(sets(twin, "hist")) == ["3", "4"]
    assert twin.get("Deployment", "hist", "default")["metadata"]["annotations"][rules.ANN_REVISION] == "4"


def test_a_paused_deployment_makes_no_new_set_until_resumed(twin: Twin) -> None:
    add_node(twin, node("n1"))
    dep = deployment("p", 1)
    twin.apply(dep)
    twin.advance(5)
    paused = with_image(dep, "nginx:1.28")
    paused["spec"]["paused"] = True
    twin.apply(paused)
    twin.advance(10)
    assert sorted(sets(twin, "p")) == ["1"]
    assert condition(twin.get("Deployment", "p", "default"), "Progressing")["reason"] == "DeploymentPaused"
    twin.patch("Deployment", "p", {"spec": {"paused": False}}, "default")
    twin.advance(10)
    assert sorted(sets(twin, "p")) == ["1", "2"] and sets(twin, "p")["1"]["spec"]["replicas"] == 0


def test_a_refused_pod_backs_off_and_does_not_spin(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "locked", "labels": {podsecurity.ENFORCE: "restricted"}},
        }
    )
    twin.apply(deployment("bad", 2, ns="locked"))
    reconciles = twin.advance(600)
    (rs,) = twin.list("ReplicaSet", "locked")
    assert rs["status"]["replicas"] == 0
    assert condition(rs, "ReplicaFailure")["reason"] == "FailedCreate"
    (ev,) = events(twin, rs["metadata"]["name"], "FailedCreate")
    assert ev["message"].startswith(
        f'Error creating: pods "{rs["metadata"]["name"]}-" is forbidden: violates PodSecurity "restricted:latest"'
    )
    # 5 ms doubling: some eighteen tries in ten minutes, not one per reconcile at one instant
    assert 10 <= ev["count"] <= 20, ev["count"]
    assert reconciles < 500, reconciles
    d = twin.get("Deployment", "bad", "locked")
    assert condition(d, "ReplicaFailure")["reason"] == "FailedCreate"
    assert condition(d, "Available")["status"] == "False"
