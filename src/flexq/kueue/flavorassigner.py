"""The flavor assigner: which ResourceFlavor each pod set gets, exactly as Kueue chooses.

Owns: ``Mode`` (NoFit < Preempt < DeferredFit < Fit) and the internal granular mode
(preemption possibility × borrowing level), ``is_preferred`` / ``should_try_next_flavor``
(flavorFungibility ``whenCanBorrow`` / ``whenCanPreempt`` / ``preference``), the per-flavor checks
(missing flavor, untolerated taints, node affinity restricted to the flavor's own label keys),
``fits_resource_quota`` with Kueue's messages, the scan over ``resourceGroups[].flavors`` resuming
from the last tried index (``AssignmentState``), elastic workload-slice deltas, the no-fit reason
resolution and the event text listing the flavors considered. Mirrors
``pkg/scheduler/flavorassigner/{flavorassigner,flavor_assigner_attempts}.go`` (TAS, fair sharing
and partial admission are not modelled).

Pure: reads a ``Snapshot`` and a ``WorkloadInfo``; asks an injected preemption oracle
``(cq, info, fr, quantity) -> (possibility, borrow)``. Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum

from flexq.kueue.resources import FlavorResource, PodSetResources, format_requests
from flexq.kueue.snapshot import ClusterQueueSnapshot, find_height_of_lowest_subtree_that_fits
from flexq.kueue.workload import WorkloadInfo
from flexq.semantics.selectors import flavor_matches_affinity
from flexq.semantics.taints import taint_str, untolerated_taint

__all__ = ["Assignment", "AssignmentState", "FlavorAssigner", "Mode", "PMode", "Oracle"]


class Mode(IntEnum):
    """Public flavor assignment mode, ordered from least to most preferred."""

    NO_FIT = 0
    PREEMPT = 1
    DEFERRED_FIT = 2
    FIT = 3

    def __str__(self) -> str:
        return {0: "NoFit", 1: "Preempt", 2: "DeferredFit", 3: "Fit"}[int(self)]


class PMode(IntEnum):
    """Internal preemption mode."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def public(self) -> Mode:
        """The public mode it maps to."""
        if self == PMode.NO_FIT:
            return Mode.NO_FIT
        if self == PMode.FIT:
            return Mode.FIT
        return Mode.PREEMPT

    def possibility(self) -> str | None:
        """``PreemptionPossibility`` name, or None for fit / no fit."""
        return {1: "NoCandidates", 2: "Preempt", 3: "Reclaim"}.get(int(self))


BIG = 1 << 62  # math.MaxInt borrowing level of the worst mode
Granular = tuple[PMode, int]
Oracle = Callable[[ClusterQueueSnapshot, WorkloadInfo, FlavorResource, int], tuple[str, int]]
_POSSIBILITY = {"NoCandidates": PMode.NO_CANDIDATES, "Preempt": PMode.PREEMPT, "Reclaim": PMode.RECLAIM}

SEVERITY = {"TopologyPlacementFailed": 1, "WaitingForQuota": 2, "ExceedsMaxQuota": 3, "NoMatchingFlavor": 4}


def most_severe(a: str, b: str) -> str:
    """The more severe of two no-fit reasons (ties keep ``a``)."""
    return a if SEVERITY.get(a, 0) >= SEVERITY.get(b, 0) else b


def is_preferred(a: Granular, b: Granular, fungibility: dict) -> bool:
    """Whether granular mode ``a`` beats ``b`` under the CQ's fungibility preference."""
    if a[0] == PMode.NO_FIT:
        return False
    if b[0] == PMode.NO_FIT:
        return True
    a_nc, b_nc = a[0] == PMode.NO_CANDIDATES, b[0] == PMode.NO_CANDIDATES
    if a_nc != b_nc:
        return not a_nc
    if fungibility.get("preference") == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def should_try_next_flavor(mode: Granular, fungibility: dict) -> bool:
    """``shouldTryNextFlavor``."""
    if mode[0] in (PMode.NO_FIT, PMode.NO_CANDIDATES):
        return True
    if mode[0] in (PMode.PREEMPT, PMode.RECLAIM) and fungibility.get("whenCanPreempt") == "TryNextFlavor":
        return True
    return mode[1] != 0 and fungibility.get("whenCanBorrow") == "TryNextFlavor"


