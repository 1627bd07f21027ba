"""Shared fixtures for the whole suite, and how the suite runs side by side (pytest-xdist).

The README's test command runs the suite on several workers (``-n 6 --dist loadgroup``): most of the suite's
wall time is tests that wait in real time (real Ray training, real ``gcloud``/``kubectl`` processes, a real
browser, the ``kill -9`` soak), so more workers than cores keep both cores busy. How tests are grouped:

- every module is one unit of work (its tests run in order on one worker, so a module-scoped fixture — a served
  twin, a browser — is built once, as in a serial run);
- tests marked ``heavy`` (real RayJobs training side by side: each peaks at 4 GiB or more) form one unit,
  ``heavy``, so two of them never run at once;
- a module marked ``spread`` (independent tests, no module-scoped fixture, minutes each: the fallback's family
  property) gives each test a unit of its own, so its minutes spread over the workers;
- units start longest first (``tests/durations.json``: seconds per module from an earlier run; refresh it with
  ``pytest -n 6 --dist loadgroup --record-durations``), so a long module never starts last.

Each worker is isolated: its own ``FLEXQ_HOME`` (a temporary directory, for anything that would fall back to
``~/.flexq``), pytest's temporary directories per worker, ports chosen by the OS.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from flexq import Twin

DURATIONS = Path(__file__).parent / "durations.json"
HEAVY = "heavy"
SPREAD = "spread"


@pytest.fixture
def twin():
    """A virtual twin (in memory, simulated executors), running the default Kueue (0.20.7: v1beta2 only)."""
    t = Twin(clock="virtual")
    yield t
    t.close()


@pytest.fixture
def twin_v1beta1():
    """A virtual twin running Kueue 0.19.2, the last release that serves kueue.x-k8s.io/v1beta1: for tests of
    v1beta1 manifests (the tutorial's as published) and of the API server converting them."""
    t = Twin(clock="virtual", kueue="0.19.2")
    yield t
    t.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each module's total time to {DURATIONS.name} (the order in which units start)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{HEAVY}: peaks at 4 GiB or more (real RayJobs side by side); never two at once"
    )
    config.addinivalue_line(
        "markers",
        f"{SPREAD}: independent tests of minutes each: every test is a unit of its own (any worker)",
    )
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # a pytest-xdist worker's environment holds COLUMNS=80 and LINES=24 (its output is not a terminal),
        # where a serial run has neither: the CLI run in a subprocess would draw its tables 80 columns wide.
        # A test that needs a width sets COLUMNS itself
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)
    if "FLEXQ_HOME" not in os.environ:  # nothing a test runs falls back to the user's ~/.flexq
        home = tempfile.mkdtemp(prefix="flexq-home-")
        os.environ["FLEXQ_HOME"] = home
        config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    if getattr(config.option, "dist", "no") != "no":
        # units start in the order ``pytest_collection_modifyitems`` gives (longest first), not by test count
        config.option.loadscopereorder = False
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            _warm_bytecode(config)
    if config.getoption("record_durations"):
        config.pluginmanager.register(_DurationRecorder(), "flexq-durations")
    # every deep copy the twin makes (``flexq.api.jsoncopy.clone``, an orjson round trip) checks that what
    # it copies holds nothing the round trip would change (a tuple, an Enum, a UUID)
    from flexq.api.jsoncopy import strict_checks

    strict_checks()
    # every write the twin's own controllers make (trusted: the store does not admit it) is admitted anyway, and
    # one that admission refuses fails the run naming the reconcile that wrote it (``InvalidWrite``)
    from flexq.store.store import check_writes

    check_writes()


