"""``flexq simulate STUDY --sweep SWEEP.yaml``: search the knobs of a configuration for a better one.

A sweep file names the knobs to turn, the values of each, and how to search them::

    base: tutorial                # the study's variant every point starts from (default: the first)
    replicas: 2                   # seeds per point; every point runs the same seeds (common random numbers)
    search: grid                  # every combination, or {random: 24, seed: 1}: that many combinations drawn
    knobs:
    - {name: dws-max, kind: poolMax, pool: dws-pool, values: [16, 32, 64]}
    - {kind: retryLimit, config: dws-config, values: [3, 6]}              # ProvisioningRequestConfig retries
    - {kind: nominalQuota, clusterQueue: cluster-queue, flavor: on-demand, resource: google.com/tpu,
       values: [16, 32]}
    - {kind: flavorOrder, clusterQueue: cluster-queue,
       values: [[default-cpu, on-demand, dws], [default-cpu, dws, on-demand]]}
    - {kind: podsReadyTimeout, values: [10m, 30m]}                        # Kueue's waitForPodsReady.timeout
    - {kind: fallback, values: [false, true, {grace_seconds: 30}]}       # flexq's fallback (queues opted in)
    - {kind: setting, path: fallback.backoff_seconds, values: [300, 600]} # any twin setting
    - {kind: field, object: ClusterQueue/cluster-queue, path: "spec.preemption.withinClusterQueue",
       values: [Never, LowerPriority]}                                    # any field of any manifest object
    - {kind: cluster, path: "nodePools[name=on-demand-pool].autoscaling.max", values: [4, 8]}
    - {kind: variant, values: [tutorial, compute-class]}                  # start from another variant
    - {kind: manifests, values: [[queue-tutorial.yaml, train-script.yaml], [queue-cc.yaml, train-script.yaml]]}
    - {kind: object, values: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}]}
                                                                          # create or replace a whole object

Each point is a variant of the study (``p00``, ``p01``, …) run like any other, on every core or on a Ray
cluster. Out come ``sweep.csv``/``sweep.json`` (each point's knob values, jobs lost, censored mean and p95
wait, cost, goodput, and whether it is on the Pareto front of (jobs lost, censored mean wait, cost)),
``pareto.png``, ``best.diff`` (the recommended point's manifests and cluster against the base's, whole
objects), ``best.yaml`` (the objects it changes or adds, whole, for ``kubectl apply -f``; the node pools'
changes as ``gcloud`` commands in its comments) and the report. A knob set to the value the base already has
(given, or Kueue's default: ``backoffLimitCount`` 3, ``waitForPodsReady.timeout`` 30m) changes nothing; a
change to Kueue's configuration starts from the whole configuration Kueue's manifests install
(``kueue.config.shipped_configuration``) when the study does not give one. The recommended point ranks first (fewest jobs lost, then the lowest censored mean wait) among the
points that cost no more than the base (or, when the base itself lost work, no more per unit of work that ran
to its end: cost / goodput); the point that ranks first whatever its cost is named too.
``run_sweep`` is the Python API. Must not import flexq.http.
"""

from __future__ import annotations

import copy
import csv
import difflib
import io
import itertools
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flexq.errors import InputError
from flexq.kueue.config import (
    CONFIG_KEY,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    KueueConfig,
    parse_duration,
    shipped_configuration,
)
from flexq.simulate.engine import RunResult
from flexq.simulate.inputs import parse_yaml, parse_yaml_all, read_text
from flexq.simulate.results import rank_key, summarize, variant_document
from flexq.simulate.study import Manifest, Study, Variant

__all__ = ["SweepSpec", "Knob", "load_sweep", "points", "apply_point", "run_sweep", "SweepResult", "pareto"]

