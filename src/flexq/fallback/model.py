"""The fallback's vocabulary: its configuration, its remembered state (breakers), what a pass does (actions), and
the names it writes on objects. Plain data; imports nothing from flexq.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "OPT_IN_LABEL",
    "ANN_MOVE",
    "ANN_MOVED",
    "ANN_QUOTA",
    "ANN_KEPT",
    "ANN_RESCUE",
    "SCALE_DOWN_DISABLED",
    "MANAGER",
    "DWS_CLASS",
    "FallbackConfig",
    "flavor_name_error",
    "Breaker",
    "Full",
    "Action",
]

OPT_IN_LABEL = "fallback.flexq.dev/enabled"  # on a LocalQueue: "true" lets the policy move its jobs
ANN_MOVE = "fallback.flexq.dev/move"  # on a job: the move in progress or done (JSON)
ANN_MOVED = "fallback.flexq.dev/moved"  # on a job: what happened, in one line
ANN_QUOTA = "fallback.flexq.dev/quota"  # on a ClusterQueue: the nominal quotas capped while a flavor is out
ANN_KEPT = (
    "fallback.flexq.dev/kept"  # on a Node kept in a stock-out: "" busy, idle since (epoch s), "released"
)
ANN_RESCUE = (
    "fallback.flexq.dev/rescue"  # on a job: its rescues from a deactivation (JSON: attempts, at, why)
)
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"  # the cluster autoscaler's own
MANAGER = "flexq-fallback"
DWS_CLASS = "queued-provisioning.gke.io"  # DWS waiting is plan B doing its job, not a stock-out


DECIDE_BY = ("rules", "forecast")
_FLAVOR_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def flavor_name_error(name: object) -> str | None:
    """Why ``name`` cannot be a ResourceFlavor's name (a DNS subdomain, as Kubernetes names objects), or None."""
    if not isinstance(name, str) or not name:
        return f"a ResourceFlavor name is expected, got {name!r}"
    if len(name) > 253 or not _FLAVOR_NAME.match(name):
        return (
            f"{name[:80]!r} is not a ResourceFlavor name (lowercase letters, digits, '-' and '.', starting and "
            "ending with a letter or digit, at most 253 characters)"
        )
    return None


