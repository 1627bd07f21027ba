"""The capacity model and the run times, as fitted to what a cluster shows of its own history.

Owns ``FittedCapacity`` (the fitted model: DWS waits, stock-outs, node provisioning times, run-time classes,
arrivals — each with where it came from) with its draws: how much longer a DWS request waits (``draw_dws``), a
stock-out lasts (``draw_stockout``), a job runs (``draw_run``, ``draw_class_run``: its
``flexq.dev/expected-duration`` annotation, else its class's Kaplan-Meier curve, knowing how long it has run; the
cold law, ``flexq.stats.ColdLaw``, where the cluster has shown too little), the node provisioning range, and a
bootstrap refit (``bootstrap``: each forward run's own parameters). Its knobs are
``flexq.forecast.config.EtaConfig``. How each term is fitted from a cluster's state is ``flexq.forecast.fit``'s.

``FittedCapacity.profile(...)`` writes the model as a ``CapacityProfile`` (``docs/capacity-profile.md``) the user can read
and edit: a warm-up span in which the jobs running at the instant get their nodes at once, then the fitted terms.
``FittedCapacity.describe()`` says every figure with its evidence. Pure: no clock, no store.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import random
from dataclasses import dataclass, field
from typing import Any

from flexq.clock import format_duration
from flexq.forecast.config import EtaConfig
from flexq.forecast.declared import Declared, expected_duration
from flexq.forecast.jobs import (
    EXPECTED_DURATION,
    JobEntry,
    class_key,
)
from flexq.stats import exchangeable_next, exponential_mean, km_median, km_quantile, sample_beyond

__all__ = [
    "FittedCapacity",
    "RunClass",
    "Stockout",
    "WARMUP_SECONDS",
    "RESERVED_LEAD",
    "Arrival",
]

QUEUED_CLASS = "queued-provisioning.gke.io"
WARMUP_SECONDS = 300.0  # the forward twin's first five minutes: the running jobs get their nodes at once
MIN_EPISODES = 3  # stock-outs seen to end before their lengths stand for the next one's
RESERVED_LEAD = 30.0  # the jobs holding quota go in first: their requests are queued before the warm-up
# nodes Ready to the pods Ready before any start was seen: up to this long, drawn (the twin's kubelet starts them at
# once, a real node in seconds to minutes: image pulls; a fixed 5 s put every start on nodes already up 5 s late)
POD_START_SECONDS = 5.0
# a twin's job end written after the run it declares, before one was seen: up to this long, drawn (181 s for 180)
RUN_LAG_SECONDS = 2.0


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
    model: str = "on-demand"  # the pool's provisioning model: a stock-out is of one model's capacity

    @property
    def capacity(self) -> tuple[str, str]:
        """What is out: (machine type, provisioning model)."""
        return self.machine_type, self.model


@dataclass
class FittedCapacity:
    """The fitted model (see the module docstring); every figure keeps its evidence."""

    now: float
    cfg: EtaConfig
    dws_mean: float = 0.0
    dws_done: list[float] = field(default_factory=list)
    dws_waiting: list[float] = field(default_factory=list)
    stockouts: list[Stockout] = field(default_factory=list)
    stockout_episodes: list[float] = field(default_factory=list)
    stockout_censored: list[float] = field(default_factory=list)  # episodes seen to last at least so long
    # (machine type, provisioning model) -> (stock-outs seen to begin, seconds watched outside them)
    stockout_onsets: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    onset_picks: dict[tuple[str, str], float] = field(default_factory=dict)  # a forward run's (``bootstrap``)
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
    # machine -> the node creation range one forward run drew (``provision_drawn``; empty: ``provision_range``)
    provision_picks: dict[str, tuple[float, float]] = field(default_factory=dict)
    declared: Declared | None = None  # what the twin declares (flexq.forecast.declared; None: a real cluster)
    # per started job: its nodes Ready (or its admission, on nodes already up) to its pods all ready, seconds
    pod_starts: list[float] = field(default_factory=list)
    # per finished job whose run a twin declared: its end after that run, seconds
    run_lags: list[float] = field(default_factory=list)

    # -- DWS waits, stock-outs, provisioning --------------------------------------------------------------------
    def draw_dws(self, elapsed: float, rng: random.Random, machine_type: str = "") -> float:
        """How much longer a DWS request (for ``machine_type``) that has waited ``elapsed`` seconds waits for its
        grant: from the Kaplan-Meier curve of the waits seen (finished, and the censored ones), past ``elapsed``;
        beyond the longest seen, an exponential tail of the fitted mean. Too few seen: the twin's declared law,
        else the cold law."""
        cold = self.cfg.cold_dws
        if self.declared is not None and len(self.dws_done) < self.cfg.min_history:
            return self.declared.dws_left(machine_type, elapsed, rng) * self.cfg.dws_scale
        if cold is not None and len(self.dws_done) < self.cfg.min_history:
            total = cold.sample_beyond(self.dws_done, elapsed, rng, self.dws_waiting)
        else:
            total = sample_beyond(
                self.dws_done, self.dws_waiting, elapsed, rng, self.dws_mean, self.cfg.min_at_risk
            )
        return max(0.0, total - elapsed) * self.cfg.dws_scale

    def bootstrap(self, rng: random.Random) -> FittedCapacity:
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
        out.stockout_episodes, out.stockout_censored = resample(
            self.stockout_episodes, self.stockout_censored
        )
        # the onsets seen are a Poisson count: the run's rate drawn from its posterior (Gamma: as many seen, over
        # the time watched and the prior's)
        prior, onsets = self.cfg.stockout_onset_prior_seconds, sorted(self.stockout_onsets.items())
        out.onset_picks = {key: rng.gammavariate(n, 1.0 / (w + prior)) for key, (n, w) in onsets if n}
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
        out.provision_picks = {mt: self.provision_drawn(mt, rng) for mt in sorted(self.provision)}
        out.pod_starts = [self.pod_starts[rng.randrange(len(self.pod_starts))] for _ in self.pod_starts]
        return out

    def draw_pod_start(self, rng: random.Random) -> float:
        """How long a job's pods take from their nodes Ready (or its admission, on nodes already up) to all ready:
        the next of the starts seen (``exchangeable_next``: one draw in n + 1 slower than all, as far as the prior's
        ``POD_START_SECONDS``, one faster, as far as at once). One start seen in the same second as its nodes: half
        the draws within the prior's 5 s, where the live twin's hand-overs of a second or two then fall."""
        return exchangeable_next(self.pod_starts, rng, 0.0, POD_START_SECONDS)

    def dws_waited(self, key: str) -> float | None:
        """How long the accepted, not yet provisioned DWS request of workload ``key`` has waited (None: none)."""
        return self.dws_pending.get(key)

    def draw_stockout(self, s: Stockout, rng: random.Random) -> float:
        """How much longer an ongoing stock-out lasts, knowing how long it has: from the episodes seen to end
        (Kaplan-Meier, this one censored), an exponential tail of its fitted mean beyond them."""
        elapsed = max(0.0, self.now - s.since)
        if len(self.stockout_episodes) >= MIN_EPISODES:
            lasted = [elapsed, *self.stockout_censored]
            left = sample_beyond(self.stockout_episodes, lasted, elapsed, rng, s.mean_remaining) - elapsed
        else:  # too few ends seen: as long again as it has lasted, at the median (P(T > t | T > e) = e / t)
            scale = max(elapsed, self.cfg.min_stockout_seconds)
            left = scale * (1.0 / max(1e-9, 1.0 - rng.random()) - 1.0)
        return max(60.0, left)

    def onset_rate(self, capacity: tuple[str, str]) -> float:
        """Stock-outs of ``capacity`` (machine type, provisioning model) to begin per second: those seen to begin
        over the time watched outside them, and ``stockout_onset_prior_seconds`` more watched without one (none
        seen: none to come)."""
        picked = self.onset_picks.get(capacity)
        if picked is not None:  # this forward run's draw (``bootstrap``)
            return picked
        n, watched = self.stockout_onsets.get(capacity, (0, 0.0))
        return n / (watched + self.cfg.stockout_onset_prior_seconds) if n else 0.0

    def draw_new_stockout(self, rng: random.Random) -> float:
        """The length of a stock-out that has not begun: from the episodes seen to end (Kaplan-Meier, an
        exponential tail of their mean beyond them) when there are ``MIN_EPISODES``, else an exponential of
        their mean with the prior's."""
        lasted = self.stockout_censored
        mean = exponential_mean(self.stockout_episodes, lasted, self.cfg.prior_stockout_seconds)
        if len(self.stockout_episodes) >= MIN_EPISODES:
            return max(60.0, sample_beyond(self.stockout_episodes, lasted, 0.0, rng, mean))
        return max(60.0, rng.expovariate(1.0 / mean))

    def stockout_windows(
        self, now: float, horizon: float, rng: random.Random
    ) -> dict[tuple[str, str], list[tuple[float, float]]]:
        """One forward run's stock-outs per (machine type, provisioning model), (start, end) in time order: the ongoing one's end
        (``draw_stockout``), then those to come before ``now + horizon`` — onsets at ``onset_rate`` (a Poisson
        process, from the end of the one before), each lasting ``draw_new_stockout``."""
        out: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for s in self.stockouts:
            end = now + self.draw_stockout(s, rng)
            cur = out.setdefault(s.capacity, [(now, end)])
            cur[0] = (now, max(cur[0][1], end))
        for key in sorted(self.stockout_onsets):
            rate = self.onset_rate(key)
            if rate <= 0.0:
                continue
            ws = out.setdefault(key, [])
            t = ws[-1][1] if ws else now
            while True:
                t += rng.expovariate(rate)
                if t >= now + horizon:
                    break
                end = t + self.draw_new_stockout(rng)
                ws.append((t, end))
                t = end
        return out

    def provision_range(self, machine_type: str) -> tuple[float, float]:
        """Node creation to Ready for ``machine_type`` (uniform between these): this forward run's draw
        (``provision_drawn``) if it made one; else the range seen (a typical run: ``profile(None)``'s medians);
        else the prior."""
        picked = self.provision_picks.get(machine_type)
        if picked is not None:
            return picked
        seen = self.provision.get(machine_type)
        return self.prior_provision(machine_type) if seen is None else (seen[0], seen[1])

    def prior_provision(self, machine_type: str) -> tuple[float, float]:
        """Node creation to Ready before any node of ``machine_type`` was seen: the twin's declared law, else
        the stated prior."""
        if self.declared is not None:
            return self.declared.provision_range(machine_type)
        return self.cfg.prior_provision

    def provision_drawn(self, machine_type: str, rng: random.Random) -> tuple[float, float]:
        """One forward run's range for ``machine_type``: having seen n nodes made, the next is slower than all of
        them with probability 1 / (n + 1), and faster than all of them with as much (they are exchangeable); how
        much slower or faster only the prior can say. So a run draws once whether its pool is like that (between
        the slowest seen and the prior's slowest, or the prior's fastest and the fastest seen), else it makes its
        nodes within the seen range. Four nodes seen made in 5 s: three runs in five make theirs in 5 s, where
        every run drew them between 5 s and the prior's 2 min until 10 were seen."""
        lo, hi = self.prior_provision(machine_type)
        seen = self.provision.get(machine_type)
        if seen is None:
            return lo, hi
        pmin, pmax, n = seen
        u = rng.random() * (n + 1)
        if u < 1.0:
            return pmax, max(pmax, hi)
        if u < 2.0:
            return min(pmin, lo), pmin
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
            hist.done,
            hist.running,
            elapsed,
            rng,
            hist.tail_mean(self.cfg.prior_run_seconds),
            self.cfg.min_at_risk,
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

    def run_source(self, entry: JobEntry) -> str:
        fixed = expected_duration(entry.job)
        if fixed is not None:
            return f"its {EXPECTED_DURATION} annotation ({format_duration(fixed)})"
        if self.declared is not None and self.declared.run_seconds(entry.job) is not None:
            return self.declared.run_words(entry.job)
        return self._history(class_key(entry, entry.job, self.cfg.class_label))[1]

    def draw_run(self, entry: JobEntry, elapsed: float, rng: random.Random, end_lag: bool = False) -> float:
        """A run time for the job of ``entry``, knowing it has run ``elapsed`` seconds (0 when not started). A run
        the twin declares is its executor's; with ``end_lag`` the job's end comes after it as the twin's finished
        jobs showed (the next of ``run_lags``, ``exchangeable_next``; the exact engine's twin adds its own)."""
        fixed = expected_duration(entry.job)
        if fixed is None and self.declared is not None:
            fixed = self.declared.run_seconds(entry.job)
            if fixed is not None:  # the twin's own: past it, the job is ending
                lag = exchangeable_next(self.run_lags, rng, 0.0, RUN_LAG_SECONDS) if end_lag else 0.0
                return max(fixed, elapsed + 1.0) + lag
        if fixed is not None and fixed > elapsed:
            return fixed
        hist, _ = self._history(class_key(entry, entry.job, self.cfg.class_label))
        return self._draw(hist, elapsed, rng)

    def median_run(self, entry: JobEntry, elapsed: float = 0.0) -> float:
        """The median run time (the written study's: one trace, so one value per job)."""
        draws = sorted(self.draw_run(entry, elapsed, random.Random(i)) for i in range(41))
        return draws[20]

    # -- the profile ----------------------------------------------------------------------------------------
    def stockout_length(self, s: Stockout, rng: random.Random | None) -> float:
        """How much longer the stock-out lasts, as the fast engine draws it (``draw_stockout``): a draw (``rng``)
        or, without one, the median of its draws (one typical story: ``flexq simulate --from-cluster``)."""
        if rng is not None:
            return self.draw_stockout(s, rng)
        draws = sorted(self.draw_stockout(s, random.Random(i)) for i in range(41))
        return draws[20]

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
        spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
        if rng is not None:  # the ongoing stock-outs' ends and those to come, as the fast engine draws them
            spans = self.stockout_windows(self.now, self.cfg.horizon, rng)
        for s in self.stockouts if rng is None else ():  # one typical story: the ongoing ones at their median
            end = self.now + self.stockout_length(s, None)
            spans[s.capacity] = [(self.now, max(end, spans.get(s.capacity, [(0.0, 0.0)])[0][1]))]
        codes = {s.capacity: s.code for s in reversed(self.stockouts) if s.code.isupper()}
        for (mt, pm), spans_of in sorted(spans.items()):
            rel = [(max(0.0, a - self.now), b - self.now) for a, b in spans_of]
            windows = [
                {"start": f"{warmup + a:.0f}s" if a else "0s", "end": f"{warmup + b:.0f}s"} for a, b in rel
            ]
            rules.append(
                {
                    "match": {"machineTypes": [mt], "provisioningModels": [pm]},
                    "windows": [{**w, "available": 0} for w in windows],
                    "stockoutMessage": codes.get((mt, pm), "ZONE_RESOURCE_POOL_EXHAUSTED"),
                }
            )
        for mt in sorted(self.provision):
            pmin, pmax = self.provision_range(mt) if rng is None else self.provision_drawn(mt, rng)
            rules.append(
                {
                    "match": {"machineTypes": [mt]},
                    "provisionTime": {"uniform": {"min": f"{pmin:.0f}s", "max": f"{pmax:.0f}s"}},
                }
            )
        if self.declared is not None:
            cold = len(self.dws_done) < self.cfg.min_history
            rules += self.declared.rules(sorted(self.machine_types), set(self.provision), cold)
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
        scale = self.cfg.dws_scale
        if (
            self.dws_done or self.dws_waiting
        ):  # the waits seen, as ``draw_dws`` draws them (Kaplan-Meier, a tail)
            return {
                "empirical": {
                    "seen": [round(x * scale, 3) for x in self.dws_done],
                    "censored": [round(x * scale, 3) for x in self.dws_waiting],
                    "tailMean": f"{self.dws_mean * scale:.0f}s",
                    "minAtRisk": self.cfg.min_at_risk,
                },
                "max": "7d",
            }
        return {"exponential": {"mean": f"{self.dws_mean * scale:.0f}s"}, "max": "7d"}

    # -- words ------------------------------------------------------------------------------------------------
    def describe(self) -> list[str]:
        """The model, one line per figure, each with the evidence it stands on."""
        out = []
        med = km_median(self.dws_done, self.dws_waiting)
        seen = f"{len(self.dws_done)} granted, {len(self.dws_waiting)} still waiting or timed out"
        cold = self.cfg.cold_dws
        if self.declared is not None and len(self.dws_done) < self.cfg.min_history:
            out.append(
                f"DWS wait: {self.declared.words('queue_wait', '', 'queued')} (too few grants seen: {seen})"
            )
        elif cold is not None and self.dws_cold():
            lo, mid, hi = (cold.quantile(self.dws_done, q, self.dws_waiting) for q in (0.1, 0.5, 0.9))
            out.append(
                f"DWS wait: the prior, log-normal, median {format_duration(mid)}, 80 % between "
                f"{format_duration(lo)} and {format_duration(hi)} (too few grants for their own curve: {seen}"
                + (", pooled with them" if self.dws_done else "")
                + ")"
            )
        elif self.dws_done:
            out.append(
                f"DWS wait: the Kaplan-Meier curve of the waits seen ({seen}"
                + (f"; median {format_duration(med)}" if med is not None else "")
                + f"), one wait in {len(self.dws_done) + len(self.dws_waiting) + 1} beyond the longest seen by "
                f"an exponential tail of mean {format_duration(self.dws_mean)} (they and one prior of "
                f"{format_duration(self.cfg.prior_dws_wait_seconds)})"
            )
        elif self.dws_waiting:
            out.append(
                f"DWS wait: exponential, mean {format_duration(self.dws_mean)} (none granted yet: {seen}; "
                f"they and one prior of {format_duration(self.cfg.prior_dws_wait_seconds)})"
            )
        else:
            out.append(
                f"DWS wait: the prior, exponential with mean {format_duration(self.dws_mean)} (no request seen)"
            )
        n_ep = len(self.stockout_episodes)
        n_cens = len(self.stockout_censored)
        basis = (
            f"drawn from the {n_ep} episode(s) seen to end"
            + (
                f" and the {n_cens} seen to last at least so long (no demand left to show their end)"
                if n_cens
                else ""
            )
            if n_ep >= MIN_EPISODES
            else f"drawn as 'as long again as it has lasted' ({n_ep} episode(s) seen to end, fewer than {MIN_EPISODES})"
        )
        for s in self.stockouts:
            out.append(
                f"stock-out of {s.machine_type} (node pool {s.pool}, {s.code}) for {format_duration(self.now - s.since)}"
                f" so far: {format_duration(self.stockout_length(s, None))} more at the median; its end {basis}"
            )
        if not self.stockouts:
            out.append("no stock-out now (no capacity refusal on a waiting job's pods)")
        for (mt, pm), (n, watched) in sorted(self.stockout_onsets.items()):
            if n:
                out.append(
                    f"stock-outs to come of {mt} ({pm}): one every "
                    f"{format_duration(1.0 / self.onset_rate((mt, pm)))} on "
                    f"average ({n} seen to begin in {format_duration(watched)} watched outside them, and a prior "
                    f"of {format_duration(self.cfg.stockout_onset_prior_seconds)} without one)"
                )
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
            lo, hi = self.prior_provision(mt)
            joined = min(pmin, lo), max(pmax, hi)
            out.append(
                f"node provisioning {mt}: {format_duration(pmin)}-{format_duration(pmax)} (from {n} nodes)"
                + (
                    f"; a forward run draws them there, or with probability 1/{n + 1} each slower or faster than "
                    f"every node seen, as far as the prior's {format_duration(lo)}-{format_duration(hi)}"
                    if joined != (pmin, pmax)
                    else ""
                )
            )
        ps = sorted(self.pod_starts)
        out.append(
            f"pods start: {format_duration(ps[len(ps) // 2])} at the median from their nodes Ready (or the admission, "
            f"on nodes up) to PodsReady, {format_duration(ps[0])}-{format_duration(ps[-1])} (from {len(ps)} jobs)"
            if ps
            else f"pods start: within {POD_START_SECONDS:g}s of their nodes Ready (the prior: no start seen)"
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
