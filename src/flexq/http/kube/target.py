"""What a resource request addresses: the kind its ``RequestInfo`` names in a cluster's store (``Target``), and
the 404 of a path that names none. Read by ``flexq.http.kube.rest`` (which resolves it) and
``flexq.http.kube.writes``. Must not import domain packages."""

from __future__ import annotations

import dataclasses

from flexq.api.registry import KindInfo
from flexq.errors import NotFound
from flexq.http.requestinfo import RequestInfo


def not_found_path() -> NotFound:
    return NotFound("the server could not find the requested resource")


@dataclasses.dataclass(frozen=True)
class Target:
    """What a resource request addresses in a cluster's store: its ``RequestInfo`` (the one parse of its path,
    which authorization read too) and the kind it names (``KubeFace.resolve``)."""

    info: RequestInfo
    kind: KindInfo

    @property
    def version(self) -> str:
        return self.info.api_version

    @property
    def verb(self) -> str:
        return self.info.verb

    @property
    def namespace(self) -> str | None:
        """The namespace the objects are in (None: a cluster-scoped kind, or every namespace)."""
        return (self.info.namespace or None) if self.kind.namespaced else None

    @property
    def name(self) -> str | None:
        """The object the path names (a list's ``metadata.name`` field selector names none: it filters)."""
        return None if self.info.name_from_selector else (self.info.name or None)

    @property
    def subresource(self) -> str | None:
        return self.info.subresource or None
