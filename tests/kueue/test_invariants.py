"""Property-based invariants of Kueue's admission (hypothesis): quota is never exceeded by an admission,
and no workload is ever admitted twice, across random streams of workloads, finishes, deletions and
quota changes. Independent arithmetic (plain sums over Workload objects), not the snapshot code."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexq.semantics.conditions import find_condition
from flexq.testing.minimal_kueue import MinimalKueue

CQS = ["a", "b", "solo"]
SETUP = """
{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: f1}}
---
{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: f2}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  cohortName: team
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f1, resources: [{name: cpu, nominalQuota: 6, borrowingLimit: 4}]},
                                                       {name: f2, resources: [{name: cpu, nominalQuota: 2}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: b}
spec:
  cohortName: team
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f1, resources: [{name: cpu, nominalQuota: 8, lendingLimit: 3}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  namespaceSelector: {}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f1, resources: [{name: cpu, nominalQuota: 5}]}]}]
"""

ops = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(CQS), st.integers(1, 9), st.integers(0, 3)),
        st.tuples(st.just("finish"), st.integers(0, 40)),
        st.tuples(st.just("delete"), st.integers(0, 40)),
        st.tuples(st.just("quota"), st.sampled_from(CQS), st.integers(0, 12)),
        st.tuples(st.just("advance"), st.integers(1, 5)),
    ),
    min_size=5,
    max_size=40,
)


def _reserved(k: MinimalKueue) -> list[dict]:
    return [
        w
        for w in k.list("Workload")
        if (find_condition(w, "QuotaReserved") or {}).get("status") == "True"
        and (find_condition(w, "Finished") or {}).get("status") != "True"
    ]


def _usage(k: MinimalKueue) -> dict[tuple[str, str], int]:
    """milli-cpu per (cq, flavor) from the admissions written on Workloads."""
    out: dict[tuple[str, str], int] = {}
    for w in _reserved(k):
        adm = w["status"]["admission"]
        for psa in adm["podSetAssignments"]:
            q = psa["resourceUsage"]["cpu"]
            milli = int(q[:-1]) if q.endswith("m") else int(q) * 1000
            key = (adm["clusterQueue"], psa["flavors"]["cpu"])
            out[key] = out.get(key, 0) + milli
    return out


def _limits(k: MinimalKueue) -> dict:
    """Per (cq, flavor): (nominal, borrowingLimit, lendingLimit) in milli-cpu, and the cohort of each CQ."""
    lim, cohort = {}, {}
    for cq in k.list("ClusterQueue"):
        name = cq["metadata"]["name"]
        cohort[name] = cq["spec"].get("cohortName", "")
        for fq in cq["spec"]["resourceGroups"][0]["flavors"]:
            r = fq["resources"][0]
            conv = lambda v: None if v is None else int(float(str(v))) * 1000  # noqa: E731
            lim[(name, fq["name"])] = (
                conv(r["nominalQuota"]),
                conv(r.get("borrowingLimit")),
                conv(r.get("lendingLimit")),
            )
    return {"lim": lim, "cohort": cohort}


def _violations(k: MinimalKueue) -> set[tuple]:
    """Every quota rule an admission must respect, as (rule, key, usage, limit) when broken."""
    use, info = _usage(k), _limits(k)
    lim, cohort = info["lim"], info["cohort"]
    bad = set()
    for (cq, flv), (nom, bl, _ll) in lim.items():
        u = use.get((cq, flv), 0)
        cap = nom + bl if bl is not None and cohort[cq] else (nom if not cohort[cq] else None)
        if cap is not None and u > cap:
            bad.add(("cq", cq, flv, u))
    for c in {v for v in cohort.values() if v}:
        for flv in ("f1", "f2"):
            members = [cq for cq in cohort if cohort[cq] == c and (cq, flv) in lim]
            total = sum(use.get((cq, flv), 0) for cq in members)
            quota = sum(lim[(cq, flv)][0] for cq in members)
            if total > quota:
                bad.add(("cohort", c, flv, total))
            for cq in members:  # what others may take from a lender is capped by its lendingLimit
                ll = lim[(cq, flv)][2]
                if ll is None:
                    continue
                others = sum(use.get((o, flv), 0) for o in members if o != cq)
                others_quota = sum(lim[(o, flv)][0] for o in members if o != cq)
                if others > others_quota + ll:
                    bad.add(("lending", cq, flv, others))
    return bad


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_quota_never_exceeded_and_no_double_admission(stream):
    k = MinimalKueue()
    k.apply(SETUP)
    for cq in CQS:
        k.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{cq}", "namespace": "default"},
                "spec": {"clusterQueue": cq},
            }
        )
    k.settle()
    created: list[str] = []
    for op in stream:
        before = _violations(k)
        before_use = _usage(k)
        if op[0] == "create":
            name = f"w{len(created)}"
            created.append(name)
            k.apply(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {
                        "queueName": f"lq-{op[1]}",
                        "priority": op[3],
                        "podSets": [
                            {
                                "name": "main",
                                "count": 1,
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {"name": "c", "resources": {"requests": {"cpu": str(op[2])}}}
                                        ]
                                    }
                                },
                            }
                        ],
                    },
                }
            )
        elif op[0] in ("finish", "delete") and created:
            name = created[op[1] % len(created)]
            w = k.store.try_get("Workload", name, "default")
            if w is not None and op[0] == "delete":
                k.store.delete("Workload", name, "default")
            elif w is not None and not find_condition(w, "Finished"):
                w.setdefault("status", {}).setdefault("conditions", []).append(
                    {
                        "type": "Finished",
                        "status": "True",
                        "reason": "Succeeded",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                )
                k.store.update_status(w)
        elif op[0] == "quota":
            cq = k.get("ClusterQueue", op[1])
            cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = op[2]
            if op[1] == "b" and op[2] < 3:
                cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = op[2]
            k.store.update(cq)
        k.settle()
        if op[0] == "advance":
            k.advance(op[1])
        after, after_use = _violations(k), _usage(k)
        # a rule may only be broken by shrinking quota (Kueue never evicts for that); an admission
        # must never break one: any broken rule after the step was broken before or nothing grew.
        # (A rule already broken may stay broken while usage drops: only its usage figure changes.)
        was = {v[:3]: v[3] for v in before}
        grew = any(after_use.get(key, 0) > before_use.get(key, 0) for key in after_use)
        for v in after:
            if v[:3] in was:
                assert v[3] <= was[v[:3]], (op, v, "usage grew past a broken rule")
            else:
                assert op[0] == "quota" and not grew, (op, v)
        # no workload is admitted twice: one admission per workload, counted once by its ClusterQueue
        reserved = _reserved(k)
        assert len({w["metadata"]["name"] for w in reserved}) == len(reserved)
        assert len(k.cache.reserving) == len(reserved), (
            sorted(k.cache.reserving),
            [w["metadata"]["name"] for w in reserved],
        )
        for cq in CQS:
            mine = [w for w in reserved if w["status"]["admission"]["clusterQueue"] == cq]
            assert sum(1 for i in k.cache.reserving.values() if i.cluster_queue == cq) == len(mine)
        # the status controllers' indexes of the reserving workloads hold exactly them
        by_cq: dict = {}
        by_lq: dict = {}
        for key, i in k.cache.reserving.items():
            by_cq.setdefault(i.cluster_queue, {})[key] = i
            by_lq.setdefault((i.namespace, i.obj["spec"].get("queueName", "")), {})[key] = i
        assert k.cache.reserving_by_cq == by_cq and k.cache.reserving_by_lq == by_lq
    k.close()
