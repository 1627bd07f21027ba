"""Is the ETA calibrated? Its predictions against the starts the jobs actually got, over a generated family.

Each scenario of ``flexq.testing.fallback_family.eta_family`` (stock-outs none / short and frequent / long and
rare / a whole day, DWS pools tight and ample, DWS waits short and long, load 30-95 %, one- and two-slice jobs,
priorities with preemption, spot; and in about a third of them a team's DWS budget — the DWS flavor's quota 1, 2
or 4 slices, named ``sNNqK`` — with 60-130 % of plan A's capacity brought, so that jobs queue in Kueue past the
quota at busy hours, the deep queues of kueue#14477: a DWS flavor of unbounded quota never forms one) runs its
``tutorial`` variant in a virtual twin under its stochastic capacity profile (the
"truth"; finished jobs are kept, as a cluster keeps them until someone deletes them). At ``--instants`` instants
spread over its traffic, the ETA reads the twin's state through the SDK's API (``flexq.eta.state_from_twin``:
what is there at that instant, history included — never the capacity profile, never the jobs' run-time
annotations) and predicts every waiting job's start; the naive estimate (position in the queue x the mean run
time of the jobs ahead, spread over the quota's slots: ``flexq.eta.naive_eta``) predicts too. The truth run goes
on to the scenario's end; each prediction is compared with the start the job got.

    .venv/bin/python bench/eta_calibration.py --scenarios 20 --family-seed 2          # the reported figures
    .venv/bin/python bench/eta_calibration.py --scenarios 3 --family-seed 1 --instants 3   # quick look

Reports over all predictions: the coverage of the 80 % interval, the median absolute error of the median ETA
(a job the ETA says will not start within the horizon counts at the horizon) and the naive one's, their ratio,
and how the jobs that did not start within the horizon were predicted. The family's jobs carry a class label
(``sim.flexq.dev/class``: debug, experiment, training), read as a team's ``flexq.dev/class`` would be
(``--class-label ''`` predicts without it). ``--out`` keeps every prediction (``predictions.csv``).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from flexq.clock import format_time
from flexq.errors import CloudError
from flexq.eta import ClusterState, EtaConfig, estimate, naive_eta, state_from_twin
from flexq.eta.calibration import Calibration, Prediction
from flexq.eta.history import WatchedStockouts
from flexq.forecast.fit import fit
from flexq.semantics.conditions import find_condition
from flexq.simulate import load_study
from flexq.simulate.objects import build_object
from flexq.simulate.study import cluster_requests
from flexq.testing.fallback_family import eta_family, write_study
from flexq.twin import Twin, load_documents

H = 3600.0
DEEP = 5  # waiting jobs in the queue from which it counts as deep


def _wait_op(twin: Twin, project: str, location: str, op: dict) -> None:
    path = f"/v1/projects/{project}/locations/{location}/operations/{op.get('name')}"
    for _ in range(10_000):
        if op.get("status") == "DONE":
            return
        twin.advance(5)
        op = twin.gke("GET", path)


class _Watcher:
    """What the ETA service remembers of the cluster it follows (``WatchedStockouts``), looking every ``every``
    seconds of the truth run as the service refreshes: the stock-outs seen end and begin between the instants,
    which the instants alone (hours apart, an hour of Events each) mostly miss."""

    def __init__(self, twin: Twin, every: float) -> None:
        self.twin, self.every = twin, every
        self.memory = WatchedStockouts()
        self.next = twin.now()

    def look(self) -> None:
        state = state_from_twin(self.twin, declared=False)
        state.stockout_history = self.memory.history()
        state.stockout_watched_since = self.memory.first_look
        model = fit(state)
        self.memory.watch(state, [{"pool": s.pool, "since": s.since} for s in model.stockouts])

    def advance(self, dt: float) -> None:
        """The twin ``dt`` seconds on, looking at every ``every`` on the way (none when ``every`` is 0)."""
        end = self.twin.now() + max(0.0, dt)
        while self.every > 0 and self.next <= end:
            self.twin.advance(max(0.0, self.next - self.twin.now()))
            self.look()
            self.next += self.every
        self.twin.advance(max(0.0, end - self.twin.now()))


def truth_run(
    path: Path, instants: int, watch: float = 0.0
) -> tuple[list[tuple[float, dict]], dict[str, list[float]], float, list[dict]]:
    """Run the scenario's ``tutorial`` variant; the state at each instant, each workload's PodsReady times, the
    scenario's end and (``watch`` seconds: a watcher's cadence) the watcher's memory at each instant."""
    study = load_study(path)
    v = study.variant("tutorial")
    jobs = study.jobs(study.seed)
    twin = Twin(clock="virtual", seed=study.seed)
    prof = dict(v.capacity or {})
    prof["metadata"] = {"name": "default"}
    twin.core.project.create(prof)
    project, location, cluster, reqs = cluster_requests(v.cluster or {})
    for method, p, body in reqs:
        try:
            _wait_op(twin, project, location, twin.gke(method, p, body))
        except CloudError:
            raise
    twin.cluster(cluster)
    prof = twin.core.project.get("CapacityProfile", "default")
    prof["spec"]["origin"] = format_time(twin.now())
    twin.core.project.update(prof)
    for m in v.manifests:
        for doc in load_documents(m.text):
            twin.apply(doc)
    twin.advance(1)
    priorities = {
        pc["metadata"]["name"]: int(pc.get("value", 0)) for pc in twin.list("WorkloadPriorityClass")
    }
    t0 = twin.now()
    starts: dict[str, list[float]] = {}

    def on_event(ev: Any) -> None:
        wl = ev.object
        c = find_condition(wl, "PodsReady")
        if c is None or c.get("status") != "True":
            return
        key = f"{wl['metadata'].get('namespace', '')}/{wl['metadata']['name']}"
        seen = starts.setdefault(key, [])
        if not seen or twin.now() > seen[-1]:
            seen.append(twin.now())

    twin.store.watch(on_event, ["Workload"])
    span = max(j.submit for j in jobs)
    marks = [t0 + span * (0.15 + 0.7 * k / max(1, instants - 1)) for k in range(instants)]
    states: list[tuple[float, dict]] = []
    memories: list[dict] = []
    watcher = _Watcher(twin, watch)

    def instant() -> None:
        states.append((twin.now(), state_from_twin(twin, declared=False).to_dict()))
        if watch > 0:
            watcher.look()  # the service looked at the instant too
            memories.append(watcher.memory.to_dict())

    for job in jobs:
        while marks and t0 + job.submit > marks[0]:
            watcher.advance(marks[0] - twin.now())
            instant()
            marks.pop(0)
        gap = t0 + job.submit - twin.now()
        if gap > 0:
            watcher.advance(gap)
        twin.create(build_object(job, priorities, {}))
    for m in marks:
        watcher.advance(max(0.0, m - twin.now()))
        instant()
    end = t0 + (study.until or span + 48 * H)
    twin.advance(end - twin.now())
    twin.close()
    return states, starts, end, memories


