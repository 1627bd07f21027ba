"""Kueue Concurrent Admission (KEP-8691, alpha gate ``ConcurrentAdmission``): Parent and Variant Workloads.

Owns, as ``pkg/workload/concurrentadmission`` and ``pkg/controller/concurrentadmission/controller.go`` of
Kueue v0.19.2 do it: the names (the Parent label ``kueue.x-k8s.io/concurrent-admission-parent``, the
``kueue.x-k8s.io/workload-allowed-resource-flavors`` annotation, the ``kueue.x-k8s.io/concurrent-admission``
preemption gate, Variant naming ``<parent prefix>-variant-<flavor>-<hash>``); the predicates the scheduler,
queues, cache and Workload controller use (``is_parent``, ``is_variant``, ``variant_flavor``,
``flavor_allowed``); and ``VariantController``, the variant reconciler: it creates one Variant per flavor of the
ClusterQueue's single resource group (owned by the Parent, gated for preemption), deletes Variants whose flavor
left the queue, syncs a Variant's eviction into the Parent (``VariantEvicted``) and clears the Variant once the
Parent lost its quota, deactivates and re-activates Variants as ``migration.mode`` and
``constraints.lastAcceptableFlavorName`` say, copies the admitted Variant's admission into the Parent (or
evicts the Parent with ``ConcurrentAdmission`` when no Variant is admitted), propagates ``Finished`` and
``PodsReady``, and opens the preemption gate of at most one Variant every five minutes, most preferred first.
It also registers the ClusterQueue webhook rules that apply only while the gate is on.
Events: CreatedVariant, DeletedVariant, ActivatedVariant, DeactivatedVariant, PreemptionUngatedVariant.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from flexq.api.jsoncopy import clone
from flexq.api.kueue_webhooks import validate_concurrent_admission_policy
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.kueue.cache import KueueCache
from flexq.kueue.variants import (
    GATE,
    PREEMPTION_TIMEOUT,
    REASON_ACTIVATED,
    REASON_CREATED,
    REASON_DEACTIVATED,
    REASON_DELETED,
    REASON_UNGATED,
    cq_flavors,
    gate_state,
    generate_variant,
    has_open_gate,
    is_admissible,
    is_parent,
    is_variant,
    last_acceptable_flavor,
    migration_mode,
    open_gate,
    parent_name,
    variant_flavor,
)
from flexq.kueue.workload import (
    OBSERVABILITY_GATE,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
    parse_ts,
    set_quota_reservation,
    unadmitted_reason,
    unset_quota_reservation,
)
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import find_condition, is_true, set_status_condition
from flexq.store import status_copy

__all__ = ["VariantController"]


def webhook(cache: KueueCache):
    """The ClusterQueue rules of ``validateConcurrentAdmissionPolicy``, enforced only while the gate is on, with
    the Kueue release's flavor limit (kueue#15949)."""

    def check(new: dict, old: dict | None) -> list:
        if not cache.config.gate(GATE):
            return []
        return validate_concurrent_admission_policy(new, cache.profile.concurrent_admission_max_flavors)

    return check


def _key(wl: Mapping) -> str:
    md = wl["metadata"]
    return f"{md['namespace']}/{md['name']}"


def _flavors_changed(ev) -> bool:
    """``clusterQueueFlavorsChanged``: only an update that changes the flavors' names or order (not a create
    or a delete)."""
    return ev.type == "MODIFIED" and ev.old is not None and cq_flavors(ev.old) != cq_flavors(ev.object)


