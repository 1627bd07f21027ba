"""Issue 49: ``flexq status`` starts without loading what it does not run — the twin (through the demo's parser),
the simulator (through simulate's report), the fallback (through its parser's defaults), Kueue's conversion and
the capacity profile's schema: a command builds only its own part of the parser."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "flexq.twin",
    "flexq.assembly",
    "flexq.simulate",
    "flexq.fallback.policy",
    "flexq.api.kueue_convert",
    "flexq.api.capacity_profile",
    "flexq.eta.estimate",
)


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [m for m in out.split() if m in HEAVY]


def test_the_status_command_loads_only_its_own_part() -> None:
    code = (
        "import sys; from flexq.cli.main import build_parser; "
        "a = build_parser('status').parse_args(['status', '-A']); "
        "import flexq.cli.observe, flexq.cli.kubeclient; print(' '.join(sorted(sys.modules)))"
    )
    assert _loaded(code) == []


def test_the_whole_parser_still_has_every_command() -> None:
    code = (
        "from flexq.cli.main import build_parser, COMMANDS; p = build_parser('status'); "
        "sub = next(a for a in p._actions if a.choices); "
        "print(sorted(sub.choices) == sorted(n for ns in COMMANDS.values() for n in ns))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
