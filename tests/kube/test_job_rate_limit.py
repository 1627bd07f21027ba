"""Issue 49: the Job controller creates and deletes pods through a client limited as kube-controller-manager's
(``--kube-api-qps`` 20, ``--kube-api-burst`` 30, ``kube.client_limit``), as the ReplicaSet controller does: a
Job of 100,000 pods is built at 20 pods a second, not 500 a second; a small Job still gets its pods at once."""

from __future__ import annotations

from flexq import Twin


def _job(name: str, parallelism: int) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}},
        },
    }


def _pods(t: Twin, job: str) -> int:
    return len([p for p in t.list("pod", "default") if p["metadata"]["name"].startswith(job + "-")])


def test_a_wide_job_is_built_at_the_clients_rate() -> None:
    t = Twin(clock="virtual")
    try:
        t.apply(_job("wide", 100_000))
        t.advance(10)
        n = _pods(t, "wide")
        assert 30 <= n <= 30 + 20 * 10 + 1, n  # the burst, then 20 a second (not 500 a second)
        t.advance(10)
        m = _pods(t, "wide")
        assert 20 * 10 - 21 <= m - n <= 20 * 10 + 1, (n, m)  # and it keeps going at that rate
        t.delete("job", "wide")
        t.apply(_job("small", 5))
        t.advance(30)  # the bucket refills
        t.apply(_job("small2", 5))
        t.advance(0.01)
        assert _pods(t, "small2") == 5  # within the burst: at once
    finally:
        t.close()
