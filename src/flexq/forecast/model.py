"""The capacity model and the run times, fitted to what a cluster shows of its own history.

Owns ``EtaConfig`` (the knobs, with the priors that stand in where the cluster has shown nothing), ``Model``
(the fitted model: DWS waits, stock-outs, node provisioning times, run-time classes — each with where it came
from) and ``fit(state, cfg)``:

- **DWS waits** (``queued-provisioning.gke.io``): each ProvisioningRequest's ``Accepted`` to ``Provisioned``
  time is a finished wait; a request still queued, or one that failed with ``WaitTimeExceeded``, is censored at
  the time it waited. An exponential law is fitted by maximum likelihood with the censored ones
  (``flexq.stats.exponential_mean``, one pseudo-observation of the prior), so a queue whose requests all sit
  waiting is not taken for a short one; the Kaplan-Meier median is reported beside it.
- **Stock-outs** of a node pool's machines: the cluster autoscaler's ``FailedScaleUp`` events classified as a
  stock-out or GCE quota (``flexq.api.reasons.classify_capacity``), or its back-off after one, on the pods of
  workloads admitted on the pool's flavor; one is ongoing when such a workload waits now and no node of the pool
  was made since the first refusal, and it is at least as old as that workload's wait. Its remaining length is exponential, with the mean fitted from the episodes seen (the ongoing
  one censored) and a prior.
- **Provisioning times**: each Node's creation to its ``Ready``, per machine type (uniform between the fastest
  and the slowest seen), else the prior.
- **Run times**: a job's own ``flexq.dev/expected-duration`` annotation when set; else the finished jobs of its
  class (``flexq.forecast.jobs.class_key``: LocalQueue and ``flexq.dev/class``, or the job's shape) with the running
  ones censored — at least ``min_history`` finished, else its LocalQueue's, else the cluster's. Draws come from
  the Kaplan-Meier curve (``flexq.stats.sample_beyond``): a running job's remaining time is drawn knowing it has
  run so long already.
- **A cluster that has shown too little** (fewer than ``min_history`` finished jobs in the whole cluster, fewer
  than ``min_history`` DWS requests granted): a curve through one or two points is no law, and a fixed prior is
  wrong by orders of magnitude on someone's cluster (the tutorial's jobs run a minute; a prior of an hour put every
  start behind them outside its interval). There the duration is ``flexq.stats.ColdLaw``: log-normal, wide
  (``cold_run``: median 30 min, 80 % of runs between about a minute and 16 h before anything is seen;
  ``cold_dws``: median 10 min, about 15 s to 7 h), its median pooled with what was seen — one job seen to run a
  minute moves the next estimate most of the way there. The interval is wide because nothing is known, and says so.

``Model.profile(...)`` writes the model as a ``CapacityProfile`` (``docs/capacity-profile.md``) the user can read
and edit: a warm-up span in which the jobs running at the instant get their nodes at once, then the fitted terms.
``Model.describe()`` says every figure with its evidence. Pure: no clock, no store.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import random
from dataclasses import dataclass, field
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.capacity_profile import parse_duration
from flexq.api.reasons import classify_capacity
from flexq.clock import format_duration, parse_time_or_none
from flexq.forecast.jobs import (
    CLASS_LABEL,
    EXPECTED_DURATION,
    Entry,
    StateView,
    class_key,
    finished_at,
    started_at,
)
from flexq.forecast.state import ClusterState
from flexq.gke.timing import GRANT_RETRY_SECONDS, SCALE_DOWN_UNNEEDED_SECONDS
from flexq.semantics.conditions import find_condition
from flexq.semantics.owners import controller_owner
from flexq.stats import ColdLaw, exponential_mean, km_median, km_quantile, sample_beyond

__all__ = [
    "EtaConfig",
    "Model",
    "RunClass",
    "Stockout",
    "fit",
    "expected_duration",
    "WARMUP_SECONDS",
    "RESERVED_LEAD",
    "Arrival",
    "ARRIVAL_WINDOW",
]

QUEUED_CLASS = "queued-provisioning.gke.io"
WARMUP_SECONDS = 300.0  # the forward twin's first five minutes: the running jobs get their nodes at once
# a run time before ``min_history`` were seen: median 30 min, the median itself off by e^±2.5 (×12), runs of one
# kind within e^±1.28 of theirs at 10-90 %: with nothing seen, 80 % between about a minute and 16 hours
COLD_RUN = ColdLaw(median=1800.0, spread=2.5, within=1.0)
# a DWS wait before three grants were seen: GKE's waits run from seconds (free capacity) to days (7-day limit)
COLD_DWS = ColdLaw(median=600.0, spread=2.5, within=1.5)
MIN_EPISODES = 3  # stock-outs seen to end before their lengths stand for the next one's
RESERVED_LEAD = 30.0  # the jobs holding quota go in first: their requests are queued before the warm-up
SCALE_DOWN_SECONDS = SCALE_DOWN_UNNEEDED_SECONDS  # the cluster autoscaler's (flexq.gke.timing)
ARRIVAL_WINDOW = 7 * 86400.0  # how far back the arrival rates look


@dataclass(frozen=True)
class EtaConfig:
    """The ETA's knobs. The priors are used only where the cluster has shown nothing (said in the output)."""

    replicas: int = 32
    horizon: float = 7 * 86400.0
    engine: str = "fast"  # fast (flexq.forecast.fast) or twin (each forward run a whole virtual twin)
    seed: int = 1
    class_label: str = CLASS_LABEL
    min_history: int = 3  # finished jobs a run-time class needs before its own history is used
    prior_run_seconds: float = 3600.0  # a job's run time when nothing is known (exponential, mean 1 h)
    prior_dws_wait_seconds: float = (
        1800.0  # a DWS request's wait when none was seen (exponential, mean 30 min)
    )
    prior_stockout_seconds: float = 3 * 3600.0  # a stock-out's length when none was seen to end (mean 3 h)
    min_stockout_seconds: float = 1800.0  # a stock-out just begun is taken to have lasted this long
    prior_provision: tuple[float, float] = (60.0, 120.0)  # node creation to Ready, seconds (uniform)
    # what a run time and a DWS wait are taken to be until the cluster has shown ``min_history`` of them (None:
    # the exponential priors above, as the fallback's forecast keeps them)
    cold_run: ColdLaw | None = COLD_RUN
    cold_dws: ColdLaw | None = COLD_DWS
    workers: int | None = None  # processes for the replicas (None: one per core)
    fallback: bool | None = None  # model flexq's fallback (None: when a LocalQueue opts in)
    # a deliberately wrong capacity model, for measuring the interval's online correction (bench/eta_calibration
    # --dws-scale): every DWS wait the model draws is multiplied by this
    dws_scale: float = 1.0


