"""What Kueue injects into a job's pod templates when it starts it (``pkg/podset/podset.go``).

Owns: ``PodSetInfo`` (labels, annotations, nodeSelector, tolerations, scheduling gates, count);
``from_assignment`` (the assigned flavors' ``nodeLabels`` and ``tolerations``, plus the
``kueue.x-k8s.io/podset`` label), ``from_update`` (an admission check's ``podSetUpdates``),
``merge`` (additive; the same key with another value is an error, tolerations de-duplicated),
``merge_into_template`` / ``restore_template`` on a PodTemplateSpec dict, and ``infos_for`` — the
full list Kueue computes from a Workload's admission and checks (``getPodSetsInfoFromStatus``).
Must not import anything in flexq.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "PodSetInfo",
    "PodSetMergeError",
    "from_podset",
    "infos_for",
    "merge_into_template",
    "restore_template",
]

PODSET_LABEL = "kueue.x-k8s.io/podset"
SLICE_NAME_ANNOTATION = "kueue.x-k8s.io/workload-slice-name"


class PodSetMergeError(ValueError):
    """A podSetUpdate conflicts with what is already there (a permanent start failure)."""


@dataclass
class PodSetInfo:
    """Per pod set injection."""

    name: str
    count: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict] = field(default_factory=list)
    scheduling_gates: list[dict] = field(default_factory=list)

    def merge(self, o: PodSetInfo) -> None:
        """``PodSetInfo.Merge``."""
        for what, a, b in (
            ("annotations", self.annotations, o.annotations),
            ("labels", self.labels, o.labels),
            ("nodeSelector", self.node_selector, o.node_selector),
        ):
            for k, v in b.items():
                if k in a and a[k] != v:
                    raise PodSetMergeError(
                        f"invalid admission check PodSetUpdate: conflict for {what}: "
                        f"conflict for key={k}, value1={a[k]}, value2={v}"
                    )
        self.annotations.update(o.annotations)
        self.labels.update(o.labels)
        self.node_selector.update(o.node_selector)
        for t in o.tolerations:
            if t not in self.tolerations:
                self.tolerations.append(t)
        for g in o.scheduling_gates:
            if g not in self.scheduling_gates:
                self.scheduling_gates.append(g)


def from_podset(ps: Mapping) -> PodSetInfo:
    """``FromPodSet``: what a Workload pod set template had originally (used to restore on stop)."""
    tpl = ps.get("template") or {}
    md, spec = tpl.get("metadata") or {}, tpl.get("spec") or {}
    return PodSetInfo(
        ps["name"],
        int(ps.get("count", 1)),
        dict(md.get("labels") or {}),
        dict(md.get("annotations") or {}),
        dict(spec.get("nodeSelector") or {}),
        copy.deepcopy(list(spec.get("tolerations") or [])),
        copy.deepcopy(list(spec.get("schedulingGates") or [])),
    )


def infos_for(wl: Mapping, flavors: Mapping[str, Mapping]) -> list[PodSetInfo]:
    """``getPodSetsInfoFromStatus``: flavors' labels/tolerations + every check's podSetUpdates."""
    st = wl.get("status") or {}
    podsets = (wl.get("spec") or {}).get("podSets") or []
    out = []
    for i, psa in enumerate((st.get("admission") or {}).get("podSetAssignments") or []):
        count = psa.get("count", podsets[i].get("count", 1) if i < len(podsets) else 1)
        info = PodSetInfo(psa["name"], int(count))
        seen = set()
        for flv in (psa.get("flavors") or {}).values():
            if flv in seen:
                continue
            seen.add(flv)
            fspec = (flavors.get(flv) or {}).get("spec") or {}
            info.node_selector.update(fspec.get("nodeLabels") or {})
            info.tolerations.extend(copy.deepcopy(fspec.get("tolerations") or []))
        ann = wl["metadata"].get("annotations") or {}
        if ann.get("kueue.x-k8s.io/elastic-job") == "true":
            info.annotations[SLICE_NAME_ANNOTATION] = ann.get(SLICE_NAME_ANNOTATION, wl["metadata"]["name"])
        info.labels[PODSET_LABEL] = psa["name"]
        for check in st.get("admissionChecks") or []:
            for upd in check.get("podSetUpdates") or []:
                if upd.get("name") == info.name:
                    try:
                        info.merge(
                            PodSetInfo(
                                info.name,
                                0,
                                dict(upd.get("labels") or {}),
                                dict(upd.get("annotations") or {}),
                                dict(upd.get("nodeSelector") or {}),
                                list(upd.get("tolerations") or []),
                            )
                        )
                    except PodSetMergeError as exc:
                        raise PodSetMergeError(f'in admission check "{check["name"]}": {exc}') from None
                    break
        out.append(info)
    return out


def merge_into_template(tpl: dict, info: PodSetInfo) -> None:
    """``podset.Merge`` on a PodTemplateSpec dict (raises ``PodSetMergeError`` on conflicts)."""
    md = tpl.setdefault("metadata", {})
    spec = tpl.setdefault("spec", {})
    cur = PodSetInfo(
        info.name,
        0,
        dict(md.get("labels") or {}),
        dict(md.get("annotations") or {}),
        dict(spec.get("nodeSelector") or {}),
        list(spec.get("tolerations") or []),
        list(spec.get("schedulingGates") or []),
    )
    cur.merge(info)
    for k, v in (("labels", cur.labels), ("annotations", cur.annotations)):
        if v:
            md[k] = v
    if cur.node_selector:
        spec["nodeSelector"] = cur.node_selector
    if cur.tolerations:
        spec["tolerations"] = cur.tolerations
    if cur.scheduling_gates:
        spec["schedulingGates"] = cur.scheduling_gates


def restore_template(tpl: dict, info: PodSetInfo) -> bool:
    """``RestorePodSpec``: put the original labels/annotations/selector/tolerations/gates back."""
    md = tpl.setdefault("metadata", {})
    spec = tpl.setdefault("spec", {})
    changed = False
    for holder, k, v in (
        (md, "labels", info.labels),
        (md, "annotations", info.annotations),
        (spec, "nodeSelector", info.node_selector),
        (spec, "tolerations", info.tolerations),
        (spec, "schedulingGates", info.scheduling_gates),
    ):
        if (holder.get(k) or type(v)()) != v:
            changed = True
            if v:
                holder[k] = copy.deepcopy(v)
            else:
                holder.pop(k, None)
    return changed
