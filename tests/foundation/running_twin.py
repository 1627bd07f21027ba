"""The tutorial's cluster with its job 1 running half an hour into its hour (every kind the controllers read has
an object), for the predicate tests."""

from __future__ import annotations

from flexq import Twin
from flexq.cli import tutorial as T


def running_tutorial_twin() -> Twin:
    t = Twin(clock="virtual")
    for path, body in (
        T.create_cluster_request("p"),
        T.create_node_pool_request("p", dws=False),
        T.create_node_pool_request("p", dws=True),
    ):
        t.gke("POST", path, body)
        t.run_until_idle(600)
    t.apply(T.queue_yaml(api="v1beta2"))
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    t.apply(
        T.rayjob_yaml(1).replace(
            'elastic-job: "true"', 'elastic-job: "true"\n    twin.flexq.dev/run-seconds: "3600"'
        )
    )
    t.advance(1800)  # running: every kind below has an object
    return t