@dataclass
class Status:
    """Why a pod set could not be assigned immediately."""

    reasons: list[str] = field(default_factory=list)
    err: str | None = None
    no_fit_reason: str = ""

    def is_fit(self) -> bool:
        """No reasons and no error."""
        return self.err is None and not self.reasons

    def message(self) -> str:
        """Reasons sorted and joined with ", " (or the error)."""
        if self.err is not None:
            return self.err
        return ", ".join(sorted(self.reasons))


@dataclass
class FlavorAttempt:
    """One flavor tried for a pod set and its worst outcome."""

    flavor: str
    mode: Mode
    borrow: int = 0
    possibility: str | None = None
    reasons: list[str] = field(default_factory=list)
    no_fit_reason: str = ""


@dataclass
class FlavorAssignment:
    """The flavor of one resource of one pod set."""

    name: str
    mode: Mode
    tried_flavor_idx: int = -1
    borrow: int = 0


@dataclass
class PodSetAssignment:
    """Flavors and status for one pod set."""

    name: str
    flavors: dict[str, FlavorAssignment]
    status: Status
    requests: dict[str, int]
    count: int
    attempts: list[FlavorAttempt] = field(default_factory=list)

    def representative_mode(self) -> Mode:
        """Worst mode among this pod set's flavors (Fit when the status is clean)."""
        if self.status.is_fit():
            return Mode.FIT
        if self.status.err is not None or not self.flavors:
            return Mode.NO_FIT
        return min(f.mode for f in self.flavors.values())

    def to_api(self) -> dict:
        """``status.admission.podSetAssignments[]`` entry."""
        res = sorted(self.flavors)
        return {
            "name": self.name,
            "flavors": {r: self.flavors[r].name for r in res},
            "resourceUsage": format_requests(self.requests, res),
            "count": self.count,
        }


@dataclass
class AssignmentState:
    """Where the flavor scan stopped, per pod set and resource (kept between cycles)."""

    last_tried_flavor_idx: list[dict[str, int]] = field(default_factory=list)
    cq_generation: int = 0
    scheduling_cycle: int = 0

    def pending_flavors(self) -> bool:
        """Some pod set still has untried flavors."""
        return any(i != -1 for m in self.last_tried_flavor_idx for i in m.values())

    def next_flavor(self, ps: int, res: str) -> int:
        """Index to resume the scan at."""
        if ps >= len(self.last_tried_flavor_idx):
            return 0
        idx = self.last_tried_flavor_idx[ps].get(res)
        return 0 if idx is None else idx + 1


