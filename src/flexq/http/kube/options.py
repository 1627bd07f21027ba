"""A request's options as the API server reads and checks them: ``PodLogOptions`` (``log_options``), a list's
``limit``/``continue``/selectors and its pages (``check_list_options``, ``decode_continue``, ``page``), a watch's
``resourceVersion`` and ``timeoutSeconds`` (``check_watch_version``, ``watch_timeout``), ``DeleteOptions``
(``check_delete_options``, ``delete_options``, ``default_propagation``), a write's ``dryRun`` (``dry_run``),
``fieldValidation`` (``field_validation``), ``fieldManager`` (``check_field_manager``,
``manager_from_user_agent``) and a patch's type by its content type (``PATCH_TYPES``). Pure functions of the
request's query and body; the verbs that use them are ``flexq.http.kube.rest``'s. Must not import domain
packages."""

from __future__ import annotations

import base64
import bisect
import dataclasses
import datetime as _dt
import json
import re
from typing import Any

from flexq.api.base import FIELD_MANAGER_MAX, field_manager_problems
from flexq.api.goquote import go_quote as goquote
from flexq.api.registry import KindInfo
from flexq.clock import parse_time
from flexq.errors import BadRequest, Cause, Invalid
from flexq.http.requestinfo import truthy

__all__ = [
    "LogOptions",
    "log_options",
    "log_timestamp",
    "decode_continue",
    "check_list_options",
    "page",
    "check_delete_options",
    "delete_options",
    "dry_run",
    "field_validation",
    "check_watch_version",
    "watch_timeout",
    "PATCH_TYPES",
    "OPTIONS_KIND",
    "check_field_manager",
    "manager_from_user_agent",
    "default_propagation",
]

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclasses.dataclass
class LogOptions:
    """A pod log request's ``PodLogOptions``, checked as ``ValidatePodLogOptions`` checks them."""

    tail: int | None = None
    limit: int | None = None
    since: float | None = None  # the earliest write time to show
    timestamps: bool = False


def _log_invalid(pod: str, field: str, reason: str, message: str) -> Invalid:
    return Invalid(
        f'PodLogOptions "{pod}" is invalid: ' + (f"{field}: {message}" if field else message),
        kind="PodLogOptions",
        name=pod,
        causes=[Cause(field, reason, message)],
    )


def _at_least(q: Any, key: str, minimum: int, pod: str) -> int | None:
    raw = q.get(key)
    if raw is None or raw == "":
        return None
    if not re.fullmatch(r"-?\d{1,18}", raw):
        raise BadRequest(f'{key}: Invalid value: "{raw}": must be an integer')
    value = int(raw)
    if value < minimum:
        bound = "greater than 0" if minimum == 1 else "greater than or equal to 0"
        raise _log_invalid(pod, key, "FieldValueInvalid", f"Invalid value: {value}: must be {bound}")
    return value


def log_options(q: Any, now: float, pod: str) -> LogOptions:
    """``tailLines``, ``limitBytes``, ``sinceSeconds``/``sinceTime`` and ``timestamps`` of a log request."""
    opts = LogOptions(
        tail=_at_least(q, "tailLines", 0, pod),
        limit=_at_least(q, "limitBytes", 1, pod),
        timestamps=truthy(q.get("timestamps")),
    )
    since_seconds = _at_least(q, "sinceSeconds", 1, pod)
    since_time = q.get("sinceTime")
    if since_seconds is not None and since_time:
        raise _log_invalid(
            pod,
            "",
            "FieldValueForbidden",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
        )
    if since_seconds is not None:
        opts.since = now - since_seconds
    elif since_time:
        try:
            opts.since = parse_time(since_time)
        except ValueError:
            raise BadRequest(f'sinceTime: Invalid value: "{since_time}": must be an RFC 3339 time') from None
    return opts


def log_timestamp(ts: float) -> str:
    """The kubelet's log timestamp (``2006-01-02T15:04:05.000000000Z07:00``)."""
    dt = _dt.datetime.fromtimestamp(ts, tz=_dt.UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond * 1000:09d}Z"


def _key(obj: dict) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]  # the store's list order


