"""The ``scale`` subresource (``kubectl scale``): an autoscaling/v1 ``Scale`` over an object's ``spec.replicas``.

Owns what kube-apiserver's ``ScaleREST`` of Deployments and ReplicaSets answers (``registry/apps/*/storage``):
``GET`` the Scale (``spec.replicas``; ``status.replicas`` and the selector as a string, ``metav1.
FormatLabelSelector``), ``PUT`` a Scale or ``PATCH`` one (merge, JSON, strategic: applied to the Scale, as the
API server applies it), which sets the object's ``spec.replicas`` with the Scale's ``resourceVersion`` as the
update's precondition; ``ValidateScale``'s refusal of a negative count. Translates only: the write is the
store's ordinary update (validation, admission, watch events). Must not import domain packages.
"""

from __future__ import annotations

from typing import Any

from flexq.errors import BadRequest, Cause, Invalid


def format_selector(selector: dict | None) -> str:
    """``metav1.FormatLabelSelector``: ``a=b,c in (d,e),!f``; ``<none>`` for none; empty for an empty one."""
    if selector is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), sorted(e.get("values") or [])
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(obj: dict) -> dict:
    """The autoscaling/v1 Scale of a stored Deployment or ReplicaSet."""
    m = obj["metadata"]
    meta = {
        k: m[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if m.get(k) is not None
    }
    spec = obj.get("spec") or {}
    status: dict[str, Any] = {"replicas": int((obj.get("status") or {}).get("replicas") or 0)}
    selector = format_selector(spec.get("selector"))
    if selector:
        status["selector"] = selector
    out_spec = {"replicas": spec["replicas"]} if spec.get("replicas") else {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": out_spec,
        "status": status,
    }


def replicas_of(scale: Any, name: str) -> tuple[int, str | None]:
    """The replica count a written Scale asks for and the resourceVersion it names (``ValidateScale``)."""
    if not isinstance(scale, dict):
        raise BadRequest(f"the body of the request must be a Scale object, not {type(scale).__name__}")
    if scale.get("kind") not in (None, "Scale"):
        raise BadRequest(f"the kind in the data ({scale['kind']}) does not match the expected kind (Scale)")
    spec = scale.get("spec") or {}
    raw = spec.get("replicas", 0) if isinstance(spec, dict) else 0
    if raw is None:
        raw = 0
    if isinstance(raw, bool) or not isinstance(raw, int) or not -(2**31) <= raw < 2**31:
        raise BadRequest(f"Scale.spec.replicas: {raw!r} is not an int32")
    if raw < 0:
        msg = f"Invalid value: {raw}: must be greater than or equal to 0"
        raise Invalid(
            f'Scale.autoscaling "{name}" is invalid: spec.replicas: {msg}',
            kind="Scale",
            name=name,
            causes=[Cause("spec.replicas", "FieldValueInvalid", msg)],
            group="autoscaling",
        )
    meta = scale.get("metadata") or {}
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return raw, (str(rv) if rv else None)
