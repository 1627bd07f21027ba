"""Kubernetes REST paths -> what they address.

Owns: ``Target`` (group, version, namespace, resource, name, subresource, legacy ``/watch/`` prefix) and
``parse``: ``/api/v1/namespaces/default/pods/x/log``, ``/apis/kueue.x-k8s.io/v1beta1/clusterqueues``,
``/api/v1/namespaces/x/status``, ``/api/v1/watch/namespaces/default/pods``. Pure; no flexq imports.
"""

from __future__ import annotations

from dataclasses import dataclass

_NAMESPACE_SUBS = {"status", "finalize"}


@dataclass(frozen=True)
class Target:
    """One resource path, parsed."""

    group: str
    version: str
    resource: str = ""  # plural; "" for the group/version discovery document
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    watch_prefix: bool = False

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def parse(path: str) -> Target | None:
    """None when ``path`` is not under ``/api/v1`` or ``/apis/<group>/<version>``."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch = False
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    if not rest:
        return None if watch else Target(group, version)
    ns = None
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBS and group == "")
    ):
        ns, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return Target(
        group,
        version,
        rest[0],
        ns,
        rest[1] if len(rest) > 1 else None,
        rest[2] if len(rest) > 2 else None,
        watch,
    )