@dataclass
class Assignment:
    """The flavor assignment of one workload."""

    podsets: list[PodSetAssignment] = field(default_factory=list)
    borrowing: int = 0
    last_state: AssignmentState = field(default_factory=AssignmentState)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    no_fit_reason: str = ""
    replace_slice: WorkloadInfo | None = None
    _mode: Mode | None = None

    def representative_mode(self) -> Mode:
        """Worst pod set mode (NoFit without pod sets)."""
        if not self.podsets:
            return Mode.NO_FIT
        if self._mode is not None:
            return self._mode
        return min(ps.representative_mode() for ps in self.podsets)

    def set_representative_mode(self, mode: Mode) -> None:
        """Force the mode (DeferredFit after overlapping preemptions)."""
        self._mode = mode
        for ps in self.podsets:
            for f in ps.flavors.values():
                f.mode = mode

    def message(self) -> str:
        """``couldn't assign flavors to pod set <ps>: <reasons>`` joined with "; "."""
        parts = []
        for ps in self.podsets:
            if ps.status.is_fit():
                continue
            if ps.status.err is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.status.err}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.status.message()}")
        return "; ".join(parts)

    def to_api(self) -> list[dict]:
        """``status.admission.podSetAssignments``."""
        return [ps.to_api() for ps in self.podsets]

    def flavor_resources_need_preemption(self) -> set[FlavorResource]:
        """(flavor, resource) pairs assigned in Preempt mode."""
        return {(f.name, r) for ps in self.podsets for r, f in ps.flavors.items() if f.mode == Mode.PREEMPT}

    def total_requests_for(self, info: WorkloadInfo) -> dict[FlavorResource, int]:
        """Quota the workload needs with this assignment (only the delta for a replacement slice)."""
        usage: dict[FlavorResource, int] = {}
        for i, ps in enumerate(info.total_requests):
            if i >= len(self.podsets):
                break
            psa = self.podsets[i]
            count = psa.count
            if self.replace_slice is not None and i < len(self.replace_slice.total_requests):
                count = ps.count - self.replace_slice.total_requests[i].count
            scaled = ps.scaled_to(count)
            for res, q in scaled.requests.items():
                if q == 0 or res not in psa.flavors:
                    continue
                fr = (psa.flavors[res].name, res)
                usage[fr] = usage.get(fr, 0) + q
        return usage

    def considered_flavors(self) -> str:
        """``FormatFlavorAssignmentAttemptsForEvents`` (the "Flavors considered" event text)."""
        out = []
        for ps in self.podsets:
            items = []
            for at in ps.attempts:
                if at.mode == Mode.FIT and at.borrow == 0:
                    continue
                s = f"{at.flavor}("
                s += str(at.mode) if at.possibility is None else f"preemptionMode={at.possibility}"
                if at.borrow > 0:
                    s += f";borrow={at.borrow}"
                if at.reasons:
                    s += ";" + ";".join(at.reasons)
                items.append(s + ")")
            if items:
                out.append(f"{ps.name}: " + ", ".join(items))
        return " | ".join(out)


def _merge_attempts(
    dst: dict[str, FlavorAttempt], src: list[FlavorAttempt], res: str, cq: ClusterQueueSnapshot
) -> None:
    """``mergeFlavorAttemptsForResource``."""
    for at in src:
        ex = dst.get(at.flavor)
        if ex is None:
            dst[at.flavor] = FlavorAttempt(
                at.flavor, at.mode, at.borrow, at.possibility, sorted(set(at.reasons)), at.no_fit_reason
            )
            continue
        order = {"NoCandidates": 0, "Preempt": 1, "Reclaim": 2}
        poss = ex.possibility
        if at.possibility is not None and (poss is None or order[at.possibility] < order[poss]):
            poss = at.possibility
        dst[at.flavor] = FlavorAttempt(
            at.flavor,
            min(ex.mode, at.mode),
            max(ex.borrow, at.borrow),
            poss,
            sorted(set(ex.reasons) | set(at.reasons)),
            most_severe(ex.no_fit_reason, at.no_fit_reason),
        )
    if src:
        rg = cq.rg_by_resource.get(res)
        present = {a.flavor for a in src}
        for flv, at in dst.items():
            if rg is None or flv not in rg.flavors or flv in present:
                continue
            at.mode = Mode.NO_FIT
            at.reasons = sorted(set(at.reasons) | {f"flavor {flv} does not provide resource {res}"})
            at.no_fit_reason = "NoMatchingFlavor"


ALLOWED_FLAVORS_ANNOTATION = "kueue.x-k8s.io/workload-allowed-resource-flavors"


def _flavor_allowed(wl: dict, flavor: str) -> bool:
    """``IsFlavorAllowedForVariant`` with the gate on: no annotation allows every flavor."""
    val = ((wl.get("metadata") or {}).get("annotations") or {}).get(ALLOWED_FLAVORS_ANNOTATION)
    return val is None or flavor in [v.strip() for v in val.split(",")]


