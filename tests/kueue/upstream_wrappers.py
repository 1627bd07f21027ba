"""Python twins of the Kueue test wrappers the ported tables use (``pkg/util/testing/v1beta2/wrappers.go``).

The ported preemption tables read as upstream's: ``MakeWorkload("low", "").Priority(-1).Request("cpu", "2")
.ReserveQuotaAt(MakeAdmission("standalone").PodSets(...).Obj(), NOW).Obj()``. Each builder returns plain
v1beta2 dicts. Workloads with the namespace ``""`` (upstream's fake client does not mind) go to
``default``. Times are seconds since the epoch.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from flexq.api.quantity import format_quantity, parse_quantity
from flexq.api.scheme import ADMIT
from flexq.api.wellknown import JOB_UID_LABEL
from flexq.errors import Invalid

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def ts(t: float) -> str:
    """RFC 3339 seconds."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MakePodSet:
    def __init__(self, name: str, count: int) -> None:
        self.ps: dict[str, Any] = {
            "name": name,
            "count": count,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "pause", "resources": {"requests": {}}}],
                }
            },
        }

    def Request(self, res: str, q: str) -> MakePodSet:
        self.ps["template"]["spec"]["containers"][0]["resources"]["requests"][res] = q
        return self

    def Toleration(self, t: dict) -> MakePodSet:
        tol = {k[0].lower() + k[1:]: v for k, v in t.items()}
        self.ps["template"]["spec"].setdefault("tolerations", []).append(tol)
        return self

    def NodeSelector(self, kv: dict) -> MakePodSet:
        self.ps["template"]["spec"]["nodeSelector"] = dict(kv)
        return self

    def RequiredDuringSchedulingIgnoredDuringExecution(self, terms: list[dict]) -> MakePodSet:
        aff = self.ps["template"]["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        sel = aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        for t in terms:
            sel["nodeSelectorTerms"].append(
                {
                    "matchExpressions": [
                        {"key": e["Key"], "operator": e["Operator"], "values": list(e.get("Values") or [])}
                        for e in t.get("MatchExpressions") or []
                    ]
                }
            )
        return self

    def Containers(self, *containers: Any) -> MakePodSet:
        flat: list[dict] = []
        for c in containers:
            flat.extend(c if isinstance(c, list) else [c])
        self.ps["template"]["spec"]["containers"] = flat
        return self

    def PodSetGroup(self, name: str) -> MakePodSet:
        self.ps.setdefault("topologyRequest", {})["podSetGroupName"] = name
        return self

    def RequiredTopologyRequest(self, level: str) -> MakePodSet:
        self.ps.setdefault("topologyRequest", {})["required"] = level
        return self

    def Obj(self) -> dict:
        return self.ps


def SingleContainerForRequest(request: dict) -> list[dict]:
    """``utiltesting.SingleContainerForRequest``."""
    return [{"name": "c", "image": "pause", "resources": {"requests": dict(request)}}]


class MakeWorkload:
    def __init__(self, name: str, ns: str) -> None:
        self.w: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": ns or "default",
                "uid": f"uid-{name}",
                "creationTimestamp": ts(NOW),
            },
            "spec": {"podSets": [MakePodSet("main", 1).Obj()], "queueName": "lq", "active": True},
            "status": {},
        }

    def Clone(self) -> MakeWorkload:
        c = MakeWorkload.__new__(MakeWorkload)
        c.w = copy.deepcopy(self.w)
        return c

    def UID(self, uid: str) -> MakeWorkload:
        self.w["metadata"]["uid"] = uid
        return self

    def Label(self, k: str, v: str) -> MakeWorkload:
        self.w["metadata"].setdefault("labels", {})[k] = v
        return self

    def Priority(self, p: int) -> MakeWorkload:
        self.w["spec"]["priority"] = p
        return self

    def Creation(self, t: float) -> MakeWorkload:
        self.w["metadata"]["creationTimestamp"] = ts(t)
        return self

    def Request(self, res: str, q: str) -> MakeWorkload:
        MakePodSet.Request(_Wrap(self.w["spec"]["podSets"][0]), res, q)
        return self

    def Queue(self, name: str) -> MakeWorkload:
        self.w["spec"]["queueName"] = name
        return self

    def JobUID(self, uid: str) -> MakeWorkload:
        return self.Label(JOB_UID_LABEL, uid)

    def AdmittedAt(self, admitted: bool, t: float) -> MakeWorkload:
        """``AdmittedAt``: an ``Admitted`` condition True (reason Admitted) or False (NoReservation)."""
        return self.Condition(
            {
                "Type": "Admitted",
                "Status": "True" if admitted else "False",
                "Reason": "Admitted" if admitted else "NoReservation",
                "Message": "The workload is admitted" if admitted else "The workload has no reservation",
                "LastTransitionTime": t,
            }
        )

    def ResourceRequests(self, *reqs: dict) -> MakeWorkload:
        self.w["status"]["resourceRequests"] = [
            {"name": r["Name"], "resources": dict(r.get("Resources") or {})} for r in reqs
        ]
        return self

    def Annotation(self, k: str, v: str) -> MakeWorkload:
        self.w["metadata"].setdefault("annotations", {})[k] = v
        return self

    def AllowedFlavors(self, *flavors: str) -> MakeWorkload:
        """The ConcurrentAdmission allowed-flavors annotation."""
        return self.Annotation("kueue.x-k8s.io/workload-allowed-resource-flavors", ",".join(flavors))

    def Admission(self, admission: dict) -> MakeWorkload:
        self.w["status"]["admission"] = admission
        return self

    def PodSets(self, *pss: dict) -> MakeWorkload:
        self.w["spec"]["podSets"] = list(pss)
        return self

    def ReserveQuotaAt(self, admission: dict, t: float) -> MakeWorkload:
        self.w["status"]["admission"] = admission
        self.w["status"]["conditions"] = [
            {
                "type": "QuotaReserved",
                "status": "True",
                "lastTransitionTime": ts(t),
                "reason": "AdmittedByTest",
                "message": f"Admitted by ClusterQueue {admission['clusterQueue']}",
            }
        ]
        return self

    def SimpleReserveQuota(self, cq: str, flavor: str, t: float) -> MakeWorkload:
        ps = self.w["spec"]["podSets"][0]
        reqs = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
        psa = MakePodSetAssignment(ps["name"])
        for res, q in reqs.items():
            psa.Assignment(res, flavor, format_quantity(parse_quantity(q) * ps["count"]))
        psa.psa["count"] = ps["count"]
        return self.ReserveQuotaAt(MakeAdmission(cq).PodSets(psa.Obj()).Obj(), t)

    def Condition(self, c: dict) -> MakeWorkload:
        conds = self.w["status"].setdefault("conditions", [])
        conds[:] = [x for x in conds if x["type"] != c["Type"]]
        conds.append(
            {
                "type": c["Type"],
                "status": c["Status"],
                "reason": c.get("Reason", ""),
                "message": c.get("Message", ""),
                "lastTransitionTime": ts(c.get("LastTransitionTime", NOW)),
            }
        )
        return self

    def SchedulingStatsEviction(self, e: dict) -> MakeWorkload:
        stats = self.w["status"].setdefault("schedulingStats", {"evictions": []})
        stats["evictions"].append({"reason": e["Reason"], "underlyingCause": "", "count": e["Count"]})
        return self

    def Obj(self) -> dict:
        return self.w


class _Wrap:
    def __init__(self, ps: dict) -> None:
        self.ps = ps


class MakePodSetAssignment:
    def __init__(self, name: str) -> None:
        self.psa: dict[str, Any] = {"name": name, "flavors": {}, "resourceUsage": {}, "count": 1}

    def Assignment(self, res: str, flavor: str, q: str) -> MakePodSetAssignment:
        self.psa["flavors"][res] = flavor
        self.psa["resourceUsage"][res] = q
        return self

    def Count(self, n: int) -> MakePodSetAssignment:
        self.psa["count"] = n
        return self

    def Obj(self) -> dict:
        return self.psa


class MakeAdmission:
    def __init__(self, cq: str, *podsets: str) -> None:
        self.a: dict[str, Any] = {
            "clusterQueue": cq,
            "podSetAssignments": [MakePodSetAssignment(n).Obj() for n in (podsets or ("main",))],
        }

    def PodSets(self, *psas: dict) -> MakeAdmission:
        """Assignments from ``MakePodSetAssignment`` or ``kueue.PodSetAssignment`` literals (Go field names)."""
        self.a["podSetAssignments"] = [
            p
            if "name" in p
            else {
                "name": p["Name"],
                "flavors": dict(p.get("Flavors") or {}),
                "resourceUsage": dict(p.get("ResourceUsage") or {}),
                **({"count": p["Count"]} if p.get("Count") is not None else {}),
            }
            for p in psas
        ]
        return self

    def Obj(self) -> dict:
        return self.a


class MakeFlavorQuotas:
    def __init__(self, name: str) -> None:
        self.fq: dict[str, Any] = {"name": name, "resources": []}

    def Resource(self, res: str, nominal: str, borrowing: str = "", lending: str = "") -> MakeFlavorQuotas:
        r: dict[str, Any] = {"name": res, "nominalQuota": nominal}
        if borrowing:
            r["borrowingLimit"] = borrowing
        if lending:
            r["lendingLimit"] = lending
        self.fq["resources"].append(r)
        return self

    def ResourceQuotaWrapper(self, res: str) -> ResourceQuotaWrapper:
        return ResourceQuotaWrapper(self, res)

    def Obj(self) -> dict:
        return self.fq


class ResourceQuotaWrapper:
    def __init__(self, parent: MakeFlavorQuotas, res: str) -> None:
        self.parent, self.r = parent, {"name": res}

    def NominalQuota(self, q: str) -> ResourceQuotaWrapper:
        self.r["nominalQuota"] = q
        return self

    def BorrowingLimit(self, q: str) -> ResourceQuotaWrapper:
        self.r["borrowingLimit"] = q
        return self

    def LendingLimit(self, q: str) -> ResourceQuotaWrapper:
        self.r["lendingLimit"] = q
        return self

    def Append(self) -> MakeFlavorQuotas:
        self.parent.fq["resources"].append(self.r)
        return self.parent


