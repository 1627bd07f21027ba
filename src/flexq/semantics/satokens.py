"""ServiceAccount tokens as the API server issues and checks them: signed JWTs bound to a ServiceAccount (and
optionally a Pod or Secret), after upstream's ``pkg/serviceaccount`` (``Claims``, ``validator.Validate``,
``JWTTokenGenerator``/``JWTTokenAuthenticator``) and the TokenRequest REST storage.

Owns:
- ``new_signing_key`` (an ECDSA P-256 key, PEM: the ``--service-account-signing-key-file``) and ``Signer``
  (``ES256``, with upstream's key id: the base64url SHA-256 of the public key's DER).
- ``issuer_for`` (GKE's issuer URL for a GKE cluster, ``https://kubernetes.default.svc.cluster.local`` for the
  twin's own), ``claims`` (``sub``, ``aud``, ``iat``, ``nbf``, ``exp``, ``jti``, the ``kubernetes.io`` claim
  with the namespace, the ServiceAccount's and the bound object's name and uid, ``warnafter`` for the
  projected tokens' 3607 s) and ``check_request`` (``ValidateTokenRequest``: at least 10 minutes, at most
  2^32 seconds; a bound object of kind Pod or Secret, of ``v1``).
- ``Signer.verify``: the signature (ES256 only, this key only), then ``validate_claims`` (issuer, audience,
  expiry and not-before with go-jose's minute of leeway) — what the authenticator answers 401 on; the objects
  the token names are checked by the caller against its store (``bound_objects_valid``: the ServiceAccount, and
  the bound Pod or Secret, still there with the same uid and not deleted), and ``user_for`` is the user.

Pure: imports only ``flexq.clock``, ``flexq.semantics`` and ``cryptography``; ``now`` is always an argument.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from flexq.clock import parse_time
from flexq.semantics.rbac import UserInfo, sa_groups, sa_username

__all__ = [
    "DEFAULT_ISSUER",
    "PROJECTED_EXPIRATION",
    "Signer",
    "bound_objects_valid",
    "check_request",
    "claims",
    "issuer_for",
    "new_signing_key",
    "user_for",
    "validate_claims",
]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEEWAY = 60.0  # go-jose's jwt.DefaultLeeway
MIN_EXPIRATION = 600  # ValidateTokenRequest: "may not specify a duration less than 10 minutes"
MAX_EXPIRATION = 1 << 32
DEFAULT_EXPIRATION = 3600  # SetDefaults_TokenRequestSpec
PROJECTED_EXPIRATION = 3607  # the kube-api-access volume's (WarnOnlyBoundTokenExpirationSeconds)
MAX_TOKEN = 16 * 1024  # a bearer token longer than this is not one the twin issued
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_signing_key() -> bytes:
    """A fresh ECDSA P-256 private key in PKCS#8 PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def issuer_for(project: str, location: str, cluster: str) -> str:
    """GKE's service-account issuer of a cluster; the in-cluster default for the twin's own cluster."""
    if project and location and cluster:
        return (
            f"https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{cluster}"
        )
    return DEFAULT_ISSUER


class Signer:
    """Signs and verifies ``ES256`` JWTs with one key (the API server's service-account key)."""

    def __init__(self, pem: bytes) -> None:
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the service-account signing key must be an ECDSA key")
        self._key = key
        self._public = key.public_key()
        der = self._public.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.key_id = _b64(hashlib.sha256(der).digest())

    def sign(self, payload: Mapping[str, Any]) -> str:
        header = {"alg": "ES256", "kid": self.key_id}
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(payload, separators=(",", ":")).encode())
        )
        der = self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return signing_input + "." + _b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def verify(self, token: str) -> dict[str, Any] | None:
        """The claims of a token this key signed (``ES256``, this key id), else None."""
        if len(token) > MAX_TOKEN or token.count(".") != 2:
            return None
        head, body, sig = token.split(".")
        try:
            header = json.loads(_unb64(head))
            raw_sig = _unb64(sig)
            if not isinstance(header, dict) or header.get("alg") != "ES256" or len(raw_sig) != 64:
                return None
            if header.get("kid") not in (None, self.key_id):
                return None
            der = encode_dss_signature(
                int.from_bytes(raw_sig[:32], "big"), int.from_bytes(raw_sig[32:], "big")
            )
            self._public.verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
            payload = json.loads(_unb64(body))
        except (ValueError, InvalidSignature, UnicodeDecodeError):
            return None
        return payload if isinstance(payload, dict) else None

    def jwks(self) -> dict[str, Any]:
        """The public key as ``/openid/v1/jwks`` serves it."""
        numbers = self._public.public_numbers()
        return {
            "keys": [
                {
                    "use": "sig",
                    "kty": "EC",
                    "kid": self.key_id,
                    "crv": "P-256",
                    "alg": "ES256",
                    "x": _b64(numbers.x.to_bytes(32, "big")),
                    "y": _b64(numbers.y.to_bytes(32, "big")),
                }
            ]
        }


