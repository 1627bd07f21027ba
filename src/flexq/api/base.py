"""Building blocks of every typed object: the pydantic base models, ObjectMeta, common field types.

Owns: ``Model`` (camelCase, unknown fields refused), ``Loose`` (unknown fields kept, for the parts of
core/v1 we do not model field by field), ``ObjectMeta``, ``Condition``, label selectors, tolerations,
taints, quantities as a field type, name validators, and ``field_error`` for semantic checks that
point at a sub-path. Validation and defaults only; no behaviour. Must not import ``flexq`` outside
``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from flexq.api.goquote import go_quote, go_quote_bounded
from flexq.api.quantity import QuantityError, canonical_quantity

__all__ = [
    "Condition",
    "LabelSelector",
    "Loose",
    "Model",
    "ObjectMeta",
    "OwnerReference",
    "Quantity",
    "Taint",
    "Toleration",
    "DNS1123Label",
    "DNS1123Subdomain",
    "field_error",
    "ObjectBase",
    "ResourceList",
    "check_dns1123_subdomain",
    "check_dns1123_label",
    "check_label_key",
    "check_label_value",
    "Int32",
    "Int64",
    "MetaCondition",
    "MicroTime",
    "Time",
    "check_conditions",
    "FIELD_MANAGER_MAX",
    "field_manager_problems",
]

INT32_MAX = 2**31 - 1
# Go's int32 and int64 fields: a number past them fails to decode on the API server; here it is refused as an
# invalid value of its field, before a controller would try to make two billion pods of it
Int32 = Annotated[int, Field(ge=-(2**31), le=INT32_MAX)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]

# -- times: metav1.Time and MicroTime are RFC 3339 (Go's time.Parse of time.RFC3339) -----------------------------
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_LAYOUT = "2006-01-02T15:04:05Z07:00"
# the layout's elements and what each takes, for Go's "cannot parse X as Y"
_ELEMENTS = (
    ("2006", r"\d{4}"),
    ("-", "-"),
    ("01", r"\d{2}"),
    ("-", "-"),
    ("02", r"\d{2}"),
    ("T", "T"),
    ("15", r"\d{2}"),
    (":", ":"),
    ("04", r"\d{2}"),
    (":", ":"),
    ("05", r"\d{2}(\.\d+)?"),
    ("Z07:00", r"Z|[+-]\d{2}:\d{2}"),
)
_RANGES = (
    ("month", 2, 1, 12),
    ("day", 3, 1, 31),
    ("hour", 4, 0, 23),
    ("minute", 5, 0, 59),
    ("second", 6, 0, 60),
)


def _parse_error(text: str) -> str:
    """Go's ``time.Parse(time.RFC3339, text)`` error (its wording), or "" when ``text`` parses."""
    head = f"parsing time {go_quote(text)}"
    m = _RFC3339.fullmatch(text)
    if m is None:
        rest = text
        for elem, pattern in _ELEMENTS:
            got = re.match(pattern, rest)
            if got is None:
                return f"{head} as {go_quote(_LAYOUT)}: cannot parse {go_quote(rest)} as {go_quote(elem)}"
            rest = rest[got.end() :]
        return f"{head}: extra text: {go_quote(rest)}"
    for what, group, low, high in _RANGES:
        if not low <= int(m.group(group)) <= high:
            return f"{head}: {what} out of range"
    return ""


def check_time(value: str) -> str:
    """An RFC 3339 time (``metav1.Time``, ``metav1.MicroTime``), refused with Go's parse error."""
    why = _parse_error(value)
    if why:
        # ``unmarshal``: Go's decoder stops here in a compiled-in kind (``metav1.Time.UnmarshalJSON``)
        raise PydanticCustomError(
            "flexq", "{message}", {"message": why, "kind": "FieldValueInvalid", "unmarshal": True}
        )
    return value


Time = Annotated[str, AfterValidator(check_time)]
MicroTime = Time


