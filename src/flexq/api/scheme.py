"""Admission of external objects: validate, default, convert to the storage version; and back.

Owns: ``admit`` (a user's dict in any served version -> the defaulted storage-version dict, or an
``Invalid`` error naming every bad field), ``render`` (storage dict -> any served version), and the
translation of pydantic errors into Kubernetes ``Status`` causes. Must not import outside ``flexq.api``
and ``flexq.errors``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from flexq.api.base import CANONICAL_QUANTITIES, PATH, check_dns1123_label, check_dns1123_subdomain
from flexq.api.core_defaults import PRIVATE_INPUT
from flexq.api.decode import check_finite
from flexq.api.godecode import decode_error
from flexq.api.goquote import go_quote_bounded
from flexq.api.jsoncopy import clone, clone_many
from flexq.api.registry import KindInfo, Registry, split_api_version
from flexq.errors import BadRequest, Cause, Invalid

UnknownFields = Literal["Strict", "Ignore"]

_REASONS = {
    "missing": "FieldValueRequired",
    "literal_error": "FieldValueNotSupported",
    "enum": "FieldValueNotSupported",
    "too_long": "FieldValueTooMany",
    "too_short": "FieldValueRequired",
    "extra_forbidden": "FieldValueInvalid",
    "greater_than_equal": "FieldValueInvalid",
    "less_than_equal": "FieldValueInvalid",
    "string_too_long": "FieldValueTooLong",
}


def path_of(loc: tuple[Any, ...]) -> str:
    """pydantic ``loc`` -> Kubernetes field path (``spec.resourceGroups[0].flavors[1].name``)."""
    out = ""
    for part in loc:
        if isinstance(part, int) or any(c in str(part) for c in "./- ") or not str(part)[:1].isalpha():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _short(value: Any) -> str:
    """A value in a message as apimachinery's field.Error prints one: a string as Go's ``%q`` (control
    characters and bidi overrides escaped), anything else as JSON; at most about 80 characters."""
    if isinstance(value, str):
        return go_quote_bounded(value, 78)
    try:
        text = json.dumps(value, default=str)
    except TypeError:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_PREFIXES = {
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
}


_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'")
# pydantic's type errors -> the OpenAPI type the field's schema names
_SCHEMA_TYPES = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def _json_type(value: Any) -> str:
    """The OpenAPI name of a JSON value's type (kube-openapi's ``validate.typeName``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _supported(expected: str) -> str:
    """pydantic's ``'a', 'b' or 'c'`` as apimachinery's ``NotSupported`` lists them: ``"a", "b", "c"``."""
    values = _LITERAL.findall(expected)
    return ", ".join(f'"{v}"' for v in values) if values else expected


def _message(etype: str, reason: str, msg: str, ctx: dict, value: Any) -> str:
    """The cause message in apimachinery's ``field.Error`` wording for each reason."""
    if etype == "extra_forbidden":
        return "field not declared in schema"
    if etype == "missing":
        return "Required value"
    if reason == "FieldValueTooMany" and etype == "too_long":
        actual = ctx.get("actual_length")
        if actual is None and hasattr(value, "__len__"):
            actual = len(value)
        return f"Too many: {actual}: must have at most {ctx.get('max_length')} items"
    if reason == "FieldValueNotSupported" and "expected" in ctx:
        return f"Unsupported value: {_short(value)}: supported values: {_supported(str(ctx['expected']))}"
    schema_type = _SCHEMA_TYPES.get(etype)
    if schema_type is not None:  # a JSON value of the wrong type: kube-openapi's InvalidTypeFail
        got = _json_type(value)
        return f'Invalid value: "{got}": {PATH} in body must be of type {schema_type}: "{got}"'

    if msg.startswith("Invalid value: "):  # a check that names the value itself
        return msg
    if etype in ("greater_than_equal", "less_than_equal", "greater_than", "less_than") and "value" not in ctx:
        # apimachinery's words for a bound (ValidateNonnegativeField: "must be greater than or equal to 0")
        bound = next((ctx[k] for k in ("ge", "le", "gt", "lt") if k in ctx), None)
        words = {
            "greater_than_equal": "must be greater than or equal to",
            "less_than_equal": "must be less than or equal to",
            "greater_than": "must be greater than",
            "less_than": "must be less than",
        }[etype]
        if bound is not None:
            return f"Invalid value: {_short(value)}: {words} {bound}"
    prefix = _PREFIXES.get(reason)
    if prefix:
        return msg if msg.startswith(prefix) else f"{prefix}: {msg}"
    if isinstance(value, dict):  # a rule over a whole object: Kubernetes prints the value as "object"
        return f'Invalid value: "object": {msg}'
    return f"Invalid value: {_short(value)}: {msg}"