def decode_continue(token: str) -> tuple[int, str]:
    """``(resourceVersion, start key)`` of a ``continue`` token, or the API server's 400 (``storage.DecodeContinue``
    wrapped by ``ValidateListOptions``): ``invalid continue token: continue key is not valid: <why>``, the why
    in Go's words (base64's ``illegal base64 data at input byte N``, encoding/json's, or the token's own)."""

    def bad(why: str) -> BadRequest:
        return BadRequest(f"invalid continue token: continue key is not valid{': ' + why if why else ''}")

    good = _B64URL.match(token)
    end = good.end() if good else 0
    if end < len(token) or len(token) % 4 == 1:  # RawURLEncoding: no padding, no other character
        raise bad(f"illegal base64 data at input byte {end if end < len(token) else len(token) - 1}")
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise bad(
            "invalid character looking for beginning of value" if raw else "unexpected end of JSON input"
        ) from None
    if not isinstance(data, dict):
        raise bad(f"json: cannot unmarshal {_json_type(data)} into Go value of type storage.continueToken")
    for key, want, ok in (
        ("v", "string", lambda v: isinstance(v, str)),
        ("rv", "int64", lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63),
        ("start", "string", lambda v: isinstance(v, str)),
    ):
        if data.get(key) is not None and not ok(data[key]):
            raise bad(
                f"json: cannot unmarshal {_json_type(data[key])} into Go struct field continueToken.{key} of type {want}"
            )
    if data.get("v") != "meta.k8s.io/v1":
        raise bad("server does not recognize this encoded version")
    if not data.get("rv"):
        raise bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    start = str(data.get("start") or "").rstrip("\x00")
    if not start:
        raise bad("encoded start key empty (version meta.k8s.io/v1)")
    return int(data["rv"]), start


def _json_type(value: Any) -> str:
    """encoding/json's name for a JSON value's type in an UnmarshalTypeError."""
    return {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null"
    )