def truth_task(
    task: tuple[str, int, str, float],
) -> tuple[str, list[tuple[float, dict]], dict[str, list[float]], float, list[dict], float]:
    """One scenario's truth run (kept in ``cache`` when given): its states at the instants, the starts, the end,
    the watcher's memories."""
    path, instants, cache, watch = task
    t = time.monotonic()
    tag = f"-w{watch:g}" if watch > 0 else ""
    saved = Path(cache) / f"{Path(path).name}-{instants}{tag}.json" if cache else None
    if saved is not None and saved.exists():
        data = json.loads(saved.read_text())
        states, starts, end = [tuple(s) for s in data["states"]], data["starts"], data["end"]
        memories = data.get("memories") or []
    else:
        states, starts, end, memories = truth_run(Path(path), instants, watch)
        if saved is not None:
            saved.write_text(
                json.dumps({"states": states, "starts": starts, "end": end, "memories": memories})
            )
    return Path(path).name, states, starts, end, memories, time.monotonic() - t


def regime(fc: Any, j: Any) -> str:
    """The regime a prediction was made in: during a stock-out (the model sees one going on), a deep queue (5 or
    more jobs waiting in the queue — pending, or holding quota without having started: the family's DWS flavor
    has unbounded quota, so a queue deepens behind DWS and node pools, not behind quota), else a shallow queue."""
    if any(line.startswith("stock-out of") for line in fc.model):
        return "during a stock-out"
    waiting = sum(1 for x in fc.jobs.values() if x.role in ("pending", "reserved") and x.queue == j.queue)
    return "deep queue" if waiting >= DEEP else "shallow queue"


