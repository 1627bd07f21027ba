"""apiextensions.k8s.io/v1 CustomResourceDefinition, and the definitions of the custom resources the twin serves.

Owns the model (``apiextensions/v1/types.go``: group, names, scope and versions required; a name that is
``<plural>.<group>``), its KindInfo (``crd``, ``crds``; ``kubectl get crd`` prints NAME and CREATED AT as the
API server's default table convertor does), and ``definition(info)``: the CustomResourceDefinition a cluster
with Kueue, KubeRay and GKE's CRDs installed holds for one of the twin's custom kinds, built from its KindInfo
(names, scope, served and storage versions, the status subresource, printer columns) and a structural
``openAPIV3Schema`` per version made from the version's pydantic model. ``flexq.kube`` installs them (the
API server's apiextensions part); they describe what is served and change nothing that is served: a CRD written
or deleted by a client is stored as any object is, the kinds stay as they are.
No behaviour. Must not import outside ``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from flexq.api.base import Loose, Model, ObjectBase, field_error
from flexq.api.jsoncopy import clone
from flexq.api.registry import KindInfo

GROUP = "apiextensions.k8s.io"
KUEUE_GROUP = "kueue.x-k8s.io"
PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class Names(Model):
    """``CustomResourceDefinitionNames``."""

    plural: str = Field(min_length=1)
    singular: str | None = None
    short_names: list[str] | None = None
    kind: str = Field(min_length=1)
    list_kind: str | None = None
    categories: list[str] | None = None


class Version(Loose):
    """``CustomResourceDefinitionVersion`` (schema, subresources and columns kept as written)."""

    name: str = Field(min_length=1)
    served: bool
    storage: bool


class Spec(Loose):
    """``CustomResourceDefinitionSpec``."""

    group: str = Field(min_length=1)
    names: Names
    scope: Literal["Namespaced", "Cluster"]
    versions: list[Version] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_storage_version(self) -> Spec:
        if sum(1 for v in self.versions if v.storage) != 1:
            raise field_error(
                "versions", "Invalid value: must have exactly one version marked as storage version"
            )
        return self


class CustomResourceDefinition(ObjectBase):
    """A CustomResourceDefinition (cluster-scoped)."""

    spec: Spec
    status: Loose | None = None

    @model_validator(mode="after")
    def _name_is_plural_dot_group(self) -> CustomResourceDefinition:
        want = f"{self.spec.names.plural}.{self.spec.group}"
        if self.metadata.name and self.metadata.name != want:
            raise field_error(
                "metadata.name",
                f'Invalid value: "{self.metadata.name}": must be spec.names.plural+"."+spec.group',
            )
        return self


KINDS = [
    KindInfo(
        GROUP,
        "CustomResourceDefinition",
        "customresourcedefinitions",
        {"v1": CustomResourceDefinition},
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
    ),
]


# -- the definitions of the twin's custom kinds -------------------------------------------------------------
def _structural(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """pydantic's JSON schema as a structural OpenAPI v3 schema: references inlined, ``T | None`` as ``T``, a
    quantity as int-or-string, a model that keeps unknown fields as ``x-kubernetes-preserve-unknown-fields``."""
    if isinstance(node, list):
        return [_structural(x, defs, seen) for x in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in seen:  # a recursive type: the API server would not accept it; keep what is written
            return dict(PRESERVE)
        base = _structural(defs.get(name, {}), defs, (*seen, name))
        rest = _structural(node, defs, seen)
        return {**base, **{k: v for k, v in rest.items() if k == "description"}}
    for key in ("allOf", "anyOf", "oneOf"):
        alts = node.get(key)
        if not isinstance(alts, list):
            continue
        del node[key]
        alts = [a for a in alts if a != {"type": "null"}]
        kinds = {a.get("type") for a in alts if isinstance(a, dict)}
        if kinds and kinds <= {"string", "integer", "number"} and len(kinds) > 1:
            node.setdefault("x-kubernetes-int-or-string", True)
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            continue
        if alts:
            node = {**_structural(alts[0], defs, seen), **node}
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("title", "$defs", "prefixItems", "discriminator"):
            continue
        if k == "default" and v is None:
            continue
        if k == "const":
            out["enum"] = [v]
        elif k == "additionalProperties":
            if v is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(v, dict):
                out[k] = _structural(v, defs, seen)
        elif k == "properties":
            out[k] = {pk: _structural(pv, defs, seen) for pk, pv in v.items()}
        elif k in ("items",):
            out[k] = _structural(v, defs, seen)
        elif k == "exclusiveMinimum":
            out["minimum"], out["exclusiveMinimum"] = v, True
        elif k == "exclusiveMaximum":
            out["maximum"], out["exclusiveMaximum"] = v, True
        else:
            out[k] = v
    if out.get("x-kubernetes-preserve-unknown-fields") and "type" not in out:
        out["type"] = "object"
    return out


@cache
def schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural ``openAPIV3Schema`` of one served version's model (computed once per process)."""
    raw = model.model_json_schema(mode="validation", by_alias=True)
    defs = raw.get("$defs", {})
    out = _structural(raw, defs, ())
    props = out.setdefault("properties", {})
    for key in ("apiVersion", "kind"):
        props[key] = {"type": "string"}
    props["metadata"] = {"type": "object"}
    out["type"] = "object"
    return out


def _columns(info: KindInfo) -> list[dict[str, Any]]:
    out = []
    for c in info.printer_columns:
        col: dict[str, Any] = {"name": c.name, "type": c.type, "jsonPath": c.json_path}
        if c.priority:
            col["priority"] = c.priority
        if c.description:
            col["description"] = c.description
        out.append(col)
    return out


def definition(info: KindInfo) -> dict[str, Any]:
    """The CustomResourceDefinition of a custom kind, as installed and established (a fresh copy)."""
    names: dict[str, Any] = {
        "plural": info.plural,
        "singular": info.singular,
        "kind": info.kind,
        "listKind": f"{info.kind}List",
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    versions = []
    for v, model in info.models.items():
        version: dict[str, Any] = {
            "name": v,
            "served": True,
            "storage": v == info.storage,
            "schema": {"openAPIV3Schema": clone(schema(model))},
        }
        if info.status_subresource:
            version["subresources"] = {"status": {}}
        if info.printer_columns:
            version["additionalPrinterColumns"] = _columns(info)
        versions.append(version)
    for v, model in info.unserved.items():  # listed, not served (Kueue 0.20's v1beta1: kueue#14558)
        gone: dict[str, Any] = {
            "name": v,
            "served": False,
            "storage": False,
            "schema": {"openAPIV3Schema": clone(schema(model))},
        }
        if info.status_subresource:
            gone["subresources"] = {"status": {}}
        versions.append(gone)
    conversion: dict[str, Any] = {"strategy": "None"}
    if info.group == KUEUE_GROUP and len(versions) > 1:  # Kueue converts v1beta1 <-> v1beta2 in its webhook
        conversion = {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {
                    "service": {
                        "name": "kueue-webhook-service",
                        "namespace": "kueue-system",
                        "path": "/convert",
                    }
                },
                "conversionReviewVersions": ["v1"],
            },
        }
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{info.plural}.{info.group}"},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "versions": versions,
            "conversion": conversion,
        },
        "status": {
            "acceptedNames": dict(names),
            "storedVersions": [info.storage],
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
        },
    }
