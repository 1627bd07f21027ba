"""``flexq eta``: when will each waiting job start — ``flexq eta`` (every waiting job), ``flexq eta JOB`` (one,
with the reasoning), ``flexq eta manifests`` (the read-only ClusterRole it needs on a real cluster) — and the
ETA column of ``flexq status``.

Owns: the arguments, reading the cluster through the kubeconfig (``kubeclient.fetch_cluster_state``: lists
only), the rendering, ``EtaColumn`` (``flexq status``'s ETA column: a served twin's own forecast, read through
``GET /flexq/eta``, else one computed here) and ``WAITING_STATES`` (the rows that have an ETA), ``CLUSTER_RULES`` (exactly what that reading lists: ``flexq.forecast.state.KINDS``, plus a
``get`` of Kueue's configuration ConfigMap) and ``forecast_for`` (what ``flexq status`` asks). The ETA itself is
``flexq.eta``. Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from flexq.cli.kubeclient import ETA_PATH, TWIN_PATH
from flexq.cli.status import WorkloadRow
from flexq.cli.views import FitTable as Table
from flexq.clock import format_duration, format_time
from flexq.forecast.state import KINDS, KUEUE_CONFIG

__all__ = [
    "add_parser",
    "run",
    "CLUSTER_RULES",
    "ROLE_NAME",
    "manifests_yaml",
    "forecast_for",
    "eta_cells",
    "EtaColumn",
    "ServedForecast",
    "WAITING_STATES",
]

ROLE_NAME = "flexq-eta-reader"
WAITING_STATES = frozenset(
    {"Pending", "QuotaReserved", "Evicted", "Deactivated"}
)  # the rows that have an ETA


def _rules() -> list[dict[str, Any]]:
    by_group: dict[str, list[str]] = {}
    for _attr, group, _versions, plural in KINDS:
        by_group.setdefault(group, []).append(plural)
    rules: list[dict[str, Any]] = [
        {"apiGroups": [g], "resources": sorted(ps), "verbs": ["list"]} for g, ps in sorted(by_group.items())
    ]
    rules.append(
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": [KUEUE_CONFIG[1]]}
    )
    # a served twin's own forecast (``GET /flexq/eta``, what ``flexq status`` reads there instead of computing):
    # of the jobs the lists above already show; a real cluster serves no such path, and the rule grants nothing
    # and what it declares of itself (``GET /flexq/twin``: its CapacityProfile, its executor), its forecast's priors
    rules.append({"nonResourceURLs": [ETA_PATH, TWIN_PATH], "verbs": ["get"]})
    return rules


# exactly what fetch_cluster_state reads: lists, cluster-wide; Kueue's configuration by name; a served twin's
# forecast; no write at all
CLUSTER_RULES: list[dict[str, Any]] = _rules()


def manifests_yaml(subject: str | None = None) -> str:
    """The ClusterRole (and, with ``subject`` as ``user:NAME``, ``group:NAME`` or ``serviceaccount:NS:NAME``,
    a ClusterRoleBinding) that lets ``flexq eta`` and ``flexq simulate --from-cluster`` read a cluster."""
    rbac = "rbac.authorization.k8s.io"
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": ROLE_NAME, "labels": {"app.kubernetes.io/name": "flexq-eta"}},
            "rules": CLUSTER_RULES,
        }
    ]
    if subject:
        kind, _, rest = subject.partition(":")
        if kind == "serviceaccount":
            ns, _, name = rest.partition(":")
            subj: dict[str, Any] = {"kind": "ServiceAccount", "name": name, "namespace": ns}
        elif kind in ("user", "group"):
            subj = {"kind": kind.capitalize(), "name": rest, "apiGroup": rbac}
        else:
            raise ValueError(
                f"--bind: {subject!r} is not user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME"
            )
        if not subj["name"] or (kind == "serviceaccount" and not subj.get("namespace")):
            raise ValueError(f"--bind: {subject!r} names no one")
        docs.append(
            {
                "apiVersion": f"{rbac}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": ROLE_NAME},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": ROLE_NAME},
                "subjects": [subj],
            }
        )
    return yaml.safe_dump_all(docs, sort_keys=False)


def add_parser(sub: Any, kube_flags: Any, duration: Any, examples: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "eta",
        help="when will each waiting job start: an ETA from the cluster's own state and history, its 80 %% "
        "interval corrected online from the starts it sees",
        description="Every waiting job's start: the cluster's state (queues, jobs, ProvisioningRequests, node "
        "pools, running jobs and how long they have run) is carried forward in a virtual twin under a capacity "
        "model fitted to the cluster's own history (DWS waits, stock-outs, node provisioning times, run times), "
        "several replicas; a job's ETA is the median of its start over them with an 80 % interval, the plan "
        "it would start on and what it waits for. The interval is corrected online per class of job (adaptive "
        "conformal inference) from the starts later runs of flexq eta see; the state of that correction is kept "
        "under $FLEXQ_HOME/eta-calibration (--no-calibration: the forward runs' 10-90 % quantiles as they are). "
        "The median is corrected online the same way, until half of the starts come before it. Measured "
        "(bench/eta_calibration.py, generated families never used while building, docs/eta.md): the 80 % "
        "intervals, corrected online and read as a prediction of one more forward run, covered 83.3 and 79.6 % "
        "of the starts on the last two families (per regime 74-90 %; 75.0-83.5 % on the earlier ones); the "
        "corrected median's error is 0.77 and 0.65x a naive estimate's (0.59-0.89x on the earlier ones). "
        "Reads only (flexq eta manifests prints the ClusterRole).",
        epilog=examples(
            "flexq eta                          # every waiting job",
            "flexq eta rayjob-tpu-v6e-dws-2     # one job, with the reasoning",
            "flexq eta -o json",
            "flexq eta --node-pools pools.json  # gcloud container node-pools list --format=json",
            "flexq eta manifests | kubectl apply -f -",
            "flexq eta manifests --bind user:alice@example.com",
        ),
    )
    kube_flags(p)
    p.add_argument("job", nargs="?", help="a RayJob, Job or Workload name (or 'manifests')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace's waiting jobs")
    p.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table", help="output format")
    p.add_argument(
        "--replicas",
        type=int,
        default=19,
        help="forward runs (each with its own draws); the 80 %% interval is read at their ranks 0.1 and 0.9 x "
        "(replicas + 1), so 19 give their 2nd to 18th start, and fewer than 9 leave it open above",
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="run each forward run in a whole virtual twin (every controller; minutes on a busy cluster) instead "
        "of the fast event model (milliseconds)",
    )
    p.add_argument("--horizon", type=duration, default=7 * 86400.0, help="how far ahead to look")
    p.add_argument("--seed", type=int, default=1, help="seed of the forward runs' draws")
    p.add_argument("-j", "--jobs", type=int, default=None, help="processes (default: one per core)")
    p.add_argument(
        "--node-pools",
        default=None,
        metavar="FILE",
        help="the node pools as `gcloud container node-pools list --format=json` prints them (default: the "
        "twin's GKE API, else inferred from the nodes and flavors)",
    )
    p.add_argument(
        "--class-label", default="flexq.dev/class", help="the label that puts jobs in one run-time class"
    )
    p.add_argument(
        "--no-calibration",
        action="store_true",
        help="neither read nor keep the online correction of the interval and the median (the forward runs' 10-90 %% quantiles and their median)",
    )
    p.add_argument(
        "--bind",
        default=None,
        help="manifests: also bind the role to user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME",
    )
    return p


def read_node_pools(path: str | None) -> list[dict] | None:
    """The node pools file (a JSON list, or ``{"nodePools": [...]}``), or None."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"--node-pools: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if isinstance(data, dict):
        data = data.get("nodePools")
    if not isinstance(data, list) or not all(isinstance(p, dict) and p.get("name") for p in data):
        raise ValueError(
            f"--node-pools: {path} is not a list of node pools (gcloud container node-pools list --format=json)"
        )
    return data


