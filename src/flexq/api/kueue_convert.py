"""``flexq convert``: Kueue manifests from kueue.x-k8s.io/v1beta1 to v1beta2, with the conversion the twin serves.

Owns ``convert_text`` (a YAML stream -> the same stream with every Kueue v1beta1 object as v1beta2, the notes on
what did not convert losslessly, and how many objects changed) and ``convert_object`` (one object). The
conversion is the one the twin's API server runs when a v1beta1 object is written (``KindInfo.to_storage``,
i.e. ``flexq.api.kueue_v1beta1``'s functions after Kueue's ``*_conversion.go``); what it cannot carry over
unchanged (``kueue_v1beta1.conversion_losses``) is named, field by field. Each Kueue object is first checked as
the v1beta1 API checks it and the result as the v1beta2 API checks it, so a malformed manifest is refused naming
its source, its document and the field, and what comes out is what a Kueue 0.20 API server accepts.
``${VAR}`` placeholders (the tutorial's files are written for ``envsubst``) are kept; they are checked as if
each stood for ``1``.

Text is kept as written where it can be: a document whose conversion is a matter of lines (``apiVersion``; the
``cohort`` key renamed ``cohortName``; the ``retryDelayMinutes`` line dropped; ``Borrow``/``Preempt`` written
``MayStopSearch``) gets those lines edited, checked by
parsing the result again (its comments, order and quoting stay); a document whose fields change shape otherwise
is written anew with its comments before the first field kept, and a note says the others are gone. Every
other document (not Kueue, or already v1beta2) passes through untouched, so a whole manifest set can be piped
through. No behaviour. Must not import outside ``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from flexq.api import kueue, kueue_v1beta1, kueue_v1beta2, scheme
from flexq.api.decode import check_decoded, load_yaml
from flexq.api.jsoncopy import clone
from flexq.api.kueue_versions import V0_19_2, V0_20_7
from flexq.api.registry import KindInfo, Registry
from flexq.errors import ApiError, InputError, visible

__all__ = ["Converted", "Note", "convert_object", "convert_text", "TARGET"]

GROUP = kueue_v1beta2.GROUP
SOURCE = f"{GROUP}/v1beta1"
TARGET = f"{GROUP}/v1beta2"

_SEPARATOR = re.compile(r"^---(?:[ \t].*)?$")
_API_VERSION_LINE = re.compile(r"^(apiVersion:[ \t]*)([\"']?)kueue\.x-k8s\.io/v1beta1\2([ \t]*(?:#.*)?)$")
_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*")

# the v1beta1 API (Kueue 0.19.2's kinds) to check what comes in; the v1beta2 API (0.20.7's) to check what goes out
_FROM = Registry(kueue.kinds(V0_19_2))
_TO = Registry(kueue.kinds(V0_20_7))


@dataclass(frozen=True)
class Note:
    """What one document's conversion could not carry over unchanged."""

    source: str
    document: int  # 1-based, in the source
    what: str  # 'ClusterQueue "cluster-queue"'
    field: str  # "spec.flavorFungibility.whenCanBorrow", or "" for the whole document
    message: str

    def __str__(self) -> str:
        where = f"{self.source}: document {self.document} ({self.what})"
        return visible(f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}")


@dataclass
class Converted:
    """The converted stream, its notes and how many objects were converted."""

    text: str
    notes: list[Note] = field(default_factory=list)
    converted: int = 0


def _what(obj: dict) -> str:
    name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName") or ""
    return f'{obj.get("kind")} "{name}"' if name else str(obj.get("kind"))


