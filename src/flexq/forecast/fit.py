"""The capacity model fitted to what a cluster shows of its own history: ``fit(state, cfg)`` -> ``FittedCapacity``
(``flexq.forecast.model``, which draws from it).

- **DWS waits** (``queued-provisioning.gke.io``): each ProvisioningRequest's ``Accepted`` to ``Provisioned``
  time is a finished wait; a request still queued, or one that failed with ``WaitTimeExceeded``, is censored at
  the time it waited. An exponential law is fitted by maximum likelihood with the censored ones
  (``flexq.stats.exponential_mean``, one pseudo-observation of the prior), so a queue whose requests all sit
  waiting is not taken for a short one; the Kaplan-Meier median is reported beside it.
- **Stock-outs** of a node pool's machines: the cluster autoscaler's ``FailedScaleUp`` events classified as a
  stock-out or GCE quota (``flexq.api.reasons.classify_capacity``), or its back-off after one, on the pods of
  workloads admitted on the pool's flavor; one is ongoing when such a workload waits now and no node of the pool
  was made since the first refusal, and it is at least as old as that workload's wait. Its remaining length is
  drawn from the episodes seen to end (``FittedCapacity.draw_stockout``). **Stock-outs to come**: the onsets seen
  per machine type over the time the cluster was watched (``ClusterState.stockout_watched_since``, else the hour
  of Events) outside stock-outs, for ``FittedCapacity.onset_rate`` (none seen: none to come).
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

Pure: no clock, no store.
"""

from __future__ import annotations

import bisect
import contextlib

from flexq.api import gke_catalog as catalog
from flexq.api.reasons import classify_capacity
from flexq.api.wellknown import EVENT_TTL_SECONDS
from flexq.clock import parse_time_or_none
from flexq.forecast.config import EtaConfig
from flexq.forecast.declared import Declared
from flexq.forecast.jobs import JobEntry, StateView, class_key, finished_at, started_at
from flexq.forecast.model import QUEUED_CLASS, Arrival, FittedCapacity, RunClass, Stockout
from flexq.forecast.state import ClusterState, provisioning_model
from flexq.gke.timing import GRANT_RETRY_SECONDS, SCALE_DOWN_UNNEEDED_SECONDS
from flexq.kueue.workload import has_rejected_checks, has_retry_checks
from flexq.semantics.conditions import find_condition
from flexq.semantics.owners import controller_owner
from flexq.stats import exponential_mean

__all__ = ["fit", "capacity_back", "ARRIVAL_WINDOW"]

SCALE_DOWN_SECONDS = SCALE_DOWN_UNNEEDED_SECONDS  # the cluster autoscaler's (flexq.gke.timing)
ARRIVAL_WINDOW = 7 * 86400.0  # how far back the arrival rates look


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
        if admitted is None and (has_retry_checks(wl) or has_rejected_checks(wl)):
            continue  # its request failed (its check in Retry or Rejected): it waits for no grant
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