# what a job's own estimate may say: a duration of at most 64 characters, more than 0 and at most 30 days. A tenant's
# annotation is a claim, not a fact: "99999999999999999999999h" (3.6e26 s) or "1h1h..." x 1000 is read as no
# estimate (the job's class history is used), not as a job that holds its quota for ever and puts every job
# behind it "not within 7d" (issue 49)
EXPECTED_DURATION_MAX_SECONDS = 30 * 86400.0
EXPECTED_DURATION_MAX_TEXT = 64


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
class RunClass:
    """The run-time history of one class: finished run times and the running jobs' times so far."""

    key: str
    done: list[float] = field(default_factory=list)
    running: list[float] = field(default_factory=list)

    def median(self) -> float | None:
        return km_median(self.done, self.running)

    def tail_mean(self, prior: float) -> float:
        return sum(self.done) / len(self.done) if self.done else prior


@dataclass
class Arrival:
    """Jobs of one LocalQueue, class and priority arriving at the rate the cluster's history shows."""

    queue: str  # namespace/LocalQueue
    klass: tuple[str, str]  # its run-time class (flexq.forecast.jobs.class_key)
    priority: int
    rate: float  # per second
    seen: int  # how many arrived in the window
    window: float  # seconds of history the rate is over
    template: dict  # the most recent Workload of the group (what an arrival asks for)


@dataclass
class Stockout:
    """An ongoing stock-out of one node pool's machines."""

    pool: str
    machine_type: str
    since: float
    code: str
    mean_remaining: float


@dataclass
class Model:
    """The fitted model (see the module docstring); every figure keeps its evidence."""

    now: float
    cfg: EtaConfig
    dws_mean: float = 0.0
    dws_done: list[float] = field(default_factory=list)
    dws_waiting: list[float] = field(default_factory=list)
    stockouts: list[Stockout] = field(default_factory=list)
    stockout_episodes: list[float] = field(default_factory=list)
    provision: dict[str, tuple[float, float, int]] = field(
        default_factory=dict
    )  # machine -> (min, max, seen)
    classes: dict[tuple[str, str], RunClass] = field(default_factory=dict)
    runs: dict[str, tuple[str, float | None]] = field(default_factory=dict)  # workload key -> (source, fixed)
    machine_types: set[str] = field(default_factory=set)
    dws_pending: dict[str, float] = field(default_factory=dict)  # workload key -> its wait so far
    dws_bounded: int = (
        0  # granted waits that ended when their pool had room again (censored where the pool became full)
    )
    arrivals: list[Arrival] = field(default_factory=list)
    # Kueue's scheduling cycle, seconds (one head per ClusterQueue per cycle: a deep queue's admission rate);
    # measured from bursts of admissions, else 0 as the twin's scheduler (``cycle_gaps``: how many it rests on)
    cycle_seconds: float = 0.0
    cycle_gaps: int = 0

    # -- DWS waits, stock-outs, provisioning --------------------------------------------------------------------
    def draw_dws(self, elapsed: float, rng: random.Random) -> float:
        """How much longer a DWS request that has waited ``elapsed`` seconds waits for its grant: from the
        Kaplan-Meier curve of the waits seen (finished, and the censored ones), past ``elapsed``; beyond the
        longest seen, an exponential tail of the fitted mean."""
        cold = self.cfg.cold_dws
        if cold is not None and len(self.dws_done) < self.cfg.min_history:
            total = cold.sample_beyond(self.dws_done, elapsed, rng, self.dws_waiting)
        else:
            total = sample_beyond(self.dws_done, self.dws_waiting, elapsed, rng, self.dws_mean)
        return max(0.0, total - elapsed) * self.cfg.dws_scale

    def bootstrap(self, rng: random.Random) -> Model:
        """This model refitted on a bootstrap resample of its history (the DWS waits seen, granted and still
        waiting; each class's run times, finished and running; the stock-out episodes seen to end): a forward run
        that draws from it carries the uncertainty of the fitted parameters themselves, not only of the events
        drawn from fixed ones. What is not a sample (the jobs waiting now, the pools, the arrivals) is shared."""

        def resample(done: list[float], waiting: list[float]) -> tuple[list[float], list[float]]:
            pool = [(x, True) for x in done] + [(x, False) for x in waiting]
            if not pool:
                return [], []
            picks = [pool[rng.randrange(len(pool))] for _ in pool]
            return [x for x, d in picks if d], [x for x, d in picks if not d]

        out = copy.copy(self)
        out.__dict__.pop("_history_memo", None)  # its classes are its own
        out.dws_done, out.dws_waiting = resample(self.dws_done, self.dws_waiting)
        out.dws_mean = exponential_mean(out.dws_done, out.dws_waiting, self.cfg.prior_dws_wait_seconds)
        out.stockout_episodes = resample(self.stockout_episodes, [])[0]
        out.classes = {}
        for k, c in self.classes.items():
            done, running = resample(c.done, c.running)
            out.classes[k] = RunClass(c.key, done, running)
        # the cold laws' medians drawn once for the run (from what this replica's resample saw)
        cold_run, cold_dws = self.cfg.cold_run, self.cfg.cold_dws
        if cold_run is not None or cold_dws is not None:
            done_all = [x for c in out.classes.values() for x in c.done]
            running_all = [x for c in out.classes.values() for x in c.running]
            out.cfg = dataclasses.replace(
                self.cfg,
                cold_run=None if cold_run is None else cold_run.drawn(done_all, running_all, rng),
                cold_dws=None if cold_dws is None else cold_dws.drawn(out.dws_done, out.dws_waiting, rng),
            )
        return out

    def dws_waited(self, key: str) -> float | None:
        """How long the accepted, not yet provisioned DWS request of workload ``key`` has waited (None: none)."""
        return self.dws_pending.get(key)

    def draw_stockout(self, s: Stockout, rng: random.Random) -> float:
        """How much longer an ongoing stock-out lasts, knowing how long it has: from the episodes seen to end
        (Kaplan-Meier, this one censored), an exponential tail of its fitted mean beyond them."""
        elapsed = max(0.0, self.now - s.since)
        if len(self.stockout_episodes) >= MIN_EPISODES:
            left = sample_beyond(self.stockout_episodes, [elapsed], elapsed, rng, s.mean_remaining) - elapsed
        else:  # too few ends seen: as long again as it has lasted, at the median (P(T > t | T > e) = e / t)
            scale = max(elapsed, self.cfg.min_stockout_seconds)
            left = scale * (1.0 / max(1e-9, 1.0 - rng.random()) - 1.0)
        return max(60.0, left)

    def provision_range(self, machine_type: str) -> tuple[float, float]:
        """Node creation to Ready for ``machine_type`` (uniform between these), as seen, else the prior."""
        lo, hi = self.cfg.prior_provision
        seen = self.provision.get(machine_type)
        if seen is None:
            return lo, hi
        pmin, pmax, n = seen
        if n < 10:
            return min(pmin, lo), max(pmax, hi)
        return pmin, pmax

    def draw_class_run(self, key: tuple[str, str], rng: random.Random) -> float:
        """A run time for a job of class ``key`` that has not started (an arrival)."""
        hist, _ = self._history(key)
        return self._draw(hist, 0.0, rng)

    def _draw(self, hist: RunClass, elapsed: float, rng: random.Random) -> float:
        cold = self.cfg.cold_run
        if cold is not None and len(hist.done) < self.cfg.min_history:
            return cold.sample_beyond(hist.done, elapsed, rng, hist.running)
        return sample_beyond(
            hist.done, hist.running, elapsed, rng, hist.tail_mean(self.cfg.prior_run_seconds)
        )

    # -- run times -------------------------------------------------------------------------------------------
    def _history(self, key: tuple[str, str]) -> tuple[RunClass, str]:
        """The class's history when it has enough, else its LocalQueue's, else the cluster's, else empty
        (worked out once per class of a fitted model: its classes are not changed once fitted)."""
        memo = self.__dict__.setdefault("_history_memo", {})
        got = memo.get(key)
        if got is not None and got[0] is self.classes:
            return got[1]
        found = self._history_of(key)
        memo[key] = (self.classes, found)
        return found

    def _history_of(self, key: tuple[str, str]) -> tuple[RunClass, str]:
        n = self.cfg.min_history
        own = self.classes.get(key)
        if own is not None and len(own.done) >= n:
            return own, f"{len(own.done)} finished jobs of class {key[1]} in {key[0]}"
        queue = RunClass(f"{key[0]} (all classes)")
        every = RunClass("the cluster (all queues)")
        for k, c in self.classes.items():
            if k[0] == key[0]:
                queue.done += c.done
                queue.running += c.running
            every.done += c.done
            every.running += c.running
        if len(queue.done) >= n:
            return queue, f"{len(queue.done)} finished jobs of {key[0]} (too few of class {key[1]})"
        if len(every.done) >= n:
            return every, f"{len(every.done)} finished jobs of the cluster (too few in {key[0]})"
        cold = self.cfg.cold_run
        if cold is None:
            return RunClass(
                "prior"
            ), f"the prior (exponential, mean {format_duration(self.cfg.prior_run_seconds)})"
        lo, mid, hi = (cold.quantile(every.done, q, every.running) for q in (0.1, 0.5, 0.9))
        seen = (
            f"pooled with the {len(every.done)} finished in the cluster"
            if every.done
            else "nothing finished yet"
        ) + (f" and the {len(every.running)} running" if every.running else "")
        return RunClass("prior", list(every.done), list(every.running)), (
            f"the prior (log-normal, median {format_duration(mid)}, 80 % between {format_duration(lo)} and "
            f"{format_duration(hi)}: {seen})"
        )

    def run_source(self, entry: Entry) -> str:
        fixed = expected_duration(entry.job)
        if fixed is not None:
            return f"its {EXPECTED_DURATION} annotation ({format_duration(fixed)})"
        return self._history(class_key(entry, entry.job, self.cfg.class_label))[1]

    def draw_run(self, entry: Entry, elapsed: float, rng: random.Random) -> float:
        """A run time for the job of ``entry``, knowing it has run ``elapsed`` seconds (0 when not started)."""
        fixed = expected_duration(entry.job)
        if fixed is not None and fixed > elapsed:
            return fixed
        hist, _ = self._history(class_key(entry, entry.job, self.cfg.class_label))
        return self._draw(hist, elapsed, rng)

    def median_run(self, entry: Entry, elapsed: float = 0.0) -> float:
        """The median run time (the written study's: one trace, so one value per job)."""
        draws = sorted(self.draw_run(entry, elapsed, random.Random(i)) for i in range(41))
        return draws[20]

    # -- the profile ----------------------------------------------------------------------------------------
    def stockout_length(self, s: Stockout, rng: random.Random | None) -> float:
        """How much longer the stock-out lasts: a draw (``rng``) or, without one, its median."""
        if rng is None:
            return s.mean_remaining * 0.6931471805599453
        return rng.expovariate(1.0 / s.mean_remaining)

    def profile(self, rng: random.Random | None = None, warmup: float = WARMUP_SECONDS) -> dict[str, Any]:
        """The model as a ``CapacityProfile``; relative times count from the forward run's start. The jobs that
        hold quota go in at 0 under the fitted terms (their DWS requests queue, a stock-out holds their pods); from
        ``RESERVED_LEAD`` to ``warmup`` (the instant of the state) the running jobs get their nodes at once, stock-out
        or not. Stock-out ends are drawn with ``rng`` (None: medians)."""
        lo, hi = self.cfg.prior_provision
        rules: list[dict[str, Any]] = [
            {
                "match": {"during": [{"start": f"{RESERVED_LEAD:g}s", "end": f"{warmup:g}s"}]},
                "available": "unlimited",
                "windows": [],
                "provisionTime": {"fixed": "1s"},
                "queueWait": {"fixed": "0s"},
            }
        ]
        for s in self.stockouts:
            end = warmup + max(60.0, self.stockout_length(s, rng))
            rules.append(
                {
                    "match": {"machineTypes": [s.machine_type], "provisioningModels": ["on-demand"]},
                    "windows": [{"start": "0s", "end": f"{end:.0f}s", "available": 0}],
                    "stockoutMessage": s.code if s.code.isupper() else "ZONE_RESOURCE_POOL_EXHAUSTED",
                }
            )
        for mt, (pmin, pmax, n) in sorted(self.provision.items()):
            if n < 10:  # a few nodes seen: no narrower than the prior's range
                pmin, pmax = min(pmin, lo), max(pmax, hi)
            rules.append(
                {
                    "match": {"machineTypes": [mt]},
                    "provisionTime": {"uniform": {"min": f"{pmin:.0f}s", "max": f"{pmax:.0f}s"}},
                }
            )
        return {
            "apiVersion": "twin.flexq.dev/v1alpha1",
            "kind": "CapacityProfile",
            "metadata": {"name": "fitted"},
            "spec": {
                "defaults": {
                    "available": "unlimited",
                    "provisionTime": {"uniform": {"min": f"{lo:g}s", "max": f"{hi:g}s"}},
                    "queueWait": self._queue_wait(),
                },
                "rules": rules,
            },
        }

    def dws_cold(self) -> bool:
        """Whether DWS waits are drawn from the cold law (too few grants seen for their curve)."""
        return self.cfg.cold_dws is not None and len(self.dws_done) < self.cfg.min_history

    def _queue_wait(self) -> dict[str, Any]:
        """The profile's DWS queue wait: the law the forward runs draw from."""
        cold = self.cfg.cold_dws
        if cold is not None and self.dws_cold():
            mu, sigma = cold.predictive(self.dws_done, self.dws_waiting)
            median = math.exp(mu) * self.cfg.dws_scale
            return {"lognormal": {"median": f"{median:.0f}s", "sigma": round(sigma, 3)}, "max": "7d"}
        return {"exponential": {"mean": f"{self.dws_mean * self.cfg.dws_scale:.0f}s"}, "max": "7d"}

    # -- words ------------------------------------------------------------------------------------------------
    def describe(self) -> list[str]:
        """The model, one line per figure, each with the evidence it stands on."""
        out = []
        med = km_median(self.dws_done, self.dws_waiting)
        seen = f"{len(self.dws_done)} granted, {len(self.dws_waiting)} still waiting or timed out"
        cold = self.cfg.cold_dws
        if cold is not None and self.dws_cold():
            lo, mid, hi = (cold.quantile(self.dws_done, q, self.dws_waiting) for q in (0.1, 0.5, 0.9))
            out.append(
                f"DWS wait: the prior, log-normal, median {format_duration(mid)}, 80 % between "
                f"{format_duration(lo)} and {format_duration(hi)} (too few grants for their own curve: {seen}"
                + (", pooled with them" if self.dws_done else "")
                + ")"
            )
        elif self.dws_done or self.dws_waiting:
            out.append(
                f"DWS wait: exponential, mean {format_duration(self.dws_mean)} (from {seen}"
                + (f"; Kaplan-Meier median {format_duration(med)}" if med is not None else "")
                + f"; plus one prior of {format_duration(self.cfg.prior_dws_wait_seconds)})"
            )
        else:
            out.append(
                f"DWS wait: the prior, exponential with mean {format_duration(self.dws_mean)} (no request seen)"
            )
        for s in self.stockouts:
            out.append(
                f"stock-out of {s.machine_type} (node pool {s.pool}, {s.code}) for {format_duration(self.now - s.since)}"
                f" so far: expected to last {format_duration(s.mean_remaining)} more on average"
            )
        if not self.stockouts:
            out.append("no stock-out now (no capacity refusal on a waiting job's pods)")
        if self.cycle_gaps:
            out.append(
                f"Kueue's scheduling cycle: {self.cycle_seconds:.1f}s (median of {self.cycle_gaps} gaps between "
                "admissions of one ClusterQueue in a burst: one head per ClusterQueue per cycle)"
            )
        else:
            out.append(
                "Kueue's scheduling cycle: taken as instant (no burst of admissions seen to measure it; a deep "
                "queue's admission rate then comes from quota and capacity alone)"
            )
        for mt, (pmin, pmax, n) in sorted(self.provision.items()):
            out.append(
                f"node provisioning {mt}: {format_duration(pmin)}-{format_duration(pmax)} (from {n} nodes)"
            )
        for (queue, klass), c in sorted(self.classes.items()):
            med = c.median()
            spread = ""
            if len(c.done) >= 2:
                p10, p90 = km_quantile(c.done, c.running, 0.1), km_quantile(c.done, c.running, 0.9)
                if p10 is not None and p90 is not None:
                    spread = f", 80 % within {format_duration(p10)}-{format_duration(p90)}"
            out.append(
                f"run time {queue} {klass}: {len(c.done)} finished, {len(c.running)} running"
                + (f", median {format_duration(med)}{spread}" if med is not None else "")
            )
        return out


