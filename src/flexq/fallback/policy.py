"""The fallback policy: detect stocked-out flavors, move the jobs waiting on them, steer new ones, come back.

One pass (``FallbackPolicy.run_once``) reads the cluster through a ``ClusterAPI`` and acts:

1. **Evidence**, per flavor: a pod of a workload admitted on the flavor (the flavor whose ``nodeLabels`` Kueue
   put in the pod's nodeSelector) is unschedulable and the cluster autoscaler said why with a GCE capacity error
   (``FailedScaleUp`` / ``NotTriggerScaleUp`` whose message matches ``capacity_pattern``: "GCE out of resources",
   ``ZONE_RESOURCE_POOL_EXHAUSTED``, ``GCE_STOCKOUT``, …); or a provisioning admission check on the flavor, of a
   capacity-checking class (not DWS's queued provisioning), is Retry/Rejected. Time alone is never evidence
   unless ``assume_after_seconds`` is set.
2. **Breakers**, per flavor, as the cluster autoscaler backs off a node group: evidence older than the grace
   period trips the flavor (``since``, ``until = now + backoff``); a probe that fails doubles the backoff (5
   minutes up to 30 by default). The breaker closes on the first scale-up of the flavor that succeeds: a Node
   with the flavor's labels created after ``since`` (a pod landing on a node that was already up proves
   nothing). Breakers live in a ConfigMap (``kueue-system/flexq-fallback``), so a restarted policy remembers them.
3. **Moves**: a workload admitted on a tripped flavor whose pods there have not started, and were themselves
   refused capacity (the breaker alone moves nothing: the stock-out may be over), is deactivated; once Kueue has
   evicted it (quota released, job suspended) the job's pod templates of that flavor get ``<flavor label> NotIn
   [<value>]`` in their required node affinity and the evicted Workload is deleted, so Kueue makes a new one from
   the job and admits it on the next flavor. Each step is written to the job's ``fallback.flexq.dev/move``
   annotation before it is taken, so a pass that dies half-way is finished by the next one, and a workload is
   never reactivated (no double admission).
4. **Hedge back**: a job waiting for plan B because of the stock-out (moved, or put there by Kueue while the
   flavor was out) whose plan-B provisioning has not been granted (not admitted, suspended, no pod) goes back to
   the flavor the moment the flavor can take it first: its quota is free and its nodes up and idle fit the job,
   or its breaker has closed. Same steps as a move (deactivate, lift the restriction, delete the Workload);
   oldest first, one at a time per flavor. Its wait is the sooner of the two plans, with pods on one only.
5. **Steering**: while a flavor's backoff runs, the ClusterQueue's nominal quota of the flavor is capped to what
   its nodes up hold, so Kueue sends a new job straight to the next flavor unless a node of the flavor can take
   it (Kueue reserves quota when the Workload is created, before a pass could restrict the job); the admin's
   figures wait in the ClusterQueue's ``fallback.flexq.dev/quota`` annotation and are put back when the backoff
   ends. A pending workload headed first for a tripped flavor gets the restriction before it is admitted. When
   the backoff has expired one job is let through as the probe (a waiting one is sent back, if any).

Every action is an Event on the job; ``fallback.flexq.dev/moved`` on the job says, in one line, what happened
(``flexq status`` shows it). With ``dry_run`` nothing is written: the pass only returns what it would do.
Without a stock-out (no capacity error) the policy writes nothing at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from flexq.api.quantity import QuantityError, parse_quantity
from flexq.fallback.api import ClusterAPI, Conflict, NotFound

log = logging.getLogger("flexq.fallback")

OPT_IN_LABEL = "fallback.flexq.dev/enabled"  # on a LocalQueue: "true" lets the policy move its jobs
ANN_MOVE = "fallback.flexq.dev/move"  # on a job: the move in progress or done (JSON)
ANN_MOVED = "fallback.flexq.dev/moved"  # on a job: what happened, in one line
ANN_QUOTA = "fallback.flexq.dev/quota"  # on a ClusterQueue: the nominal quotas capped while a flavor is out
ANN_KEPT = (
    "fallback.flexq.dev/kept"  # on a Node kept in a stock-out: "" busy, idle since (epoch s), "released"
)
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"  # the cluster autoscaler's own
MANAGER = "flexq-fallback"
DWS_CLASS = "queued-provisioning.gke.io"  # DWS waiting is plan B doing its job, not a stock-out
CAPACITY_PATTERN = (
    r"GCE out of resources|ZONE_RESOURCE_POOL_EXHAUSTED|GCE_STOCKOUT|RESOURCE_POOL_EXHAUSTED|"
    r"does not have enough resources available|stock-?out|CapacityCheckFailed|"
    r"Provisioning Request has failed"
)
# the autoscaler's word for a node group it will not try again yet: evidence only for a flavor already known to
# be stocked out (the failure it backs off from was the stock-out)
_BACKOFF = re.compile(r"in backoff after failed scale-up")
_CODE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")
_JOB_API = {"RayJob": "ray.io/v1", "RayCluster": "ray.io/v1", "Job": "batch/v1"}


@dataclass
class FallbackConfig:
    """How the policy behaves (``flexq fallback`` has flags for most knobs)."""

    grace_seconds: float = 60.0  # capacity errors must last this long before a flavor counts as stocked out
    backoff_seconds: float = 300.0  # first backoff of a stocked-out flavor (the cluster autoscaler's 5 min)
    max_backoff_seconds: float = 1800.0  # backoff cap (the cluster autoscaler's 30 min)
    move_started: bool = False  # also move jobs whose pods on the flavor have started
    hedge: bool = True  # a moved job still waiting on plan B goes back when its plan-A flavor can take it
    hedge_queued: bool = True  # so does a job Kueue itself put on plan B while plan A is stocked out
    cap_quota: bool = True  # while a flavor's backoff runs, its quota is capped to what its nodes up can hold
    keep_idle_seconds: float = (
        21600.0  # in a stock-out, keep the flavor's idle nodes from scale-down this long
    )
    assume_after_seconds: float | None = None  # also count pods unscheduled this long as stocked out (off)
    all_queues: bool = False  # act on every LocalQueue, not only those labelled fallback.flexq.dev/enabled
    dry_run: bool = False
    state_namespace: str = "kueue-system"
    state_name: str = "flexq-fallback"
    capacity_pattern: str = CAPACITY_PATTERN


@dataclass
class Breaker:
    """One stocked-out flavor."""

    since: float  # first capacity error seen
    until: float  # new jobs skip the flavor until then; then one probe goes
    failures: int = 1
    code: str = ""
    message: str = ""
    probe: str = ""  # namespace/name of the workload let through as the probe

    def open(self, now: float) -> bool:
        return now < self.until


@dataclass
class Action:
    """What a pass did (or, dry, would do)."""

    verb: str  # evict, move, return, returned, steer, unsteer, trip, probe, probe-failed, recover
    target: str  # namespace/name of the job or the flavor
    message: str


@dataclass
class _Workload:
    obj: dict
    key: str
    cq: str
    job: tuple[str, str, str] | None  # (kind, namespace, name) of the owning job
    assigned: dict[str, set[str]] = field(default_factory=dict)  # pod set -> flavors
    pods: list[dict] = field(default_factory=list)
    current: bool = True  # the job's newest active Workload (a job can briefly have an old, evicted one too)


def _cond(obj: dict, ctype: str) -> dict | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None
    )


def _true(obj: dict, ctype: str) -> bool:
    c = _cond(obj, ctype)
    return c is not None and c.get("status") == "True"


def _ts(text: str | None) -> float | None:
    if not text:
        return None
    from flexq.clock import parse_time

    try:
        return parse_time(text)
    except ValueError:
        return None


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


RETURN_SETTLE_SECONDS = 60.0  # a job sent back is given this long to be re-admitted before the next one goes


def _q(value: Any) -> Fraction:
    try:
        return parse_quantity(value if isinstance(value, (str, int, float)) else str(value))
    except (QuantityError, ValueError):
        return Fraction(0)


def _fmt(q: Fraction) -> str:
    """A quantity as Kubernetes writes it (whole numbers plain, the rest in milli-units, rounded down)."""
    if q.denominator == 1:
        return str(q.numerator)
    return f"{int(q * 1000)}m"


def _json_map(text: str | None) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {k: dict(v) for k, v in doc.items() if isinstance(v, dict)} if isinstance(doc, dict) else {}


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _requests(pod_spec: dict) -> dict[str, Fraction]:
    """A pod's effective requests: the sum of its containers' (limits stand in for missing requests), at least
    each init container's."""
    out: dict[str, Fraction] = {}
    for c in pod_spec.get("containers") or []:
        res = c.get("resources") or {}
        for r, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            out[r] = out.get(r, Fraction(0)) + _q(q)
    for c in pod_spec.get("initContainers") or []:
        res = c.get("resources") or {}
        for r, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            out[r] = max(out.get(r, Fraction(0)), _q(q))
    return {r: q for r, q in out.items() if q > 0}