class VariantController(Controller):
    """Kueue's ``concurrent-admission-controller`` (one per cluster; runs only while the gate is on)."""

    name = "concurrent-admission-controller"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        self.store.add_webhook("ClusterQueue", webhook(cache))

    def watches(self) -> list[Watch]:
        return [
            Watch("Workload", self._of_workload),
            Watch("ClusterQueue", self._of_cq, predicate=_flavors_changed),
        ]

    def _of_workload(self, ev) -> list:
        if not self.cache.config.gate(GATE):
            return []
        wl = ev.object
        ns = wl["metadata"].get("namespace", "")
        if is_parent(wl):
            return [(ns, wl["metadata"]["name"])]
        if is_variant(wl):
            return [(ns, parent_name(wl))]
        return []

    def _of_cq(self, ev) -> list:
        """``parentsForClusterQueue``: every Parent of the queue's LocalQueues (behind
        ``clusterQueueFlavorsChanged``)."""
        if not self.cache.config.gate(GATE):
            return []
        return parents_for_cluster_queue(
            self.cache.local_queues.values(), self.cache.workloads.values(), ev.object["metadata"]["name"]
        )

    # -- Reconcile --------------------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> Result | None:
        if not self.cache.config.gate(GATE):
            return None
        ns, name = key
        parent = self.store.try_get("Workload", name, ns)
        if parent is None or not is_parent(parent):
            return None
        variants = self._variants(parent)
        cq_name = self.cache.queues.cluster_queue_for(parent)
        cq = self.store.try_get("ClusterQueue", cq_name or "") if cq_name else None
        if cq is None:
            return None
        order = {f: i for i, f in enumerate(cq_flavors(cq))}
        variants.sort(key=lambda v: order.get(variant_flavor(v), 0))
        now = self.ctx.now()
        if not (self.cache.profile.finished_parent_gets_no_variants and is_finished(parent)):
            # v0.20.7: a finished Parent gets no Variant for an added flavor (v0.19.2 made one)
            self._create_variants(parent, variants, list(order))
        # as upstream, the Variants created just now take part from the next reconcile on
        variants = self._delete_stale(parent, variants, order)
        if self._sync_eviction(parent, variants, now):
            return None
        self._deactivate_variants(parent, variants, cq, order, now)
        self._activate_variants(parent, variants, cq, order)
        variants = self._refresh(variants)
        self._sync_admission(parent, variants, now)
        variants = self._refresh(variants)
        candidate, wait = self._select_for_ungating(variants, now)
        if candidate is not None:
            self._open_gate(candidate, now)
        return Result(requeue_after=wait) if wait > 0 else None

    def _variants(self, parent: dict) -> list[dict]:
        uid = parent["metadata"].get("uid")
        return [
            w
            for w in self.store.list("Workload", parent["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences") or [])
        ]

    def _refresh(self, variants: list[dict]) -> list[dict]:
        out = []
        for v in variants:
            cur = self.store.try_get("Workload", v["metadata"]["name"], v["metadata"]["namespace"])
            if cur is not None:
                out.append(cur)
        return out

    def _create_variants(self, parent: dict, variants: list[dict], flavors: list[str]) -> None:
        have = {variant_flavor(v) for v in variants}
        for flavor in flavors:
            if flavor in have:
                continue
            variant = generate_variant(parent, flavor)
            try:
                self.store.create(variant)
            except AlreadyExists:
                continue
            self.events.record(
                parent, "Normal", REASON_CREATED, f'Variant Workload "{_key(variant)}" created'
            )

    def _delete_stale(self, parent: dict, variants: list[dict], order: dict[str, int]) -> list[dict]:
        fresh = []
        for v in variants:
            flavor = variant_flavor(v)
            if flavor in order:
                fresh.append(v)
                continue
            with contextlib.suppress(NotFound):
                self.store.delete("Workload", v["metadata"]["name"], v["metadata"]["namespace"])
            self.events.record(
                parent,
                "Normal",
                REASON_DELETED,
                f'Variant Workload "{_key(v)}" deleted; flavor "{flavor}" no longer in ClusterQueue',
            )
        return fresh

    # -- eviction ----------------------------------------------------------------------------------
    def _sync_eviction(self, parent: dict, variants: list[dict], now: float) -> bool:
        """``syncVariantEvictionStatus``: True when the caller must wait for the Parent to lose its quota."""
        for v in variants:
            ev = find_condition(v, "Evicted")
            if ev is None or ev.get("status") != "True" or not has_quota_reservation(v):
                continue
            if has_quota_reservation(parent):
                if not is_evicted(parent):
                    p = status_copy(parent)
                    set_status_condition(
                        p, "Evicted", True, "VariantEvicted", "Admitted variant was evicted", now
                    )
                    self._write_status(p)
                return True
            self._clear_admission(v, ev, now)
            return False
        return False

    def _clear_admission(self, v: dict, ev: dict, now: float) -> None:
        """``clearWorkloadAdmission``: Requeued (True only after preemption or node failures) and
        QuotaReserved=False ``PendingEvaluation``."""
        w = status_copy(v)
        reason, msg = ev.get("reason", ""), ev.get("message", "")
        set_status_condition(w, "Requeued", reason in ("Preempted", "NodeFailures"), reason, msg, now)
        observability = self.cache.config.gate(OBSERVABILITY_GATE)
        unset_quota_reservation(
            w, unadmitted_reason("PendingEvaluation", "Pending", observability), msg, now, observability
        )
        self._write_status(w)

    def _write_status(self, wl: dict) -> dict | None:
        try:
            return clone(self.store.update_status(wl))  # the stored version is read-only
        except (Conflict, NotFound):
            return None

    # -- policy ------------------------------------------------------------------------------------
    def _set_active(self, v: dict, active: bool, reason: str, message: str) -> dict | None:
        cur = self.store.try_get("Workload", v["metadata"]["name"], v["metadata"]["namespace"])
        if cur is None or is_active(cur) == active:
            return cur
        cur["spec"]["active"] = active
        try:
            out = clone(self.store.update(cur))
        except (Conflict, NotFound):
            return None
        verb = "activated" if active else "deactivated"
        self.events.record(out, "Normal", reason, f"Variant Workload {verb} due to {message}")
        return out

    def _deactivate(self, variants: list[dict], message: str, match, now: float) -> None:
        for v in variants:
            if match is not None and not match(v):
                continue
            out = self._set_active(v, False, REASON_DEACTIVATED, message)
            if out is None:
                continue
            ev = find_condition(out, "Evicted")
            if ev is not None and ev.get("status") == "True" and has_quota_reservation(out):
                self._clear_admission(out, ev, now)

    def _deactivate_variants(
        self, parent: dict, variants: list[dict], cq: dict, order: dict[str, int], now: float
    ) -> None:
        if not is_active(parent):
            self._deactivate(variants, f'Parent Workload "{_key(parent)}" not active', None, now)
            return
        admitted = next((v for v in variants if is_admitted(v)), None)
        if admitted is None:
            return
        adm_name, adm_flavor = admitted["metadata"]["name"], variant_flavor(admitted)
        if migration_mode(cq) == "RetainFirstAdmission":
            self._deactivate(
                variants,
                f'RetainFirstAdmission: another Variant "{_key(admitted)}" is admitted',
                lambda v: v["metadata"]["name"] != adm_name,
                now,
            )
            return
        last = last_acceptable_flavor(cq)
        if last is not None:
            self._deactivate(
                variants,
                f'being below lastAcceptableFlavor: "{last}" and another Variant admitted "{_key(admitted)}"',
                lambda v: (
                    v["metadata"]["name"] != adm_name and order.get(variant_flavor(v), 0) > order.get(last, 0)
                ),
                now,
            )
        self._deactivate(
            self._refresh(variants),
            f'being lower priority than admitted Variant "{_key(admitted)}"',
            lambda v: order.get(variant_flavor(v), 0) > order.get(adm_flavor, 0),
            now,
        )

    def _activate_variants(self, parent: dict, variants: list[dict], cq: dict, order: dict[str, int]) -> None:
        if not is_active(parent):
            return
        variants = self._refresh(variants)
        admitted = next((v for v in variants if is_admitted(v)), None)
        if admitted is None:
            for v in variants:
                self._set_active(v, True, REASON_ACTIVATED, "no other Variant being admitted")
            return
        if migration_mode(cq) == "RetainFirstAdmission":
            return
        adm = order.get(variant_flavor(admitted), 0)
        last = last_acceptable_flavor(cq)
        for v in variants:
            idx = order.get(variant_flavor(v), 0)
            if last is not None:
                if idx <= order.get(last, 0) and idx < adm:
                    self._set_active(
                        v,
                        True,
                        REASON_ACTIVATED,
                        f'being at least lastAcceptableFlavor: "{last}" and higher priority than '
                        f'admitted Variant "{_key(admitted)}"',
                    )
            elif idx < adm:
                self._set_active(
                    v,
                    True,
                    REASON_ACTIVATED,
                    f'being higher priority than admitted Variant "{_key(admitted)}"',
                )

    # -- aggregation -------------------------------------------------------------------------------
    def _sync_admission(self, parent: dict, variants: list[dict], now: float) -> None:
        """``syncAdmissionStatus``."""
        if is_finished(parent):
            fin = find_condition(parent, "Finished") or {}
            for v in variants:
                if not is_finished(v):
                    w = status_copy(v)
                    set_status_condition(
                        w, "Finished", True, fin.get("reason", ""), fin.get("message", ""), now
                    )
                    self._write_status(w)
            return
        admitted = next((v for v in variants if is_admitted(v)), None)
        if admitted is None and is_admitted(parent):
            p = status_copy(parent)
            set_status_condition(p, "Evicted", True, "ConcurrentAdmission", "No variant is running", now)
            self._write_status(p)
        elif admitted is not None:
            self._sync_pods_ready(parent, admitted)
            if not is_admitted(parent):
                p = status_copy(parent)
                set_quota_reservation(p, admitted["status"]["admission"], now)
                set_status_condition(
                    p,
                    "Admitted",
                    True,
                    "Admitted",
                    f"The variant {admitted['metadata']['name']} is admitted",
                    now,
                )
                self._write_status(p)

    def _sync_pods_ready(self, parent: dict, variant: dict) -> None:
        pc = find_condition(parent, "PodsReady")
        if pc is None:
            return
        vc = find_condition(variant, "PodsReady")
        if vc is not None and all(vc.get(k) == pc.get(k) for k in ("status", "reason", "message")):
            return
        w = status_copy(variant)
        conds = [c for c in w["status"].get("conditions") or [] if c.get("type") != "PodsReady"]
        conds.append(dict(pc))
        w["status"]["conditions"] = conds
        self._write_status(w)

    # -- preemption gates ----------------------------------------------------------------------------
    def _select_for_ungating(self, variants: list[dict], now: float) -> tuple[dict | None, float]:
        """``selectVariantToOpenPreemptionGate``: (variant to ungate, seconds until the next look)."""
        admissible = [v for v in variants if is_admissible(v)]
        candidate = first_candidate_variant(admissible)
        if candidate is None:
            return None, 0.0
        last = latest_open_gate_time(admissible)
        if last is None:
            return candidate, PREEMPTION_TIMEOUT
        wait = PREEMPTION_TIMEOUT - (now - last)
        if wait > 0:
            return None, wait
        return candidate, PREEMPTION_TIMEOUT

    def _open_gate(self, variant: dict, now: float) -> None:
        w = status_copy(variant)
        if not open_gate(w, now):
            return
        out = self._write_status(w)
        if out is not None:
            self.events.record(
                out, "Normal", REASON_UNGATED, f'Opened preemption gate for variant workload "{_key(out)}"'
            )