MAX_POINTS = 1000
OPT_IN_LABEL = "fallback.flexq.dev/enabled"
KINDS = (
    "poolMax",
    "nominalQuota",
    "retryLimit",
    "flavorOrder",
    "podsReadyTimeout",
    "fallback",
    "setting",
    "field",
    "cluster",
    "variant",
    "manifests",
    "object",
)
_REQUIRED = {
    "poolMax": ("pool",),
    "nominalQuota": ("clusterQueue", "flavor", "resource"),
    "retryLimit": ("config",),
    "flavorOrder": ("clusterQueue",),
    "setting": ("path",),
    "field": ("object", "path"),
    "cluster": ("path",),
}


class Knob(BaseModel):
    """One knob: what it turns (``kind`` and its target) and the values to try."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][\w.\-]{0,40}$")
    kind: Literal[
        "poolMax",
        "nominalQuota",
        "retryLimit",
        "flavorOrder",
        "podsReadyTimeout",
        "fallback",
        "setting",
        "field",
        "cluster",
        "variant",
        "manifests",
        "object",
    ]
    pool: str | None = Field(default=None, max_length=100)
    clusterQueue: str | None = Field(default=None, max_length=253)
    flavor: str | None = Field(default=None, max_length=253)
    resource: str | None = Field(default=None, max_length=253)
    config: str | None = Field(default=None, max_length=253)
    object: str | None = Field(default=None, max_length=400, pattern=r"^[A-Za-z]+/[^/]+(/[^/]+)?$")
    path: str | None = Field(default=None, max_length=400)
    values: list[Any] = Field(min_length=1, max_length=100)

    @field_validator("values")
    @classmethod
    def plain_value(cls, values: list[Any]) -> list[Any]:
        for v in values:
            if len(json.dumps(v, default=str)) > 10_000:
                raise ValueError("a value is at most 10,000 characters of JSON")
        return values

    def label(self) -> str:
        if self.name:
            return self.name
        target = self.pool or self.config or self.flavor or self.path or self.object or ""
        return f"{self.kind}:{target}" if target else self.kind


class Search(BaseModel):
    model_config = ConfigDict(extra="forbid")

    random: int = Field(ge=1, le=MAX_POINTS)
    seed: int = 1


class SweepSpec(BaseModel):
    """A sweep file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    base: str | None = None
    replicas: int | None = Field(default=None, ge=1, le=64)
    search: Literal["grid"] | Search = "grid"
    knobs: list[Knob] = Field(min_length=1, max_length=20)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_sweep(path: str | Path | dict[str, Any], study: Study) -> SweepSpec:
    """Read and check a sweep file (or a mapping) against ``study``: unknown fields, a knob without its target,
    a target the study does not have, a grid too large: an ``InputError`` naming the file and the field."""
    if isinstance(path, dict):
        src, doc = "sweep", path
    else:
        p = Path(path)
        src = str(p)
        doc = parse_yaml(read_text(p, src, what="sweep file", field="--sweep"), src)
    if not isinstance(doc, dict):
        raise InputError("a sweep file is a YAML mapping (base, replicas, search, knobs)", source=src)
    try:
        spec = SweepSpec.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(
            str(err.get("msg", "invalid")), source=src, field=_loc(tuple(err.get("loc", ())))
        ) from None
    names = set()
    for i, k in enumerate(spec.knobs):
        fld = f"knobs[{i}]"
        for attr in _REQUIRED.get(k.kind, ()):
            if not getattr(k, attr):
                raise InputError(f"a {k.kind} knob needs {attr!r}", source=src, field=fld)
        if k.label() in names:
            raise InputError(
                f"two knobs are named {k.label()!r}: give one a name", source=src, field=f"{fld}.name"
            )
        names.add(k.label())
        _check_values(k, src, fld, study)
    if spec.base is not None:
        try:
            study.variant(spec.base)
        except InputError as exc:
            raise InputError(exc.message, source=src, field="base") from None
    grid = 1
    for k in spec.knobs:
        grid *= len(k.values)
    if spec.search == "grid" and grid > MAX_POINTS:
        raise InputError(
            f"the grid has {grid:,} points, more than {MAX_POINTS:,}: use search: {{random: N}}",
            source=src,
            field="search",
        )
    return spec


