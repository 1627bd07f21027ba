"""The ProvisioningRequest admission check (``pkg/controller/admissionchecks/provisioning``).

Owns the controller for checks whose ``controllerName`` is ``kueue.x-k8s.io/provisioning-request``
(``controller.go``; the AdmissionCheck's ``Active`` condition is ``kueue.provisioning_check``'s, the names
``kueue.provisioning_names``'):
- ``ProvisioningController`` reconciles Workloads holding quota: creates PodTemplates
  ``ppt-<request>-<podset>`` (pod set template + assigned flavors' nodeSelector/tolerations, limits as
  missing requests) and ProvisioningRequests ``<workload>-<check>-<attempt>`` (shortened past 253 characters as
  the Kueue release does it: v0.19.2 hashes the whole name and so never finds its request again, deleting and
  making it without end; 0.20 keeps a stable prefix, kueue#14916) (class and parameters from
  the ProvisioningRequestConfig, ``provreq.kueue.x-k8s.io/*`` annotations as parameters, one pod set per
  pod set using a ``managedResources`` resource, counts from the admission), deletes stale requests
  (and all of them when the workload is evicted or finished), and maps request conditions to the
  check state through ``CHECK_STATE_TABLE`` (data, first matching row wins): Failed → Retry with
  backoff (``base·2^(n-1)`` ≤ max) or Rejected after ``backoffLimitCount``; BookingExpired before
  admission → Retry/Rejected; CapacityRevoked → Rejected; Provisioned → Ready with the
  consume-provisioning-request podSetUpdates; Accepted with a Provisioned condition → Pending with
  its message. It watches AdmissionChecks and ProvisioningRequestConfigs
  too (``SetupWithManager``): a provisioning check created, changed or deleted, or a config created, deleted
  or changed in class, parameters or managedResources, re-syncs the workloads using them (their requests
  are re-made to match the config).
It writes only its own checks' entries in ``status.admissionChecks`` (one writer per field); the
ProvisioningRequest status belongs to the cloud side (``flexq.gke``). Events: ProvisioningRequestCreated,
AdmissionCheckUpdated, FailedCreate.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from collections.abc import Iterator

from flexq.api.jsoncopy import clone
from flexq.api.quantity import parse_quantity
from flexq.api.scheme import BUILT
from flexq.api.wellknown import CONSUME_PROVISIONING_REQUEST, PROVISIONING_CLASS_NAME, PROVREQ_PREFIX
from flexq.errors import ApiError
from flexq.kueue.cache import KueueCache
from flexq.kueue.checks import PROVISIONING_CONTROLLER, retry_strategy
from flexq.kueue.podset import infos_for, merge_into_template
from flexq.kueue.provisioning_names import attempt_of, request_name, template_name
from flexq.kueue.provisioning_states import CHECK_STATE_TABLE, Outcome
from flexq.kueue.workload import (
    backoff_seconds,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    ts,
)
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import find_condition, is_true

__all__ = ["ProvisioningController"]

CONSUME = CONSUME_PROVISIONING_REQUEST
CLASS = PROVISIONING_CLASS_NAME
MANAGED = "kueue.x-k8s.io/managed"
PARAM_PREFIX = PROVREQ_PREFIX
INACTIVE_MSG = "the check is not active"
NOT_NEEDED = "the provisioning request is not needed"


def _set(st: dict, key: str, value: str) -> bool:
    """Set one field of a check's state entry; True when it changed (an absent message reads as "")."""
    if (st.get(key, "") if key == "message" else st.get(key)) == value:
        return False
    st[key] = value
    return True


def _uses(spec: dict, managed: set[str]) -> bool:
    for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        res = c.get("resources") or {}
        if managed & (set(res.get("requests") or {}) | set(res.get("limits") or {})):
            return True
    return False


class _Inconsistent(Exception):
    """``errInconsistentPodSetAssignments``: a pod set the request covers has no assignment in the admission."""


def _managed(prc: dict) -> list[str]:
    return (prc.get("spec") or {}).get("managedResources") or []


