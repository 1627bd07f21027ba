"""A change applied to a study's variant (``apply_point``: each knob turned on a copy of the variant's objects,
cluster and settings); the one thing a sweep's points and a cause's what-ifs are both made of. Must not import
flexq.http."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import yaml

from flexq.fallback.model import OPT_IN_LABEL
from flexq.kueue.checks import CHECKS, CheckController
from flexq.kueue.config import (
    CONFIG_KEY,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    KueueConfig,
    parse_duration,
    shipped_configuration,
)
from flexq.simulate.change.knob import Knob
from flexq.simulate.inputs import parse_yaml_all
from flexq.simulate.study import Manifest, Study, Variant

__all__ = ["apply_point", "Dumper", "dump_yaml"]

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


class VariantObjects:
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
            text = yaml.dump_all(docs, Dumper=Dumper, sort_keys=False) if i in self.changed else m.text
            out.append(Manifest(m.source, text))
        return out


def _kueue_config(objs: VariantObjects) -> tuple[dict[str, Any], dict[str, Any]]:
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
    objs = VariantObjects(out.manifests)
    for k in knobs:
        value = point[k.label()]
        where = f"knob {k.label()}"
        try:
            _turn(k, value, out, objs)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    out.manifests = objs.manifests()
    return out


def _turn(k: Knob, value: Any, out: Variant, objs: VariantObjects) -> None:
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
        i, params, ctl = _retry_parameters(objs, str(k.config))
        if int(value) == ctl.retry(params).limit:
            return  # the base's value (or the controller's default): no change
        _set(params, list(ctl.retry_limit), int(value), ".".join(ctl.retry_limit))
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


def _retry_parameters(objs: VariantObjects, name: str) -> tuple[int, dict[str, Any], CheckController]:
    """The parameters object ``name`` of an admission check controller that retries (``kueue.checks``: a
    ProvisioningRequestConfig), with its controller."""
    kinds = [ctl for ctl in CHECKS.values() if ctl.retries]
    for ctl in kinds:
        try:
            i, params = objs.find(ctl.parameters, name)
        except ValueError:
            continue
        return i, params, ctl
    raise ValueError(
        f"no {' or '.join(c.parameters for c in kinds)} named {name!r} in the variant's manifests"
    )


def _pods_ready_timeout(objs: VariantObjects) -> float | None:
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


class Dumper(yaml.SafeDumper):
    """YAML as a person writes it: multi-line strings (an embedded configuration) as literal blocks."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


Dumper.add_representer(str, _str)


def dump_yaml(obj: Any) -> list[str]:
    return yaml.dump(obj, Dumper=Dumper, sort_keys=False).splitlines(keepends=True)
