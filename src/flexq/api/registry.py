"""Which kinds exist, how they are named, and which model validates each served version.

Owns: ``KindInfo`` (group, kind, plural, singular, short names, scope, served versions, storage version,
per-version models and converters, printer columns), ``Registry`` with kubectl-style name resolution
(``cq``, ``clusterqueues``, ``ClusterQueue``, ``clusterqueue.kueue.x-k8s.io``, ``workloads.v1beta1.kueue.x-k8s.io``).
The default registry is built by ``flexq.api.kinds``. No behaviour. Must not import outside ``flexq.api``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from pydantic import BaseModel

from flexq.errors import Cause, NotFound

Converter = Callable[[dict], dict]
Validator = Callable[[dict, "dict | None"], list[Cause]]
Converter2 = Callable[[dict, "dict | None"], dict]


class ObjectReader(Protocol):
    """What an admission plugin may read of the cluster's other objects (``flexq.store.Store`` is one):
    stored objects themselves, read-only."""

    def peek(self, kind: str, name: str, namespace: str | None = None) -> dict | None: ...

    def peek_indexed(self, kind: str, index: str, value: str) -> list[dict]: ...


# a built-in admission plugin that reads other objects (the Priority plugin): (operation "CREATE" | "UPDATE" |
# "DELETE", the object (created or updated, or the one deleted), the old one, a reader, the name the request
# names the object by (a generateName before its name is made)); it may change the object on CREATE and
# raises an ``ApiError`` (Forbidden) to refuse the request
Admission = Callable[[str, dict, "dict | None", ObjectReader, str], None]


# API groups kube-apiserver compiles in (served by go-restful web services: a method a path has no route for is
# 405); every other group the twin serves is a CustomResourceDefinition's (served by apiextensions-apiserver)
COMPILED_IN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "coordination.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "apiextensions.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
    }
)


def _identity(obj: dict) -> dict:
    return obj


@dataclass
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry (what ``kubectl get`` shows)."""

    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str = ""


@dataclass
class KindInfo:
    """Everything the store and the faces need to know about one kind."""

    group: str
    kind: str
    plural: str
    models: dict[str, type[BaseModel]]  # served version -> model (first is the preferred version)
    storage: str = ""
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = True
    scale_subresource: bool = False  # serves ``/scale`` (autoscaling/v1 Scale over ``spec.replicas``)
    generation: bool = True  # metadata.generation kept (CRDs, Pods, Jobs, PodTemplates); not for ConfigMaps,
    # Services, Namespaces, Nodes, Events, whose registry strategies never set it
    to_storage: dict[str, Converter] = field(default_factory=dict)
    from_storage: dict[str, Converter] = field(default_factory=dict)
    validate: Validator | None = None  # semantic checks needing the old object (immutability etc.)
    mutate: Converter2 | None = None  # mutating admission (e.g. Kueue's suspend-on-create webhook)
    prepare_create: Callable[[dict], None] | None = None  # the API server's own defaulting once uid is known
    # a built-in kind whose defaulters fill the raw object in place: what validation changes beyond them in a
    # valid object (canonical quantities), done in place; with it a controller's object is validated and kept
    # as defaulted, not re-serialised from the model (``scheme.BUILT``)
    canonical: Callable[[dict], None] | None = None
    admission: Admission | None = None  # built-in admission reading other objects, on every write path
    printer_columns: list[PrinterColumn] = field(default_factory=list)
    name_rule: str = "subdomain"  # metadata.name: "subdomain" (most kinds), "label" (Namespace, Service)
    # or "path" (RBAC kinds: any path segment)
    served_by_addon: str = ""  # e.g. "RayOperator": only served when the cluster has that addon
    # versions the kind's CustomResourceDefinition lists with ``served: false`` (Kueue 0.20's v1beta1): not
    # served anywhere (discovery, REST, OpenAPI go by ``models``), only shown in ``kubectl get crd -o yaml``
    unserved: dict[str, type[BaseModel]] = field(default_factory=dict)  # version -> its model
    # paths of subtrees that repeat across objects and no write changes in place (a Workload's pod sets): the
    # store keeps each distinct one once (``flexq.store.shared``)
    shared: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.storage:
            self.storage = next(iter(self.models))

    @property
    def custom(self) -> bool:
        """A custom resource: its group is a CustomResourceDefinition's, not compiled into the API server."""
        return self.group not in COMPILED_IN_GROUPS

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def versions(self) -> list[str]:
        return list(self.models)

    @property
    def preferred_version(self) -> str:
        return next(iter(self.models))

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage
        return f"{self.group}/{v}" if self.group else v

    @cached_property
    def storage_api_version(self) -> str:
        """(Kept once asked: a KindInfo is not changed once registered; the store asks on every write.)"""
        return self.api_version(self.storage)

    def convert_to_storage(self, version: str, obj: dict) -> dict:
        return self.to_storage.get(version, _identity)(obj)

    def convert_from_storage(self, version: str, obj: dict) -> dict:
        return self.from_storage.get(version, _identity)(obj)

    @cached_property
    def key(self) -> str:
        """Stable identifier used by the store: ``<plural>.<group>`` (``pods`` for core). Kept once asked (the
        store and the watch fan-out ask on every write)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        g, v = api_version.split("/", 1)
        return g, v
    return "", api_version


class Registry:
    """Kinds by every name kubectl accepts."""

    def __init__(self, kinds: Iterable[KindInfo] = ()) -> None:
        self._kinds: list[KindInfo] = []
        self._by_key: dict[str, KindInfo] = {}
        self._names: dict[str, list[KindInfo]] = {}
        # (apiVersion, kind) -> the kind, found once: every trusted write asks
        self._gvks: dict[tuple[str, str], KindInfo] = {}
        for k in kinds:
            self.register(k)

    def register(self, info: KindInfo) -> None:
        self._kinds.append(info)
        self._gvks.clear()
        self._by_key[info.key] = info
        names = {info.kind, info.kind.lower(), info.plural, info.singular, *info.short_names}
        for n in names:
            self._names.setdefault(n, []).append(info)
            if info.group:
                self._names.setdefault(f"{n}.{info.group}", []).append(info)
                for v in info.versions:
                    self._names.setdefault(f"{n}.{v}.{info.group}", []).append(info)

    def __iter__(self) -> Iterator[KindInfo]:
        return iter(self._kinds)

    def resolve(self, name: str) -> KindInfo:
        """A kind by kind name, plural, singular, short name, or any of those with ``.group``."""
        found = self._names.get(name) or self._names.get(name.lower())
        if not found:
            raise NotFound(f'the server doesn\'t have a resource type "{name}"')
        # prefer the core/kueue kinds over others sharing a short name, as kubectl's priority does
        return found[0]

    def by_key(self, key: str) -> KindInfo:
        return self._by_key[key]

    def by_gvk(self, api_version: str, kind: str) -> KindInfo:
        found = self._gvks.get((api_version, kind))
        if found is None:
            found = self._gvks[(api_version, kind)] = self._by_gvk(api_version, kind)
        return found

    def _by_gvk(self, api_version: str, kind: str) -> KindInfo:
        group, version = split_api_version(api_version)
        for info in self._names.get(kind, []):
            if info.group == group and info.kind == kind:
                if version not in info.models:
                    raise NotFound(f'no matches for kind "{kind}" in version "{api_version}"')
                return info
        raise NotFound(f'no matches for kind "{kind}" in version "{api_version}"')

    def by_plural(self, group: str, plural: str) -> KindInfo | None:
        return self._by_key.get(f"{plural}.{group}" if group else plural)
