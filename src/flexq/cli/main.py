"""Entry point of the ``flexq`` command: sub-commands up, down, env, demo, status, dashboard, submit, logs,
fallback, simulate.

Owns: argument parsing and dispatch only; each command's work lives in its own module (``lifecycle`` for
up/down/env, ``demo``, ``status``/``kubeclient`` for status and logs, ``submit``). Heavy modules are imported
inside the command that needs them so ``flexq --help`` and ``flexq env`` stay fast.
Must not import flexq.http at module level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flexq import __version__
from flexq.cli.views import console, err_console


# -- commands ---------------------------------------------------------------------------------------------------
def _cmd_up(args: argparse.Namespace) -> int:
    from flexq.cli import lifecycle

    return lifecycle.up(
        lifecycle.Home.resolve(args.home),
        console,
        project=args.project,
        timeout=args.timeout,
        executor=args.executor,
    )


def _cmd_down(args: argparse.Namespace) -> int:
    from flexq.cli import lifecycle

    return lifecycle.down(lifecycle.Home.resolve(args.home), console, timeout=args.timeout)


def _cmd_env(args: argparse.Namespace) -> int:
    from flexq.cli import lifecycle

    return lifecycle.env(lifecycle.Home.resolve(args.home), console, shell=args.shell)


def _cmd_demo(args: argparse.Namespace) -> int:
    from flexq.cli import demo

    return int(demo.run(args))


def _cmd_status(args: argparse.Namespace) -> int:
    from flexq.cli import observe

    return observe.cmd_status(args, console, err_console)


def _cmd_dashboard(args: argparse.Namespace) -> int:
    from flexq.cli import observe

    return observe.cmd_dashboard(args, console, err_console)


def _cmd_submit(args: argparse.Namespace) -> int:
    from flexq.cli import submit

    path = Path(args.script)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        err_console.print(f"[red]error:[/] cannot read {args.script}: {exc.strerror}")
        return 1
    pip = [p for item in args.pip for p in item.split(",") if p.strip()]
    annotations = {}
    for item in args.annotation:
        key, sep, value = item.partition("=")
        if not sep or not key:
            err_console.print(f"[red]error:[/] --annotation wants KEY=VALUE, got {item!r}")
            return 2
        annotations[key] = value
    spec = submit.SubmitSpec(
        name=args.name or submit.default_name(args.script),
        queue=args.queue,
        accelerator=args.accelerator,
        topology=args.topology,
        machine_type=args.machine_type,
        pip=pip,
        configmap=args.configmap,
        image=args.image,
        head_pool=args.head_pool or None,
        worker_cpu=args.worker_cpu,
        worker_memory=args.worker_memory,
        replicas=args.replicas,
        max_replicas=max(args.max_replicas, args.replicas),
        elastic=not args.no_elastic,
        namespace=args.namespace if args.dry_run else None,
        annotations=annotations,
    )
    try:
        objs = submit.build_objects(spec, path.name, text)
    except submit.SubmitError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 1
    if args.dry_run:
        sys.stdout.write(submit.to_yaml(objs))
        return 0
    from flexq.cli import kubeclient

    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        for line in kubeclient.apply_objects(api, objs, args.namespace):
            console.print(line)
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 1
    return 0


def _cmd_logs(args: argparse.Namespace) -> int:
    from flexq.cli import kubeclient
    from flexq.clock import WallClock

    job = args.job.split("/", 1)[-1]
    clock = WallClock()
    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        # like kubectl, -f waits up to --pod-running-timeout for a pod that has started
        deadline = clock.now() + (args.pod_running_timeout if args.follow else 0)
        while True:
            pods = kubeclient.job_pods(api, job, args.namespace)
            started = [p for p in pods if (p.get("status") or {}).get("phase") not in (None, "Pending")]
            if started or clock.now() >= deadline:
                break
            clock.sleep(1.0)
        if not pods:
            err_console.print(f'[red]error:[/] no pods found for job "{job}" in namespace "{args.namespace}"')
            return 1
        pod = (started or pods)[-1]["metadata"]["name"]
        for line in kubeclient.stream_logs(
            api, pod, args.namespace, follow=args.follow, container=args.container
        ):
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _cmd_fallback(args: argparse.Namespace) -> int:
    from flexq.cli import fallback

    if args.fallback_command == "manifests":
        sys.stdout.write(
            fallback.manifests_yaml(
                namespace=args.namespace,
                image=args.image,
                package=args.package,
                state_namespace=args.manifest_state_namespace,
            )
        )
        return 0
    return fallback.run(args, console, err_console)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from flexq.cli import simulate

    return simulate.run(args, console, err_console)


# -- parser -----------------------------------------------------------------------------------------------------
def _kube_flags(p: argparse.ArgumentParser, namespace: bool = True) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    if namespace:
        p.add_argument("-n", "--namespace", default="default")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flexq", description="A local twin of GKE + Kueue + KubeRay (DWS fallback)."
    )
    p.add_argument("--version", action="version", version=f"flexq {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    for name, helptext in (
        ("up", "start the twin in the background (GKE and Kubernetes APIs)"),
        ("down", "stop the background twin and everything it started"),
        ("env", "print the export lines that point gcloud and kubectl at the twin"),
    ):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("--home", help="state directory (default: $FLEXQ_HOME or ~/.flexq)")
        if name == "up":
            c.add_argument("--project", default=None, help="the twin's GCP project id (default: flexq-twin)")
            c.add_argument(
                "--executor",
                choices=["ray", "simulated"],
                default="ray",
                help="run pods with real Ray (default) or simulate them",
            )
            c.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for readiness")
        if name == "down":
            c.add_argument("--timeout", type=float, default=60.0, help="seconds to wait before killing")
        if name == "env":
            c.add_argument("--shell", choices=["sh", "fish"], default="sh")
        c.set_defaults(func={"up": _cmd_up, "down": _cmd_down, "env": _cmd_env}[name])

    d = sub.add_parser("demo", help="run the tutorial end to end in this process")
    d.add_argument("--simulated", action="store_true", help="virtual clock and simulated training (fast)")
    d.add_argument(
        "--timeout", type=float, default=None, help="wall seconds the jobs may take (real mode; default 900)"
    )
    d.add_argument("--no-live", action="store_true", help="print state changes only, no live table")
    d.add_argument(
        "--capacity",
        choices=["fast", "tutorial"],
        default="fast",
        help="cloud capacity profile: fast (nodes in seconds) or tutorial (realistic waits; "
        "with --simulated)",
    )
    d.add_argument(
        "--dws-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long DWS takes to grant plan B (fast capacity; default 60 with real Ray, which "
        "staggers the two Ray clusters' start-up, 20 when simulated)",
    )
    d.set_defaults(func=_cmd_demo)

    s = sub.add_parser("status", help="one row per Kueue workload: plan, state, wait, why, cost")
    _kube_flags(s)
    s.add_argument("-A", "--all-namespaces", action="store_true")
    s.add_argument("-o", "--output", choices=["table", "wide", "json", "yaml"], default="table")
    s.add_argument("-w", "--watch", action="store_true", help="after the table, print each row that changes")
    s.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="with -w, how often to look"
    )
    s.set_defaults(func=_cmd_status)

    db = sub.add_parser("dashboard", help="open the served twin's web dashboard (logged in with its token)")
    db.add_argument("--home", help="state directory (default: $FLEXQ_HOME or ~/.flexq)")
    db.add_argument("--print-url", action="store_true", help="print the URL instead of opening a browser")
    db.set_defaults(func=_cmd_dashboard)

    b = sub.add_parser("submit", help="submit a training script as a Kueue-managed RayJob")
    b.add_argument("script")
    b.add_argument("--name", help="RayJob name (default: rayjob-<script stem>)")
    b.add_argument("--accelerator", default="tpu-v6e-slice")
    b.add_argument("--topology", default="4x4")
    b.add_argument("--machine-type", default=None, help="TPU machine type (default: from the accelerator)")
    b.add_argument("--queue", default="user-queue", help="Kueue LocalQueue")
    b.add_argument("--pip", action="append", default=[], help="pip requirement (repeat or comma-separate)")
    b.add_argument("--configmap", default=None, help="ConfigMap for the script (default: <name>-script)")
    b.add_argument("--image", default="rayproject/ray:2.53.0-py311")
    b.add_argument("--head-pool", default="default-pool", help="node pool of the Ray head ('' for any)")
    b.add_argument("--worker-cpu", default="8")
    b.add_argument("--worker-memory", default="16Gi")
    b.add_argument("--replicas", type=int, default=1, help="TPU slices to start with")
    b.add_argument("--max-replicas", type=int, default=2, help="TPU slices the autoscaler may grow to")
    b.add_argument(
        "--annotation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="RayJob annotation (e.g. twin.flexq.dev/run-seconds=60 on a simulated twin)",
    )
    b.add_argument("--no-elastic", action="store_true", help="no Kueue workload slices / Ray autoscaling")
    b.add_argument("--dry-run", action="store_true", help="print the YAML instead of creating it")
    _kube_flags(b)
    b.set_defaults(func=_cmd_submit)

    lg = sub.add_parser("logs", help="a job's output (the RayJob's submitter)")
    lg.add_argument("job", help="RayJob or Job name (or job/<name>)")
    lg.add_argument("-f", "--follow", action="store_true")
    lg.add_argument("-c", "--container", default=None)
    lg.add_argument(
        "--pod-running-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="with -f, how long to wait for the job's pod to start (as kubectl)",
    )
    _kube_flags(lg)
    lg.set_defaults(func=_cmd_logs)

    from flexq.cli.fallback import add_parser as add_fallback

    add_fallback(sub, _kube_flags).set_defaults(func=_cmd_fallback)

    from flexq.cli.simulate import add_parser as add_simulate

    add_simulate(sub).set_defaults(func=_cmd_simulate)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `flexq status -o json | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
