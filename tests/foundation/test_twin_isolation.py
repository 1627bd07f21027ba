"""Two twins in one process share nothing, and a twin dropped is freed (issue 39, item 3; issue 32).

The assembly owns what a twin is made of: the livelock guard of its loop, its clusters' billing controllers and
their memos. Before, three process-wide weak-key tables held them (``runtime.livelock._GUARDS``,
``gke.billing._CONTROLLERS``, ``gke.nodes._POOLS``), and the guard's table kept every loop, and through it
every twin, alive for the life of the process: the suite's process grew to ~2 GB.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from pathlib import Path

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "demo-project"


def _tutorial(twin: Twin, dws_nodes: int) -> None:
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        if dws:
            body["nodePool"]["autoscaling"]["maxNodeCount"] = dws_nodes
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )


def _submit(twin: Twin, job_id: int) -> None:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "600"',
    )
    twin.apply(doc)


def test_a_dropped_twin_is_freed() -> None:
    # In a process of its own: in the suite's worker, a test before this one (or pytest's own log capture of a
    # record that names a controller) may hold objects of its own twins, and the collector's walk is what is
    # measured here, not the neighbours'.
    root = Path(__file__).resolve().parents[2]
    code = "from tests.foundation.test_twin_isolation import drop_two_twins; print(drop_two_twins())"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "freed", out.stdout[-3000:]


def _used_twin(clock: str) -> Twin:
    """A real-clock twin as started, or a virtual one that ran the tutorial's first job for an hour (its billing
    controller and pool memo used)."""
    if clock == "real":
        return Twin(clock=clock, executor="simulated")
    twin = Twin(clock=clock)
    _tutorial(twin, 4)
    _submit(twin, 1)
    twin.advance(3600)
    assert twin.billing()["total"] > 0
    return twin


def test_a_discarded_twin_is_freed_without_the_collector() -> None:
    """``Twin.discard`` (each run of ``flexq simulate``): with the cyclic collector off, dropping the twin frees it
    — its stored objects, history and timers, which its controllers held in cycles, go by reference counting (a
    full collection to free a closed one cost 0.12 s a tutorial-week run)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for clock in ("virtual", "real"):
            twin = _used_twin(clock)
            core = weakref.ref(twin.core)
            twin.discard()
            del twin
            assert core() is None, (
                f"a discarded {clock}-clock twin is still held: {_holders({clock: core()})}"
            )
    finally:
        if was:
            gc.enable()


def drop_two_twins() -> str:
    """A virtual twin that ran the tutorial's first job and a real-clock one, each closed and dropped: "freed",
    or what keeps each alive."""
    refs = []
    for clock in ("virtual", "real"):
        twin = _used_twin(clock)
        refs.append((clock, weakref.ref(twin.core), weakref.ref(twin.core.loop)))
        twin.close()
        del twin
    gc.collect()
    alive = {
        clock: core() or loop() for clock, core, loop in refs if core() is not None or loop() is not None
    }
    return f"twins still alive after close and gc: {_holders(alive)}" if alive else "freed"


def _holders(alive: dict) -> str:
    """What keeps each object alive: a few referrer chains (types and short reprs), for the failure message."""
    out = []
    for name, obj in alive.items():
        chain, seen = [], {id(alive)}
        for _ in range(6):
            refs = [r for r in gc.get_referrers(obj) if id(r) not in seen and r is not chain]
            if not refs:
                break
            obj = refs[0]
            seen.add(id(obj))
            chain.append(f"{type(obj).__name__}:{str(obj)[:120]}")
        out.append(f"{name}: " + " <- ".join(chain))
    return "; ".join(out)


def test_two_twins_side_by_side_share_nothing() -> None:
    a, b = Twin(clock="virtual"), Twin(clock="virtual")
    try:
        _tutorial(a, 4)
        _tutorial(b, 8)
        ra, rb = a.core.current(), b.core.current()
        assert a.core.guard is not b.core.guard
        assert ra.manager.guard is a.core.guard and rb.manager.guard is b.core.guard
        assert a.core.project_manager.guard is a.core.guard
        assert ra.ctx.memo is not rb.ctx.memo
        for job in (1, 2):
            _submit(a, job)
        a.advance(4 * 3600)  # b's clock and state do not move with a's
        assert b.now() < a.now()
        tpu = ("on-demand-pool", "dws-pool")
        assert sum(a.billing()["pools"].get(p, 0) for p in tpu) > 0
        assert sum(b.billing()["pools"].get(p, 0) for p in tpu) == 0  # b ran no job: only its default pool
        assert b.list("rayjob", "default") == []
        pools_b = {p["spec"]["name"]: p for p in b.core.project.list("GkeNodePool")}
        assert pools_b["dws-pool"]["spec"]["autoscaling"]["maxNodeCount"] == 8
    finally:
        a.close()
        b.close()
