"""What a job or a twin declares of itself, where a real cluster shows only its history.

Owns:

- ``expected_duration``: a job's own ``flexq.dev/expected-duration`` annotation, bounded (a tenant's claim, not a
  fact: out of bounds or unreadable, it is no estimate).
- ``Declared``: what a twin declares of itself, which ``flexq.eta.state_from_twin`` reads into
  ``ClusterState.twin`` (a real cluster has no such thing: None there). A twin's cloud is its ``CapacityProfile``
  in force (the ``default`` stored one, else the first, else the live twin's built-in one: nodes in 5 s, DWS
  grants in 20 s), and a job runs there as the twin says: one that declares ``twin.flexq.dev/run-seconds`` runs
  that long on any executor; without it a pod the simulated executor runs (a batch Job's on every executor, a
  RayJob's submitter on the simulated one) runs 60 s (``flexq.kube.simulated``). On the twin those are the truth
  the user configured, so the forecast takes them where a real cluster gives it only the stated priors: the
  profile's DWS wait and node provisioning laws stand in for the cold laws until the cluster has shown its own
  (``min_history`` grants; its own nodes), and a declared run time is the job's run time, as an
  ``expected-duration`` is. The profile's capacity over time (its stock-out windows and limits) is not read:
  stock-outs are forecast from what the cluster shows, as on GKE.

Pure: no clock, no store.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from flexq.api.capacity_profile import Delay, parse_duration
from flexq.clock import format_duration
from flexq.forecast.jobs import EXPECTED_DURATION
from flexq.gke.capacity import DEFAULT_PROVISION_SECONDS, DEFAULT_QUEUE_WAIT_SECONDS, CapacityModel, draw_left
from flexq.kube.simulated import ANN_RUN_SECONDS, DEFAULT_BATCH_SECONDS
from flexq.kube.simulated import run_seconds as simulated_run_seconds
from flexq.kuberay.names import ANN_SIMULATED

__all__ = [
    "Declared",
    "expected_duration",
    "EXPECTED_DURATION_MAX_SECONDS",
    "EXPECTED_DURATION_MAX_TEXT",
]

# what a job's own estimate may say: a duration of at most 64 characters, more than 0 and at most 30 days. A tenant's
# annotation is a claim, not a fact: "99999999999999999999999h" (3.6e26 s) or "1h1h..." x 1000 is read as no
# estimate (the job's class history is used), not as a job that holds its quota for ever and puts every job
# behind it "not within 7d" (issue 49)
EXPECTED_DURATION_MAX_SECONDS = 30 * 86400.0
EXPECTED_DURATION_MAX_TEXT = 64
SIMULATED = (
    "twin.flexq.dev/simulated"  # a RayJob the twin simulates whatever its executor (flexq.kuberay.names)
)
RANGE_DRAWS = 199  # draws of a law that is not uniform or fixed, for the range a forward run makes nodes in


def expected_duration(job: dict | None) -> float | None:
    """The job's ``flexq.dev/expected-duration`` in seconds, or None (absent, unreadable or out of bounds)."""
    raw = (((job or {}).get("metadata") or {}).get("annotations") or {}).get(EXPECTED_DURATION)
    if raw is None:
        return None
    text = str(raw).strip()
    if len(text) > EXPECTED_DURATION_MAX_TEXT:
        return None
    try:
        seconds = parse_duration(text)
    except (ValueError, OverflowError):
        return None
    if not 0 < seconds <= EXPECTED_DURATION_MAX_SECONDS:
        return None
    return seconds


