"""A point of the sweep applied to the base variant (``apply_point``: each knob turned on a copy of its objects,
cluster and settings), and what the recommended point changes, as a diff and as whole objects for ``kubectl
apply`` (``apply_yaml``)."""

from __future__ import annotations

import copy
import difflib
import json
import re
from typing import Any

import yaml

from flexq.api.kueue_convert import convert_object
from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.kueue.config import (
    CONFIG_KEY,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    KueueConfig,
    parse_duration,
    shipped_configuration,
)
from flexq.kueue.provisioning import retry_strategy
from flexq.simulate.inputs import parse_yaml_all
from flexq.simulate.study import Manifest, Study, Variant
from flexq.simulate.sweep.spec import OPT_IN_LABEL, Knob

_SEG = re.compile(r"([^.\[\]]+)|\[(\d+)\]|\[([^=\]]+)=([^\]]*)\]")


def _path(text: str) -> list[Any]:
    """``spec.resourceGroups[0].flavors[name=on-demand].nominalQuota`` -> keys, indexes and (key, value)
    selectors."""
    out: list[Any] = []
    pos = 0
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _SEG.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read the path at {text[pos:]!r}")
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(int(m.group(2)))
        else:
            out.append((m.group(3), m.group(4)))
        pos = m.end()
    return out


def _set(obj: Any, path: list[Any], value: Any, where: str) -> None:
    cur = obj
    for i, seg in enumerate(path):
        last = i == len(path) - 1
        if isinstance(seg, tuple):
            if not isinstance(cur, list):
                raise ValueError(
                    f"{where}: [{seg[0]}={seg[1]}] selects from a list, found {type(cur).__name__}"
                )
            found = next((x for x in cur if isinstance(x, dict) and str(x.get(seg[0])) == seg[1]), None)
            if found is None:
                raise ValueError(f"{where}: no item with {seg[0]}={seg[1]}")
            if last:
                raise ValueError(f"{where}: the path must end with a field, not a selector")
            cur = found
        elif isinstance(seg, int):
            if not isinstance(cur, list) or seg >= len(cur):
                raise ValueError(f"{where}: no item [{seg}]")
            if last:
                cur[seg] = value
            else:
                cur = cur[seg]
        else:
            if not isinstance(cur, dict):
                raise ValueError(f"{where}: .{seg} needs a mapping, found {type(cur).__name__}")
            if last:
                cur[seg] = value
            else:
                cur = cur.setdefault(seg, {} if not isinstance(path[i + 1], int) else [])


class _Objects:
    """A variant's manifests as objects, to change and write back."""

    def __init__(self, manifests: list[Manifest]) -> None:
        self.files = [(m, parse_yaml_all(m.text, m.source)) for m in manifests]
        self.changed: set[int] = set()

    def find(self, kind: str, name: str, namespace: str | None = None) -> tuple[int, dict[str, Any]]:
        for i, (_m, docs) in enumerate(self.files):
            for d in docs:
                md = (d or {}).get("metadata") or {}
                if (
                    isinstance(d, dict)
                    and d.get("kind") == kind
                    and md.get("name") == name
                    and (namespace is None or md.get("namespace", "default") == namespace)
                ):
                    return i, d
        raise ValueError(f"no {kind} named {name!r} in the variant's manifests")

    def each(self, kind: str) -> list[tuple[int, dict[str, Any]]]:
        return [
            (i, d)
            for i, (_m, docs) in enumerate(self.files)
            for d in docs
            if isinstance(d, dict) and d.get("kind") == kind
        ]

    def add(self, source: str, doc: dict[str, Any]) -> None:
        self.files.append((Manifest(source, ""), [doc]))
        self.changed.add(len(self.files) - 1)

    def manifests(self) -> list[Manifest]:
        out = []
        for i, (m, docs) in enumerate(self.files):
            text = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False) if i in self.changed else m.text
            out.append(Manifest(m.source, text))
        return out