def _stockouts(
    state: ClusterState, es: list[JobEntry], cfg: EtaConfig
) -> tuple[list[Stockout], list[float], list[float], dict[tuple[str, str], tuple[int, float]]]:
    """Ongoing stock-outs per node pool, the lengths of the episodes seen to end, those of the episodes seen to
    last at least so long (censored: no demand was left to show their end), and the onsets seen per machine type
    and provisioning model (``_onsets``)."""
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
    seen: list[
        tuple[str, float, float]
    ] = []  # (pool, first refusal, first node after it): episodes that ended
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
                seen.append((pool, first, min(made_after)))
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
    remembered = _remembered(state, seen)
    ongoing: list[tuple[str, float, str]] = []
    for pool, (since, code) in sorted(refused.items()):
        unmet = _unmet_since(state, pool, fpool, node_times)
        if unmet is not None:
            since = min(since, unmet)
        # one the watcher kept as lasting at least until it last saw it, with no node of the pool made since (one
        # there now, or the end of an episode seen since), is this one going on (a stock-out is dated so: not
        # before the pool last grew)
        ends = list(node_times.get(pool, []))
        ends += [end for p, _s, end, censored in remembered if p == pool and not censored]
        ends += [end for p, _f, end in seen if p == pool]
        grew = max(ends, default=None)
        for r in [r for r in remembered if r[0] == pool and r[3] and (grew is None or grew <= r[2])]:
            remembered.remove(r)
            since = min(since, r[1])
        ongoing.append((pool, since, code))
    episodes = [end - first for _pool, first, end in seen]
    episodes += [end - since for _pool, since, end, censored in remembered if not censored]
    lasted = [end - since for _pool, since, end, censored in remembered if censored]
    out = []
    for pool, since, code in ongoing:
        elapsed = max(0.0, state.now - since)
        mean = exponential_mean(episodes, [elapsed, *lasted], cfg.prior_stockout_seconds)
        out.append(
            Stockout(pool, pools[pool]["machineType"], since, code, mean, provisioning_model(pools[pool]))
        )
    spans = [*seen, *((pool, since, end) for pool, since, end, _c in remembered)]
    return out, episodes, lasted, _onsets(state, pools, spans, [(p, s) for p, s, _c in ongoing])


def _onsets(
    state: ClusterState,
    pools: dict[str, dict],
    ended: list[tuple[str, float, float]],
    ongoing: list[tuple[str, float]],
) -> dict[tuple[str, str], tuple[int, float]]:
    """Per (machine type, provisioning model): the stock-outs seen to begin while the cluster was watched, and how long it was watched
    outside them. Watched: since the watcher's first look (``ClusterState.stockout_watched_since``), else the
    hour of Events the API keeps. A stock-out that began before is not an onset seen (its start is not known to
    be in the window), but its time in the window is not time watched without one."""
    start = state.stockout_watched_since
    if start is None:
        start = state.now - EVENT_TTL_SECONDS
    spans = [(pool, since, end) for pool, since, end in ended] + [(p, s, state.now) for p, s in ongoing]
    out: dict[tuple[str, str], tuple[int, float]] = {}
    for pool, since, end in spans:
        short = pools.get(pool) or {}
        if not short.get("machineType"):
            continue
        key = (short["machineType"], provisioning_model(short))
        n, out_time = out.get(key, (0, 0.0))
        out[key] = (n + (since >= start), out_time + max(0.0, min(end, state.now) - max(since, start)))
    return {key: (n, max(0.0, state.now - start - stocked)) for key, (n, stocked) in out.items()}


def _assigned(wl: dict) -> list[set[str]]:
    """The flavors Kueue assigned each pod set of ``wl`` (its ``status.admission``; none when not admitted)."""
    adm = (wl.get("status") or {}).get("admission") or {}
    return [set((psa.get("flavors") or {}).values()) for psa in adm.get("podSetAssignments") or []]


def capacity_back(state: ClusterState, pool: str, after: float) -> float | None:
    """When ``pool`` had capacity again after ``after``: its first node made since. None: no sign yet. A job that
    starts on the pool's flavors is no sign: it may start on nodes another job left, the stock-out going on (a
    whole-day stock-out was cut in two by a start on freed nodes, and remembered as two of three hours)."""
    times = []
    for n in state.nodes:
        md = n.get("metadata") or {}
        if (md.get("labels") or {}).get(catalog.LABEL_NODEPOOL, "") == pool:
            t = parse_time_or_none(md.get("creationTimestamp"))
            if t is not None and after < t <= state.now:
                times.append(t)
    return min(times, default=None)


