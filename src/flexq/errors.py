"""The exception tree. Every error knows its HTTP status and Kubernetes ``reason``.

    FlexqError
     +-- ApiError (status, reason; renders as a Kubernetes ``Status``)
     |    +-- BadRequest (400, BadRequest)
     |    +-- Unauthorized (401) / Forbidden (403)
     |    +-- NotFound (404)
     |    +-- MethodNotAllowed (405)
     |    +-- AlreadyExists (409) / Conflict (409)
     |    +-- Gone (410, Expired: watch resourceVersion too old)
     |    +-- RequestEntityTooLarge (413)
     |    +-- UnsupportedMediaType (415)
     |    +-- Invalid (422, with field causes)
     |    +-- AdmissionDenied (a validating admission webhook's refusal: its code and reason)
     |    +-- InternalError (500)
     |    +-- ServiceUnavailable (503)
     +-- CloudError (GKE-shaped: HTTP code + Google status string)
     +-- InputError (a tool's bad input file: names the file, line and field)
     +-- MissingExtra (an optional part of flexq that is not installed: names the pip extra)
     +-- Livelock (controllers kept waking each other without the virtual clock moving)

Must not import anything from flexq.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def visible(text: str) -> str:
    """``text`` with every control or format character but the newline escaped as Go's ``%q`` escapes it
    (``\x1b``, ``\u202e``): what a message carries of its input never reaches a terminal raw, whatever path
    built it (the values it quotes are quoted as ``%q`` already: ``flexq.api.goquote``)."""
    if text.isprintable() or all(c == "\n" or c.isprintable() for c in text):
        return text
    out = []
    for c in text:
        if c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(c)
        elif c in _GO_ESCAPES:
            out.append(_GO_ESCAPES[c])
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out)


class FlexqError(Exception):
    """Base of all flexq errors."""


@dataclass(frozen=True)
class Cause:
    """One field problem, as in ``Status.details.causes[]``."""

    field: str
    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueDuplicate, ...
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": visible(self.message), "field": visible(self.field)}


class ApiError(FlexqError):
    """An error the Kubernetes API would return."""

    status = 500
    reason = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        kind: str = "",
        name: str = "",
        group: str = "",
        causes: list[Cause] | None = None,
        retry_after: int | None = None,
    ) -> None:
        message = visible(message)
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name
        self.group = group
        self.causes = causes or []
        self.retry_after = retry_after

    def to_status(self) -> dict[str, Any]:
        """The ``Status`` object the API server would send."""
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status,
        }
        if details:
            out["details"] = details
        return out


class BadRequest(ApiError):
    status, reason = 400, "BadRequest"


class Unauthorized(ApiError):
    status, reason = 401, "Unauthorized"


class Forbidden(ApiError):
    status, reason = 403, "Forbidden"


class NotFound(ApiError):
    status, reason = 404, "NotFound"


class MethodNotAllowed(ApiError):
    status, reason = 405, "MethodNotAllowed"


class AlreadyExists(ApiError):
    status, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    status, reason = 409, "Conflict"


class Gone(ApiError):
    status, reason = 410, "Expired"


class RequestEntityTooLarge(ApiError):
    status, reason = 413, "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    status, reason = 415, "UnsupportedMediaType"


class Invalid(ApiError):
    status, reason = 422, "Invalid"


class InternalError(ApiError):
    status, reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    status, reason = 503, "ServiceUnavailable"


class AdmissionDenied(ApiError):
    """A validating admission webhook refused the request, as the API server reports it
    (``webhookerrors.ToStatusErr``): 'admission webhook "<name>" denied the request: <message>', with the code
    and reason the webhook answered (a code under 400 becomes 400)."""

    def __init__(self, webhook: str, message: str, *, status: int = 400, reason: str = "") -> None:
        super().__init__(f'admission webhook "{webhook}" denied the request: {message}')
        self.webhook = webhook
        self.status = max(400, status)
        self.reason = reason

    def to_status(self) -> dict[str, Any]:
        out = super().to_status()
        if not self.reason:  # metav1.Status reason is omitempty
            out.pop("reason")
        return out


class CloudError(FlexqError):
    """A Google Cloud API error: ``{"error": {"code", "message", "status"}}``."""

    def __init__(self, code: int, status: str, message: str) -> None:
        message = visible(message)
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "status": self.status}}


class InputError(FlexqError):
    """Bad input to a tool (``flexq simulate``): names the file, the line or document, and the field."""

    def __init__(self, message: str, *, source: str = "", line: int | None = None, field: str = "") -> None:
        where = source
        if line is not None:
            where += f":{line}" if where else f"line {line}"
        if field:
            where += f" ({field})" if where else field
        message, where = visible(message), visible(where)
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.source = source
        self.line = line
        self.field = field


# What each optional part of flexq needs and which pip extra installs it (pyproject.toml's
# [project.optional-dependencies]); the core install has none of them.
EXTRAS: dict[str, tuple[str, ...]] = {
    "ray": ("ray", "jax"),  # the local Ray executor (real training), flexq simulate --ray-address
    "plots": ("matplotlib",),  # flexq simulate's PNG plots and report.html
}


class MissingExtra(FlexqError):
    """An optional part of flexq is used but its packages are not installed: says which extra to install."""

    def __init__(self, extra: str, purpose: str, missing: str) -> None:
        super().__init__(
            f"{purpose} needs {missing}, which this install of flexq does not have: "
            f"pip install 'flexq[{extra}]' (from a checkout: pip install -e '.[{extra}]')"
        )
        self.extra = extra
        self.purpose = purpose
        self.missing = missing


def missing_of(extra: str) -> str | None:
    """The first module of ``extra`` (``EXTRAS``) that cannot be imported here, or None when all can."""
    from importlib.util import find_spec

    for module in EXTRAS[extra]:
        try:
            if find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a broken or half-removed install
            return module
    return None


def require_extra(extra: str, purpose: str) -> None:
    """Raise ``MissingExtra`` when a module of ``extra`` is not installed (checked without importing it)."""
    missing = missing_of(extra)
    if missing is not None:
        raise MissingExtra(extra, purpose, missing)


class SharedObjectChanged(AssertionError):
    """A stored object handed out read-only (``Store.peek``, ``peek_list``, a watch event) was changed in place.
    Only with the store's ``check_readonly`` (a test setting): raised out of the event loop, as ``Livelock`` is,
    naming the reconcile that did it."""


class InvalidWrite(AssertionError):
    """A trusted write (a controller's: the store does not admit it) that admission refuses. Only with the
    store's ``check_writes`` (a test setting): raised out of the event loop, as ``SharedObjectChanged`` is,
    naming the reconcile that wrote it and admission's causes."""


class Livelock(FlexqError):
    """Controllers kept rescheduling each other at one virtual instant without the store settling.

    Raised out of the event loop (``Twin.advance``, ``run_until_idle``, a ``flexq simulate`` run) by the
    runtime's livelock guard; ``offenders`` are ``(controller, key, reconciles)`` of the busy period it saw."""

    def __init__(self, message: str, offenders: list[tuple[str, str, int]], at: float) -> None:
        super().__init__(message)
        self.message = message
        self.offenders = offenders
        self.at = at

    def __reduce__(self) -> tuple:  # back from a worker process of flexq simulate whole
        return (type(self), (self.message, self.offenders, self.at))