def _kueue_config(objs: _Objects) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        i, cm = objs.find("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE)
        objs.changed.add(i)
    except ValueError:
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_NAME, "namespace": CONFIG_NAMESPACE},
            "data": {CONFIG_KEY: yaml.safe_dump(shipped_configuration(), sort_keys=False)},
        }
        objs.add("sweep (Kueue configuration)", cm)
    conf = yaml.safe_load(((cm.get("data") or {}).get(CONFIG_KEY)) or "") or {}
    return cm, conf


def apply_point(study: Study, base: Variant, knobs: list[Knob], point: dict[str, Any], name: str) -> Variant:
    """The variant ``name``: ``base`` with every knob of ``point`` turned (raises ValueError naming the knob)."""
    v = base
    for k in knobs:
        if k.kind == "variant":
            v = study.variant(str(point[k.label()]))
    out = Variant(
        name=name,
        cluster=copy.deepcopy(v.cluster),
        manifests=list(v.manifests),
        capacity=v.capacity,
        description=", ".join(f"{lab}={json.dumps(val)}" for lab, val in point.items()),
        settings=copy.deepcopy(v.settings),
    )
    for k in knobs:
        if k.kind == "manifests":
            by_source = {m.source: m for s in study.variants for m in s.manifests}
            missing = [f for f in point[k.label()] if f not in by_source]
            if missing:
                raise ValueError(f"knob {k.label()}: no manifest {missing[0]!r} among the study's variants")
            out.manifests = [by_source[f] for f in point[k.label()]]
    objs = _Objects(out.manifests)
    for k in knobs:
        value = point[k.label()]
        where = f"knob {k.label()}"
        try:
            _turn(k, value, out, objs)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    out.manifests = objs.manifests()
    return out


def _turn(k: Knob, value: Any, out: Variant, objs: _Objects) -> None:
    if k.kind == "poolMax":
        _pool_max(out, str(k.pool), int(value))
    elif k.kind == "cluster":
        if out.cluster is None:
            raise ValueError("the variant has no cluster")
        _set(out.cluster, _path(str(k.path)), value, str(k.path))
    elif k.kind == "nominalQuota":
        i, cq = objs.find("ClusterQueue", str(k.clusterQueue))
        path = f"spec.resourceGroups.*.flavors[name={k.flavor}].resources[name={k.resource}].nominalQuota"
        hit = False
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            for f in rg.get("flavors") or []:
                if f.get("name") == k.flavor:
                    for r in f.get("resources") or []:
                        if r.get("name") == k.resource:
                            r["nominalQuota"] = value
                            hit = True
        if not hit:
            raise ValueError(f"ClusterQueue {k.clusterQueue} has no {path}")
        objs.changed.add(i)
    elif k.kind == "retryLimit":
        i, prc = objs.find("ProvisioningRequestConfig", str(k.config))
        if int(value) == retry_strategy(prc).limit:
            return  # the base's value (or Kueue's default): no change
        prc.setdefault("spec", {}).setdefault("retryStrategy", {})["backoffLimitCount"] = int(value)
        objs.changed.add(i)
    elif k.kind == "flavorOrder":
        i, cq = objs.find("ClusterQueue", str(k.clusterQueue))
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            names = [f.get("name") for f in rg.get("flavors") or []]
            if sorted(names) == sorted(value):
                by = {f.get("name"): f for f in rg["flavors"]}
                rg["flavors"] = [by[n] for n in value]
                objs.changed.add(i)
                return
        raise ValueError(
            f"ClusterQueue {k.clusterQueue} has no resource group with exactly the flavors {value}"
        )
    elif k.kind == "podsReadyTimeout":
        if _pods_ready_timeout(objs) == parse_duration(str(value), 0.0):
            return  # the base's timeout (or Kueue's default, 30m): no change
        cm, conf = _kueue_config(objs)
        w = conf.setdefault("waitForPodsReady", {})
        if str(conf.get("apiVersion", "")).endswith("/v1beta1"):
            w["enable"] = True
        w["timeout"] = str(value)
        cm.setdefault("data", {})[CONFIG_KEY] = yaml.safe_dump(conf, sort_keys=False)
    elif k.kind == "fallback":
        if value is False:
            out.settings.pop("fallback", None)
            return
        out.settings["fallback"] = value
        for i, lq in objs.each("LocalQueue"):
            labels = lq.setdefault("metadata", {}).setdefault("labels", {})
            if labels.get(OPT_IN_LABEL) != "true":
                labels[OPT_IN_LABEL] = "true"
                objs.changed.add(i)
    elif k.kind == "setting":
        segs = _path(str(k.path))
        head = segs[0]
        if head == "fallback" and not isinstance(out.settings.get("fallback"), dict):
            out.settings["fallback"] = {}
        _set(out.settings, segs, value, str(k.path))
    elif k.kind == "object":
        obj = copy.deepcopy(value)
        md = obj["metadata"]
        try:
            i, _old = objs.find(obj["kind"], md["name"], md.get("namespace"))
        except ValueError:
            objs.add(f"{obj['kind']}/{md['name']}", obj)
            return
        docs = objs.files[i][1]
        docs[:] = [obj if d is _old else d for d in docs]
        objs.changed.add(i)
    elif k.kind == "field":
        kind, _, rest = str(k.object).partition("/")
        ns, _, name = rest.rpartition("/")
        i, obj = objs.find(kind, name, ns or None)
        _set(obj, _path(str(k.path)), value, str(k.path))
        objs.changed.add(i)


