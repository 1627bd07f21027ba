"""Imports say what a module leans on: at its top, only public names, and each name from its one door.

An import inside a function hides an arrow from the reader (and, when it dodges a circle, the circle itself: issue
52's ``whatif`` -> ``sweep`` -> ``whatif``); a private name imported from another module is a helper that two
rooms share without saying so. Both are refused in ``src/``, with a short allow-list of deferred imports, each
with its reason (lint-imports sees function-level imports too, so the layers still hold for them). A module's
``__all__`` lists what it defines, not what it imports from another flexq module (a re-export is a second door
to one name, read as a copy: issue 52's ``fallback/policy`` re-listing ``fallback/model``); a package's
``__init__`` is its front door and may."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

# Where a flexq module may be imported inside a function, and why (a prefix of the path below src/).
DEFERRED = {
    "flexq/__init__.py": "the package's front door: flexq.Twin and flexq.simulate load on first use, so a light "
    "command does not pay for every controller",
    "flexq/cli/": "the command's modules are loaded by the command that runs them, so `import flexq.cli.main` "
    "loads rich and the views only (checked below); `build_parser` still loads most of them through the "
    "sub-commands' parsers",
}


# Modules whose ``__all__`` still re-exports names of another flexq module, and why.
REEXPORTS: dict[str, str] = {}


def _is_flexq(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "flexq"
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "flexq" for a in node.names)
    return False


def function_level_imports(path: Path) -> list[str]:
    """``path:line: import`` for every import of a flexq module inside a function of ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if _is_flexq(node):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def private_imports(path: Path) -> list[str]:
    """``path:line: import`` for every private name (``_x``) imported from another flexq module."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _is_flexq(node):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{path}:{node.lineno}: from {node.module} import {a.name}")
    return found


def reexports(path: Path) -> list[str]:
    """``path: name`` for every name ``path``'s ``__all__`` lists that it imports from another flexq module."""
    tree = ast.parse(path.read_text(), str(path))
    listed: list[str] = []
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            listed = [e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.ImportFrom) and _is_flexq(node):
            imported |= {a.asname or a.name for a in node.names}
    return [f"{path}: {name}" for name in listed if name in imported]


def _deferred_ok(path: Path) -> bool:
    rel = path.relative_to(SRC).as_posix()
    return any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in DEFERRED)


def test_no_flexq_import_inside_a_function_outside_the_allow_list() -> None:
    offenders = [
        hit
        for path in sorted((SRC / "flexq").rglob("*.py"))
        if not _deferred_ok(path)
        for hit in function_level_imports(path)
    ]
    assert offenders == [], (
        "import these at the module's top (a circle? move what both need below both):\n"
        + "\n".join(offenders)
    )


def test_no_private_name_crosses_modules() -> None:
    offenders = [hit for path in sorted((SRC / "flexq").rglob("*.py")) for hit in private_imports(path)]
    assert offenders == [], "make the shared helper public (or move it where both read it):\n" + "\n".join(
        offenders
    )


def test_every_name_has_one_door() -> None:
    offenders = [
        hit
        for path in sorted((SRC / "flexq").rglob("*.py"))
        if path.name != "__init__.py" and path.relative_to(SRC).as_posix() not in REEXPORTS
        for hit in reexports(path)
    ]
    assert offenders == [], (
        "import the name from the module that defines it, and drop it from this __all__:\n"
        + "\n".join(offenders)
    )
    for key in REEXPORTS:  # the allow-list stays true
        assert reexports(SRC / key), f"{key}: re-exports nothing any more; drop it from REEXPORTS"


def test_every_deferral_names_a_file_that_defers() -> None:
    """The allow-list stays short and true: each entry still holds a function-level import."""
    for key in DEFERRED:
        target = SRC / key
        paths = sorted(target.rglob("*.py")) if key.endswith("/") else [target]
        assert any(function_level_imports(p) for p in paths if p.exists()), (
            f"{key}: nothing deferred; drop it"
        )


def test_the_cli_defers_what_it_would_otherwise_load() -> None:
    """The CLI's reason holds: importing the command's entry point loads neither the twin nor the simulator."""
    code = "import sys, flexq.cli.main; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = [m for m in out if m in ("flexq.twin", "flexq.simulate", "flexq.assembly", "flexq.eta.estimate")]
    assert heavy == []


def test_the_gates_catch_what_they_refuse(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from flexq.api import scheme\nfrom flexq.simulate.jobs import _secret\nimport os\n\n"
        "def f():\n    from flexq.simulate import whatif\n    import flexq.twin\n    from . import sibling\n"
        "    import json\n    return whatif\n"
    )
    assert [h.split(": ", 1)[1] for h in function_level_imports(bad)] == [
        "from flexq.simulate import whatif",
        "import flexq.twin",
        "from . import sibling",
    ]
    assert [h.rsplit(": ", 1)[1] for h in private_imports(bad)] == ["from flexq.simulate.jobs import _secret"]
    facade = tmp_path / "facade.py"
    facade.write_text(
        "from flexq.fallback.model import ANN_MOVE\nfrom os import sep\n\nX = 1\n__all__ = ['X', 'ANN_MOVE', 'sep']\n"
    )
    assert [h.rsplit(": ", 1)[1] for h in reexports(facade)] == ["ANN_MOVE"]
