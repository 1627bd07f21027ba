"""``flexq up``, ``flexq down`` and ``flexq env``: the background twin's process and the client environment.

Owns: ``Home`` (the state directory: ``$FLEXQ_HOME`` or ``~/.flexq``; ``server.json``, ``pid`` and
``kubeconfig`` are written there by the served twin, ``flexq.log`` and ``project`` by this module, ``pki/`` by
``flexq.http.tls``, ``state.db`` and ``logs/`` by the twin), starting the daemon (``python -m
flexq.cli.daemon``) in its own session and waiting until it answers ``/readyz`` over HTTPS with its CA,
stopping it (SIGTERM, then SIGKILL of its process group past the timeout, then the group's leftovers), and
the ``export`` lines for gcloud and kubectl (``flexq.http.server.client_env`` plus the project, no prompts).
Must not import flexq.assembly or flexq.twin (the daemon does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.cli.args import duration, examples, home_flag, kueue_release
from flexq.cli.views import console, err_console
from flexq.clock import WallClock
from flexq.errors import Invalid, missing_of, require_extra
from flexq.store.private import private_file, private_home

__all__ = ["Home", "DEFAULT_PROJECT", "up", "down", "env", "env_lines", "running", "gke_request", "TwinError"]

DEFAULT_PROJECT = "flexq-twin"
READY_GRACE = 10.0  # seconds a running daemon gets to answer /readyz before `flexq up` says it does not


def _serves_v1beta1(tag: str) -> bool:
    """The release's own switch (``api.kueue_versions``); a release the twin does not model serves v1beta2 only,
    as every release from 0.20 does."""
    try:
        return resolve_kueue(tag, "server.json kueue").serves_v1beta1
    except Invalid:
        return False


def kueue_note(tag: str) -> str:
    """What ``flexq up`` says of the Kueue the twin runs (its release tag, as server.json records it)."""
    served = (
        "it serves kueue.x-k8s.io/v1beta2 only, so apply the tutorial's queues from dws-tpu-queue.v1beta2.yaml "
        "(tutorial.sh does) or through `flexq convert`; `flexq up --kueue 0.19.2` runs the release that still "
        "serves the tutorial's v1beta1"
        if tag and not _serves_v1beta1(tag)
        else "it serves the tutorial's kueue.x-k8s.io/v1beta1 and v1beta2"
    )
    return (
        f"Kueue {tag or ''} (ElasticJobsViaWorkloadSlices on, as the tutorial's helm install sets it) and the Ray "
        f"operator are already installed in the twin: skip the tutorial's `helm install kueue` step; {served}."
    ).replace("Kueue  (", "Kueue (")


@dataclass(frozen=True)
class Home:
    """The live twin's state directory and the files in it."""

    path: Path

    @classmethod
    def resolve(cls, explicit: str | None = None) -> Home:
        raw = explicit or os.environ.get("FLEXQ_HOME") or str(Path.home() / ".flexq")
        return cls(Path(raw).expanduser().absolute())

    @property
    def server_file(self) -> Path:
        return self.path / "server.json"

    @property
    def pid_file(self) -> Path:
        return self.path / "pid"

    @property
    def log_file(self) -> Path:
        return self.path / "flexq.log"

    @property
    def project_file(self) -> Path:
        return self.path / "project"

    def server_info(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.server_file.read_text())
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        info = self.server_info()
        if info and isinstance(info.get("pid"), int):
            return int(info["pid"])
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def project(self) -> str:
        try:
            return self.project_file.read_text().strip() or DEFAULT_PROJECT
        except OSError:
            return DEFAULT_PROJECT


def _process_state(pid: int) -> str | None:
    """The process's state letter (``R``, ``S``, ``Z`` for a zombie, ...), or None when it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()[0]
    except (OSError, ValueError, IndexError):
        pass
    try:  # no /proc (macOS): ps says the same
        out = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
        return out.stdout.strip()[:1] or None
    except (OSError, subprocess.SubprocessError):
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process. A killed daemon stays a zombie until its parent reaps it (``flexq
    up`` exits at once, so that parent is whichever process adopted it, which may never reap): a zombie
    listens on nothing and counts as gone; one that is our own child is reaped here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive, unless it is a zombie
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child
    return _process_state(pid) not in ("Z", "X")


def _is_daemon(pid: int) -> bool:
    """False when ``pid`` is known to be some other program (a pid reused after the daemon died)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # cannot tell (no /proc): trust server.json
    return b"flexq.cli.daemon" in cmdline