def _pods_ready_timeout(objs: _Objects) -> float | None:
    """Kueue's waitForPodsReady timeout in the variant's manifests (Kueue's default without a configuration);
    None when waitForPodsReady is off."""
    try:
        _i, cm = objs.find("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE)
    except ValueError:
        cm = None
    try:
        cfg = KueueConfig.from_configmap(cm)
    except Exception:  # a configuration Kueue cannot read: the preflight says so
        return None
    return cfg.pods_ready_timeout if cfg.wait_for_pods_ready else None


def _pool_max(v: Variant, pool: str, value: int) -> None:
    cluster = v.cluster
    if cluster is None:
        raise ValueError("the variant has no cluster")
    for p in cluster.get("nodePools") or []:
        if p.get("name") == pool:
            auto = p.setdefault("autoscaling", {})
            if value < int(auto.get("min", 0)):
                raise ValueError(f"max {value} is below the pool's min {auto.get('min')}")
            auto["max"] = value
            return
    for req in cluster.get("requests") or []:
        body = req.get("body") or {}
        cands = [body.get("nodePool")] + list((body.get("cluster") or {}).get("nodePools") or [])
        for np in cands:
            if isinstance(np, dict) and np.get("name") == pool:
                auto = np.setdefault("autoscaling", {"enabled": True})
                auto["maxNodeCount"] = value
                return
    raise ValueError(f"the cluster has no node pool {pool!r}")


# -- running and reading -----------------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """YAML as a person writes it: multi-line strings (an embedded configuration) as literal blocks."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def _dump(obj: Any) -> list[str]:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False).splitlines(keepends=True)


def _diff(base: Variant, best: Variant) -> str:
    out: list[str] = []
    a_docs = [(m.source, d) for m in base.manifests for d in parse_yaml_all(m.text, m.source)]
    b_docs = [(m.source, d) for m in best.manifests for d in parse_yaml_all(m.text, m.source)]
    a_by = {_key(d): (s, d) for s, d in a_docs}
    b_by = {_key(d): (s, d) for s, d in b_docs}
    for k in [*a_by, *(k for k in b_by if k not in a_by)]:
        src_a, da = a_by.get(k, ("", None))
        src_b, db = b_by.get(k, ("", None))
        if da == db:
            continue
        ta = _dump(da) if da is not None else []
        tb = _dump(db) if db is not None else []
        label = f"{k[0]}/{k[2]}"
        out += difflib.unified_diff(ta, tb, f"a/{src_a or src_b}: {label}", f"b/{src_b or src_a}: {label}")
    if base.cluster != best.cluster:
        ta, tb = _dump(base.cluster), _dump(best.cluster)
        out += difflib.unified_diff(ta, tb, "a/cluster", "b/cluster")
    if base.settings != best.settings:
        ta, tb = _dump({"settings": base.settings}), _dump({"settings": best.settings})
        out += difflib.unified_diff(ta, tb, "a/settings", "b/settings")
    return "".join(out)


def _key(d: Any) -> tuple[str, str, str]:
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


def apply_yaml(base: Variant, best: Variant, file: str = "best.yaml", why: list[str] | None = None) -> str:
    """``best.yaml``: every object ``best`` changes or adds, whole, as ``kubectl apply -f`` takes them (an
    object applied whole replaces the fields it sets; nothing is left half-changed); what it removes, and the
    node pools' and settings' changes, as commands in comments."""
    a_by = {
        _key(d): d for m in base.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)
    }
    b_by = {
        _key(d): d for m in best.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)
    }
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
    body = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False) if docs else ""
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