def check_list_options(q: Any) -> None:
    """``ValidateListOptions`` and the storage's parse of ``resourceVersion``: ``resourceVersionMatch`` is one of
    ``Exact``, ``NotOlderThan`` (422 on ``ListOptions``), and ``resourceVersion`` a uint64 (400)."""
    rv, match = q.get("resourceVersion"), q.get("resourceVersionMatch")
    causes = []
    if match:
        if not rv:
            causes.append(
                Cause(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if q.get("continue"):
            causes.append(
                Cause(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match == "Exact" and rv == "0":
            causes.append(
                Cause(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
        elif match not in ("Exact", "NotOlderThan"):
            causes.append(
                Cause(
                    "resourceVersionMatch",
                    "FieldValueNotSupported",
                    f'Unsupported value: {goquote(match)}: supported values: "Exact", "NotOlderThan", ""',
                )
            )
    if causes:
        parts = [f"{c.field}: {c.message}" for c in causes]
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        raise Invalid(
            f'ListOptions.meta.k8s.io "" is invalid: {joined}',
            kind="ListOptions",
            group="meta.k8s.io",
            causes=causes,
        )
    if rv not in (None, "", "0") and not (rv.isascii() and rv.isdigit() and int(rv) < 2**64):
        why = "value out of range" if rv.isascii() and rv.isdigit() else "invalid syntax"
        raise BadRequest(
            f"invalid resource version: resourceVersion: Invalid value: {goquote(rv)}: strconv.ParseUint: "
            f"parsing {goquote(rv)}: {why}"
        )


def page(
    objs: list[dict], rv: int, limit: str | None, token: str | None, selected: bool = False
) -> tuple[list[dict], int, dict[str, Any]]:
    """``limit`` and ``continue`` of a list, as the API server pages one (objects in key order).

    The token is the API server's (base64 of ``{"v": "meta.k8s.io/v1", "rv": N, "start": "<key>\\x00"}``);
    a continued list reports the first page's resourceVersion. ``remainingItemCount`` is only given
    without selectors, as the API server does. The pages show the objects as they are when each is
    asked for (the API server reads etcd at the first page's revision; this store keeps no history).
    """
    start = ""
    if token:
        rv, start = decode_continue(token)
        ns, _, name = start.rpartition("/")
        # the objects are in key order: the page starts after the token's key (a binary search, so paging
        # through a big list costs each page its own size, not the whole list again)
        objs = objs[bisect.bisect_right(objs, (ns, name), key=_key) :]
    n = 0
    if limit not in (None, ""):
        if not limit.isdigit():
            raise BadRequest(f"invalid limit: {limit!r}")
        n = int(limit)
    if n <= 0 or len(objs) <= n:
        return objs, rv, {}
    shown, rest = objs[:n], len(objs) - n
    ns, name = _key(shown[-1])
    raw = json.dumps(
        {"v": "meta.k8s.io/v1", "rv": rv, "start": (f"{ns}/{name}" if ns else name) + "\x00"},
        separators=(",", ":"),
    )
    paging: dict[str, Any] = {"continue": base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")}
    if not selected:
        paging["remainingItemCount"] = rest
    return shown, rv, paging


def check_delete_options(opts: dict) -> None:
    """DeleteOptions' fields have their JSON types (400 as the API server's decoder answers otherwise)."""

    def wrong(field: str, value: Any, want: str) -> BadRequest:
        got = {
            bool: "bool",
            int: "number",
            float: "number",
            str: "string",
            list: "array",
            dict: "object",
        }.get(type(value), type(value).__name__)
        return BadRequest(
            f"json: cannot unmarshal {got} into Go struct field DeleteOptions.{field} of type {want}"
        )

    dry = opts.get("dryRun")
    if dry is not None and (not isinstance(dry, list) or not all(isinstance(v, str) for v in dry)):
        raise wrong("dryRun", dry, "[]string")
    for key in ("propagationPolicy",):
        if opts.get(key) is not None and not isinstance(opts[key], str):
            raise wrong(key, opts[key], "v1.DeletionPropagation")
    if opts.get("orphanDependents") is not None and not isinstance(opts["orphanDependents"], bool):
        raise wrong("orphanDependents", opts["orphanDependents"], "bool")
    grace = opts.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise wrong("gracePeriodSeconds", grace, "int64")
    pre = opts.get("preconditions")
    if pre is not None:
        if not isinstance(pre, dict):
            raise wrong("preconditions", pre, "v1.Preconditions")
        for key in ("uid", "resourceVersion"):
            if pre.get(key) is not None and not isinstance(pre[key], str):
                raise wrong(f"preconditions.{key}", pre[key], "string")


def delete_options(opts: dict, q: Any) -> dict:
    """DeleteOptions (``opts``: the body's, checked) with the query's ``propagationPolicy`` and
    ``orphanDependents`` (an orphaning delete) folded in; 400 for a policy the API server does not know."""
    if q.get("propagationPolicy"):
        opts["propagationPolicy"] = q["propagationPolicy"]
    if opts.get("propagationPolicy") not in (None, "Background", "Foreground", "Orphan"):
        raise BadRequest(
            f"propagationPolicy: Unsupported value: {opts['propagationPolicy']!r}: supported "
            'values: "Foreground", "Background", "Orphan"'
        )
    if truthy(q.get("orphanDependents")) or opts.get("orphanDependents"):
        opts["propagationPolicy"] = "Orphan"
    return opts


def dry_run(q: Any, body: Any = None) -> bool:
    """Whether a write is a dry run: the query's ``dryRun`` values and DeleteOptions' (``body``), each ``All``."""
    vals = q.getlist("dryRun")
    if isinstance(body, dict) and body.get("dryRun"):
        vals += list(body["dryRun"])  # a list of strings (check_delete_options)
    for v in vals:
        if v != "All":
            raise BadRequest(f'Invalid dryRun value: "{v}": supported values: "All"')
    return bool(vals)


def field_validation(q: Any) -> str:
    """A write's ``fieldValidation``: Strict, Warn (the default) or Ignore."""
    mode = q.get("fieldValidation", "Warn") or "Warn"
    if mode not in ("Strict", "Warn", "Ignore"):
        raise BadRequest(f"fieldValidation must be one of Ignore, Warn, or Strict, got {mode!r}")
    return mode


def check_watch_version(rv: str | None) -> None:
    """A watch's ``resourceVersion``: a uint64, as the API server parses it (ASCII digits only: str.isdigit()
    also takes "²" and "١")."""
    if rv and not (rv.isascii() and rv.isdigit() and int(rv) < 2**64):
        raise BadRequest(f'invalid resource version: "{rv}"')


def watch_timeout(raw: str | None, default: float) -> float:
    """A watch's ``timeoutSeconds`` (a non-negative integer; absent or 0: ``default``)."""
    if raw and not re.fullmatch(r"[0-9]{1,18}", raw):
        raise BadRequest(f'timeoutSeconds: Invalid value: "{raw}": must be a non-negative integer')
    return float(int(raw) if raw else default) or default


PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}

OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}
# (HTTP method, RequestInfo verb) -> the operation that serves it


def check_field_manager(manager: str | None, options: str) -> None:
    """apimachinery's ValidateFieldManager on a request's ``fieldManager`` (it is recorded in ``managedFields``
    and compared by later applies); 422 on the request's options otherwise."""
    causes = [Cause("fieldManager", kind, msg) for kind, msg in field_manager_problems(manager or "")]
    if causes:
        parts = [f"{c.field}: {c.message}" for c in causes]
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        raise Invalid(
            f'{options}.meta.k8s.io "" is invalid: {joined}', kind=options, group="meta.k8s.io", causes=causes
        )


def manager_from_user_agent(agent: str) -> str:
    """The API server's prefixFromUserAgent: up to the first ``/``, printable characters only, at most 128
    bytes (a valid field manager whatever the client sends)."""
    out, size = [], 0
    for ch in agent.split("/")[0]:
        if not ch.isprintable():
            continue
        size += len(ch.encode())
        if size > FIELD_MANAGER_MAX:
            break
        out.append(ch)
    return "".join(out)


def default_propagation(info: KindInfo) -> str:
    """The deletion policy when a request names none (the registry strategy's
    ``DefaultGarbageCollectionPolicy``): a batch/v1 Job orphans its pods, for backward compatibility (which is
    why kubectl always sends ``Background``); everything else deletes its dependents in the background."""
    return "Orphan" if (info.group, info.kind) == ("batch", "Job") else "Background"