def _place(nodes: list[dict[str, Fraction]], pods: list[dict[str, Fraction]]) -> bool:
    """First-fit the pods onto what is left of the nodes (taking it); False if one does not fit."""
    ok = True
    for req in pods:
        for left in nodes:
            if all(left.get(r, Fraction(0)) >= q for r, q in req.items()):
                for r, q in req.items():
                    left[r] = left.get(r, Fraction(0)) - q
                break
        else:
            ok = False
    return ok


def _newer(a: _Workload, b: _Workload) -> bool:
    """Whether ``a`` is the job's current Workload rather than ``b``: active first, then the newest."""

    def rank(w: _Workload) -> tuple[bool, str, str]:
        md = w.obj["metadata"]
        active = (w.obj.get("spec") or {}).get("active") is not False
        return (active, md.get("creationTimestamp") or "", md["name"])

    return rank(a) > rank(b)


def _pod_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def pod_templates(job: dict) -> dict[str, dict]:
    """Pod set name -> the job's pod template spec for it (what Kueue builds the Workload's pod sets from)."""
    kind, spec = job.get("kind"), job.get("spec") or {}
    if kind == "Job":
        return {"main": spec.setdefault("template", {}).setdefault("spec", {})}
    if kind in ("RayJob", "RayCluster"):
        rc = spec.get("rayClusterSpec") if kind == "RayJob" else spec
        if not isinstance(rc, dict):
            return {}
        out = {"head": rc.setdefault("headGroupSpec", {}).setdefault("template", {}).setdefault("spec", {})}
        for wg in rc.get("workerGroupSpecs") or []:
            out[str(wg.get("groupName", "")).lower()] = wg.setdefault("template", {}).setdefault("spec", {})
        return out
    return {}


def _terms(pod_spec: dict) -> list[dict]:
    aff = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    req = aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    return req.setdefault("nodeSelectorTerms", [])


def restrict(pod_spec: dict, key: str, value: str) -> bool:
    """Add ``key NotIn [value]`` to every required node-affinity term (one term if there is none)."""
    expr = {"key": key, "operator": "NotIn", "values": [value]}
    terms = _terms(pod_spec)
    if not terms:
        terms.append({"matchExpressions": [expr]})
        return True
    changed = False
    for t in terms:
        exprs = t.setdefault("matchExpressions", [])
        if expr not in exprs:
            exprs.append(expr)
            changed = True
    return changed


def unrestrict(pod_spec: dict, key: str, value: str) -> bool:
    """Remove what ``restrict`` added (and the affinity it created, if it is left empty)."""
    expr = {"key": key, "operator": "NotIn", "values": [value]}
    aff = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    changed = False
    for t in req.get("nodeSelectorTerms") or []:
        if expr in (t.get("matchExpressions") or []):
            t["matchExpressions"].remove(expr)
            changed = True
    if changed:
        req["nodeSelectorTerms"] = [
            t for t in req["nodeSelectorTerms"] if t.get("matchExpressions") or t.get("matchFields")
        ]
        if not req["nodeSelectorTerms"]:
            aff.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
            if not aff:
                pod_spec["affinity"].pop("nodeAffinity", None)
                if not pod_spec["affinity"]:
                    pod_spec.pop("affinity")
    return changed