def causes_from(err: ValidationError) -> list[Cause]:
    """Translate pydantic errors into Kubernetes causes, one per problem."""
    causes: list[Cause] = []
    for e in err.errors(include_url=False):
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and ("[" in x and "function-" in x)))
        etype = e["type"]
        ctx = e.get("ctx") or {}
        field = path_of(loc)
        if etype == "flexq":
            if ctx.get("subpath"):
                sub = ctx["subpath"]
                field = f"{field}{sub}" if sub.startswith("[") else (f"{field}.{sub}" if field else sub)
            reason = ctx.get("kind", "FieldValueInvalid")
            msg = ctx.get("message", e["msg"])
        else:
            reason = _REASONS.get(
                etype,
                "FieldValueTypeInvalid" if "type" in etype or "parsing" in etype else "FieldValueInvalid",
            )
            msg = e["msg"]
        text = _message(etype, reason, msg, ctx, e.get("input")).replace(PATH, field)
        if etype == "extra_forbidden":
            reason = "FieldValueInvalid"
        causes.append(Cause(field=field, reason=reason, message=text))
    return causes


def invalid(info: KindInfo, name: str, causes: list[Cause]) -> Invalid:
    """The ``Invalid`` error the API server returns, message and all."""
    what = f"{info.kind}.{info.group}" if info.group else info.kind
    parts = [f"{c.field}: {c.message}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return Invalid(
        f'{what} "{name}" is invalid: {joined}', kind=info.kind, group=info.group, name=name, causes=causes
    )


