"""Rich renderings shared by ``flexq status`` and ``flexq demo``.

Owns: the workload table (``status_table``), state colours and the plain-text form of the same table
(``status_text``, for logs, tests and the README). Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flexq.cli.status import WorkloadRow, fmt_cost
from flexq.clock import format_duration

__all__ = ["STATE_STYLE", "status_table", "status_text", "provisioning_short", "why_text", "reasons_legend"]

STATE_STYLE = {
    "Pending": "yellow",
    "QuotaReserved": "cyan",
    "Evicted": "magenta",
    "Admitted": "blue",
    "Running": "bold blue",
    "Succeeded": "green",
    "Failed": "bold red",
    "Deactivated": "red",
    "Replaced": "dim",
    "Finished": "green",
}

# Piped or captured output (CI logs, `flexq status | less`) gets a wide page instead of rich's 80 columns,
# so tables stay one line per row; COLUMNS still wins when set. Messages on stderr are never wrapped: a
# piped error is one line, as written.
console = Console() if Console().is_terminal or os.environ.get("COLUMNS") else Console(width=200)
err_console = Console(stderr=True, soft_wrap=True)


def fit_width() -> None:
    """At the start of a command: the page width as the environment says now (``COLUMNS``, else the terminal's,
    else 200 columns when piped); the consoles are made once, at import."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        console.width = int(columns)
    elif not console.is_terminal:
        console.width = 200


def provisioning_short(row: WorkloadRow) -> str:
    """``dws-prov-1: Provisioned`` from ``<workload>-dws-prov-1: Provisioned (message)``."""
    text = row.provisioning.partition(" (")[0]
    return text.removeprefix(f"{row.workload}-") or "-"


def status_table(
    rows: Sequence[WorkloadRow], *, title: str | None = None, wide: bool = False, provisioning: bool = False
) -> Table:
    """One line per workload: JOB, QUEUE, PLAN, STATE, WAITED, ETA (when a row has one: ``flexq eta``), WHY, COST
    (NAMESPACE when several; the ProvisioningRequest's state in its own column with ``provisioning``)."""
    several_ns = len({r.namespace for r in rows}) > 1
    t = Table(title=title, expand=False, show_lines=False, header_style="bold")
    if several_ns:
        t.add_column("NAMESPACE")
    t.add_column("JOB", no_wrap=True)
    if wide:
        t.add_column("WORKLOAD", no_wrap=True)
    t.add_column("QUEUE")
    t.add_column("PLAN (flavor per pod set)")
    t.add_column("STATE")
    t.add_column("WAITED", justify="right")
    if provisioning:
        t.add_column("PROVISIONING")
    with_eta = any(r.eta for r in rows)
    if with_eta:
        t.add_column("ETA", overflow="fold")
    t.add_column("WHY", overflow="fold", ratio=1)
    t.add_column("COST", justify="right")
    for r in rows:
        cells: list[str | Text] = []
        if several_ns:
            cells.append(r.namespace)
        cells.append(r.job.split("/", 1)[-1] or r.workload)
        if wide:
            cells.append(r.workload)
        cells += [
            r.queue,
            r.plan_text,
            Text(r.state, style=STATE_STYLE.get(r.state, "")),
            format_duration(r.waited),
        ]
        if provisioning:
            cells.append(provisioning_short(r))
        if with_eta:
            cells.append(r.eta or "")
        cells += [why_text(r), fmt_cost(r.cost)]
        t.add_row(*cells)
    if not rows:
        t.caption = "no workloads"
    return t


def why_text(row: WorkloadRow) -> Text | str:
    """The WHY cell: what flexq's fallback did (when it did), then the coded reason (bold) and its detail, else
    the conditions' own words."""
    if row.reason is None:
        return row.why or ""
    rest = row.why.removeprefix(row.note).removeprefix("; ") if row.note else row.why
    lead = (row.note + "; ",) if row.note else ()
    return Text.assemble(*lead, (row.reason.code, "bold"), ": ", row.reason.detail or rest or "")


def reasons_legend(rows: Sequence[WorkloadRow]) -> Table | None:
    """What each reason code in ``rows`` means and what to do (one line each), or None when none wait."""
    seen: dict[str, WorkloadRow] = {}
    for r in rows:
        if r.reason is not None:
            seen.setdefault(r.reason.code, r)
    if not seen:
        return None
    t = Table(show_header=True, header_style="bold", box=None, expand=False)
    t.add_column("REASON", no_wrap=True)
    t.add_column("FROM")
    t.add_column("MEANS", overflow="fold", ratio=1)
    t.add_column("WHAT TO DO", overflow="fold", ratio=1)
    for code, r in seen.items():
        assert r.reason is not None
        info = r.reason.reason
        t.add_row(Text(code, style="bold"), info.source, info.summary, info.action)
    return t


def status_text(rows: Sequence[WorkloadRow], width: int = 160, wide: bool = False) -> str:
    """The table as plain text (no colours), e.g. for the README or a log."""
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    with console.capture() as cap:
        console.print(status_table(rows, wide=wide))
        legend = reasons_legend(rows)
        if legend is not None:
            console.print(legend)
    return cap.get()
