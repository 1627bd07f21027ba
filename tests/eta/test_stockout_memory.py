"""Issue 46: the stock-outs seen end are remembered beyond the hour of Events the API keeps.

The cluster autoscaler's refusals are Events, and the API server keeps an Event an hour: a stock-out that ended
yesterday is gone from the state, so the model knew the age of the stock-out going on but not how long the ones
before it lasted, and drew its end as "as long again as it has lasted". Whoever refreshes the ETA keeps a memory
(``flexq.eta.history.WatchedStockouts``): a pool stocked out at one look and not at the next ended when it had
capacity again, and those episodes go into the next state's ``stockout_history``. A real twin whose on-demand v6e
is stocked out three times for two hours and then a fourth time: watched every 20 minutes, the fourth's end is
drawn from the three before it; read cold, from the rule of thumb."""

from __future__ import annotations

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.clock import format_time
from flexq.eta import state_from_twin
from flexq.eta.calibration import Calibration
from flexq.eta.history import MAX_EPISODES, WatchedStockouts
from flexq.forecast.fit import fit
from flexq.forecast.state import ClusterState
from tests.eta.helpers import rayjob, tutorial_cluster

H = 3600.0
OUTAGES = [(1.0, 3.0), (5.0, 7.0), (9.0, 11.0), (13.0, 1000.0)]  # hours after the start: on-demand v6e out


def _twin() -> Twin:
    twin = Twin(clock="virtual", seed=5)
    p = tutorial_profile()
    p["metadata"]["name"] = "default"
    p["spec"]["defaults"]["queueWait"] = {"fixed": "7d"}  # DWS never grants: the jobs wait for on-demand
    twin.core.project.create(p)
    tutorial_cluster(twin, profile=False)
    prof = twin.core.project.get("CapacityProfile", "default")
    rule = prof["spec"]["rules"][0]
    rule["stockoutMessage"] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    rule["windows"] = [{"start": f"{a * H:.0f}s", "end": f"{b * H:.0f}s", "available": 0} for a, b in OUTAGES]
    prof["spec"]["origin"] = format_time(twin.now())
    twin.core.project.update(prof)
    return twin


def _look(memory: WatchedStockouts, state: ClusterState) -> list:
    state.stockout_history = memory.history()
    model = fit(state)
    memory.watch(state, [{"pool": s.pool, "since": s.since} for s in model.stockouts])
    return model.stockouts


def test_the_stock_outs_seen_end_are_remembered_and_the_next_one_drawn_from_them() -> None:
    twin = _twin()
    memory = WatchedStockouts()
    t0 = twin.now()
    i = 0
    while twin.now() < t0 + 15 * H:
        twin.apply(rayjob(i, run=1200))
        i += 1
        for _ in range(2):
            twin.advance(1200)
            _look(memory, state_from_twin(twin))
    lengths = [(e["end"] - e["since"]) / H for e in memory.episodes]
    assert len(lengths) == 3 and all(e["pool"] == "on-demand-pool" for e in memory.episodes), memory.episodes
    # each about two hours: it began by the first refused job, and ended by the next look's sign of capacity
    assert all(1.0 <= x <= 3.5 for x in lengths), lengths
    assert [round((e["since"] - t0) / H) for e in memory.episodes] == [1, 5, 9], memory.episodes

    state = state_from_twin(twin)
    cold = fit(state)  # read without the memory: the Events show none of the three
    assert len(cold.stockout_episodes) < 3
    assert any("as long again as it has lasted" in line for line in cold.describe()), cold.describe()
    state.stockout_history = memory.history()
    warm = fit(state)
    assert [s.pool for s in warm.stockouts] == ["on-demand-pool"]
    assert sorted(round(x, 3) for x in warm.stockout_episodes) == sorted(round(x * H, 3) for x in lengths)
    assert any("drawn from the 3 episode(s) seen to end" in line for line in warm.describe()), warm.describe()
    # the stock-outs to come: four began since the first look (the fourth goes on), over the time watched
    # outside them — 15 h less the first look's 20 min and four outages of up to two hours (each seen from its
    # first refused job to the next look's sign of capacity)
    assert memory.first_look == t0 + 1200
    od = ("ct6e-standard-4t", "on-demand")
    assert cold.stockout_onsets.get(od, (0, 0.0))[0] <= 1  # the hour of Events: one at most
    state.stockout_watched_since = memory.first_look
    watched = fit(state)
    n, seconds = watched.stockout_onsets[od]
    assert n == 4 and 6 * H <= seconds <= 11 * H, (n, seconds / H)
    assert watched.onset_rate(od) == 4 / (seconds + 24 * H)
    assert any(
        line.startswith("stock-outs to come of ct6e-standard-4t (on-demand)") for line in watched.describe()
    )
    # one the watcher kept as lasting at least until it last saw it (no demand left to show its end), with no
    # node of the pool made since: the stock-out going on now is that one, older than the Events and jobs say
    assert abs(watched.stockouts[0].since - (t0 + 13 * H)) < 0.5 * H, (watched.stockouts[0].since - t0) / H
    earlier = {"pool": "on-demand-pool", "since": t0 + 12 * H, "end": t0 + 12.5 * H, "censored": True}
    state.stockout_history = [*memory.history(), earlier]
    merged = fit(state)
    assert merged.stockouts[0].since == t0 + 12 * H and merged.stockout_censored == []
    before_nodes = {**earlier, "since": t0 + 8 * H, "end": t0 + 8.5 * H}  # nodes were made after it: another
    state.stockout_history = [*memory.history(), before_nodes]
    apart = fit(state)
    assert apart.stockouts[0].since > t0 + 12 * H and apart.stockout_censored == [0.5 * H]