def first_candidate_variant(admissible: list[dict]) -> dict | None:
    """``firstCandidateVariant``: the most preferred admissible Variant blocked on its closed gate; None while a
    more preferred one has not been evaluated for admission yet."""
    for wl in admissible:
        if has_open_gate(wl):
            continue
        if not is_true(wl, "BlockedOnPreemptionGates"):
            if find_condition(wl, "QuotaReserved") is None:
                return None
            continue
        return wl
    return None


def latest_open_gate_time(admissible: list[dict]) -> float | None:
    """``latestOpenGateTime``: when the most recently opened gate opened."""
    out = None
    for wl in admissible:
        g = gate_state(wl)
        if g is None or g.get("position") != "Open":
            continue
        t = parse_ts(g.get("lastTransitionTime"))
        if out is None or t > out:
            out = t
    return out


def parents_for_cluster_queue(local_queues, workloads, cq_name: str) -> list[tuple[str, str]]:
    """``parentsForClusterQueue``: Parents queued to any LocalQueue of the ClusterQueue."""
    lqs = {
        (lq["metadata"].get("namespace", ""), lq["metadata"]["name"])
        for lq in local_queues
        if (lq.get("spec") or {}).get("clusterQueue") == cq_name
    }
    out = []
    for wl in workloads:
        ns = wl["metadata"].get("namespace", "")
        if is_parent(wl) and (ns, (wl.get("spec") or {}).get("queueName", "")) in lqs:
            out.append((ns, wl["metadata"]["name"]))
    return out
