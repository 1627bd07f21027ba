"""The README's SDK block runs as written (issue 28 item 1: it read ``dws-tpu-queue.yaml`` with its ``${...}``
placeholders and failed), and the README's commands are the ones the code has."""

from __future__ import annotations

import re
from pathlib import Path

from flexq.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def block(marker: str, lang: str) -> str:
    body = README[README.index(marker) :].split(f"```{lang}\n", 1)[1]
    return body.split("```", 1)[0]


def test_the_sdk_block_runs_as_written() -> None:
    code = block("<!-- sdk -->", "python")
    assert "open(" not in code  # no file read with placeholders
    scope: dict = {}
    exec(compile(code, "README.md (SDK block)", "exec"), scope)  # the README's own example
    twin = scope["twin"]
    cq = twin.get("clusterqueue", "cluster-queue")
    flavors = [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]]
    assert flavors == [
        "default-cpu",
        "on-demand",
        "dws",
    ]  # the placeholders were filled: the flavors name the pools
    rf = twin.get("resourceflavor", "on-demand")
    assert rf["spec"]["nodeLabels"]["cloud.google.com/gke-nodepool"] == "on-demand-pool"
    twin.close()


def test_the_readmes_flexq_commands_parse() -> None:
    """Every `flexq ...` line in the README's bash blocks is a command the parser takes."""
    parser = build_parser()
    seen = 0
    for body in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in body.splitlines():
            for part in re.split(r"&&|\|", line.split("  #", 1)[0]):
                words = part.split()
                if words[:1] == ["flexq"] and "STUDY" not in words and "$(" not in part:
                    args = [w.strip("'\"") for w in words[1:] if not w.startswith("$(")]
                    parser.parse_args(args)
                    seen += 1
    assert seen >= 7


def test_a_newcomer_finds_the_two_commands_and_the_live_tutorial_in_the_first_80_lines() -> None:
    """Issue 50, acceptance 4: the README is scannable — the two commands and the live tutorial (its run and
    clean-up blocks) within its first 80 lines, no paragraph longer than 8 lines; the reference and the benchmark
    tables are in docs/ (each bench script named there exists), and every link resolves."""
    lines = README.splitlines()
    head = "\n".join(lines[:80])
    assert "pip install -e '.[all]' && .venv/bin/flexq demo" in head
    assert "python -m pytest -q -n 6 --dist loadgroup" in head
    for marker in ("<!-- live-tutorial:run -->", "<!-- live-tutorial:clean-up -->"):
        start = README.index(marker)
        end = README.index("```", README.index("```bash", start) + 7) + 3
        assert README[:end].count("\n") < 80, marker
    paragraph: list[str] = []
    in_block = False
    for line in [*lines, ""]:
        if line.startswith("```"):
            in_block = not in_block
        if in_block or line.startswith("```") or not line.strip():
            assert len(paragraph) <= 8, "\n".join(paragraph)
            paragraph = []
        else:
            paragraph.append(line)
    assert len(lines) <= 150, len(lines)
    bench_doc = (ROOT / "docs" / "benchmarks.md").read_text()
    named = set(re.findall(r"^\| `(\w+\.py)` \|", bench_doc, re.M))
    assert len(named) >= 15 and all((ROOT / "bench" / n).exists() for n in named), named
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / link).exists(), link