def test_stock_outs_to_come_are_drawn_at_the_rate_seen() -> None:
    """A forward run's stock-outs (``stockout_windows``): those to come begin as a Poisson process at the rate
    the cluster showed, one after the other, each lasting as the ones seen to end did; a cluster that showed
    none is forecast without one; the exact engine's profile holds the same windows as the fast engine's from
    the same random stream."""
    import math
    import random

    from flexq.forecast.config import EtaConfig
    from flexq.forecast.model import WARMUP_SECONDS, FittedCapacity, Stockout

    now, horizon, mt = 100 * H, 24 * H, ("ct6e-standard-4t", "on-demand")
    fitted = FittedCapacity(now=now, cfg=EtaConfig(), stockout_episodes=[2 * H, 2 * H, 2 * H])
    fitted.stockout_onsets = {mt: (3, 10 * H)}
    rate = 3 / (34 * H)
    runs = [fitted.stockout_windows(now, horizon, random.Random(i)).get(mt, []) for i in range(3000)]
    some = sum(1 for ws in runs if ws) / len(runs)
    assert abs(some - (1 - math.exp(-rate * horizon))) < 0.03, some
    mean_n = sum(len(ws) for ws in runs) / len(runs)
    assert rate * (horizon - 2 * H) * 0.9 < mean_n < rate * horizon * 1.1, mean_n
    lengths = sorted(b - a for ws in runs for a, b in ws)
    assert lengths[len(lengths) // 2] == 2 * H  # as the three seen to end
    for ws in runs:
        assert all(now < a < now + horizon and a < b for a, b in ws)
        assert all(ws[k][1] <= ws[k + 1][0] for k in range(len(ws) - 1))
    assert FittedCapacity(now=now, cfg=EtaConfig()).stockout_windows(now, horizon, random.Random(1)) == {}

    fitted.stockouts = [Stockout("on-demand-pool", mt[0], now - H, "GCE_STOCKOUT", 3 * H)]
    for seed in range(30):
        ws = fitted.stockout_windows(now, fitted.cfg.horizon, random.Random(seed))[mt]
        rule = next(r for r in fitted.profile(random.Random(seed))["spec"]["rules"] if r.get("windows"))
        got = [
            (float(w["start"].removesuffix("s")), float(w["end"].removesuffix("s"))) for w in rule["windows"]
        ]
        want = [
            (0.0 if a <= now else round(WARMUP_SECONDS + a - now), round(WARMUP_SECONDS + b - now))
            for a, b in ws
        ]
        assert got == want, (got, want)
        assert ws[0][0] == now  # the ongoing one first


def test_an_end_with_no_sign_of_capacity_is_kept_censored_and_the_memory_is_bounded() -> None:
    memory = WatchedStockouts()
    out = [{"pool": "p", "since": 0.0}]
    assert memory.watch(ClusterState(now=100.0), out) == 0
    assert memory.watch(ClusterState(now=200.0), []) == 0  # gone, but no node made since
    # kept as lasting at least until last seen (no demand left to show its end), not as ended
    assert memory.episodes == [{"pool": "p", "since": 0.0, "end": 100.0, "censored": True}]
    assert memory.ongoing == {}
    # seen going on again, since before it was last seen or with no node made since: the same episode, not a
    # second one (the fit dates a stock-out so: not before the pool last grew)
    memory.watch(ClusterState(now=300.0), [{"pool": "p", "since": 250.0}])
    assert memory.episodes == [] and memory.ongoing == {"p": {"since": 0.0, "seen": 300.0}}
    memory.ongoing.clear()
    for k in range(MAX_EPISODES + 5):
        memory.episodes.append({"pool": "p", "since": float(k), "end": float(k) + 1.0})
    memory.watch(ClusterState(now=300.0), [{"pool": "q", "since": 250.0}, {"bad": 1}])
    assert len(memory.episodes) == MAX_EPISODES and memory.episodes[-1]["since"] == MAX_EPISODES + 4
    assert memory.ongoing == {"q": {"since": 250.0, "seen": 300.0}}


def test_the_memory_survives_the_calibration_file(tmp_path) -> None:
    cal = Calibration()
    cal.memory.episodes.append({"pool": "p", "since": 1.0, "end": 7201.0})
    cal.memory.ongoing["q"] = {"since": 10.0, "seen": 20.0}
    path = tmp_path / "cal.json"
    cal.save(path)
    back = Calibration.load(path)
    assert back.memory == cal.memory
    # hostile or old files: what cannot be read is left out, the rest kept
    bad = Calibration.from_dict(
        {"stockouts": {"episodes": [{"pool": "p"}, "x", {"pool": "p", "since": 0, "end": 5}]}}
    )
    assert bad.memory.episodes == [{"pool": "p", "since": 0.0, "end": 5.0}]
    assert Calibration.from_dict({}).memory == WatchedStockouts()


def test_the_exact_engine_draws_a_stock_out_end_as_the_fast_one() -> None:
    """``flexq eta --exact`` and ``flexq simulate --from-cluster`` run the model written as a CapacityProfile;
    its stock-out window ends where ``draw_stockout`` (the fast engine's draw) puts it, from the same random
    stream — with the episodes seen and without — and the typical story's (no stream) is the median of those
    draws. It was an exponential of the fitted mean: a stock-out 4 h old after three that lasted 5 h ended
    within the hour in three fast runs in four, and about 3 h later at the exact engine's median."""
    import random

    from flexq.forecast.config import EtaConfig
    from flexq.forecast.model import WARMUP_SECONDS, FittedCapacity, Stockout

    now = 100 * H
    for episodes in ([], [5 * H, 5 * H, 5 * H]):
        fitted = FittedCapacity(now=now, cfg=EtaConfig(), stockout_episodes=list(episodes))
        fitted.stockouts = [
            Stockout("on-demand-pool", "ct6e-standard-4t", now - 4 * H, "GCE_STOCKOUT", 4.7 * H)
        ]
        s = fitted.stockouts[0]

        def window_end(rng: random.Random | None, fitted: FittedCapacity = fitted) -> float:
            rule = next(r for r in fitted.profile(rng)["spec"]["rules"] if "windows" in r and r["windows"])
            return float(rule["windows"][0]["end"].removesuffix("s")) - WARMUP_SECONDS

        for seed in range(20):
            assert window_end(random.Random(seed)) == round(fitted.draw_stockout(s, random.Random(seed)))
        draws = sorted(fitted.draw_stockout(s, random.Random(i)) for i in range(41))
        assert window_end(None) == round(draws[20])
        if episodes:  # three ended at 5 h: this one (4 h old) ends within the hour, in both engines
            assert all(d <= H for d in draws[:30]), draws


def test_a_start_on_nodes_another_job_left_does_not_end_a_stock_out() -> None:
    """A job that starts on the pool's flavor may start on nodes another job left while the stock-out goes on:
    only a node made ends it (``capacity_back``). With no demand left to show the end, the watcher keeps the
    episode as lasting at least until it was last seen, and the model draws the next stock-outs knowing it (a
    whole-day stock-out had been cut in two by such a start and remembered as two short ones)."""
    import random

    from flexq.clock import format_time
    from flexq.forecast.config import EtaConfig
    from flexq.forecast.fit import capacity_back
    from flexq.forecast.model import FittedCapacity

    node = {"metadata": {"name": "n1", "labels": {"cloud.google.com/gke-nodepool": "on-demand-pool"}}}
    started = {
        "metadata": {"name": "w", "namespace": "default"},
        "status": {
            "admission": {"podSetAssignments": [{"name": "w", "flavors": {"google.com/tpu": "on-demand"}}]},
            "conditions": [
                {"type": "PodsReady", "status": "True", "lastTransitionTime": format_time(5000.0)}
            ],
        },
    }
    flavor = {
        "metadata": {"name": "on-demand"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "on-demand-pool"}},
    }
    old = {**node, "metadata": {**node["metadata"], "creationTimestamp": format_time(100.0)}}
    state = ClusterState(now=6000.0, nodes=[old], workloads=[started], flavors=[flavor])
    assert capacity_back(state, "on-demand-pool", 1000.0) is None  # a start, no node made: no sign
    new = {**node, "metadata": {**node["metadata"], "name": "n2", "creationTimestamp": format_time(5500.0)}}
    state.nodes.append(new)
    assert capacity_back(state, "on-demand-pool", 1000.0) == 5500.0

    short = FittedCapacity(now=0.0, cfg=EtaConfig(), stockout_episodes=[H, H, H])
    long_seen = FittedCapacity(
        now=0.0, cfg=EtaConfig(), stockout_episodes=[H, H, H], stockout_censored=[20 * H]
    )
    beyond = [
        sum(1 for i in range(2000) if m.draw_new_stockout(random.Random(i)) > 2 * H) / 2000
        for m in (short, long_seen)
    ]
    assert beyond[0] < 0.3 < beyond[1], beyond  # one seen to last 20 h: a new one may too
