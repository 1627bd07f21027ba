"""Rich renderings shared by ``flexq status`` and ``flexq demo``.

Owns: ``FitTable`` (every table the CLI prints: fitted to the page without cutting a figure), the workload table
(``status_table``), state colours and the plain-text form of the same table
(``status_text``, for logs, tests and the README). Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from flexq.cli.status import WorkloadRow, fmt_cost
from flexq.clock import format_duration

__all__ = [
    "FitTable",
    "STATE_STYLE",
    "status_table",
    "status_text",
    "provisioning_short",
    "why_text",
    "reasons_legend",
]

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


# A figure: 9,113  $1,234.56  47m35s  12.5%  (40m-2h10m)  ±3.2  1e+09 ... — never cut, never folded
_FIGURE = re.compile(
    r"[(\[$~<>≈±+\-]*\d[\d.,:]*(?:[a-zA-Zµ%+]{1,3}\d[\d.,:]*)*[a-zA-Zµ%]{0,3}"
    r"(?:-\d[\d.,:]*(?:[a-zA-Zµ%]{1,3}\d[\d.,:]*)*[a-zA-Zµ%]{0,3})*[)\]%,;:.]*"
)
_TEXT_MIN = 8  # a text column is never made narrower than this (or its longest word, if shorter)


_MARKUP_OR_EMOJI = re.compile(r"\[|:\S*?:")  # what rich's render_str may change in a string's text


def _cell_text(console: Console, cell: Any) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):  # rich's markup or an emoji code changes the text; else it is the string itself
        return console.render_str(cell).plain if _MARKUP_OR_EMOJI.search(cell) else cell
    return ""


def _widths(console: Console, header: Any, cells: Iterable[Any]) -> tuple[int, int, bool]:
    """(the narrowest the column may be: its longest figure, else a few characters of text; its natural width;
    whether it holds any figure)."""
    head = _cell_text(console, header)
    need = max([min(len(w), 5) for w in head.split()] or [1])
    natural, figures = max([len(line) for line in head.splitlines()] or [1]), False
    for cell in cells:
        for line in _cell_text(console, cell).splitlines() or [""]:
            natural = max(natural, len(line))
            for word in line.split():
                if _FIGURE.fullmatch(word):
                    need, figures = max(need, len(word)), True
                else:
                    need = max(need, min(len(word), _TEXT_MIN))
    return need, natural, figures


class FitTable(Table):
    """A ``rich`` table that fits the page without cutting a figure (issue 50: "9,11…" at 80 columns).

    Rich shrinks the widest columns and then every column evenly, cutting whatever is in them with "…". Here,
    at render time: a column is never narrower than its longest figure (a number, an amount, a duration, a
    range of them), and text folds rather than being cut. When even that does not fit, the columns named in
    ``drop`` (first named, first dropped) are left out, and the caption says which; the rest of the width goes
    to the columns in proportion to what they would take. A ``no_wrap`` column (names) is kept whole up to two
    fifths of the page."""

    def __init__(self, *args: Any, drop: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drop = tuple(drop)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        fitted = self.fitted(console, options.max_width if self.width is None else self.width)
        drawn = _plain_render(fitted, console, options)
        yield from drawn if drawn is not None else Table.__rich_console__(fitted, console, options)

    def fitted(self, console: Console, width: int) -> Table:
        """A copy of this table whose columns have widths that fit ``width`` (some dropped if they must be)."""
        cols = [copy.copy(c) for c in self.columns]
        sizes = {id(c): _widths(console, c.header, c._cells) for c in cols}
        for c in cols:  # a no_wrap column holds names (a job's): whole, as long as that can fit
            if c.no_wrap:
                need, natural, figures = sizes[id(c)]
                sizes[id(c)] = (max(need, min(natural, 2 * width // 5)), natural, figures)
        out = copy.copy(self)
        dropped: list[str] = []

        def room(columns: list[Any]) -> int:
            out.columns = columns
            for i, c in enumerate(columns):
                c._index = i
            pads = sum(out._get_padding_width(i) for i in range(len(columns)))
            return width - out._extra_width - pads

        kept = list(cols)
        # the columns named in drop, then (a last resort, rather than a cut figure) from the right
        for name in [*self.drop, *(None for _ in cols[1:])]:
            if sum(sizes[id(c)][0] for c in kept) <= room(kept) or len(kept) == 1:
                break
            hit = [c for c in kept if _cell_text(console, c.header) == name] if name else [kept[-1]]
            if hit:
                kept.remove(hit[0])
                dropped.append(_cell_text(console, hit[0].header).replace("\n", " "))
        free = room(kept)
        if sum(sizes[id(c)][1] for c in kept) <= free:
            for c in kept:  # all fit as they are: rich lays them out
                c.overflow = "fold"
        else:
            widths = [sizes[id(c)][0] for c in kept]
            want = [max(0, sizes[id(c)][1] - w) for c, w in zip(kept, widths, strict=True)]
            spare = free - sum(widths)
            if spare > 0 and any(want):
                total = sum(want)
                extra = [min(w, spare * w // total) for w in want]
                left = spare - sum(extra)
                for i in sorted(range(len(kept)), key=lambda i: -(want[i] - extra[i])):
                    if left <= 0:
                        break
                    if want[i] > extra[i]:
                        extra[i] += 1
                        left -= 1
                widths = [w + e for w, e in zip(widths, extra, strict=True)]
            for c, w in zip(kept, widths, strict=True):
                c.width, c.min_width, c.max_width = w, None, None
                c.overflow, c.no_wrap = "fold", False
        if dropped:
            note = f"left out at {width} columns: {', '.join(dropped)} (a wider terminal, or -o json, shows them)"
            out.caption = f"{self.caption}; {note}" if self.caption else note
        return out


# -- the same table drawn a line at a time -----------------------------------------------------------------------
# rich lays out every cell through its general machinery (measure, pad, wrap, crop: ~60 us a cell), so 5,000
# rows take seconds; most cells are one line of plain text that fits. ``_plain_render`` draws exactly rich's text
# for the tables ``FitTable`` makes — widths, padding, the header's bottom alignment, the box, title and caption —
# a fitting one-line cell as a string (in its column's or the header's style on a terminal), any other cell (too
# long, several lines, markup, a styled Text) by rich itself, with rich's styles; it declines (None: rich draws
# the whole table) for a layout it does not draw. tests/cli/test_plain_table.py holds it to rich's text, and on a
# terminal to rich's text and styles, character for character.


def _simple_text(cell: Any) -> str | None:
    """A cell's text when rich would draw it as that text on one line (no markup, emoji code, control or tab)."""
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str) and not _MARKUP_OR_EMOJI.search(cell):
        text = cell
    else:
        return None
    return text if text.isprintable() else None