# -- what a point asks of the project's quota ----------------------------------------------------------------
def tpu_chips(cluster: dict[str, Any] | None) -> dict[str, int]:
    """The TPU chips the cluster's node pools reach at their maximum size, per GKE quota: ``"<region> <TPU
    generation> <on-demand|preemptible>"`` -> chips (a multi-host slice's VMs each hold ``chips`` of them).
    GKE's TPU quota is per region and TPU family, and flex-start and spot VMs use the preemptible quota
    (docs/simulate.md); a pool of fixed size counts its ``nodes``."""
    from flexq.api import gke_catalog as catalog

    location = str((cluster or {}).get("location") or "")
    parts = location.split("-")
    region = "-".join(parts[:2]) if len(parts) >= 3 else location  # us-east5-b -> us-east5
    out: dict[str, int] = {}
    for p in (cluster or {}).get("nodePools") or []:
        if not isinstance(p, dict) or not catalog.is_known_machine_type(str(p.get("machineType", ""))):
            continue
        mt = catalog.machine_type(str(p["machineType"]))
        if mt.tpu is None or not mt.chips:
            continue
        auto = p.get("autoscaling") or {}
        top = auto.get("max")
        nodes = int(top) if top is not None else int(p.get("nodes") or 0)
        quota = "preemptible" if p.get("flexStart") or p.get("spot") else "on-demand"
        key = f"{region} {mt.tpu.name} {quota}"
        out[key] = out.get(key, 0) + nodes * mt.chips
    return out


def chips_text(chips: dict[str, int]) -> str:
    """``us-east5 v6e: 16 on-demand + 672 preemptible chips`` (one clause per region and family)."""
    by: dict[str, list[str]] = {}
    for key, n in sorted(chips.items()):
        region, gen, quota = key.split(" ")
        by.setdefault(f"{region} {gen}", []).append(f"{n} {quota}")
    return "; ".join(f"{k}: {' + '.join(v)} chips" for k, v in by.items()) or "no TPU"


def change_size(base: Variant, point: Variant) -> float:
    """How far ``point`` is from ``base``: over every field that differs (node pools, settings, the manifests'
    objects), a number's factor of change, ``|log2(new / old)|`` (a pool's max 4 -> 16 is 2, 4 -> 168 is 5.4),
    and 1 for anything else changed, added or removed. Ties among equally good points go to the smallest."""
    a = {_key(d): d for m in base.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)}
    b = {_key(d): d for m in point.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)}
    return (
        _distance(base.cluster, point.cluster)
        + _distance(base.settings, point.settings)
        + sum(_distance(a.get(k), b.get(k)) for k in {*a, *b})
    )


def _distance(x: Any, y: Any) -> float:
    import math

    if x == y:
        return 0.0
    if isinstance(x, dict) and isinstance(y, dict):
        return sum(_distance(x.get(k), y.get(k)) for k in {*x, *y})
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return sum(_distance(p, q) for p, q in zip(x, y, strict=True))
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
    return abs(math.log2(y / x)) if numbers and x > 0 and y > 0 else 1.0