class Model(BaseModel):
    """Strict: camelCase aliases, unknown fields are an error (the server's strict field validation)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", serialize_by_alias=True
    )


class Loose(Model):
    """Like Model, but unknown fields are kept as they are (used where we model only what we read)."""

    model_config = ConfigDict(extra="allow")


def field_error(subpath: str, message: str, kind: str = "FieldValueInvalid") -> PydanticCustomError:
    """An error raised in a model validator that names a path below the model (``resourceGroups[0].flavors``)."""
    return PydanticCustomError("flexq", "{message}", {"message": message, "subpath": subpath, "kind": kind})


# -- names ------------------------------------------------------------------------------------
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def check_dns1123_label(v: str) -> str:
    if len(v) > 63:
        raise PydanticCustomError(
            "flexq", "must be no more than 63 characters", {"kind": "FieldValueInvalid"}
        )
    if not _DNS_LABEL.match(v):
        raise PydanticCustomError(
            "flexq",
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
            "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            {"kind": "FieldValueInvalid"},
        )
    return v


def check_dns1123_subdomain(v: str) -> str:
    if len(v) > 253:
        raise PydanticCustomError(
            "flexq", "must be no more than 253 characters", {"kind": "FieldValueInvalid"}
        )
    if not _DNS_SUBDOMAIN.match(v):
        raise PydanticCustomError(
            "flexq",
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            {"kind": "FieldValueInvalid"},
        )
    return v


def check_label_key(k: str) -> str:
    prefix, _, name = k.rpartition("/")
    if prefix:
        try:
            check_dns1123_subdomain(prefix)
        except PydanticCustomError as err:
            raise PydanticCustomError(
                "flexq", f"prefix part {err.message()}", {"kind": "FieldValueInvalid"}
            ) from None
    if not name:
        raise PydanticCustomError("flexq", "name part must be non-empty", {"kind": "FieldValueInvalid"})
    if len(name) > 63:
        raise PydanticCustomError(
            "flexq", "name part must be no more than 63 characters", {"kind": "FieldValueInvalid"}
        )
    if not _QUALIFIED_NAME.match(name):
        raise PydanticCustomError(
            "flexq",
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            {"kind": "FieldValueInvalid"},
        )
    return k


def check_label_value(v: str) -> str:
    if len(v) > 63:
        raise PydanticCustomError(
            "flexq", "must be no more than 63 characters", {"kind": "FieldValueInvalid"}
        )
    if not _LABEL_VALUE.match(v):
        raise PydanticCustomError(
            "flexq",
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
            "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            {"kind": "FieldValueInvalid"},
        )
    return v


_VALID_LABEL_KEYS: set[str] = set()  # keys already checked (a small vocabulary, on every object written)


def naming_the_value(value: str, check: Any) -> None:
    """``check(value)``, its error message starting ``Invalid value: "<value>": `` as apimachinery's
    ``field.Invalid`` prints a map's bad key or value (not ``"object"``, the whole map)."""
    try:
        check(value)
    except PydanticCustomError as err:
        shown = go_quote_bounded(value, 100)
        raise PydanticCustomError(
            "flexq",
            "invalid value",
            {**(err.context or {}), "message": f"Invalid value: {shown}: {err.message()}"},
        ) from None


_VALID_LABEL_VALUES: set[str] = set()  # values already checked (cluster and job names recur on many objects)


def _check_labels(v: dict[str, str] | None) -> dict[str, str] | None:
    if v:
        for k, val in v.items():
            if k not in _VALID_LABEL_KEYS:
                naming_the_value(k, check_label_key)
                if len(_VALID_LABEL_KEYS) < 4096:
                    _VALID_LABEL_KEYS.add(k)
            if val not in _VALID_LABEL_VALUES:
                naming_the_value(val, check_label_value)
                if len(_VALID_LABEL_VALUES) >= 16384:
                    _VALID_LABEL_VALUES.clear()
                _VALID_LABEL_VALUES.add(val)
    return v