def config_of(args: argparse.Namespace) -> Any:
    from flexq.eta import EtaConfig

    if not 1 <= args.replicas <= 1000:
        raise ValueError(f"--replicas: must be between 1 and 1000, got {args.replicas}")
    if args.horizon <= 0:
        raise ValueError("--horizon: must be more than 0")
    return EtaConfig(
        replicas=args.replicas,
        horizon=args.horizon,
        seed=args.seed,
        workers=args.jobs,
        class_label=args.class_label,
        engine="twin" if getattr(args, "exact", False) else "fast",
    )


def calibration_path(state: Any, server: str = "", home: str | None = None) -> Path:
    """Where the interval's online correction of ``state``'s cluster is kept: ``$FLEXQ_HOME/eta-calibration/``,
    one file per cluster (its GKE name when known, else the API server's host)."""
    import hashlib
    import os

    root = Path(home or os.environ.get("FLEXQ_HOME") or Path.home() / ".flexq") / "eta-calibration"
    c = state.cluster or {}
    ident = "/".join(str(c.get(k, "")) for k in ("project", "location", "name")) if c.get("name") else ""
    ident = ident or server or "cluster"
    return root / (hashlib.sha256(ident.encode()).hexdigest()[:16] + ".json")


def forecast_for(api: Any, cfg: Any, node_pools: list[dict] | None = None, calibrate: bool = False) -> Any:
    """The cluster's ``Forecast`` through ``api`` (reads only). With ``calibrate``, the online correction of this
    cluster (and the stock-out episodes earlier runs saw end) is read, brought up to date with the starts the state
    shows, used, and kept."""
    from flexq.cli import kubeclient
    from flexq.eta import estimate
    from flexq.eta.calibration import Calibration

    state = kubeclient.fetch_cluster_state(api, node_pools)
    if not calibrate:
        return estimate(state, cfg)
    conf = getattr(getattr(api, "api_client", None), "configuration", None)
    path = calibration_path(state, str(getattr(conf, "host", "") or ""))
    cal = Calibration.load(path)
    cal.observe(state.workloads, state.now)
    fc = estimate(state, cfg, calibration=cal)
    cal.record(fc.predictions())
    cal.memory.watch(
        state, fc.stockouts
    )  # the stock-outs that ended since the last flexq eta of this cluster
    try:
        cal.save(path)
    except OSError as exc:  # a read-only home: the forecast stands, the correction is not kept
        fc.notes.append(f"the interval's online correction could not be kept ({exc})")
    return fc