def _covered(wl: dict, managed: list[str]) -> list[dict]:
    """``requiredPodSets``: pod sets with pods that use a managed resource (any, when none is listed)."""
    return [
        ps
        for ps in wl["spec"]["podSets"]
        if int(ps.get("count", 1)) > 0
        and (not managed or _uses((ps.get("template") or {}).get("spec") or {}, set(managed)))
    ]


def _assignments(wl: dict) -> dict[str, dict]:
    return {p["name"]: p for p in (wl["status"].get("admission") or {}).get("podSetAssignments") or []}


def _each_required(wl: dict, managed: list[str]) -> Iterator[tuple[dict, dict, int]]:
    """(pod set, assignment, admitted count) of each covered pod set, in order; a covered pod set without an
    assignment is ``_Inconsistent`` when it is reached (errInconsistentPodSetAssignments)."""
    psas = _assignments(wl)
    for ps in _covered(wl, managed):
        psa = psas.get(ps["name"])
        if psa is None:
            raise _Inconsistent(f"missing assignment for PodSet {ps['name']!r}")
        yield ps, psa, int(psa.get("count", ps.get("count", 1)))


def _needed(wl: dict, managed: list[str]) -> bool:
    """``reqIsNeeded``: a covered pod set has admitted pods (looked at in order, up to the first that has)."""
    return any(n > 0 for _ps, _psa, n in _each_required(wl, managed))


def _required(wl: dict, managed: list[str]) -> list[tuple[dict, dict, int]]:
    """(pod set, assignment, count) of pod sets the request must cover (``mergePodSets`` without merging)."""
    return [(ps, psa, n) for ps, psa, n in _each_required(wl, managed) if n > 0]


def _requests_of(containers: list[dict] | None) -> list[dict]:
    return [
        {r: parse_quantity(q) for r, q in ((c.get("resources") or {}).get("requests") or {}).items()}
        for c in containers or []
    ]


def _can_merge(a: dict, b: dict, policy: str) -> bool:
    """``canMergePodSets``: ``IdenticalPodTemplates`` (the templates equal) or
    ``IdenticalWorkloadSchedulingRequirements`` (containers' and init containers' requests, pod resources,
    node selector, tolerations, affinity and resource claims equal)."""
    ta, tb = a.get("template") or {}, b.get("template") or {}
    if policy == "IdenticalPodTemplates":
        return ta == tb
    if policy != "IdenticalWorkloadSchedulingRequirements":
        return False
    sa, sb = ta.get("spec") or {}, tb.get("spec") or {}
    if any(
        _requests_of(sa.get(k)) != _requests_of(sb.get(k)) or len(sa.get(k) or []) != len(sb.get(k) or [])
        for k in ("containers", "initContainers")
    ):
        return False
    return all(
        sa.get(k) == sb.get(k)
        for k in ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")
    )


def _merged(required: list[tuple[dict, dict, int]], prc: dict) -> list[tuple[dict, dict, int]]:
    """``mergePodSets``: with a ``podSetMergePolicy``, a pod set that can merge into an earlier one adds its count
    there (the first one's template and name stay)."""
    policy: str = (prc.get("spec") or {}).get("podSetMergePolicy") or ""
    out: list[list] = []
    for ps, psa, n in required:
        for m in out if policy else ():
            if _can_merge(m[0], ps, policy):
                m[2] += n
                break
        else:
            out.append([ps, psa, n])
    return [(ps, psa, n) for ps, psa, n in out]