# -- fitting ----------------------------------------------------------------------------------------------------
def _cond_time(obj: dict, ctype: str) -> float | None:
    c = find_condition(obj, ctype)
    if c is None or c.get("status") != "True":
        return None
    return parse_time_or_none(c.get("lastTransitionTime"))


def _pr_workload(pr: dict) -> str:
    """``namespace/name`` of the Workload a ProvisioningRequest was made for (its owner), else ''."""
    md = pr.get("metadata") or {}
    for o in md.get("ownerReferences") or []:
        if o.get("kind") == "Workload":
            return f"{md.get('namespace', '')}/{o.get('name', '')}"
    return ""


def _queued_flavors(state: ClusterState) -> dict[str, set[str]]:
    """ClusterQueue -> the flavors it checks with a queued-provisioning (DWS) ProvisioningRequest check."""
    classes = {
        (p.get("metadata") or {}).get("name"): (p.get("spec") or {}).get("provisioningClassName", "")
        for p in state.provisioning_configs
    }
    queued = {
        (a.get("metadata") or {}).get("name")
        for a in state.admission_checks
        if classes.get(((a.get("spec") or {}).get("parameters") or {}).get("name")) == QUEUED_CLASS
    }
    out: dict[str, set[str]] = {}
    for cq in state.clusterqueues:
        spec = cq.get("spec") or {}
        every = {
            f.get("name", "") for rg in spec.get("resourceGroups") or [] for f in rg.get("flavors") or []
        }
        mine: set[str] = set()
        for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
            if c.get("name") in queued:
                mine |= set(c.get("onFlavors") or every)
        for name in spec.get("admissionChecks") or []:
            if name in queued:
                mine |= every
        out[(cq.get("metadata") or {}).get("name", "")] = mine
    return out