class FlavorAssigner:
    """Assigns flavors for one workload in one ClusterQueue snapshot (Kueue ``FlavorAssigner``)."""

    def __init__(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueSnapshot,
        flavors: dict[str, dict],
        oracle: Oracle,
        replace_slice: WorkloadInfo | None = None,
        scheduling_cycle: int = 0,
        enable_fair_sharing: bool = False,
    ):
        self.info = info
        self.cq = cq
        self.flavors = flavors
        self.oracle = oracle
        self.replace_slice = replace_slice
        self.cycle = scheduling_cycle
        self.fair_sharing = enable_fair_sharing
        self.concurrent_admission = False  # gate ConcurrentAdmission: honour the allowed-flavors annotation

    # 1. the whole workload -------------------------------------------------------------
    def assign(self) -> Assignment:
        """``assignFlavors``: pod sets in spec order, usage of earlier pod sets assumed."""
        a = Assignment(
            replace_slice=self.replace_slice, last_state=AssignmentState([], self.cq.generation, self.cycle)
        )
        covers_pods = "pods" in self.cq.rg_by_resource
        podsets = self.info.obj["spec"]["podSets"]
        # Pod sets of one ``topologyRequest.podSetGroupName`` (a LeaderWorkerSet's leader and workers) are
        # assigned together: their requests summed, one flavor per resource for the whole group.
        all_requests: list[dict[str, int]] = []
        groups: dict[str, list[int]] = {}
        for i, psr in enumerate(self.info.total_requests):
            requests = dict(psr.requests)
            if covers_pods:
                requests["pods"] = psr.count
            all_requests.append(requests)
            group = ((podsets[i] if i < len(podsets) else {}).get("topologyRequest") or {}).get(
                "podSetGroupName"
            )
            groups.setdefault(str(i) if group is None else group, []).append(i)
        for ids in groups.values():
            requests = {}
            for i in ids:
                for r, q in all_requests[i].items():
                    requests[r] = requests.get(r, 0) + q
            group_flavors: dict[str, FlavorAssignment] | None = {}
            group_status = Status()
            considered: dict[str, FlavorAttempt] = {}
            for res in sorted(requests):
                q = requests[res]
                if res not in self.cq.rg_by_resource and q == 0:
                    continue
                if group_flavors is not None and res in group_flavors:
                    continue
                flv, status, attempts = self._find_flavor(
                    ids, [podsets[i] for i in ids], requests, res, a.usage
                )
                _merge_attempts(considered, attempts, res, self.cq)
                if (status is not None and status.err is not None) or (not flv and requests):
                    group_flavors = None
                    group_status = status or Status()
                    break
                assert group_flavors is not None  # only set to None right before the break above
                group_flavors.update(flv)
                if status is not None:
                    group_status.reasons.extend(status.reasons)
            failed = False
            for i in ids:
                own = all_requests[i]
                flavors = {r: f for r, f in (group_flavors or {}).items() if r in own} if own else {}
                psa = PodSetAssignment(
                    self.info.total_requests[i].name,
                    flavors,
                    group_status,
                    own,
                    self.info.total_requests[i].count,
                    [considered[k] for k in sorted(considered)],
                )
                self._append(a, own, psa)
                failed = failed or group_status.err is not None or bool(own and not flavors)
            if failed:
                self._resolve_no_fit_reason(a)
                return a
        self._resolve_no_fit_reason(a)
        return a

    def _append(self, a: Assignment, requests: dict[str, int], psa: PodSetAssignment) -> None:
        a.podsets.append(psa)
        idx: dict[str, int] = {}
        for res, f in psa.flavors.items():
            a.borrowing = max(a.borrowing, f.borrow)
            q = requests.get(res, 0)
            if self.replace_slice is not None:
                q -= self._old_request(psa.name, res)
            fr = (f.name, res)
            a.usage[fr] = a.usage.get(fr, 0) + q
            idx[res] = f.tried_flavor_idx
        a.last_state.last_tried_flavor_idx.append(idx)

    def _old_request(self, ps_name: str, res: str) -> int:
        for ps in self.replace_slice.total_requests if self.replace_slice else []:
            if ps.name == ps_name:
                return ps.requests.get(res, 0)
        return 0

    def _resolve_no_fit_reason(self, a: Assignment) -> None:
        """``resolveNoFitReason``: least severe per resource group, most severe across groups."""
        if a.representative_mode() != Mode.NO_FIT:
            return
        overall = ""
        for ps in a.podsets:
            if ps.representative_mode() != Mode.NO_FIT:
                continue
            if not ps.attempts:
                overall = most_severe(overall, "NoMatchingFlavor")
                continue
            rg_min: dict[int, str] = {}
            for i, at in enumerate(ps.attempts):
                if at.mode != Mode.NO_FIT:
                    continue
                idxs = [j for j, rg in enumerate(self.cq.resource_groups) if at.flavor in rg.flavors] or [
                    -1 - i
                ]
                for j in idxs:
                    if j not in rg_min or SEVERITY.get(at.no_fit_reason, 0) < SEVERITY.get(rg_min[j], 0):
                        rg_min[j] = at.no_fit_reason
            ps_reason = ""
            for r in rg_min.values():
                ps_reason = most_severe(ps_reason, r)
            overall = most_severe(overall, ps_reason)
        a.no_fit_reason = overall

    # 2. one resource group of one pod set ------------------------------------------------
    def _find_flavor(
        self,
        ps_ids: list[int],
        podsets: list[dict],
        requests: dict[str, int],
        res: str,
        assumed: dict[FlavorResource, int],
    ):
        """``findFlavorForPodSets``: returns (flavors per resource, status or None when Fit, attempts)."""
        rg = self.cq.rg_by_resource.get(res)
        if rg is None:
            return {}, Status([f"resource {res} unavailable in ClusterQueue"]), []
        status = Status()
        reqs = {r: requests[r] for r in sorted(requests) if r in rg.covered}
        best: dict[str, FlavorAssignment] = {}
        best_mode: Granular = (PMode.NO_FIT, BIG)
        attempts: list[FlavorAttempt] = []
        attempted = -1
        last = self.info.last_assignment
        idx = last.next_flavor(ps_ids[0], res) if isinstance(last, AssignmentState) else 0
        ff = self.cq.fungibility
        while idx < len(rg.flavors):
            attempted = idx
            fname = rg.flavors[idx]
            idx += 1
            if self.concurrent_admission and not _flavor_allowed(self.info.obj, fname):
                status.reasons.append(
                    f"skipping flavor {fname} due to WorkloadAllowedResourceFlavorAnnotation annotation"
                )
                continue
            reasons = self._check_flavor(fname, podsets)
            if reasons:
                status.reasons.extend(reasons)
                attempts.append(
                    FlavorAttempt(fname, Mode.NO_FIT, reasons=list(reasons), no_fit_reason="NoMatchingFlavor")
                )
                continue
            assignments: dict[str, FlavorAssignment] = {}
            rep: Granular = (PMode.FIT, 0)
            max_borrow = 0
            fq_reasons: list[str] = []
            nf_reason = ""
            # a workload slice replacing another: each pod set's request beyond the replaced one's, same flavor
            replacing = self.replace_slice is not None
            replaced = self.replace_slice.total_requests if self.replace_slice is not None else []
            for rname, val in reqs.items():
                for ps_idx in ps_ids if replacing else ():
                    old = replaced[ps_idx] if ps_idx < len(replaced) else PodSetResources("", {}, 0)
                    orig = old.flavors.get(rname)
                    if orig != fname:
                        # Kueue records the mismatch and still evaluates quota for the full request.
                        rep = (PMode.NO_FIT, BIG)
                        msg = f"could not assign {fname} flavor since the original workload is assigned: {orig or ''}"
                        status.reasons.append(msg)
                        fq_reasons.append(msg)
                        nf_reason = most_severe(nf_reason, "NoMatchingFlavor")
                        break
                    val -= old.requests.get(rname, 0)
                fr = (fname, rname)
                pmode, borrow, st = self._fits_resource_quota(fr, assumed.get(fr, 0), val)
                if st is not None:
                    fq_reasons.extend(st.reasons)
                    status.reasons.extend(st.reasons)
                    nf_reason = most_severe(nf_reason, st.no_fit_reason)
                max_borrow = max(max_borrow, borrow)
                mode: Granular = (pmode, borrow)
                if is_preferred(rep, mode, ff):
                    rep = mode
                if rep[0] == PMode.NO_FIT:
                    continue
                assignments[rname] = FlavorAssignment(fname, pmode.public(), borrow=borrow)
            attempts.append(
                FlavorAttempt(
                    fname, rep[0].public(), max_borrow, rep[0].possibility(), sorted(fq_reasons), nf_reason
                )
            )
            if not should_try_next_flavor(rep, ff):
                best, best_mode = assignments, rep
                break
            if is_preferred(rep, best_mode, ff):
                best, best_mode = assignments, rep
        for fa in best.values():
            fa.tried_flavor_idx = -1 if attempted == len(rg.flavors) - 1 else attempted
        if best_mode[0] == PMode.FIT:
            return best, None, attempts
        return best, status, attempts

    def _check_flavor(self, fname: str, podsets: list[dict]) -> list[str]:
        """``checkFlavorForPodSets``: existence, then taints and node affinity of each pod set of the group."""
        flavor = self.flavors.get(fname)
        if flavor is None:
            return [f"flavor {fname} not found"]
        fspec = flavor.get("spec") or {}
        for podset in podsets:
            pspec = (podset.get("template") or {}).get("spec") or {}
            taint = untolerated_taint(
                fspec.get("nodeTaints") or [],
                list(pspec.get("tolerations") or []) + list(fspec.get("tolerations") or []),
            )
            if taint is not None:
                return [f"untolerated taint {taint_str(taint)} in flavor {fname}"]
            if not flavor_matches_affinity(pspec, fspec.get("nodeLabels") or {}):
                return [f"flavor {fname} doesn't match node affinity"]
        return []

    def _fits_resource_quota(
        self, fr: FlavorResource, assumed: int, request: int
    ) -> tuple[PMode, int, Status | None]:
        """``fitsResourceQuota``."""
        cq = self.cq
        flavor, res = fr
        avail = cq.available(fr)
        max_cap = cq.potential_available(fr)
        val = assumed + request
        if val > max_cap:
            fmt = format_requests
            msg = (
                f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests "
                f"({fmt({res: assumed})[res]}) + current podset request ({fmt({res: request})[res]}) "
                f"> maximum capacity ({fmt({res: max_cap})[res]})"
            )
            return PMode.NO_FIT, 0, Status([msg], no_fit_reason="ExceedsMaxQuota")
        borrow, may_reclaim = find_height_of_lowest_subtree_that_fits(cq, fr, val)
        if val <= avail:
            return PMode.FIT, borrow, None
        st = Status(
            [
                f"insufficient unused quota for {res} in flavor {flavor}, "
                f"{format_requests({res: val - avail})[res]} more needed"
            ],
            no_fit_reason="WaitingForQuota",
        )
        if cq.quota(fr).nominal >= val or may_reclaim or self._can_preempt_while_borrowing():
            possibility, borrow_after = self.oracle(cq, self.info, fr, val)
            mode = _POSSIBILITY[possibility]
            st.no_fit_reason = ""
            return mode, borrow_after, st
        return PMode.NO_FIT, borrow, st

    def _can_preempt_while_borrowing(self) -> bool:
        p = self.cq.preemption
        return p["borrowWithinCohort"] != "Never" or (
            self.fair_sharing and p["reclaimWithinCohort"] != "Never"
        )
