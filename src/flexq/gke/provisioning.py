"""ProvisioningRequests (``autoscaling.x-k8s.io/v1``): the three classes GKE's autoscaler serves.

Owns ``ProvisioningRequest.status`` — this controller is its only writer (conditions and
``provisioningClassDetails``) — and the nodes it creates for a request (labelled
``autoscaling.gke.io/provisioning-request``). Semantics and wording: research/cloud.md §1.3–1.5, §7.2.

GKE Warden, the cluster's validating admission webhook (``warden-validating.common-webhooks.networking.gke.io``),
refuses a ``queued-provisioning.gke.io`` request with more than one pod set at creation (its constraint
``provisioning-request-cr-validation``; 400, reason ``GKE Warden constraints violations``, the message verbatim as
ray-project/ray#57839 shows it): Kueue's provisioning check then reports the refusal on the Workload's check
(``Error creating ProvisioningRequest "...": admission webhook ... denied the request: ...``, state Pending) and
in a ``FailedCreate`` event. It is the only Warden rule on ProvisioningRequests the twin knows of.

``queued-provisioning.gke.io`` (DWS flex-start, GKE's autoscaler):
  Accepted ``SuccessfullyQueued`` + Provisioned=False ``NotProvisioned`` on arrival (one pod set only; a
  queued pool of this cluster must fit its pods) -> at the time the capacity profile grants the whole
  request, every node is created at once in one zone -> Provisioned ``Provisioned`` when all are Ready ->
  BookingExpired 10 min later (whether or not pods came) -> CapacityRevoked at Provisioned +
  ``maxRunDurationSeconds`` (default 7 days; the VMs are deleted). Not provisioned by ``ValidUntilSeconds``
  (default 7 days) after creation -> Failed ``WaitTimeExceeded``. Terminal requests are deleted 7 days later.
``check-capacity.autoscaling.x-k8s.io``: books capacity only if every pod fits existing nodes.
``best-effort-atomic-scale-up.autoscaling.x-k8s.io``: fits existing nodes (``CapacityIsFound``), or scales one
ordinary autoscaled pool up by all the nodes needed at once and is Provisioned ``CapacityIsProvisioned`` as soon
as the scale-up is requested (it does not wait for the nodes to start), or nothing (``CapacityIsNotFound``);
retried with a 1-10 min backoff.
Requests of any other class are left alone (another autoscaler's).

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.jsoncopy import clone
from flexq.api.wellknown import CONSUME_PROVISIONING_REQUEST
from flexq.clock import format_time, parse_time
from flexq.errors import AdmissionDenied, NotFound
from flexq.gke import provisioning_params as params
from flexq.gke.cache import ANN_REQUEST as CACHE_ANN_REQUEST
from flexq.gke.cache import GkeCache
from flexq.gke.fit import add, fits, node_shape, pack, pod_requests, pool_shape
from flexq.gke.nodes import ANN_DELETE_AT, NodeWriter, capacity_model_name, pools_of
from flexq.gke.pool_limits import hosts_per_slice, max_nodes
from flexq.gke.timing import (
    BOOKING_SECONDS,
    DWS_MAX_WAIT_SECONDS,
    GRANT_RETRY_SECONDS,
    TERMINAL_TTL_SECONDS,
)
from flexq.runtime import Context, Controller, Result, Watch
from flexq.store import Store

__all__ = [
    "ProvisioningRequestController",
    "QUEUED",
    "CHECK_CAPACITY",
    "ATOMIC",
    "active_booking",
    "booked_nodes",
    "request_pods",
    "ANN_REQUEST",
    "MAX_WAIT_SECONDS",
]

QUEUED = "queued-provisioning.gke.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
ANN_REQUEST = CACHE_ANN_REQUEST  # node -> "<namespace>/<name>" of its request
CONSUME_KEY = CONSUME_PROVISIONING_REQUEST
ANN_GRANT_AT = "gke.twin.flexq.dev/dws-grant-at"  # request -> when DWS grants it ("never")
ANN_POOL = "gke.twin.flexq.dev/dws-node-pool"
ANN_ATTEMPTS = "gke.twin.flexq.dev/scale-up-attempts"
ANN_NEXT_ATTEMPT = "gke.twin.flexq.dev/next-scale-up-attempt"
MAX_WAIT_SECONDS = DWS_MAX_WAIT_SECONDS  # DWS queue limit / defaultExpirationTime
MSG = {
    "SuccessfullyQueued": "Provisioning Request was successfully queued.",
    "NotProvisioned": "Provisioning Request wasn't provisioned.",
    "Provisioned": "Provisioning Request was successfully provisioned.",
    "BookingExpired": "Capacity booking for the Provisioning Request has expired and the nodes are now candidates "
    "for scale down when underutilized.",
    "CapacityRevoked": "Capacity provisioned for the Provisioning Request was reclaimed and is no longer available "
    "in the cluster.",
    "WaitTimeExceeded": "Provisioning Request could not provision queued instances in the allocated time.",
    "Accepted": "ProvisioningRequest is accepted by ClusterAutoscaler",
    "CapacityIsFound": "Capacity is found in the cluster",
    "CapacityIsProvisioned": "Capacity is found in the cluster",  # CA's CapacityIsProvisionedMsg, verbatim
    "CapacityIsNotFound": "Capacity is not found, CA will try to find it later.",
    "CapacityReservationTimeExpired": "Capacity reservation time is expired",
    "CapacityBookingConsumed": "Capacity booking consumed: all pods scheduled",
    "Expired": "ProvisioningRequest is expired",
}


WARDEN = "warden-validating.common-webhooks.networking.gke.io"
WARDEN_REASON = "GKE Warden constraints violations"
WARDEN_SINGLE_POD_SET = "the queued provisioning feature currently supports only single PodSet per request"


def warden(new: dict[str, Any], old: dict[str, Any] | None) -> list[Any]:
    """GKE Warden's rules on a ProvisioningRequest (create and update), raising its denial."""
    spec = new.get("spec") or {}
    violations: dict[str, list[str]] = {}
    if spec.get("provisioningClassName") == QUEUED and len(spec.get("podSets") or []) > 1:
        violations["[denied by provisioning-request-cr-validation]"] = [WARDEN_SINGLE_POD_SET]
    if violations:
        details = json.dumps(violations, separators=(",", ":"))
        raise AdmissionDenied(
            WARDEN,
            "GKE Warden rejected the request because it violates one or more constraints.\n"
            f"Violations details: {details}",
            status=400,
            reason=WARDEN_REASON,
        )
    return []