def _check_values(k: Knob, src: str, fld: str, study: Study) -> None:
    for j, v in enumerate(k.values):
        vf = f"{fld}.values[{j}]"
        if k.kind in ("poolMax", "retryLimit") and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise InputError(f"must be a whole number >= 0, got {v!r}", source=src, field=vf)
        if k.kind == "nominalQuota" and (isinstance(v, bool) or not isinstance(v, (int, float, str))):
            raise InputError(f"must be a quantity (16, 1.5, 75Gi), got {v!r}", source=src, field=vf)
        if k.kind == "podsReadyTimeout" and not (
            isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)?(s|m|h)", v)
        ):
            raise InputError(f"must be a duration such as 10m, got {v!r}", source=src, field=vf)
        if k.kind == "fallback" and not isinstance(v, (bool, dict)):
            raise InputError(
                f"must be true, false or a mapping of fallback settings, got {v!r}", source=src, field=vf
            )
        if k.kind == "flavorOrder" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise InputError(f"must be a list of flavor names, got {v!r}", source=src, field=vf)
        if k.kind == "variant":
            try:
                study.variant(str(v))
            except InputError as exc:
                raise InputError(exc.message, source=src, field=vf) from None
        if k.kind == "manifests" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise InputError(f"must be a list of manifest files, got {v!r}", source=src, field=vf)
        if k.kind == "object" and not (
            isinstance(v, dict)
            and isinstance(v.get("kind"), str)
            and isinstance(v.get("apiVersion"), str)
            and isinstance(v.get("metadata"), dict)
            and isinstance(v["metadata"].get("name"), str)
        ):
            raise InputError(
                "must be a whole object (apiVersion, kind, metadata.name, ...)", source=src, field=vf
            )


def points(spec: SweepSpec) -> list[dict[str, Any]]:
    """The points to run: every combination of the knobs' values (``grid``), or ``random`` of them drawn
    without repetition (seeded)."""
    labels = [k.label() for k in spec.knobs]
    combos = itertools.product(*(range(len(k.values)) for k in spec.knobs))
    if spec.search == "grid":
        picked = list(combos)
    else:
        assert isinstance(spec.search, Search)
        total = 1
        for k in spec.knobs:
            total *= len(k.values)
        n = min(spec.search.random, total)
        rng = random.Random(f"flexq-sweep:{spec.search.seed}")
        picked = []
        for flat in sorted(rng.sample(range(total), n)):
            idx = []
            for k in reversed(spec.knobs):
                flat, r = divmod(flat, len(k.values))
                idx.append(r)
            picked.append(tuple(reversed(idx)))
    return [{labels[i]: spec.knobs[i].values[j] for i, j in enumerate(p)} for p in picked]


# -- applying a point ------------------------------------------------------------------------------------------
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
        now = ((prc.get("spec") or {}).get("retryStrategy") or {}).get("backoffLimitCount")
        if int(value) == (RETRY_LIMIT_DEFAULT if now is None else int(now)):
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


RETRY_LIMIT_DEFAULT = 3  # ProvisioningRequestConfig retryStrategy.backoffLimitCount (Kueue's default)


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
@dataclass
class SweepResult:
    spec: SweepSpec
    base: str
    rows: list[dict[str, Any]]  # one per point (the base first): knob values and figures
    recommended: str  # the point that ranks first at no more than the base's cost (see _within_budget)
    overall: str  # the point that ranks first whatever its cost
    diff: str  # the recommended point's manifests and cluster against the base's
    apply: str = ""  # best.yaml: the objects the recommended point changes or adds, whole (kubectl apply -f)
    variants: dict[str, Variant] = field(default_factory=dict)  # every point, the base first
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: list[RunResult] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    headline: str = ""


def _mean(doc: dict[str, Any], name: str) -> float | None:
    e = doc["aggregate"].get(name)
    return None if not e else float(e["mean"])


def pareto(rows: list[dict[str, Any]]) -> set[str]:
    """The points no other point beats on all of (jobs lost, censored mean wait, cost) and strictly on one."""
    keys = {r["point"]: (r["jobsLost"], r["waitCensoredMeanSeconds"], r["costUSD"]) for r in rows}
    front = set()
    for p, a in keys.items():
        if not any(
            all(x <= y for x, y in zip(b, a, strict=True)) and any(x < y for x, y in zip(b, a, strict=True))
            for q, b in keys.items()
            if q != p
        ):
            front.add(p)
    return front


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


def apply_yaml(base: Variant, best: Variant, file: str = "best.yaml") -> str:
    """``best.yaml``: every object ``best`` changes or adds, whole, as ``kubectl apply -f`` takes them (an
    object applied whole replaces the fields it sets; nothing is left half-changed); what it removes, and the
    node pools' and settings' changes, as commands in comments."""
    a_by = {
        _key(d): d for m in base.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)
    }
    b_by = {
        _key(d): d for m in best.manifests for d in parse_yaml_all(m.text, m.source) if isinstance(d, dict)
    }
    head = [f"# The changes, whole objects: kubectl apply -f {file}"]
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
    docs = [d for k, d in b_by.items() if a_by.get(k) != d]
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


def run_sweep(
    study: Study,
    sweep: str | Path | dict[str, Any] | SweepSpec,
    *,
    out: str | Path | None = None,
    replicas: int | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    plots: bool = True,
    progress: Any = None,
    force: bool = False,
) -> SweepResult:
    """Run the base variant and every point of the sweep on the same seeds, then the changes the base's causes
    suggest as points of their own (``flexq.simulate.whatif``); rank them all, find the Pareto front and the
    recommended point; with ``out`` (a folder of its own: ``outputs.claim``; ``force`` to share one), write
    the files."""
    from flexq.simulate.engine import preflight
    from flexq.simulate.fanout import run_all

    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep, study)
    if out is not None and plots:
        from flexq.errors import require_extra

        require_extra("plots", "the sweep's plots (or plots=False)")
    base = study.variant(spec.base) if spec.base else study.variants[0]
    pts = points(spec)
    variants = [
        Variant(
            f"base-{base.name}"[:63], base.cluster, base.manifests, base.capacity, "the base", base.settings
        )
    ]
    width = max(2, len(str(len(pts) - 1)))
    for i, pt in enumerate(pts):
        try:
            variants.append(apply_point(study, base, spec.knobs, pt, f"p{i:0{width}d}"))
        except ValueError as exc:
            raise InputError(
                str(exc), source=str(sweep) if isinstance(sweep, (str, Path)) else "sweep", field="knobs"
            ) from None
    run = copy.copy(study)
    run.variants = variants
    if replicas is not None:
        run.replicas = replicas
    elif spec.replicas is not None:
        run.replicas = spec.replicas
    if out is not None:
        from flexq.simulate.outputs import claim

        claim(Path(out), "sweep", force=force, field="out")
    preflight(run)
    runs = run_all(run, workers=workers, ray_address=ray_address, progress=progress)
    docs = {}
    for v in variants:
        sums = [summarize(r) for r in runs if r.variant == v.name]
        docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    # the base's causes, each suggested change run as a point of the sweep: the causes and the ranking read the
    # same runs (flexq.simulate.whatif)
    from flexq.simulate import whatif

    causes = docs[variants[0].name]["causes"]
    trials, extra = whatif.plan(run, variants[0], causes, "c", variants[1:])
    if extra:
        more = copy.copy(run)
        more.variants = extra
        runs += run_all(more, workers=workers, ray_address=ray_address, progress=progress)
        for v in extra:
            sums = [summarize(r) for r in runs if r.variant == v.name]
            docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    docs[variants[0].name]["causes"] = whatif.attach(
        causes, trials, docs[variants[0].name], docs, variants[0]
    )
    for v in variants[1:]:  # the points' own causes are not run: evidence only
        docs[v.name]["causes"] = [
            {**c, "change": "", "knobs": [], "untested": True} for c in docs[v.name]["causes"]
        ]
    from_cause = {t.variant.name: causes[t.cause]["code"] for t in trials if t.variant is not None}
    labels = [k.label() for k in spec.knobs]
    rows: list[dict[str, Any]] = []
    point_values: list[dict[str, Any] | None] = [None, *pts, *([None] * len(extra))]
    all_variants = [*variants, *extra]
    for v, p in zip(all_variants, point_values, strict=True):
        d = docs[v.name]
        rows.append(
            {
                "point": v.name,
                **{lab: (None if p is None else p[lab]) for lab in labels},
                "cause": from_cause.get(v.name),
                "jobsLost": _mean(d, "jobsLost") or 0.0,
                "waitCensoredMeanSeconds": _mean(d, "waitCensoredMean") or 0.0,
                "waitCensoredP95Seconds": _mean(d, "waitCensoredP95") or 0.0,
                "waitToStartMeanSeconds": _mean(d, "waitToStartMean"),
                "costUSD": _mean(d, "costUSD") or 0.0,
                "goodput": _mean(d, "goodput"),
            }
        )
    front = pareto(rows)
    for r in rows:
        r["pareto"] = r["point"] in front
    by_name = {v.name: v for v in all_variants}
    # among points that tie on (jobs lost, censored wait, cost), the one that changes least from the base first
    changes = {v.name: _diff(variants[0], v).count("\n+") for v in all_variants}
    order = sorted(rows, key=lambda r: (*rank_key(docs[r["point"]]), changes[r["point"]], r["point"]))
    affordable = [r for r in order if _within_budget(r, rows[0])]
    recommended = (affordable or order)[0]["point"]
    result = SweepResult(
        spec=spec,
        base=variants[0].name,
        rows=rows,
        recommended=recommended,
        overall=order[0]["point"],
        diff=_diff(variants[0], by_name[recommended]),
        documents=docs,
        runs=runs,
        apply=apply_yaml(variants[0], by_name[recommended]),
        variants=by_name,
    )
    result.headline = _headline(result)
    if out is not None:
        write_sweep(Path(out), result, plots=plots, variants=all_variants)
    return result


def cost_per_work(row: dict[str, Any]) -> float:
    """Cost per unit of work that ran to its end (cost / goodput): a point that loses jobs is not cheap."""
    g = row.get("goodput")
    return row["costUSD"] / g if g else (row["costUSD"] if g is None else float("inf"))


def _within_budget(row: dict[str, Any], base: dict[str, Any]) -> bool:
    """No dearer than the base: its cost at most the base's, or, when the base lost work, its cost per unit of
    finished work (cost / goodput) at most the base's (a base that loses jobs is cheap for that reason)."""
    if row["costUSD"] <= base["costUSD"] * (1 + 1e-9):
        return True
    return (base.get("goodput") or 1.0) < 1.0 and cost_per_work(row) <= cost_per_work(base) * (1 + 1e-9)


def _fmt_min(s: float) -> str:
    return f"{s / 60:,.1f} min"


def _label(res: SweepResult, row: dict[str, Any]) -> str:
    """A point in words: its knob values, or the cause whose change it runs."""
    if row.get("cause"):
        doc = res.documents[res.base]
        for c in doc.get("causes") or []:
            for o in [*(c.get("options") or []), *(c.get("tried") or [])]:
                if (o.get("tested") or {}).get("variant") == row["point"]:
                    return f"the {c['code']} cause's change: {o['change']}"
        return f"the {row['cause']} cause's change"
    return ", ".join(f"{k}={plain_value(row[k])}" for k in (kn.label() for kn in res.spec.knobs))


