"""``flexq status`` (once, or following changes with ``-w``; ``-o table|wide|json|yaml``), ``flexq logs`` and
``flexq dashboard``.

Owns: reading what the rows need through the Kubernetes API (``kubeclient.fetch_snapshot`` plus the Events
about pods, where the cluster autoscaler says a scale-up failed), rendering with the coded reasons
(``flexq.api.reasons``: the WHY column carries the code and its detail, a legend says what each code means
and what to do), and ``-w``: the table once, then the rows of the workloads whose state, plan, reason (its code,
not its ticking "queued for 41s") or ETA bucket changed, under a
header with the time (JSON/YAML: one document per row, with its ``observedAt``), polling the API every
``--interval`` seconds until Ctrl-C (exit status 130, no traceback). ``flexq logs``: a job's output; with
``-f``, a job that has no running pod yet is waited for (saying, each time it changes, what it waits for:
Kueue's admission and its reason, the admission checks, the pods starting), and a name that is neither a
RayJob nor a Job is said at once, not after a timeout. ``flexq dashboard`` opens the served twin's dashboard
in a browser, logged in with a one-time login code the CLI gets with the twin's token (posted by an
owner-only page, never on a command line: see ``flexq.http.dashboard``).

Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from flexq.cli.args import duration, examples, home_flag, kube_flags
from flexq.cli.eta import WAITING_STATES, EtaColumn
from flexq.cli.status import FALLBACK_MOVED, StatusSnapshot, WorkloadRow, rows_as_dicts, workload_rows
from flexq.cli.views import console, err_console
from flexq.clock import WallClock, format_time

__all__ = ["cmd_status", "cmd_logs", "cmd_dashboard", "dashboard_login", "fetch", "row_key", "changed_rows"]

SCALE_UP_REASONS = {"FailedScaleUp", "TriggeredScaleUp", "NotTriggerScaleUp", "Preempted"}


def fetch(api: Any, namespace: str | None) -> StatusSnapshot:
    """The snapshot rows need, with the pod Events that explain stock-outs and preemptions."""
    from flexq.cli import kubeclient

    snap = kubeclient.fetch_snapshot(api, namespace)
    try:
        events = kubeclient.list_core_path(api, "events", namespace)
    except kubeclient.ClientError:
        events = []  # a user who may not list events still gets Kueue's reasons
    events = [e for e in events if e.get("reason") in SCALE_UP_REASONS]
    return dataclasses.replace(snap, events=events)


def snapshot_of(state: Any, namespace: str | None, events: list[dict]) -> StatusSnapshot:
    """The snapshot rows need, taken from the ETA's cluster-wide read (``state``: a ``ClusterState``; ``events``:
    every Event of that read) rather than read again: what ``fetch`` would read, in ``namespace`` or all."""

    def mine(obj: dict) -> bool:
        return namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace

    return StatusSnapshot(
        workloads=[w for w in state.workloads if mine(w)],
        provisioning_requests=[p for p in state.provisioning_requests if mine(p)],
        nodes=list(state.nodes),
        flavors=list(state.flavors),
        events=[e for e in events if e.get("reason") in SCALE_UP_REASONS and mine(e)],
        jobs=[
            j
            for j in [*state.rayjobs, *state.batch_jobs]
            if mine(j) and FALLBACK_MOVED in ((j.get("metadata") or {}).get("annotations") or {})
        ],
    )


def row_key(r: WorkloadRow) -> tuple[str, str]:
    return r.namespace, r.workload


_DURATION = re.compile(r"\b\d+(?:d\d\dh|h\d\dm|m\d\ds|s)\b")


def _sig(r: WorkloadRow) -> tuple:
    """What makes a row worth printing again: its state, plan, reason and ETA bucket — not the clock-driven
    WAITED or COST, nor a reason's text that only counts time ("queued for 41s"): a DWS wait of an hour is one
    block, not one per poll. A row with no coded reason is compared on its WHY with the durations taken out;
    a ProvisioningRequest on its name and state (its message is the reason's)."""
    why = r.reason.code if r.reason else _DURATION.sub("", r.why)
    return (r.state, r.plan, why, r.provisioning.partition(" (")[0], r.eta_bucket)


def changed_rows(before: dict[tuple[str, str], tuple], rows: list[WorkloadRow]) -> list[WorkloadRow]:
    """Rows that are new or whose state, plan, reason or ETA bucket changed since ``before`` (updated in
    place)."""
    out = []
    for r in rows:
        sig = _sig(r)
        if before.get(row_key(r)) != sig:
            before[row_key(r)] = sig
            out.append(r)
    return out


def render(rows: list[WorkloadRow], output: str, console: Console, *, title: str | None = None) -> None:
    from flexq.cli.views import reasons_legend, status_table

    if output == "json":
        console.out(json.dumps(rows_as_dicts(rows), indent=2), highlight=False)
    elif output == "yaml":
        console.out(yaml.safe_dump(rows_as_dicts(rows), sort_keys=False).rstrip(), highlight=False)
    else:
        console.print(status_table(rows, wide=output == "wide", title=title))
        legend = reasons_legend(rows)
        if legend is not None:
            console.print(legend)


def _queues_missing(rows: list[WorkloadRow]) -> bool:
    """Some workload waits because its LocalQueue or ClusterQueue does not exist."""
    return any("doesn't exist" in r.why for r in rows)


def cmd_status(
    args: argparse.Namespace,
    console: Console,
    err_console: Console,
    sleep: Callable[[float], None] | None = None,
    rounds: int | None = None,
) -> int:
    from flexq.cli import kubeclient

    clock = WallClock()
    sleep = sleep or clock.sleep
    namespace = None if args.all_namespaces else args.namespace
    etas: EtaColumn | None = None
    state = None
    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        etas = EtaColumn(api, args, err_console) if getattr(args, "eta", False) else None
        # the twin's own forecast when it keeps one (read, not computed); else, with the ETA column, one
        # cluster-wide read serves both the rows and the forecast made here
        state = etas.read() if etas is not None and not etas.served() else None
        if state is not None and state.workloads:
            snap = snapshot_of(state, namespace, etas.events if etas is not None else [])
        else:  # no ETA, a served one, it could not read, or no Workload (fetch says when Kueue is not there)
            snap = fetch(api, namespace)
        rows = workload_rows(snap, clock.now())
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    if etas is not None and not etas.served() and any(r.state in WAITING_STATES for r in rows):
        etas.refresh(state)
    rows = etas.apply(rows) if etas is not None else rows
    if etas is not None:
        etas.say_source(rows, clock.now())
    if not rows and kubeclient.on_placeholder(api):
        err_console.print(f"note: {escape(kubeclient.PLACEHOLDER)}", highlight=False)
    elif _queues_missing(rows) and kubeclient.queues_refused_as_v1beta1(api):
        err_console.print(f"note: {escape(kubeclient.V1BETA1_GONE)}", highlight=False, soft_wrap=True)
    if not getattr(args, "watch", False):
        render(rows, args.output, console)
        return 0
    seen: dict[tuple[str, str], tuple] = {}
    changed_rows(seen, rows)
    if args.output in ("json", "yaml"):
        for r in rows:
            _document(r, args.output, console, clock.now())
    else:
        render(rows, args.output, console)
    n = 0
    try:
        while rounds is None or n < rounds:
            n += 1
            sleep(max(0.2, float(args.interval)))
            try:
                rows = workload_rows(fetch(api, namespace), clock.now())
            except kubeclient.ClientError as exc:
                err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
                return 1
            if etas is not None:
                etas.maybe_refresh(rows, clock.now())
                rows = etas.apply(rows)
            fresh = changed_rows(seen, rows)
            if not fresh:
                continue
            if args.output in ("json", "yaml"):
                for r in fresh:
                    _document(r, args.output, console, clock.now())
            else:
                title = f"{format_time(clock.now())}  {len(fresh)} changed"
                render(fresh, args.output, console, title=title)
    except KeyboardInterrupt:  # Ctrl-C ends a watch: the shell's status for SIGINT, no traceback
        return 130
    return 0


def _document(r: WorkloadRow, output: str, console: Console, now: float) -> None:
    doc = {**rows_as_dicts([r])[0], "observedAt": format_time(now)}
    if output == "json":
        console.out(json.dumps(doc), highlight=False)
    else:
        console.out("---\n" + yaml.safe_dump(doc, sort_keys=False).rstrip(), highlight=False)


def cmd_logs(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    """``flexq logs JOB [-f]`` (see the module docstring)."""
    import sys

    from flexq.cli import jobclient, kubeclient

    clock = WallClock()
    job = args.job.split("/", 1)[-1]
    ns = args.namespace
    timeout = getattr(args, "pod_running_timeout", None)
    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        deadline = None if timeout is None else clock.now() + timeout
        said = ""
        while True:
            pods = jobclient.job_pods(api, job, ns)
            started = [p for p in pods if (p.get("status") or {}).get("phase") not in (None, "Pending")]
            if started or (pods and not args.follow):
                break
            info = jobclient.find_job(api, job, ns)
            if info is None:
                if pods:  # a bare pod of that name
                    break
                err_console.print(
                    f'[red]error:[/] no RayJob or Job named "{escape(job)}" in namespace "{escape(ns)}" '
                    "(flexq status -A lists the jobs Kueue knows)",
                    highlight=False,
                )
                return 1
            if info.finished and not pods:
                err_console.print(
                    f"[red]error:[/] {info.kind} {escape(job)} has finished and its pods are gone",
                    highlight=False,
                )
                return 1
            waiting = info.waiting_for()
            if not args.follow:
                err_console.print(
                    f"[red]error:[/] {info.kind} {escape(job)} has no running pod yet: {escape(waiting)}. "
                    f"`flexq logs -f {escape(job)}` waits for it",
                    highlight=False,
                )
                return 1
            if waiting != said:
                said = waiting
                err_console.print(
                    f"{format_time(clock.now())}  waiting for {info.kind} {escape(job)}: {escape(waiting)}",
                    highlight=False,
                    soft_wrap=True,
                )
            if deadline is not None and clock.now() >= deadline:
                err_console.print(
                    f"[red]error:[/] gave up after --pod-running-timeout {timeout:g}s: {info.kind} "
                    f"{escape(job)} is still waiting ({escape(waiting)})",
                    highlight=False,
                )
                return 1
            # each look lists the namespace's workloads: every 2 s is enough for a job that waits minutes
            clock.sleep(2.0 if deadline is None else max(0.0, min(2.0, deadline - clock.now())))
        pod = (started or pods)[-1]["metadata"]["name"]
        for line in jobclient.stream_logs(api, pod, ns, follow=args.follow, container=args.container):
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


LOGIN_PAGE = "dashboard-login.html"
_LOGIN_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flexq: logging in</title></head>
<body onload="document.forms[0].submit()">
<form method="post" action="{action}"><input type="hidden" name="code" value="{code}">
<noscript><button type="submit">Log in to the twin's dashboard</button></noscript></form>
</body></html>
"""


class DashboardError(Exception):
    """``flexq dashboard`` cannot log in (no served twin, or it refused)."""


def dashboard_login(home: Any) -> tuple[Any, str]:
    """(path of an owner-only page that logs the browser in once, the dashboard's URL). Holding the twin's token
    (read from its ``0600`` file, never put on a command line), ask the served twin for a one-time login code
    (``POST /dashboard/login-codes``, valid 60 s) and write a page that posts it to the login form."""
    import html
    import ssl
    import urllib.error
    import urllib.request
    from pathlib import Path

    from flexq.store.private import write_private

    try:
        info = json.loads((Path(home) / "server.json").read_text())
        token = Path(info["token_file"]).read_text().strip()
        base = info["url"].rstrip("/") + "/dashboard/"
    except (OSError, ValueError, KeyError) as exc:
        raise DashboardError(f"no twin is served from {home} (run `flexq up` first)") from exc
    ctx = ssl.create_default_context(cafile=info.get("ca"))
    req = urllib.request.Request(
        base + "login-codes", method="POST", data=b"", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as resp:
            code = json.loads(resp.read())["code"]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
        raise DashboardError(f"the twin at {info['url']} gave no login code: {exc}") from exc
    page = write_private(
        Path(home) / LOGIN_PAGE,
        _LOGIN_HTML.format(
            action=html.escape(base + "login", quote=True), code=html.escape(code, quote=True)
        ),
    )
    return page, base


def cmd_dashboard(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    import os
    import webbrowser
    from pathlib import Path

    home = Path(args.home or os.environ.get("FLEXQ_HOME") or Path.home() / ".flexq")
    try:
        page, base = dashboard_login(home)
    except DashboardError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 1
    console.print(f"dashboard: {base}")
    # the browser gets the page's path, not a secret: the page is owner-only and its code works once, for 60 s
    if args.print_url or not webbrowser.open(page.as_uri()):
        console.print(
            f"open {page} within a minute to log in (once), or paste the token from {home / 'pki' / 'token'} "
            f"into {base}login"
        )
    return 0


# -- the command line: flexq status, dashboard, logs ------------------------------------------------------------
def add_status_parsers(sub: Any) -> None:
    """``flexq status`` and ``flexq dashboard``."""
    s = sub.add_parser(
        "status",
        help="one row per Kueue workload: plan, state, wait, why, cost",
        description="One row per Kueue workload, read through the Kubernetes API (the twin or a real "
        "cluster): the flavor each pod set runs on, its state, how long it waited, why it waits (a code "
        "and a legend of what to do) and what it cost so far.",
        epilog=examples(
            "flexq status",
            "flexq status -A -o wide",
            "flexq status -w                # then each row that changes, with the time",
            "flexq status -o json | jq '.[].state'",
        ),
    )
    kube_flags(s)
    s.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    s.add_argument(
        "-o",
        "--output",
        choices=["table", "wide", "json", "yaml"],
        default="table",
        help="the output format",
    )
    s.add_argument("-w", "--watch", action="store_true", help="after the table, print each row that changes")
    s.add_argument("--interval", type=duration, default=2.0, help="with -w, how often to look")
    s.add_argument(
        "--no-eta",
        dest="eta",
        action="store_false",
        help="no ETA column (a served twin's own forecast; elsewhere it carries the cluster forward in virtual "
        "twins: a second or more)",
    )
    s.add_argument(
        "--eta-replicas",
        type=int,
        default=None,
        help="forward runs behind the ETA column, computed here (default: the twin's own forecast when it keeps "
        "one, else 8)",
    )
    s.add_argument(
        "--eta-horizon",
        type=duration,
        default=None,
        help="how far ahead the ETA looks, computed here (default: the twin's own forecast when it keeps one, "
        "else 7d)",
    )
    s.add_argument(
        "--eta-interval", type=duration, default=60.0, help="with -w, recompute the ETA this often"
    )
    s.set_defaults(func=_run_status)

    db = sub.add_parser(
        "dashboard",
        help="open the served twin's web dashboard (logged in with its token)",
        description="Open the running twin's web dashboard in a browser, logged in.",
        epilog=examples("flexq dashboard", "flexq dashboard --print-url"),
    )
    home_flag(db)
    db.add_argument("--print-url", action="store_true", help="print the URL instead of opening a browser")
    db.set_defaults(func=_run_dashboard)


def add_logs_parser(sub: Any) -> None:
    """``flexq logs``."""
    lg = sub.add_parser(
        "logs",
        help="a job's output (the RayJob's submitter)",
        description="A job's output: a RayJob's submitter (what `ray job logs` prints), or a Job's pod. "
        "With -f, a job that is still queued is waited for, saying what it waits for.",
        epilog=examples(
            "flexq logs rayjob-tpu-v6e-dws-1",
            "flexq logs -f rayjob-tpu-v6e-dws-2        # waits while Kueue or DWS hold it",
            "flexq logs -f job/train --pod-running-timeout 10m",
        ),
    )
    lg.add_argument("job", help="RayJob or Job name (or job/<name>)")
    lg.add_argument("-f", "--follow", action="store_true", help="follow the output until the job ends")
    lg.add_argument("-c", "--container", default=None, help="the container (default: the pod's first)")
    lg.add_argument(
        "--pod-running-timeout",
        type=duration,
        default=None,
        metavar="DURATION",
        help="with -f, how long to wait for the job's pod to start (default: as long as the job is queued "
        "or starting)",
    )
    kube_flags(lg)
    lg.set_defaults(func=_run_logs)


def _run_status(args: argparse.Namespace) -> int:
    return cmd_status(args, console, err_console)


def _run_dashboard(args: argparse.Namespace) -> int:
    return cmd_dashboard(args, console, err_console)


def _run_logs(args: argparse.Namespace) -> int:
    return cmd_logs(args, console, err_console)
