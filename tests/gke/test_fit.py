"""The cluster autoscaler's scheduling simulation (``flexq.gke.fit``): fits, its two halves, and pack."""

from __future__ import annotations

from flexq.gke.fit import NodeShape, fits, pack, pod_requests, resource_misfit, static_misfit

TPU_SHAPE = NodeShape(
    labels={"cloud.google.com/gke-nodepool": "tpu-pool", "cloud.google.com/gke-tpu-topology": "4x4"},
    taints=({"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"},),
    allocatable={  # the scheduler's integers: cpu in millicores
        "cpu": 180_000,
        "memory": 720 * 2**30,
        "google.com/tpu": 4,
        "pods": 110,
    },
)
TOLERATE_TPU = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]


def _pod(
    name: str, *, cpu: str = "1", tpu: int = 0, pool: str | None = "tpu-pool", tolerate: bool = True
) -> dict:
    requests = {"cpu": cpu, **({"google.com/tpu": str(tpu)} if tpu else {})}
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if pool:
        spec["nodeSelector"] = {"cloud.google.com/gke-nodepool": pool}
    if tolerate:
        spec["tolerations"] = TOLERATE_TPU
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


PODS = [
    _pod("worker-0", tpu=4),
    _pod("worker-1", tpu=4),
    _pod("head", cpu="2", pool="default-pool"),
    _pod("untolerated", tpu=4, tolerate=False),
    _pod("small-0", cpu="100"),
    _pod("small-1", cpu="100"),
    _pod("too-big", tpu=8),
]


def test_fits_is_its_labels_and_taints_then_its_resources() -> None:
    used = {"google.com/tpu": 4}
    for pod in PODS:
        for u in (None, used):
            want = static_misfit(pod, TPU_SHAPE) or resource_misfit(pod_requests(pod), TPU_SHAPE, u)
            assert fits(pod, TPU_SHAPE, u) == want
    assert fits(PODS[2], TPU_SHAPE) == "node(s) didn't match Pod's node affinity/selector"
    assert fits(PODS[3], TPU_SHAPE) == "node(s) had untolerated taint {google.com/tpu: present}"
    assert fits(PODS[0], TPU_SHAPE, used) == "Insufficient google.com/tpu"
    assert fits(PODS[6], TPU_SHAPE) == "Insufficient google.com/tpu"


def test_pack_first_fit_within_the_limit() -> None:
    # each TPU worker takes a node (4 chips each); each 100-cpu pod then fits beside one worker (101 of 180
    # cpu) but not beside the other 100-cpu pod; the head, the untolerated and the too-big pod never fit
    assert pack(PODS, TPU_SHAPE, 10) == (2, [PODS[0], PODS[1], PODS[4], PODS[5]])
    assert pack(PODS, TPU_SHAPE, 1) == (1, [PODS[0], PODS[4]])
    assert pack(PODS, TPU_SHAPE, 0) == (0, [])


def test_pack_with_the_callers_requests_and_placements_gives_the_same_answer() -> None:
    """The autoscaler passes the requests it keeps per pod version and a placement key per pod (pods with
    the same key share their labels-and-taints verdict): the answer is pack's own."""
    requests = [pod_requests(p) for p in PODS]
    placements = [repr((p["spec"].get("nodeSelector"), p["spec"].get("tolerations"))) for p in PODS]
    for limit in (0, 1, 2, 3, 10):
        assert pack(PODS, TPU_SHAPE, limit, requests, placements) == pack(PODS, TPU_SHAPE, limit)
