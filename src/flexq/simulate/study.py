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
      settings: {fallback: true}   # twin settings, passed to Twin(...); see study_doc.SETTINGS_KEYS
    - name: kueue-0.20
      kueue: 0.20.7              # the same cluster after `helm upgrade` to Kueue 0.20.7

A variant's (or the top level's) ``settings`` are keyword settings of ``Twin(clock="virtual", ...)``. Known:
``fallback`` (flexq's stock-out-aware fallback, ``flexq.fallback``): ``true``, ``false``, or a mapping of
``FallbackConfig`` fields (``{grace_seconds: 30, backoff_seconds: 600}``); it acts only on LocalQueues labelled
``fallback.flexq.dev/enabled: "true"`` (unless ``all_queues: true``); ``kueue_cycle_seconds`` (how long one Kueue
scheduling cycle takes: free by default, ``2.4`` for kueue#14477's production cluster; a deep queue drains one
head per ClusterQueue per cycle). Any other key is refused, naming it.

``kueue`` (top level or per variant) is the Kueue release the cluster runs (``flexq.api.kueue_versions``): a
variant on another release answers "what changes if we upgrade". Manifests are the cluster's objects as an
upgrade keeps them: a kueue.x-k8s.io/v1beta1 object on a release that no longer serves v1beta1 (0.20) is held as
its v1beta2 form, the conversion ``flexq convert`` makes (the run says so: ``RunResult.kueue``).

A Kueue perf-harness ``generator.yaml`` may also be given on its own (``load_study("generator.yaml")``).
Every error names the file and the field. Must not import flexq.http.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from flexq.api.capacity_profile import CapacityProfile
from flexq.api.decode import dump_yaml_all
from flexq.api.gke_models import RESERVATION_KEY
from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.errors import InputError, Invalid
from flexq.fallback.model import FallbackConfig
from flexq.simulate.generator import generate
from flexq.simulate.inputs import (
    MAX_REPLICAS,
    number,
    parse_yaml,
    parse_yaml_all,
    read_text,
    ref_path,
    whole,
)
from flexq.simulate.jobs import JobSpec, seconds
from flexq.simulate.kueue_generator import is_kueue_generator, kueue_generator
from flexq.simulate.objects import substitute
from flexq.simulate.profiles import NAMED_PROFILES, named_profile
from flexq.simulate.schema import (
    checked,
    input_error,
)
from flexq.simulate.study_doc import ADDONS, Cluster, FallbackFields, Settings, StudyDoc
from flexq.simulate.trace import read_trace

__all__ = ["Study", "Variant", "Manifest", "load_study", "cluster_requests"]


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
    trace: list[JobSpec] | None = None  # a fixed trace (same for every seed)
    generator: dict[str, Any] | None = None  # a generator spec (drawn per seed)
    generator_base: str = "."
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)  # ${NAME} values for the manifests and templates

    def jobs(self, seed: int) -> list[JobSpec]:
        if self.trace is not None:
            jobs = self.trace
        else:
            assert self.generator is not None
            jobs = generate(self.generator, seed, self.source, Path(self.generator_base))
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


# -- the fields that name other files: read, then checked by their models ----------------------------------------
def _substituted(text: str, source: str, env: dict[str, str]) -> str:
    """A manifest's text with the study's ``env`` substituted into its values (not into the YAML itself)."""
    if not env or "$" not in text:
        return text
    docs = [substitute(d, env, source) for d in parse_yaml_all(text, source)]
    return dump_yaml_all(docs)


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
    except ValidationError as exc:
        raise input_error(exc, src, field=fld) from None
    return value


def _settings(value: Any, src: str, fld: str) -> dict[str, Any]:
    if value is None:
        return {}
    parsed = checked(Settings, value, src, field=fld)
    out = dict(value)
    if parsed.kueue_cycle_seconds is not None:
        out["kueue_cycle_seconds"] = float(parsed.kueue_cycle_seconds)
    fb = out.get("fallback")
    if isinstance(fb, dict):
        checked(FallbackFields, fb, src, field=f"{fld}.fallback")
        try:
            FallbackConfig(**fb)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), source=src, field=f"{fld}.fallback") from None
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


def _cluster(value: Any, base: Path, src: str, fld: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        path = ref_path(base, value, src, fld)
        value = _read_yaml(path, src, fld, "cluster file")
        src, fld = str(path), "cluster"
    checked(Cluster, value, src, field=fld)
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
        if p.get("reservation"):  # as --reservation-affinity=specific --reservation=NAME
            body["config"]["reservationAffinity"] = {
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "key": RESERVATION_KEY,
                "values": [str(p["reservation"])],
            }
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
    if is_kueue_generator(doc):
        doc = {"name": p.parent.name or p.stem, "generator": p.name}
    given = {"seed": seed, "replicas": replicas, "scale": scale}  # the command line's, checked as its own
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if not (isinstance(k, str) and given.get(k) is not None)}
    spec = checked(StudyDoc, doc, src)
    study = Study(name=spec.name or p.parent.name or "simulation", source=src, description=spec.description)
    study.seed, study.replicas = spec.seed, spec.replicas
    given_over(study, seed=seed, replicas=replicas, flag="--")
    study.keep_finished = spec.keepFinished
    study.until = spec.until
    scale_field = "--scale" if scale is not None else "scale"
    scale = number(scale, src, "--scale", 1e-9, 1e9) if scale is not None else spec.scale
    study.env = spec.env
    base_manifests = _manifests(spec.manifests, base, src, "manifests", study.env)
    if "trace" in spec.model_fields_set:
        _no_scale(scale, scale_field, src)
        study.trace = read_trace(ref_path(base, spec.trace, src, "trace"), source=src)
    else:
        gen = spec.generator
        gsrc = src
        if isinstance(gen, str):
            gpath = ref_path(base, gen, src, "generator")
            gsrc = str(gpath)
            gen = _read_yaml(gpath, src, "generator", "generator file")
        if is_kueue_generator(gen):
            objs, jobs = kueue_generator(gen, gsrc, scale)
            base_manifests = [
                Manifest(f"{gsrc} (generated)", dump_yaml_all(objs)),
                *base_manifests,
            ]
            study.trace = jobs
        elif isinstance(gen, dict):
            _no_scale(scale, scale_field, src)
            study.generator = gen
            study.generator_base = str(base)
            study.source = gsrc
            generate(gen, study.seed, gsrc, base)  # validate now
            study.source = src
        else:
            raise InputError("a generator is an object or a file", source=src, field="generator")
    base_cluster = _cluster(spec.cluster, base, src, "cluster")
    base_capacity = _capacity(spec.capacity, base, src, "capacity")
    base_settings = _settings(spec.settings, src, "settings")
    base_kueue = _kueue(spec.kueue, src, "kueue")
    for i, v in enumerate(spec.variants):
        fld, over = f"variants[{i}]", v.model_fields_set
        study.variants.append(
            Variant(
                name=v.name,
                cluster=_cluster(v.cluster, base, src, f"{fld}.cluster")
                if "cluster" in over
                else base_cluster,
                manifests=(
                    _manifests(v.manifests, base, src, f"{fld}.manifests", study.env)
                    if "manifests" in over
                    else base_manifests
                ),
                capacity=_capacity(v.capacity, base, src, f"{fld}.capacity")
                if "capacity" in over
                else base_capacity,
                description=v.description,
                settings=_settings(v.settings, src, f"{fld}.settings")
                if "settings" in over
                else dict(base_settings),
                kueue=_kueue(v.kueue, src, f"{fld}.kueue") if "kueue" in over else base_kueue,
            )
        )
    given_over(study, variants=variants)
    return study


SEED_RANGE = (-(2**63), 2**63 - 1 - MAX_REPLICAS)  # a replica's seed is the study's plus its index


def given_over(
    study: Study,
    *,
    seed: int | None = None,
    replicas: int | None = None,
    variants: list[str] | None = None,
    flag: str = "",
) -> None:
    """The seed, replicas and variants given beside a study (the command line's ``--seed``, ``simulate(seed=...)``)
    over the study file's own, each checked as its field (``flag``: ``--`` on the command line): the one door
    for both."""
    if seed is not None:
        study.seed = whole(seed, study.source, f"{flag}seed", *SEED_RANGE)
    if replicas is not None:
        study.replicas = whole(replicas, study.source, f"{flag}replicas", 1, MAX_REPLICAS)
    if variants:
        study.variants = [study.variant(n) for n in variants]


def submit_window(value: Any, fld: str = "until") -> float:
    """``--until`` / ``simulate(until=...)``: a positive duration (``12h``, ``2d``, seconds); only the jobs
    submitted before it are simulated (they still run to the end)."""
    until = seconds(value, "", None, fld)
    if until <= 0:
        raise InputError(
            f"must be a positive duration, not {value!r}: it keeps the jobs submitted before it", field=fld
        )
    return until
