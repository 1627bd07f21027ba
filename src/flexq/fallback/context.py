"""What one pass carries from step to step: the view it read, the evidence, the remembered breakers and full
flavors, the writer, what it did, and the jobs it already acted on (a job is acted on once per pass)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flexq.clock import format_duration
from flexq.fallback.costs import CostLedger
from flexq.fallback.evidence import Evidence, has_room
from flexq.fallback.forecast import Candidate, ForecastJudge
from flexq.fallback.model import Action, Breaker, FallbackConfig, Full
from flexq.fallback.view import ClusterView, Promises, WorkloadView
from flexq.fallback.writes import Writer

if TYPE_CHECKING:
    from flexq.fallback.contention import ClassHistory

__all__ = ["PassContext"]


@dataclass
class PassContext:
    view: ClusterView
    cfg: FallbackConfig
    evidence: Evidence
    breakers: dict[str, Breaker]
    fulls: dict[str, Full]
    writer: Writer
    actions: list[Action] = field(default_factory=list)
    touched: set[tuple[str, str, str] | None] = field(default_factory=set)
    promises: Promises = field(default_factory=Promises)
    # workload key -> why it is (not) acted on, for explain()
    notes: dict[str, str] = field(default_factory=dict)
    expected_wait: dict[str, float] = field(default_factory=dict)  # flavor -> its provisioning wait, as seen
    wakeups: list[float] = field(default_factory=list)  # when something deferred in this pass comes due
    # cohort -> priority -> when a job of that priority last arrived there (``priorities.PriorityMemory``)
    recent_priorities: dict[str, dict[int, float]] = field(default_factory=dict)
    # jobs Kueue preempted that have not started since, and when first seen so (``priorities.PreemptionMemory``)
    preempted_jobs: dict[tuple[str, str, str], float] = field(default_factory=dict)
    returning: set[str] = field(default_factory=set)  # flavors a rescued job goes back to in this pass
    # flavors a job Kueue put on plan B for their quota in use is promoted to once it frees (``moves.returns``)
    promotable: set[str] = field(default_factory=set)
    # flavor -> what is left of its stock-out under way, by its past ones (``waits.StockoutMemory``; absent: unknown)
    stockout_left: dict[str, float] = field(default_factory=dict)
    # what the fallback's moves added to each class's bill (``costs``; kept only with a hedge_cost_budget)
    costs: CostLedger = field(default_factory=CostLedger)
    # decide_by "forecast": the judge, and the moves this pass proposes to it (``flexq.fallback.decide``)
    judge: ForecastJudge | None = None
    candidates: list[Candidate] = field(default_factory=list)
    # the classes' arrivals and runs seen (``contention``: a lower class's job held back for the ones above)
    history: ClassHistory | None = None

    @property
    def by_forecast(self) -> bool:
        return self.judge is not None

    def propose(self, c: Candidate) -> bool:
        """Put a move to the forecast (False: it refused this one lately; the note says what it said)."""
        assert self.judge is not None
        if c.w.job is not None:
            self.touched.add(c.w.job)
        refused = self.judge.refused.get(c.name)
        if refused is not None and self.now - refused[0] < self.cfg.forecast_recheck_seconds:
            self.note(c.w, f"{refused[1].describe()} (judged {format_duration(self.now - refused[0])} ago)")
            self.wakeups.append(refused[0] + self.cfg.forecast_recheck_seconds)
            return False
        self.candidates.append(c)
        return True

    def worth_moving(self, target: str, waited: float, source: str | None = None) -> bool:
        """Whether a job that has already lost ``waited`` seconds on the stocked-out flavor ``source`` should go to
        ``target``: once its loss reaches what ``target`` is expected to cost in waiting (the median of its
        provisioning waits seen lately; none seen: at once) — the rent-or-buy rule: a job never waits much more
        than twice the better plan's wait, and no job is bet on a long queue for a stock-out that may end in
        minutes — and unless ``source``'s stock-outs have ended, by the ones seen, sooner than ``target``
        provisions (``stockout_left``): staying then costs the job less than the move."""
        expected = self.expected_wait.get(target, 0.0)
        if waited < expected:
            return False
        left = self.stockout_left.get(source) if source is not None else None
        return left is None or left >= expected

    @property
    def now(self) -> float:
        return self.view.now

    def note(self, w: WorkloadView, text: str) -> None:
        self.notes.setdefault(w.key, text)

    def act(self, verb: str, target: str, message: str) -> None:
        self.actions.append(Action(verb, target, message))

    def blocked(self, flavor: str) -> bool:
        """A flavor nothing should be sent to now: stocked out (its backoff running) or full."""
        b = self.breakers.get(flavor)
        return (b is not None and b.open(self.now)) or self.full(flavor)

    def full(self, flavor: str) -> bool:
        """The flavor's node pool refused to grow and has had no room since."""
        f = self.fulls.get(flavor)
        return f is not None and f.full

    def next_flavor(self, w: WorkloadView, after: set[str], nodes_needed: int = 0) -> str | None:
        """The first flavor after ``after`` in the workload's ClusterQueue that can take the job now: not stocked
        out, not full (``has_room``). None: every plan is blocked, so the job stays where it loses nothing."""
        cq = self.view.cqs.get(w.cq) or {}
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            names = [f.get("name") for f in rg.get("flavors") or []]
            if any(s in names for s in after):
                later = names[max(names.index(s) for s in after if s in names) + 1 :]
                for f in later:
                    if f in self.breakers or not has_room(self.view, self.fulls, f, nodes_needed):
                        continue
                    return f
                return None
        return None