def running(home: Home) -> dict[str, Any] | None:
    """``server.json`` of the twin serving from ``home`` if its process is alive, else None."""
    info = home.server_info()
    if info and isinstance(info.get("pid"), int) and _alive(info["pid"]) and _is_daemon(info["pid"]):
        return info
    return None


def _ready(info: dict[str, Any]) -> bool:
    """True when the server answers ``GET /readyz`` over TLS verified with the twin's CA."""
    try:
        ctx = ssl.create_default_context(cafile=info["ca"]) if info["url"].startswith("https") else None
        with urllib.request.urlopen(info["url"].rstrip("/") + "/readyz", timeout=2, context=ctx) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError, ssl.SSLError, KeyError, ValueError):
        return False


_DAEMON_ENV = {
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
}
_DAEMON_ENV_PREFIXES = ("LC_", "FLEXQ_", "XDG_", "VIRTUAL_ENV", "PYTHON")


def daemon_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the twin's daemon starts with: the locale, paths and flexq's own settings, and nothing
    else of the shell's (no cloud or API credentials): on a kernel where Landlock does not restrict reading
    another process's ``/proc/<pid>/environ``, a pod's processes could read it (docs/security.md)."""
    return {k: v for k, v in environ.items() if k in _DAEMON_ENV or k.startswith(_DAEMON_ENV_PREFIXES)}


def _log_tail(home: Home, n: int = 20) -> str:
    try:
        return "\n".join(home.log_file.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def up(
    home: Home,
    console: Console,
    *,
    project: str | None = None,
    timeout: float = 90.0,
    executor: str = "ray",
    kueue: str | None = None,
) -> int:
    """Start the twin in the background and return once it is ready (0), or say why it is not (1)."""
    info = running(home)
    if info:
        clock = WallClock()
        deadline = clock.now() + READY_GRACE
        while not _ready(info):  # a live process is not enough: it must answer
            if clock.now() >= deadline or not _alive(info["pid"]):
                break
            clock.sleep(0.2)
        else:
            console.print(f"flexq is already running at {info['url']} (pid {info['pid']}, home {home.path})")
            if kueue and str(info.get("kueue", "")).lstrip("v") != kueue.lstrip("v"):
                console.print(
                    f"[red]it runs Kueue {info.get('kueue') or '(unknown)'}, not {kueue}: `flexq down`, then "
                    f"`flexq up --kueue {kueue}` (its objects stay)[/]"
                )
                return 1
            return 0
        if _alive(info["pid"]):
            console.print(
                f"[red]flexq (pid {info['pid']}, home {home.path}) is running but does not answer at "
                f"{info.get('url')}; stop it with `flexq down`. {home.log_file} ends with:[/]"
            )
            console.print(_log_tail(home), markup=False, highlight=False)
            return 1
    private_home(home.path)
    for stale in (home.server_file, home.pid_file):
        stale.unlink(missing_ok=True)
    if project:
        private_file(home.project_file).write_text(project + "\n")
    elif not home.project_file.exists():
        private_file(home.project_file).write_text(DEFAULT_PROJECT + "\n")
    with open(private_file(home.log_file), "ab") as log:
        argv = [sys.executable, "-m", "flexq.cli.daemon", "--home", str(home.path), "--executor", executor]
        proc = subprocess.Popen(
            argv + (["--kueue", kueue] if kueue else []),
            env=daemon_env(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    clock = WallClock()
    deadline = clock.now() + timeout
    while clock.now() < deadline:
        code = proc.poll()
        if code is not None:
            console.print(f"[red]flexq failed to start (exit status {code}); {home.log_file} ends with:[/]")
            console.print(_log_tail(home), markup=False, highlight=False)
            return 1
        info = home.server_info()
        if info and info.get("pid") == proc.pid and _ready(info):
            console.print(f"flexq is up at {info['url']} (pid {proc.pid}, home {home.path})")
            console.print('point gcloud and kubectl at it with:  eval "$(flexq env)"')
            console.print(
                f"dashboard: {info['url']}/dashboard/ (`flexq dashboard` opens it); "
                f"Kueue's metrics: {info['url']}/metrics"
            )
            console.print(kueue_note(str(info.get("kueue") or "")))
            if info.get("executor_note"):
                console.print(info["executor_note"], markup=False, highlight=False)
            return 0
        clock.sleep(0.2)
    console.print(
        f"[red]flexq did not become ready within {timeout:.0f}s; stopping it. Log: {home.log_file}[/]"
    )
    _stop(proc.pid, 10.0)
    return 1


def _stop(pid: int, timeout: float) -> bool:
    """SIGTERM the daemon and wait; SIGKILL its process group past ``timeout``; then end the group's rest.
    Returns True when the daemon stopped by itself."""
    clock = WallClock()
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = clock.now() + timeout
    clean = False
    while clock.now() < deadline:
        if not _alive(pid):
            clean = True
            break
        clock.sleep(0.05)
    if pgid == pid:  # the daemon leads its own session (start_new_session): its group is ours to end
        for sig in ((signal.SIGTERM,) if clean else ()) + (signal.SIGKILL,):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if sig == signal.SIGTERM:  # up to half a second for the rest to go by themselves
                end = clock.now() + 0.5
                while clock.now() < end and _group_alive(pgid):
                    clock.sleep(0.05)
    elif not clean:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return clean


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still there (a zombie child of ours is reaped, not counted)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-pgid, os.WNOHANG)[0] > 0:
            pass
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def down(home: Home, console: Console, *, timeout: float = 60.0) -> int:
    """Stop the twin serving from ``home`` and everything it started (0 also when it was not running)."""
    pid = home.pid()
    if pid is None or not _alive(pid):
        for stale in (home.server_file, home.pid_file):
            stale.unlink(missing_ok=True)
        console.print(f"flexq is not running (home {home.path})")
        return 0
    clean = _stop(pid, timeout)
    for left in (home.server_file, home.pid_file):
        left.unlink(missing_ok=True)
    console.print(f"flexq stopped (pid {pid})" + ("" if clean else " [yellow](killed after the timeout)[/]"))
    return 0


class TwinError(RuntimeError):
    """The served twin cannot be asked (not running) or refused a GKE request (its message)."""


def gke_request(home: Home, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request to the served twin's GKE API (what gcloud sends), with its token and CA."""
    info = running(home)
    if info is None:
        raise TwinError(f"flexq is not running (home {home.path}); start it with: flexq up")
    try:
        token = Path(info["token_file"]).read_text().strip()
        ctx = ssl.create_default_context(cafile=info["ca"])
        req = urllib.request.Request(
            info["url"].rstrip("/") + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            answer: dict[str, Any] = json.loads(resp.read() or b"{}")
            return answer
    except urllib.error.HTTPError as exc:
        try:
            msg = json.loads(exc.read()).get("error", {}).get("message") or exc.reason
        except (ValueError, AttributeError):
            msg = exc.reason
        raise TwinError(f"{exc.code} {msg}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise TwinError(f"cannot ask the twin at {info.get('url')}: {exc}") from None


def env_lines(home: Home, info: dict[str, Any], shell: str = "sh") -> list[str]:
    """The lines ``flexq env`` prints: the served twin's client environment (``flexq.http.server.client_env``:
    endpoint overrides, token file, CA bundle, isolated gcloud config and KUBECONFIG) plus the project, no
    prompts and ``FLEXQ_HOME``, and a note about Kueue."""
    from flexq.http.server import client_env

    values = dict(client_env(home.path, info))
    values["CLOUDSDK_CORE_PROJECT"] = home.project()
    values["CLOUDSDK_CORE_DISABLE_PROMPTS"] = "1"
    values["FLEXQ_HOME"] = str(home.path)
    lines = [f"# flexq twin at {info['url']} (pid {info['pid']}). {kueue_note(str(info.get('kueue') or ''))}"]
    for k in sorted(values):
        if shell == "fish":
            lines.append(f"set -gx {k} {shlex.quote(values[k])};")
        else:
            lines.append(f"export {k}={shlex.quote(values[k])}")
    return lines


def env(home: Home, console: Console, *, shell: str = "sh") -> int:
    """Print the export lines (to stdout, for ``eval "$(flexq env)"``); 1 when the twin is not running."""
    info = running(home)
    if info is None:
        Console(stderr=True).print(f"flexq is not running (home {home.path}); start it with: flexq up")
        return 1
    sys.stdout.write("\n".join(env_lines(home, info, shell)) + "\n")
    return 0


# -- the command line: flexq up, down, env --------------------------------------------------------------------
def add_parsers(sub: Any) -> None:
    """``flexq up``, ``flexq down`` and ``flexq env``."""
    up = sub.add_parser(
        "up",
        help="start the twin in the background (GKE and Kubernetes APIs)",
        description="Start the twin in the background: the GKE API, the Kubernetes API (Kueue and KubeRay "
        "installed), its controllers and its state on disk. Returns once it answers.",
        epilog=examples(
            'flexq up && eval "$(flexq env)"',
            "flexq up --executor simulated      # pods are simulated: no Ray processes",
            "FLEXQ_HOME=/tmp/twin2 flexq up     # a second twin with its own state",
            "flexq up --kueue 0.19.2            # the Kueue release that still serves the tutorial's v1beta1",
        ),
    )
    home_flag(up)
    up.add_argument("--project", default=None, help="the twin's GCP project id (default: flexq-twin)")
    up.add_argument(
        "--executor",
        choices=["ray", "simulated"],
        default=None,
        help="run pods with real Ray, or simulate them (default: ray when the ray extra is installed, "
        "else simulated)",
    )
    up.add_argument(
        "--kueue",
        type=kueue_release,
        default=None,
        metavar="VERSION",
        help="the Kueue release the twin runs: 0.20.7 (what the tutorial's unpinned `helm install` gives today; "
        "serves kueue.x-k8s.io/v1beta2 only) or 0.19.2 (also serves the tutorial's v1beta1) (default: the one "
        "the twin's state last ran, else 0.20.7)",
    )
    up.add_argument("--timeout", type=duration, default=90.0, help="how long to wait for it to answer")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser(
        "down",
        help="stop the background twin and everything it started",
        description="Stop the twin `flexq up` started, and every process it started (its state stays).",
        epilog=examples("flexq down", "flexq down --home /tmp/twin2"),
    )
    home_flag(down)
    down.add_argument("--timeout", type=duration, default=60.0, help="how long to wait before killing it")
    down.set_defaults(func=cmd_down)

    env = sub.add_parser(
        "env",
        help="print the export lines that point gcloud and kubectl at the twin",
        description="Print the export lines that point gcloud and kubectl at the running twin: endpoint "
        "overrides, token, CA, project, KUBECONFIG.",
        epilog=examples('eval "$(flexq env)"', "flexq env --shell fish | source"),
    )
    home_flag(env)
    env.add_argument("--shell", choices=["sh", "fish"], default="sh", help="the shell's syntax")
    env.set_defaults(func=cmd_env)


def cmd_up(args: argparse.Namespace) -> int:
    executor = args.executor
    if executor is None:
        executor = "simulated" if missing_of("ray") else "ray"
        if executor == "simulated":
            err_console.print(
                "note: Ray is not installed, so the twin simulates its pods (no real training); "
                "pip install 'flexq[ray]' to train on real Ray",
                markup=False,
                highlight=False,
            )
    elif executor == "ray":
        require_extra("ray", "flexq up --executor ray")
    return up(
        Home.resolve(args.home),
        console,
        project=args.project,
        timeout=args.timeout,
        executor=executor,
        kueue=args.kueue,
    )


def cmd_down(args: argparse.Namespace) -> int:
    return down(Home.resolve(args.home), console, timeout=args.timeout)


def cmd_env(args: argparse.Namespace) -> int:
    return env(Home.resolve(args.home), console, shell=args.shell)