def _group(fqs: tuple[dict, ...]) -> dict:
    covered: list[str] = []
    for f in fqs:
        for r in f["resources"]:
            if r["name"] not in covered:
                covered.append(r["name"])
    return {"coveredResources": covered, "flavors": list(fqs)}


class MakeClusterQueue:
    def __init__(self, name: str) -> None:
        self.c: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "resourceGroups": [],
                "queueingStrategy": "BestEffortFIFO",
                "namespaceSelector": {},
                "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                "preemption": {
                    "withinClusterQueue": "Never",
                    "reclaimWithinCohort": "Never",
                    "borrowWithinCohort": {"policy": "Never"},
                },
            },
            "status": {
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "reason": "Ready",
                        "message": "Can admit new workloads",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",  # metav1.Condition requires it
                    }
                ]
            },
        }

    def Cohort(self, name: str) -> MakeClusterQueue:
        self.c["spec"]["cohortName"] = name
        return self

    def ResourceGroup(self, *fqs: dict) -> MakeClusterQueue:
        self.c["spec"]["resourceGroups"].append(_group(fqs))
        return self

    def QueueingStrategy(self, strategy: str) -> MakeClusterQueue:
        self.c["spec"]["queueingStrategy"] = strategy
        return self

    def FlavorFungibility(self, f: dict) -> MakeClusterQueue:
        ff = self.c["spec"]["flavorFungibility"]
        ff["whenCanBorrow"] = f.get("WhenCanBorrow") or "MayStopSearch"
        ff["whenCanPreempt"] = f.get("WhenCanPreempt") or "TryNextFlavor"
        if f.get("Preference"):
            ff["preference"] = f["Preference"]
        return self

    def Preemption(self, p: dict) -> MakeClusterQueue:
        """``kueue.ClusterQueuePreemption``: the fields left out take the API defaults."""
        out: dict[str, Any] = {
            "withinClusterQueue": p.get("WithinClusterQueue") or "Never",
            "reclaimWithinCohort": p.get("ReclaimWithinCohort") or "Never",
            "borrowWithinCohort": {"policy": "Never"},
        }
        b = p.get("BorrowWithinCohort")
        if b:
            out["borrowWithinCohort"] = {"policy": b.get("Policy") or "Never"}
            if b.get("MaxPriorityThreshold") is not None:
                out["borrowWithinCohort"]["maxPriorityThreshold"] = b["MaxPriorityThreshold"]
        self.c["spec"]["preemption"] = out
        return self

    def Obj(self) -> dict:
        return self.c


class MakeCohort:
    def __init__(self, name: str) -> None:
        self.c: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": name},
            "spec": {"resourceGroups": []},
        }

    def Parent(self, name: str) -> MakeCohort:
        self.c["spec"]["parentName"] = name
        return self

    def ResourceGroup(self, *fqs: dict) -> MakeCohort:
        self.c["spec"]["resourceGroups"].append(_group(fqs))
        return self

    def Obj(self) -> dict:
        return self.c


class MakeResourceFlavor:
    def __init__(self, name: str) -> None:
        self.rf: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {},
        }

    def NodeLabel(self, k: str, v: str) -> MakeResourceFlavor:
        self.rf["spec"].setdefault("nodeLabels", {})[k] = v
        return self

    def Taint(self, t: dict) -> MakeResourceFlavor:
        self.rf["spec"].setdefault("nodeTaints", []).append({k[0].lower() + k[1:]: v for k, v in t.items()})
        return self

    def TopologyName(self, name: str) -> MakeResourceFlavor:
        self.rf["spec"]["topologyName"] = name
        return self

    def Obj(self) -> dict:
        return self.rf


def base_incoming() -> MakeWorkload:
    """``baseIncomingWl.Clone()``: ``in`` with UID ``wl-in`` and job UID ``job-in``."""
    return MakeWorkload("in", "").UID("wl-in").Label(JOB_UID_LABEL, "job-in")


def singlePodSetAssignment(flavors: dict) -> dict:
    return {"PodSets": [{"Name": "main", "Flavors": flavors, "Count": 1}]}


def fake_client_create(store: Any, obj: dict, **kw: Any) -> dict:
    """Create ``obj`` as upstream's unit tests do, through a fake client: admitted when admission takes it, else
    written as given (names such as "a_standard" or "ClusterQueueA", reclaimWithinCohort=Never with
    borrowWithinCohort, which no webhook sees there), with the store's ``check_writes`` off for that write."""
    try:
        return store.create(obj, admission=ADMIT, **kw)
    except Invalid:
        checked, store.check_writes = store.check_writes, False
        try:
            return store.create(obj, **kw)
        finally:
            store.check_writes = checked
