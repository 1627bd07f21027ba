"""Same seed, same inputs: the virtual twin ends in a byte-identical state, event for event."""

from __future__ import annotations

import json

from flexq import Twin
from flexq.cli import tutorial as T


def _run(seed: int) -> tuple[str, int]:
    twin = Twin(clock="virtual", seed=seed)
    try:
        for path, body in (
            T.create_cluster_request("p"),
            T.create_node_pool_request("p", dws=False),
            T.create_node_pool_request("p", dws=True),
        ):
            twin.gke("POST", path, body)
            twin.run_until_idle(600)
        twin.apply(T.queue_yaml(api="v1beta2"))
        for i in (1, 2, 3):
            twin.apply(
                T.rayjob_yaml(i).replace(
                    'elastic-job: "true"', 'elastic-job: "true"\n    twin.flexq.dev/run-seconds: "900"'
                )
            )
            twin.advance(2)
        twin.advance(3600)
        state = sorted((kk, json.dumps(o, sort_keys=True)) for kk, o in twin.store.all_objects())
        return json.dumps(state), twin.core.loop.steps
    finally:
        twin.close()


def test_same_seed_gives_identical_state_and_event_count() -> None:
    a, steps_a = _run(7)
    b, steps_b = _run(7)
    assert steps_a == steps_b
    assert a == b


def test_another_seed_changes_generated_names() -> None:
    a, _ = _run(1)
    b, _ = _run(2)
    assert a != b
