"""The pydantic side of flexq simulate's inputs: what the study, generator and sweep models share.

- ``Doc``, the base of every input model: a mapping whose unknown keys are refused by name (``unknown field
  'colour' (known: ...)``, at the key), with the message a subclass gives when the value is not a mapping at all.
- Field checks that refuse as ``flexq.simulate.inputs`` does, in the same words (``whole_in``, ``number_in``,
  ``BOOL``, ``TEXT``, ``NAME``, ``SECONDS``, ``listed``, ``typed``), used as ``Annotated`` metadata.
- ``input_error``: a ``pydantic.ValidationError`` as the one-line ``InputError`` naming the file, the line (when
  the reader knows it) and the field path (``cluster.nodePools[0].autoscaling.max``), with the reason; and
  ``checked``, a model validated with its refusal raised that way.

Must not import flexq.http.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainValidator, ValidationError, model_validator

from flexq.errors import InputError
from flexq.simulate.inputs import Refused, as_bool, as_number, as_text, as_whole, unknown_key
from flexq.simulate.jobs import as_seconds

__all__ = [
    "Doc",
    "input_error",
    "checked",
    "path_of",
    "whole_in",
    "number_in",
    "BOOL",
    "TEXT",
    "NAME",
    "SECONDS",
    "listed",
    "typed",
    "keys_of",
    "MAX_MESSAGE",
]

MAX_MESSAGE = 500  # characters of a refusal's reason (a message never repeats a 50 MB field)
M = TypeVar("M", bound=BaseModel)


class Doc(BaseModel):
    """An input mapping: its fields (by their YAML names: ``Field(alias=...)`` where Python cannot spell one),
    every other key refused naming it. ``shape`` is the message when the value is not a mapping, or lacks one of
    the ``required`` keys (or one is empty); ``unknown`` the word for an unknown key ("field", "setting")."""

    model_config = ConfigDict(extra="ignore", frozen=True, arbitrary_types_allowed=True)

    shape: ClassVar[str] = "must be a mapping"
    unknown: ClassVar[str] = "field"
    required: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def complete(cls, data: dict[Any, Any]) -> bool:
        """Whether ``data`` has what ``shape`` says the mapping needs (by default: every ``required`` key)."""
        return all(data.get(k) for k in cls.required)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not cls.complete(data):
            raise Refused(cls.shape)
        known = keys_of(cls)
        bad = unknown_key(data, known)
        if bad:
            raise Refused(f"unknown {cls.unknown} {bad!r} (known: {', '.join(sorted(known))})", at=(bad,))
        return data


def path_of(loc: tuple[Any, ...] | list[Any], prefix: str = "") -> str:
    """A pydantic location as the field path of messages: ``knobs[0].values[2]``, after ``prefix``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # a mapping's key itself: the path already names it
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def input_error(exc: ValidationError, source: str, *, field: str = "", line: int | None = None) -> InputError:
    """The first refusal of ``exc`` as an ``InputError``: ``source``, ``line``, the field path (after ``field``)
    and the reason, one line (a ``Refused`` keeps its own words; pydantic's are cut to ``MAX_MESSAGE``)."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err.get("loc", ()))
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, Refused):
        message = str(cause)
        loc = (*loc, *cause.at)
    else:
        message = str(err.get("msg", "invalid"))
    message = " ".join(message.split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return InputError(message, source=source, line=line, field=path_of(loc, field))


def checked(model: type[M], data: Any, source: str, *, field: str = "", line: int | None = None) -> M:
    """``model`` validated from ``data``; a refusal raised as ``input_error`` says."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise input_error(exc, source, field=field, line=line) from None


# -- field checks (Annotated metadata) --------------------------------------------------------------------------
def whole_in(lo: int, hi: int, what: str = "a whole number") -> PlainValidator:
    """An integer in [lo, hi] (``inputs.as_whole``)."""
    return PlainValidator(lambda v: as_whole(v, lo, hi, what))


def number_in(lo: float, hi: float) -> PlainValidator:
    """A finite number in [lo, hi] (``inputs.as_number``)."""
    return PlainValidator(lambda v: as_number(v, lo, hi))


BOOL = PlainValidator(as_bool)
TEXT = PlainValidator(as_text)  # text, or a number taken as its text
NAME = PlainValidator(lambda v: as_text(v, allow_number=False))  # text only
SECONDS = PlainValidator(as_seconds)  # a time: seconds or a duration (90s, 2h), 0 to 366 days


def listed(message: str) -> BeforeValidator:
    """A list (nothing given, or an empty value, is the empty list); anything else is refused with ``message``."""

    def check(value: Any) -> Any:
        if not value:
            return []
        if not isinstance(value, list):
            raise Refused(message)
        return value

    return BeforeValidator(check)


def typed(kind: type, message: str) -> BeforeValidator:
    """A value of ``kind`` (``dict``, ``list``), then checked as its annotation says; anything else is refused
    with ``message``."""

    def check(value: Any) -> Any:
        if not isinstance(value, kind):
            raise Refused(message)
        return value

    return BeforeValidator(check)


def keys_of(model: type[BaseModel]) -> set[str]:
    """The keys a model's mapping may hold (its fields' YAML names)."""
    return {f.alias or name for name, f in model.model_fields.items()}