def _prune_nulls(value: Any) -> Any:
    """A copy without the null-valued fields of every object in it (list items stay, null or not)."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


def _drop(obj: Any, loc: tuple[Any, ...]) -> None:
    for part in loc[:-1]:
        obj = obj[part]
    if isinstance(obj, dict):
        obj.pop(loc[-1], None)


# Kinds the API server compiles in (their quantities are stored canonical); every other group is a CRD.
BUILT_IN_GROUPS = frozenset({"", "batch"})


def validate(
    info: KindInfo, obj: dict, unknown: UnknownFields = "Strict", private: bool = False, rebuild: bool = True
) -> tuple[dict, str]:
    """Validate and default ``obj`` in its own version. Returns (defaulted dict, version). ``private``: ``obj``
    is the caller's own copy, which it drops afterwards: the defaulters may fill it in place. ``rebuild=False``
    (a private object of a kind with ``KindInfo.canonical``): the result is ``obj`` itself as the defaulters
    filled it and ``canonical`` left it, not a dict serialised from the validated model."""
    _, version = split_api_version(obj.get("apiVersion", ""))
    model = info.models.get(version)
    if model is None:
        raise BadRequest(f'no kind "{obj.get("kind")}" is registered for version "{obj.get("apiVersion")}"')
    name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName") or ""
    data = obj
    built_in = info.group in BUILT_IN_GROUPS
    pruned = False
    if info.custom:  # unstructured decoding: a number past float64 is refused wherever it is (a compiled-in
        check_finite(obj)  # kind's field refuses it below, in its Go type's words)
    for _ in range(3):
        try:
            m = model.model_validate(
                data,
                strict=None if info.custom else True,
                context={CANONICAL_QUANTITIES: built_in, PRIVATE_INPUT: private},
            )
            break
        except ValidationError as err:
            errors = err.errors()
            if not built_in and not pruned and any(e.get("input", 0) is None for e in errors):
                # A custom resource's null fields are pruned before validation (apiextensions: fields not
                # marked nullable), e.g. `cloud.google.com/gke-nodepool: ${UNSET}` after envsubst.
                data, pruned = _prune_nulls(data), True
                continue
            extra = [e["loc"] for e in errors if e["type"] == "extra_forbidden"]
            if unknown == "Ignore" and extra and len(extra) == len(errors):
                data = clone(data)
                for loc in extra:
                    _drop(data, loc)
                continue
            if not info.custom:
                undecodable = decode_error(info.kind, version, model, err, data)
                if undecodable is not None:
                    raise undecodable from None
            raise invalid(
                info, name, check_name(info, obj.get("metadata") or {}) + causes_from(err)
            ) from None
    else:  # pragma: no cover - the last pass can only fail with errors raised above
        raise invalid(info, name, [])
    if not rebuild and private and data is obj and info.canonical is not None:
        info.canonical(obj)
        return obj, version
    out = m.model_dump(mode="json", by_alias=True, exclude_none=True)
    out["apiVersion"] = obj.get("apiVersion")
    out["kind"] = info.kind
    return out, version


def check_name(info: KindInfo, meta: dict) -> list[Cause]:
    """metadata.name against the kind's rule (DNS-1123 subdomain, label for Namespace/Service, a path segment
    for RBAC objects)."""
    name = meta.get("name")
    if not name:
        if meta.get("generateName"):
            return []
        return [
            Cause("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")
        ]
    if info.name_rule == "path":  # path.IsValidPathSegmentName (RBAC objects: "system:controller:x" is valid)
        bad = next((f"may not be '{name}'" for _ in [0] if name in (".", "..")), None) or next(
            (f"may not contain '{c}'" for c in ("/", "%") if c in name), None
        )
        return (
            [Cause("metadata.name", "FieldValueInvalid", f"Invalid value: {_short(name)}: {bad}")]
            if bad
            else []
        )
    check = check_dns1123_label if info.name_rule == "label" else check_dns1123_subdomain
    try:
        check(name)
    except PydanticCustomError as exc:
        return [
            Cause("metadata.name", "FieldValueInvalid", f"Invalid value: {_short(name)}: {exc.message()}")
        ]
    return []


def admit(
    info: KindInfo,
    obj: dict,
    old: dict | None = None,
    unknown: UnknownFields = "Strict",
    private: bool = False,
    rebuild: bool = True,
) -> dict:
    """A user's object in any served version -> defaulted storage-version dict (raises Invalid). ``private``:
    ``obj`` is the caller's own copy, which it drops afterwards (the store's): it may be defaulted in place;
    ``rebuild``: as ``validate``'s."""
    data, version = validate(info, obj, unknown, private, rebuild)
    causes = check_name(info, data.get("metadata") or {})
    if causes:
        raise invalid(info, (data.get("metadata") or {}).get("name", ""), causes)
    stored = info.convert_to_storage(version, data)
    stored["apiVersion"] = info.storage_api_version
    stored["kind"] = info.kind
    if info.mutate is not None:
        stored = info.mutate(stored, old)
    if info.validate is not None:
        causes = info.validate(stored, old)
        if causes:
            raise invalid(info, (stored.get("metadata") or {}).get("name", ""), causes)
    return stored


class Admission:
    """A client's write admitted at the API face (the HTTP face, the SDK, a client's in-process seam): ``admit``
    with the request's field validation (``unknown``: Strict refuses unknown fields, Ignore drops them). The
    store calls it at the point of its write where the API server admits (after the name is generated and the
    current version found, before the storage rules), so every refusal comes in upstream's order. A write
    without one is trusted (a controller's): the store keeps only its storage rules and the admission every
    writer meets (webhooks, built-in admission plugins)."""

    __slots__ = ("rebuild", "unknown")

    def __init__(self, unknown: UnknownFields = "Strict", rebuild: bool = True) -> None:
        """``rebuild=False``: a controller's object of a built-in kind (``BUILT``)."""
        self.unknown: UnknownFields = unknown
        self.rebuild = rebuild

    def __call__(self, info: KindInfo, obj: dict, old: dict | None) -> dict:
        return admit(info, obj, old, self.unknown, private=True, rebuild=self.rebuild)


