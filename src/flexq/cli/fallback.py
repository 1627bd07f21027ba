"""``flexq fallback``: flexq's stock-out-aware fallback as a process against any cluster, and its manifests.

Owns: ``run`` (the loop: one ``FallbackPolicy`` pass every ``--interval`` seconds — sooner when a flavor's
backoff ends — each action printed on one line, a clean exit on SIGINT/SIGTERM) and ``manifests`` (the YAML
that runs the same loop inside the cluster: Namespace, ServiceAccount, the least-privilege ClusterRole and
Role with their bindings, a Deployment that installs flexq from PyPI). The policy and its API live in
``flexq.fallback``; this module only parses, connects and prints.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from rich.console import Console
from rich.markup import escape

from flexq import __version__
from flexq.clock import WallClock, format_time

SA_NAME = "flexq-fallback"
PACKAGE = (
    f"flexq=={__version__}"  # the controller in the cluster runs the same flexq as the one that wrote it
)
# exactly what FallbackPolicy does through KubernetesAPI (flexq.fallback.kubeapi), per resource
CLUSTER_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list", "patch", "delete"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["localqueues", "resourceflavors"],
        "verbs": ["list"],
    },
    # update: a stocked-out flavor's nominal quota is capped while its backoff runs, then put back
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["list", "update"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["admissionchecks", "provisioningrequestconfigs"],
        "verbs": ["get"],
    },
    # get: a pod's owners are climbed (Pod -> RayCluster -> RayJob); update, patch: a RayCluster Kueue manages
    # itself is moved like a RayJob (annotated, then restricted) — tests/fallback/test_least_privilege.py
    {"apiGroups": ["ray.io"], "resources": ["rayjobs", "rayclusters"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    # patch: a stocked-out flavor's nodes kept from scale-down (cluster-autoscaler.kubernetes.io/scale-down-disabled)
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "get", "create", "patch"]},
]


def _state_rules(state_name: str) -> list[dict[str, Any]]:
    # ``create`` cannot be limited by resourceNames (the name is not known at authorization time)
    return [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get", "update"],
            "resourceNames": [state_name],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    ]


def manifests(
    namespace: str = "flexq-system",
    image: str = "python:3.11-slim",
    package: str = PACKAGE,
    state_namespace: str = "kueue-system",
    state_name: str = "flexq-fallback",
    extra_args: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The objects that run ``flexq fallback --in-cluster`` in a cluster."""
    labels = {"app.kubernetes.io/name": SA_NAME, "app.kubernetes.io/part-of": "flexq"}
    subject = [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": namespace}]
    rbac = "rbac.authorization.k8s.io"
    args = ["--in-cluster", "--state-namespace", state_namespace, *(extra_args or [])]
    script = (
        f"pip install --no-cache-dir --disable-pip-version-check {package} && "
        f"exec flexq fallback {' '.join(args)}"
    )
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SA_NAME, "namespace": namespace, "labels": labels},
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": SA_NAME, "labels": labels},
            "rules": CLUSTER_RULES,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SA_NAME, "labels": labels},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": SA_NAME},
            "subjects": subject,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": SA_NAME, "namespace": state_namespace, "labels": labels},
            "rules": _state_rules(state_name),
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": SA_NAME, "namespace": state_namespace, "labels": labels},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": SA_NAME},
            "subjects": subject,
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": SA_NAME, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": 1,  # one writer: the policy's state is one ConfigMap
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"app.kubernetes.io/name": SA_NAME}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": SA_NAME,
                        "containers": [
                            {
                                "name": "fallback",
                                "image": image,
                                "command": ["/bin/sh", "-c", script],
                                "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "256Mi"},
                                    "limits": {"memory": "512Mi"},
                                },
                                "securityContext": {"allowPrivilegeEscalation": False},
                            }
                        ],
                    },
                },
            },
        },
    ]


def manifests_yaml(**kw: Any) -> str:
    import yaml

    return yaml.safe_dump_all(manifests(**kw), sort_keys=False)


