"""waitForPodsReady timers and backoff, ported from Kueue v0.19.2 by test-case name.

- ``TestAdmittedNotReadyWorkload`` (pkg/controller/core/workload_controller_test.go): all 11 cases.
- ``TestReconcileRequeue`` (pkg/controller/core/workload_controller_requeue_test.go): the backoff arithmetic
  of "increment re-queue count" and "wait time should be limited to backoffMaxSeconds".
- v0.20 ``unscheduledTimeout`` (KEP-13502, kueue#15402): the ``WaitForScheduling`` timer.
"""

from __future__ import annotations

import random

import pytest

from flexq.clock import format_time
from flexq.kueue.config import KueueConfig
from flexq.kueue.pods_ready import REQUEUE_JITTER, admitted_not_ready, requeue_wait

NOW = 1_800_000_000.0
MINUTE_AGO = NOW - 60


def _cfg(
    timeout: float | None = None, recovery: float | None = None, unscheduled: float = 0.0, gate: bool = True
) -> KueueConfig:
    """Upstream's ``waitForPodsReadyConfig``: nil ⇒ not configured."""
    cfg = KueueConfig()
    cfg.wait_for_pods_ready = timeout is not None or recovery is not None
    cfg.pods_ready_timeout = timeout or 0.0
    cfg.pods_ready_recovery_timeout = recovery or 0.0
    cfg.pods_ready_unscheduled_timeout = unscheduled
    cfg.gates["WaitForPodsReadyUnscheduledTimeout"] = gate
    return cfg


def _wl(*conds: tuple[str, str, float, str]) -> dict:
    return {
        "metadata": {"name": "wl", "namespace": "ns"},
        "status": {
            "admission": {},
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": format_time(at), "reason": r}
                for t, s, at, r in conds
            ],
        },
    }


ADMITTED = ("Admitted", "True", MINUTE_AGO, "")

CASES = {
    "workload without Admitted condition; not counting": ({"status": {}}, None, ("", 0)),
    "workload with Admitted=True, no PodsReady; counting": (_wl(ADMITTED), _cfg(300), ("WaitForStart", 240)),
    "workload with Admitted=True, no PodsReady, but no timeout configured; not counting": (
        _wl(ADMITTED),
        None,
        ("", 0),
    ),
    "workload with Admitted=True, no PodsReady; timeout exceeded": (
        _wl(("Admitted", "True", NOW - 420, "")),
        _cfg(300),
        ("WaitForStart", 0),
    ),
    "with reason WorkloadWaitForPodsReadyStart; workload with Admitted=True, PodsReady=False; counting since "
    "admitted.LastTransitionTime": (
        _wl(ADMITTED, ("PodsReady", "False", NOW, "WaitForStart")),
        _cfg(300),
        ("WaitForStart", 240),
    ),
    "with reason PodsReady; workload with Admitted=True, PodsReady=False; counting since admitted.LastTransitionTime": (
        _wl(ADMITTED, ("PodsReady", "False", NOW, "PodsReady")),
        _cfg(300),
        ("WaitForStart", 240),
    ),
    "workload with Admitted=True, PodsReady=False, Reason=WorkloadWaitForPodsReadyRecovery": (
        _wl(ADMITTED, ("PodsReady", "False", NOW, "WaitForRecovery")),
        _cfg(recovery=180),
        ("WaitForRecovery", 180),
    ),
    "workload with Admitted=True, PodsReady=False, Reason=WorkloadWaitForPodsReadyRecovery, recoveryTimeout not "
    "configured": (
        _wl(ADMITTED, ("PodsReady", "False", NOW, "WaitForRecovery")),
        _cfg(300, recovery=None),
        ("", 0),
    ),
    "workload with Admitted=Unknown; not counting": (
        _wl(("Admitted", "Unknown", MINUTE_AGO, "")),
        _cfg(300),
        ("", 0),
    ),
    "workload with Admitted=False, not counting": (
        _wl(("Admitted", "False", MINUTE_AGO, "")),
        _cfg(300),
        ("", 0),
    ),
    "workload with Admitted=True, PodsReady=True; not counting": (
        _wl(ADMITTED, ("PodsReady", "True", NOW, "Started")),
        _cfg(300),
        ("", 0),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_admitted_not_ready_workload(name: str) -> None:
    wl, cfg, want = CASES[name]
    assert admitted_not_ready(wl, cfg if cfg is not None else _cfg(), NOW) == want


# v0.20 unscheduledTimeout ------------------------------------------------------------------------------------
UNSCHED = _wl(ADMITTED, ("PodsReady", "False", NOW, "WaitForScheduling"))


def test_wait_for_scheduling_counts_from_admission_with_the_shorter_limit() -> None:
    assert admitted_not_ready(UNSCHED, _cfg(1800, unscheduled=300), NOW) == ("WaitForScheduling", 240)


def test_wait_for_scheduling_without_the_gate_or_timeout_is_wait_for_start() -> None:
    assert admitted_not_ready(UNSCHED, _cfg(1800, unscheduled=300, gate=False), NOW) == ("WaitForStart", 1740)
    assert admitted_not_ready(UNSCHED, _cfg(1800, unscheduled=0), NOW) == ("WaitForStart", 1740)


def test_the_main_timeout_wins_when_it_is_shorter() -> None:
    assert admitted_not_ready(UNSCHED, _cfg(120, unscheduled=600), NOW) == ("WaitForStart", 60)


# TestReconcileRequeue: backoff ---------------------------------------------------------------------------------
def _backoff(base: int, cap: int) -> KueueConfig:
    cfg = KueueConfig()
    cfg.backoff_base_seconds, cfg.backoff_max_seconds = base, cap
    return cfg


def test_increment_re_queue_count() -> None:
    """count 3 → 4: 10s · 2^(4−1) = 80s."""
    assert requeue_wait(_backoff(10, 3600), 4) == 80


def test_wait_time_should_be_limited_to_backoff_max_seconds() -> None:
    """count 10 → 11: 10s · 2^10 = 10240s > 7200s ⇒ 7200s."""
    assert requeue_wait(_backoff(10, 7200), 11) == 7200


def test_default_backoff_sequence_and_jitter() -> None:
    """Defaults 60 s base, 3600 s max: 60, 120, 240, ..., 3600; jitter adds at most 0.01 %."""
    cfg = KueueConfig()
    assert [requeue_wait(cfg, n) for n in range(1, 9)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    rng = random.Random(7)
    for n in range(1, 9):
        base = requeue_wait(cfg, n)
        got = requeue_wait(cfg, n, rng)
        assert base <= got < base * (1 + REQUEUE_JITTER)


def test_unscheduled_timeout_is_read_from_the_configuration() -> None:
    cfg = KueueConfig.from_dict(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "waitForPodsReady": {"timeout": "30m", "unscheduledTimeout": "5m"},
            "featureGates": {"WaitForPodsReadyUnscheduledTimeout": True},
        }
    )
    assert (cfg.pods_ready_timeout, cfg.unscheduled_timeout) == (1800, 300)
    off = KueueConfig.from_dict(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "waitForPodsReady": {"unscheduledTimeout": "5m"},
        }
    )
    assert off.unscheduled_timeout == 0  # alpha gate off by default