def _cond(pr: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (pr.get("status") or {}).get("conditions") or ():
        if c["type"] == type_:
            return c
    return None


def _true(pr: dict[str, Any], type_: str) -> bool:
    c = _cond(pr, type_)
    return bool(c and c["status"] == "True")


def _since(pr: dict[str, Any], type_: str) -> float:
    c = _cond(pr, type_)
    return parse_time(c["lastTransitionTime"]) if c else 0.0


def active_booking(store: Store, node: dict[str, Any]) -> bool:
    """Whether a ProvisioningRequest still books this node: Provisioned and not BookingExpired, or still being made
    for it (Accepted, not Failed): a slice slower to come up than scale-down's 10 min stays."""
    ref = (node["metadata"].get("annotations") or {}).get(ANN_REQUEST)
    if not ref:
        return False
    ns, name = ref.split("/", 1)
    pr = store.peek("ProvisioningRequest", name, ns)  # read-only
    if pr is None or _true(pr, "BookingExpired") or _true(pr, "Failed"):
        return False
    return _true(pr, "Provisioned") or _true(pr, "Accepted")


def request_pods(store: Store, pr: dict[str, Any]) -> list[dict[str, Any]] | str:
    """One pod per count of each pod set, from the referenced PodTemplates (or the missing template's name)."""
    pods = []
    for i, ps in enumerate(pr["spec"]["podSets"]):
        ref = ps["podTemplateRef"]["name"]
        tpl = store.try_get("PodTemplate", ref, pr["metadata"]["namespace"])
        if tpl is None:
            return ref
        template = tpl.get("template") or {}
        for j in range(ps["count"]):
            pods.append(
                {
                    "metadata": {**(template.get("metadata") or {}), "name": f"{ref}-{i}-{j}"},
                    "spec": template.get("spec") or {},
                }
            )
    return pods


BOOKING_CLASS_INDEX = "gke-booking-class"  # the requests whose class books existing capacity (an index)


def _booking_class(pr: dict[str, Any]) -> list[str]:
    return ["yes"] if (pr.get("spec") or {}).get("provisioningClassName") in (CHECK_CAPACITY, ATOMIC) else []


def booked_nodes(store: Store, nodes: list[dict[str, Any]], cache: GkeCache) -> set[str]:
    """Existing nodes holding capacity that a check-capacity or best-effort-atomic request has booked (Provisioned,
    not BookingExpired): the request's pods that are not bound yet, first-fit onto the nodes' free capacity, as
    the autoscaler injects fake pods for a booking so that its nodes are not scaled down (research/cloud.md §1.5)."""
    try:
        store.add_indexer("ProvisioningRequest", BOOKING_CLASS_INDEX, _booking_class)  # idempotent
        requests = store.peek_indexed("ProvisioningRequest", BOOKING_CLASS_INDEX, "yes")
    except NotFound:
        return set()
    booked: set[str] = set()
    if not requests:
        return booked
    # by namespace then name, as a list would give them: the first-fit below depends on the order
    requests.sort(key=lambda pr: (pr["metadata"].get("namespace", ""), pr["metadata"]["name"]))
    used = dict(cache.used)
    shapes = {n["metadata"]["name"]: node_shape(n) for n in nodes}
    for pr in requests:
        if not _true(pr, "Provisioned") or _true(pr, "BookingExpired"):
            continue
        fake = request_pods(store, pr)
        if isinstance(fake, str):
            continue
        ns, name = pr["metadata"]["namespace"], pr["metadata"]["name"]
        bound = cache.consumers.get((ns, name), 0)
        for pod in fake[bound:]:
            req = pod_requests(pod)
            for node, shape in shapes.items():
                if fits(pod, shape, used.get(node, {}), req) is None:
                    used[node] = add(used.get(node, {}), req)
                    booked.add(node)
                    break
    return booked


def resize_request_name(pr: dict[str, Any]) -> str:
    """GKE's Resize Request name: ``gke-<ns>-<name>-<sha256 prefix>`` (research/cloud.md §1.5)."""
    m = pr["metadata"]
    digest = hashlib.sha256(f"{m['namespace']}/{m['name']}/{m.get('uid', '')}".encode()).hexdigest()[:8]
    return f"gke-{m['namespace']}-{m['name']}"[:54].rstrip("-") + f"-{digest}"


class ProvisioningRequestController(Controller):
    """GKE's autoscaler for ProvisioningRequests (one key per request)."""

    name = "gke-provisioning-requests"

    def __init__(self, ctx: Context, writer: NodeWriter) -> None:
        super().__init__(ctx)
        self.writer = writer
        self.store.add_webhook("ProvisioningRequest", warden)  # GKE Warden is part of every GKE cluster
        self._handlers: dict[str, Callable[[dict[str, Any], float], float | None]] = {
            QUEUED: self._queued,
            CHECK_CAPACITY: self._check_capacity,
            ATOMIC: self._atomic,
        }
        # a request's creation instant, parsed once per stored version (a queued request whose pool is full
        # is looked at every minute until it is granted or times out)
        self._created: dict[tuple[str, str], tuple[dict[str, Any], float]] = {}

    def watches(self) -> list[Watch]:
        def by_node(ev: Any) -> list[tuple[str, str]]:
            ref = (ev.object["metadata"].get("annotations") or {}).get(ANN_REQUEST)
            return [tuple(ref.split("/", 1))] if ref else []

        def by_pod(ev: Any) -> list[tuple[str, str]]:
            ann = ev.object["metadata"].get("annotations") or {}
            name = ann.get(CONSUME_KEY)
            return [(ev.object["metadata"]["namespace"], name)] if name else []

        return [Watch("ProvisioningRequest"), Watch("Node", by_node), Watch("Pod", by_pod)]

    def reconcile(self, key: Any) -> Result | None:
        ns, name = key
        pr = self.store.peek("ProvisioningRequest", name, ns)  # read-only: copied before a change
        if pr is None:
            return None
        handler = self._handlers.get(pr["spec"].get("provisioningClassName", ""))
        if handler is None:
            return None
        now = self.ctx.now()
        for t in ("Failed", "CapacityRevoked"):
            if _true(pr, t):
                gone_at = _since(pr, t) + TERMINAL_TTL_SECONDS
                if now >= gone_at:
                    self.store.delete("ProvisioningRequest", name, ns)
                    return None
                return Result(requeue_after=gone_at - now)
        # queued requests wait in the DWS queue, looking again every minute while the pool is full: that
        # handler copies the request only where it changes it; the others get a copy
        wake = handler(pr if handler == self._queued else clone(pr), now)
        return Result(requeue_after=max(0.001, wake - now)) if wake is not None else None

    # -- status writing ----------------------------------------------------------------------------------------
    def _set(
        self, pr: dict[str, Any], now: float, *conds: tuple[str, ...], details: dict[str, str] | None = None
    ) -> None:
        """Set conditions (type, status, reason[, message]); lastTransitionTime moves only with the status."""
        status = pr.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        for type_, value, reason, *message in conds:
            cur = next((c for c in conditions if c["type"] == type_), None)
            text = message[0] if message else MSG.get(reason, reason)
            new = {
                "type": type_,
                "status": value,
                "reason": reason,
                "message": text,
                "observedGeneration": pr["metadata"].get("generation", 1),
                "lastTransitionTime": format_time(now),
            }
            if cur is None:
                conditions.append(new)
            elif (cur["status"], cur.get("reason"), cur.get("message")) != (value, reason, text):
                if cur["status"] == value:
                    new["lastTransitionTime"] = cur["lastTransitionTime"]
                cur.clear()
                cur.update(new)
        if details:
            status["provisioningClassDetails"] = {**(status.get("provisioningClassDetails") or {}), **details}
        self.store.update_status(pr)

    def _fail(self, pr: dict[str, Any], now: float, reason: str, message: str) -> None:
        self._set(pr, now, ("Failed", "True", reason, message))

    def _pods(self, pr: dict[str, Any]) -> list[dict[str, Any]] | str:
        return request_pods(self.store, pr)

    # -- queued-provisioning.gke.io ----------------------------------------------------------------------------
    def _queued(self, pr: dict[str, Any], now: float) -> float | None:
        """``pr`` is the stored request (read-only): copied before anything changes it."""
        if _true(pr, "Provisioned"):
            return self._queued_provisioned(clone(pr), now)
        if not _true(pr, "Accepted"):
            return self._queued_accept(clone(pr), now)
        deadline = self._creation(pr) + params.valid_until_seconds(pr)
        pool = next(
            (
                p
                for p in pools_of(self.ctx)
                if p["spec"]["name"] == pr["metadata"].get("annotations", {}).get(ANN_POOL)
            ),
            None,
        )
        mine = self._nodes_of(pr)
        if mine:
            pending = [n for n in mine if not _ready(n)]
            if not pending:
                assert pool is not None
                self._set(
                    clone(pr),
                    now,
                    ("Provisioned", "True", "Provisioned"),
                    details=self._details(pr, pool, mine),
                )
                return now + BOOKING_SECONDS
            return None  # NodeLifecycle's Ready writes wake us (Node watch)
        if now >= deadline:
            self._fail(clone(pr), now, "WaitTimeExceeded", MSG["WaitTimeExceeded"])
            return None
        grant = pr["metadata"].get("annotations", {}).get(ANN_GRANT_AT, "never")
        if pool is None:
            self._fail(
                clone(pr),
                now,
                "NoQueuedNodepoolAvailable",
                "The node pool chosen for this Provisioning Request no longer exists.",
            )
            return None
        if grant != "never" and float(grant) <= now:
            count = int(pr["metadata"]["annotations"].get("gke.twin.flexq.dev/dws-nodes", "1"))
            limit = max_nodes(pool)
            if self.writer.cache.pool_sizes.get(pool["spec"]["name"], 0) + count > limit:
                # the pool is full (other requests' slices): look again soon
                return min(deadline, now + GRANT_RETRY_SECONDS)
            max_run = params.max_run_seconds(pr)
            got = self.writer.grow(
                pool,
                count,
                extra_labels={catalog.LABEL_PROVISIONING_REQUEST: resize_request_name(pr)},
                extra_annotations={
                    ANN_REQUEST: f"{pr['metadata']['namespace']}/{pr['metadata']['name']}",
                    ANN_DELETE_AT: repr(now + max_run),
                },
                draw_key=f"{pr['metadata']['namespace']}/{pr['metadata']['name']}",
            )
            if got.ok:
                return None
            pr = clone(pr)
            self._annotate(pr, {ANN_GRANT_AT: repr(got.retry_at) if got.retry_at is not None else "never"})
            grant = pr["metadata"]["annotations"][ANN_GRANT_AT]
        return deadline if grant == "never" else min(deadline, float(grant))

    def _queued_accept(self, pr: dict[str, Any], now: float) -> float | None:
        bad = params.invalid(pr)
        if bad is not None:
            self._fail(pr, now, "InvalidArgument", f"Invalid Provisioning Request: {bad}.")
            return None
        if len(pr["spec"]["podSets"]) != 1:
            self._fail(
                pr,
                now,
                "InvalidArgument",
                "queued-provisioning.gke.io supports only one PodSet per Provisioning Request.",
            )
            return None
        pods = self._pods(pr)
        if isinstance(pods, str):
            self._fail(pr, now, "MissingPodTemplates", f'PodTemplate "{pods}" not found.')
            return None
        for pool in pools_of(self.ctx):
            if not pool["status"].get("queued") or pool["spec"].get("status") not in (
                "RUNNING",
                "RECONCILING",
            ):
                continue
            shape = pool_shape(pool)
            hosts = hosts_per_slice(pool)
            n_nodes, placed = pack(pods, shape, 10**6)
            if len(placed) != len(pods):
                continue
            n_nodes = -(-n_nodes // hosts) * hosts
            limit = max_nodes(pool)
            waited = params.forecast_waited(pr)
            if waited is None and self.writer.cache.pool_sizes.get(pool["spec"]["name"], 0) + n_nodes > limit:
                self._fail(
                    pr,
                    now,
                    "NodepoolSizeReached",
                    f"Node pool {pool['spec']['name']} cannot grow by "
                    f"{n_nodes} nodes: it would exceed its maximum of {limit} nodes.",
                )
                return None
            rng = self.ctx.rng(f"gke/dws/{pr['metadata']['namespace']}/{pr['metadata']['name']}")
            grant = self.writer.capacity.model().queue_grant_time(
                pool["status"]["zone"],
                pool["spec"]["config"]["machineType"],
                now,
                rng,
                want=n_nodes,
                model=capacity_model_name(pool),
                waited=waited or 0.0,
            )
            self._annotate(
                pr,
                {
                    ANN_POOL: pool["spec"]["name"],
                    "gke.twin.flexq.dev/dws-nodes": str(n_nodes),
                    ANN_GRANT_AT: "never" if grant is None else repr(grant),
                },
            )
            self._set(
                pr,
                now,
                ("Accepted", "True", "SuccessfullyQueued"),
                ("Provisioned", "False", "NotProvisioned"),
            )
            return now  # look at the grant time right away
        self._fail(
            pr,
            now,
            "NoQueuedNodepoolAvailable",
            "No node pool with queued provisioning in this cluster "
            "can run the pods of this Provisioning Request.",
        )
        return None

    def _queued_provisioned(self, pr: dict[str, Any], now: float) -> float | None:
        provisioned = _since(pr, "Provisioned")
        expire = provisioned + BOOKING_SECONDS
        revoke = provisioned + params.max_run_seconds(pr)
        if not _true(pr, "BookingExpired"):
            if now < expire and now < revoke:
                return min(expire, revoke)
            self._set(pr, now, ("BookingExpired", "True", "BookingExpired"))
        if now >= revoke:
            self.writer.shrink(self._nodes_of(pr))  # GCE deletes the VMs at the end of the run duration
            self._set(pr, now, ("CapacityRevoked", "True", "CapacityRevoked"))
            return now + TERMINAL_TTL_SECONDS
        return revoke

    def _details(
        self, pr: dict[str, Any], pool: dict[str, Any], nodes: list[dict[str, Any]]
    ) -> dict[str, str]:
        mt = catalog.machine_type(pool["spec"]["config"]["machineType"])
        return {
            "ResizeRequestName": resize_request_name(pr),
            "NodePoolName": pool["spec"]["name"],
            "NodeGroupName": pool["status"].get("instanceGroup", ""),
            "SelectedZone": pool["status"]["zone"],
            "AcceleratorType": mt.tpu.accelerator_label if mt.tpu else mt.gpu_type,
            "ProvisioningMode": "resize_request",
            "NodePoolAutoProvisioned": "false",
            "PodTemplateName": pr["spec"]["podSets"][0]["podTemplateRef"]["name"],
        }

    def _creation(self, pr: dict[str, Any]) -> float:
        md = pr["metadata"]
        key = (md.get("namespace") or "default", md["name"])
        hit = self._created.get(key)
        if hit is not None and hit[0] is pr:
            return hit[1]
        if len(self._created) > 4096:
            self._created.clear()
        created = parse_time(md["creationTimestamp"])
        self._created[key] = (pr, created)
        return created

    def _nodes_of(self, pr: dict[str, Any]) -> list[dict[str, Any]]:
        """The request's nodes, by name (from the cache's index, not a scan of every node)."""
        return self.writer.cache.request_nodes(f"{pr['metadata']['namespace']}/{pr['metadata']['name']}")

    def _annotate(self, pr: dict[str, Any], values: dict[str, str]) -> None:
        pr["metadata"].setdefault("annotations", {}).update(values)
        fresh = clone(self.store.update(pr))  # the stored version is read-only
        pr["metadata"] = fresh["metadata"]

    # -- check-capacity and best-effort-atomic-scale-up ----------------------------------------------------------
    def _fits_existing(self, pods: list[dict[str, Any]]) -> bool:
        nodes = [n for n in self.writer.nodes() if _ready(n)]
        used = dict(self.writer.cache.used)
        for pod in pods:
            req = pod_requests(pod)
            for n in nodes:
                name = n["metadata"]["name"]
                if fits(pod, node_shape(n), used.get(name, {}), req) is None:
                    used[name] = add(used.get(name, {}), req)
                    break
            else:
                return False
        return True

    def _oss_booking(self, pr: dict[str, Any], now: float) -> float | None:
        """Provisioned -> BookingExpired after 10 min, or once every consuming pod is scheduled."""
        if _true(pr, "BookingExpired"):
            return None
        bound = self.writer.cache.consumers.get((pr["metadata"]["namespace"], pr["metadata"]["name"]), 0)
        total = sum(ps["count"] for ps in pr["spec"]["podSets"])
        if bound >= total:
            self._set(pr, now, ("BookingExpired", "True", "CapacityBookingConsumed"))
            return None
        expire = _since(pr, "Provisioned") + BOOKING_SECONDS
        if now >= expire:
            self._set(pr, now, ("BookingExpired", "True", "CapacityReservationTimeExpired"))
            return None
        return expire

    def _oss_common(self, pr: dict[str, Any], now: float) -> list[dict[str, Any]] | None:
        if not _true(pr, "Accepted"):
            self._set(pr, now, ("Accepted", "True", "Accepted"))
        created = parse_time(pr["metadata"]["creationTimestamp"])
        if now >= created + MAX_WAIT_SECONDS:
            self._fail(pr, now, "Expired", MSG["Expired"])
            return None
        pods = self._pods(pr)
        if isinstance(pods, str):
            self._fail(pr, now, "FailedToCreatePods", f'PodTemplate "{pods}" not found.')
            return None
        return pods

    def _check_capacity(self, pr: dict[str, Any], now: float) -> float | None:
        if _true(pr, "Provisioned"):
            return self._oss_booking(pr, now)
        pods = self._oss_common(pr, now)
        if pods is None:
            return None
        if self._fits_existing(pods):
            self._set(pr, now, ("Provisioned", "True", "CapacityIsFound"))
            return now + BOOKING_SECONDS
        if params.no_retry(pr):
            self._fail(pr, now, "CapacityIsNotFound", MSG["CapacityIsNotFound"])
            return None
        self._set(pr, now, ("Provisioned", "False", "CapacityIsNotFound"))
        return now + GRANT_RETRY_SECONDS

    def _atomic(self, pr: dict[str, Any], now: float) -> float | None:
        if _true(pr, "Provisioned"):
            return self._oss_booking(pr, now)
        pods = self._oss_common(pr, now)
        if pods is None:
            return None
        if self._nodes_of(pr):  # scaled up for it earlier (a write that did not land): admit it now
            self._set(pr, now, ("Provisioned", "True", "CapacityIsProvisioned"))
            return now + BOOKING_SECONDS
        if self._fits_existing(pods):
            self._set(pr, now, ("Provisioned", "True", "CapacityIsFound"))
            return now + BOOKING_SECONDS
        ann = pr["metadata"].get("annotations") or {}
        attempts = int(ann.get(ANN_ATTEMPTS, "0"))
        next_at = float(ann.get(ANN_NEXT_ATTEMPT, "0"))
        if now < next_at:
            return next_at  # backing off; our own writes must not turn into a hot loop
        for pool in pools_of(self.ctx):
            auto = pool["spec"].get("autoscaling") or {}
            if pool["status"].get("queued") or not auto.get("enabled"):
                continue
            hosts = hosts_per_slice(pool)
            limit = max_nodes(pool)
            room = (limit - self.writer.cache.pool_sizes.get(pool["spec"]["name"], 0)) // hosts * hosts
            n_nodes, placed = pack(pods, pool_shape(pool), max(room, 0))
            if len(placed) != len(pods):
                continue
            got = self.writer.grow(
                pool,
                -(-n_nodes // hosts) * hosts,
                extra_annotations={ANN_REQUEST: f"{pr['metadata']['namespace']}/{pr['metadata']['name']}"},
                draw_key=f"{pr['metadata']['namespace']}/{pr['metadata']['name']}",
            )
            if got.ok:
                # "best effort": the request is admitted as soon as the scale-up is requested, without waiting
                # for the nodes to start (CA besteffortatomic/provisioning_class.go)
                self._set(pr, now, ("Provisioned", "True", "CapacityIsProvisioned"))
                return now + BOOKING_SECONDS
        delay = min(600.0, 60.0 * 2 ** min(attempts, 10))  # backoff 1 min doubling to 10 min (CA flags)
        self._annotate(pr, {ANN_ATTEMPTS: str(attempts + 1), ANN_NEXT_ATTEMPT: repr(now + delay)})
        self._set(pr, now, ("Provisioned", "False", "CapacityIsNotFound"))
        return now + delay


def _ready(node: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )
