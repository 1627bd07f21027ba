"""The study file's models (``simulation.yaml``: the study, its variants, the cluster and its node pools, the
twin's settings), each refusing what is wrong with the field's path, in the words of ``flexq.simulate.inputs``.
``flexq.simulate.study`` reads the files they name and builds the ``Study``. Must not import flexq.http."""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    PlainValidator,
    create_model,
    field_validator,
    model_validator,
)

from flexq.fallback.model import FallbackConfig
from flexq.simulate.inputs import (
    MAX_NODES,
    MAX_REPLICAS,
    MAX_SECONDS,
    MAX_VARIANTS,
    Refused,
    as_text,
    unknown_key,
)
from flexq.simulate.schema import (
    BOOL,
    NAME,
    SECONDS,
    TEXT,
    Doc,
    keys_of,
    listed,
    number_in,
    typed,
    whole_in,
)

# --addons values of `gcloud container clusters create` -> the cluster's addonsConfig
ADDONS = {
    "RayOperator": "rayOperatorConfig",
    "HttpLoadBalancing": "httpLoadBalancing",
    "HorizontalPodAutoscaling": "horizontalPodAutoscaling",
    "GcsFuseCsiDriver": "gcsFuseCsiDriverConfig",
}


# -- the study file's models: each refuses what is wrong with the field path, in the words of inputs.py --------
_VARIANT_NAME = re.compile(r"^\w[\w.\-]{0,62}$")

# ${NAME}s every job's template gets from its trace row (flexq.simulate.objects)
JOB_PLACEHOLDERS = ("NAME", "JOB_ID", "QUEUE", "NAMESPACE")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

Nodes = Annotated[int, whole_in(0, MAX_NODES)]
Flag = Annotated[bool, BOOL]
Name = Annotated[str, NAME]
Text = Annotated[str, TEXT]


def _env_values(value: Any) -> dict[str, str]:
    """``env``: the values of the ``${NAME}`` placeholders in the manifests and templates (what ``envsubst``
    would take from the shell); text or numbers."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused("env is a mapping of NAME: value (the ${NAME} placeholders)")
    if len(value) > 1000:
        raise Refused("more than 1,000 env entries")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _ENV_NAME.match(k):
            raise Refused(f"{str(k)[:80]!r} is not a placeholder name (letters, digits, _)")
        if k in JOB_PLACEHOLDERS:
            raise Refused(
                f"${{{k}}} is set per job from the traffic ({', '.join(JOB_PLACEHOLDERS)} are)", at=(k,)
            )
        try:
            out[k] = as_text(v)
        except Refused as exc:
            raise Refused(str(exc), at=(k,)) from None
    return out


def _name_or_blank(value: Any) -> str:
    return "" if value in (None, "") else as_text(value)


def _text_if_any(value: Any) -> str:
    return as_text(value) if value else ""


def _variant_name(value: Any) -> str:
    if not isinstance(value, str) or not _VARIANT_NAME.match(value):
        raise Refused(
            "a variant's name is letters, digits, '.', '-' and '_' (it names the output files), got "
            f"{str(value)[:80]!r}"
        )
    return value


def _variants(value: Any) -> Any:
    if not value:
        return [{"name": "default"}]
    if not isinstance(value, list):
        raise Refused("variants is a list")
    if len(value) > MAX_VARIANTS:
        raise Refused(f"more than {MAX_VARIANTS} variants")
    return value


class VariantDoc(Doc):
    """One variant: overrides of the top level's fields (each read as the top level's are)."""

    shape = "a variant needs a name"
    required = ("name",)
    name: Annotated[str, PlainValidator(_variant_name)]
    cluster: Any = None
    manifests: Any = None
    capacity: Any = None
    description: Annotated[str, PlainValidator(_text_if_any)] = ""
    settings: Any = None
    kueue: Any = None


class StudyDoc(Doc):
    """A simulation file (the module docstring). The fields naming other files (cluster, manifests, capacity,
    trace, generator) are read by ``load_study`` after this, each checked by its own model."""

    shape = "a simulation file is a YAML mapping"
    name: Annotated[str, PlainValidator(_name_or_blank)] = ""
    description: Annotated[str, PlainValidator(_text_if_any)] = ""
    seed: Annotated[int, whole_in(-(2**63), 2**63 - 1 - MAX_REPLICAS)] = 1
    replicas: Annotated[int, whole_in(1, MAX_REPLICAS)] = 1
    keepFinished: Flag = False
    until: Annotated[float, SECONDS] | None = None
    scale: Annotated[float, number_in(1e-9, 1e9)] = 1.0
    env: Annotated[dict[str, str], PlainValidator(_env_values)] = {}
    manifests: Any = None
    trace: Any = None
    generator: Any = None
    cluster: Any = None
    capacity: Any = None
    settings: Any = None
    kueue: Any = None
    variants: Annotated[list[VariantDoc], BeforeValidator(_variants)] = Field(
        default=None, validate_default=True
    )

    @field_validator("variants", mode="after")
    @classmethod
    def _distinct(cls, variants: list[VariantDoc]) -> list[VariantDoc]:
        seen: set[str] = set()
        for i, v in enumerate(variants):
            if v.name in seen:
                raise Refused(f"duplicate variant name {v.name!r}", at=(i, "name"))
            seen.add(v.name)
        return variants

    @model_validator(mode="after")
    def _one_traffic(self) -> StudyDoc:
        if ("trace" in self.model_fields_set) == ("generator" in self.model_fields_set):
            raise Refused("give exactly one of `trace` or `generator`", at=("trace",))
        return self


class Autoscaling(Doc):
    shape = "autoscaling is a mapping {min, max}"
    min: Nodes = 0
    max: Nodes | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Autoscaling:
        if self.max is not None and self.max < self.min:
            raise Refused(f"max ({self.max}) is below min ({self.min})", at=("max",))
        return self


class NodePool(Doc):
    """A node pool of the cluster's short form."""

    shape = "a node pool needs a name and a machineType"
    required = ("name", "machineType")
    name: Name
    machineType: Name
    tpuTopology: Name | None = None
    flexStart: Flag | None = None
    queuedProvisioning: Flag | None = None
    spot: Flag | None = None
    # a specific reservation the pool consumes (--reservation-affinity=specific --reservation=NAME); its size is
    # the capacity profile's ``reservations``
    reservation: Name | None = None
    nodes: Nodes | None = None
    autoscaling: Autoscaling | None = None
    labels: Annotated[dict[Any, Any], typed(dict, "labels is a mapping")] | None = None
    taints: Annotated[list[Any], typed(list, "taints is a list")] | None = None
    locations: Annotated[list[Any], typed(list, "locations is a list")] | None = None


def _method(value: Any) -> str:
    if value not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        raise Refused(f"method must be GET, POST, PUT, PATCH or DELETE, got {value!r}")
    return str(value)


class Request(Doc):
    """A GKE REST call of the cluster's ``requests`` form (as gcloud sends it)."""

    shape = "a request is {method, path, body} with an absolute path"
    method: Annotated[str, PlainValidator(_method)] = "POST"
    path: str
    body: Annotated[dict[str, Any], typed(dict, "body is an object")] | None = None

    @classmethod
    def complete(cls, data: dict[Any, Any]) -> bool:
        return isinstance(data.get("path"), str) and data["path"].startswith("/")


class Cluster(Doc):
    """The GKE cluster: its short form (project, location, name, nodePools) or its ``requests``."""

    shape = "the cluster is an object (project, location, name, nodePools) or `requests`"
    addons: Annotated[list[Any], listed("addons is a list")] = []
    project: Text | None = None
    location: Text | None = None
    name: Text | None = None
    version: Text | None = None
    machineType: Text | None = None
    nodes: Nodes | None = None
    nodePools: Annotated[list[NodePool], listed("nodePools is a list")] = []
    requests: Annotated[list[Request], listed("requests is a list of {method, path, body}")] = []

    @field_validator("addons", mode="after")
    @classmethod
    def _known_addons(cls, addons: list[Any]) -> list[Any]:
        bad = unknown_key(addons, ADDONS)
        if bad:
            raise Refused(f"unknown addon {bad!r} (known: {', '.join(ADDONS)})")
        return addons


def _fallback_shape(value: Any) -> Any:
    if not isinstance(value, bool | dict):
        raise Refused(f"fallback is true, false or a mapping of FallbackConfig fields, got {value!r}")
    return value


class Settings(Doc):
    """A variant's (or the top level's) twin settings (``SETTINGS_KEYS``)."""

    unknown = "setting"
    fallback: Annotated[Any, PlainValidator(_fallback_shape)] = None
    # how long one Kueue scheduling cycle takes (seconds or a duration; TwinSettings.kueue_cycle_seconds)
    kueue_cycle_seconds: Annotated[Any, SECONDS] = None


Settings.shape = "settings is a mapping (known keys: " + ", ".join(sorted(keys_of(Settings))) + ")"


class _FallbackFields(Doc):
    unknown = "fallback field"


# FallbackConfig's fields, each of the type its dataclass declares (seconds: finite, not negative)
_FALLBACK_TYPES: dict[str, Any] = {
    "bool": Flag,
    "float": Annotated[float, number_in(0, MAX_SECONDS)],
    "int": Annotated[float, number_in(0, MAX_SECONDS)],
    "str": Name,
    "dict[str, int]": Annotated[dict[Name, Nodes], typed(dict, "a mapping of node pool -> max nodes")],
    "list[str]": Annotated[list[Name], typed(list, "a list of names")],
}


def _fallback_type(declared: str) -> Any:
    kind = _FALLBACK_TYPES.get(declared.replace("| None", "").strip(), Any)
    return kind | None if declared.endswith("| None") else kind


_FALLBACK_FIELDS: dict[str, Any] = {
    f.name: (_fallback_type(str(f.type)), None) for f in dataclasses.fields(FallbackConfig)
}
FallbackFields: type[Doc] = create_model("FallbackFields", __base__=_FallbackFields, **_FALLBACK_FIELDS)

STUDY_KEYS = keys_of(StudyDoc)
VARIANT_KEYS = keys_of(VariantDoc)
SETTINGS_KEYS = keys_of(Settings)
POOL_KEYS = keys_of(NodePool)
