"""Issue 49, item 2: a Deployment cannot fill the twin's memory. kube-controller-manager's client for the
ReplicaSet controller is rate limited (``--kube-api-qps 20``, ``--kube-api-burst 30``): a Deployment of two
billion replicas, or one whose replicas flap between 0 and 300, makes and deletes pods at 20 a second. Before,
each sync made up to 500 at one instant and was woken again at once: 45,000 pods in 30 s."""

from __future__ import annotations

from flexq import Twin


def _deployment(replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "flood", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "flood"}},
            "template": {
                "metadata": {"labels": {"app": "flood"}},
                "spec": {"containers": [{"name": "c", "image": "b"}]},
            },
        },
    }


def _pods(t: Twin) -> int:
    return len([p for p in t.list("pod", "default") if p["metadata"]["name"].startswith("flood-")])


def test_a_huge_deployment_is_built_at_the_clients_rate() -> None:
    t = Twin(clock="virtual")
    try:
        t.apply(_deployment(2147483647))
        t.advance(10)
        n = _pods(t)
        assert 30 <= n <= 30 + 20 * 10 + 1, n  # the burst, then 20 a second
        t.advance(10)
        assert _pods(t) - n <= 20 * 10 + 1
    finally:
        t.close()


def test_a_flapping_deployment_churns_at_the_clients_rate() -> None:
    t = Twin(clock="virtual")
    try:
        created = 0
        seen: set[str] = set()
        for i in range(40):
            t.apply(_deployment(300 if i % 2 == 0 else 0))
            t.advance(0.5)
            names = {
                p["metadata"]["name"]
                for p in t.list("pod", "default")
                if p["metadata"]["name"].startswith("flood-")
            }
            created += len(names - seen)
            seen |= names
        # 20 s of flapping: at most the burst and 20 calls a second between creations and deletions
        assert created <= 30 + 20 * 20 + 1, created
    finally:
        t.close()