ADMIT = Admission()  # a client's write with Strict field validation (the SDK's)
# A controller's object of a built-in kind, built from a custom resource's template (KubeRay's Pods, Services and
# submitter Job, Kueue's PodTemplates): validated and defaulted as any write, so every refusal is upstream's, and
# stored as the defaulters filled it (``validate``'s ``rebuild=False``), not serialised again from the model;
# ``Store.check_writes`` checks that this is what ``ADMIT`` would store.
BUILT = Admission(rebuild=False)


def render(info: KindInfo, stored: dict, api_version: str | None = None) -> dict:
    """Storage-version dict -> the requested served version (a copy)."""
    out = clone(stored)
    if api_version is None or api_version == info.storage_api_version:
        return out
    _, version = split_api_version(api_version)
    out = info.convert_from_storage(version, out)
    out["apiVersion"] = api_version
    return out


def render_many(
    info: KindInfo,
    stored: list[dict],
    api_version: str | None = None,
    cache: dict[int, tuple[Any, bytes]] | None = None,
) -> list[dict]:
    """``render`` of many stored versions (``clone_many`` with the store's ``cache`` of their JSON text
    when no conversion is needed)."""
    if api_version is None or api_version == info.storage_api_version:
        return clone_many(stored, cache)
    return [render(info, o, api_version) for o in stored]


_GO_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _go_type(value: Any) -> str:
    return _GO_TYPES.get(type(value), type(value).__name__)


def _unmarshal(value: Any, field: str, want: str) -> BadRequest:
    """The API server's answer to a JSON value of the wrong type (encoding/json's UnmarshalTypeError)."""
    return BadRequest(
        f"json: cannot unmarshal {_go_type(value)} into Go struct field ObjectMeta.{field} of type {want}"
    )


_META_STR = frozenset(
    ("name", "generateName", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
)
_META_LISTS = {"finalizers": str, "ownerReferences": dict, "managedFields": dict}


def check_shape(obj: dict) -> None:
    """apiVersion, kind and the ObjectMeta fields every object shares have their JSON types (BadRequest as
    the API server's decoder answers otherwise); ``metadata: null`` is as absent. One pass over the keys
    present: this runs on every store write."""
    for key in ("apiVersion", "kind"):
        v = obj.get(key)
        if v is not None and type(v) is not str:
            raise BadRequest(
                f"json: cannot unmarshal {_go_type(v)} into Go struct field TypeMeta.{key} of type string"
            )
    meta = obj.get("metadata")
    if meta is None:
        return
    if type(meta) is not dict:
        raise BadRequest(
            f"json: cannot unmarshal {_go_type(meta)} into Go struct field .metadata of type v1.ObjectMeta"
        )
    for key, value in meta.items():
        if value is None:
            continue
        if key in _META_STR:
            if type(value) is not str:
                raise _unmarshal(value, f"metadata.{key}", "string")
        elif key == "labels" or key == "annotations":
            if type(value) is not dict:
                raise _unmarshal(value, f"metadata.{key}", "map[string]string")
            for v in value.values():
                if type(v) is not str:
                    raise _unmarshal(v, f"metadata.{key}", "string")
        elif key in _META_LISTS:
            item = _META_LISTS[key]
            want = "string" if item is str else "v1.Object"
            if type(value) is not list:
                raise _unmarshal(value, f"metadata.{key}", "[]" + want)
            for v in value:
                if not isinstance(v, item):
                    raise _unmarshal(v, f"metadata.{key}", want)
        elif key == "generation" and (type(value) is not int):
            raise _unmarshal(value, "metadata.generation", "int64")


def resolve_object(registry: Registry, obj: dict) -> KindInfo:
    """The KindInfo for an object from its apiVersion/kind (BadRequest when either is missing, or when
    the object's type fields or metadata have the wrong JSON types)."""
    if not isinstance(obj, dict):
        raise BadRequest("Object 'Kind' is missing in the request body: expected a JSON/YAML object")
    check_shape(obj)
    if not obj.get("kind"):
        raise BadRequest("Object 'Kind' is missing in '" + _short(obj) + "'")
    if not obj.get("apiVersion"):
        raise BadRequest(f"Object 'apiVersion' is missing for kind \"{obj['kind']}\"")
    return registry.by_gvk(obj["apiVersion"], obj["kind"])