def eta_cells(j: Any, horizon: float) -> tuple[str, str]:
    """(ETA, 80 % interval) for a table. ``j``: a ``JobEta``, or a job of a twin's served forecast (its ``text``
    is ``fmt_eta``'s, made by the twin: the ETA package is then not loaded)."""
    if j.cannot:
        return ("never" if not j.cannot.startswith("deactivated") else "deactivated"), "-"
    if j.median is None:
        return f"not within {format_duration(horizon)}", "-"
    text = getattr(j, "text", None)
    if text is None:
        from flexq.eta import fmt_eta

        text = fmt_eta(j, horizon)
    return text.split(" (")[0], text.partition(" (")[2].rstrip(")")


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    from flexq.cli import kubeclient
    from flexq.errors import FlexqError

    if args.job == "manifests":
        try:
            console.out(manifests_yaml(args.bind).rstrip(), highlight=False)
        except ValueError as exc:
            err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
            return 2
        return 0
    try:
        cfg = config_of(args)
        pools = read_node_pools(args.node_pools)
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        fc = forecast_for(api, cfg, pools, calibrate=not getattr(args, "no_calibration", False))
    except (
        kubeclient.ClientError,
        FlexqError,
    ) as exc:  # the project's errors name what is wrong: no traceback
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    ns = None if args.all_namespaces else args.namespace
    if args.job:
        name = args.job.split("/", 1)[-1]
        j = fc.find(name, ns)
        if j is None:
            running = [k for k in fc.running if k.split("/", 1)[1].endswith(name) or name in k]
            if running:
                console.print(f"{escape(args.job)} is running: it has started (flexq status shows it)")
                return 0
            import difflib

            names = sorted(
                {
                    w.job.split("/", 1)[-1] or w.workload
                    for w in fc.jobs.values()
                    if ns is None or w.namespace == ns
                }
            )
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            err_console.print(
                f'[red]error:[/] no waiting job "{escape(args.job)}" in namespace "{escape(str(ns))}" '
                + (f"; did you mean {escape(close[0])}? " if close else "")
                + "(flexq eta -A lists every waiting job)",
                highlight=False,
            )
            return 1
        if args.output != "table":
            doc = j.as_dict() | {"model": fc.model, "notes": fc.notes}
            console.out(
                json.dumps(doc, indent=2) if args.output == "json" else yaml.safe_dump(doc, sort_keys=False)
            )
            return 0
        explain(j, fc, console)
        return 0
    jobs = [j for j in fc.jobs.values() if ns is None or j.namespace == ns]
    if args.output != "table":
        doc = {
            "observedAt": format_time(fc.now),
            "horizonSeconds": fc.horizon,
            "replicas": fc.replicas,
            "jobs": [j.as_dict() for j in jobs],
            "model": fc.model,
            "notes": fc.notes,
        }
        console.out(
            json.dumps(doc, indent=2) if args.output == "json" else yaml.safe_dump(doc, sort_keys=False)
        )
        return 0
    console.print(eta_table(jobs, fc.horizon))
    console.print(
        f"[bold]model[/] (from the cluster's history at {format_time(fc.now)}; {fc.replicas} forward runs, "
        f"{fc.seconds:.1f} s):",
        highlight=False,
    )
    for line in fc.model + [f"note: {n}" for n in fc.notes]:
        console.print(f"  {escape(line)}", highlight=False)
    return 0