class FallbackPolicy:
    """Stock-out-aware fallback over one cluster (see the module docstring)."""

    def __init__(self, api: ClusterAPI, config: FallbackConfig | None = None) -> None:
        self.api = api
        self.cfg = config or FallbackConfig()
        self.capacity = re.compile(self.cfg.capacity_pattern)
        self.breakers: dict[str, Breaker] = {}
        self._loaded = False

    # -- state ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded and self.cfg.dry_run:
            return
        data = self.api.load_state(self.cfg.state_namespace, self.cfg.state_name)
        self.breakers = {}
        for flavor, text in data.items():
            try:
                self.breakers[flavor] = Breaker(**json.loads(text))
            except (TypeError, ValueError):
                log.warning("ignoring an unreadable breaker for flavor %s", flavor)
        self._loaded = True

    def _save(self) -> None:
        if self.cfg.dry_run:
            return
        data = {f: json.dumps(asdict(b), sort_keys=True) for f, b in sorted(self.breakers.items())}
        try:
            self.api.save_state(self.cfg.state_namespace, self.cfg.state_name, data)
        except (Conflict, NotFound) as exc:
            log.warning("could not save the fallback state: %s", exc)

    # -- one pass ---------------------------------------------------------------------------------
    def run_once(self) -> list[Action]:
        """One pass over the cluster; returns what it did."""
        self._load()
        now = self.api.now()
        actions: list[Action] = []
        queues = self._queues()
        if not queues:
            return actions
        cqs = {cq["metadata"]["name"]: cq for cq in self.api.list("ClusterQueue")}
        self.flavors = {
            rf["metadata"]["name"]: (rf.get("spec") or {}).get("nodeLabels") or {}
            for rf in self.api.list("ResourceFlavor")
        }
        self.cqs = cqs
        wls = self._workloads(queues)
        self._wls = wls
        self._nodes_cache: list[dict] | None = None
        self._live = {w.key for w in wls}
        before = {f: asdict(b) for f, b in self.breakers.items()}
        self._stuck: dict[str, set[str]] = {}
        self._touched: set[tuple[str, str, str] | None] = set()  # jobs acted on in this pass
        self._free: dict[str, list[dict[str, Fraction]]] | None = None
        self._evidence(wls, now, actions)
        self._recoveries(now, actions)
        self._moves(wls, now, actions)
        if self.cfg.hedge:
            self._returns(wls, now, actions)
        self._steer(wls, now, actions)
        if self.cfg.cap_quota:
            self._caps(set(queues.values()), now, actions)
        self._keep_nodes(now, actions)
        if {f: asdict(b) for f, b in self.breakers.items()} != before:
            self._save()
        return actions

    def next_wakeup(self, now: float) -> float | None:
        """When a breaker's backoff ends (the in-twin controller wakes then)."""
        due = [b.until for b in self.breakers.values() if b.until > now]
        return min(due) if due else None

    def _queues(self) -> dict[tuple[str, str], str]:
        out = {}
        for lq in self.api.list("LocalQueue"):
            md = lq["metadata"]
            if self.cfg.all_queues or (md.get("labels") or {}).get(OPT_IN_LABEL) == "true":
                out[(md.get("namespace") or "", md["name"])] = (lq.get("spec") or {}).get("clusterQueue", "")
        return out

    def _workloads(self, queues: dict[tuple[str, str], str]) -> list[_Workload]:
        out: list[_Workload] = []
        by_owner: dict[tuple[str, str, str], _Workload] = {}
        for wl in sorted(
            self.api.list("Workload"),
            key=lambda w: (w["metadata"].get("namespace", ""), w["metadata"]["name"]),
        ):
            md = wl["metadata"]
            ns = md.get("namespace") or ""
            cq = queues.get((ns, (wl.get("spec") or {}).get("queueName", "")))
            if cq is None or _true(wl, "Finished"):
                continue
            owner = next((r for r in md.get("ownerReferences") or [] if r.get("controller")), None)
            job = (owner["kind"], ns, owner["name"]) if owner and owner.get("kind") in _JOB_API else None
            w = _Workload(wl, f"{ns}/{md['name']}", cq, job)
            for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
                w.assigned[psa.get("name", "")] = set((psa.get("flavors") or {}).values())
            out.append(w)
            if job is not None:
                prev = by_owner.get(job)
                if prev is None or _newer(w, prev):
                    if prev is not None:
                        prev.current = False
                    by_owner[job] = w
                else:
                    w.current = False
        self._uids_of_job: dict[tuple[str, str, str], set[str]] = {}
        for w in out:
            if w.job is not None:
                self._uids_of_job.setdefault(w.job, set()).add(w.obj["metadata"].get("uid") or "")
        for ns in sorted({w.obj["metadata"].get("namespace") or "" for w in out}):
            for pod in self.api.list("Pod", ns):
                owner = self._owner_workload(pod, by_owner)
                if owner is not None:
                    owner.pods.append(pod)
        return out

    def _owner_workload(self, pod: dict, by_owner: dict[tuple[str, str, str], _Workload]) -> _Workload | None:
        """Climb the pod's controller references (Pod → RayCluster → RayJob, Pod → Job) to a job with a Workload."""
        obj, ns = pod, pod["metadata"].get("namespace") or ""
        for _ in range(3):
            ref = next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None:
                return None
            w = by_owner.get((ref.get("kind", ""), ns, ref.get("name", "")))
            if w is not None:
                return w
            if ref.get("kind") not in _JOB_API:
                return None
            parent = self.api.get(ref["kind"], ref["name"], ns)
            if parent is None:
                return None
            obj = parent
        return None

    # -- 1. evidence and breakers -----------------------------------------------------------------
    def _pod_flavor(self, w: _Workload, pod: dict) -> tuple[str, str] | None:
        """(pod set, flavor) of a pod: the assigned flavor whose node labels are in its nodeSelector."""
        sel = (pod.get("spec") or {}).get("nodeSelector") or {}
        for ps, flavors in sorted(w.assigned.items()):
            for f in sorted(flavors):
                labels = self.flavors.get(f) or {}
                if labels and all(sel.get(k) == v for k, v in labels.items()):
                    return ps, f
        return None

    def _evidence(self, wls: list[_Workload], now: float, actions: list[Action]) -> None:
        seen: dict[
            str, tuple[float, str, str, _Workload]
        ] = {}  # flavor -> earliest (time, code, message, wl)
        events: dict[str, dict[str, list[dict]]] = {}
        for w in wls:
            if not w.assigned:
                self._check_evidence(w, now, seen)
                continue
            ns = w.obj["metadata"].get("namespace") or ""
            if ns not in events:
                events[ns] = {}
                for ev in self.api.capacity_events(ns):
                    uid = (ev.get("involvedObject") or {}).get("uid") or ""
                    events[ns].setdefault(uid, []).append(ev)
            admitted_at = _ts((_cond(w.obj, "QuotaReserved") or {}).get("lastTransitionTime")) or now
            for pod in w.pods:
                where = self._pod_flavor(w, pod)
                if where is None:
                    continue
                flavor = where[1]
                sched = _cond(pod, "PodScheduled")
                if (sched is not None and sched.get("status") == "True") or (pod.get("spec") or {}).get(
                    "nodeName"
                ):
                    continue  # (a pod on a node that was already up says nothing about new capacity)
                for ev in events[ns].get(pod["metadata"].get("uid") or "", []):
                    msg = ev.get("message") or ""
                    if not self.capacity.search(msg) and not (
                        flavor in self.breakers and _BACKOFF.search(msg)
                    ):
                        continue
                    first = (
                        _ts(ev.get("firstTimestamp") or ev.get("eventTime") or ev.get("lastTimestamp")) or now
                    )
                    first = max(first, admitted_at)
                    self._stuck.setdefault(w.key, set()).add(flavor)
                    m = _CODE.search(msg)
                    code = (
                        m.group(1)
                        if m
                        else (
                            "GCE out of resources"
                            if "out of resources" in msg
                            else self.breakers[flavor].code
                            if flavor in self.breakers
                            else "stock-out"
                        )
                    )
                    if flavor not in seen or first < seen[flavor][0]:
                        seen[flavor] = (first, code, msg, w)
                if (
                    flavor not in seen
                    and self.cfg.assume_after_seconds is not None
                    and now - admitted_at >= self.cfg.assume_after_seconds
                ):
                    seen[flavor] = (admitted_at, "Unschedulable", "pods unscheduled since admission", w)
                if (
                    self.cfg.assume_after_seconds is not None
                    and now - admitted_at >= self.cfg.assume_after_seconds
                ):
                    self._stuck.setdefault(w.key, set()).add(flavor)
        for flavor, (first, code, msg, w) in sorted(seen.items()):
            if now - first < self.cfg.grace_seconds:
                continue
            b = self.breakers.get(flavor)
            if b is None:
                self.breakers[flavor] = Breaker(
                    since=first, until=now + self.cfg.backoff_seconds, code=code, message=msg[:500]
                )
                actions.append(
                    Action(
                        "trip",
                        flavor,
                        f"{flavor} stocked out ({code}) since {_duration(now - first)} "
                        f"ago; new jobs skip it for {_duration(self.cfg.backoff_seconds)}",
                    )
                )
            elif b.probe and b.probe == w.key:
                b.failures += 1
                b.until = now + min(
                    self.cfg.max_backoff_seconds, self.cfg.backoff_seconds * 2 ** (b.failures - 1)
                )
                b.probe, b.code = "", code
                actions.append(
                    Action(
                        "probe-failed",
                        flavor,
                        f"probe {w.key} found {flavor} still stocked out "
                        f"({code}); backing off {_duration(b.until - now)}",
                    )
                )

    def _check_evidence(self, w: _Workload, now: float, seen: dict) -> None:
        """A capacity-checking provisioning admission check on a flavor, Retry or Rejected, is evidence at once."""
        cq = self.cqs.get(w.cq) or {}
        strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        for chk in (w.obj.get("status") or {}).get("admissionChecks") or []:
            if chk.get("state") not in ("Retry", "Rejected"):
                continue
            rule = next((r for r in strategy if r.get("name") == chk.get("name")), None)
            if (
                rule is None
                or not rule.get("onFlavors")
                or self._check_class(chk.get("name", "")) in (None, DWS_CLASS)
            ):
                continue
            msg = chk.get("message") or ""
            m = _CODE.search(msg)
            for flavor in rule["onFlavors"]:
                if flavor not in seen:
                    seen[flavor] = (
                        now - self.cfg.grace_seconds,
                        m.group(1) if m else "CapacityCheckFailed",
                        msg,
                        w,
                    )

    def _check_class(self, check: str) -> str | None:
        ac = self.api.get("AdmissionCheck", check)
        params = ((ac or {}).get("spec") or {}).get("parameters") or {}
        if params.get("kind") != "ProvisioningRequestConfig":
            return None
        prc = self.api.get("ProvisioningRequestConfig", params.get("name", ""))
        return ((prc or {}).get("spec") or {}).get("provisioningClassName")

    def _recoveries(self, now: float, actions: list[Action]) -> None:
        """A breaker closes on the first scale-up of its flavor that succeeds: a Node with the flavor's labels
        created after the stock-out began (the autoscaler got a VM), whichever job asked for it."""
        if not self.breakers:
            return
        for flavor, b in sorted(self.breakers.items()):
            labels = self.flavors.get(flavor) or {}
            if not labels:
                continue
            new = [
                n
                for n in self._nodes()
                if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
                and (_ts(n["metadata"].get("creationTimestamp")) or 0.0) >= b.since
            ]
            if not new:
                continue
            del self.breakers[flavor]
            node = min(
                new, key=lambda n: (n["metadata"].get("creationTimestamp") or "", n["metadata"]["name"])
            )
            actions.append(
                Action(
                    "recover",
                    flavor,
                    f"{flavor} has capacity again (node {node['metadata']['name']} created) after "
                    f"{_duration(now - b.since)}; new jobs use it",
                )
            )
            w = next((x for x in self._wls if b.probe and x.key == b.probe), None)
            if w is not None:
                self._emit(
                    w,
                    "Normal",
                    "FallbackRecovered",
                    f"{flavor} has capacity again after {_duration(now - b.since)}: new jobs use it again",
                )

    # -- 2. moves ---------------------------------------------------------------------------------
    def _next_flavor(self, cq_name: str, skip: set[str]) -> str | None:
        cq = self.cqs.get(cq_name) or {}
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            names = [f.get("name") for f in rg.get("flavors") or []]
            if any(s in names for s in skip):
                later = names[max(names.index(s) for s in skip if s in names) + 1 :]
                return next((f for f in later if f not in self.breakers), later[0] if later else None)
        return None

    def _moves(self, wls: list[_Workload], now: float, actions: list[Action]) -> None:
        for w in wls:
            if w.job is None:
                continue
            job = self.api.get(w.job[0], w.job[2], w.job[1])
            if job is None:
                continue
            move = self._move_state(job)
            uid = w.obj["metadata"].get("uid") or ""
            if move and move.get("step") in ("deactivating", "returning"):
                # the step belongs to the Workload it names; if that one is gone, to the job's current one
                named = move.get("workloadUID") or ""
                if named == uid or (w.current and named not in self._uids_of_job.get(w.job, set())):
                    self._touched.add(w.job)
                    if move["step"] == "deactivating":
                        self._finish_move(w, job, move, now, actions)
                    else:
                        self._finish_return(w, job, move, now, actions)
                continue
            if (
                move
                and move.get("step") in ("moved", "returned")
                and move.get("workloadUID") == w.obj["metadata"].get("uid")
                and w.obj["spec"].get("active") is False
                and not _true(w.obj, "QuotaReserved")
                and not self.cfg.dry_run
            ):
                # moved, but the pass that restricted the job died before deleting the evicted Workload
                self.api.delete("Workload", w.obj["metadata"]["name"], w.obj["metadata"].get("namespace"))
                continue
            if (
                not w.current
                or w.job in self._touched
                or not w.assigned
                or not (_true(w.obj, "QuotaReserved"))
                or w.obj["spec"].get("active") is False
            ):
                continue
            for _ps, flavors in sorted(w.assigned.items()):
                tripped = sorted(f for f in flavors if f in self.breakers and self.breakers[f].probe != w.key)
                if not tripped:
                    continue
                flavor = tripped[0]
                if self._started(w, flavor) and not self.cfg.move_started:
                    continue  # (nor is it a probe: pods already on nodes say nothing about new capacity)
                if self._probe(flavor, w, now, actions):
                    continue
                if not self._stuck_on(w, flavor):
                    continue  # its own pods have not been refused capacity (yet): it may well get nodes
                target = self._next_flavor(w.cq, {flavor})
                if target is None:
                    continue
                sets = sorted(p for p, fs in w.assigned.items() if flavor in fs)
                self._touched.add(w.job)
                self._start_move(w, job, flavor, target, sets, now, actions)
                break

    def _stuck_on(self, w: _Workload, flavor: str) -> bool:
        """This workload's own evidence: its pods on the flavor were refused a scale-up for capacity (or the
        autoscaler backs off from the flavor's stock-out), or its capacity check on the flavor failed. A breaker
        alone does not move a job: the stock-out may have ended since, and the job's pods find out in seconds."""
        if flavor in self._stuck.get(w.key, ()):
            return True
        cq = self.cqs.get(w.cq) or {}
        strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        on_flavor = {r.get("name") for r in strategy if flavor in (r.get("onFlavors") or [])}
        return any(
            c.get("name") in on_flavor and c.get("state") in ("Retry", "Rejected")
            for c in (w.obj.get("status") or {}).get("admissionChecks") or []
        )

    def _probe(self, flavor: str, w: _Workload, now: float, actions: list[Action]) -> bool:
        """Once the flavor's backoff has ended, one workload tries it (True: ``w`` is that probe)."""
        b = self.breakers[flavor]
        if b.open(now):
            return False
        if b.probe == w.key:
            return True
        if b.probe and b.probe in self._live:
            return False
        self._make_probe(b, w, flavor, actions)
        return True

    def _make_probe(self, b: Breaker, w: _Workload, flavor: str, actions: list[Action]) -> None:
        """Make ``w`` the probe of ``flavor``'s breaker ``b`` (saved at once, so a restart keeps it) and say so."""
        b.probe = w.key
        actions.append(Action("probe", w.key, f"{flavor}'s backoff ended: {w.key} tries it"))
        if not self.cfg.dry_run:
            self._save()
            self._emit(
                w,
                "Normal",
                "FallbackProbe",
                f"{flavor} was stocked out ({b.code}); this job checks whether it is back",
            )

    def _started(self, w: _Workload, flavor: str) -> bool:
        if _true(w.obj, "PodsReady"):
            return True
        for pod in w.pods:
            where = self._pod_flavor(w, pod)
            if (
                where
                and where[1] == flavor
                and ((pod.get("status") or {}).get("phase") == "Running" or _true(pod, "PodScheduled"))
            ):
                return True
        return False

    @staticmethod
    def _move_state(job: dict) -> dict:
        text = (job["metadata"].get("annotations") or {}).get(ANN_MOVE)
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {}

    def _start_move(
        self,
        w: _Workload,
        job: dict,
        flavor: str,
        target: str,
        sets: list[str],
        now: float,
        actions: list[Action],
    ) -> None:
        b = self.breakers[flavor]
        why = f"{flavor} stocked out ({b.code}) for {_duration(now - b.since)}"
        actions.append(Action("evict", w.key, f"{why}: deactivating {w.obj['metadata']['name']} to move it"))
        if self.cfg.dry_run:
            return
        move = {
            **({"probes": p} if (p := self._move_state(job).get("probes")) else {}),
            "from": flavor,
            "to": target,
            "podSets": sets,
            "step": "deactivating",
            "code": b.code,
            "since": b.since,
            "at": now,
            "workload": w.obj["metadata"]["name"],
            "workloadUID": w.obj["metadata"].get("uid", ""),
        }
        if not self._record_and_deactivate(job, w, move):
            return
        self._emit(
            w, "Warning", "FallbackEvicting", f"{why}: deactivating the workload to move it to {target}"
        )

    def _finish_move(self, w: _Workload, job: dict, move: dict, now: float, actions: list[Action]) -> None:
        """Deactivated: once Kueue has evicted it and suspended the job, restrict the job and delete the Workload."""
        if _true(w.obj, "QuotaReserved") or not self._suspended(job):
            return  # Kueue has not evicted it yet
        flavor, target = move.get("from", ""), move.get("to", "")
        since = float(move.get("since") or now)
        msg = (
            f"{flavor} stocked out ({move.get('code', '')}) for {_duration(now - since)} → moved to {target}"
        )
        actions.append(Action("move", w.key, msg))
        if self.cfg.dry_run:
            return
        if not self._restrict_job(
            job,
            flavor,
            move.get("podSets") or [],
            {ANN_MOVE: json.dumps({**move, "step": "moved", "at": now}, sort_keys=True), ANN_MOVED: msg},
        ):
            return
        self.api.delete("Workload", w.obj["metadata"]["name"], w.obj["metadata"].get("namespace"))
        self._emit(w, "Normal", "FallbackMoved", msg)

    @staticmethod
    def _suspended(job: dict) -> bool:
        return bool((job.get("spec") or {}).get("suspend"))

    # -- 2b. hedge: back to plan A -----------------------------------------------------------------
    def _returns(self, wls: list[_Workload], now: float, actions: list[Action]) -> None:
        """A job moved off a flavor and still waiting for its plan B (quota reserved there, its provisioning
        not granted: the job is suspended, no pod exists) goes back to the flavor as soon as the flavor can
        take it at once: the flavor's quota is free and its nodes, up and idle, fit the moved pod sets; or
        the flavor has no breaker any more (its stock-out is over: the autoscaler will make the nodes). Its
        wait becomes the sooner of the two plans, without running pods on both. Oldest moves first; one at a
        time per flavor until Kueue has re-admitted it (no two jobs promised the same nodes)."""
        waiting: list[tuple[float, str, _Workload, dict, dict]] = []
        busy: set[str] = set()  # flavors with a return in flight
        for w in wls:
            if w.job is None or not w.current or w.job in self._touched:
                continue
            job = self.api.get(w.job[0], w.job[2], w.job[1])
            if job is None:
                continue
            move = self._move_state(job)
            flavor = move.get("from", "")
            if move.get("step") == "returning" or (
                move.get("step") == "returned"
                and now - float(move.get("at") or 0.0) < RETURN_SETTLE_SECONDS
                and not any(flavor in fs for fs in w.assigned.values())
            ):
                busy.add(flavor)
                continue
            submitted = _ts(job["metadata"].get("creationTimestamp")) or 0.0
            if move.get("step") == "moved" and (
                move.get("hedged") or flavor in self._restricted_flavors(job)
            ):
                if self._waiting_on_plan_b(w, job, flavor):
                    waiting.append((submitted, w.key, w, job, move))
                continue
            if self.cfg.hedge_queued and move.get("step") in (None, "returned"):
                # placed on a later flavor by Kueue itself (the first one's quota in use, or capped) while the
                # first one is stocked out: it waits for plan B because of the stock-out, so it gets a ticket
                # back, like a moved job (the flavor's breaker is the only trigger: without a stock-out nothing
                # changes)
                hedge = self._hedge_candidate(w)
                if hedge is not None and self._waiting_on_plan_b(w, job, hedge["from"]):
                    hedge["at"] = now
                    if not self.cfg.dry_run and not self._annotate(
                        job, {ANN_MOVE: json.dumps(hedge, sort_keys=True)}
                    ):
                        continue
                    waiting.append((submitted, w.key, w, job, hedge))
        for _at, _key, w, job, move in sorted(waiting, key=lambda t: (t[0], t[1])):
            flavor = move["from"]
            if flavor in busy:
                continue
            sets = [p for p in move.get("podSets") or [] if p]
            needs = self._pod_set_needs(w, sets)
            if not needs or not self._quota_free(w.cq, flavor, needs):
                continue
            b = self.breakers.get(flavor)
            if b is None:
                why = f"{flavor} is no longer stocked out"
            elif self._fits_free_nodes(flavor, needs):
                why = f"{flavor} has idle nodes for it"
            else:
                continue
            busy.add(flavor)
            self._touched.add(w.job)
            self._start_return(w, job, move, why, now, actions)
        # the backoff has ended and no job is trying the flavor: the job that has probed least, and of those the
        # one that started waiting for plan B last (it loses least: its place at the back of plan B's queue),
        # tries it
        for _at, _key, w, job, move in sorted(
            waiting, key=lambda t: (int(t[4].get("probes") or 0), -t[0], t[1])
        ):
            flavor = move["from"]
            b = self.breakers.get(flavor)
            if flavor in busy or w.job in self._touched or b is None or b.open(now):
                continue
            if b.probe and b.probe in self._live:
                continue
            needs = self._pod_set_needs(w, [p for p in move.get("podSets") or [] if p])
            if not needs or not self._quota_free(w.cq, flavor, needs):
                continue
            self._make_probe(b, w, flavor, actions)
            why = f"{flavor}'s backoff ended"
            busy.add(flavor)
            self._touched.add(w.job)
            self._start_return(
                w, job, {**move, "probes": int(move.get("probes") or 0) + 1}, why, now, actions
            )

    def _hedge_candidate(self, w: _Workload) -> dict | None:
        """For a workload Kueue put on a later flavor of a resource group whose earlier flavor is stocked out:
        the move record of a hedge back to that earlier flavor (None if there is none)."""
        cq = self.cqs.get(w.cq) or {}
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            names = [f.get("name") for f in rg.get("flavors") or []]
            for _ps, flavors in sorted(w.assigned.items()):
                for cur in sorted(flavors):
                    if cur not in names:
                        continue
                    earlier = [
                        f for f in names[: names.index(cur)] if f in self.breakers and self.flavors.get(f)
                    ]
                    if earlier:
                        sets = sorted(p for p, fs in w.assigned.items() if cur in fs)
                        return {
                            "from": earlier[0],
                            "to": cur,
                            "podSets": sets,
                            "step": "moved",
                            "hedged": True,
                        }
        return None

    def _waiting_on_plan_b(self, w: _Workload, job: dict, flavor: str) -> bool:
        """Quota reserved on another flavor, not admitted yet (its provisioning request not granted), the job
        suspended and without pods: nothing has started, nothing is lost but the place in plan B's queue."""
        if not _true(w.obj, "QuotaReserved") or w.obj["spec"].get("active") is False:
            return False
        if _true(w.obj, "Admitted") or _true(w.obj, "PodsReady") or not self._suspended(job):
            return False
        if any(flavor in fs for fs in w.assigned.values()):
            return False
        if any(c.get("state") == "Ready" for c in (w.obj.get("status") or {}).get("admissionChecks") or []):
            return False
        return not any(not _pod_terminal(p) for p in w.pods)

    def _start_return(
        self, w: _Workload, job: dict, move: dict, why: str, now: float, actions: list[Action]
    ) -> None:
        flavor, target = move.get("from", ""), move.get("to", "")
        actions.append(
            Action("return", w.key, f"{why}: deactivating {w.obj['metadata']['name']} to move it back")
        )
        if self.cfg.dry_run:
            return
        back = {
            **move,
            "step": "returning",
            "at": now,
            "workload": w.obj["metadata"]["name"],
            "workloadUID": w.obj["metadata"].get("uid", ""),
            "returns": int(move.get("returns") or 0) + 1,
        }
        if not self._record_and_deactivate(job, w, back):
            return
        self._emit(
            w,
            "Normal",
            "FallbackReturning",
            f"{why} while {target} has not provisioned yet: moving the job back to {flavor}",
        )

    def _finish_return(self, w: _Workload, job: dict, move: dict, now: float, actions: list[Action]) -> None:
        """Deactivated to go back: once Kueue has evicted it, lift the restriction and delete the Workload
        (Kueue makes a new one from the job and scans the flavors in order again)."""
        if _true(w.obj, "QuotaReserved") or not self._suspended(job):
            return
        flavor, target = move.get("from", ""), move.get("to", "")
        msg = (
            f"{flavor} can take it before {target} provisioned → moved "
            f"{'' if move.get('hedged') else 'back '}to {flavor}"
        )
        actions.append(Action("returned", w.key, msg))
        if self.cfg.dry_run:
            return
        job = json.loads(json.dumps(job))
        key, value = self._flavor_label(flavor)
        for spec in pod_templates(job).values():
            unrestrict(spec, key, value)
        anns = job["metadata"].setdefault("annotations", {})
        anns[ANN_MOVE] = json.dumps({**move, "step": "returned", "at": now}, sort_keys=True)
        anns[ANN_MOVED] = msg
        try:
            self.api.replace(job)
        except (Conflict, NotFound):
            return
        self.api.delete("Workload", w.obj["metadata"]["name"], w.obj["metadata"].get("namespace"))
        self._emit(w, "Normal", "FallbackReturned", msg)

    # -- capacity: quota and idle nodes of a flavor --------------------------------------------------
    def _nodes(self) -> list[dict]:
        if self._nodes_cache is None:
            self._nodes_cache = self.api.list("Node")
        return self._nodes_cache

    def _usable_nodes(self, labels: dict[str, str]) -> list[dict]:
        return [
            n
            for n in self._nodes()
            if labels
            and all((n["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
            and not n["metadata"].get("deletionTimestamp")
            and not (n.get("spec") or {}).get("unschedulable")
            and not any(
                t.get("key") == "ToBeDeletedByClusterAutoscaler"
                for t in (n.get("spec") or {}).get("taints") or []
            )
        ]

    def _pod_set_needs(self, w: _Workload, sets: list[str]) -> list[tuple[int, dict[str, Fraction]]]:
        """(count, requests of one pod) of the workload's pod sets named."""
        out = []
        for ps in (w.obj.get("spec") or {}).get("podSets") or []:
            if ps.get("name") in sets:
                out.append(
                    (int(ps.get("count") or 1), _requests((ps.get("template") or {}).get("spec") or {}))
                )
        return out

    def _quota_free(self, cq_name: str, flavor: str, needs: list[tuple[int, dict[str, Fraction]]]) -> bool:
        cq = self.cqs.get(cq_name) or {}
        nominal: dict[str, Fraction] = {}
        covered: set[str] = set()
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            for f in rg.get("flavors") or []:
                if f.get("name") == flavor:
                    covered |= set(rg.get("coveredResources") or [])
                    for r in f.get("resources") or []:
                        nominal[r["name"]] = _q(r.get("nominalQuota"))
        if not covered:
            return False
        used: dict[str, Fraction] = {}
        for fu in (cq.get("status") or {}).get("flavorsReservation") or []:
            if fu.get("name") == flavor:
                for r in fu.get("resources") or []:
                    used[r["name"]] = _q(r.get("total"))
        total: dict[str, Fraction] = {}
        for count, req in needs:
            for r, q in req.items():
                if r in covered:
                    total[r] = total.get(r, Fraction(0)) + q * count
        return all(used.get(r, Fraction(0)) + q <= nominal.get(r, Fraction(0)) for r, q in total.items())

    def _free_nodes(self, flavor: str) -> list[dict[str, Fraction]]:
        """What is left on each node of the flavor (up, not cordoned, not being removed) once the pods bound to
        it and the pods still to come of workloads admitted on the flavor are counted."""
        if self._free is None:
            self._free = {}
        if flavor in self._free:
            return self._free[flavor]
        nodes = self._usable_nodes(self.flavors.get(flavor) or {})
        free = {
            n["metadata"]["name"]: {
                r: _q(v) for r, v in ((n.get("status") or {}).get("allocatable") or {}).items()
            }
            for n in nodes
        }
        if free:
            for pod in self.api.list("Pod"):
                node = (pod.get("spec") or {}).get("nodeName")
                if node in free and not _pod_terminal(pod):
                    for r, q in _requests(pod.get("spec") or {}).items():
                        free[node][r] = free[node].get(r, Fraction(0)) - q
        left = [free[k] for k in sorted(free)]
        # pods still to come on the flavor: the unbound part of each workload admitted there
        for w in self._wls:
            if not _true(w.obj, "QuotaReserved") or w.obj["spec"].get("active") is False:
                continue
            sets = [ps for ps, fs in w.assigned.items() if flavor in fs]
            for count, req in self._pod_set_needs(w, sets):
                bound = sum(
                    1
                    for p in w.pods
                    if (p.get("spec") or {}).get("nodeName")
                    and not _pod_terminal(p)
                    and (self._pod_flavor(w, p) or ("", ""))[1] == flavor
                    and _requests(p.get("spec") or {}) == req
                )
                _place(left, [req] * max(0, count - bound))
        self._free[flavor] = left
        return left

    def _fits_free_nodes(self, flavor: str, needs: list[tuple[int, dict[str, Fraction]]]) -> bool:
        left = [dict(n) for n in self._free_nodes(flavor)]
        pods = [req for count, req in needs for _ in range(count)]
        if not pods or not _place(left, pods):
            return False
        assert self._free is not None
        self._free[flavor] = left  # promised to this job for the rest of the pass
        return True

    # -- 2c. steering at admission: the stocked-out flavor's quota capped to its nodes up -------------
    def _caps(self, cq_names: set[str], now: float, actions: list[Action]) -> None:
        """Kueue reserves quota the moment a Workload is created, before a pass can steer it; so while a flavor's
        backoff runs, the ClusterQueue's nominal quota of that flavor is capped to what the flavor's nodes up
        hold (idle ones, and those running jobs that will leave them): a new job gets the flavor only if a
        node of it can take it, and otherwise goes straight to the next flavor, no move needed. When the
        backoff ends (a probe may go) or the breaker closes, the quota the admin set is put back; the original
        figures are kept in the ClusterQueue's ``fallback.flexq.dev/quota`` annotation until then."""
        capacity: dict[str, dict[str, Fraction]] = {}
        for name in sorted(cq_names):
            cq = self.cqs.get(name)
            if cq is None:
                continue
            saved = _json_map((cq["metadata"].get("annotations") or {}).get(ANN_QUOTA))
            new = json.loads(json.dumps(cq))
            changed: list[str] = []
            for rg in (new.get("spec") or {}).get("resourceGroups") or []:
                for f in rg.get("flavors") or []:
                    flavor = f.get("name", "")
                    b = self.breakers.get(flavor)
                    capped = b is not None and b.open(now) and bool(self.flavors.get(flavor))
                    orig = saved.get(flavor) or {}
                    if not capped and not orig:
                        continue
                    if flavor not in capacity and capped:
                        capacity[flavor] = self._flavor_capacity(flavor)
                    for r in f.get("resources") or []:
                        rname = r.get("name", "")
                        if capped:
                            base = orig.get(rname, r.get("nominalQuota"))
                            cap = capacity[flavor].get(rname, Fraction(0))
                            want = base if _q(base) <= cap else _fmt(cap)
                            if rname not in orig:
                                orig[rname] = base
                        else:
                            want = orig.get(rname, r.get("nominalQuota"))
                        if str(r.get("nominalQuota")) != str(want):
                            r["nominalQuota"] = want
                            changed.append(f"{flavor}/{rname} {want}")
                    if capped:
                        saved[flavor] = orig
                    else:
                        saved.pop(flavor, None)
            anns = new["metadata"].setdefault("annotations", {})
            before = anns.get(ANN_QUOTA)
            if saved:
                anns[ANN_QUOTA] = json.dumps(saved, sort_keys=True)
            else:
                anns.pop(ANN_QUOTA, None)
            if not changed and anns.get(ANN_QUOTA) == before:
                continue
            if changed:
                actions.append(Action("quota", name, "nominal quota " + ", ".join(changed)))
            if self.cfg.dry_run:
                continue
            try:
                self.cqs[name] = self.api.replace(new)
            except (Conflict, NotFound) as exc:
                log.info("cluster queue %s changed meanwhile (%s); next pass", name, exc)

    def _flavor_capacity(self, flavor: str) -> dict[str, Fraction]:
        """What the flavor's usable nodes (up or coming up) can hold in all."""
        labels = self.flavors.get(flavor) or {}
        out: dict[str, Fraction] = {}
        for n in self._usable_nodes(labels):
            for r, v in ((n.get("status") or {}).get("allocatable") or {}).items():
                out[r] = out.get(r, Fraction(0)) + _q(v)
        return out

    # -- 2d. keeping the flavor's nodes while it is stocked out --------------------------------------
    def _keep_nodes(self, now: float, actions: list[Action]) -> None:
        """During a stock-out a node of the flavor that empties cannot be replaced: it is kept from the cluster
        autoscaler's scale-down (``cluster-autoscaler.kubernetes.io/scale-down-disabled``) while busy and for
        ``keep_idle_seconds`` once idle, for the next job (sent back from plan B, or new). Released when that
        time is up or the stock-out is over; nodes the policy did not annotate are never touched."""
        nodes = self._nodes() if (self.breakers or self._any_kept()) else []
        if not nodes:
            return
        busy = {
            (p.get("spec") or {}).get("nodeName")
            for p in self.api.list("Pod")
            if (p.get("spec") or {}).get("nodeName") and not _pod_terminal(p)
        }
        for flavor, labels in sorted(self.flavors.items()):
            if not labels:
                continue
            out = flavor in self.breakers and self.cfg.keep_idle_seconds > 0
            for n in nodes:
                md = n["metadata"]
                if not all((md.get("labels") or {}).get(k) == v for k, v in labels.items()):
                    continue
                ann = md.get("annotations") or {}
                kept = ann.get(ANN_KEPT)
                if kept is None and ann.get(SCALE_DOWN_DISABLED) == "true":
                    continue  # the admin's own: never touched
                if not out:
                    if kept is not None:
                        release: dict[str, str | None] = {ANN_KEPT: None, SCALE_DOWN_DISABLED: None}
                        self._annotate_node(n, release, "release" if kept != "released" else "", actions)
                    continue
                if md["name"] in busy:
                    want: str | None = ""
                elif kept in (None, "released"):
                    want = None if kept == "released" else repr(now)  # (released: idle, left to scale-down)
                else:
                    want = kept or repr(now)
                    if now - (_float(want) or now) >= self.cfg.keep_idle_seconds:
                        self._annotate_node(
                            n, {ANN_KEPT: "released", SCALE_DOWN_DISABLED: None}, "release", actions
                        )
                        continue
                if want is not None and (kept != want or ann.get(SCALE_DOWN_DISABLED) != "true"):
                    verb = "keep" if kept in (None, "released") else ""
                    self._annotate_node(n, {ANN_KEPT: want, SCALE_DOWN_DISABLED: "true"}, verb, actions)

    def _any_kept(self) -> bool:
        return any(ANN_KEPT in (n["metadata"].get("annotations") or {}) for n in self._nodes())

    def _annotate_node(
        self, node: dict, anns: dict[str, str | None], verb: str, actions: list[Action]
    ) -> None:
        name = node["metadata"]["name"]
        if verb == "keep":
            actions.append(Action("keep", name, "stocked-out flavor: kept from scale-down"))
        elif verb == "release":
            actions.append(Action("release", name, "released to the cluster autoscaler's scale-down"))
        if self.cfg.dry_run:
            return
        try:
            self.api.merge_patch("Node", name, None, {"metadata": {"annotations": anns}})
        except (Conflict, NotFound) as exc:
            log.info("node %s: %s; next pass", name, exc)

    # -- 3. steering ------------------------------------------------------------------------------
    def _first_flavor(self, w: _Workload) -> list[str]:
        """The flavors the workload's pod sets would try first (Kueue scans a group's flavors in order)."""
        cq = self.cqs.get(w.cq) or {}
        out = []
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            covered = set(rg.get("coveredResources") or [])
            wants = set()
            for ps in (w.obj.get("spec") or {}).get("podSets") or []:
                for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
                    res = c.get("resources") or {}
                    wants |= {
                        r
                        for r, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items()
                        if str(q) not in ("0", "0m")
                    }
            if covered & wants and rg.get("flavors"):
                out.append(rg["flavors"][0].get("name"))
        return out

    def _steer(self, wls: list[_Workload], now: float, actions: list[Action]) -> None:
        for w in wls:
            if (
                w.job is None
                or not w.current
                or w.job in self._touched
                or _true(w.obj, "QuotaReserved")
                or w.obj["spec"].get("active") is False
            ):
                continue
            job = self.api.get(w.job[0], w.job[2], w.job[1])
            if job is None or not self._suspended(job):
                continue
            restricted = self._restricted_flavors(job)
            back = sorted(f for f in restricted if f not in self.breakers)
            if back and self._move_state(job).get("steered"):
                self._unsteer(w, job, back, actions)
                continue
            for flavor in self._first_flavor(w):
                b = self.breakers.get(flavor)
                if b is None or flavor in restricted:
                    continue
                if self._probe(flavor, w, now, actions):
                    continue
                target = self._next_flavor(w.cq, {flavor})
                if target is None:
                    continue
                pod_sets = [ps.get("name", "") for ps in (w.obj.get("spec") or {}).get("podSets") or []]
                msg = f"{flavor} stocked out ({b.code}) since {_duration(now - b.since)} ago → steered to {target}"
                actions.append(Action("steer", w.key, msg))
                if self.cfg.dry_run:
                    continue
                move = {
                    "from": flavor,
                    "to": target,
                    "podSets": pod_sets,
                    "step": "moved",
                    "steered": True,
                    "code": b.code,
                    "since": b.since,
                    "at": now,
                }
                if self._restrict_job(
                    job, flavor, pod_sets, {ANN_MOVE: json.dumps(move, sort_keys=True), ANN_MOVED: msg}
                ):
                    self.api.delete("Workload", w.obj["metadata"]["name"], w.obj["metadata"].get("namespace"))
                    self._emit(w, "Normal", "FallbackSteered", msg)
                break

    def _restricted_flavors(self, job: dict) -> set[str]:
        out = set()
        for spec in pod_templates(job).values():
            for t in (
                ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
                or {}
            ).get("nodeSelectorTerms") or []:
                for e in t.get("matchExpressions") or []:
                    if e.get("operator") != "NotIn" or len(e.get("values") or []) != 1:
                        continue
                    out |= {f for f, labels in self.flavors.items() if labels.get(e["key"]) == e["values"][0]}
        return out

    def _unsteer(self, w: _Workload, job: dict, flavors: list[str], actions: list[Action]) -> None:
        """A pending job steered away from flavors that are back: drop the restriction, let Kueue rescan."""
        msg = f"{', '.join(flavors)} has capacity again: restriction removed"
        actions.append(Action("unsteer", w.key, msg))
        if self.cfg.dry_run:
            return
        job = json.loads(json.dumps(job))
        changed = False
        for flavor in flavors:
            key, value = self._flavor_label(flavor)
            for spec in pod_templates(job).values():
                changed = unrestrict(spec, key, value) or changed
        anns = job["metadata"].setdefault("annotations", {})
        anns.pop(ANN_MOVE, None)
        anns.pop(ANN_MOVED, None)
        if not changed:
            return
        try:
            self.api.replace(job)
        except (Conflict, NotFound):
            return
        self.api.delete("Workload", w.obj["metadata"]["name"], w.obj["metadata"].get("namespace"))
        self._emit(w, "Normal", "FallbackUnsteered", msg)

    # -- writes -----------------------------------------------------------------------------------
    def _flavor_label(self, flavor: str) -> tuple[str, str]:
        labels = self.flavors.get(flavor) or {}
        key = (
            "cloud.google.com/gke-nodepool"
            if "cloud.google.com/gke-nodepool" in labels
            else sorted(labels)[0]
        )
        return key, labels[key]

    def _restrict_job(self, job: dict, flavor: str, pod_sets: list[str], annotations: dict[str, str]) -> bool:
        if not self.flavors.get(flavor):
            log.warning("flavor %s has no nodeLabels: nothing to restrict a job with", flavor)
            return False
        key, value = self._flavor_label(flavor)
        job = json.loads(json.dumps(job))
        templates = pod_templates(job)
        for ps in pod_sets:
            if ps in templates:
                restrict(templates[ps], key, value)
        job["metadata"].setdefault("annotations", {}).update(annotations)
        try:
            self.api.replace(job)
        except (Conflict, NotFound) as exc:
            log.info(
                "job %s/%s changed meanwhile (%s); next pass",
                job["metadata"].get("namespace"),
                job["metadata"]["name"],
                exc,
            )
            return False
        return True

    def _annotate(self, job: dict, annotations: dict[str, Any]) -> bool:
        try:
            self.api.merge_patch(
                job["kind"],
                job["metadata"]["name"],
                job["metadata"].get("namespace"),
                {"metadata": {"annotations": annotations}},
            )
        except (Conflict, NotFound):
            return False
        return True

    def _record_and_deactivate(self, job: dict, w: _Workload, move: dict[str, Any]) -> bool:
        """Write the move record on the job first (so a restart resumes it), then deactivate the job's Workload
        (Kueue evicts it; the job framework recreates it once the job is restricted). False when the record
        could not be written (the job changed or went): nothing was done."""
        if not self._annotate(job, {ANN_MOVE: json.dumps(move, sort_keys=True)}):
            return False
        with contextlib.suppress(NotFound):
            self.api.merge_patch(
                "Workload",
                w.obj["metadata"]["name"],
                w.obj["metadata"].get("namespace"),
                {"spec": {"active": False}},
            )
        return True

    def _emit(self, w: _Workload, type_: str, reason: str, message: str) -> None:
        if self.cfg.dry_run or w.job is None:
            return
        job = self.api.get(w.job[0], w.job[2], w.job[1])
        if job is not None:
            self.api.event(job, type_, reason, message)