def check_request(spec: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``ValidateTokenRequest`` on a (defaulted) TokenRequest spec: (field, reason, message) per problem."""
    out: list[tuple[str, str, str]] = []
    seconds = spec.get("expirationSeconds")
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        out.append(
            ("spec.expirationSeconds", "FieldValueInvalid", f"Invalid value: {seconds!r}: must be an integer")
        )
    elif seconds < MIN_EXPIRATION:
        out.append(
            (
                "spec.expirationSeconds",
                "FieldValueInvalid",
                f"Invalid value: {seconds}: may not specify a duration less than 10 minutes",
            )
        )
    elif seconds > MAX_EXPIRATION:
        out.append(
            (
                "spec.expirationSeconds",
                "FieldValueTooLong",
                f"Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds",
            )
        )
    auds = spec.get("audiences")
    if not isinstance(auds, list) or not all(isinstance(a, str) for a in auds):
        out.append(("spec.audiences", "FieldValueInvalid", "Invalid value: must be a list of strings"))
    ref = spec.get("boundObjectRef")
    if ref is not None:
        if not isinstance(ref, Mapping):
            out.append(("spec.boundObjectRef", "FieldValueInvalid", "Invalid value: must be an object"))
        elif ref.get("kind") not in ("Pod", "Secret"):
            out.append(
                (
                    "spec.boundObjectRef.kind",
                    "FieldValueNotSupported",
                    f'Unsupported value: "{ref.get("kind")}": supported values: "Pod", "Secret"',
                )
            )
        elif ref.get("apiVersion") not in ("v1", None, ""):
            out.append(
                (
                    "spec.boundObjectRef.apiVersion",
                    "FieldValueNotSupported",
                    f'Unsupported value: "{ref.get("apiVersion")}": supported values: "v1"',
                )
            )
        elif not ref.get("name"):
            out.append(("spec.boundObjectRef.name", "FieldValueRequired", "Required value"))
    return out


def claims(
    *,
    issuer: str,
    audiences: Sequence[str],
    now: float,
    seconds: int,
    namespace: str,
    sa: Mapping[str, Any],
    bound: Mapping[str, Any] | None = None,
    jti: str,
    warn_after: int | None = None,
) -> dict[str, Any]:
    """The claims of one token (``serviceaccount.Claims``); ``sa`` and ``bound`` are the stored objects."""
    issued = int(now)
    k8s: dict[str, Any] = {
        "namespace": namespace,
        "serviceaccount": {"name": sa["metadata"]["name"], "uid": sa["metadata"].get("uid", "")},
    }
    if bound is not None:
        key = "pod" if bound.get("kind") == "Pod" else "secret"
        k8s[key] = {"name": bound["metadata"]["name"], "uid": bound["metadata"].get("uid", "")}
    if warn_after:
        k8s["warnafter"] = issued + warn_after
    return {
        "aud": list(audiences),
        "exp": issued + seconds,
        "iat": issued,
        "iss": issuer,
        "jti": jti,
        "kubernetes.io": k8s,
        "nbf": issued,
        "sub": sa_username(namespace, sa["metadata"]["name"]),
    }


def validate_claims(
    payload: Mapping[str, Any], now: float, issuer: str, audiences: Sequence[str]
) -> str | None:
    """None when the claims are this cluster's and current, else why not (the authenticator's log reason)."""
    if payload.get("iss") != issuer:
        return "token issuer is not this cluster's"
    aud = payload.get("aud")
    aud = [aud] if isinstance(aud, str) else aud
    if not isinstance(aud, list) or not set(aud) & set(audiences):
        return "token audiences do not include this API server"
    exp, nbf = payload.get("exp"), payload.get("nbf")
    if not isinstance(exp, int | float) or now > exp + LEEWAY:
        return "service account token has expired"
    if isinstance(nbf, int | float) and now + LEEWAY < nbf:
        return "service account token is not valid yet"
    k8s = payload.get("kubernetes.io")
    if not isinstance(k8s, Mapping) or not isinstance(k8s.get("serviceaccount"), Mapping):
        return "token has no kubernetes.io claim"
    return None


def bound_objects_valid(
    payload: Mapping[str, Any], now: float, get: Callable[[str, str, str], Any]
) -> str | None:
    """``validator.Validate``'s object checks: the ServiceAccount (and bound Pod or Secret) still exist with the
    uid the token names and were not deleted before now minus the leeway. ``get(kind, name, namespace)``
    returns the stored object or None; None when valid, else why not."""
    k8s = payload["kubernetes.io"]
    ns = k8s.get("namespace") or ""
    sa_ref = k8s["serviceaccount"]
    for kind, ref in (("ServiceAccount", sa_ref), ("Pod", k8s.get("pod")), ("Secret", k8s.get("secret"))):
        if ref is None:
            continue
        if not isinstance(ref, Mapping):
            return f"bad {kind} reference"
        obj = get(kind, str(ref.get("name") or ""), ns)
        if obj is None:
            return "service account token has been invalidated"
        md = obj.get("metadata") or {}
        deleted = md.get("deletionTimestamp")
        if deleted is not None and parse_time(deleted) < now - LEEWAY:
            return "service account token has been invalidated"
        if md.get("uid") != ref.get("uid"):
            return f"{kind} UID ({md.get('uid')}) does not match claim ({ref.get('uid')})"
    return None


def user_for(payload: Mapping[str, Any]) -> UserInfo:
    """The user a valid token authenticates (``ServiceAccountInfo.UserInfo``, with ``system:authenticated``)."""
    k8s = payload["kubernetes.io"]
    ns = k8s.get("namespace") or ""
    sa = k8s["serviceaccount"]
    extra: dict[str, tuple[str, ...]] = {}
    pod = k8s.get("pod")
    if isinstance(pod, Mapping):
        extra[EXTRA_POD_NAME] = (str(pod.get("name", "")),)
        extra[EXTRA_POD_UID] = (str(pod.get("uid", "")),)
    if payload.get("jti"):
        extra[EXTRA_CREDENTIAL_ID] = (f"JTI={payload['jti']}",)
    return UserInfo(
        sa_username(ns, str(sa.get("name", ""))),
        uid=str(sa.get("uid", "")),
        groups=(*sa_groups(ns), "system:authenticated"),
        extra=extra,
    )