def eta_table(jobs: list[Any], horizon: float) -> Table:
    t = Table(header_style="bold")
    for col in ("JOB", "QUEUE", "STATE", "AHEAD", "ETA", "80 % WITHIN", "PLAN", "WAITS FOR"):
        t.add_column(col, overflow="fold")
    for j in sorted(jobs, key=lambda x: (x.median is None, x.median or 0.0)):
        eta, within = eta_cells(j, horizon)
        t.add_row(
            j.job.split("/", 1)[-1] or j.workload,
            j.queue,
            j.state,
            str(j.position) if j.role == "pending" else "-",
            eta,
            within,
            j.plan or "-",
            j.cannot or j.waits_for or "-",
        )
    if not jobs:
        t.caption = "no job is waiting"
    return t


def explain(j: Any, fc: Any, console: Console) -> None:
    """``flexq eta JOB``: the ETA, then why."""
    eta, within = eta_cells(j, fc.horizon)
    head = f"[bold]{escape(j.job)}[/] ({escape(j.namespace)}/{escape(j.workload)}): "
    if j.cannot and not j.cannot.startswith("deactivated"):
        console.print(head + "[bold red]nothing can run it as it is[/]", highlight=False)
        console.print(f"  {escape(j.cannot)}", highlight=False)
    elif j.cannot:
        console.print(head + "[bold]deactivated[/]", highlight=False)
    elif j.median is None:
        console.print(
            head + f"[bold]{escape(eta)}[/] (started within the horizon in "
            f"{j.started:.0%} of the forward runs)",
            highlight=False,
        )
    else:
        console.print(
            head
            + f"starts [bold]{escape(eta)}[/], 80 % within {escape(within)}"
            + (f", on {escape(j.plan)}" if j.plan else ""),
            highlight=False,
        )
    console.print("why:", highlight=False)
    for line in j.reasoning:
        console.print(f"  - {escape(line)}", highlight=False)
    console.print("the model it comes from:", highlight=False)
    for line in fc.model + [f"note: {n}" for n in fc.notes]:
        console.print(f"  - {escape(line)}", highlight=False)


