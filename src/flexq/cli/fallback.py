"""``flexq fallback``: flexq's stock-out-aware fallback as a process against any cluster, and its manifests.

Owns: the ``flexq fallback`` and ``flexq fallback manifests`` parsers (``add_parser``), ``run`` (the arguments
of the loop ``flexq.fallback.runner.Runner`` runs: one ``FallbackPolicy`` pass every ``--interval`` seconds —
sooner when something comes due — each action printed on one line, a clean exit on SIGINT/SIGTERM; with
``--metrics-port``, ``/metrics`` and the liveness ``/healthz`` served beside it) and ``cmd_manifests`` (the
YAML ``flexq.cli.fallback_manifests`` builds, on stdout, a bad option said in one line). The policy and its API
live in ``flexq.fallback``; this module only parses, connects and prints.
"""

from __future__ import annotations

import argparse
import math
import signal
import threading
from typing import Any

from rich.console import Console
from rich.markup import escape

from flexq import __version__
from flexq.cli.fallback_manifests import IMAGE, PYTHON_IMAGE, RUN_AS, ManifestError, manifests_yaml, pinned
from flexq.clock import WallClock


def cmd_manifests(args: argparse.Namespace, err_console: Console) -> int:
    """``flexq fallback manifests``: the YAML on stdout; a bad option in one line on stderr (exit 2)."""
    import sys

    if not args.image and not args.package:
        err_console.print(
            "[red]error:[/] give --image (an image with flexq that your cluster can pull: build it from the "
            "repository's Dockerfile and push it to your registry) or --package (an https URL of flexq's wheel, with "
            f"--package-sha256); there is no default: {IMAGE} is on no registry a cluster can pull from "
            "(see: flexq fallback manifests --help)",
            highlight=False,
            soft_wrap=True,
        )
        return 2
    try:
        text = manifests_yaml(
            namespace=args.namespace,
            image=args.image,
            package=args.package,
            package_sha256=args.package_sha256,
            python_image=args.python_image,
            state_namespace=args.manifest_state_namespace,
            decide_by=args.manifest_decide_by,
        )
    except ManifestError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    used = args.python_image if args.package else (args.image or IMAGE)
    if not pinned(used):
        err_console.print(
            f"note: {escape(used)} is referenced by its tag; pin it by digest ({escape(used.split('@')[0])}"
            "@sha256:…) so that the cluster runs exactly the image you checked",
            highlight=False,
        )
    sys.stdout.write(text)
    return 0


def _number_between(low: float, high: float, what: str) -> Any:
    """An argparse type for a number in [low, high] (``what`` says what it is); the refusal shows the text given."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g} ({what}): {text[:40]!r}")
        return value

    return parse


_fraction = _number_between(0, 10, "a fraction of the bill")
_probability = _number_between(0, 1, "a probability")


def _flavor_name(text: str) -> str:
    """An argparse type for a ResourceFlavor's name (``--promote-flavor res-a``): a DNS subdomain."""
    from flexq.fallback.model import flavor_name_error

    problem = flavor_name_error(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def _named_number(kind: str, integer: bool) -> Any:
    """An argparse type for NAME=NUMBER (``--wait-value urgent=4``, ``--pool-limit dws-pool=8``)."""

    def parse(text: str) -> tuple[str, float]:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(f"expected {kind}=NUMBER, got {text[:80]!r}")
        try:
            value = float(int(raw)) if integer else float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name.strip()[:80]}: {'an integer' if integer else 'a number'} expected, got {raw[:80]!r}"
            ) from None
        if not math.isfinite(value) or value <= 0 or value > (100_000 if integer else 1000):
            raise argparse.ArgumentTypeError(
                f"{name.strip()[:80]}: must be above 0 and at most {100_000 if integer else 1000}, got {raw[:80]!r}"
            )
        return name.strip(), value

    return parse