DNS1123Label = Annotated[str, AfterValidator(check_dns1123_label)]
DNS1123Subdomain = Annotated[str, AfterValidator(check_dns1123_subdomain)]
Labels = Annotated[dict[str, str] | None, AfterValidator(_check_labels)]


CANONICAL_QUANTITIES = "canonical_quantities"  # validation context key: True for the built-in API groups


def _quantity(v: Any, info: ValidationInfo) -> str | int | float:
    """A valid quantity, canonical (``resource.Quantity.String()``) in built-in kinds, as written in custom
    resources: the API server stores a CRD's quantities as the JSON it got (``nominalQuota: 10`` stays the
    integer 10), which is what lets ``kubectl apply`` of an unchanged manifest report "unchanged"."""
    if isinstance(v, bool) or v is None:
        raise PydanticCustomError(
            "flexq", "quantities must be a string or a number", {"kind": "FieldValueInvalid"}
        )
    try:
        canonical = canonical_quantity(v)
    except QuantityError as exc:
        raise PydanticCustomError("flexq", str(exc), {"kind": "FieldValueInvalid"}) from None
    if info.context is not None and not info.context.get(CANONICAL_QUANTITIES, True):
        return v
    return canonical


Quantity = Annotated[str | int | float, BeforeValidator(_quantity)]
ResourceList = dict[str, Quantity]


# -- metadata ---------------------------------------------------------------------------------
class OwnerReference(Model):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: StrictBool | None = None
    block_owner_deletion: StrictBool | None = None


FIELD_MANAGER_MAX = 128  # bytes


def field_manager_problems(manager: str) -> list[tuple[str, str]]:
    """apimachinery's ValidateFieldManager, as (reason, message): at most 128 bytes, and every character
    printable (the first one that is not is named). A request's ``fieldManager`` and each ``managedFields``
    entry's ``manager`` are both checked by it."""
    out = []
    if len(manager.encode()) > FIELD_MANAGER_MAX:
        out.append(("FieldValueTooLong", f"Too long: may not be more than {FIELD_MANAGER_MAX} bytes"))
    bad = next(((i, ch) for i, ch in enumerate(manager) if not ch.isprintable()), None)
    if bad is not None:
        shown = json.dumps(manager[:100])
        out.append(
            (
                "FieldValueInvalid",
                f"Invalid value: {shown}: invalid character U+{ord(bad[1]):04X} (at index {bad[0]})",
            )
        )
    return out


class ManagedFieldsEntry(Loose):
    """Kept as sent (server-side apply bookkeeping), checked as apimachinery's ValidateManagedFields checks it,
    and with ``fieldsV1`` an object: the field manager reads it as a field set (a string there was stored, and
    every later write of the object was a 500)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    manager: str | None = None
    operation: str | None = None
    fields_type: str | None = Field(default=None, alias="fieldsType")
    fields_v1: dict[str, Any] | None = Field(default=None, alias="fieldsV1")

    @model_validator(mode="after")
    def _entry(self) -> ManagedFieldsEntry:
        if self.operation not in ("Apply", "Update"):
            shown = json.dumps(self.operation or "")
            raise field_error("operation", f"Invalid value: {shown}: must be `Apply` or `Update`")
        if self.fields_type and self.fields_type != "FieldsV1":
            raise field_error(
                "fieldsType", f"Invalid value: {json.dumps(self.fields_type)}: must be `FieldsV1`"
            )
        for kind, message in field_manager_problems(self.manager or ""):
            raise field_error("manager", message, kind)
        return self


class ObjectMeta(Model):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: Labels = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = None
    self_link: str | None = None

    @field_validator("finalizers")
    @classmethod
    def _finalizer_names(cls, v: list[str] | None) -> list[str] | None:
        """Each a qualified name, as apimachinery's ValidateFinalizerName has it (the path is the list's)."""
        for name in v or ():
            naming_the_value(name, check_label_key)
        return v

    @field_validator("annotations")
    @classmethod
    def _annotation_keys(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        if v:
            for k in v:
                if k not in _VALID_LABEL_KEYS:  # annotation keys follow the label key rule
                    naming_the_value(k, check_label_key)
                    if len(_VALID_LABEL_KEYS) < 4096:
                        _VALID_LABEL_KEYS.add(k)
            if sum(len(k) + len(x) for k, x in v.items()) > 256 * 1024:
                raise PydanticCustomError(
                    "flexq", "may not be more than 262144 bytes", {"kind": "FieldValueTooLong"}
                )
        return v


class ObjectBase(Model):
    """Common envelope: apiVersion, kind, metadata. Kind models add spec/status/data."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