def _stand_ins(value: Any) -> Any:
    """``value`` with every ``${VAR}`` placeholder in its strings read as ``1`` (for checking only)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub("1", value)
    if isinstance(value, dict):
        return {k: _stand_ins(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stand_ins(v) for v in value]
    return value


def _info(registry: Registry, obj: dict) -> KindInfo | None:
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return None
    for info in registry:
        if info.group == GROUP and info.kind == kind:
            return info
    return None


def _refusal(exc: ApiError, source: str, document: int, obj: dict) -> InputError:
    causes = getattr(exc, "causes", None) or []
    where = f"{source}: document {document} ({_what(obj)})"
    if len(causes) == 1:
        return InputError(causes[0].message, source=where, field=causes[0].field)
    message = "; ".join(f"{c.field}: {c.message}" for c in causes) if causes else exc.message
    return InputError(message, source=where)


def convert_object(
    obj: dict, *, source: str = "<object>", document: int = 1, api_errors: bool = False
) -> tuple[dict, list[Note]]:
    """One Kueue v1beta1 object -> its v1beta2 form and the notes on what did not carry over unchanged. The
    input is checked as the v1beta1 API checks it and the output as the v1beta2 API does (``InputError`` naming
    the source, document and field otherwise; ``api_errors``: the API server's own error, an ``ApiError``, as
    applying the object would give). ``obj`` is not changed."""
    if obj.get("apiVersion") != SOURCE:
        raise InputError(
            f"apiVersion is {obj.get('apiVersion')!r}, not {SOURCE!r}", source=source, field="apiVersion"
        )
    info = _info(_FROM, obj)
    if info is None:
        kinds = ", ".join(i.kind for i in _FROM if i.group == GROUP)
        raise InputError(
            f"flexq convert converts the Kueue kinds the twin serves ({kinds}), not {obj.get('kind')!r}",
            source=f"{source}: document {document}",
            field="kind",
        )
    try:
        scheme.admit(info, _stand_ins(obj))  # as the v1beta1 API would take it (every field checked)
    except ApiError as exc:
        if api_errors:
            raise
        raise _refusal(exc, source, document, obj) from None
    out = info.convert_to_storage("v1beta1", clone(obj))
    out["apiVersion"] = TARGET
    notes = [
        Note(source, document, _what(obj), path, message)
        for path, message in kueue_v1beta1.conversion_losses(info.kind, obj)
    ]
    target = _info(_TO, out)
    assert target is not None
    try:
        scheme.admit(target, _stand_ins(out))  # what Kueue 0.20's API server will be given
    except ApiError as exc:  # pragma: no cover - a conversion that makes an invalid object is a bug here
        raise _refusal(exc, source, document, out) from None
    return out, notes


def _split(text: str) -> list[tuple[str, str]]:
    """The stream as (separator line, document text) pairs; the first separator may be ""."""
    out: list[tuple[str, str]] = []
    sep, lines = "", list[str]()
    for line in text.splitlines(keepends=True):
        if _SEPARATOR.match(line.rstrip("\r\n")):
            out.append((sep, "".join(lines)))
            sep, lines = line, []
        else:
            lines.append(line)
    out.append((sep, "".join(lines)))
    return out


def _content(doc: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in doc.splitlines())


def _leading_comments(doc: str) -> str:
    keep = []
    for line in doc.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        keep.append(line)
    return "".join(keep)


_RENAMED_LINE = re.compile(r"^(?P<indent>[ \t]+)cohort(?P<rest>:.*)$")
_OLD_VALUES = re.compile(
    r"\b(whenCanBorrow:[ \t]*)([\"']?)Borrow\2|\b(whenCanPreempt:[ \t]*)([\"']?)Preempt\4"
)
_DROPPED_LINE = re.compile(r"^[ \t]+retryDelayMinutes:[ \t]*[0-9]+[ \t]*(?:#.*)?$")


def _edited(doc: str, want: dict) -> str | None:
    """``doc`` with its lines edited into ``want`` (the apiVersion line; ``cohort:`` to ``cohortName:``;
    a ``retryDelayMinutes:`` line dropped; ``Borrow``/``Preempt`` to ``MayStopSearch``), when that is all it takes: the edit is parsed again and kept only if
    it reads as ``want``, comments and layout as written. None otherwise."""
    lines = doc.splitlines(keepends=True)
    found = False
    for i, line in enumerate(lines):
        body, end = line.rstrip("\r\n"), line[len(line.rstrip("\r\n")) :]
        m = _API_VERSION_LINE.match(body)
        if m and not found:
            lines[i] = f"{m.group(1)}{m.group(2)}{TARGET}{m.group(2)}{m.group(3)}{end}"
            found = True
            continue
        r = _RENAMED_LINE.match(body)
        if r:
            lines[i] = f"{r.group('indent')}cohortName{r.group('rest')}{end}"
        elif _DROPPED_LINE.match(body):
            lines[i] = ""
        elif _OLD_VALUES.search(body):  # the deprecated Borrow/Preempt, as v1beta1 reads them
            lines[i] = _OLD_VALUES.sub(lambda v: f"{v.group(1) or v.group(3)}MayStopSearch", body) + end
    if not found:
        return None
    text = "".join(lines)
    try:
        return text if load_yaml(text) == want else None
    except ApiError:
        return None


def convert_text(text: str, source: str = "-") -> Converted:
    """A YAML stream (one or many documents) with each Kueue v1beta1 object converted to v1beta2 (see the module
    docstring). ``source`` names the input in notes and errors (a file name, ``-`` for stdin)."""
    result = Converted(text="")
    parts: list[str] = []
    chunks = _split(text)
    # the text before the first `---` is a document only when it holds more than comments
    skip = 0 if _content(chunks[0][1]) else 1
    for index, (sep, doc) in enumerate(chunks):
        number = index + 1 - skip
        try:  # the API server's decoder: duplicate keys refused, nesting and size bounded
            obj = load_yaml(doc)
            if obj is not None:
                check_decoded(obj)
        except ApiError as exc:
            where = re.sub(r"\s+in \"<unicode string>\",", " at", exc.message)  # the line is the document's
            raise InputError(where, source=f"{source}: document {number}") from None
        if not isinstance(obj, dict) or obj.get("apiVersion") != SOURCE:
            if obj is not None and not isinstance(obj, dict):
                raise InputError(
                    f"a document must be an object (a mapping), not {type(obj).__name__}",
                    source=f"{source}: document {number}",
                )
            parts.append(sep + doc)
            continue
        out, notes = convert_object(obj, source=source, document=number)
        result.converted += 1
        edited = _edited(doc, out)
        if edited is not None:
            parts.append(sep + edited)
            result.notes.extend(notes)
            continue
        body = yaml.safe_dump(out, sort_keys=False, default_flow_style=False, allow_unicode=True)
        if "#" in doc[len(_leading_comments(doc)) :]:
            notes.append(
                Note(
                    source,
                    number,
                    _what(obj),
                    "",
                    "its fields changed shape, so it is written anew: the comments inside it are not kept",
                )
            )
        parts.append(sep + _leading_comments(doc) + body)
        result.notes.extend(notes)
    result.text = "".join(parts)
    return result