def config_from_args(args: argparse.Namespace) -> Any:
    from flexq.fallback.model import FallbackConfig

    return FallbackConfig(
        decide_by=args.decide_by,
        forecast_replicas=args.forecast_replicas,
        wait_values=dict(args.wait_value or []),
        pool_limits={k: int(v) for k, v in args.pool_limit or []},
        grace_seconds=args.grace,
        backoff_seconds=args.backoff,
        max_backoff_seconds=args.max_backoff,
        move_started=args.move_started,
        hedge=not args.no_hedge,
        hedge_queued=not args.no_hedge,
        promote=not args.no_promote,
        promote_flavors=list(args.promote_flavor or []),
        cap_quota=not args.no_quota_cap,
        keep_idle_seconds=args.keep_idle,
        all_queues=args.all_queues,
        rescue=not args.no_rescue,
        provisioning_wait_prior_seconds=args.provisioning_wait_prior,
        probe_back=not args.no_probe_back,
        hedge_cost_budget=args.hedge_cost_budget,
        contention_limit=args.contention_limit,
        dry_run=args.dry_run or bool(args.explain),
        state_namespace=args.state_namespace,
    )


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    """Parse, connect and print; the loop is ``flexq.fallback.runner.Runner``. 0 on a clean stop, 1 when the
    cluster cannot be reached at all or this replica lost the leader Lease, 2 on a bad option."""
    from flexq import errors
    from flexq.fallback.kubeapi import KubernetesAPI, in_cluster_client
    from flexq.fallback.leader import LeaseElector, timing_error
    from flexq.fallback.metrics import FallbackMetrics
    from flexq.fallback.policy import FallbackPolicy
    from flexq.fallback.runner import Report, Runner

    for flag in ("interval", "grace", "backoff", "max_backoff"):
        if getattr(args, flag) < 0:
            err_console.print(f"[red]error:[/] --{flag.replace('_', '-')} must be >= 0")
            return 2
    if args.leader_elect:
        problem = timing_error(
            args.lease_duration,
            args.renew_deadline,
            args.retry_period,
            ("--lease-duration", "--renew-deadline", "--retry-period"),
        )
        if problem is not None:
            err_console.print(f"[red]error:[/] {problem}")
            return 2
    clock = WallClock()
    try:
        if args.in_cluster:
            client = in_cluster_client()
        else:
            from flexq.cli import kubeclient

            try:
                client = kubeclient.connect(args.kubeconfig, args.context)
            except kubeclient.ClientError as exc:
                raise errors.ApiError(str(exc)) from exc
    except errors.ApiError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}")
        return 1
    api = KubernetesAPI(client, clock=clock)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}")
        return 2
    policy = FallbackPolicy(api, config)
    metrics = FallbackMetrics(None)
    elector = (
        LeaseElector(
            api,
            args.leader_elect_namespace or args.state_namespace,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            clock=clock,
        )
        if args.leader_elect
        else None
    )
    mode = " (dry run: nothing is changed)" if args.dry_run or args.explain else ""
    who = (
        f" as {elector.identity} (leader election on Lease {elector.namespace}/{elector.name})"
        if elector
        else ""
    )
    console.print(
        f"flexq fallback: watching {client.configuration.host} every {args.interval:g}s{mode}{who}",
        highlight=False,
    )
    report = Report(
        say=lambda line: console.print(
            line, markup=False, highlight=False, soft_wrap=True
        ),  # one line, however long
        warn=lambda line: err_console.print(f"[red]error:[/] {escape(line)}"),
    )
    runner = Runner(
        policy,
        clock,
        report,
        interval=args.interval,
        once=args.once or bool(args.explain),
        dry_run=args.dry_run or bool(args.explain),
        explain=args.explain or None,
        elector=elector,
        metrics=metrics,
    )
    if args.metrics_port:
        serve_metrics_and_health(args.metrics_port, metrics, runner, clock, args.stalled_after)
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        stop.set()

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return runner.run(stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def serve_metrics_and_health(
    port: int, metrics: Any, runner: Any, clock: Any, stalled_after: float | None
) -> Any:
    """Serve ``/metrics`` (the fallback's Prometheus metrics) and ``/healthz`` on ``port``, in threads of their
    own: ``/healthz`` answers 200 while the loop makes rounds, 503 with the reason once it has made none for
    ``stalled_after`` seconds (default: four times the longest gap between rounds, at least two minutes) — the
    Deployment's liveness probe, so the kubelet restarts a replica whose loop is stuck even though its HTTP
    server still answers. Returns the server."""
    import threading
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import REGISTRY, make_wsgi_app

    REGISTRY.register(metrics)
    metrics_app = make_wsgi_app(REGISTRY)

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            after = stalled_after if stalled_after else max(120.0, 4 * runner.longest_round_gap())
            problem = runner.stalled(clock.now(), after)
            status = "200 OK" if problem is None else "503 Service Unavailable"
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n" if problem is None else f"stalled: {problem}\n".encode()]
        return list(metrics_app(environ, start_response))

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # probes every 20 s: not a line each
            pass

    server = make_server("", port, app, server_class=Server, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, name="flexq-fallback-metrics", daemon=True).start()
    return server


def add_parser(sub: Any, kube_flags: Any, duration: Any, examples: Any) -> argparse.ArgumentParser:
    """``flexq fallback`` and ``flexq fallback manifests`` (``duration`` parses a time option, ``examples``
    formats an epilog)."""
    from flexq.fallback.model import DECIDE_BY, FallbackConfig

    d = FallbackConfig()
    f = sub.add_parser(
        "fallback",
        help="flexq's stock-out-aware fallback against a cluster (or its manifests)",
        description="Move jobs waiting on a stocked-out flavor to the next one, steer new jobs "
        "away while it lasts, come back when it returns. Acts on LocalQueues "
        "labelled fallback.flexq.dev/enabled=true (or all, with --all-queues). Runs against the "
        "kubeconfig's cluster from here, or in the cluster (`flexq fallback manifests`).",
        epilog=examples(
            "flexq fallback --dry-run --once          # what it would do now, changing nothing",
            "flexq fallback --context gke_my-project_us-east5-b_tpu-cluster",
            "flexq fallback manifests --help          # run it in the cluster",
        ),
    )
    kube_flags(f, namespace=False)
    f.add_argument(
        "--in-cluster", action="store_true", help="use the pod's service account (in a Deployment)"
    )
    f.add_argument("--dry-run", action="store_true", help="only print what it would do")
    f.add_argument("--once", action="store_true", help="one pass, then exit")
    f.add_argument("--interval", type=duration, default=15.0, help="time between passes")
    f.add_argument(
        "--grace",
        type=duration,
        default=d.grace_seconds,
        help="how long capacity errors must last before a flavor counts as stocked out",
    )
    f.add_argument(
        "--backoff",
        type=duration,
        default=d.backoff_seconds,
        help="first backoff of a stocked-out flavor (doubles after each failed probe)",
    )
    f.add_argument("--max-backoff", type=duration, default=d.max_backoff_seconds, help="the longest backoff")
    f.add_argument(
        "--all-queues", action="store_true", help="act on every LocalQueue, not only opted-in ones"
    )
    f.add_argument("--move-started", action="store_true", help="also move jobs whose pods have started")
    f.add_argument(
        "--decide-by",
        choices=DECIDE_BY,
        default=d.decide_by,
        help="how a move is decided: rules (wait what plan B is expected to cost, remember who arrived lately) or "
        "forecast (the cluster carried forward with and without the move on Kueue's own rules: made when it helps "
        "the job and delays no job of its priority or above; docs/fallback.md)",
    )
    f.add_argument(
        "--forecast-replicas",
        type=int,
        default=d.forecast_replicas,
        help="forward runs per variant when deciding by forecast (1-64)",
    )
    f.add_argument(
        "--wait-value",
        type=_named_number("CLASS", integer=False),
        action="append",
        metavar="CLASS=HOURS",
        help="what an hour of waiting of a priority class's jobs is worth, in hours of the job on its plan A "
        "(default 1); repeat per class. A job's own fallback.flexq.dev/hour-of-waiting annotation says it per job",
    )
    f.add_argument(
        "--pool-limit",
        type=_named_number("POOL", integer=True),
        action="append",
        metavar="POOL=NODES",
        help="a node pool's maximum size (the GKE API is not read from here): the forecast and the full-pool "
        "evidence use it; repeat per pool",
    )
    f.add_argument(
        "--explain",
        metavar="JOB",
        default="",
        help="one dry pass, then what it saw of JOB (name or namespace/name) and why it is or is not moved, with "
        "the forecast's figures when deciding by forecast",
    )
    f.add_argument(
        "--no-hedge",
        action="store_true",
        help="never send a job waiting on plan B back to the stocked-out flavor when it can take it first",
    )
    f.add_argument(
        "--promote-flavor",
        action="append",
        type=_flavor_name,
        metavar="FLAVOR",
        help="a ResourceFlavor (a GKE reservation's) that a job Kueue put on a later flavor (DWS) is promoted to "
        "as soon as its quota frees, before its provisioning is granted (repeatable; this process holds no GKE "
        "token, so it cannot see which node pools consume a reservation: name their flavors; the twin finds them "
        "itself)",
    )
    f.add_argument(
        "--no-promote",
        action="store_true",
        help="never promote a job waiting on a later flavor to a reservation flavor whose quota frees (--no-hedge "
        "stops promotions too)",
    )
    f.add_argument(
        "--keep-idle",
        type=duration,
        default=d.keep_idle_seconds,
        help="during a stock-out, keep an idle node of the flavor from scale-down this long (0: never)",
    )
    f.add_argument(
        "--no-quota-cap",
        action="store_true",
        help="never cap a stocked-out flavor's ClusterQueue quota to its nodes up (steer only by moving jobs)",
    )
    f.add_argument(
        "--state-namespace",
        default=d.state_namespace,
        help="namespace of the state ConfigMap (flexq-fallback)",
    )
    f.add_argument(
        "--no-rescue", action="store_true", help="never requeue a job Kueue deactivated for lack of capacity"
    )
    f.add_argument(
        "--provisioning-wait-prior",
        type=duration,
        default=d.provisioning_wait_prior_seconds,
        help="what a flavor behind a provisioning check (DWS) is taken to cost in waiting until one of its waits "
        "is seen: a job stuck on a stocked-out flavor moves there once it has lost that much (0: at once)",
    )
    f.add_argument(
        "--hedge-cost-budget",
        type=_fraction,
        default=None,
        metavar="FRACTION",
        help="send a priority class's jobs back from plan B to plan A (dearer) only while the fallback's moves have "
        "made its running jobs at most this much dearer than without them, e.g. 0.03 (default: no bound; the "
        "hedge back then trades money for time freely, the higher class first)",
    )
    f.add_argument(
        "--contention-limit",
        type=_probability,
        default=d.contention_limit,
        metavar="P",
        help="the contention guard: a lower class's job is not moved onto room a higher class would, by the "
        "cluster's history, need during its run with more than this probability and could not take back, e.g. "
        "0.03; 1 is off (on family seed 71 it held the highest class where lower jobs took its pool, and made the "
        "low class wait longer elsewhere: docs/fallback.md) (default: %(default)s)",
    )
    f.add_argument(
        "--no-probe-back",
        action="store_true",
        help="never send a moved job still waiting on plan B back as plan A's probe (by default it goes back once "
        "plan B has cost twice what it was expected to, at least 30 minutes, doubling per probe)",
    )
    f.add_argument(
        "--leader-elect",
        action="store_true",
        help="several replicas, one acting: leader election on the coordination.k8s.io Lease flexq-fallback",
    )
    f.add_argument(
        "--leader-elect-namespace", default="", help="namespace of the Lease (default: the --state-namespace)"
    )
    f.add_argument("--lease-duration", type=duration, default=15.0, help="how long a leader's Lease lasts")
    f.add_argument(
        "--renew-deadline",
        type=duration,
        default=10.0,
        help="a leader that cannot renew its Lease within this stops (exit 1)",
    )
    f.add_argument(
        "--retry-period", type=duration, default=2.0, help="how often the Lease is tried or renewed"
    )
    f.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve the fallback's Prometheus metrics (flexq_fallback_*) on /metrics and its liveness on /healthz "
        "on this port (0: off)",
    )
    f.add_argument(
        "--stalled-after",
        type=duration,
        default=None,
        help="/healthz fails once the loop has made no round for this long (default: four times the longest gap "
        "between rounds, at least 2 min)",
    )
    fsub = f.add_subparsers(dest="fallback_command", metavar="manifests")
    m = fsub.add_parser(
        "manifests",
        help="print the YAML that runs the fallback in the cluster",
        description=f"""\
Print the YAML that runs `flexq fallback --in-cluster` in a cluster: a Namespace enforcing the Pod Security
Standards' "restricted" profile, a ServiceAccount with the least-privilege ClusterRole and Role it needs, and
a Deployment whose pod passes that profile (non-root uid {RUN_AS}, read-only root filesystem, no
capabilities, seccomp RuntimeDefault, no shell). The pod gets flexq one of two ways:

1. An image with flexq installed (--image). The repository's Dockerfile builds it: flexq's
   core install (no Ray, JAX or matplotlib), every package from hashes. From a checkout or a git URL:
     docker build -t REGISTRY/flexq-fallback:{__version__} .
     docker build -t REGISTRY/flexq-fallback:{__version__} 'https://github.com/OWNER/flexq.git#COMMIT'
     docker push REGISTRY/flexq-fallback:{__version__}      # prints the digest
   then reference it by that digest: --image REGISTRY/flexq-fallback@sha256:DIGEST.
2. A wheel of flexq at an https URL (--package, with --package-sha256): an init container installs it,
   and flexq's core dependencies pinned by the lock shipped with flexq, with pip --require-hashes, into
   an emptyDir of the pod; the container is --python-image. Make the wheel from a checkout or a git URL:
     pip wheel --no-deps -w dist .          (or: pip wheel --no-deps -w dist git+https://…/flexq.git@COMMIT)
     sha256sum dist/flexq-{__version__}-py3-none-any.whl

A server-side dry run creates no namespace: create it first (kubectl create namespace flexq-system), then
  flexq fallback manifests ... | kubectl apply --dry-run=server -f -""",
        epilog=examples(
            "flexq fallback manifests --image registry.example/flexq-fallback@sha256:<64 hex> | kubectl apply -f -",
            "flexq fallback manifests --package https://files.example/flexq-"
            f"{__version__}-py3-none-any.whl --package-sha256 <64 hex>",
            "flexq fallback manifests --namespace team-fallback --state-namespace kueue-system",
        ),
    )
    m.add_argument("--namespace", default="flexq-system", help="namespace of the Deployment")
    m.add_argument(
        "--decide-by",
        dest="manifest_decide_by",
        choices=DECIDE_BY,
        default=d.decide_by,
        help="how the fallback decides (see flexq fallback --help); forecast also grants listing "
        "ProvisioningRequests and reading Kueue's configuration ConfigMap",
    )
    m.add_argument(
        "--image",
        default=None,
        help="an image with flexq installed, pushed to a registry the cluster can pull from, best by digest "
        "(the repository's Dockerfile builds it); this or --package is required",
    )
    m.add_argument(
        "--package",
        default=None,
        metavar="URL",
        help="instead of --image: an https URL of flexq's wheel, installed at start from hashes",
    )
    m.add_argument(
        "--package-sha256", default=None, metavar="HEX", help="the wheel's SHA-256 (with --package)"
    )
    m.add_argument(
        "--python-image",
        default=PYTHON_IMAGE,
        help="with --package: the Python 3.11 image the pod runs, best by digest",
    )
    m.add_argument(
        "--state-namespace",
        dest="manifest_state_namespace",
        metavar="NAMESPACE",
        default=d.state_namespace,
        help="namespace of the state ConfigMap (gets a Role for it)",
    )
    return f
