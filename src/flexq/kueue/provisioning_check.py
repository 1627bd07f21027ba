"""The provisioning admission check's own reconciler
(``pkg/controller/admissionchecks/provisioning/admissioncheck_reconciler.go``): an AdmissionCheck whose
``controllerName`` is ``kueue.x-k8s.io/provisioning-request`` is ``Active`` when its parameters name an existing
ProvisioningRequestConfig, else ``Active=False`` with reason ``BadParametersRef`` and why. Re-checked when the
AdmissionCheck or a ProvisioningRequestConfig it names changes.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from flexq.kueue.cache import KueueCache
from flexq.kueue.checks import PROVISIONING_CONTROLLER
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import set_status_condition

__all__ = ["ProvisioningCheckController"]


class ProvisioningCheckController(Controller):
    """Sets the Active condition of provisioning AdmissionChecks."""

    name = "kueue-provisioning-admissioncheck"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.events = cache.events

    def watches(self) -> list[Watch]:
        return [
            Watch("AdmissionCheck", lambda ev: [ev.object["metadata"]["name"]]),
            Watch("ProvisioningRequestConfig", self._users),
        ]

    def _users(self, ev) -> list:
        return [
            a["metadata"]["name"]
            for a in self.store.list("AdmissionCheck")
            if ((a.get("spec") or {}).get("parameters") or {}).get("name") == ev.object["metadata"]["name"]
        ]

    def reconcile(self, key: str) -> Result | None:
        ac = self.store.try_get("AdmissionCheck", key)
        if ac is None or (ac.get("spec") or {}).get("controllerName") != PROVISIONING_CONTROLLER:
            return None
        ref = (ac.get("spec") or {}).get("parameters")
        err = None
        if not ref:
            err = "missing parameters reference"
        elif ref.get("apiGroup") != "kueue.x-k8s.io" or ref.get("kind") != "ProvisioningRequestConfig":
            err = "wrong group/kind of parameters reference"
        elif self.store.try_get("ProvisioningRequestConfig", ref.get("name", "")) is None:
            err = f'provisioningrequestconfigs.kueue.x-k8s.io "{ref.get("name")}" not found'
        now = self.ctx.now()
        changed = (
            set_status_condition(ac, "Active", True, "Active", "The admission check is active", now)
            if err is None
            else set_status_condition(ac, "Active", False, "BadParametersRef", err, now)
        )
        if changed:
            self.store.update_status(ac)
        return None
