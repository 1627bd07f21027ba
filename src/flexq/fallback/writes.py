"""Every write the fallback makes, in one place: job annotations and pod templates, a Workload's ``spec.active``
and its deletion, ClusterQueue quotas, Node annotations, Events. Dry runs write nothing; every write that moves
or returns a job is counted for the metrics. Conflicts and objects gone meanwhile are left to the next pass.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from flexq.errors import Conflict, NotFound
from flexq.fallback.affinity import flavor_label, pod_templates, restrict, unrestrict
from flexq.fallback.api import ClusterAPI
from flexq.fallback.model import ANN_MOVE, FallbackConfig
from flexq.fallback.view import WorkloadView

__all__ = ["Writer"]

log = logging.getLogger("flexq.fallback")


class Writer:
    def __init__(self, api: ClusterAPI, cfg: FallbackConfig) -> None:
        self.api, self.cfg = api, cfg
        self.counts: Counter[str] = Counter()  # writes by kind, for the metrics

    @property
    def dry(self) -> bool:
        return self.cfg.dry_run

    def annotate(self, job: Mapping[str, Any], annotations: dict[str, Any]) -> bool:
        if self.dry:
            return True
        try:
            self.api.merge_patch(
                job["kind"],
                job["metadata"]["name"],
                job["metadata"].get("namespace"),
                {"metadata": {"annotations": annotations}},
            )
        except (Conflict, NotFound):
            return False
        return True

    def deactivate(self, job: Mapping[str, Any], w: WorkloadView, move: dict[str, Any]) -> bool:
        """Write the move record on the job first (so a restart resumes it), then deactivate the job's Workload
        (Kueue evicts it; the job framework makes a new one once the job is changed). False when the record
        could not be written (the job changed or went): nothing was done."""
        if not self.annotate(job, {ANN_MOVE: json.dumps(move, sort_keys=True)}):
            return False
        if not self.dry:
            with contextlib.suppress(NotFound):
                self.api.merge_patch("Workload", w.name, w.namespace, {"spec": {"active": False}})
        self.counts["deactivate"] += 1
        return True

    def restrict(
        self,
        job: Mapping[str, Any],
        flavors: Mapping[str, Mapping[str, str]],
        flavor: str,
        pod_sets: list[str],
        annotations: dict[str, Any],
    ) -> bool:
        """Keep the job's named pod sets off ``flavor`` (and set ``annotations``)."""
        label = flavor_label(flavors, flavor)
        if label is None:
            log.warning("flavor %s has no nodeLabels: nothing to restrict a job with", flavor)
            return False
        new = copy.deepcopy(dict(job))
        templates = pod_templates(new)
        for ps in pod_sets:
            if ps in templates:
                restrict(templates[ps], *label)
        return self._replace_job(new, annotations)

    def unrestrict(
        self,
        job: Mapping[str, Any],
        flavors: Mapping[str, Mapping[str, str]],
        flavor_list: list[str],
        annotations: dict[str, Any],
    ) -> bool:
        """Lift what ``restrict`` put on the job for each flavor (annotations: None removes one)."""
        new = copy.deepcopy(dict(job))
        for flavor in flavor_list:
            label = flavor_label(flavors, flavor)
            if label is not None:
                for spec in pod_templates(new).values():
                    unrestrict(spec, *label)
        return self._replace_job(new, annotations)

    def _replace_job(self, job: dict[str, Any], annotations: dict[str, Any]) -> bool:
        anns = job["metadata"].setdefault("annotations", {})
        for k, v in annotations.items():
            if v is None:
                anns.pop(k, None)
            else:
                anns[k] = v
        if self.dry:
            return True
        try:
            self.api.replace(job)
        except (Conflict, NotFound) as exc:
            log.info(
                "job %s/%s changed meanwhile (%s); next pass",
                job["metadata"].get("namespace"),
                job["metadata"]["name"],
                exc,
            )
            return False
        return True

    def delete_workload(self, w: WorkloadView) -> None:
        if not self.dry:
            self.api.delete("Workload", w.name, w.namespace)

    def replace(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        if self.dry:
            return obj
        try:
            return self.api.replace(obj)
        except (Conflict, NotFound) as exc:
            log.info("%s %s changed meanwhile (%s); next pass", obj.get("kind"), obj["metadata"]["name"], exc)
            return None

    def annotate_node(self, name: str, annotations: dict[str, str | None]) -> None:
        if self.dry:
            return
        try:
            self.api.merge_patch("Node", name, None, {"metadata": {"annotations": annotations}})
        except (Conflict, NotFound) as exc:
            log.info("node %s: %s; next pass", name, exc)

    def emit(self, job: Mapping[str, Any] | None, type_: str, reason: str, message: str) -> None:
        """An Event on the job (the evidence in its message)."""
        if self.dry or job is None:
            return
        self.api.event(dict(job), type_, reason, message)
