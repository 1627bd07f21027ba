"""A simulation study: what to simulate (cluster, manifests, capacity, traffic) and which variants to compare.

Owns ``Study``/``Variant`` and ``load_study``, which reads a simulation file (YAML)::

    name: tutorial-week
    seed: 1                      # replica r runs with seed + r (the capacity profile's draws too)
    replicas: 1
    until: 9d                    # simulated time after the start at most (default: last submission + 7d)
    cluster:                     # the GKE cluster, short form (or `requests:` GKE REST bodies as gcloud sends)
      project: flexq-sim
      location: us-east5-b
      name: tpu-cluster
      nodePools:
      - {name: default-pool, machineType: n2-standard-16, nodes: 3, autoscaling: {min: 3, max: 20}}
      - {name: dws-pool, machineType: ct6e-standard-4t, tpuTopology: 4x4, autoscaling: {min: 0, max: 16},
         flexStart: true, queuedProvisioning: true}
    env: {ONDEMAND_NODEPOOL: on-demand-pool}   # ${NAME} placeholders of the manifests and templates, as envsubst
    manifests: [queues.yaml, configmap.yaml]   # applied with Twin.apply (kubectl apply) in this order
    capacity: stockout-week      # a named profile (flexq.simulate.profiles), a file, or an inline profile
    trace: trace.csv             # or `generator: {...}`, or `generator: generator.yaml` (Kueue's format)
    kueue: 0.19.2                # the Kueue release (0.19.2 or 0.20.7; default: the twin's, 0.20.7)
    variants:                    # each overrides top-level fields; none = one variant named "default"
    - name: tutorial
    - name: dws-only
      manifests: [queues-dws-only.yaml, configmap.yaml]
    - name: flexq-fallback
      settings: {fallback: true}   # twin settings, passed to Twin(...); see SETTINGS_KEYS
    - name: kueue-0.20
      kueue: 0.20.7              # the same cluster after `helm upgrade` to Kueue 0.20.7

A variant's (or the top level's) ``settings`` are keyword settings of ``Twin(clock="virtual", ...)``. Known:
``fallback`` (flexq's stock-out-aware fallback, ``flexq.fallback``): ``true``, ``false``, or a mapping of
``FallbackConfig`` fields (``{grace_seconds: 30, backoff_seconds: 600}``); it acts only on LocalQueues labelled
``fallback.flexq.dev/enabled: "true"`` (unless ``all_queues: true``). Any other key is refused, naming it.

``kueue`` (top level or per variant) is the Kueue release the cluster runs (``flexq.api.kueue_versions``): a
variant on another release answers "what changes if we upgrade". Manifests are the cluster's objects as an
upgrade keeps them: a kueue.x-k8s.io/v1beta1 object on a release that no longer serves v1beta1 (0.20) is held as
its v1beta2 form, the conversion ``flexq convert`` makes (the run says so: ``RunResult.kueue``).

A Kueue perf-harness ``generator.yaml`` may also be given on its own (``load_study("generator.yaml")``).
Every error names the file and the field. Must not import flexq.http.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from flexq.api.capacity_profile import CapacityProfile
from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.errors import InputError, Invalid
from flexq.fallback.policy import FallbackConfig
from flexq.simulate import traffic
from flexq.simulate.inputs import (
    MAX_NODES,
    MAX_REPLICAS,
    MAX_SECONDS,
    MAX_VARIANTS,
    boolean,
    number,
    parse_yaml,
    parse_yaml_all,
    read_text,
    ref_path,
    refuse_unknown,
    string,
    unknown_key,
    whole,
)
from flexq.simulate.profiles import NAMED_PROFILES, named_profile

__all__ = ["Study", "Variant", "Manifest", "load_study", "cluster_requests", "STUDY_KEYS", "SETTINGS_KEYS"]

STUDY_KEYS = {
    "name",
    "seed",
    "replicas",
    "until",
    "cluster",
    "manifests",
    "capacity",
    "trace",
    "generator",
    "variants",
    "keepFinished",
    "scale",
    "description",
    "settings",
    "env",
    "kueue",
}
VARIANT_KEYS = {"name", "cluster", "manifests", "capacity", "description", "settings", "kueue"}
SETTINGS_KEYS = {"fallback"}
POOL_KEYS = {
    "name",
    "machineType",
    "nodes",
    "autoscaling",
    "tpuTopology",
    "flexStart",
    "queuedProvisioning",
    "spot",
    "labels",
    "taints",
    "locations",
}


# --addons values of `gcloud container clusters create` -> the cluster's addonsConfig
ADDONS = {
    "RayOperator": "rayOperatorConfig",
    "HttpLoadBalancing": "httpLoadBalancing",
    "HorizontalPodAutoscaling": "horizontalPodAutoscaling",
    "GcsFuseCsiDriver": "gcsFuseCsiDriverConfig",
}


@dataclass(frozen=True)
class Manifest:
    source: str
    text: str


@dataclass
class Variant:
    name: str
    cluster: dict[str, Any] | None
    manifests: list[Manifest]
    capacity: dict[str, Any] | None
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # keyword settings of Twin(...)
    kueue: str = ""  # the Kueue release ("0.19.2"); "" for the twin's default


@dataclass
class Study:
    """Everything a run needs, as plain data (sent as is to worker processes and Ray tasks)."""

    name: str
    source: str
    seed: int = 1
    replicas: int = 1
    until: float | None = None
    submit_until: float | None = None  # submit only the jobs before this time
    keep_finished: bool = False
    variants: list[Variant] = field(default_factory=list)
    trace: list[traffic.JobSpec] | None = None  # a fixed trace (same for every seed)
    generator: dict[str, Any] | None = None  # a generator spec (drawn per seed)
    generator_base: str = "."
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)  # ${NAME} values for the manifests and templates

    def jobs(self, seed: int) -> list[traffic.JobSpec]:
        if self.trace is not None:
            jobs = self.trace
        else:
            assert self.generator is not None
            jobs = traffic.generate(self.generator, seed, self.source, Path(self.generator_base))
        if self.submit_until is not None:
            kept = [j for j in jobs if j.submit < self.submit_until]
            if jobs and not kept:
                first = min(j.submit for j in jobs)
                raise InputError(
                    f"no job is submitted before {self.submit_until:g} s (the first arrives at {first:g} s)",
                    source=self.source,
                    field="--until",
                )
            jobs = kept
        return jobs

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise InputError(
            f"no variant named {name!r} (have: {', '.join(v.name for v in self.variants)})",
            source=self.source,
            field="variants",
        )


def _read_yaml(path: Path, src: str, fld: str = "", what: str = "file") -> Any:
    """One YAML document of a file (bounded: ``flexq.simulate.inputs``); ``src``/``fld`` name the reference."""
    return parse_yaml(read_text(path, src, what=what, field=fld), str(path))


_VARIANT_NAME = re.compile(r"^\w[\w.\-]{0,62}$")


# ${NAME}s every job's template gets from its trace row (flexq.simulate.objects)
JOB_PLACEHOLDERS = ("NAME", "JOB_ID", "QUEUE", "NAMESPACE")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def _env(value: Any, src: str) -> dict[str, str]:
    """``env``: the values of the ``${NAME}`` placeholders in the manifests and templates (what ``envsubst``
    would take from the shell); text or numbers."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(
            "env is a mapping of NAME: value (the ${NAME} placeholders)", source=src, field="env"
        )
    if len(value) > 1000:
        raise InputError("more than 1,000 env entries", source=src, field="env")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _ENV_NAME.match(k):
            raise InputError(
                f"{str(k)[:80]!r} is not a placeholder name (letters, digits, _)", source=src, field="env"
            )
        if k in JOB_PLACEHOLDERS:
            raise InputError(
                f"${{{k}}} is set per job from the traffic ({', '.join(JOB_PLACEHOLDERS)} are)",
                source=src,
                field=f"env.{k}",
            )
        out[k] = string(v, src, f"env.{k}")
    return out


def _substituted(text: str, source: str, env: dict[str, str]) -> str:
    """A manifest's text with the study's ``env`` substituted into its values (not into the YAML itself)."""
    if not env or "$" not in text:
        return text
    from flexq.simulate.objects import substitute

    docs = [substitute(d, env, source) for d in parse_yaml_all(text, source)]
    return yaml.safe_dump_all(docs, sort_keys=False)


def _manifests(
    value: Any, base: Path, src: str, fld: str, env: dict[str, str] | None = None
) -> list[Manifest]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            path = ref_path(base, item, src, f"{fld}[{i}]")
            text = read_text(path, src, what="manifest", field=f"{fld}[{i}]")
            parse_yaml_all(text, str(path))  # well-formed and bounded before the API reads it
            out.append(Manifest(item, _substituted(text, item, env or {})))
        elif isinstance(item, dict):
            where = f"{src} ({fld}[{i}])"
            out.append(Manifest(where, _substituted(yaml.safe_dump(item, sort_keys=False), where, env or {})))
        else:
            raise InputError("a manifest is a file name or an object", source=src, field=f"{fld}[{i}]")
    return out


def _capacity(value: Any, base: Path, src: str, fld: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        named = named_profile(value)
        if named is not None:
            return named
        path = ref_path(base, value, src, fld)
        try:
            is_file = path.is_file()
        except OSError:  # a name too long for the file system
            is_file = False
        if not is_file:
            raise InputError(
                f"{value[:80]!r} is neither a named profile ({', '.join(NAMED_PROFILES)}) nor a file",
                source=src,
                field=fld,
            )
        value = _read_yaml(path, src, fld, "capacity profile")
        src, fld = str(path), "spec"
    if not isinstance(value, dict):
        raise InputError("a capacity profile is an object, a file or a name", source=src, field=fld)
    if "kind" not in value:
        value = {
            "apiVersion": "twin.flexq.dev/v1alpha1",
            "kind": "CapacityProfile",
            "metadata": {"name": "default"},
            "spec": value,
        }
    try:
        CapacityProfile.model_validate(value)
    except Exception as exc:  # pydantic ValidationError
        errs = getattr(exc, "errors", None)
        if errs:
            e = errs()[0]
            loc = ".".join(str(x) for x in e["loc"])
            raise InputError(e["msg"], source=src, field=f"{fld} ({loc})" if loc else fld) from None
        raise InputError(str(exc), source=src, field=fld) from None
    return value


def _settings(value: Any, src: str, fld: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(
            "settings is a mapping (known keys: " + ", ".join(sorted(SETTINGS_KEYS)) + ")",
            source=src,
            field=fld,
        )
    refuse_unknown(value, SETTINGS_KEYS, src, fld, what="setting")
    out = dict(value)
    if "fallback" in out:
        fb = out["fallback"]
        if isinstance(fb, dict):
            known = set(FallbackConfig.__dataclass_fields__)
            refuse_unknown(fb, known, src, f"{fld}.fallback", what="fallback field")
            for f in dataclasses.fields(FallbackConfig):
                if f.name in fb:
                    _fallback_field(fb[f.name], str(f.type), src, f"{fld}.fallback.{f.name}")
            try:
                FallbackConfig(**fb)
            except (TypeError, ValueError) as exc:
                raise InputError(str(exc), source=src, field=f"{fld}.fallback") from None
        elif not isinstance(fb, bool):
            raise InputError(
                f"fallback is true, false or a mapping of FallbackConfig fields, got {fb!r}",
                source=src,
                field=f"{fld}.fallback",
            )
    return out


def _kueue(value: Any, src: str, fld: str) -> str:
    """A Kueue release the twin models, as its version ("0.19.2"); refused naming the field otherwise."""
    if value is None:
        return ""
    try:
        return resolve_kueue(value if isinstance(value, str) else str(value), fld).version
    except Invalid as exc:
        message = exc.causes[0].message if exc.causes else str(exc)
        raise InputError(message, source=src, field=fld) from None


def _fallback_field(value: Any, typ: str, src: str, fld: str) -> None:
    """A FallbackConfig field of the type its dataclass declares (seconds: finite, not negative)."""
    if typ.endswith("| None") and value is None:
        return
    base = typ.replace("| None", "").strip()
    if base == "bool":
        boolean(value, src, fld)
    elif base in ("float", "int"):
        number(value, src, fld, 0, MAX_SECONDS)
    elif base == "str":
        string(value, src, fld, allow_number=False)
    elif base.startswith("dict[str, int]"):
        if not isinstance(value, dict):
            raise InputError("a mapping of node pool -> max nodes", source=src, field=fld)
        for k, v in value.items():
            string(k, src, fld, allow_number=False)
            whole(v, src, f"{fld}.{k}", 0, MAX_NODES)


def _cluster(value: Any, base: Path, src: str, fld: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        path = ref_path(base, value, src, fld)
        value = _read_yaml(path, src, fld, "cluster file")
        src, fld = str(path), "cluster"
    if not isinstance(value, dict):
        raise InputError(
            "the cluster is an object (project, location, name, nodePools) or `requests`",
            source=src,
            field=fld,
        )
    known = {
        "project",
        "location",
        "name",
        "version",
        "nodePools",
        "requests",
        "machineType",
        "nodes",
        "addons",
    }
    refuse_unknown(value, known, src, fld)
    addons = value.get("addons") or []
    if not isinstance(addons, list):
        raise InputError("addons is a list", source=src, field=f"{fld}.addons")
    bad = unknown_key(addons, ADDONS)
    if bad:
        raise InputError(
            f"unknown addon {bad!r} (known: {', '.join(ADDONS)})", source=src, field=f"{fld}.addons"
        )
    for key in ("project", "location", "name", "version", "machineType"):
        if value.get(key) is not None:
            string(value[key], src, f"{fld}.{key}")
    if value.get("nodes") is not None:
        whole(value["nodes"], src, f"{fld}.nodes", 0, MAX_NODES)
    pools = value.get("nodePools") or []
    if not isinstance(pools, list):
        raise InputError("nodePools is a list", source=src, field=f"{fld}.nodePools")
    for i, pool in enumerate(pools):
        pfld = f"{fld}.nodePools[{i}]"
        if not isinstance(pool, dict) or not pool.get("name") or not pool.get("machineType"):
            raise InputError("a node pool needs a name and a machineType", source=src, field=pfld)
        refuse_unknown(pool, POOL_KEYS, src, pfld)
        for key in ("name", "machineType", "tpuTopology"):
            if pool.get(key) is not None:
                string(pool[key], src, f"{pfld}.{key}", allow_number=False)
        for key in ("flexStart", "queuedProvisioning", "spot"):
            if pool.get(key) is not None:
                boolean(pool[key], src, f"{pfld}.{key}")
        if pool.get("nodes") is not None:
            whole(pool["nodes"], src, f"{pfld}.nodes", 0, MAX_NODES)
        auto = pool.get("autoscaling")
        if auto is not None:
            if not isinstance(auto, dict):
                raise InputError(
                    "autoscaling is a mapping {min, max}", source=src, field=f"{pfld}.autoscaling"
                )
            refuse_unknown(auto, {"min", "max"}, src, f"{pfld}.autoscaling")
            lo = whole(auto.get("min", 0), src, f"{pfld}.autoscaling.min", 0, MAX_NODES)
            if auto.get("max") is not None:
                hi = whole(auto["max"], src, f"{pfld}.autoscaling.max", 0, MAX_NODES)
                if hi < lo:
                    raise InputError(
                        f"max ({hi}) is below min ({lo})", source=src, field=f"{pfld}.autoscaling.max"
                    )
        if pool.get("labels") is not None and not isinstance(pool["labels"], dict):
            raise InputError("labels is a mapping", source=src, field=f"{pfld}.labels")
        for key in ("taints", "locations"):
            if pool.get(key) is not None and not isinstance(pool[key], list):
                raise InputError(f"{key} is a list", source=src, field=f"{pfld}.{key}")
    reqs = value.get("requests") or []
    if not isinstance(reqs, list):
        raise InputError("requests is a list of {method, path, body}", source=src, field=f"{fld}.requests")
    for i, req in enumerate(reqs):
        rfld = f"{fld}.requests[{i}]"
        if (
            not isinstance(req, dict)
            or not isinstance(req.get("path"), str)
            or not req["path"].startswith("/")
        ):
            raise InputError(
                "a request is {method, path, body} with an absolute path", source=src, field=rfld
            )
        refuse_unknown(req, {"method", "path", "body"}, src, rfld)
        if req.get("method", "POST") not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise InputError(
                f"method must be GET, POST, PUT, PATCH or DELETE, got {req.get('method')!r}",
                source=src,
                field=f"{rfld}.method",
            )
        if req.get("body") is not None and not isinstance(req["body"], dict):
            raise InputError("body is an object", source=src, field=f"{rfld}.body")
    return value


def cluster_requests(cluster: dict[str, Any]) -> tuple[str, str, str, list[tuple[str, str, dict]]]:
    """(project, location, cluster name, [(method, path, body)]) of the GKE REST calls that build the cluster."""
    project = cluster.get("project", "flexq-sim")
    location = cluster.get("location", "us-central1-a")
    if cluster.get("requests"):
        reqs = [(r.get("method", "POST"), r["path"], r.get("body") or {}) for r in cluster["requests"]]
        name = cluster.get("name") or next(
            (
                b["cluster"].get("name")
                for _m, p, b in reqs
                if p.endswith("/clusters") and isinstance(b.get("cluster"), dict)
            ),
            "cluster",
        )
        return project, location, name, reqs
    name = cluster.get("name", "sim")
    parent = f"projects/{project}/locations/{location}"
    pools = cluster.get("nodePools") or [
        {
            "name": "default-pool",
            "machineType": cluster.get("machineType", "e2-standard-4"),
            "nodes": cluster.get("nodes", 3),
        }
    ]

    def pool_body(p: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": p["name"],
            "initialNodeCount": int(p.get("nodes") or 0),
            "config": {"machineType": p["machineType"]},
        }
        if p.get("autoscaling"):
            a = p["autoscaling"]
            body["autoscaling"] = {
                "enabled": True,
                "minNodeCount": int(a.get("min") or 0),
                "maxNodeCount": int(a["max"] if a.get("max") is not None else body["initialNodeCount"]),
            }
        if p.get("tpuTopology"):
            body["placementPolicy"] = {"tpuTopology": p["tpuTopology"]}
        if p.get("flexStart"):
            body["config"]["flexStart"] = True
        if p.get("queuedProvisioning"):  # as --enable-queued-provisioning --reservation-affinity=none
            body["queuedProvisioning"] = {"enabled": True}
            body["config"]["reservationAffinity"] = {"consumeReservationType": "NO_RESERVATION"}
        if p.get("spot"):
            body["config"]["spot"] = True
        if p.get("labels"):
            body["config"]["labels"] = dict(p["labels"])
        if p.get("taints"):
            body["config"]["taints"] = list(p["taints"])
        if p.get("locations"):
            body["locations"] = list(p["locations"])
        return body

    first, rest = pools[0], pools[1:]
    cbody: dict[str, Any] = {"name": name, "nodePools": [pool_body(first)]}
    if cluster.get("version"):
        cbody["initialClusterVersion"] = str(cluster["version"])
    if cluster.get("addons"):
        cbody["addonsConfig"] = {
            ADDONS[a]: {"enabled": True} if ADDONS[a].endswith("Config") else {"disabled": False}
            for a in cluster["addons"]
        }
    reqs = [("POST", f"/v1/{parent}/clusters", {"parent": parent, "cluster": cbody})]
    for p in rest:
        reqs.append(
            (
                "POST",
                f"/v1/{parent}/clusters/{name}/nodePools",
                {"parent": f"{parent}/clusters/{name}", "nodePool": pool_body(p)},
            )
        )
    return project, location, name, reqs


def _no_scale(scale: float, fld: str, src: str) -> None:
    """``scale`` sizes Kueue's generator.yaml; on a trace or flexq's generator it would be ignored: refused."""
    if scale != 1.0:
        raise InputError(
            "scale applies to Kueue's generator.yaml only (a fraction of each workload set's count); this "
            "study's traffic is a trace or flexq's generator: use --until to simulate less of it",
            source=src,
            field=fld,
        )


def load_study(
    path: str | Path,
    *,
    replicas: int | None = None,
    seed: int | None = None,
    variants: list[str] | None = None,
    scale: float | None = None,
) -> Study:
    """Read a simulation file (or a directory holding ``simulation.yaml``, or a Kueue ``generator.yaml``)."""
    p = Path(path)
    with contextlib.suppress(OSError, ValueError):
        if p.is_dir():
            p = p / "simulation.yaml"
    src = str(p)
    doc = _read_yaml(p, src, what="simulation file")
    base = p.parent
    if traffic.is_kueue_generator(doc):
        doc = {"name": p.parent.name or p.stem, "generator": p.name}
    if not isinstance(doc, dict):
        raise InputError("a simulation file is a YAML mapping", source=src)
    refuse_unknown(doc, STUDY_KEYS, src, "")
    name = string(doc["name"], src, "name") if doc.get("name") not in (None, "") else ""
    study = Study(
        name=name or p.parent.name or "simulation",
        source=src,
        description=string(doc["description"], src, "description") if doc.get("description") else "",
    )
    lo, hi = -(2**63), 2**63 - 1 - MAX_REPLICAS
    study.seed = (
        whole(seed, src, "--seed", lo, hi)
        if seed is not None
        else whole(doc.get("seed", 1), src, "seed", lo, hi)
    )
    study.replicas = (
        whole(replicas, src, "--replicas", 1, MAX_REPLICAS)
        if replicas is not None
        else whole(doc.get("replicas", 1), src, "replicas", 1, MAX_REPLICAS)
    )
    study.keep_finished = boolean(doc.get("keepFinished", False), src, "keepFinished")
    if doc.get("until") is not None:
        study.until = traffic.seconds(doc["until"], src, None, "until")
    scale_field = "--scale" if scale is not None else "scale"
    scale = (
        number(scale, src, "--scale", 1e-9, 1e9)
        if scale is not None
        else number(doc.get("scale", 1.0), src, "scale", 1e-9, 1e9)
    )
    study.env = _env(doc.get("env"), src)
    base_manifests = _manifests(doc.get("manifests"), base, src, "manifests", study.env)
    if ("trace" in doc) == ("generator" in doc):
        raise InputError("give exactly one of `trace` or `generator`", source=src, field="trace")
    if "trace" in doc:
        _no_scale(scale, scale_field, src)
        study.trace = traffic.read_trace(ref_path(base, doc["trace"], src, "trace"), source=src)
    else:
        gen = doc["generator"]
        gsrc = src
        if isinstance(gen, str):
            gpath = ref_path(base, gen, src, "generator")
            gsrc = str(gpath)
            gen = _read_yaml(gpath, src, "generator", "generator file")
        if traffic.is_kueue_generator(gen):
            objs, jobs = traffic.kueue_generator(gen, gsrc, scale)
            base_manifests = [
                Manifest(f"{gsrc} (generated)", yaml.safe_dump_all(objs, sort_keys=False)),
                *base_manifests,
            ]
            study.trace = jobs
        elif isinstance(gen, dict):
            _no_scale(scale, scale_field, src)
            study.generator = gen
            study.generator_base = str(base)
            study.source = gsrc
            traffic.generate(gen, study.seed, gsrc, base)  # validate now
            study.source = src
        else:
            raise InputError("a generator is an object or a file", source=src, field="generator")
    base_cluster = _cluster(doc.get("cluster"), base, src, "cluster")
    base_capacity = _capacity(doc.get("capacity"), base, src, "capacity")
    base_settings = _settings(doc.get("settings"), src, "settings")
    base_kueue = _kueue(doc.get("kueue"), src, "kueue")
    raw_variants = doc.get("variants") or [{"name": "default"}]
    if not isinstance(raw_variants, list):
        raise InputError("variants is a list", source=src, field="variants")
    if len(raw_variants) > MAX_VARIANTS:
        raise InputError(f"more than {MAX_VARIANTS} variants", source=src, field="variants")
    seen = set()
    for i, v in enumerate(raw_variants):
        fld = f"variants[{i}]"
        if not isinstance(v, dict) or not v.get("name"):
            raise InputError("a variant needs a name", source=src, field=fld)
        refuse_unknown(v, VARIANT_KEYS, src, fld)
        if not isinstance(v["name"], str) or not _VARIANT_NAME.match(v["name"]):
            raise InputError(
                f"a variant's name is letters, digits, '.', '-' and '_' (it names the output files), got "
                f"{str(v['name'])[:80]!r}",
                source=src,
                field=f"{fld}.name",
            )
        if v["name"] in seen:
            raise InputError(f"duplicate variant name {v['name']!r}", source=src, field=f"{fld}.name")
        seen.add(v["name"])
        study.variants.append(
            Variant(
                name=str(v["name"]),
                cluster=_cluster(v["cluster"], base, src, f"{fld}.cluster")
                if "cluster" in v
                else base_cluster,
                manifests=(
                    _manifests(v["manifests"], base, src, f"{fld}.manifests", study.env)
                    if "manifests" in v
                    else base_manifests
                ),
                capacity=_capacity(v["capacity"], base, src, f"{fld}.capacity")
                if "capacity" in v
                else base_capacity,
                description=string(v["description"], src, f"{fld}.description")
                if v.get("description")
                else "",
                settings=_settings(v["settings"], src, f"{fld}.settings")
                if "settings" in v
                else dict(base_settings),
                kueue=_kueue(v["kueue"], src, f"{fld}.kueue") if "kueue" in v else base_kueue,
            )
        )
    if variants:
        study.variants = [study.variant(n) for n in variants]
    return study


def submit_window(value: Any, fld: str = "until") -> float:
    """``--until`` / ``simulate(until=...)``: a positive duration (``12h``, ``2d``, seconds); only the jobs
    submitted before it are simulated (they still run to the end)."""
    until = traffic.seconds(value, "", None, fld)
    if until <= 0:
        raise InputError(
            f"must be a positive duration, not {value!r}: it keeps the jobs submitted before it", field=fld
        )
    return until
