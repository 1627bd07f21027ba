"""The one place for the statistics of waits and run times seen on a cluster, where some are still under way.

A wait (a DWS request's time to its grant, a job's run time, a stock-out's length) is either **done** (seen to
end after that long) or **censored** (under way for that long so far: it will last at least that). Dropping the
censored ones makes a queue whose requests all sit waiting look short; counting them as done does too. So:

- ``km_curve`` / ``km_median`` / ``km_quantile``: the Kaplan-Meier estimate of the survival curve, its median
  and quantiles (None when the curve does not fall that far: the answer lies beyond what was seen);
- ``exponential_mean``: the maximum-likelihood mean of an exponential law from done and censored waits
  (total time seen over the number seen to end), with a prior of ``prior_weight`` pseudo-observations;
- ``sample_beyond``: one draw of a duration known to exceed ``elapsed``, from the Kaplan-Meier curve of what was
  seen, with an exponential tail past the longest observation;
- ``quantile``: the interpolated quantile of a sample (as numpy's default, without numpy);
- ``ColdLaw``: what a duration is taken to be where the cluster has shown too few of it for the curve above (a
  cluster just created, a class never seen): a log-normal whose log-median is pooled between a wide prior and
  the few durations seen (a normal prior on the log-median, the usual conjugate update), so one job seen to run a
  minute moves the next estimate most of the way to a minute, and nothing seen says "from a minute to hours",
  which is the truth then.

Pure functions of their arguments. Used by flexq's fallback (``flexq.fallback.waits``) and the ETA
(``flexq.eta``). Imports nothing from flexq.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "ColdLaw",
    "exchangeable_next",
    "exponential_mean",
    "km_curve",
    "km_median",
    "km_quantile",
    "lognormal_beyond",
    "quantile",
    "sample_beyond",
]


def _km_steps(done: Sequence[float], censored: Sequence[float]) -> list[tuple[float, float, int]]:
    """The Kaplan-Meier curve's steps: ``(t, S(t), n)`` after each time a wait was seen to end, in time order, ``n``
    the observations that lasted at least ``t`` (ended at ``t`` or later, or still waiting then). At a tie, an end
    counts before a censoring (the censored one was still waiting at that time)."""
    points = sorted([(t, 0) for t in done] + [(t, 1) for t in censored])
    survival, at_risk = 1.0, len(points)
    steps: list[tuple[float, float, int]] = []
    last, lasted = None, 0
    for t, cens in points:
        if t != last:
            last, lasted = t, at_risk
        if not cens:
            survival *= 1.0 - 1.0 / at_risk
            steps.append((t, survival, lasted))
        at_risk -= 1
    return steps


def km_curve(done: Sequence[float], censored: Sequence[float]) -> list[tuple[float, float]]:
    """The Kaplan-Meier survival curve: ``(t, S(t))`` after each time a wait was seen to end, in time order.
    At a tie, an end counts before a censoring (the censored one was still waiting at that time)."""
    return [(t, s) for t, s, _ in _km_steps(done, censored)]


def km_quantile(done: Sequence[float], censored: Sequence[float], q: float) -> float | None:
    """The time by which a share ``q`` of waits have ended (Kaplan-Meier), or None when fewer than that share
    are known to have ended (the quantile lies beyond what was seen)."""
    for t, survival in km_curve(done, censored):
        if survival <= 1.0 - q + 1e-12:
            return t
    return None


def km_median(done: Sequence[float], censored: Sequence[float]) -> float | None:
    """The Kaplan-Meier median of waits: ``done`` finished after that long, ``censored`` have waited that long
    so far. None when fewer than half are known to have finished (the median lies beyond)."""
    return km_quantile(done, censored, 0.5)


def exponential_mean(
    done: Sequence[float], censored: Sequence[float], prior_mean: float, prior_weight: float = 1.0
) -> float:
    """The mean of an exponential law fitted to done and censored waits (maximum likelihood: the total time
    observed over the number of ends), pulled towards ``prior_mean`` by ``prior_weight`` pseudo-observations
    of it. With nothing seen: the prior."""
    total = sum(done) + sum(censored) + prior_weight * prior_mean
    events = len(done) + prior_weight
    return total / events if events > 0 else prior_mean


def sample_beyond(
    done: Sequence[float],
    censored: Sequence[float],
    elapsed: float,
    rng: random.Random,
    tail_mean: float,
    min_at_risk: int = 1,
) -> float:
    """One draw of a duration known to exceed ``elapsed``: from the Kaplan-Meier curve of ``done`` and
    ``censored`` restricted to times past ``elapsed``, of which a share ``1/(n+1)`` (``n`` observations) is moved
    beyond the longest seen; that mass, and all of it when nothing past ``elapsed`` was seen to end, is an
    exponential tail of mean ``tail_mean`` past ``max(elapsed, that end)``. The curve is followed only while at
    least ``min_at_risk`` observations last that long: its steps past that rest on too few to say where the rest
    ends, and the tail takes over there."""
    # a share 1/(n+1) of waits outlast everything seen (n seen): a few observations are not the whole law
    beyond = 1.0 / (len(done) + len(censored) + 1)
    base, past = 1.0, []  # S(elapsed), and the curve's steps past elapsed (with how many lasted that long)
    for t, s0, lasted in _km_steps(done, censored):
        s = beyond + (1.0 - beyond) * s0
        if t <= elapsed:
            base = s
        else:
            past.append((t, s, lasted))
    u = rng.random()
    start = elapsed
    if base > 0:
        for t, s, lasted in past:
            if lasted < min_at_risk:
                break  # too few last this long: the tail from here
            if s / base <= u:  # P(T > t | T > elapsed) has fallen to the draw: it ends here
                return t
            start = t
    return start + rng.expovariate(1.0 / tail_mean) if tail_mean > 0 else start


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation between order statistics (numpy's default)."""
    if not values:
        raise ValueError("quantile of no values")
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