def _warm_bytecode(config: pytest.Config) -> None:
    """Before the workers start: flexq's modules compiled and the test modules' assertion rewrites cached, once.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's images set it), nothing is ever cached: every worker
    rewrote all ~290 test modules (10 s of CPU each: six workers on two cores took 40 s to collect) and every
    ``flexq`` process the tests start compiled flexq anew (the twin's import: 1.25 s against 0.71 s). Written
    here explicitly (as ``compileall`` and pytest's own cache write them: complete files, renamed into place), so
    the workers and every process they start read them; the setting itself is left as the user has it. Uses
    pytest's rewrite internals: if they move, this warms nothing and the suite runs as before."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    compileall.compile_dir(str(root / "src" / "flexq"), quiet=1)
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    needed = ("_read_pyc", "_rewrite_test", "_write_pyc", "get_cache_dir", "PYC_TAIL")
    if config.getoption("assertmode") != "rewrite" or not all(hasattr(rewrite, n) for n in needed):
        return
    quiet = SimpleNamespace(trace=lambda *_: None)
    for fn in sorted((root / "tests").rglob("*.py")):
        if not (fn.name.startswith("test_") or fn.name == "conftest.py") or "__pycache__" in fn.parts:
            continue
        cache = rewrite.get_cache_dir(fn)
        pyc = cache / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is not None:
            continue
        try:
            cache.mkdir(exist_ok=True)
            stat, code = rewrite._rewrite_test(fn, config)
        except (OSError, SyntaxError, ValueError):
            continue  # the worker meets it and says why
        rewrite._write_pyc(quiet, code, stat, pyc)  # type: ignore[arg-type]


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _unit(item: pytest.Item) -> str:
    if item.get_closest_marker(HEAVY):
        return HEAVY
    return item.nodeid if item.get_closest_marker(SPREAD) else _module(item)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (it appends them to the node ids)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # on a worker, pytest-xdist has turned ``dist`` to "no" and kept only ``loadgroup``
    if not getattr(config.option, "loadgroup", False) and getattr(config.option, "dist", "no") != "loadgroup":
        return
    try:
        known: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        known = {}
    cost: dict[str, float] = {}
    order: dict[str, int] = {}
    for i, item in enumerate(items):
        unit = _unit(item)
        order.setdefault(unit, i)
        item.add_marker(pytest.mark.xdist_group(unit))
        cost.setdefault(unit, 0.0)
    modules: dict[str, set[str]] = {}
    per_module: dict[str, int] = {}
    for item in items:
        modules.setdefault(_unit(item), set()).add(_module(item))
        per_module[_module(item)] = per_module.get(_module(item), 0) + 1
    for unit, mods in modules.items():
        for mod in mods:
            # a module not timed yet: a guess from its marks (a slow one may take a minute)
            slow = any(it.get_closest_marker("slow") for it in items if _module(it) == mod)
            seconds = known.get(mod, 60.0 if slow else 1.0)
            # a spread module's test: its share of the module's time
            cost[unit] += seconds / per_module[mod] if unit not in (HEAVY, mod) else seconds
    # longest first (stable: ties keep the collection order), each unit's tests in their own order
    items.sort(key=lambda it: (-cost[_unit(it)], order[_unit(it)]))


def pytest_collection_finish(session: pytest.Session) -> None:
    # pytest-xdist's loadgroup carries a test's group in its node id ("...::test@group"); a pytest whose node ids
    # it cannot change would scatter a module's tests over the workers without a word (pytest-xdist#1386: pytest
    # 9.2): refuse to run that way rather than fail later in ways that look like flaky tests
    if getattr(session.config.option, "loadgroup", False):
        lost = [it.nodeid for it in session.items if "@" not in it.nodeid]
        if lost:
            raise pytest.UsageError(
                f"pytest-xdist's --dist loadgroup did not group {lost[0]} (and {len(lost) - 1} more): this pytest "
                "and pytest-xdist do not work together (see pyproject.toml's pin)"
            )


class _DurationRecorder:
    """Sums each module's setup, call and teardown times, and writes them (sorted, rounded) at the end."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        mod = report.nodeid.split("::", 1)[0]
        self.seconds[mod] = self.seconds.get(mod, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER") or not self.seconds:
            return
        out = {m: round(s, 1) for m, s in sorted(self.seconds.items())}
        DURATIONS.write_text(json.dumps(out, indent=0) + "\n")
