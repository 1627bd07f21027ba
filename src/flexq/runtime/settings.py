"""Typed settings: what the whole twin is run with, and what one Kubernetes cluster is.

Owns: ``TwinSettings`` (twin-wide knobs: which executor runs pods, the clock, where real Ray keeps its files
and its token, the API server's address and CA for the GKE API's cluster endpoint, the default cluster, the
fallback policy, the Kueue release — ``kueue="0.19.2"`` is resolved to its ``KueueVersion`` profile, an
unknown one refused naming the field) and ``ClusterSettings`` (one cluster's
GKE identity — project, location, name, master version, node range — and the addons it serves; empty for
the twin's cluster without GKE). ``TwinSettings.from_mapping`` refuses a key it does not know, naming it.
``ClusterSettings.from_mapping`` reads the camelCase keys ``flexq.gke`` derives from a GkeCluster object, and
``cluster["addons"]`` reads one back by that key.

Must not import domain packages or ``flexq.http``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flexq.api.kueue_versions import DEFAULT as DEFAULT_KUEUE
from flexq.api.kueue_versions import KueueVersion, resolve
from flexq.api.wellknown import EVENT_TTL_SECONDS
from flexq.errors import Cause, Invalid

__all__ = ["ClusterSettings", "TwinSettings"]


def _refuse_unknown(what: str, given: Mapping[str, Any], known: Mapping[str, str]) -> None:
    unknown = [k for k in given if k not in known]
    if unknown:
        names = ", ".join(sorted(known))
        raise Invalid(
            f"unknown {what} setting(s) {', '.join(repr(k) for k in unknown)}: the known ones are {names}",
            causes=[Cause(k, "FieldValueNotSupported", f"unknown {what} setting {k!r}") for k in unknown],
        )


def _seconds(value: Any, name: str) -> float:
    """A finite, non-negative number of seconds, refused naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        why = "must be a number of seconds, 0 or more"
        raise Invalid(
            f"{name}: Invalid value: {value!r}: {why}", causes=[Cause(name, "FieldValueInvalid", why)]
        )
    return float(value)


