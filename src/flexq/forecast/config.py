"""The ETA's knobs: ``EtaConfig``, with the priors that stand in where the cluster has shown nothing, and the cold
laws (``COLD_RUN``, ``COLD_DWS``: ``flexq.stats.ColdLaw``) a run time and a DWS wait are taken to be until the cluster
has shown enough of them. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass

from flexq.forecast.jobs import CLASS_LABEL
from flexq.stats import ColdLaw

__all__ = ["EtaConfig", "COLD_RUN", "COLD_DWS"]

# a run time before ``min_history`` were seen: median 30 min, the median itself off by e^±2.5 (×12), runs of one
# kind within e^±1.28 of theirs at 10-90 %: with nothing seen, 80 % between about a minute and 16 hours
COLD_RUN = ColdLaw(median=1800.0, spread=2.5, within=1.0)
# a DWS wait before three grants were seen: GKE's waits run from seconds (free capacity) to days (7-day limit)
COLD_DWS = ColdLaw(median=600.0, spread=2.5, within=1.5)


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
    # a DWS request's wait when none was seen (exponential, mean 30 min)
    prior_dws_wait_seconds: float = 1800.0
    prior_stockout_seconds: float = 3 * 3600.0  # a stock-out's length when none was seen to end (mean 3 h)
    min_stockout_seconds: float = 1800.0  # a stock-out just begun is taken to have lasted this long
    # the stock-outs to come: onsets seen over the time watched, and this much more time watched without one (a
    # cluster that showed none is forecast without one; one onset in an hour watched is not one an hour)
    stockout_onset_prior_seconds: float = 86400.0
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
    # a Kaplan-Meier curve of DWS waits or run times is read only while this many observations last that long (as
    # ``min_history`` asks 3 to read a curve at all: a request 4 h old where one of 20 waited longer is not taken to
    # be granted at that one's time); past it, the exponential tail of their mean. Stock-outs keep their own rule
    # (``MIN_EPISODES`` seen to end, then their curve). Measured on family seed 110 (development): 1, 5, 10 and 3
    # at risk gave 0.79x, 0.77x, 0.72x and 0.75x the naive estimate's median error; 10 read no curve of fewer
    # than 10 waits, and three DWS grants of 5 min each were drawn as an exponential (a start 5 min late)
    min_at_risk: int = 3