def _dws(state: ClusterState) -> tuple[list[float], list[float], dict[str, float], int]:
    """DWS waits, from the Workloads (a ProvisioningRequest is deleted with its workload's eviction or end; the
    Workload keeps its admission and conditions): each workload admitted on a flavor with a queued-provisioning
    check waited from its (last) quota reservation to its admission, less its nodes' own creation time (the
    forward run adds it again). When its pool had no room for its slices just before its nodes came, the grant
    itself came somewhere while the pool was full, and the forward run adds the time the pool stayed full
    again (its grants look again every minute): the wait is censored where the pool became full (it was at
    least that long), never counted to the nodes' arrival — counting to the midpoint of the full span counted
    DWS waits twice on a tight pool. Still waiting: censored at the time waited so far (also how long each
    has waited). The fourth value: how many waits were bounded by a full pool."""
    pools = {p["name"]: p for p in state.node_pools}
    fpool = _flavor_pools(state)
    queued = _queued_flavors(state)
    prov = _provision(state)
    rows: list[
        tuple[str, float, float | None, float | None, int, str]
    ] = []  # key, reserved, made, end, n, pool
    for wl in state.workloads:
        adm = (wl.get("status") or {}).get("admission") or {}
        flavors = queued.get(adm.get("clusterQueue", ""), set())
        if not flavors:
            continue
        held = _cond_time(wl, "QuotaReserved")
        if held is None:
            continue
        pool, n = "", 0
        for psa in adm.get("podSetAssignments") or []:
            on = set((psa.get("flavors") or {}).values()) & flavors
            if on:
                pool = fpool.get(sorted(on)[0], "")
                n += int(psa.get("count") or 0)
        if not pool:
            continue
        info = pools.get(pool) or {}
        hosts = 1
        with contextlib.suppress(Exception):
            hosts = catalog.hosts_per_slice(
                catalog.machine_type(info.get("machineType", "")), info.get("tpuTopology") or None
            )
        n = -(-n // max(1, hosts)) * max(1, hosts)
        lo, hi, _seen = prov.get(info.get("machineType", ""), (60.0, 120.0, 0))
        admitted = _cond_time(wl, "Admitted")
        made = None if admitted is None else admitted - (lo + hi) / 2
        md = wl.get("metadata") or {}
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        rows.append((key, held, made, finished_at(wl), n, pool))
    steps: dict[str, list[tuple[float, int]]] = {}
    for _key, _held, made, end, n, pool in rows:
        if made is not None:
            steps.setdefault(pool, []).append((made, n))
            if end is not None:
                steps[pool].append((end + SCALE_DOWN_SECONDS, -n))
    for v in steps.values():
        v.sort()

    def used(pool: str, t: float) -> int:
        return sum(d for when, d in steps.get(pool, []) if when <= t)

    def full_since(pool: str, n: int, held: float, edge: float) -> float | None:
        """When the pool last became full for ``n`` more nodes and stayed so until ``edge`` (not before
        ``held``); None: it had room at ``edge``."""
        top = int(((pools.get(pool) or {}).get("autoscaling") or {}).get("max") or 0)
        if not top or edge <= held or used(pool, edge) + n <= top:
            return None
        since = edge
        for when in reversed([held] + [s[0] for s in steps.get(pool, []) if held < s[0] < edge]):
            if used(pool, when) + n > top:  # full from this instant on
                since = when
            else:
                break
        return max(held, since)

    done, waiting, pending = [], [], {}
    bounded = 0
    for key, held, made, _end, n, pool in rows:
        if made is None:
            # still waiting: for DWS only until its pool became full (the forward run waits for room itself)
            full = full_since(pool, n, held, state.now)
            waited = max(0.0, (state.now if full is None else full) - held)
            waiting.append(waited)
            pending[key] = waited
            continue
        # no room a grant retry before its nodes came (the nodes' time is known within half the provisioning
        # range): the grant came while the pool was full, and waited for room
        lo, hi, _seen = prov.get((pools.get(pool) or {}).get("machineType", ""), (60.0, 120.0, 0))
        full = full_since(pool, n, held, made - GRANT_RETRY_SECONDS - (hi - lo) / 2 - 1.0)
        if full is not None:
            # granted at or after the pool became full (with room, the nodes would have come with the grant):
            # the wait is known to be at least that long, no more — censored there. The time the pool stayed
            # full after is the forward run's own (a grant looks again every minute), not DWS's queue
            waiting.append(full - held)
            bounded += 1
            continue
        done.append(max(0.0, made - held))
    return done, waiting, pending, bounded


def _flavor_pools(state: ClusterState) -> dict[str, str]:
    return {
        (f.get("metadata") or {}).get("name", ""): ((f.get("spec") or {}).get("nodeLabels") or {}).get(
            catalog.LABEL_NODEPOOL, ""
        )
        for f in state.flavors
    }


def _stockouts(state: ClusterState, es: list[Entry], cfg: EtaConfig) -> tuple[list[Stockout], list[float]]:
    """Ongoing stock-outs per node pool, and the lengths of the episodes seen to end."""
    pools = {p["name"]: p for p in state.node_pools}
    fpool = _flavor_pools(state)
    node_times: dict[str, list[float]] = {}
    for n in state.nodes:
        md = n.get("metadata") or {}
        pool = (md.get("labels") or {}).get(catalog.LABEL_NODEPOOL, "")
        t = parse_time_or_none(md.get("creationTimestamp"))
        if pool and t is not None:
            node_times.setdefault(pool, []).append(t)
    refused: dict[str, tuple[float, str]] = {}  # pool -> (first refusal, code) of refusals on waiting pods
    episodes: list[float] = []
    by_job = {}
    for e in es:
        kind, name = e.job_ref
        by_job[(e.namespace, name)] = e
    for ev in state.events:
        if ev.get("reason") not in ("FailedScaleUp", "NotTriggerScaleUp"):
            continue
        refusal = classify_capacity(ev.get("message") or "")
        # a stock-out, GCE quota, or the autoscaler's back-off after a failed scale-up (the refusal itself may be
        # older than the API server keeps events: an hour)
        if refusal is None or refusal.kind not in ("stockout", "quota", "backoff"):
            continue
        obj = ev.get("involvedObject") or {}
        ns = obj.get("namespace") or (ev.get("metadata") or {}).get("namespace", "")
        first = parse_time_or_none(ev.get("firstTimestamp") or ev.get("eventTime")) or state.now
        owner = next(
            (
                e
                for (n2, job), e in by_job.items()
                if n2 == ns and job and obj.get("name", "").startswith(job + "-")
            ),
            None,
        )
        if owner is None:
            continue
        pools_of = {fpool.get(f, "") for f in _pod_flavors(owner, obj.get("name", ""))}
        for pool in pools_of:
            if not pool or pool not in pools or pools[pool].get("queuedProvisioning"):
                continue
            made_after = [t for t in node_times.get(pool, []) if t > first]
            if made_after:  # the pool grew after the refusal: an episode that ended
                episodes.append(min(made_after) - first)
                continue
            if owner.role != "reserved":
                continue
            # the stock-out is at least as old as the wait of the workload its refusal stopped
            held = _cond_time(owner.workload, "QuotaReserved")
            since = min(first, held) if held is not None else first
            code = refusal.code or "GCE_STOCKOUT"
            prev = refused.get(pool)
            if prev is None or since < prev[0]:
                refused[pool] = (since, code if prev is None or prev[1] == "GCE_STOCKOUT" else prev[1])
    out = []
    for pool, (since, code) in sorted(refused.items()):
        unmet = _unmet_since(state, pool, fpool, node_times)
        if unmet is not None:
            since = min(since, unmet)
        elapsed = max(0.0, state.now - since)
        mean = exponential_mean(episodes, [elapsed], cfg.prior_stockout_seconds)
        out.append(Stockout(pool, pools[pool]["machineType"], since, code, mean))
    return out, episodes


def _unmet_since(
    state: ClusterState, pool: str, fpool: dict[str, str], node_times: dict[str, list[float]]
) -> float | None:
    """Since when a stocked-out pool has left its demand unmet, as the Workloads record it — the autoscaler's
    events go after an hour, and a job that waitForPodsReady evicts and Kueue admits again has a new quota
    reservation, but its ``PodsReady=False`` keeps the time its pods first waited (a condition's transition time
    changes only with its status), and a job deactivated after its retries keeps it too. The earliest such time
    among the jobs that never started since — holding quota on the pool's flavors, or holding none any more
    (evicted, deactivated: where they waited is not recorded) —, but not before the pool last grew (its newest
    node; a job that starts on a node another one left proves nothing of the cloud, so a start counts only when
    the pool has no node left to date it by): the stock-out began after that. None: no such job."""
    flavors = {f for f, p in fpool.items() if p == pool}
    made = max(node_times.get(pool, []), default=None)
    last = made
    waited: list[float] = []
    for wl in state.workloads:
        adm = (wl.get("status") or {}).get("admission") or {}
        assigned = [set((psa.get("flavors") or {}).values()) for psa in adm.get("podSetAssignments") or []]
        on = any(fl & flavors for fl in assigned)
        start = started_at(wl)
        if start is not None:
            if on and made is None:  # no node of the pool left to date its last growth: its last start
                last = start if last is None else max(last, start)
            continue
        if (assigned and not on) or finished_at(wl) is not None:
            continue  # it waits elsewhere now, or it ended without a start
        c = find_condition(wl, "PodsReady")
        t = (
            parse_time_or_none((c or {}).get("lastTransitionTime"))
            if (c or {}).get("status") == "False"
            else None
        )
        if t is not None:
            waited.append(t)
    if last is not None:
        waited = [t for t in waited if t >= last]
    if not waited:
        return None
    return min(waited)


def _pod_flavors(owner: Entry, pod: str) -> set[str]:
    """The flavors of the pod set a pod belongs to (its name carries the pod set's: ``-tpu-group-worker-``,
    ``-head-``), else those of the pod sets that ask for an accelerator."""
    assigned = owner.assignments()
    named = [ps for ps in assigned if ps and f"-{ps}-" in pod]
    if named:
        return {f for ps in named for f in assigned[ps].values()}
    accel = {
        f
        for fl in assigned.values()
        for r, f in fl.items()
        if r in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU)
    }
    return accel or {f for fl in assigned.values() for f in fl.values()}