@dataclass
class Declared:
    """See the module docstring. ``profile``: the CapacityProfile in force (JSON); ``executor``: what runs the
    twin's Ray pods (``simulated`` or ``ray``); ``location``: the GKE cluster's (rules match on it)."""

    profile: dict[str, Any]
    executor: str = "simulated"
    location: str = ""
    _model: CapacityModel | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, twin: dict[str, Any] | None, location: str = "") -> Declared | None:
        """From ``ClusterState.twin`` (None: a real cluster, nothing declared)."""
        if not twin or not isinstance(twin.get("capacityProfile"), dict):
            return None
        return cls(twin["capacityProfile"], str(twin.get("executor") or "simulated"), location)

    def __getstate__(self) -> dict[str, Any]:  # the parsed model is made again where it is used
        return {**self.__dict__, "_model": None}

    @property
    def name(self) -> str:
        return str((self.profile.get("metadata") or {}).get("name") or "")

    def _terms_of(self, machine_type: str, model: str) -> Any:
        if self._model is None:
            self._model = CapacityModel(self.profile, 0.0)
        return self._model.terms(self.location, machine_type, model)

    # -- run times ---------------------------------------------------------------------------------------------
    def run_seconds(self, job: dict | None) -> float | None:
        """How long ``job`` runs on this twin (None: it runs for real, or it is not known)."""
        anns = ((job or {}).get("metadata") or {}).get("annotations") or {}
        if ANN_RUN_SECONDS in anns:  # the simulated executor's own reading (a pod that can complete)
            seconds = simulated_run_seconds(
                {"spec": {"restartPolicy": "Never"}, "metadata": {"annotations": anns}}
            )
            return None if seconds is None else min(seconds, EXPECTED_DURATION_MAX_SECONDS)
        kind = (job or {}).get("kind", "")
        if kind == "Job" or (
            kind == "RayJob" and (self.executor != "ray" or anns.get(ANN_SIMULATED) == "true")
        ):
            return DEFAULT_BATCH_SECONDS
        return None

    def run_words(self, job: dict | None) -> str:
        anns = ((job or {}).get("metadata") or {}).get("annotations") or {}
        seconds = format_duration(self.run_seconds(job) or 0.0)
        if ANN_RUN_SECONDS in anns:
            return f"its {ANN_RUN_SECONDS} annotation on this twin ({seconds})"
        return f"the twin's simulated pods ({seconds} without {ANN_RUN_SECONDS})"

    # -- the cloud ---------------------------------------------------------------------------------------------
    def _delay(self, what: str, machine_type: str, model: str) -> Delay | None:
        delay = getattr(self._terms_of(machine_type, model), what)
        if delay is None or delay.never or delay.at is not None:
            return None  # no law to draw from (a schedule or never is about time: not read)
        return delay

    def dws_left(self, machine_type: str, waited: float, rng: random.Random) -> float:
        """How much longer a DWS request that has waited ``waited`` seconds waits for its grant, as the profile's
        ``queueWait`` for ``machine_type`` draws it (its law beyond that age)."""
        delay = self._delay("queue_wait", machine_type, "queued")
        if delay is None:
            return max(0.0, DEFAULT_QUEUE_WAIT_SECONDS - waited)
        return draw_left(delay, waited, rng)

    def provision_range(self, machine_type: str, model: str = "on-demand") -> tuple[float, float]:
        """The range a node of ``machine_type`` is made in (creation to Ready): a fixed or uniform law's own, else
        the 5th to 95th percentile of its draws."""
        delay = self._delay("provision_time", machine_type, model)
        if delay is None:
            return DEFAULT_PROVISION_SECONDS, DEFAULT_PROVISION_SECONDS
        if delay.uniform is not None:
            a, b = parse_duration(delay.uniform.min), parse_duration(delay.uniform.max)
            return min(a, b), max(a, b)
        rng = random.Random(0)
        draws = sorted(draw_left(delay, 0.0, rng) for _ in range(RANGE_DRAWS if delay.fixed is None else 1))
        return draws[len(draws) // 20], draws[len(draws) - 1 - len(draws) // 20]

    def law(self, what: str, machine_type: str, model: str) -> dict[str, Any] | None:
        """The profile's law (``queue_wait``, ``provision_time``) for ``machine_type`` as profile JSON (the exact
        engine's), or None (a schedule, never, or unset)."""
        delay = self._delay(what, machine_type, model)
        return None if delay is None else delay.model_dump(mode="json", by_alias=True, exclude_none=True)

    def words(self, what: str, machine_type: str, model: str) -> str:
        law = self.law(what, machine_type, model)
        said = ", ".join(f"{k} {v}" for k, v in law.items()) if law else "the twin's built-in default"
        return f"the twin's CapacityProfile {self.name!r}: {said}"

    def rules(self, machine_types: list[str], seen: set[str], dws_cold: bool) -> list[dict[str, Any]]:
        """The profile rules (the exact engine's) that carry the declared laws where the cluster has shown too
        little: node provisioning of the machine types no node was seen of (not in ``seen``), DWS waits while
        too few were granted (``dws_cold``)."""
        out: list[dict[str, Any]] = []
        for mt in machine_types:
            law = self.law("provision_time", mt, "on-demand")
            if mt not in seen and law is not None:
                out.append({"match": {"machineTypes": [mt]}, "provisionTime": law})
            law = self.law("queue_wait", mt, "queued")
            if dws_cold and law is not None:
                out.append(
                    {"match": {"machineTypes": [mt], "provisioningModels": ["queued"]}, "queueWait": law}
                )
        return out