def _plain_widths(table: Table, console: Console, max_width: int) -> list[int] | None:
    """The column widths (with padding) rich's ``_calculate_column_widths`` gives a ``FitTable.fitted`` table
    (each column its fixed width, else its longest line), or None where rich would collapse or expand."""
    if table.expand or table.min_width is not None:
        return None
    widths = []
    for c in table.columns:
        pad = table._get_padding_width(c._index)
        if c.width is not None:
            widths.append(c.width + pad)
            continue
        if c.min_width is not None or c.max_width is not None:
            return None
        longest = 0
        for cell in [c.header, *c._cells] if table.show_header else c._cells:
            text = _simple_text(cell)
            if text is None:
                if isinstance(cell, str):
                    text = console.render_str(cell).plain
                elif isinstance(cell, Text):
                    text = cell.plain
                else:
                    return None
                lines = text.splitlines()
                longest = max(longest, *(cell_len(line) for line in lines)) if lines else longest
            else:
                longest = max(longest, cell_len(text))
        widths.append(longest + pad)
    return widths if sum(widths) <= max_width and all(w > 2 for w in widths) else None


def _plain_render(table: Table, console: Console, options: ConsoleOptions) -> list[Segment] | None:
    """``table`` as rich draws it without colours (see above), or None."""
    if (
        table.padding != (0, 1, 0, 1)
        or table.collapse_padding
        or not table.pad_edge
        or not table.show_edge
        or table.show_footer
        or table.show_lines
        or table.leading
        or table.row_styles
        or table.box is None
        or not table.columns
        or not table.rows
        or any(r.end_section or r.style for r in table.rows)
        or any(c.justify not in ("left", "right") or c.vertical != "top" for c in table.columns)
        or (
            console.color_system is not None
            and bool(console.get_style(table.style or "") + console.get_style(table.border_style or ""))
        )
    ):
        return None
    color = console.color_system is not None
    get_style = console.get_style
    header_styles = [get_style(table.header_style or "") + get_style(c.header_style) for c in table.columns]
    cell_styles = [get_style(c.style or "") for c in table.columns]
    max_width = options.max_width if table.width is None else table.width
    extra = table._extra_width
    widths = _plain_widths(table, console, max_width - extra)
    if widths is None:
        return None
    render_options = options.update(width=sum(widths) + extra, highlight=table.highlight, height=None)
    box = table.box.substitute(
        render_options, safe=console.safe_box if table.safe_box is None else table.safe_box
    )
    if not table.show_header:
        box = box.get_plain_headed_box()
    out: list[Segment] = []
    line = Segment.line()

    def annotation(text: Any, style: Any, justify: Any) -> None:
        shown = console.render_str(text, style=style, highlight=False) if isinstance(text, str) else text
        out.extend(console.render(shown, render_options.update(justify=justify)))

    if table.title:
        annotation(table.title, table.title_style or "table.title", table.title_justify)
    out += [Segment(box.get_top(widths)), line]
    rows: list[tuple[bool, list[Any]]] = [
        (False, [c._cells[i] for c in table.columns]) for i in range(len(table.rows))
    ]
    if table.show_header:
        rows.insert(0, (True, [c.header for c in table.columns]))
    last = len(rows) - 1
    for n, (header, cells) in enumerate(rows):
        # each cell's lines: a string (no style) or, on a terminal, the segments of a styled line
        drawn: list[list[str | list[Segment]]] = []
        styles = header_styles if header else cell_styles
        for width, cell, c, style in zip(widths, cells, table.columns, styles, strict=True):
            text, inner = _simple_text(cell), width - 2
            if color and isinstance(cell, Text) and (cell.style or cell.spans):
                if (
                    text is not None
                    and not cell.spans
                    and c.justify == "left"
                    and cell.justify in (None, "default", "left")
                    and cell_len(text) <= inner
                ):  # one style over the text and its fill (rich's Text pads in its own style)
                    own = style + get_style(cell.style)
                    drawn.append(
                        [
                            [
                                Segment(" ", style),
                                Segment(text + " " * (inner - cell_len(text)), own),
                                Segment(" ", style),
                            ]
                        ]
                    )
                    continue
                text = None  # spans, or a layout rich must make: rich draws it
            styled = color and bool(style)
            if (
                text is not None and cell_len(text) <= inner
            ):  # one line: rich pads it (right: strips, then pads)
                if c.justify == "right":
                    text = text.rstrip()
                    one = f" {' ' * (inner - cell_len(text))}{text} "
                else:
                    one = f" {text}{' ' * (inner - cell_len(text))} "
                drawn.append([[Segment(one, style)] if styled else one])
                continue
            if (
                text is not None
                and c.overflow == "fold"
                and not c.no_wrap
                and text.isascii()
                and " " not in text
            ):
                # one word too long for its column, folded: rich's chunks of the column's width, each padded
                chunks = [text[k : k + inner] for k in range(0, len(text), inner)]
                pad = str.rjust if c.justify == "right" else str.ljust
                lines_ = [f" {pad(chunk, inner)} " for chunk in chunks]
                drawn.append([[Segment(x, style)] if styled else x for x in lines_])
                continue
            cell_options = render_options.update(
                width=width, justify=c.justify, no_wrap=c.no_wrap, overflow=c.overflow, highlight=c.highlight
            )
            lines = console.render_lines(
                Padding(cell, (0, 1, 0, 1)), cell_options, style=style if color else None
            )
            if color:
                drawn.append([list(ln) for ln in lines])
            else:
                drawn.append(["".join(seg.text for seg in ln) for ln in lines])
        height = max(len(d) for d in drawn)
        for i, d in enumerate(drawn):
            blank_text = " " * widths[i]
            fill: str | list[Segment] = (
                [Segment(blank_text, styles[i])] if color and styles[i] else blank_text
            )
            blank = [fill] * (height - len(d))
            drawn[i] = blank + d if header else d + blank
        left, right, divider = (
            (box.head_left, box.head_right, box.head_vertical)
            if n == 0
            else (box.foot_left, box.foot_right, box.foot_vertical)
            if n == last
            else (box.mid_left, box.mid_right, box.mid_vertical)
        )
        for k in range(height):
            parts = [d[k] for d in drawn]
            if all(isinstance(p, str) for p in parts):
                out += [Segment(left + divider.join(parts) + right), line]  # type: ignore[arg-type]
                continue
            segs = [Segment(left)]
            for j, p in enumerate(parts):
                if j:
                    segs.append(Segment(divider))
                if isinstance(p, str):
                    segs.append(Segment(p))
                else:
                    segs.extend(p)
            out += [*segs, Segment(right), line]
        if header:
            out += [Segment(box.get_row(widths, "head", edge=True)), line]
    out += [Segment(box.get_bottom(widths)), line]
    if table.caption:
        annotation(table.caption, table.caption_style or "table.caption", table.caption_justify)
    return out


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
    t = FitTable(
        title=title,
        expand=False,
        show_lines=False,
        header_style="bold",
        drop=("QUEUE", "PLAN (flavor per pod set)"),
    )
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
    t = FitTable(show_header=True, header_style="bold", box=None, expand=False)
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