@dataclass
class FallbackConfig:
    """How the policy behaves (``flexq fallback`` has flags for most knobs)."""

    grace_seconds: float = 60.0  # capacity errors must last this long before a flavor counts as stocked out
    backoff_seconds: float = 300.0  # first backoff of a stocked-out flavor (the cluster autoscaler's 5 min)
    max_backoff_seconds: float = 1800.0  # backoff cap (the cluster autoscaler's 30 min)
    move_started: bool = False  # also move jobs whose pods on the flavor have started
    hedge: bool = True  # a moved job still waiting on plan B goes back when its plan-A flavor can take it
    hedge_queued: bool = True  # so does a job Kueue itself put on plan B while plan A is stocked out
    provisioning_wait_prior_seconds: float = 600.0  # a provisioning-checked flavor's wait before any is seen
    probe_from_plan_b: bool = (
        False  # a job waiting on plan B is sent back as the probe of plan A whenever the
    )
    # backoff ends (off: that costs its place in plan B's queue and may strand a grant; see probe_back)
    # a moved job still waiting on plan B goes back as plan A's probe once it has waited there as long as it had
    # lost on plan A before the move, then twice that, ... (the rent-or-buy rule the other way: a move bet on a
    # queue that turns out long is undone at no more than twice the cost; with no new job to probe plan A, its
    # recovery is otherwise seen only when the queue grants)
    probe_back: bool = True
    cap_quota: bool = True  # while a flavor's backoff runs, its quota is capped to what its nodes up can hold
    # in a stock-out, keep the flavor's idle nodes from scale-down this long (off by default: over the family of
    # scenarios, an idle node kept for a job that may not come cost more than the scale-up it saves)
    keep_idle_seconds: float = 0.0
    assume_after_seconds: float | None = None  # also count pods unscheduled this long as stocked out (off)
    rescue: bool = True  # requeue a Workload Kueue deactivated for a transient lack of capacity
    # promotion (capacity tiers, kueue#15500): a job Kueue put on plan B (a flavor behind a provisioning check: DWS)
    # because an earlier flavor's quota was in use, whose provisioning there has not been granted, goes to that
    # earlier flavor as soon as its quota frees: for the flavors whose node pool consumes a specific reservation
    # (paid for whether used or not; read from the GKE API where the fallback can: the twin) and those named in
    # ``promote_flavors`` (on a real cluster the fallback holds no GKE token: name the reservation flavors)
    promote: bool = True
    promote_flavors: list[str] = field(default_factory=list)
    # a job is sent back to plan A (a hedge-back, a probe back) only if no job of higher priority arrived in its
    # cohort this long before: plan A's room is kept for it (flexq.fallback.priorities)
    priority_memory_seconds: float = 3600.0
    # a hedge back or probe back (plan B -> plan A: dearer) is made for a priority class only while the fallback's
    # own moves have made its running jobs at most this much dearer than without them (flexq.fallback.costs);
    # None: no bound (over the family of scenarios, 0.03 turned the urgent class's cost overruns into waits)
    hedge_cost_budget: float | None = None
    max_rescues: int = 5  # per job
    rescue_backoff_seconds: float = 600.0  # between a job's rescues (doubling), and after its deactivation
    pool_limits: dict[str, int] = field(
        default_factory=dict
    )  # node pool -> max nodes, when the user knows them
    all_queues: bool = False  # act on every LocalQueue, not only those labelled fallback.flexq.dev/enabled
    dry_run: bool = False
    state_namespace: str = "kueue-system"
    state_name: str = "flexq-fallback"
    # how a move is decided (flexq.fallback.forecast): "rules" (the rent-or-buy wait, the stock-out memory, the
    # priority memory, the probe-back timing) or "forecast" (the forward run with and without the move)
    decide_by: str = "rules"
    forecast_replicas: int = 6  # forward runs per variant (common random numbers)
    forecast_horizon_seconds: float = 12 * 3600.0  # how far each runs
    forecast_max_candidates: int = 4  # moves judged per pass (highest priority first)
    forecast_tolerance_seconds: float = 60.0  # a job of the class or above may start this much later, no more
    forecast_margin: float = 0.02  # a move must save this share of the job's run on plan A (valued)
    forecast_recheck_seconds: float = 300.0  # a move the forecast refused is judged again after this long
    # the jobs the forecast expects to arrive within this long count too: a move must not delay them either
    forecast_arrivals_seconds: float = 3600.0
    # priority class -> what an hour of its jobs' waiting is worth, in hours of the job on plan A (default 1)
    wait_values: dict[str, float] = field(default_factory=dict)
    # a job of a lower class than others of its cohort is not moved, requeued or sent back onto bounded room
    # while the chance that a higher class's job arrives during its expected run and finds that room taken
    # exceeds this (flexq.fallback.contention; 1: never held back). Off by default: on family seed 71 it held
    # one highest-class break and added others, and the lower classes paid (docs/fallback.md); 0.03 turns it on
    contention_limit: float = 1.0

    def __post_init__(self) -> None:
        if self.decide_by not in DECIDE_BY:
            raise ValueError(f"decide_by: must be one of {', '.join(DECIDE_BY)}, got {self.decide_by!r}")
        for name, ilo, ihi in (("forecast_replicas", 1, 64), ("forecast_max_candidates", 0, 64)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not ilo <= v <= ihi:
                raise ValueError(f"{name}: must be an integer from {ilo} to {ihi}, got {v!r}")
        for name, lo, hi in (
            ("forecast_horizon_seconds", 60.0, 30 * 86400.0),
            ("forecast_tolerance_seconds", 0.0, 86400.0),
            ("forecast_margin", 0.0, 10.0),
            ("forecast_recheck_seconds", 0.0, 86400.0),
            ("forecast_arrivals_seconds", 0.0, 30 * 86400.0),
            ("contention_limit", 0.0, 1.0),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= float(v) <= hi:
                raise ValueError(f"{name}: must be a number from {lo:g} to {hi:g}, got {v!r}")
        if not isinstance(self.promote_flavors, list | tuple):
            raise ValueError(
                f"promote_flavors: a list of ResourceFlavor names is expected, got {self.promote_flavors!r}"
            )
        for f in self.promote_flavors:
            problem = flavor_name_error(f)
            if problem is not None:
                raise ValueError(f"promote_flavors: {problem}")
        for cls, v in self.wait_values.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 < float(v) <= 1000.0:
                raise ValueError(
                    f"wait_values[{cls!r}]: must be a number above 0 and at most 1000, got {v!r}"
                )


@dataclass
class Breaker:
    """One stocked-out flavor: new jobs skip it until ``until``, then one probe goes."""

    since: float  # first capacity error seen
    until: float  # new jobs skip the flavor until then; then one probe goes
    failures: int = 1
    code: str = ""
    message: str = ""
    probe: str = ""  # kind/namespace/name of the job let through as the probe

    def open(self, now: float) -> bool:
        return now < self.until


@dataclass
class Full:
    """A flavor whose node pool refused to grow (at its maximum size): nothing is sent there until it has room
    again (a node of the pool went away since)."""

    since: float  # the refusal that made it full
    nodes: int  # the pool's nodes then
    code: str = "NodepoolSizeReached"
    message: str = ""
    limit: int | None = None  # the pool's maximum, when a message or the configuration says it
    cleared: float | None = None  # when it had room again (evidence older than this is spent)

    @property
    def full(self) -> bool:
        return self.cleared is None


@dataclass
class Action:
    """What a pass did (or, dry, would do)."""

    verb: (
        str  # evict, move, return, returned, steer, unsteer, trip, probe, probe-failed, recover, rescue, ...
    )
    target: str  # namespace/name of the job or the flavor
    message: str
