"""``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token``: the TokenRequest API (``kubectl create token``),
as kube-apiserver's ``TokenREST`` answers it.

The ServiceAccount must exist (404); the spec is defaulted (``audiences`` the cluster's issuer,
``expirationSeconds`` 3600) and checked (``ValidateTokenRequest``: 422 naming the field); a ``boundObjectRef``
(a Pod or Secret of the namespace) must exist (404) with the uid given, if one is (409). The answer (201) echoes
the defaulted spec and carries the signed token and its ``expirationTimestamp``. Nothing is stored. Must not
import domain packages.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from flexq.clock import format_time
from flexq.errors import BadRequest, Cause, Conflict, Invalid, NotFound
from flexq.semantics import satokens
from flexq.store import Store

__all__ = ["token_request"]

_PLURAL = {"Pod": "pods", "Secret": "secrets"}


def token_request(
    store: Store,
    namespace: str,
    name: str,
    sent: Any,
    signer: satokens.Signer,
    issuer: str,
    now: float,
) -> dict[str, Any]:
    """The TokenRequest answer for ServiceAccount ``namespace/name`` (``sent`` the decoded body, or None)."""
    sa = store.peek("ServiceAccount", name, namespace)
    if sa is None:
        raise NotFound(f'serviceaccounts "{name}" not found', kind="serviceaccounts", name=name)
    if sent is not None and not isinstance(sent, Mapping):
        raise BadRequest("the body of the request must be a TokenRequest object")
    given = sent.get("spec") if isinstance(sent, Mapping) else None
    spec: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {}
    if not spec.get("audiences"):
        spec["audiences"] = [issuer]
    if spec.get("expirationSeconds") in (None, 0):
        spec["expirationSeconds"] = satokens.DEFAULT_EXPIRATION
    spec.setdefault("boundObjectRef", None)
    problems = satokens.check_request(spec)
    if problems:
        causes = [Cause(f, r, m) for f, r, m in problems]
        raise Invalid(
            f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
            + ", ".join(f"{c.field}: {c.message}" for c in causes),
            kind="TokenRequest",
            group="authentication.k8s.io",
            name=name,
            causes=causes,
        )
    bound = None
    ref = spec.get("boundObjectRef")
    if isinstance(ref, Mapping):
        kind, ref_name = str(ref["kind"]), str(ref["name"])
        bound = store.peek(kind, ref_name, namespace)
        if bound is None:
            raise NotFound(f'{_PLURAL[kind]} "{ref_name}" not found', kind=_PLURAL[kind], name=ref_name)
        uid = bound["metadata"].get("uid", "")
        if ref.get("uid") and ref["uid"] != uid:
            raise Conflict(
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. The object "
                "might have been deleted and then recreated"
            )
        spec["boundObjectRef"] = {**ref, "apiVersion": "v1", "uid": uid}
    seconds = int(spec["expirationSeconds"])
    payload = satokens.claims(
        issuer=issuer,
        audiences=spec["audiences"],
        now=now,
        seconds=seconds,
        namespace=namespace,
        sa=sa,
        bound={**bound, "kind": spec["boundObjectRef"]["kind"]} if bound is not None else None,
        jti=str(uuid.uuid4()),
    )
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": format_time(now)},
        "spec": spec,
        "status": {"token": signer.sign(payload), "expirationTimestamp": format_time(int(now) + seconds)},
    }