@dataclass
class TwinSettings:
    """Twin-wide knobs, shared by every cluster's controllers."""

    executor: str = "simulated"  # "simulated" (virtual pods) or "ray" (real Ray processes for Ray pods)
    clock: str = "virtual"  # "virtual" or "real"
    ray_dir: str | None = (
        None  # where the local Ray executor keeps pod files (one folder per cluster below it)
    )
    ray_token_file: str | None = (
        None  # where the local Ray clusters' auth token is kept (default: the twin's home)
    )
    kube_endpoint: str | None = None  # "127.0.0.1:<port>" of the twin's API server, once it listens
    kube_ca_b64: str | None = None  # its CA certificate, base64 (what GKE reports as the cluster's CA)
    default_cluster: str | None = (
        None  # the GKE cluster the root API and the SDK act on (None: the first created)
    )
    # flexq's fallback policy (flexq.fallback): off (None/False), True or "true" (defaults), or a mapping of
    # FallbackConfig fields or a FallbackConfig (checked by flexq.fallback when the twin is built)
    fallback: Any = None
    check_readonly: bool = (
        False  # a test setting: every store fails loudly when a stored object is changed in place
    )
    # kube-apiserver's --event-ttl: an Event goes this long after its last write (0: kept forever)
    event_ttl_seconds: float = EVENT_TTL_SECONDS
    # the reasons of the Events the recorders write (None: every Event). A simulation names the ones its readers
    # read (``flexq.simulate.engine.READ_EVENTS``): an Event nothing reads is not written, not journalled, not
    # indexed and not expired an hour later (two thirds of a simulated week's writes were Events)
    event_reasons: frozenset[str] | None = None
    # the Kueue release every cluster of the twin runs (``flexq up --kueue``; "0.19.2" or "0.20.7"): what the
    # API serves of kueue.x-k8s.io, Kueue's gate defaults and the behaviour that changed between releases
    kueue: KueueVersion = DEFAULT_KUEUE
    # how long one Kueue scheduling cycle takes (seconds of the twin's clock): Kueue pops one head per
    # ClusterQueue per cycle (``Manager.Heads``), so a deep queue drains at most one admission per cycle
    # (kueue#14477). Default 0 (free cycles): on a cluster of the tutorial's size upstream's loop runs a cycle in
    # milliseconds (it backs off only 1 ms to 10 ms between cycles that admit nothing: ``pkg/util/wait``,
    # kueue#9716), far below any wait the planner or the ETA reports, while giving each cycle its own instant
    # costs the tutorial week +42 % scheduler and +32 % workload reconciles and +4 % writes (measured, issue 48).
    # A production-size cluster sets it: kueue#14477's (~1,300 nodes, Fair Sharing and TAS) ran ~25 cycles a
    # minute, ``kueue_cycle_seconds: 2.4``; ``bench/kueue_cycle_drain.py`` shows the drain either way.
    kueue_cycle_seconds: float = 0.0
    # the API server's service-account signing key (PEM), recorded by ``serve``: not a knob. The kubelet signs
    # the projected tokens of the pods it runs with it, as kube-apiserver's TokenRequest does for a kubelet
    service_account_key: bytes | None = field(default=None, init=False, repr=False, compare=False)
    # ``on_serve``'s callbacks: not a knob (``Twin(**settings)`` does not take it; a replaced copy has none)
    _serve_callbacks: list[Callable[[], None]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | TwinSettings | None) -> TwinSettings:
        """Settings from keyword arguments (``Twin(**settings)``); an unknown key is refused, by name."""
        if isinstance(given, TwinSettings):
            return dataclasses.replace(given)
        given = dict(given or {})
        _refuse_unknown("twin", given, {f.name: f.name for f in dataclasses.fields(cls) if f.init})
        for key in ("ray_dir", "ray_token_file"):
            if given.get(key) is not None:
                given[key] = str(given[key])
        if "event_ttl_seconds" in given:
            given["event_ttl_seconds"] = _seconds(given["event_ttl_seconds"], "event_ttl_seconds")
        if "kueue" in given:
            given["kueue"] = resolve(given["kueue"], "kueue")
        if "kueue_cycle_seconds" in given:
            given["kueue_cycle_seconds"] = _seconds(given["kueue_cycle_seconds"], "kueue_cycle_seconds")
        if given.get("event_reasons") is not None:
            given["event_reasons"] = frozenset(given["event_reasons"])
        return cls(**given)

    def serve(self, endpoint: str, ca_b64: str, service_account_key: bytes | None = None) -> None:
        """The API server listens at ``endpoint`` with this CA (and signs ServiceAccount tokens with
        ``service_account_key``): recorded, then each ``on_serve`` callback is called (on the server's thread)."""
        self.kube_endpoint, self.kube_ca_b64 = endpoint, ca_b64
        self.service_account_key = service_account_key
        for callback in list(self._serve_callbacks):
            callback()

    def on_serve(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` whenever ``serve`` records the API server's address (a controller that publishes
        the CA waits for it so); returns what unregisters it."""
        self._serve_callbacks.append(callback)
        return lambda: self._serve_callbacks.remove(callback) if callback in self._serve_callbacks else None


# the keys flexq.gke's cluster_settings() writes -> ClusterSettings' fields
_CLUSTER_KEYS = {
    "gkeCluster": "gke_cluster",
    "gkeProject": "gke_project",
    "gkeLocation": "gke_location",
    "gkeVersion": "gke_version",
    "gkeNodeCidr": "gke_node_cidr",
    "addons": "addons",
}


@dataclass(frozen=True)
class ClusterSettings:
    """What one Kubernetes cluster of the twin is: its GKE identity (empty without GKE) and its addons.
    Replaced as a whole when the GkeCluster object changes (readers on other threads see one or the other)."""

    gke_cluster: str = ""  # the GKE cluster's name ("" for the twin's cluster without GKE)
    gke_project: str = ""
    gke_location: str = ""
    gke_version: str | None = None  # the master version (None without GKE)
    gke_node_cidr: str = ""  # the node range ("" lets GCE's default apply)
    addons: list[str] = field(default_factory=list)  # addons the cluster serves the kinds of ("RayOperator")

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any]) -> ClusterSettings:
        """From the camelCase keys ``flexq.gke`` derives from a GkeCluster; an unknown key is refused, by name."""
        _refuse_unknown("cluster", given, _CLUSTER_KEYS)
        values = {_CLUSTER_KEYS[k]: v for k, v in given.items()}
        if "addons" in values:
            values["addons"] = list(values["addons"] or ())
        return cls(**values)

    def __getitem__(self, key: str) -> Any:
        """One setting by its camelCase key (``cluster["addons"]``)."""
        if key not in _CLUSTER_KEYS:
            raise KeyError(key)
        return getattr(self, _CLUSTER_KEYS[key])