def _provision(state: ClusterState) -> dict[str, tuple[float, float, int]]:
    seen: dict[str, list[float]] = {}
    for n in state.nodes:
        md = n.get("metadata") or {}
        mt = (md.get("labels") or {}).get("node.kubernetes.io/instance-type", "")
        created = parse_time_or_none(md.get("creationTimestamp"))
        ready = next(
            (
                parse_time_or_none(c.get("lastTransitionTime"))
                for c in (n.get("status") or {}).get("conditions") or []
                if c.get("type") == "Ready" and c.get("status") == "True"
            ),
            None,
        )
        if mt and created is not None and ready is not None and 0 <= ready - created < 3600:
            seen.setdefault(mt, []).append(ready - created)
    return {mt: (min(v), max(v), len(v)) for mt, v in seen.items() if v}


def _classes(state: ClusterState, cfg: EtaConfig) -> dict[tuple[str, str], RunClass]:
    classes: dict[tuple[str, str], RunClass] = {}
    jobs = {}
    for j in state.rayjobs + state.batch_jobs:
        md = j.get("metadata") or {}
        jobs[(j.get("kind", ""), md.get("namespace", ""), md.get("name", ""))] = j
    for wl in state.workloads:
        start = started_at(wl)
        if start is None:
            continue
        ref = controller_owner(wl) or {}
        job = jobs.get(
            (ref.get("kind", ""), (wl.get("metadata") or {}).get("namespace", ""), ref.get("name", ""))
        )
        key = class_key(wl, job, cfg.class_label)
        c = classes.setdefault(key, RunClass(f"{key[0]} {key[1]}"))
        end = finished_at(wl)
        fin = find_condition(wl, "Finished")
        if end is not None:
            if (fin or {}).get("reason") != "WorkloadSliceReplaced":  # an elastic job's old slice: not a run
                c.done.append(max(0.0, end - start))
        else:
            c.running.append(max(0.0, state.now - start))
    return classes