def _headline(res: SweepResult) -> str:
    rows = {r["point"]: r for r in res.rows}
    b, r = rows[res.base], rows[res.recommended]
    n_cause = sum(1 for x in res.rows if x.get("cause"))
    n = f"{len(res.rows) - 1 - n_cause} points" + (
        f" and {n_cause} change{'s' if n_cause != 1 else ''} its causes suggest" if n_cause else ""
    )
    text = (
        f"{n} around {res.base}: {res.recommended} ({_label(res, r)}) loses {r['jobsLost']:g} jobs "
        f"(base {b['jobsLost']:g}), waits {_fmt_min(r['waitCensoredMeanSeconds'])} on average counting jobs that "
        f"never started until the end (base {_fmt_min(b['waitCensoredMeanSeconds'])}) and costs "
        f"${r['costUSD']:,.0f} (base ${b['costUSD']:,.0f})"
    )
    if r["costUSD"] > b["costUSD"] * (1 + 1e-9):
        # dearer in dollars: recommended only by the rule for a base that loses work; said, with its figures
        text += (
            f": more dollars, for more finished work (goodput {100 * (r.get('goodput') or 0):.0f} % against "
            f"{100 * (b.get('goodput') or 0):.0f} %): ${cost_per_work(r):,.0f} per unit of finished work against "
            f"the base's ${cost_per_work(b):,.0f}. The rule: the best point that costs no more than the base, per "
            "unit of finished work when the base itself loses jobs."
        )
    else:
        text += "."
    if res.recommended == res.base:
        text = f"{n} around {res.base}: none does better at no more than its cost."
    if res.overall != res.recommended:
        o = rows[res.overall]
        text += (
            f" Whatever the cost, {res.overall} ranks first: {o['jobsLost']:g} jobs lost, "
            f"{_fmt_min(o['waitCensoredMeanSeconds'])}, ${o['costUSD']:,.0f}."
        )
    return text


