"""The layering and style gates hold (import-linter contracts and ruff, as configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_import_contracts_hold() -> None:
    out = subprocess.run([str(BIN / "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_ruff_is_clean() -> None:
    out = subprocess.run(
        [str(BIN / "ruff"), "check", "src", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-3000:]


def test_ruff_format_is_clean() -> None:
    out = subprocess.run(
        [str(BIN / "ruff"), "format", "--check", "src", "tests", "bench", "tools"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:]


# The modules allowed to read or wait on the wall clock: the clock itself, the real-time loop, and the
# local-Ray executor, its pods' processes and its pod supervisor (they supervise real processes). Everything else takes time from the injected Clock.
WALL_CLOCK_READERS = {
    "src/flexq/clock.py",
    "src/flexq/loop/realtime.py",
    "src/flexq/kuberay/local_ray_executor.py",
    "src/flexq/kuberay/pod_processes.py",
    "src/flexq/kuberay/podreaper.py",
    "src/flexq/testing/live_twin.py",
}
_BANNED = {
    "time": {
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "process_time_ns",
        "sleep",
        "localtime",
        "gmtime",
        "ctime",
        "asctime",
        "strftime",
    },
    "datetime": {"now", "utcnow", "today"},
    "random": {"random", "choice", "randint", "uniform", "shuffle", "sample", "randrange", "getrandbits"},
    "asyncio": {"sleep"},
}


def _wall_clock_reads(path: Path) -> list[str]:
    import ast

    tree = ast.parse(path.read_text(), str(path))
    modules: dict[
        str, str
    ] = {}  # local name -> module (``import time as t``; ``from datetime import datetime``)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if root in _BANNED:
                    modules[(a.asname or a.name).split(".")[0]] = root
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            for a in node.names:
                if root in _BANNED and a.name in _BANNED[root]:
                    found.append(f"{path}:{node.lineno}: from {node.module} import {a.name}")
                elif root == "datetime" and a.name in ("datetime", "date"):
                    modules[a.asname or a.name] = "datetime"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in {n for v in _BANNED.values() for n in v}:
            continue
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and base.id in modules and node.attr in _BANNED[modules[base.id]]:
            if node.attr in ("strftime", "localtime", "gmtime", "ctime", "asctime"):
                continue  # formatting a given instant is fine; only argument-less reads matter (checked below)
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    for node in ast.walk(
        tree
    ):  # time.localtime() / time.gmtime() / time.ctime() with no argument read the clock
        if (
            isinstance(node, ast.Call)
            and not node.args
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("localtime", "gmtime", "ctime", "asctime")
            and isinstance(node.func.value, ast.Name)
            and modules.get(node.func.value.id) == "time"
        ):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reads_the_wall_clock_directly() -> None:
    offenders = []
    for path in sorted((ROOT / "src" / "flexq").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in WALL_CLOCK_READERS:
            offenders += _wall_clock_reads(path)
    assert offenders == [], "\n".join(offenders)


def test_the_wall_clock_gate_catches_every_spelling(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import time\nimport time as t\nimport datetime as dt\nfrom datetime import datetime, date\n"
        "from time import perf_counter\nimport random\n"
        "a = time.time()\nb = t.monotonic()\nc = dt.datetime.now()\nd = datetime.utcnow()\n"
        "e = date.today()\nf = time.localtime()\ng = random.random()\n"
        "ok = time.strftime('%Y', time.gmtime(0))\nok2 = datetime.fromtimestamp(0)\n"
    )
    hits = _wall_clock_reads(bad)
    assert len(hits) == 8, hits
    assert not any("strftime" in h or "fromtimestamp" in h or "gmtime(0)" in h for h in hits)


def test_bench_never_imports_the_tests() -> None:
    """Benchmarks share builders with the tests through ``flexq.testing``, never by importing ``tests``."""
    import ast

    offenders = []
    for path in sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n == "tests" or n.startswith("tests.")]
    assert not offenders, offenders