# -- shared small types -----------------------------------------------------------------------
class Condition(Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: Time | None = None
    observed_generation: Int64 | None = None
    last_update_time: Time | None = None
    last_probe_time: Time | None = None
    last_heartbeat_time: Time | None = None


# metav1.Condition as a CRD's OpenAPI schema has it (controller-gen's): what Kueue's and the autoscaler's status
# conditions must be. The messages are apiextensions' ("<path> in body should match '<pattern>'"); PATH stands for
# the field's path until the cause is made (``scheme.causes_from``).
PATH = "\x00path\x00"
_CONDITION_TYPE = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
_CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


def _schema_error(value: Any, rule: str) -> PydanticCustomError:
    shown = go_quote_bounded(value) if isinstance(value, str) else str(value)
    return PydanticCustomError(
        "flexq",
        "{message}",
        {"message": f"Invalid value: {shown}: {PATH} in body {rule}", "kind": "FieldValueInvalid"},
    )


def _max_bytes(max_len: int) -> Any:
    def check(value: str) -> str:
        if len(value) > max_len:
            raise PydanticCustomError(
                "flexq",
                "{message}",
                {"message": f"Too long: may not be more than {max_len} bytes", "kind": "FieldValueTooLong"},
            )
        return value

    return AfterValidator(check)


def _pattern(pattern: str, max_len: int) -> Any:
    compiled = re.compile(pattern)
    too_long = _max_bytes(max_len).func

    def check(value: str) -> str:
        too_long(value)
        if not compiled.match(value):
            raise _schema_error(value, f"should match '{pattern}'")
        return value

    return AfterValidator(check)


def _date_time(value: str) -> str:
    if _parse_error(value):
        raise _schema_error(value, f"must be of type date-time: {json.dumps(value)}")
    return value


def _min_zero(value: int) -> int:
    if value < 0:
        raise _schema_error(value, "should be greater than or equal to 0")
    return value


class MetaCondition(Model):
    """``metav1.Condition`` with the schema rules every CRD built with controller-gen carries: ``type`` a
    qualified name of at most 316 characters; ``status`` True, False or Unknown; ``observedGeneration`` not
    negative; ``lastTransitionTime`` an RFC 3339 date-time; ``reason`` 1 to 1024 characters matching
    ``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``; ``message`` at most 32768 bytes — all but
    ``observedGeneration`` required."""

    type: Annotated[str, _pattern(_CONDITION_TYPE, 316)]
    status: Literal["True", "False", "Unknown"]
    observed_generation: Annotated[Int64, AfterValidator(_min_zero)] | None = None
    last_transition_time: Annotated[str, AfterValidator(_date_time)]
    reason: Annotated[str, _pattern(_CONDITION_REASON, 1024)]
    message: Annotated[str, _max_bytes(32768)]


def check_conditions(conditions: list[MetaCondition] | None) -> list[MetaCondition] | None:
    """``+listType=map``, ``+listMapKey=type``: one condition per type."""
    seen: set[str] = set()
    for i, c in enumerate(conditions or ()):
        if c.type in seen:
            raise field_error(
                f"[{i}]",
                f'Duplicate value: map[string]interface {{}}{{"type":{json.dumps(c.type)}}}',
                "FieldValueDuplicate",
            )
        seen.add(c.type)
    return conditions


class LabelSelectorRequirement(Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(Model):
    match_labels: Labels = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class Toleration(Model):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: Int64 | None = None


class Taint(Model):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: str | None = None