def _remembered(
    state: ClusterState, seen: list[tuple[str, float, float]]
) -> list[tuple[str, float, float, bool]]:
    """The episodes (pool, since, end, censored) a watcher kept (``ClusterState.stockout_history``) that the
    Events do not show any more: one of a pool that overlaps an episode the Events show is that episode. A
    censored one was last seen going on at ``end`` and not seen to end (no node made since)."""
    out = []
    for h in state.stockout_history:
        try:
            pool, since, end = str(h["pool"]), float(h["since"]), float(h["end"])
        except (KeyError, TypeError, ValueError):
            continue
        if end <= since or end > state.now:
            continue
        if any(p == pool and since <= e and first <= end for p, first, e in seen):
            continue
        out.append((pool, since, end, h.get("censored") is True))
    return out


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
        assigned = _assigned(wl)
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


def _pod_flavors(owner: JobEntry, pod: str) -> set[str]:
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


def _pod_starts(state: ClusterState) -> list[float]:
    """Per started workload, its nodes Ready to its pods all ready (``PodsReady``): image pulls, containers, a Ray
    head. From its admission, or from the last node of its flavors' pools Ready between that and its start (the
    nodes made for it). A finished workload whose pools show no such node is left out: its nodes may have been
    made and removed since, and the time would hold their making."""
    pools = _flavor_pools(state)
    ready: dict[str, list[float]] = {}  # node pool -> its nodes' Ready times, sorted
    for n in state.nodes:
        pool = ((n.get("metadata") or {}).get("labels") or {}).get(catalog.LABEL_NODEPOOL, "")
        t = _cond_time(n, "Ready")
        if pool and t is not None:
            ready.setdefault(pool, []).append(t)
    ready = {pool: sorted(times) for pool, times in ready.items()}
    out = []
    for wl in state.workloads:
        start, admitted = started_at(wl), _cond_time(wl, "Admitted")
        if start is None or admitted is None or start < admitted:
            continue
        base = admitted  # the last Ready of its pools' nodes up to its start, if it came after its admission
        for pool in {pools.get(f, "") for ps in _assigned(wl) for f in ps}:
            times = ready.get(pool, [])
            i = bisect.bisect_right(times, start)
            if i and times[i - 1] > base:
                base = times[i - 1]
        if (base > admitted or finished_at(wl) is None) and start - base < 3600:
            out.append(start - base)
    return out


def _run_lags(state: ClusterState, declared: Declared | None) -> list[float]:
    """On a twin: per finished workload whose job's run the twin declares, how much longer than that run its
    ``PodsReady`` to ``Finished`` took (the job's end written after the executor's run)."""
    if declared is None:
        return []
    out = []
    for wl in state.workloads:
        start, end, ref = started_at(wl), finished_at(wl), controller_owner(wl) or {}
        if start is None or end is None:
            continue
        ns = (wl.get("metadata") or {}).get("namespace", "")
        run = declared.run_seconds(state.job(ref.get("kind", ""), ns, ref.get("name", "")))
        if run is not None and -1.0 <= end - start - run < 600:
            out.append(max(0.0, end - start - run))
    return out


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


def fit(state: ClusterState, cfg: EtaConfig | None = None, view: StateView | None = None) -> FittedCapacity:
    """The model of ``state``'s cluster (see the module docstring); ``view``: the state read once by the
    caller (read here when None)."""
    cfg = cfg or EtaConfig()
    es = (view or StateView.of(state)).entries
    m = FittedCapacity(
        now=state.now, cfg=cfg, declared=Declared.of(state.twin, state.cluster.get("location", ""))
    )
    m.dws_done, m.dws_waiting, m.dws_pending, m.dws_bounded = _dws(state)
    m.dws_mean = exponential_mean(m.dws_done, m.dws_waiting, cfg.prior_dws_wait_seconds)
    m.stockouts, m.stockout_episodes, m.stockout_censored, m.stockout_onsets = _stockouts(state, es, cfg)
    m.provision = _provision(state)
    m.pod_starts = _pod_starts(state)
    m.run_lags = _run_lags(state, m.declared)
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
