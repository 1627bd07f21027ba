"""Owner references as apimachinery reads them.

Owns: ``controller_owner`` (``metav1.GetControllerOf``: the one reference with ``controller: true``, else None —
never the first reference: an object with owners but no controller has no controller) and ``owned_by`` (whether
``obj`` has ``uid`` among its owner references, ``metav1.IsControlledBy`` when ``controller`` is set).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["controller_owner", "owned_by"]


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reference with ``controller: true`` in ``metadata.ownerReferences``, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: Mapping[str, Any], uid: str, *, controller: bool = False) -> bool:
    """Whether one of ``obj``'s owner references has ``uid`` (and, with ``controller``, is its controller)."""
    return any(
        r.get("uid") == uid and (r.get("controller") or not controller)
        for r in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )
