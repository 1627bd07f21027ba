"""Without colours, ``FitTable`` draws its lines itself (``views._plain_render``: rich's per-cell machinery costs
seconds for 5,000 rows, issue 49): the text must be rich's own, character for character, over a generated family
of tables — long and short cells, words longer than their column, several lines, markup, emoji codes, wide
characters, right-justified and no-wrap columns, titles, captions, pages from 30 to 220 columns."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.text import Text

from flexq.cli import views
from flexq.cli.views import FitTable

WORDS = [
    "a",
    "rayjob-tpu-v6e-dws-4711",
    "user-queue",
    "Pending",
    "1h05m",
    "$1,234.56",
    "(40m-2h10m)",
    "not",
    "within",
    "7d",
    "WaitingForQuota:",
    "DWSQueued:",
    "µs",
    "≈3",
    "表格",
    "[x]",
    "supercalifragilisticexpialidocious-and-then-some-more",
    "",
]


def _cell(rng: random.Random) -> str | Text:
    kind = rng.random()
    words = " ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 1, 1, 2, 3, 6, 14])))
    if kind < 0.08:
        return words.replace(" ", "\n", 1)
    if kind < 0.14:
        return f"[bold]{words}[/bold] tail"
    if kind < 0.18:
        return f":smile: {words}"
    if kind < 0.3:
        return Text.assemble((words[:5], "bold"), words[5:])
    if kind < 0.36:
        return f"  {words}  "
    return words


def _table(rng: random.Random) -> FitTable:
    t = FitTable(
        title=rng.choice([None, "", "a title", "17:03:11  3 changed"]),
        caption=rng.choice([None, None, "no workloads"]),
        header_style="bold",
        drop=rng.choice([(), ("QUEUE",)]),
    )
    for i in range(rng.randint(1, 9)):
        t.add_column(
            rng.choice(
                ["JOB", "QUEUE", "PLAN (flavor per pod set)", "WAITED", "ETA", "WHY", "COST", "NAMESPACE"]
            )
            + ("" if i < 8 else "X"),
            justify=rng.choice(["left", "left", "right"]),
            no_wrap=rng.random() < 0.2,
            overflow=rng.choice(["fold", "fold", "ellipsis"]),
        )
    for _ in range(rng.randint(0, 12)):
        t.add_row(*(_cell(rng) for _ in t.columns))
    return t


def _draw(table: FitTable, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False, legacy_windows=False).print(table)
    return out.getvalue()


def _both(draw, table: FitTable, width: int, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, bool]:
    """``table`` drawn by ``draw`` with ``FitTable``'s line-at-a-time path and by rich alone, and whether the first
    took that path (``_plain_render`` may decline a layout)."""
    real = views._plain_render
    taken: list[bool] = []

    def spy(*a: object, **k: object) -> object:
        got = real(*a, **k)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got

    monkeypatch.setattr(views, "_plain_render", spy)
    fast = draw(table, width)
    monkeypatch.setattr(views, "_plain_render", lambda *a, **k: None)
    slow = draw(table, width)
    monkeypatch.setattr(views, "_plain_render", real)
    return fast, slow, any(taken)


@pytest.mark.parametrize("seed", range(6))
def test_the_plain_table_is_riches_text(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    drawn = declined = 0
    for _ in range(40):
        table, width = _table(rng), rng.choice([30, 52, 80, 120, 200, 220])
        fast, slow, took = _both(_draw, table, width, monkeypatch)
        assert fast == slow, f"seed {seed}, width {width}:\n{fast}\n--- rich:\n{slow}"
        drawn += took
        declined += not took
    assert drawn > 15, (drawn, declined)  # the plain path is the one taken, not a path never run


def test_a_terminal_still_gets_riches_colours() -> None:
    t = FitTable()
    t.add_column("STATE")
    t.add_row(Text("Pending", style="yellow"))
    out = io.StringIO()
    Console(file=out, width=40, force_terminal=True, color_system="standard").print(t)
    assert "\x1b[33mPending" in out.getvalue()


def _styled_chars(ansi: str) -> list[tuple[str, str]]:
    """Each character of a terminal's output with the style it is shown in (however rich split its segments)."""
    text = Text.from_ansi(ansi)
    styles = [""] * len(text.plain)
    for span in text.spans:
        for k in range(span.start, span.end):
            styles[k] = f"{styles[k]} {span.style}".strip()
    return list(zip(text.plain, styles, strict=True))


def _draw_colour(table: FitTable, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system="truecolor", force_terminal=True, legacy_windows=False).print(
        table
    )
    return out.getvalue()


@pytest.mark.parametrize("seed", range(6, 10))
def test_on_a_terminal_the_table_is_riches_text_and_styles(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A terminal (colours) takes the same line-at-a-time path (issue 49: `flexq status -A` in a terminal cost 3x
    the CPU of a pipe): each character and its style as rich shows them, over the generated family, with styled
    headers, columns and cells."""
    rng = random.Random(seed)
    drawn = 0
    for _ in range(30):
        table, width = _table(rng), rng.choice([30, 52, 80, 120, 200])
        for c in table.columns:
            c.style = rng.choice(["", "", "dim", "green"])
            c.header_style = rng.choice(["", "italic"])
        for r in range(len(table.rows)):
            table.columns[0]._cells[r] = rng.choice(
                [Text("Pending", style="yellow"), "[bold blue]Running[/]", "plain", Text("x")]
            )
        fast, slow, took = _both(_draw_colour, table, width, monkeypatch)
        assert _styled_chars(fast) == _styled_chars(slow), (
            f"seed {seed}, width {width}:\n{fast}\n--- rich:\n{slow}"
        )
        drawn += took
    assert drawn > 10, drawn  # the line-at-a-time path is the one taken