def fit(state: ClusterState, cfg: EtaConfig | None = None, view: StateView | None = None) -> Model:
    """The model of ``state``'s cluster (see the module docstring); ``view``: the state read once by the
    caller (read here when None)."""
    cfg = cfg or EtaConfig()
    es = (view or StateView.of(state)).entries
    m = Model(now=state.now, cfg=cfg)
    m.dws_done, m.dws_waiting, m.dws_pending, m.dws_bounded = _dws(state)
    m.dws_mean = exponential_mean(m.dws_done, m.dws_waiting, cfg.prior_dws_wait_seconds)
    m.stockouts, m.stockout_episodes = _stockouts(state, es, cfg)
    m.provision = _provision(state)
    m.classes = _classes(state, cfg)
    m.machine_types = {p["machineType"] for p in state.node_pools}
    m.arrivals = _arrivals(state, cfg)
    m.cycle_seconds, m.cycle_gaps = _cycle_seconds(state)
    return m


BURST_GAP = 10.0  # consecutive admissions of one ClusterQueue closer than this belong to one burst
MIN_CYCLE_GAPS = 5


def _cycle_seconds(state: ClusterState) -> tuple[float, int]:
    """Kueue admits one head per ClusterQueue per scheduling cycle (kueue#14477), so within a burst — a queue
    deep enough that admissions follow one another — the gaps between one ClusterQueue's admissions are its
    cycles. The median of the positive gaps shorter than ``BURST_GAP`` (at least ``MIN_CYCLE_GAPS``), else 0."""
    by_cq: dict[str, list[float]] = {}
    for wl in state.workloads:
        c = find_condition(wl, "QuotaReserved")
        t = (
            parse_time_or_none((c or {}).get("lastTransitionTime"))
            if (c or {}).get("status") == "True"
            else None
        )
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        if t is not None and cq:
            by_cq.setdefault(cq, []).append(t)
    gaps = []
    for times in by_cq.values():
        times.sort()
        gaps += [b - a for a, b in zip(times, times[1:], strict=False) if 0.0 < b - a < BURST_GAP]
    if len(gaps) < MIN_CYCLE_GAPS:
        return 0.0, 0
    gaps.sort()
    return gaps[len(gaps) // 2], len(gaps)


def _arrivals(state: ClusterState, cfg: EtaConfig) -> list[Arrival]:
    """Per LocalQueue, run-time class and priority: the rate at which Workloads were created over the history
    the cluster keeps (at most ``ARRIVAL_WINDOW``; finished Workloads count while the cluster keeps them)."""
    jobs = {}
    for j in state.rayjobs + state.batch_jobs:
        md = j.get("metadata") or {}
        jobs[(j.get("kind", ""), md.get("namespace", ""), md.get("name", ""))] = j
    groups: dict[tuple[str, tuple[str, str], int], list[tuple[float, dict]]] = {}
    first = state.now
    for wl in state.workloads:
        md, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        created = parse_time_or_none(md.get("creationTimestamp"))
        if created is None or created > state.now or state.now - created > ARRIVAL_WINDOW:
            continue
        fin = find_condition(wl, "Finished")
        if (fin or {}).get("reason") == "WorkloadSliceReplaced" or (md.get("annotations") or {}).get(
            "kueue.x-k8s.io/workload-slice-replacement-for"
        ):
            continue  # an elastic job's new slice: not a new job
        ref = controller_owner(wl) or {}
        job = jobs.get((ref.get("kind", ""), md.get("namespace", ""), ref.get("name", "")))
        key = class_key(wl, job, cfg.class_label)
        prio = int(spec.get("priority") or 0)
        groups.setdefault((key[0], key, prio), []).append((created, wl))
        first = min(first, created)
    window = state.now - first
    out: list[Arrival] = []
    if window < 3600.0:  # less than an hour of history: no rate worth the name
        return out
    for (queue, key, prio), seen in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if len(seen) < 2:
            continue
        template = max(seen, key=lambda cw: cw[0])[1]
        out.append(Arrival(queue, key, prio, len(seen) / window, len(seen), window, template))
    return out
