"""What a change does to a variant, as a reader takes it: ``diff`` (its manifests, cluster and settings against
the base's, whole objects), ``apply_yaml`` (the objects it changes or adds, whole, for ``kubectl apply -f``; the
node pools' changes as ``gcloud`` commands in comments) and ``change_size`` (how far it is from the base). Must not
import flexq.http."""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

import yaml

from flexq.api.kueue_convert import convert_object
from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.simulate.change.apply import Dumper, dump_yaml
from flexq.simulate.inputs import parse_yaml_all
from flexq.simulate.study import Variant

__all__ = ["diff", "apply_yaml", "change_size", "object_key"]


def diff(base: Variant, best: Variant) -> str:
    out: list[str] = []
    a_docs = [(m.source, d) for m in base.manifests for d in parse_yaml_all(m.text, m.source)]
    b_docs = [(m.source, d) for m in best.manifests for d in parse_yaml_all(m.text, m.source)]
    a_by = {object_key(d): (s, d) for s, d in a_docs}
    b_by = {object_key(d): (s, d) for s, d in b_docs}
    for k in [*a_by, *(k for k in b_by if k not in a_by)]:
        src_a, da = a_by.get(k, ("", None))
        src_b, db = b_by.get(k, ("", None))
        if da == db:
            continue
        ta = dump_yaml(da) if da is not None else []
        tb = dump_yaml(db) if db is not None else []
        label = f"{k[0]}/{k[2]}"
        out += difflib.unified_diff(ta, tb, f"a/{src_a or src_b}: {label}", f"b/{src_b or src_a}: {label}")
    if base.cluster != best.cluster:
        ta, tb = dump_yaml(base.cluster), dump_yaml(best.cluster)
        out += difflib.unified_diff(ta, tb, "a/cluster", "b/cluster")
    if base.settings != best.settings:
        ta, tb = dump_yaml({"settings": base.settings}), dump_yaml({"settings": best.settings})
        out += difflib.unified_diff(ta, tb, "a/settings", "b/settings")
    return "".join(out)


def object_key(d: Any) -> tuple[str, str, str]:
    md = ((d or {}).get("metadata") or {}) if isinstance(d, dict) else {}
    ns = md.get("namespace") or ("default" if _namespaced(d) else "")
    return (str((d or {}).get("kind", "")), str(ns), str(md.get("name", "")))


_CLUSTER_SCOPED = {
    "ResourceFlavor",
    "ClusterQueue",
    "AdmissionCheck",
    "ProvisioningRequestConfig",
    "WorkloadPriorityClass",
    "PriorityClass",
    "Cohort",
    "Namespace",
    "ComputeClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CapacityProfile",
}


def _namespaced(d: Any) -> bool:
    return isinstance(d, dict) and d.get("kind") not in _CLUSTER_SCOPED


def _served(doc: dict[str, Any], variant: Variant) -> dict[str, Any]:
    """``doc`` as the variant's cluster serves it: a Kueue v1beta1 object is written as v1beta2 for a Kueue
    release that no longer serves v1beta1 (0.20: ``kubectl apply`` of the v1beta1 form would be refused), by the
    conversion ``flexq convert`` and the API server make."""
    if doc.get("apiVersion") != "kueue.x-k8s.io/v1beta1":
        return doc
    if resolve_kueue(variant.kueue or None).serves_v1beta1:
        return doc
    converted, _notes = convert_object(doc, source=variant.name)
    return converted


def objects_of(v: Variant) -> dict[tuple[str, str, str], dict[str, Any]]:
    """A variant's manifests as objects by (kind, namespace, name)."""
    return {
        object_key(d): d for m in v.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)
    }


def apply_yaml(base: Variant, best: Variant, file: str = "best.yaml", why: list[str] | None = None) -> str:
    """``best.yaml``: every object ``best`` changes or adds, whole, as ``kubectl apply -f`` takes them (an
    object applied whole replaces the fields it sets; nothing is left half-changed); what it removes, and the
    node pools' and settings' changes, as commands in comments."""
    a_by = objects_of(base)
    b_by = objects_of(best)
    head = [f"# The changes, whole objects: kubectl apply -f {file}", *(why or [])]
    for k in a_by:
        if k not in b_by:
            head.append(f"# kubectl delete {k[0]} {k[2]}" + (f" -n {k[1]}" if k[1] else ""))
    head += _pool_commands(base.cluster, best.cluster)
    if base.settings != best.settings:
        head.append(
            "# flexq's fallback: "
            + (
                f"run it with these settings: {json.dumps(best.settings.get('fallback'))} (flexq fallback, or "
                "flexq fallback manifests | kubectl apply -f -)"
                if best.settings.get("fallback")
                else "turned off"
            )
        )
    docs = [_served(d, best) for k, d in b_by.items() if a_by.get(k) != d]
    body = yaml.dump_all(docs, Dumper=Dumper, sort_keys=False) if docs else ""
    return "\n".join(head) + "\n" + (("---\n" + body) if body else "# (no Kubernetes object changes)\n")


def _pools(cluster: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {p.get("name", ""): p for p in (cluster or {}).get("nodePools") or [] if isinstance(p, dict)}


def _pool_commands(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """The node pools' changes as the gcloud commands that make them on GKE."""
    if a == b:
        return []
    out = []
    name, loc = (b or {}).get("name", "CLUSTER"), (b or {}).get("location", "LOCATION")
    pa, pb = _pools(a), _pools(b)
    rest = dict(a or {}), dict(b or {})
    rest[0].pop("nodePools", None)
    rest[1].pop("nodePools", None)
    for pool, p in pb.items():
        old = pa.get(pool)
        if old == p:
            continue
        auto, old_auto = p.get("autoscaling") or {}, (old or {}).get("autoscaling") or {}
        if old is not None and {**old, "autoscaling": auto} == p and auto != old_auto:
            out.append(
                f"# gcloud container node-pools update {pool} --cluster {name} --location {loc} "
                f"--enable-autoscaling --min-nodes {auto.get('min', 0)} --max-nodes {auto.get('max', 0)}"
            )
        else:
            out.append(f"# node pool {pool}: see best.diff (a/cluster, b/cluster)")
    if rest[0] != rest[1] or set(pa) - set(pb):
        out.append("# the cluster itself differs: see best.diff (a/cluster, b/cluster)")
    return out


def change_size(base: Variant, point: Variant) -> float:
    """How far ``point`` is from ``base``: over every field that differs (node pools, settings, the manifests'
    objects), a number's factor of change, ``|log2(new / old)|`` (a pool's max 4 -> 16 is 2, 4 -> 168 is 5.4),
    and 1 for anything else changed, added or removed. Ties among equally good points go to the smallest."""
    a = objects_of(base)
    b = objects_of(point)
    return (
        _distance(base.cluster, point.cluster)
        + _distance(base.settings, point.settings)
        + sum(_distance(a.get(k), b.get(k)) for k in {*a, *b})
    )


def _distance(x: Any, y: Any) -> float:
    if x == y:
        return 0.0
    if isinstance(x, dict) and isinstance(y, dict):
        return sum(_distance(x.get(k), y.get(k)) for k in {*x, *y})
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return sum(_distance(p, q) for p, q in zip(x, y, strict=True))
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
    return abs(math.log2(y / x)) if numbers and x > 0 and y > 0 else 1.0
