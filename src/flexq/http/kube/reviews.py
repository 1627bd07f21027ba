"""The review APIs kubectl's ``auth`` commands call: ``SelfSubjectAccessReview`` (``kubectl auth can-i``),
``SelfSubjectRulesReview`` (``kubectl auth can-i --list``) and ``SelfSubjectReview`` (``kubectl auth whoami``).

A served twin has one credential, its bearer token, and every authenticated request may do everything (the
API server's ``system:masters``), so every review says "allowed" and says why. These are create-only
virtual resources: nothing is stored. Bodies may come as JSON or as protobuf (kubectl's typed clients); the
answer is JSON either way and echoes the JSON request's spec. Pure; no flexq imports but ``flexq.errors``.
"""

from __future__ import annotations

from typing import Any

from flexq.errors import MethodNotAllowed

USER = {"username": "flexq-admin", "uid": "flexq-admin", "groups": ["system:masters", "system:authenticated"]}
REASON = "the twin's token is allowed everything (one credential, like system:masters)"

# path -> (apiVersion, kind); both versions kubectl may try for whoami
_PATHS: dict[str, tuple[str, str]] = {
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    ),
    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews": (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
    ),
    "/apis/authentication.k8s.io/v1/selfsubjectreviews": ("authentication.k8s.io/v1", "SelfSubjectReview"),
    "/apis/authentication.k8s.io/v1beta1/selfsubjectreviews": (
        "authentication.k8s.io/v1beta1",
        "SelfSubjectReview",
    ),
}


def handles(path: str) -> bool:
    return path.rstrip("/") in _PATHS


def review(method: str, path: str, sent: Any) -> dict[str, Any]:
    """The answer to a review ``POST`` of ``sent`` (the decoded JSON body; None when empty or protobuf)."""
    api_version, kind = _PATHS[path.rstrip("/")]
    if method != "POST":
        raise MethodNotAllowed(
            f"the server does not allow this method on the requested resource ({kind} is create-only)"
        )
    spec = sent.get("spec") if isinstance(sent, dict) and isinstance(sent.get("spec"), dict) else {}
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version, "metadata": {"creationTimestamp": None}}
    if kind == "SelfSubjectReview":
        out["status"] = {"userInfo": dict(USER)}
    elif kind == "SelfSubjectAccessReview":
        out["spec"] = spec
        out["status"] = {"allowed": True, "reason": REASON}
    else:
        out["spec"] = spec
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    return out