class EtaColumn:
    """``flexq status``'s ETA column: a served twin's own forecast (its ETA service's, ``GET /flexq/eta``: read,
    not computed, so 5,000 waiting jobs cost a read), else ``flexq eta``'s forecast computed here from the same
    reads (a real cluster, a twin without an ETA service, or ``--eta-replicas``/``--eta-horizon`` given). Before
    a served twin's first forecast the column is left out, with a note. With ``-w`` the served forecast is read
    again at each poll; a computed one is computed again in a thread of its own — when the waiting jobs change,
    and at least every ``--eta-interval`` — so the watch never waits for it; rows show the latest forecast."""

    def __init__(self, api: Any, args: argparse.Namespace, err_console: Console) -> None:
        import threading

        self.api, self.args, self.err = api, args, err_console
        self.forecast: Any = None
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.waiting: frozenset[tuple[str, str]] = frozenset()
        self.at = 0.0
        self.failed = False
        self.events: list[dict] = []  # every Event of the last ``read``
        self.source = ""  # "served" (the twin's forecast), "pending" (not made yet) or "" (computed here)
        self.missing = 0  # waiting rows the served forecast does not cover (newer than it)
        if args.eta_replicas is None and args.eta_horizon is None:
            self._read_served()

    def served(self) -> bool:
        """Whether the column is the twin's own forecast (or waits for its first)."""
        return bool(self.source)

    def _read_served(self) -> None:
        from flexq.cli import kubeclient

        try:
            doc = kubeclient.served_forecast(self.api)
        except kubeclient.ClientError as exc:
            if exc.status != 503:
                raise
            self.source = "pending"
            return
        if doc is None:
            return
        self.source = "served"
        with self.lock:
            self.forecast = ServedForecast.of(doc)

    def _failed(self, exc: Exception) -> None:
        if not self.failed:  # the status is shown all the same, without the ETA
            self.err.print(f"note: no ETA column: {escape(str(exc))}", highlight=False)
        self.failed = True

    def read(self) -> Any:
        """The cluster-wide state the forecast is made from (None, said once, when it cannot be read)."""
        from flexq.cli import kubeclient
        from flexq.errors import FlexqError

        self.events = []
        try:
            return kubeclient.fetch_cluster_state(self.api, all_events=self.events)
        except (kubeclient.ClientError, FlexqError) as exc:
            self._failed(exc)
            return None

    def refresh(self, state: Any = None) -> None:
        """Make the forecast: from ``state`` when given (already read), else from a read of its own."""
        from flexq.cli import kubeclient
        from flexq.errors import FlexqError
        from flexq.eta import EtaConfig, estimate

        cfg = EtaConfig(
            replicas=self.args.eta_replicas or LOCAL_REPLICAS, horizon=self.args.eta_horizon or LOCAL_HORIZON
        )
        if state is None:
            state = self.read()
            if state is None:
                return
        try:
            fc = estimate(state, cfg)
        except (kubeclient.ClientError, FlexqError) as exc:
            self._failed(exc)
            return
        with self.lock:
            self.forecast = fc

    def maybe_refresh(self, rows: list[WorkloadRow], now: float) -> None:
        import threading

        from flexq.cli import kubeclient

        if self.source:  # the twin's: read again (a forecast it has made since, or its first)
            try:
                self._read_served()
            except kubeclient.ClientError as exc:
                self._failed(exc)
            return
        waiting = frozenset((r.namespace, r.workload) for r in rows if r.state in WAITING_STATES)
        due = waiting != self.waiting or now - self.at >= float(self.args.eta_interval)
        if not waiting or not due or (self.thread is not None and self.thread.is_alive()):
            return
        self.waiting, self.at = waiting, now
        self.thread = threading.Thread(target=self.refresh, name="flexq-status-eta", daemon=True)
        self.thread.start()

    def apply(self, rows: list[WorkloadRow]) -> list[WorkloadRow]:
        import math

        with self.lock:
            fc = self.forecast
        self.missing = 0
        if fc is None:
            return rows
        out = []
        for r in rows:
            # only a waiting job has an ETA: a forecast made while it waited says nothing once it has started
            j = fc.jobs.get(f"{r.namespace}/{r.workload}") if r.state in WAITING_STATES else None
            if j is None:
                self.missing += r.state in WAITING_STATES
                out.append(r)
                continue
            eta, within = eta_cells(j, fc.horizon)
            text = f"{eta} ({within})" if within not in ("", "-") else eta
            bucket = eta if j.median is None or j.cannot else str(round(math.log2(1 + j.median / 60.0)))
            out.append(dataclasses.replace(r, eta=text, eta_bucket=bucket))
        return out

    def say_source(self, rows: list[WorkloadRow], now: float) -> None:
        """A note on stderr when the column is the twin's forecast (its instant, and the waiting jobs newer than
        it), or when the twin has not made its first yet."""
        waiting = any(r.state in WAITING_STATES for r in rows)
        if self.source == "pending" and waiting:
            self.err.print(
                "note: no ETA column yet: the twin's ETA service is making its first forecast of this cluster "
                "(`flexq eta` computes one now)",
                highlight=False,
            )
        elif self.source == "served" and waiting and self.forecast is not None:
            fc = self.forecast
            ago = format_duration(max(0.0, now - fc.now))
            newer = (
                f"; {self.missing} waiting job(s) came after it: theirs comes with the next"
                if self.missing
                else ""
            )
            self.err.print(
                f"note: ETA from the twin's forecast of {format_time(fc.now)} ({ago} ago, {fc.replicas} forward "
                f"runs), counted from then{newer}",
                highlight=False,
            )


# the forward runs of an ETA column computed here (--eta-replicas): the fewest that bound an 80 % interval
LOCAL_REPLICAS = 9
LOCAL_HORIZON = 7 * 86400.0  # and how far ahead it looks (--eta-horizon)


@dataclasses.dataclass(frozen=True)
class ServedForecast:
    """A twin's forecast as ``GET /flexq/eta`` sends it (``flexq.eta.service.served_document``): its instant,
    horizon and replicas, and per waiting Workload (``namespace/name``) its ETA as a record with ``JobEta``'s
    fields and ``text`` (the words the twin made), counted from ``now``."""

    now: float
    horizon: float
    replicas: int
    jobs: dict[str, Any]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> ServedForecast:
        from types import SimpleNamespace

        return cls(
            now=float(doc.get("now") or 0.0),
            horizon=float(doc.get("horizon") or LOCAL_HORIZON),
            replicas=int(doc.get("replicas") or 0),
            jobs={k: SimpleNamespace(**v) for k, v in doc["jobs"].items() if isinstance(v, dict)},
        )