def predict(
    name: str,
    states: list[tuple[float, dict]],
    starts: dict[str, list[float]],
    end: float,
    cfg: EtaConfig,
    calibration: Calibration | None,
    remember: bool = True,
    memories: list[dict] | None = None,
    declared: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ETA (and the naive estimate) at each instant of one scenario. With ``calibration`` (online), the
    starts seen before each instant correct the interval first, and each forecast is recorded; at the end of the
    scenario the rest of its truth is seen."""
    rows = []
    memory = (
        WatchedStockouts()
    )  # this cluster's stock-outs seen end at the instants before (the service's memory)
    for k, (at, state_dict) in enumerate(states):
        state = ClusterState.from_dict(state_dict)
        state.twin = declared  # None: read as a real cluster (the default)
        if remember and memories:  # the watcher's memory at the instant (it looked between the instants)
            memory = WatchedStockouts.from_dict(memories[k])
        if remember:
            state.stockout_history = memory.history()
            state.stockout_watched_since = memory.first_look
        if calibration is not None:
            known = {key: next((s for s in ss if s <= at), None) for key, ss in starts.items()}
            calibration.resolve(at, known)
        fc = estimate(state, cfg, calibration=calibration)
        if remember and not memories:
            memory.watch(state, fc.stockouts)
        if calibration is not None:
            calibration.record(fc.predictions())
        naive = naive_eta(state)
        for key, j in fc.jobs.items():
            later = [s for s in starts.get(key, []) if s >= at]
            rows.append(
                {
                    "scenario": name,
                    "instant": k,
                    "at": at,
                    "workload": key,
                    "role": j.role,
                    "median": j.median,
                    "low": j.low,
                    "high": j.high,
                    "cannot": j.cannot,
                    "naive": naive.get(key),
                    "plan": j.plan,
                    "waits_for": j.waits_for,
                    "code": j.now.split(":", 1)[0],
                    "regime": regime(fc, j),
                    "truth": later[0] - at if later else None,
                    "observed": end - at,  # how long after the instant the truth run went on
                }
            )
    if calibration is not None:
        calibration.resolve(end, {key: ss[0] if ss else None for key, ss in starts.items()})
        calibration.pending.clear()  # what the scenario's end leaves open is not known
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=20)
    ap.add_argument(
        "--family-seed", type=int, default=2, help="seed of the family (1 was used while building)"
    )
    ap.add_argument("--instants", type=int, default=5)
    ap.add_argument("--replicas", type=int, default=32)
    ap.add_argument("--engine", choices=["fast", "twin"], default="fast")
    ap.add_argument("--horizon", type=float, default=24.0, help="hours")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--class-label", default="sim.flexq.dev/class")
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--online",
        action="store_true",
        help="correct the interval online (adaptive conformal inference, flexq.eta.calibration): one calibration "
        "carried through the scenarios in order, each instant's prediction made after the starts seen before it",
    )
    ap.add_argument(
        "--watch-minutes",
        type=float,
        default=0.0,
        help="a watcher looks at the truth run this often, as the ETA service refreshes, and remembers the "
        "stock-outs it sees end and begin (0: only at the instants, hours apart)",
    )
    ap.add_argument(
        "--no-memory",
        action="store_true",
        help="forget the stock-out episodes seen end at a scenario's earlier instants (the service keeps them: "
        "the API keeps an hour of Events)",
    )
    ap.add_argument(
        "--dws-scale",
        type=float,
        default=1.0,
        help="a deliberately wrong capacity model: every DWS wait the ETA draws times this (e.g. 0.33: the "
        "cluster's DWS waits are 3x what the model says)",
    )
    ap.add_argument(
        "--declared",
        action="store_true",
        help="give the ETA what the twin declares of itself (flexq.forecast.declared): the scenario's true DWS "
        "and provisioning laws and every job's run time. Not a real cluster's forecast: the bound a forecast "
        "that knew them, and not the stock-outs to come, would reach",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        help="keep each scenario's truth run (its states and starts) here and reuse it: the truth does not "
        "depend on the ETA, so a change to the ETA is judged again without re-running the family",
    )
    args = ap.parse_args()
    horizon = args.horizon * H
    cfg_kw = {
        "replicas": args.replicas,
        "horizon": horizon,
        "workers": 1,
        "engine": args.engine,
        "class_label": args.class_label or "flexq.dev/class",
        "dws_scale": args.dws_scale,
    }
    t_all = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="eta-cal-"))
    cache = args.cache / f"family-{args.family_seed}" if args.cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    scenarios = [
        replace(sc, name=f"{sc.name}q{sc.dws_quota}") if sc.dws_quota else sc
        for sc in eta_family(args.scenarios, args.family_seed)
    ]
    paths = []
    for sc in scenarios:
        paths.append(str(write_study(sc, root)))
        print(f"{sc.name}: {sc.describe()}", flush=True)
    rows: list[dict[str, Any]] = []
    t_truth = t_pred = 0.0
    cfg = EtaConfig(**cfg_kw)
    calibration = Calibration() if args.online else None
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        truths = list(
            pool.map(
                truth_task,
                [(p, args.instants, str(cache) if cache else "", args.watch_minutes * 60.0) for p in paths],
            )
        )
    for name, states, starts, end, memories, tt in truths:
        t = time.monotonic()
        said = None
        if args.declared:
            truth = dict(load_study(Path(root) / name).variant("tutorial").capacity or {})
            truth["metadata"] = {"name": "default"}
            said = {"capacityProfile": truth, "executor": "simulated"}
        rs = predict(name, states, starts, end, cfg, calibration, not args.no_memory, memories, said)
        tp = time.monotonic() - t
        rows += rs
        t_truth += tt
        t_pred += tp
        print(f"  {name}: {len(rs)} predictions (truth run {tt:.0f} s, ETAs {tp:.0f} s)", flush=True)
    report(rows, horizon, args)
    print(
        f"\ntruth runs {t_truth:.0f} s, ETAs {t_pred:.0f} s (summed over {args.workers} processes); "
        f"wall {time.monotonic() - t_all:.0f} s",
        flush=True,
    )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "predictions.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


def kind_of(r: dict[str, Any]) -> str:
    """What a waiting job waited for at the instant, coarsely (from its coded reason)."""
    code = r.get("code") or ""
    if r["role"] == "pending":
        return "pending (no quota yet)"
    if "DWS" in code or "ProvisioningRequest" in code or code == "AdmissionCheckPending":
        return "reserved: DWS"
    if "STOCKOUT" in code or "QUOTA" in code or code in ("GCE_STOCKOUT", "ScaleUpBackoff"):
        return "reserved: stock-out"
    return f"reserved: {code or 'nodes'}"


def _covered(r: dict[str, Any], horizon: float) -> bool:
    """The truth within the 80 % interval (a start beyond the horizon: the interval reaches past it)."""
    if r["truth"] is not None and r["truth"] <= horizon:
        # the online correction's own rule (Prediction.of: no low end says "not within the horizon"), a second's
        # rounding either side
        p = Prediction.of("", "", 0.0, r["low"], r["median"], r["high"], horizon)
        return not r["cannot"] and not (p.miss(r["truth"] + 1.0) and p.miss(r["truth"] - 1.0))
    return bool(r["cannot"]) or r["high"] is None


def _summary(preds: list[dict[str, Any]], horizon: float, label: str) -> None:
    within = [r for r in preds if r["truth"] is not None and r["truth"] <= horizon]
    beyond = [r for r in preds if r not in within and r["observed"] >= horizon]
    judged = within + beyond
    print(
        f"\n{label}: {len(preds)} predictions ({len(within)} started within {horizon / H:g} h, {len(beyond)} did not)"
    )
    if not judged:
        return
    cov = sum(1 for r in judged if _covered(r, horizon))
    print(f"  80 % interval coverage: {cov / len(judged):.1%} of {len(judged)} (goal 70-90 %)")
    if within:
        cov_w = sum(1 for r in within if _covered(r, horizon))
        print(f"    of those that started within the horizon: {cov_w / len(within):.1%}")
    err = [
        abs((r["median"] if r["median"] is not None and not r["cannot"] else horizon) - r["truth"])
        for r in within
    ]
    naive = [abs(min(r["naive"], horizon) - r["truth"]) for r in within if r["naive"] is not None]
    if err and naive:
        me, mn = statistics.median(err), statistics.median(naive)
        print(f"  median absolute error of the median ETA: {me / 60:.1f} min; naive: {mn / 60:.1f} min")
        if mn > 0:
            print(f"    ETA / naive: {me / mn:.2f} (goal <= 0.70)")
        print(
            f"    mean absolute error: ETA {statistics.mean(err) / 60:.1f} min, naive "
            f"{statistics.mean(naive) / 60:.1f} min"
        )
        print(
            f"    starts within 10 min of the median: {sum(1 for e in err if e <= 600) / len(err):.0%}; "
            f"within 1 h: {sum(1 for e in err if e <= 3600) / len(err):.0%}"
        )
    if beyond:
        said = sum(1 for r in beyond if r["cannot"] or r["median"] is None)
        print(
            f"  did not start within {horizon / H:g} h: {len(beyond)}; predicted so: {said} ({said / len(beyond):.0%})"
        )
    wrongly = sum(1 for r in within if r["median"] is None or r["cannot"])
    print(f"  started within the horizon but predicted not to: {wrongly}")
    kinds: dict[str, list[dict[str, Any]]] = {}
    for r in within:
        kinds.setdefault(kind_of(r), []).append(r)
    for kind, rs in sorted(kinds.items()):
        e = [
            abs((r["median"] if r["median"] is not None and not r["cannot"] else horizon) - r["truth"])
            for r in rs
        ]
        n = [abs(min(r["naive"], horizon) - r["truth"]) for r in rs if r["naive"] is not None]
        bias = statistics.median(
            [(r["median"] if r["median"] is not None else horizon) - r["truth"] for r in rs]
        )
        cov_k = sum(1 for r in rs if _covered(r, horizon)) / len(rs)
        print(
            f"    {kind}: {len(rs)}, median abs error {statistics.median(e) / 60:.1f} min"
            + (f" (naive {statistics.median(n) / 60:.1f})" if n else "")
            + f", median error {bias / 60:+.1f} min, coverage {cov_k:.0%}"
        )


def report(rows: list[dict[str, Any]], horizon: float, args: argparse.Namespace) -> None:
    """The figures on the jobs that truly wait (pending or holding quota; a job Kueue deactivated waits for
    someone to reactivate it, not for the cluster: it is reported apart), then on the deactivated ones."""
    waiting = [r for r in rows if r["role"] in ("pending", "reserved")]
    _summary(waiting, horizon, "jobs that wait (pending or holding quota)")
    for name in ("deep queue", "shallow queue", "during a stock-out"):
        _summary([r for r in waiting if r["regime"] == name], horizon, f"regime: {name}")
    if args.online:
        half = waiting[len(waiting) // 2 :]
        _summary(half, horizon, "online correction: the last half of the predictions")
    deact = [r for r in rows if r["role"] == "deactivated"]
    if deact:
        woke = sum(1 for r in deact if r["truth"] is not None and r["truth"] <= horizon)
        print(
            f"\ndeactivated at the instant (left out above): {len(deact)} predictions; "
            f"started within {horizon / H:g} h anyway (reactivated): {woke}"
        )


if __name__ == "__main__":
    sys.exit(main())