class ProvisioningController(Controller):
    """Creates ProvisioningRequests for workloads and mirrors their outcome into the check state."""

    name = "kueue-provisioning"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        self._check_controllers: dict[str, str] = {}  # AdmissionCheck -> controllerName, as last seen
        self._config_specs: dict[str, tuple] = {}  # ProvisioningRequestConfig -> what its requests copy
        # kueue#14916: how the Kueue release names its requests (v0.19.2 loops on names it must shorten)
        self._stable = cache.profile.stable_request_names

    def watches(self) -> list[Watch]:
        def owner(ev) -> list:
            md = ev.object["metadata"]
            return [
                (md.get("namespace", ""), r["name"])
                for r in md.get("ownerReferences") or []
                if r.get("kind") == "Workload" and r.get("controller")  # Owns: the controller reference only
            ]

        # SetupWithManager: Watches(AdmissionCheck, acHandler), Watches(ProvisioningRequestConfig, prcHandler)
        return [
            Watch("Workload"),
            Watch("ProvisioningRequest", owner),
            Watch("AdmissionCheck", self._check_changed),
            Watch("ProvisioningRequestConfig", self._config_changed),
        ]

    def _workloads_using(self, checks: set[str]) -> list[tuple[str, str]]:
        """``WorkloadsWithAdmissionCheckKey``: workloads with one of ``checks`` in ``status.admissionChecks``."""
        out = []
        for wl in self.cache.workloads.values():
            if any(c.get("name") in checks for c in (wl.get("status") or {}).get("admissionChecks") or []):
                out.append((wl["metadata"]["namespace"], wl["metadata"]["name"]))
        return sorted(out)

    def _check_changed(self, ev) -> list:
        """``acHandler``: a provisioning AdmissionCheck created, changed (also to or from another controller) or
        deleted re-syncs the workloads using it."""
        name = ev.object["metadata"]["name"]
        new = (ev.object.get("spec") or {}).get("controllerName", "")
        old = self._check_controllers.pop(name, new)
        if ev.type != "DELETED":
            self._check_controllers[name] = new
        if PROVISIONING_CONTROLLER not in (old, new):
            return []
        return self._workloads_using({name})

    def _config_changed(self, ev) -> list:
        """``prcHandler``: a ProvisioningRequestConfig created or deleted, or changed in its class, parameters or
        managedResources, re-syncs the workloads using an AdmissionCheck that names it."""
        name = ev.object["metadata"]["name"]
        spec = ev.object.get("spec") or {}
        now = (
            spec.get("provisioningClassName"),
            tuple(sorted((spec.get("parameters") or {}).items())),
            tuple(sorted(spec.get("managedResources") or [])),
        )
        old = self._config_specs.pop(name, None)
        if ev.type != "DELETED":
            self._config_specs[name] = now
        if ev.type == "MODIFIED" and old == now:
            return []
        users = set()
        for ac in self.cache.checks.values():  # AdmissionCheckUsingConfigKey
            ref = (ac.get("spec") or {}).get("parameters") or {}
            if (
                ref.get("apiGroup") == "kueue.x-k8s.io"
                and ref.get("kind") == "ProvisioningRequestConfig"
                and ref.get("name") == name
            ):
                users.add(ac["metadata"]["name"])
        return self._workloads_using(users) if users else []

    def _checks(self, wl: dict) -> dict[str, dict | None]:
        """Provisioning checks of the workload → their config (None when missing)."""
        out = {}
        for c in (wl.get("status") or {}).get("admissionChecks") or []:
            ac = self.cache.checks.get(c["name"]) or self.store.try_get("AdmissionCheck", c["name"])
            if ac is None or (ac.get("spec") or {}).get("controllerName") != PROVISIONING_CONTROLLER:
                continue
            ref = (ac.get("spec") or {}).get("parameters") or {}
            out[c["name"]] = (
                self.store.try_get("ProvisioningRequestConfig", ref.get("name", "")) if ref else None
            )
        return out

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        ns, name = key
        seen = self.cache.workloads.get(f"{ns}/{name}")
        if (
            seen is not None
            and not (seen.get("status") or {}).get("admissionChecks")
            and not is_evicted(seen)
            and not is_true(seen, "Finished")
        ):
            return None  # cheap exit from the cache: no check of any kind on this workload
        wl = self.store.peek("Workload", name, ns)  # read-only until the copy below
        if wl is None:
            return None
        finished, evicted = is_true(wl, "Finished"), is_evicted(wl)
        if not has_quota_reservation(wl) and not finished and not evicted:
            return None
        if not self._checks(wl) and not (finished or evicted):
            return None  # no provisioning check on this workload: nothing to create or mirror
        uid = wl["metadata"].get("uid")
        # the requests this workload owns, from the store's owner index (not a copy of every request of the
        # namespace: with a long DWS queue that grew with the queue on every reconcile)
        owned = (
            [clone(p) for p in self.store.peek_list("ProvisioningRequest", ns, owner_uid=uid)]
            if uid
            else [
                p
                for p in self.store.list("ProvisioningRequest", ns)
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
            ]
        )
        if finished or evicted:
            if finished or self.cache.config.gate("CleanupProvisioningRequestsOnEviction"):
                for p in owned:
                    self.store.delete("ProvisioningRequest", p["metadata"]["name"], ns)
            return None
        wl = clone(wl)
        configs = self._checks(wl)
        if not configs:
            for p in owned:
                self.store.delete("ProvisioningRequest", p["metadata"]["name"], ns)
            return None
        try:
            needed = {c: prc is not None and _needed(wl, _managed(prc)) for c, prc in configs.items()}
        except _Inconsistent:  # activeOrLastPRForChecks fails with errInconsistentPodSetAssignments
            return None  # nothing changes
        last: dict[str, dict] = {}
        for check, prc in configs.items():
            if prc is None or not needed[check]:
                continue
            for p in owned:
                a = attempt_of(p, name, check, self._stable)
                if a is None or not self._synced(p, prc):
                    continue
                if check not in last or (attempt_of(last[check], name, check, self._stable) or 0) < a:
                    last[check] = p
        states = self._sync_states(wl, configs, last, needed)
        keep = {p["metadata"]["name"] for p in last.values()}
        for p in owned:
            if p["metadata"]["name"] not in keep:
                self.store.delete("ProvisioningRequest", p["metadata"]["name"], ns)
        self._ensure_requests(wl, configs, last, states, needed)
        return None

    @staticmethod
    def _synced(pr: dict, prc: dict) -> bool:
        spec, cspec = pr.get("spec") or {}, prc.get("spec") or {}
        if spec.get("provisioningClassName") != cspec.get("provisioningClassName"):
            return False
        params = spec.get("parameters") or {}
        return all(params.get(k) == v for k, v in (cspec.get("parameters") or {}).items())

    def _sync_states(self, wl: dict, configs: dict, last: dict, needed: dict[str, bool]) -> dict[str, dict]:
        """``syncCheckStates``."""
        now = self.ctx.now()
        name = wl["metadata"]["name"]
        checks = wl["status"]["admissionChecks"]
        by_name = {c["name"]: c for c in checks}
        events = []
        updated = False
        for check, prc in sorted(configs.items()):
            st = dict(by_name[check])
            old_state = st.get("state")

            if prc is None:
                updated = _set(st, "state", "Pending") | _set(st, "message", INACTIVE_MSG) | updated
            elif not needed[check]:
                if _set(st, "state", "Ready"):
                    updated = True
                    st["message"] = NOT_NEEDED
                    st.pop("podSetUpdates", None)
            else:
                pr = last.get(check)
                if pr is None:
                    continue
                updated = (
                    self._apply_row(wl, st, pr, prc, attempt_of(pr, name, check, self._stable) or 1) | updated
                )
            if st.get("state") != old_state:
                st["lastTransitionTime"] = ts(now)
                msg = f"Admission check {check} updated state from {old_state} to {st['state']}"
                if st.get("message"):
                    msg += f" with message: {st['message']}"
                events.append(msg)
            by_name[check] = st
        if updated:
            wl["status"]["admissionChecks"] = [by_name[c["name"]] for c in checks]
            out = self.store.update_status(wl)
            for m in events:
                self.events.record(out, "Normal", "AdmissionCheckUpdated", m)
            wl.update(clone(out))  # the stored version is read-only
        return by_name

    def _apply_row(self, wl: dict, st: dict, pr: dict, prc: dict, attempt: int) -> bool:
        """Interpret the first row of ``CHECK_STATE_TABLE`` that matches ``pr``'s conditions; True when ``st``
        changed."""
        first: dict[str, dict] = {}
        for c in (pr.get("status") or {}).get("conditions") or []:
            first.setdefault(c.get("type", ""), c)
        true = {t: c for t, c in first.items() if c.get("status") == "True"}
        row = next(r for r in CHECK_STATE_TABLE if r.matches(true, is_admitted(wl)))
        cause_msg = (true.get(row.cause) or {}).get("message", "") if row.cause else ""
        if row.outcome is Outcome.RETRY:
            limit, base, cap = retry_strategy(prc)
            if attempt > limit:
                st["state"], st["message"] = "Rejected", cause_msg
                return True
            changed = _set(st, "message", row.prefix + cause_msg)
            if attempt > int(st.get("retryCount") or 0):
                _set(st, "state", "Retry")
                st["requeueAfterSeconds"] = int(
                    backoff_seconds(base, cap, int(st.get("retryCount") or 0) + 1)
                )
                changed = True
            return changed
        if row.outcome is Outcome.REJECT_WHILE_RUNNING:
            if is_active(wl) and not is_true(wl, "Finished"):
                return _set(st, "state", "Rejected") | _set(st, "message", cause_msg)
            return False
        if row.outcome is Outcome.READY:
            if not _set(st, "state", "Ready"):
                return False
            st["podSetUpdates"] = self._updates(wl, pr, prc)
            _set(st, "message", cause_msg)
            return True
        if row.outcome is Outcome.PENDING_WITH_MESSAGE_OF:
            c = find_condition(pr, row.message_of)
            if c is None:
                return False
            return _set(st, "message", c.get("message", "")) | _set(st, "state", "Pending")
        if row.outcome is Outcome.PENDING:
            return _set(st, "message", "") | _set(st, "state", "Pending")
        return False  # Outcome.KEEP

    @staticmethod
    def _updates(wl: dict, pr: dict, prc: dict) -> list[dict]:
        refs = {template_name(pr["metadata"]["name"], ps["name"]): ps["name"] for ps in wl["spec"]["podSets"]}
        out = []
        for ps in (pr.get("spec") or {}).get("podSets") or []:
            u = {
                "name": refs.get(ps["podTemplateRef"]["name"], ""),
                "annotations": {CONSUME: pr["metadata"]["name"], CLASS: pr["spec"]["provisioningClassName"]},
            }
            psu = (prc.get("spec") or {}).get("podSetUpdates")
            if psu:
                details = (pr.get("status") or {}).get("provisioningClassDetails") or {}
                sel = {
                    n["key"]: details[n["valueFromProvisioningClassDetail"]]
                    for n in psu.get("nodeSelector") or []
                    if n["valueFromProvisioningClassDetail"] in details
                }
                if sel:  # `nodeSelector,omitempty`: an empty map is not written
                    u["nodeSelector"] = sel
            out.append(u)
        return out

    def _ensure_requests(
        self, wl: dict, configs: dict, last: dict, states: dict, needed: dict[str, bool]
    ) -> None:
        """``syncOwnedProvisionRequest``."""
        name = wl["metadata"]["name"]
        for check, prc in sorted(configs.items()):
            if prc is None:
                continue
            st = states.get(check)
            if not needed[check] or (st is not None and st.get("state") == "Ready"):
                continue
            pr = last.get(check)
            attempt = int((st or {}).get("retryCount") or 0) + 1
            create = pr is None
            if pr is not None:
                failed = find_condition(pr, "Failed")
                expired = find_condition(pr, "BookingExpired")
                if (
                    (
                        (failed and failed.get("status") == "True")
                        or (expired and expired.get("status") == "True" and not is_admitted(wl))
                    )
                    and st is not None
                    and st.get("state") == "Pending"
                ):
                    attempt, create = (attempt_of(pr, name, check, self._stable) or 1) + 1, True
            if create:
                self._create(wl, check, prc, attempt)

    def _create(self, wl: dict, check: str, prc: dict, attempt: int) -> None:
        ns, name = wl["metadata"]["namespace"], wl["metadata"]["name"]
        try:
            required = _merged(_required(wl, _managed(prc)), prc)
        except _Inconsistent:
            return  # mergePodSets fails with errInconsistentPodSetAssignments: nothing is created
        rname = request_name(name, check, attempt, self._stable)
        owner = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "name": name,
            "uid": wl["metadata"].get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        infos = {
            i.name: i
            for i in infos_for({**wl, "status": {"admission": wl["status"]["admission"]}}, self.cache.flavors)
        }
        pod_sets: list[dict] = []
        for ps, _psa, count in required:
            tname = template_name(rname, ps["name"])
            if self.store.try_get("PodTemplate", tname, ns) is None:
                tpl = clone(ps.get("template") or {})
                info = infos.get(ps["name"])
                if info is not None:
                    info.labels.pop("kueue.x-k8s.io/podset", None)
                    merge_into_template(tpl, info)
                for c in list((tpl.get("spec") or {}).get("containers") or []) + list(
                    (tpl.get("spec") or {}).get("initContainers") or []
                ):
                    res = c.setdefault("resources", {})
                    for r, q in (res.get("limits") or {}).items():
                        res.setdefault("requests", {}).setdefault(r, q)
                try:
                    self.store.create(
                        {
                            "apiVersion": "v1",
                            "kind": "PodTemplate",
                            "metadata": {
                                "name": tname,
                                "namespace": ns,
                                "labels": {MANAGED: "true"},
                                "ownerReferences": [owner],
                            },
                            "template": tpl,
                        },
                        admission=BUILT,  # the API server defaults the pod template built from the Workload's
                    )
                except ApiError as exc:  # handleError: any refusal is reported on the check
                    self._failed(wl, check, f'Error creating PodTemplate "{tname}": {exc}')
                    return
            pod_sets.append({"podTemplateRef": {"name": tname}, "count": count})
        params = dict((prc.get("spec") or {}).get("parameters") or {})
        for k, v in (wl["metadata"].get("annotations") or {}).items():
            if k.startswith(PARAM_PREFIX):
                params[k[len(PARAM_PREFIX) :]] = v
        spec: dict = {"provisioningClassName": prc["spec"]["provisioningClassName"], "podSets": pod_sets}
        if params:
            spec["parameters"] = params
        try:
            pr = self.store.create(
                {
                    "apiVersion": "autoscaling.x-k8s.io/v1",
                    "kind": "ProvisioningRequest",
                    "metadata": {
                        "name": rname,
                        "namespace": ns,
                        "labels": {MANAGED: "true"},
                        "ownerReferences": [owner],
                    },
                    "spec": spec,
                }
            )
        except ApiError as exc:  # handleError: any refusal is reported on the check
            self._failed(wl, check, f'Error creating ProvisioningRequest "{rname}": {exc}')
            return
        self.events.record(
            wl, "Normal", "ProvisioningRequestCreated", f'Created ProvisioningRequest: "{rname}"'
        )
        # the PodTemplates now belong to the request
        pr_owner = {
            "apiVersion": "autoscaling.x-k8s.io/v1",
            "kind": "ProvisioningRequest",
            "name": rname,
            "uid": pr["metadata"].get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        for ps in pod_sets:
            pt = self.store.try_get("PodTemplate", ps["podTemplateRef"]["name"], ns)
            if pt is not None:
                pt["metadata"]["ownerReferences"] = [pr_owner]
                self.store.update(pt, admission=BUILT)

    def _failed(self, wl: dict, check: str, msg: str) -> None:
        self.events.record(wl, "Warning", "FailedCreate", msg)
        for c in wl["status"].get("admissionChecks") or []:
            if c["name"] == check and c.get("message") != msg:
                c["message"] = msg
                self.store.update_status(wl)