_UNIT = NormalDist()


@dataclass(frozen=True)
class ColdLaw:
    """A duration where too few were seen for the Kaplan-Meier curve: log-normal, its log-median drawn towards
    the few seen. ``median``: the prior's median (seconds); ``spread``: the prior's standard deviation of the
    log-median (how many e-folds it may be off); ``within``: the standard deviation of log-durations around
    their median (how much two durations of one kind differ)."""

    median: float
    spread: float
    within: float

    def posterior(self, seen: Sequence[float], censored: Sequence[float] = ()) -> tuple[float, float]:
        """(mean, standard deviation) of the log-median, having seen ``seen`` end (each > 0) and
        ``censored`` still under way after that long (each at least that: a few EM steps put each at its
        expected log-duration beyond where it is now, so requests waiting for hours are not taken for short)."""
        logs = [math.log(x) for x in seen if x > 0]
        prior_precision = 1.0 / self.spread**2
        precision = prior_precision + len(logs) / self.within**2
        mu = (prior_precision * math.log(self.median) + sum(logs) / self.within**2) / precision
        # a duration under way for less than the median so far says little (imputed, it would only narrow the
        # law around its prior): only those already past it count, each at its expected log-duration beyond
        # where it is (a few EM steps)
        cens = [c for c in (math.log(x) for x in censored if x > 0) if c > mu]
        if cens:
            precision = prior_precision + (len(logs) + len(cens)) / self.within**2
            for _ in range(8):
                imputed = 0.0
                for c in cens:
                    a = (c - mu) / self.within
                    imputed += mu + self.within * _UNIT.pdf(a) / max(1e-12, 1.0 - _UNIT.cdf(a))
                mu = (
                    prior_precision * math.log(self.median) + (sum(logs) + imputed) / self.within**2
                ) / precision
        return mu, math.sqrt(1.0 / precision)

    def predictive(self, seen: Sequence[float], censored: Sequence[float] = ()) -> tuple[float, float]:
        """(mu, sigma) of the log-normal law of the next duration (the log-median's uncertainty and the spread
        of durations around it)."""
        mu, sd = self.posterior(seen, censored)
        return mu, math.sqrt(self.within**2 + sd**2)

    def drawn(self, seen: Sequence[float], censored: Sequence[float], rng: random.Random) -> ColdLaw:
        """This law with its median drawn from the posterior, fixed: one forward run's law. Every duration of a
        run then shares one median (what is unknown is the kind's median, the same for all its jobs), so a deep
        queue of jobs is not a sum of independent heavy tails."""
        mu, sd = self.posterior(seen, censored)
        return ColdLaw(median=math.exp(rng.gauss(mu, sd)), spread=1e-6, within=self.within)

    def quantile(self, seen: Sequence[float], q: float, censored: Sequence[float] = ()) -> float:
        mu, sigma = self.predictive(seen, censored)
        return math.exp(mu + sigma * _UNIT.inv_cdf(min(max(q, 1e-12), 1.0 - 1e-12)))

    def sample_beyond(
        self, seen: Sequence[float], elapsed: float, rng: random.Random, censored: Sequence[float] = ()
    ) -> float:
        """One draw of the duration, known to exceed ``elapsed`` (the law truncated there, by its inverse)."""
        mu, sigma = self.predictive(seen, censored)
        return lognormal_beyond(mu, sigma, elapsed, rng)


def lognormal_beyond(mu: float, sigma: float, elapsed: float, rng: random.Random) -> float:
    """One draw of a log-normal duration (log-median ``mu``, log-sd ``sigma`` > 0) known to exceed ``elapsed``:
    the law truncated there, by its inverse; far past everything the law expects, as long again as it has lasted
    at the median."""
    floor = _UNIT.cdf((math.log(elapsed) - mu) / sigma) if elapsed > 0 else 0.0
    if floor > 1.0 - 1e-9:
        return elapsed / max(1e-9, 1.0 - rng.random())
    u = floor + (1.0 - floor) * rng.random()
    return max(elapsed, math.exp(mu + sigma * _UNIT.inv_cdf(min(max(u, 1e-12), 1.0 - 1e-12))))


def exchangeable_next(
    seen: Sequence[float], rng: random.Random, lo: float, hi: float, resolution: float = 1.0
) -> float:
    """The next of ``seen`` exchangeable observations (made at ``resolution``: a draw of one lands within it either
    side): slower than all n of them with probability 1 / (n + 1), and faster than all with as much, then drawn as
    far as the prior's ``hi`` or ``lo``; else one of them. None seen: uniform over the prior [``lo``, ``hi``]."""
    n = len(seen)
    u = rng.random() * (n + 1)
    if u < 1.0:
        top = max(seen, default=lo)
        return rng.uniform(top, max(top, hi))
    if u < 2.0:
        bottom = min(seen)
        return rng.uniform(min(lo, bottom), bottom)
    return max(lo, seen[rng.randrange(n)] + resolution * (rng.random() - rng.random()))
