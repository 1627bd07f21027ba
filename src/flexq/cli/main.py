"""Entry point of the ``flexq`` command: sub-commands up, down, env, demo, tutorial, convert, status, dashboard,
submit, logs, fallback, eta, simulate, completion.

Owns: argument parsing and dispatch only; each command's work lives in its own module (``lifecycle`` for
up/down/env, ``demo``, ``tutorial_files`` for ``flexq tutorial``, ``convert``, ``status``/``observe``/``kubeclient`` for
status and logs, ``submit``, ``eta``, ``completion``). The parser (``Parser``) gives every sub-command a description
with examples, shows each option's default in its help, reads a value such as ``-1h`` as a value (refused
by the option's own check) rather than as an unknown option, and says a usage error in one line
(``error: --timeout: invalid duration '6 hours': ...``), as ``flexq simulate`` says a bad study file.
Heavy modules are imported inside the command that needs them so ``flexq --help`` and ``flexq env`` stay
fast. Must not import flexq.http at module level.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from rich.markup import escape

from flexq import __version__
from flexq.cli.views import console, err_console


# -- parsing ----------------------------------------------------------------------------------------------------
class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal, except paragraphs laid out by hand (indented lines, numbered
    items, examples), which stay as written; each option's default after its help (when it has one worth
    saying: not None, False or an empty list)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        # never split a value such as user-queue or tpu-v6e-slice at its hyphens
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if (
                any(ln.startswith(" ") for ln in lines)
                or para.startswith("examples:")
                or para[:2] in ("1.", "2.")
            ):
                out.append("\n".join(indent + ln for ln in lines))
            else:
                out.append(
                    textwrap.fill(
                        " ".join(lines),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_on_hyphens=False,
                    )
                )
        return "\n\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or not action.option_strings or action.help == argparse.SUPPRESS:
            return text
        d = action.default
        if d is None or d is False or d == [] or d == argparse.SUPPRESS or isinstance(action.const, bool):
            return text  # a flag (store_true) or no default worth saying; a 0 is one (--keep-idle 0)
        value = "%(default)s"
        if getattr(action.type, "__name__", "") == "duration" and isinstance(d, int | float):
            value = f"{d:g} s" if d < 120 or d % 60 else f"{d / 60:g} min ({d:g} s)"
        return f"{text} (default: {value})" if text else f"(default: {value})"


class Parser(argparse.ArgumentParser):
    """``argparse`` with flexq's conventions (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        # A word starting with "-" and a digit is a value (a negative duration, refused by the option's own check),
        # never an option: no flexq option is spelled that way. argparse's own rule takes only plain numbers.
        self._negative_number_matcher = re.compile(r"^-\d")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, with a misspelled option answered by the options of the command it was given to
        (``flexq status --namepsace x``: did you mean --namespace?)."""
        ns, extras = self.parse_known_args(args, namespace)
        if not extras:
            return ns
        import difflib

        chain: list[argparse.ArgumentParser] = [self]
        while True:  # the sub-commands chosen, deepest last
            sub = next((a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)), None)
            picked = (
                getattr(ns, sub.dest, None) if sub is not None and sub.dest != argparse.SUPPRESS else None
            )
            if sub is None or picked not in sub.choices:
                break
            chain.append(sub.choices[picked])
        options = sorted(
            {o for p in chain for a in p._actions for o in a.option_strings if o.startswith("--")}
        )
        message = f"unrecognized arguments: {' '.join(extras)}"
        for word in extras:
            if word.startswith("--"):
                close = difflib.get_close_matches(word.partition("=")[0], options, n=1, cutoff=0.6)
                if close:
                    message += f"; did you mean {close[0]}?"
        chain[-1].error(message)

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m is not None:  # flexq stauts: did you mean status?
            import difflib

            choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
            close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def duration(text: str) -> float:
    """An option's time: seconds (``15``, ``2.5``) or a duration (``90s``, ``30m``, ``2h``, ``1h30m``)."""
    from flexq.api.capacity_profile import parse_duration

    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def kueue_release(text: str) -> str:
    """``--kueue``: a Kueue release the twin models ("0.19.2", "v0.20.7"), as its plain version."""
    from flexq.api.kueue_versions import resolve
    from flexq.errors import Invalid

    try:
        return resolve(text).version
    except Invalid as exc:
        raise argparse.ArgumentTypeError(exc.causes[0].message if exc.causes else str(exc)) from None


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