def config_from_args(args: argparse.Namespace) -> Any:
    from flexq.fallback.policy import FallbackConfig

    return FallbackConfig(
        grace_seconds=args.grace,
        backoff_seconds=args.backoff,
        max_backoff_seconds=args.max_backoff,
        move_started=args.move_started,
        hedge=not args.no_hedge,
        hedge_queued=not args.no_hedge,
        cap_quota=not args.no_quota_cap,
        keep_idle_seconds=args.keep_idle,
        all_queues=args.all_queues,
        dry_run=args.dry_run,
        state_namespace=args.state_namespace,
    )


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    """The loop (see the module docstring); 0 on a clean stop, 1 when the cluster cannot be reached at all."""
    from flexq import errors
    from flexq.fallback.kubeapi import KubernetesAPI, in_cluster_client
    from flexq.fallback.policy import FallbackPolicy

    for flag in ("interval", "grace", "backoff", "max_backoff"):
        if getattr(args, flag) < 0:
            err_console.print(f"[red]error:[/] --{flag.replace('_', '-')} must be >= 0")
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
    policy = FallbackPolicy(api, config_from_args(args))
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        stop.set()

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    mode = " (dry run: nothing is changed)" if args.dry_run else ""
    console.print(
        f"flexq fallback: watching {client.configuration.host} every {args.interval:g}s{mode}",
        highlight=False,
    )
    failures = 0
    try:
        while not stop.is_set():
            try:
                actions = policy.run_once()
                failures = 0
            except errors.ApiError as exc:
                failures += 1
                err_console.print(f"[red]error:[/] {escape(str(exc))}")
                if args.once:
                    return 1
                actions = []
            for a in actions:
                prefix = "would " if args.dry_run else ""
                console.print(
                    f"{format_time(clock.now())}  {prefix}{a.verb:<12} {a.target}  {a.message}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )  # one line, however long
            if args.once:
                break
            now = clock.now()
            wake = policy.next_wakeup(now)
            delay = args.interval if wake is None else min(args.interval, max(0.0, wake - now))
            stop.wait(min(delay * 2 ** min(failures, 4), 300.0) if failures else delay)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 0


def add_parser(sub: Any, kube_flags: Any) -> argparse.ArgumentParser:
    """``flexq fallback`` and ``flexq fallback manifests``."""
    from flexq.fallback.policy import FallbackConfig

    d = FallbackConfig()
    f = sub.add_parser(
        "fallback",
        help="flexq's stock-out-aware fallback against a cluster (or its manifests)",
        description="Move jobs waiting on a stocked-out flavor to the next one, steer new jobs "
        "away while it lasts, come back when it returns. Acts on LocalQueues "
        "labelled fallback.flexq.dev/enabled=true (or all, with --all-queues).",
    )
    kube_flags(f, namespace=False)
    f.add_argument(
        "--in-cluster", action="store_true", help="use the pod's service account (in a Deployment)"
    )
    f.add_argument("--dry-run", action="store_true", help="only print what it would do")
    f.add_argument("--once", action="store_true", help="one pass, then exit")
    f.add_argument("--interval", type=float, default=15.0, metavar="SECONDS", help="seconds between passes")
    f.add_argument(
        "--grace",
        type=float,
        default=d.grace_seconds,
        metavar="SECONDS",
        help="how long capacity errors must last before a flavor counts as stocked out",
    )
    f.add_argument(
        "--backoff",
        type=float,
        default=d.backoff_seconds,
        metavar="SECONDS",
        help="first backoff of a stocked-out flavor (doubles after each failed probe)",
    )
    f.add_argument("--max-backoff", type=float, default=d.max_backoff_seconds, metavar="SECONDS")
    f.add_argument(
        "--all-queues", action="store_true", help="act on every LocalQueue, not only opted-in ones"
    )
    f.add_argument("--move-started", action="store_true", help="also move jobs whose pods have started")
    f.add_argument(
        "--no-hedge",
        action="store_true",
        help="never send a job waiting on plan B back to the stocked-out flavor when it can take it first",
    )
    f.add_argument(
        "--keep-idle",
        type=float,
        default=d.keep_idle_seconds,
        metavar="SECONDS",
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
    fsub = f.add_subparsers(dest="fallback_command")
    m = fsub.add_parser("manifests", help="print the YAML that runs the fallback in the cluster")
    m.add_argument("--namespace", default="flexq-system", help="namespace of the Deployment")
    m.add_argument("--image", default="python:3.11-slim", help="container image (with python and pip)")
    m.add_argument(
        "--package", default=PACKAGE, help=f"what pip installs (default {PACKAGE}, this flexq's own version)"
    )
    m.add_argument(
        "--state-namespace",
        dest="manifest_state_namespace",
        default=d.state_namespace,
        help="namespace of the state ConfigMap (gets a Role for it)",
    )
    return f
