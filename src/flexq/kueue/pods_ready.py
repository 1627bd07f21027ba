"""waitForPodsReady: when an admitted workload has waited too long for its pods, and what it waits for.

Owns:
- ``admitted_not_ready(wl, cfg, now)``: upstream ``admittedNotReadyWorkload``
  (``pkg/controller/core/workload_controller.go``): the underlying cause (``WaitForStart``,
  ``WaitForRecovery`` or, v0.20, ``WaitForScheduling``) and the seconds left before the timeout. The
  ``WaitForStart`` timer runs from ``Admitted.lastTransitionTime`` (``timeout``), the ``WaitForRecovery``
  timer from ``PodsReady.lastTransitionTime`` (``recoveryTimeout``; ``0s`` disables it), the
  ``WaitForScheduling`` timer from admission (``unscheduledTimeout``, the shorter of the two limits wins).
- ``requeue_wait(cfg, count, rng)``: ``workload.UpdateRequeueState``'s jittered exponential backoff,
  ``wait.NewBackoff(base, max, 2, 0.0001).WaitTime(count)`` = base·2^(count−1) capped at
  ``backoffMaxSeconds``, times (1 + U[0,1)·0.0001).
- ``PodsScheduledTracker``: v0.20's unscheduled-pods tracker (KEP-13502, kueue#15402, gate
  ``WaitForPodsReadyUnscheduledTimeout`` with ``waitForPodsReady.unscheduledTimeout`` > 0). For each
  admitted, unfinished workload it counts, per pod set (label ``kueue.x-k8s.io/podset``), the job's pods
  (reached through owner references) that the scheduler bound — a pod set with no pod yet while others
  have some, like a RayJob's submitter, is not waited for — and writes the Workload condition ``PodsScheduled`` (True ``AllRequiredPodsScheduled``
  / False ``WaitForScheduling``); while pods are unscheduled and not yet ready it sets
  ``PodsReady=False`` with reason ``WaitForScheduling`` (upstream's ``kueue.WorkloadWaitForScheduling``),
  and back to ``WaitForStart`` once all are bound. The workload controller then evicts with
  ``PodsReadyTimeout``, underlying cause ``WaitForScheduling``. Message wording of the two conditions is
  the twin's own [inferred]: upstream's constants are not in the v0.19.2 sources.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from random import Random

from flexq.kueue import variants
from flexq.kueue.cache import KueueCache
from flexq.kueue.config import KueueConfig
from flexq.kueue.podset import PODSET_LABEL
from flexq.kueue.workload import backoff_seconds, is_admitted, parse_ts
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import find_condition, is_true, set_status_condition
from flexq.store import status_copy

__all__ = [
    "PodsScheduledTracker",
    "WAIT_FOR_RECOVERY",
    "WAIT_FOR_SCHEDULING",
    "WAIT_FOR_START",
    "admitted_not_ready",
    "requeue_wait",
    "REQUEUE_JITTER",
]

WAIT_FOR_START, WAIT_FOR_RECOVERY, WAIT_FOR_SCHEDULING = (
    "WaitForStart",
    "WaitForRecovery",
    "WaitForScheduling",
)
ALL_SCHEDULED = "AllRequiredPodsScheduled"
REQUEUE_JITTER = 0.0001
MSG_UNSCHEDULED = "Not all required pods are scheduled"
MSG_NOT_READY = "Not all pods are ready or succeeded"


def admitted_not_ready(wl: dict, cfg: KueueConfig, now: float) -> tuple[str, float]:
    """(underlying cause, seconds left); ("", 0) when no PodsReady timer runs for ``wl``."""
    if not cfg.wait_for_pods_ready or not is_admitted(wl):
        return "", 0.0
    pr = find_condition(wl, "PodsReady")
    if pr is not None and pr.get("status") == "True":
        return "", 0.0
    reason = (pr or {}).get("reason")
    if pr is None or reason in (WAIT_FOR_START, "PodsReady", WAIT_FOR_SCHEDULING):
        admitted_at = parse_ts((find_condition(wl, "Admitted") or {}).get("lastTransitionTime"))
        left = max(admitted_at + cfg.pods_ready_timeout - now, 0.0)
        unsched = cfg.unscheduled_timeout
        if reason == WAIT_FOR_SCHEDULING and unsched > 0:
            left_u = max(admitted_at + unsched - now, 0.0)
            if left_u <= left:
                return WAIT_FOR_SCHEDULING, left_u
        return WAIT_FOR_START, left
    if reason == WAIT_FOR_RECOVERY and cfg.pods_ready_recovery_timeout:
        since = parse_ts(pr.get("lastTransitionTime"))
        return WAIT_FOR_RECOVERY, max(since + cfg.pods_ready_recovery_timeout - now, 0.0)
    return "", 0.0


def requeue_wait(cfg: KueueConfig, count: int, rng: Random | None = None) -> float:
    """Seconds to back off before the ``count``-th requeue (``count`` ≥ 1)."""
    jitter = rng.random() * REQUEUE_JITTER if rng is not None else 0.0
    return backoff_seconds(cfg.backoff_base_seconds, cfg.backoff_max_seconds, count, jitter)


def _required(wl: dict) -> dict[str, int]:
    """Pods each pod set needs (admitted counts, else the spec's)."""
    adm = (wl.get("status") or {}).get("admission") or {}
    out = {
        a["name"]: int(a.get("count") or 0)
        for a in adm.get("podSetAssignments") or []
        if a.get("count") is not None
    }
    return out or {
        ps["name"]: int(ps.get("count") or 0) for ps in (wl.get("spec") or {}).get("podSets") or []
    }


class PodsScheduledTracker(Controller):
    """Sets ``PodsScheduled`` (and ``PodsReady`` reason ``WaitForScheduling``) on admitted workloads."""

    name = "kueue-pods-scheduled"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache

    def _on(self) -> bool:
        return self.cache.config.unscheduled_timeout > 0

    def watches(self) -> list[Watch]:
        return [Watch("Workload", self._of_workload), Watch("Pod", self._of_pod)]

    def _of_workload(self, ev) -> list:
        if not self._on():
            return []
        md = ev.object["metadata"]
        return [(md.get("namespace", ""), md["name"])]

    def _chain(self, obj: dict, ns: str) -> set[str]:
        """UIDs of ``obj``'s owners, their owners, ... (a pod's RayCluster and RayJob, or Job)."""
        out: set[str] = set()
        todo, depth = list(obj["metadata"].get("ownerReferences") or []), 0
        while todo and depth < 4:
            nxt: list[dict] = []
            for ref in todo:
                if ref.get("uid") in out:
                    continue
                out.add(ref.get("uid", ""))
                try:
                    owner = self.store.peek(ref.get("kind", ""), ref.get("name", ""), ns)
                except Exception:  # a kind this cluster does not serve
                    owner = None
                if owner is not None:
                    nxt += owner["metadata"].get("ownerReferences") or []
            todo, depth = nxt, depth + 1
        return out

    def _of_pod(self, ev) -> list:
        if not self._on():
            return []
        ns = ev.object["metadata"].get("namespace", "")
        chain = self._chain(ev.object, ns)
        out = []
        for k, wl in self.cache.workloads.items():
            if not k.startswith(ns + "/"):
                continue
            if any(r.get("uid") in chain for r in wl["metadata"].get("ownerReferences") or []):
                out.append((ns, wl["metadata"]["name"]))
        return out

    def _all_scheduled(self, wl: dict) -> bool:
        """Every pod set's pods are bound (or succeeded). A pod set none of whose pods exist yet while
        others' do — a RayJob's submitter, created once the cluster is ready — is not waited for."""
        ns = wl["metadata"].get("namespace", "")
        owners = {r.get("uid") for r in wl["metadata"].get("ownerReferences") or []}
        bound: dict[str, int] = {}
        seen: set[str] = set()
        for pod in self.store.list("Pod", ns):
            if pod["metadata"].get("deletionTimestamp") or not (self._chain(pod, ns) & owners):
                continue
            ps = (pod["metadata"].get("labels") or {}).get(PODSET_LABEL, "")
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                continue
            seen.add(ps)
            if phase == "Succeeded" or (pod.get("spec") or {}).get("nodeName"):
                bound[ps] = bound.get(ps, 0) + 1
        if not seen:
            return False
        return all(bound.get(ps, 0) >= n for ps, n in _required(wl).items() if ps in seen or n == 0)

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        if not self._on():
            return None
        ns, name = key
        cur = self.store.peek("Workload", name, ns)
        if cur is None or is_true(cur, "Finished") or not is_admitted(cur):
            return None
        if self.cache.config.gate(variants.GATE) and variants.is_variant(cur):
            return None  # a Variant's pods belong to its Parent's job; the Parent is tracked
        wl = status_copy(cur)
        now = self.ctx.now()
        pr = find_condition(wl, "PodsReady")
        if pr is not None and pr.get("status") == "True":
            all_in = True
        else:
            all_in = self._all_scheduled(wl)
        changed = set_status_condition(
            wl,
            "PodsScheduled",
            all_in,
            ALL_SCHEDULED if all_in else WAIT_FOR_SCHEDULING,
            "All required pods are scheduled" if all_in else MSG_UNSCHEDULED,
            now,
        )
        if pr is None or pr.get("status") != "True":
            reason = (pr or {}).get("reason")
            if not all_in and reason in (None, WAIT_FOR_START, "PodsReady"):
                changed = (
                    set_status_condition(wl, "PodsReady", False, WAIT_FOR_SCHEDULING, MSG_UNSCHEDULED, now)
                    or changed
                )
            elif all_in and reason == WAIT_FOR_SCHEDULING:
                changed = (
                    set_status_condition(wl, "PodsReady", False, WAIT_FOR_START, MSG_NOT_READY, now)
                    or changed
                )
        if changed:
            self.store.update_status(wl)
        return None