# -- commands ---------------------------------------------------------------------------------------------------
def _cmd_up(args: argparse.Namespace) -> int:
    from flexq.cli import lifecycle
    from flexq.errors import missing_of, require_extra

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
    return lifecycle.up(
        lifecycle.Home.resolve(args.home),
        console,
        project=args.project,
        timeout=args.timeout,
        executor=executor,
        kueue=args.kueue,
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


def _cmd_tutorial(args: argparse.Namespace) -> int:
    from flexq.cli import tutorial_files

    return tutorial_files.run(args, console, err_console)


def _cmd_convert(args: argparse.Namespace) -> int:
    from flexq.cli import convert

    return convert.run(args, console, err_console)


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
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not a UTF-8 text file"
        err_console.print(f"[red]error:[/] cannot read {args.script}: {why}", highlight=False)
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
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    if args.dry_run:
        sys.stdout.write(submit.to_yaml(objs))
        return 0
    from flexq.cli import kubeclient

    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        kubeclient.check_not_placeholder(api)
        for line in kubeclient.submit_objects(api, objs, args.namespace):
            console.print(line, highlight=False)
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    return 0


def _cmd_logs(args: argparse.Namespace) -> int:
    from flexq.cli import observe

    return observe.cmd_logs(args, console, err_console)


def _cmd_fallback(args: argparse.Namespace) -> int:
    from flexq.cli import fallback

    if args.fallback_command == "manifests":
        return fallback.cmd_manifests(args, err_console)
    return fallback.run(args, console, err_console)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from flexq.cli import simulate
    from flexq.errors import missing_of, require_extra

    if args.ray_address:
        require_extra("ray", "flexq simulate --ray-address")
    if not args.no_plots and missing_of("plots"):
        err_console.print(
            "note: matplotlib is not installed, so no plots and no report.html (pip install 'flexq[plots]'); "
            "jobs.csv and the JSON summaries are written",
            markup=False,
            highlight=False,
        )
        args.no_plots = True
    return simulate.run(args, console, err_console)


def _cmd_eta(args: argparse.Namespace) -> int:
    from flexq.cli import eta

    return eta.run(args, console, err_console)


def _cmd_completion(args: argparse.Namespace) -> int:
    from flexq.cli import completion

    sys.stdout.write(completion.script(build_parser(), args.shell))
    return 0


def version_lines() -> list[str]:
    """``flexq version``: flexq's own version, then what it runs and models: the Kueue releases a twin can run
    (the default first), the Kubernetes version a twin's clusters report, Ray when installed, Python."""
    import platform

    from flexq.api.kueue_versions import DEFAULT, KNOWN
    from flexq.errors import missing_of

    kueue = [DEFAULT.version, *(v for v in KNOWN if v != DEFAULT.version)]
    ray = "not installed (pip install 'flexq[ray]')"
    if not missing_of("ray"):
        from importlib.metadata import version as dist_version

        ray = dist_version("ray")
    return [
        f"flexq {__version__}",
        f"Kueue (a twin runs one): {kueue[0]} (default), {', '.join(kueue[1:])}",
        "Kubernetes: 1.34, GKE's version in the tutorial (docs/upstream-versions.md: what each part follows)",
        f"Ray (real training): {ray}",
        f"Python: {platform.python_version()}",
    ]


def _cmd_version(args: argparse.Namespace) -> int:
    if args.short:
        sys.stdout.write(f"flexq {__version__}\n")
    else:
        sys.stdout.write("\n".join(version_lines()) + "\n")
    return 0


# -- parser -----------------------------------------------------------------------------------------------------
def _kube_flags(p: argparse.ArgumentParser, namespace: bool = True) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    if namespace:
        p.add_argument("-n", "--namespace", default="default", help="the namespace")


def _home_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", help="the twin's state directory (default: $FLEXQ_HOME or ~/.flexq)")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="flexq",
        description="A local twin of GKE + Kueue + KubeRay for on-demand-first TPU training with DWS "
        "flex-start as the fallback, a capacity simulator and a stock-out fallback.",
        epilog=_examples(
            "flexq demo                      # the tutorial end to end in this process (real Ray)",
            "flexq tutorial init tutorial    # the tutorial's files, for the live tutorial",
            'flexq up && eval "$(flexq env)"  # the twin in the background, gcloud and kubectl pointed at it',
            "flexq simulate examples/tutorial-week --until 12h",
            "flexq <command> --help          # each command's options and examples",
        ),
    )
    p.add_argument("-V", "--version", action="version", version=f"flexq {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser(
        "up",
        help="start the twin in the background (GKE and Kubernetes APIs)",
        description="Start the twin in the background: the GKE API, the Kubernetes API (Kueue and KubeRay "
        "installed), its controllers and its state on disk. Returns once it answers.",
        epilog=_examples(
            'flexq up && eval "$(flexq env)"',
            "flexq up --executor simulated      # pods are simulated: no Ray processes",
            "FLEXQ_HOME=/tmp/twin2 flexq up     # a second twin with its own state",
            "flexq up --kueue 0.19.2            # the Kueue release that still serves the tutorial's v1beta1",
        ),
    )
    _home_flag(up)
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
    up.set_defaults(func=_cmd_up)

    down = sub.add_parser(
        "down",
        help="stop the background twin and everything it started",
        description="Stop the twin `flexq up` started, and every process it started (its state stays).",
        epilog=_examples("flexq down", "flexq down --home /tmp/twin2"),
    )
    _home_flag(down)
    down.add_argument("--timeout", type=duration, default=60.0, help="how long to wait before killing it")
    down.set_defaults(func=_cmd_down)

    env = sub.add_parser(
        "env",
        help="print the export lines that point gcloud and kubectl at the twin",
        description="Print the export lines that point gcloud and kubectl at the running twin: endpoint "
        "overrides, token, CA, project, KUBECONFIG.",
        epilog=_examples('eval "$(flexq env)"', "flexq env --shell fish | source"),
    )
    _home_flag(env)
    env.add_argument("--shell", choices=["sh", "fish"], default="sh", help="the shell's syntax")
    env.set_defaults(func=_cmd_env)

    d = sub.add_parser(
        "demo",
        help="run the tutorial end to end in this process",
        description="The tutorial end to end in this process, no servers: the GKE cluster and both node "
        "pools, Kueue's configuration, two RayJobs training the tutorial's train.py on real Ray "
        "(job 1 on plan A, on-demand; job 2 on plan B, DWS flex-start), a live view, each job's output.",
        epilog=_examples(
            "flexq demo                 # real Ray (about two minutes on 2 cores)",
            "flexq demo --simulated     # the same story on the virtual clock, in seconds",
            "flexq demo --simulated --capacity tutorial   # with realistic DWS waits",
        ),
    )
    d.add_argument("--simulated", action="store_true", help="virtual clock and simulated training (fast)")
    d.add_argument(
        "--timeout",
        type=duration,
        default=None,
        help="how long the jobs may take, with real Ray (default: 900 s)",
    )
    d.add_argument("--no-live", action="store_true", help="print state changes only, no live table")
    d.add_argument(
        "--capacity",
        choices=["fast", "tutorial"],
        default="fast",
        help="cloud capacity profile: fast (nodes in seconds) or tutorial (realistic waits; with --simulated)",
    )
    d.add_argument(
        "--dws-wait",
        type=duration,
        default=None,
        metavar="DURATION",
        help="how long DWS takes to grant plan B (fast capacity; default 60 s with real Ray, which "
        "staggers the two Ray clusters' start-up, 20 s when simulated)",
    )
    d.set_defaults(func=_cmd_demo)

    from flexq.cli.convert import add_parser as add_convert
    from flexq.cli.tutorial_files import add_parser as add_tutorial

    add_tutorial(sub, _examples).set_defaults(func=_cmd_tutorial)
    add_convert(sub, _examples).set_defaults(func=_cmd_convert)

    s = sub.add_parser(
        "status",
        help="one row per Kueue workload: plan, state, wait, why, cost",
        description="One row per Kueue workload, read through the Kubernetes API (the twin or a real "
        "cluster): the flavor each pod set runs on, its state, how long it waited, why it waits (a code "
        "and a legend of what to do) and what it cost so far.",
        epilog=_examples(
            "flexq status",
            "flexq status -A -o wide",
            "flexq status -w                # then each row that changes, with the time",
            "flexq status -o json | jq '.[].state'",
        ),
    )
    _kube_flags(s)
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
        help="no ETA column (it carries the cluster forward in virtual twins: a second or more)",
    )
    s.add_argument("--eta-replicas", type=int, default=8, help="forward runs behind the ETA column")
    s.add_argument("--eta-horizon", type=duration, default=7 * 86400.0, help="how far ahead the ETA looks")
    s.add_argument(
        "--eta-interval", type=duration, default=60.0, help="with -w, recompute the ETA this often"
    )
    s.set_defaults(func=_cmd_status)

    db = sub.add_parser(
        "dashboard",
        help="open the served twin's web dashboard (logged in with its token)",
        description="Open the running twin's web dashboard in a browser, logged in.",
        epilog=_examples("flexq dashboard", "flexq dashboard --print-url"),
    )
    _home_flag(db)
    db.add_argument("--print-url", action="store_true", help="print the URL instead of opening a browser")
    db.set_defaults(func=_cmd_dashboard)

    from flexq.cli.submit import DEFAULT_IMAGE

    b = sub.add_parser(
        "submit",
        help="submit a training script as a Kueue-managed RayJob",
        description="Submit a training script as a Kueue-managed RayJob shaped like the tutorial's: the "
        "script in a ConfigMap, a CPU head, one TPU worker group sized from the accelerator and topology, "
        "elastic workload slices. The LocalQueue must exist; a name that exists is refused (nothing is "
        "changed).",
        epilog=_examples(
            "flexq submit train.py",
            "flexq submit train.py --name rayjob-tpu-v6e-dws-1 --configmap jax-train-script \\\n"
            "      --pip 'jax[tpu]==0.8.2' --pip pandas==2.3.3     # the tutorial's RayJob",
            "flexq submit train.py --topology 2x4 --queue team-a -n research",
            "flexq submit train.py --dry-run > job.yaml",
        ),
    )
    b.add_argument("script", help="the Python script the job runs (mounted at /app/<its name>)")
    b.add_argument("--name", help="the RayJob's name (default: rayjob-<script name>)")
    b.add_argument("--accelerator", default="tpu-v6e-slice", help="TPU accelerator (GKE's node label value)")
    b.add_argument("--topology", default="4x4", help="TPU slice topology")
    b.add_argument("--machine-type", default=None, help="TPU machine type (default: from the accelerator)")
    b.add_argument("--queue", default="user-queue", help="Kueue LocalQueue in the namespace")
    b.add_argument(
        "--pip", action="append", default=[], help="pip requirement of the job (repeat or comma-separate)"
    )
    b.add_argument("--configmap", default=None, help="ConfigMap for the script (default: <name>-script)")
    b.add_argument("--image", default=DEFAULT_IMAGE, help="the Ray container image")
    b.add_argument("--head-pool", default="default-pool", help="node pool of the Ray head ('' for any)")
    b.add_argument("--worker-cpu", default="8", help="CPU request of each TPU worker")
    b.add_argument("--worker-memory", default="16Gi", help="memory request of each TPU worker")
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

    lg = sub.add_parser(
        "logs",
        help="a job's output (the RayJob's submitter)",
        description="A job's output: a RayJob's submitter (what `ray job logs` prints), or a Job's pod. "
        "With -f, a job that is still queued is waited for, saying what it waits for.",
        epilog=_examples(
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
    _kube_flags(lg)
    lg.set_defaults(func=_cmd_logs)

    from flexq.cli.fallback import add_parser as add_fallback

    add_fallback(sub, _kube_flags, duration, _examples).set_defaults(func=_cmd_fallback)

    from flexq.cli.eta import add_parser as add_eta

    add_eta(sub, _kube_flags, duration, _examples).set_defaults(func=_cmd_eta)

    from flexq.cli.simulate import add_parser as add_simulate

    sm = add_simulate(sub)
    sm.description = (
        "Capacity planning on the virtual clock: a study's manifests, traffic and capacity profile run "
        "through the twin's own controllers, several variants on the same traffic, each replica a seed; "
        "then the jobs that never ran, waits, quota usage, evictions, node-hours and cost per variant "
        "(jobs.csv, JSON, plots), what cost the most, and each change it suggests run on the same seeds "
        "before it is shown. Mistakes of configuration (a ConfigMap no manifest provides, a ${VAR} left over, "
        "a queue that does not exist, ...) are refused before anything runs.\n\n"
        "The study format (simulation.yaml, the trace's columns and units, the generator, the placeholders, "
        "the sweep file), with a study to copy: docs/simulate.md."
    )
    sm.epilog = _examples(
        "flexq simulate examples/tutorial-week --until 12h",
        "flexq simulate examples/tutorial-week --sweep examples/tutorial-week/sweep.yaml",
        "flexq simulate examples/kueue-baseline/generator.yaml --scale 0.1",
        "flexq simulate STUDY --replicas 8 -j 2 --out results",
        "flexq simulate STUDY --no-plots       # without the plots extra",
    )
    sm.set_defaults(func=_cmd_simulate)

    vp = sub.add_parser(
        "version",
        help="print flexq's version, and the Kueue, Kubernetes and Ray versions it models and runs",
        description="Print flexq's version (as -V does), then the Kueue releases a twin can run (the default "
        "first), the Kubernetes version its clusters report, the Ray it trains with, and Python.",
        epilog=_examples("flexq version", "flexq version --short             # as flexq -V"),
    )
    vp.add_argument("--short", action="store_true", help="flexq's version only")
    vp.set_defaults(func=_cmd_version)

    c = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for flexq's commands and options.",
        epilog=_examples(
            'eval "$(flexq completion bash)"              # in ~/.bashrc',
            'eval "$(flexq completion zsh)"               # in ~/.zshrc',
            "flexq completion fish > ~/.config/fish/completions/flexq.fish",
        ),
    )
    c.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell")
    c.set_defaults(func=_cmd_completion)
    return p


def main(argv: list[str] | None = None) -> int:
    from flexq.cli.views import fit_width
    from flexq.errors import MissingExtra

    fit_width()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MissingExtra as exc:
        err_console.print("[red]error:[/] ", end="")
        err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        return 1
    except BrokenPipeError:  # `flexq status -o json | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C: no traceback, the shell's status for SIGINT
        return 130


if __name__ == "__main__":
    sys.exit(main())
