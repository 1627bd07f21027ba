"""What Kueue's validating webhooks and its ``oldSelf`` CEL rules refuse, on v1beta2 (storage) dicts.

Owns one ``validate_<kind>(new, old)`` per kind, returning every problem as a ``Cause`` with the field
path Kueue's webhooks use (``pkg/webhooks/*.go``): quota rules of resource groups (names match
``coveredResources``, a flavor or resource in one group only, non-negative quotas, limits need a cohort,
``lendingLimit <= nominalQuota``, totals), ``onFlavors`` naming unknown flavors, taints, pod sets, and
immutability (LocalQueue ``clusterQueue``, AdmissionCheck ``controllerName``, ...). Runs after schema
validation and conversion, as the real webhooks do. Also the jobs' defaulting that reads other objects
(``default_priority_class``: ``WorkloadPriorityClassDefaulting``). No behaviour. Must not import outside ``flexq.api``
and ``flexq.errors``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic_core import PydanticCustomError

from flexq.api.base import check_label_key, check_label_value
from flexq.api.quantity import parse_quantity
from flexq.api.registry import Admission, ObjectReader
from flexq.api.wellknown import (
    KUEUE_CONFIG_KEY,
    KUEUE_CONFIG_NAME,
    KUEUE_CONFIG_NAMESPACE,
    PRIORITY_CLASS_LABEL,
)
from flexq.errors import Cause

NEGATIVE = "must be greater than or equal to 0"
IMMUTABLE = "field is immutable"


def _v(value: Any) -> str:
    return (
        json.dumps(value, separators=(",", ":"), sort_keys=True)
        if not isinstance(value, str)
        else f'"{value}"'
    )


def invalid(path: str, value: Any, detail: str) -> Cause:
    """``field.Invalid``."""
    return Cause(path, "FieldValueInvalid", f"Invalid value: {_v(value)}: {detail}")


def duplicate(path: str, value: Any, detail: str = "") -> Cause:
    """``field.Duplicate``."""
    return Cause(
        path, "FieldValueDuplicate", f"Duplicate value: {_v(value)}" + (f": {detail}" if detail else "")
    )


def not_supported(path: str, value: Any, allowed: list[str]) -> Cause:
    """``field.NotSupported``."""
    return Cause(
        path,
        "FieldValueNotSupported",
        f"Unsupported value: {_v(value)}: supported values: " + ", ".join(f'"{a}"' for a in allowed),
    )


def _label_problems(check: Any, value: str) -> str | None:
    try:
        check(value)
    except PydanticCustomError as exc:
        return exc.message()
    return None


def _quota_reserved(obj: dict | None) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conds)


# -- resource groups (ClusterQueue and Cohort) ----------------------------------------------------


def _validate_quota(
    rq: dict, path: str, has_parent: bool, parent_word: str, nominal_ge_lending: bool
) -> list[Cause]:
    errs: list[Cause] = []
    nominal = rq.get("nominalQuota", "0")
    if parse_quantity(nominal) < 0:
        errs.append(invalid(f"{path}.nominalQuota", nominal, NEGATIVE))
    for key in ("borrowingLimit", "lendingLimit"):
        limit = rq.get(key)
        if limit is None:
            continue
        if key == "borrowingLimit" and not has_parent:
            errs.append(invalid(f"{path}.{key}", limit, f"must be nil when {parent_word} is empty"))
        if parse_quantity(limit) < 0:
            errs.append(invalid(f"{path}.{key}", limit, NEGATIVE))
        if key == "lendingLimit":
            if not has_parent:
                errs.append(invalid(f"{path}.{key}", limit, f"must be nil when {parent_word} is empty"))
            if nominal_ge_lending and parse_quantity(limit) > parse_quantity(nominal):
                errs.append(invalid(f"{path}.{key}", limit, "must be less than or equal to the nominalQuota"))
    return errs


def validate_resource_groups(groups: list[dict], base: str, has_parent: bool, is_cohort: bool) -> list[Cause]:
    """``validateResourceGroups`` + the totals checks of ``validateClusterQueueSpec``."""
    errs: list[Cause] = []
    seen_res: set[str] = set()
    seen_flavors: set[str] = set()
    parent_word = "parent" if is_cohort else "cohort"
    for i, rg in enumerate(groups):
        covered = rg.get("coveredResources") or []
        for j, name in enumerate(covered):
            path = f"{base}[{i}].coveredResources[{j}]"
            problem = _label_problems(check_label_key, name)
            if problem:
                errs.append(invalid(path, name, problem))
            if name in seen_res:
                errs.append(duplicate(path, name))
            seen_res.add(name)
        for j, fq in enumerate(rg.get("flavors") or []):
            path = f"{base}[{i}].flavors[{j}]"
            for k, rq in enumerate((fq.get("resources") or [])[: len(covered)]):
                rpath = f"{path}.resources[{k}]"
                if rq.get("name") != covered[k]:
                    errs.append(
                        invalid(
                            f"{rpath}.name", rq.get("name", ""), "must match the name in coveredResources"
                        )
                    )
                errs += _validate_quota(rq, rpath, has_parent, parent_word, not is_cohort)
            if fq.get("name") in seen_flavors:
                errs.append(duplicate(f"{path}.name", fq.get("name")))
            seen_flavors.add(fq.get("name", ""))
    if is_cohort:
        return errs
    flavors = sum(len(rg.get("flavors") or []) for rg in groups)
    if flavors > 256:
        errs.append(
            invalid(
                base,
                flavors,
                f"total number of flavors across all resourceGroups must be ≤ 256, got {flavors}",
            )
        )
    resources = sum(len(rg.get("coveredResources") or []) for rg in groups)
    if resources > 256:
        errs.append(
            invalid(
                base,
                resources,
                f"total number of covered resources across all resourceGroups must be ≤ 256, got {resources}",
            )
        )
    for i, rg in enumerate(groups):
        combos = sum(len(f.get("resources") or []) for f in rg.get("flavors") or [])
        if combos > 512:
            errs.append(
                invalid(
                    f"{base}[{i}]",
                    combos,
                    f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {combos}",
                )
            )
    return errs


def _validate_fair_sharing(fs: dict | None, path: str) -> list[Cause]:
    weight = (fs or {}).get("weight")
    if weight is None:
        return []
    w = parse_quantity(weight)
    if w < 0:
        return [invalid(path, weight, NEGATIVE)]
    if 0 < w <= parse_quantity("1n"):
        return [invalid(path, weight, "When not 0, weight must be > 10e-9")]
    return []


def all_flavors(groups: list[dict]) -> list[str]:
    """Every flavor named in the resource groups, in order."""
    return [f.get("name", "") for rg in groups for f in rg.get("flavors") or []]


# -- per kind -------------------------------------------------------------------------------------


def validate_cluster_queue(new: dict, old: dict | None) -> list[Cause]:
    """``ValidateClusterQueue`` / ``ValidateClusterQueueUpdate``."""
    spec = new.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    errs = validate_resource_groups(groups, "spec.resourceGroups", bool(spec.get("cohortName")), False)
    errs += _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    flavors = all_flavors(groups)
    old_checks: dict[str, list[str]] = {}
    if old is not None:
        old_spec = old.get("spec") or {}
        if sorted(all_flavors(old_spec.get("resourceGroups") or [])) == sorted(flavors):
            for c in (old_spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
                old_checks[c.get("name")] = sorted(c.get("onFlavors") or [])
        if spec.get("concurrentAdmissionPolicy") != old_spec.get("concurrentAdmissionPolicy"):
            errs.append(
                Cause(
                    "spec.concurrentAdmissionPolicy",
                    "FieldValueInvalid",
                    f"Invalid value: {go_policy(spec.get('concurrentAdmissionPolicy'))}: {IMMUTABLE}",
                )
            )
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    for i, check in enumerate(checks):
        on = check.get("onFlavors") or []
        if old_checks.get(check.get("name")) == sorted(on):
            continue  # legacy objects keep their onFlavors (RejectUpdatesToCQWithInvalidOnFlavors off)
        for j, flavor in enumerate(on):
            if flavor not in flavors:
                errs.append(
                    not_supported(
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]", flavor, flavors
                    )
                )
    return errs


def go_policy(policy: dict | None) -> str:
    """A ConcurrentAdmissionPolicy as ``field.Invalid`` prints a struct value (``%#v``), ``null`` when unset."""
    if policy is None:
        return "null"
    mig = policy.get("migration") or {}
    cons = mig.get("constraints")
    # a pointer field prints as its address under %#v; the twin has none, so a fixed one stands in
    c = "(*v1beta2.ConcurrentAdmissionConstraints)(" + ("nil" if cons is None else "0xc000a1c000") + ")"
    return (
        f"v1beta2.ConcurrentAdmissionPolicy{{Migration:v1beta2.ConcurrentAdmissionMigration{{"
        f"Mode:{json.dumps(mig.get('mode', ''))}, Constraints:{c}}}}}"
    )


def validate_concurrent_admission_policy(cq: dict, max_flavors: int = 16) -> list[Cause]:
    """``validateConcurrentAdmissionPolicy`` (``pkg/webhooks/clusterqueue_webhook.go``), run only while the
    ``ConcurrentAdmission`` feature gate is on: alpha supports exactly one resource group of at most
    ``max_flavors`` flavors (16 in v0.19.2, 32 from 0.20: kueue#15949), ``constraints`` only with
    ``TryPreferredFlavors``, a ``lastAcceptableFlavorName`` of the queue, and no ``StrictFIFO``."""
    spec = cq.get("spec") or {}
    policy = spec.get("concurrentAdmissionPolicy")
    if policy is None:
        return []
    errs: list[Cause] = []
    groups = spec.get("resourceGroups") or []
    if len(groups) != 1:
        errs.append(
            invalid(
                "spec.resourceGroups",
                len(groups),
                "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    if len(groups) == 1 and len(groups[0].get("flavors") or []) > max_flavors:
        errs.append(
            invalid(
                "spec.resourceGroups[0].flavors",
                len(groups[0]["flavors"]),
                f"cannot have more than {max_flavors} resource flavors in the ResourceGroup when "
                "ConcurrentAdmissionPolicy is defined",
            )
        )
    mig = policy.get("migration") or {}
    cons = mig.get("constraints")
    if cons is not None:
        mode = mig.get("mode") or ""
        if mode and mode != "TryPreferredFlavors":
            errs.append(
                Cause(
                    "spec.concurrentAdmissionPolicy.migration.constraints",
                    "FieldValueForbidden",
                    f'Forbidden: may only be set when migration.mode is "TryPreferredFlavors" (got "{mode}")',
                )
            )
        elif cons.get("lastAcceptableFlavorName") is not None:
            last = cons["lastAcceptableFlavorName"]
            flavors = all_flavors(groups)
            if last not in flavors:
                errs.append(
                    invalid(
                        "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName",
                        last,
                        f"must be one of the flavors defined in the ClusterQueue: "
                        f"[{' '.join(dict.fromkeys(flavors))}]",
                    )
                )
    if spec.get("queueingStrategy") == "StrictFIFO":
        errs.append(
            invalid(
                "spec.queueingStrategy",
                "StrictFIFO",
                "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined",
            )
        )
    return errs


def validate_cohort(new: dict, old: dict | None) -> list[Cause]:
    """``validateCohort``: quotas owned by a cohort; limits need a parent; lending may exceed nominal."""
    spec = new.get("spec") or {}
    errs = _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    return errs + validate_resource_groups(
        spec.get("resourceGroups") or [], "spec.resourceGroups", bool(spec.get("parentName")), True
    )


def validate_resource_flavor(new: dict, old: dict | None) -> list[Cause]:
    """``ValidateResourceFlavor`` (taint keys, values, uniqueness) and the ``topologyName`` rule."""
    spec = new.get("spec") or {}
    errs: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("nodeTaints") or []):
        path = f"spec.nodeTaints[{i}]"
        problem = _label_problems(check_label_key, taint.get("key", ""))
        if problem:
            errs.append(invalid(f"{path}.key", taint.get("key", ""), problem))
        problem = _label_problems(check_label_value, taint.get("value") or "")
        if problem:
            errs.append(invalid(f"{path}.value", taint.get("value"), problem))
        pair = (taint.get("effect", ""), taint.get("key", ""))
        if pair in seen:
            errs.append(duplicate(path, taint, "taints must be unique by key and effect pair"))
            continue
        seen.add(pair)
    old_topo = ((old or {}).get("spec") or {}).get("topologyName")
    if old is not None and old_topo and spec.get("topologyName") != old_topo:
        errs.append(invalid("spec", "object", "topologyName is immutable when topologyName is set"))
    return errs


def validate_local_queue(new: dict, old: dict | None) -> list[Cause]:
    """``spec.clusterQueue`` is immutable (CEL ``self == oldSelf``)."""
    if old is None:
        return []
    cq, old_cq = (new.get("spec") or {}).get("clusterQueue"), (old.get("spec") or {}).get("clusterQueue")
    if cq != old_cq:
        return [invalid("spec.clusterQueue", cq if cq is not None else "", IMMUTABLE)]
    return []


def validate_admission_check(new: dict, old: dict | None) -> list[Cause]:
    """``spec.controllerName`` is immutable."""
    if old is None:
        return []
    name, old_name = (
        (new.get("spec") or {}).get("controllerName"),
        (old.get("spec") or {}).get("controllerName"),
    )
    return [invalid("spec.controllerName", name, IMMUTABLE)] if name != old_name else []


def _validate_resource_list(resources: dict | None, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for name, qty in (resources or {}).items():
        if name == "pods":
            errs.append(invalid(f"{path}[{name}]", "pods", "the key is reserved for internal kueue use"))
        if parse_quantity(qty) < 0:
            errs.append(invalid(f"{path}[{name}]", qty, NEGATIVE))
    return errs


def _validate_pod_set(ps: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    spec = (ps.get("template") or {}).get("spec") or {}
    for field in ("initContainers", "containers"):
        for ci, c in enumerate(spec.get(field) or []):
            res = c.get("resources") or {}
            for kind in ("requests", "limits"):
                errs += _validate_resource_list(
                    res.get(kind), f"{path}.template.spec.{field}[{ci}].resources.{kind}"
                )
    return errs


def _pod_sets_changed(new: list[dict], old: list[dict]) -> bool:
    if len(new) != len(old):
        return True
    for n, o in zip(new, old, strict=True):
        if n.get("count", 1) < o.get("count", 1):  # elastic scale-down is allowed
            n = {**n, "count": o.get("count", 1)}
        if n != o:
            return True
    return False


def validate_workload(new: dict, old: dict | None) -> list[Cause]:
    """``ValidateWorkload`` / ``ValidateWorkloadUpdate`` (the parts that do not need feature gates off)."""
    spec = new.get("spec") or {}
    pod_sets = spec.get("podSets") or []
    errs: list[Cause] = []
    for i, ps in enumerate(pod_sets):
        errs += _validate_pod_set(ps, f"spec.podSets[{i}]")
    variable = sum(1 for ps in pod_sets if ps.get("minCount") is not None)
    if variable > 1:
        errs.append(invalid("spec.podSets", variable, "at most one podSet can use minCount"))
    elastic = (new.get("metadata") or {}).get("annotations", {}).get("kueue.x-k8s.io/elastic-job") == "true"
    if variable and elastic:
        errs.append(
            invalid("spec.podSets", variable, "partial admission and elastic job cannot be used together")
        )
    names = [ps.get("name", "main") for ps in pod_sets]
    for i, check in enumerate((new.get("status") or {}).get("admissionChecks") or []):
        for j, psu in enumerate(check.get("podSetUpdates") or []):
            if psu.get("name") not in names:
                errs.append(
                    not_supported(
                        f"status.admissionChecks[{i}].podSetUpdates[{j}].name", psu.get("name"), sorted(names)
                    )
                )
    if old is not None and _quota_reserved(old):
        if _pod_sets_changed(pod_sets, (old.get("spec") or {}).get("podSets") or []):
            errs.append(invalid("spec.podSets", "[...]", IMMUTABLE))
        if _quota_reserved(new) and spec.get("queueName") != (old.get("spec") or {}).get("queueName"):
            errs.append(invalid("spec", "object", "queueName is immutable while workload quota reserved"))
    return errs


# -- mutating: the jobs' defaulting webhooks -----------------------------------------------------------------

DEFAULT_PRIORITY_CLASS = "default"  # controllerconstants.DefaultWorkloadPriorityClassName
PRIORITY_DEFAULTING_GATE = "WorkloadPriorityClassDefaulting"
# the (group, kind) of the job integrations the twin runs: their webhooks default the priority class, and a job
# whose controller is one of them is defaulted through that controller instead
JOB_KINDS = frozenset({("batch", "Job"), ("ray.io", "RayJob"), ("ray.io", "RayCluster")})


def _gate_configured(reader: ObjectReader, name: str) -> bool | None:
    """The ``featureGates`` entry ``name`` of Kueue's installed Configuration (None: not set there)."""
    cm = reader.peek("ConfigMap", KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE)
    text = ((cm or {}).get("data") or {}).get(KUEUE_CONFIG_KEY)
    if not text or name not in text:
        return None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    gates = doc.get("featureGates") if isinstance(doc, dict) else None
    value = gates.get(name) if isinstance(gates, dict) else None
    return value if isinstance(value, bool) else None


def default_priority_class(gate_default: bool) -> Admission:
    """``ApplyDefaultWorkloadPriorityClass`` (kueue#13719), the job webhooks' defaulting on create, for a release
    whose ``WorkloadPriorityClassDefaulting`` gate defaults to ``gate_default`` (Kueue's Configuration may set
    it): a job without ``kueue.x-k8s.io/priority-class``, not owned by another job Kueue manages, gets the
    WorkloadPriorityClass named ``default`` when that class exists."""

    def admit(op: str, obj: dict, old: dict | None, reader: ObjectReader, name: str) -> None:
        if op != "CREATE":
            return
        md = obj.get("metadata")
        if not isinstance(md, dict):
            return
        labels = md.get("labels") or {}
        if labels.get(PRIORITY_CLASS_LABEL):
            return
        for ref in md.get("ownerReferences") or []:
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            if ref.get("controller") and (group, ref.get("kind")) in JOB_KINDS:
                return
        if reader.peek("WorkloadPriorityClass", DEFAULT_PRIORITY_CLASS) is None:
            return
        configured = _gate_configured(reader, PRIORITY_DEFAULTING_GATE)
        if not (gate_default if configured is None else configured):
            return
        md["labels"] = {**labels, PRIORITY_CLASS_LABEL: DEFAULT_PRIORITY_CLASS}

    return admit