def plain_value(v: Any) -> str:
    """A knob's value as a CSV cell or in words: text as is, true/false, numbers, JSON for lists and maps."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    return json.dumps(v, sort_keys=True)


SWEEP_COLUMNS = (
    "point",
    "pareto",
    "cause",
    "jobsLost",
    "waitCensoredMeanSeconds",
    "waitCensoredP95Seconds",
    "waitToStartMeanSeconds",
    "costUSD",
    "goodput",
)


def write_sweep(out: Path, res: SweepResult, *, plots: bool, variants: list[Variant]) -> None:
    from flexq.simulate.outputs import output_dir, write_file
    from flexq.simulate.results import write_csv

    output_dir(out)
    labels = [k.label() for k in res.spec.knobs]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*SWEEP_COLUMNS[:2], *labels, *SWEEP_COLUMNS[2:]])
    for r in res.rows:
        cells = [r["point"], "true" if r["pareto"] else "false"]
        cells += [plain_value(r[lab]) for lab in labels]
        for c in SWEEP_COLUMNS[2:]:
            v = r[c]
            cells.append("" if v is None else f"{v:.6f}" if isinstance(v, float) else str(v))
        w.writerow(cells)
    write_file(out / "sweep.csv", buf.getvalue())
    doc = {
        "apiVersion": "sim.flexq.dev/v1alpha1",
        "kind": "SweepSummary",
        "headline": res.headline,
        "rule": RULE,
        "base": res.base,
        "recommended": res.recommended,
        "bestWhateverTheCost": res.overall,
        "knobs": [k.model_dump(exclude_none=True) for k in res.spec.knobs],
        "points": res.rows,
        "baseCauses": res.documents[res.base].get("causes", []),
        "recommendedCauses": res.documents[res.recommended].get("causes", []),
    }
    write_file(out / "sweep.json", json.dumps(doc, indent=2, allow_nan=False) + "\n")
    write_file(out / "best.diff", res.diff or "(the base itself: no change)\n")
    write_file(out / "best.yaml", res.apply)
    write_csv(out / "jobs.csv", res.runs)
    res.files += [
        out / "sweep.csv",
        out / "sweep.json",
        out / "best.diff",
        out / "best.yaml",
        out / "jobs.csv",
    ]
    if plots:
        from flexq.simulate.report import write_html, write_plots

        png = _pareto_plot(out, res)
        shown = [res.base, res.recommended] + ([res.overall] if res.overall != res.recommended else [])
        shown = list(dict.fromkeys(shown))
        images = [png, *write_plots(out, [r for r in res.runs if r.variant in shown], shown)]
        res.files += images
        res.files.append(
            write_html(
                out,
                f"sweep around {res.base}",
                [res.documents[n] for n in shown],
                images,
                None,
                extra_html=_sweep_html(res, labels),
                headline=res.headline,
            )
        )
    from flexq.simulate.outputs import record

    record(out, "sweep", res.files)


RULE = (
    "the recommended point ranks first (fewest jobs lost, then the shortest censored mean wait) among the points "
    "that cost no more than the base, or, when the base itself loses jobs, no more per unit of finished work "
    "(cost / goodput)"
)


def _pareto_plot(out: Path, res: SweepResult) -> Path:
    from flexq.simulate.report import plt_module, save_figure

    plt = plt_module()
    fig, ax = plt.subplots(figsize=(8, 5))
    lost = sorted({r["jobsLost"] for r in res.rows})
    cmap = plt.get_cmap("viridis_r", max(2, len(lost)))
    for i, n in enumerate(lost):
        pts = [r for r in res.rows if r["jobsLost"] == n]
        ax.scatter(
            [r["waitCensoredMeanSeconds"] / 60 for r in pts],
            [r["costUSD"] for r in pts],
            color=cmap(i),
            label=f"{n:g} jobs lost",
            s=30,
            alpha=0.8,
        )
    front = sorted(
        (r for r in res.rows if r["pareto"]), key=lambda r: (r["jobsLost"], r["waitCensoredMeanSeconds"])
    )
    for n in lost:
        f = [r for r in front if r["jobsLost"] == n]
        if len(f) > 1:
            ax.plot(
                [r["waitCensoredMeanSeconds"] / 60 for r in f],
                [r["costUSD"] for r in f],
                color="#888",
                lw=0.8,
            )
    for name, marker, text in ((res.base, "s", "base"), (res.recommended, "*", "recommended")):
        r = next(x for x in res.rows if x["point"] == name)
        ax.scatter(
            [r["waitCensoredMeanSeconds"] / 60],
            [r["costUSD"]],
            marker=marker,
            s=160,
            facecolors="none",
            edgecolors="red",
        )
        ax.annotate(
            f"{text} ({name})",
            (r["waitCensoredMeanSeconds"] / 60, r["costUSD"]),
            textcoords="offset points",
            xytext=(8, 6),
            fontsize="small",
        )
    ax.set_xlabel("mean wait to start, censored (minutes; a job that never started waits until the end)")
    ax.set_ylabel("cost (USD)")
    ax.set_title("Sweep: every point, by jobs lost (Pareto front joined)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    path = out / "pareto.png"
    save_figure(fig, path)
    return path


def _sweep_html(res: SweepResult, labels: list[str]) -> str:
    import html

    esc = html.escape
    head = [
        "point",
        "Pareto",
        *labels,
        "a cause's change",
        "jobs lost",
        "censored mean wait (min)",
        "censored p95 (min)",
        "cost (USD)",
    ]
    rows = sorted(
        res.rows, key=lambda r: (not r["pareto"], r["jobsLost"], r["waitCensoredMeanSeconds"], r["costUSD"])
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{esc(c)}</td>"
            for c in [
                r["point"]
                + (
                    " (recommended)"
                    if r["point"] == res.recommended
                    else " (base)"
                    if r["point"] == res.base
                    else ""
                ),
                "yes" if r["pareto"] else "",
                *(plain_value(r[lab]) for lab in labels),
                r.get("cause") or "",
                f"{r['jobsLost']:g}",
                f"{r['waitCensoredMeanSeconds'] / 60:,.1f}",
                f"{r['waitCensoredP95Seconds'] / 60:,.1f}",
                f"{r['costUSD']:,.2f}",
            ]
        )
        + "</tr>"
        for r in rows
    )
    return (
        f"<h2 id='sweep'>Sweep</h2><p>Every point on the same seeds; {esc(RULE)}.</p>"
        "<table class='sweep'><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + f"</tr>{body}</table>"
        f"<h3>The recommended point against the base (best.diff)</h3><pre id='best-diff'>{esc(res.diff or '(no change)')}</pre>"
        f"<h3>To apply it (best.yaml)</h3><pre id='best-yaml'>{esc(res.apply)}</pre>"
    )
