"""``flexq demo``: the tutorial end to end in this process, with an embedded twin and no servers.

Owns: the demo's steps in the tutorial's order — GKE cluster and both node pools through the GKE REST API
in-process (the bodies gcloud sends), the flex-start check, the Kueue configuration (``dws-tpu-queue.yaml``
after ``envsubst``), the ``jax-train-script`` ConfigMap, two RayJobs (``JOB_ID`` 1 and 2) — then a live view
of every workload (plan, queue state, provisioning, waiting time, cost, from ``flexq.cli.status``) until both
jobs end, each job's training output, a closing summary and what to try next (``NEXT_STEPS``).
``--simulated`` runs on the virtual clock with the simulated executor (seconds of wall time); the default runs
real Ray on the real clock. There the jobs carry ``RAY_DEDUP_LOGS=0`` in their runtime environment: Ray's log
deduplication otherwise folds the four workers' ``Epoch 20``, ``Epoch 30``… into one ``Epoch 40 [repeated 18x
across cluster]`` printed after the run's result, so the output read out of order; each job's panel shows the
rank-0 worker's training lines as it printed them, then the run's result and Ray's verdict
(``flexq.cli.ray_output.training_lines``).
``run_demo`` returns a ``DemoResult`` (for tests); ``run`` maps it to an exit status.

Must not import flexq.http.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from flexq.cli import tutorial
from flexq.cli.args import duration, examples
from flexq.cli.ray_output import training_lines
from flexq.cli.status import StatusSnapshot, WorkloadRow, fmt_cost, workload_rows
from flexq.cli.views import STATE_STYLE, status_table
from flexq.cli.views import FitTable as Table
from flexq.clock import format_duration
from flexq.errors import CloudError

if TYPE_CHECKING:
    from flexq.twin import Twin

__all__ = [
    "DemoOptions",
    "DemoResult",
    "JobOutcome",
    "run_demo",
    "run",
    "PLAN_NAMES",
    "NEXT_STEPS",
]

PROJECT = "flexq-demo"
JOBS = ("rayjob-tpu-v6e-dws-1", "rayjob-tpu-v6e-dws-2")
WORKER_GROUP = "tpu-group"
PLAN_NAMES = {"on-demand": "plan A (on-demand)", "dws": "plan B (DWS flex-start)"}
TERMINAL_STATES = ("Succeeded", "Failed", "Deactivated")
REAL_DWS_WAIT = 60.0  # seconds DWS takes to grant plan B in the real-Ray demo (see `run`)
RUN_SECONDS = "180"  # the simulated executor's training time per job (DESIGN.md §5 annotation)
NEXT_STEPS = (
    "What to try next:\n"
    "  the live tutorial, typed as published:  flexq tutorial init tutorial && cd tutorial, then\n"
    '                                          flexq up && eval "$(flexq env)" && bash tutorial.sh\n'
    "  (gcloud and kubectl drive the twin; `flexq status -w` follows the jobs, `flexq dashboard` shows them)\n"
    "  plan capacity for a team's week:        flexq simulate examples/tutorial-week --until 12h\n"
    "  the same story in seconds:              flexq demo --simulated --capacity tutorial"
)


@dataclass
class DemoOptions:
    """How to run the demo."""

    simulated: bool = False
    timeout: float = (
        900.0  # wall seconds the jobs may take (real clock; generous: a loaded CI machine is slow)
    )
    virtual_limit: float = 8 * 86400  # twin seconds the jobs may take (virtual clock)
    live: bool | None = None  # None: a live view when the console is a terminal
    log_lines: int = 12  # lines of each job's output to show
    capacity: str = "fast"  # "fast" (the live default) or "tutorial" (hours of DWS queueing; simulated)
    dws_wait: float | None = None  # seconds DWS takes to grant plan B's nodes ("fast" capacity only)


@dataclass
class JobOutcome:
    """Where one of the tutorial's jobs ran and how it went."""

    name: str
    flavor: str  # flavor of the TPU worker group
    state: str
    waited: float
    cost: float
    provisioning: str
    output: str


@dataclass
class DemoResult:
    """What a demo run ended with."""

    jobs: list[JobOutcome] = field(default_factory=list)
    elapsed: float = 0.0  # twin seconds from the first request to the end
    error: str = ""

    @property
    def story_holds(self) -> bool:
        """Job 1 on plan A, job 2 on plan B, both trained."""
        flavors = [j.flavor for j in self.jobs]
        return (
            not self.error
            and flavors == ["on-demand", "dws"]
            and all(j.state == "Succeeded" for j in self.jobs)
        )


class _Demo:
    """One run of the demo over one twin: the steps, the watching, the report."""

    def __init__(self, twin: Twin, opts: DemoOptions, console: Console) -> None:
        self.twin, self.opts, self.console = twin, opts, console
        self.t0 = twin.now()
        self.states: dict[str, str] = {}
        self.provisioning: dict[str, str] = {}  # job -> last ProvisioningRequest state seen
        self.seen_events: set[tuple[str, str]] = set()

    # -- time -----------------------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.twin.now() - self.t0

    def tick(self) -> None:
        """Let the twin run a little: the next due event on the virtual clock, half a second on the real one."""
        if not self.opts.simulated:
            self.twin.advance(0.5)
            return
        loop = self.twin.core.loop
        nxt = loop.next_time()
        step = 1.0 if nxt is None else min(60.0, max(1.0, nxt - loop.now()))
        self.twin.advance(step)

    def say(self, text: str) -> None:
        self.console.print(f"[dim]{format_duration(self.elapsed()):>6}[/] {text}")

    # -- GKE ------------------------------------------------------------------------------------------------
    def gke_call(self, method: str, path: str, body: dict | None = None) -> dict:
        return self.twin.gke(method, path, body)

    def wait_operation(self, op: dict, what: str) -> None:
        path = f"/v1/projects/{PROJECT}/locations/{tutorial.TUTORIAL_ENV['ZONE']}/operations/{op['name']}"
        deadline = self.twin.now() + 3600
        while op.get("status") != "DONE":
            if self.twin.now() > deadline:
                raise RuntimeError(f"{what}: operation {op['name']} did not finish")
            self.tick()
            op = self.gke_call("GET", path)
        if op.get("error"):
            raise RuntimeError(f"{what} failed: {op['error'].get('message')}")

    def create_infrastructure(self) -> None:
        env = tutorial.TUTORIAL_ENV
        path, body = tutorial.create_cluster_request(PROJECT)
        self.say(
            f"gcloud container clusters create {env['CLUSTER_NAME']} --machine-type=n2-standard-16 "
            f"--location={env['ZONE']} --addons=RayOperator --enable-image-streaming"
        )
        self.wait_operation(self.gke_call("POST", path, body), "cluster create")
        for dws in (False, True):
            path, body = tutorial.create_node_pool_request(PROJECT, dws=dws)
            pool = body["nodePool"]["name"]
            flags = " --enable-queued-provisioning --flex-start" if dws else ""
            self.say(
                f"gcloud container node-pools create {pool} --machine-type=ct6e-standard-4t "
                f"--tpu-topology=4x4 --enable-autoscaling --num-nodes=0 --max-nodes=4{flags}"
            )
            self.wait_operation(self.gke_call("POST", path, body), f"node pool {pool}")
        got = self.gke_call("GET", f"{path}/{env['DWS_NODEPOOL']}")
        flex = got.get("config", {}).get("flexStart")
        self.say(
            f'node-pools describe {env["DWS_NODEPOOL"]} --format="get(config.flexStart)": '
            f"[bold]{'True' if flex else flex}[/]"
        )
        self.twin.cluster(env["CLUSTER_NAME"])

    # -- Kubernetes ---------------------------------------------------------------------------------------------
    def configure_and_submit(self) -> None:
        release = self.twin.core.settings.kueue
        self.say(
            f"Kueue {release.tag} is already installed in the twin (the tutorial's helm step is not needed)"
        )
        # Kueue 0.20 and later serve kueue.x-k8s.io/v1beta2 only: the tutorial's v1beta1 file, converted
        if release.serves_v1beta1:  # the release's switch, asked once
            name, api, how = tutorial.QUEUE_FILE, "v1beta1", ""
        else:
            name, api = tutorial.QUEUE_FILE_V1BETA2, "v1beta2"
            how = f"  (the tutorial's {tutorial.QUEUE_FILE} through flexq convert)"
        objs = self.twin.apply(tutorial.queue_yaml(api=api))
        self.say(
            f"envsubst < {name} | kubectl apply -f -  ->  "
            + ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in objs)
            + how
        )
        self.twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "jax-train-script", "namespace": "default"},
                "data": {"train.py": tutorial.train_script()},
            }
        )
        self.say("kubectl create configmap jax-train-script --from-file=train.py")
        for i in (1, 2):
            text = tutorial.rayjob_yaml(i)
            self.twin.apply(self._simulated(text) if self.opts.simulated else self._undeduplicated(text))
            self.say(f"Submitted Job {i}: rayjob-tpu-v6e-dws-{i}")
            self.twin.advance(2)  # the tutorial's `sleep 2`

    @staticmethod
    def _undeduplicated(text: str) -> dict:
        """The tutorial's RayJob with ``RAY_DEDUP_LOGS=0`` in its runtime env (see the module docstring)."""
        import yaml

        job = yaml.safe_load(text)
        runtime_env = yaml.safe_load(job["spec"].get("runtimeEnvYAML") or "") or {}
        runtime_env.setdefault("env_vars", {})["RAY_DEDUP_LOGS"] = "0"
        job["spec"]["runtimeEnvYAML"] = yaml.safe_dump(runtime_env, sort_keys=False)
        return job

    @classmethod
    def _simulated(cls, text: str) -> dict:
        job = cls._undeduplicated(text)
        job["metadata"].setdefault("annotations", {})["twin.flexq.dev/run-seconds"] = RUN_SECONDS
        return job

    # -- watching -----------------------------------------------------------------------------------------------
    def snapshot(self) -> tuple[list[WorkloadRow], list[dict], list[dict], list[dict]]:
        t = self.twin
        nodes = t.list("Node")
        snap = StatusSnapshot(
            workloads=t.list("Workload", "default"),
            provisioning_requests=t.list("ProvisioningRequest", "default"),
            nodes=nodes,
            flavors=t.list("ResourceFlavor"),
        )
        return workload_rows(snap, t.now()), t.list("RayJob", "default"), nodes, t.list("Event", "default")

    def note_changes(self, rows: list[WorkloadRow], events: list[dict]) -> None:
        for e in events:  # warnings are what a user needs to see at once
            key = (e.get("reason", ""), e.get("message", ""))  # once per distinct warning, not per pod
            if e.get("reason") == "FailedScheduling":  # expected while the autoscaler adds nodes
                continue
            if e.get("type") == "Warning" and key not in self.seen_events:
                self.seen_events.add(key)
                obj = e.get("involvedObject") or {}
                self.say(
                    f"[yellow]warning[/] {obj.get('kind', '')}/{obj.get('name', '')}: "
                    f"{e.get('reason', '')}: {e.get('message', '')}"
                )
        for r in rows:
            name = r.job.split("/", 1)[-1] or r.workload
            if r.provisioning:
                self.provisioning[name] = r.provisioning
            shown = f"{r.state}|{r.plan_text}|{r.provisioning}"
            if self.states.get(name) != shown:
                self.states[name] = shown
                style = STATE_STYLE.get(r.state, "")
                extra = f" on {r.plan_text}" if r.plan else ""
                why = f" — {r.why}" if r.why and r.state not in ("Running",) else ""
                self.say(f"{name}: [{style}]{r.state}[/]{extra}{why}")

    def view(
        self, rows: list[WorkloadRow], rayjobs: list[dict], nodes: list[dict], events: list[dict]
    ) -> Group:
        title = f"flexq demo — twin time {format_duration(self.elapsed())}"
        jobs = Table(show_header=True, header_style="bold", box=None)
        for col in ("RAYJOB", "JOB STATUS", "DEPLOYMENT", "RAY CLUSTER"):
            jobs.add_column(col)
        for j in rayjobs:
            st = j.get("status") or {}
            jobs.add_row(
                j["metadata"]["name"],
                st.get("jobStatus", ""),
                st.get("jobDeploymentStatus", ""),
                st.get("rayClusterName", ""),
            )
        pools: dict[str, list[int]] = {}
        for n in nodes:
            pool = (n["metadata"].get("labels") or {}).get("cloud.google.com/gke-nodepool", "?")
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions") or []
            )
            pools.setdefault(pool, [0, 0])[0 if ready else 1] += 1
        pool_text = Text(
            "nodes: "
            + ", ".join(
                f"{p} {r} ready" + (f" +{u} starting" if u else "") for p, (r, u) in sorted(pools.items())
            )
        )
        recent = sorted(
            events, key=lambda e: (e.get("lastTimestamp") or e.get("eventTime") or "", e["metadata"]["name"])
        )[-6:]
        ev = Text(
            "\n".join(
                f"{e.get('reason', '')}: {e.get('message', '')} "
                f"({(e.get('involvedObject') or {}).get('kind', '')}/"
                f"{(e.get('involvedObject') or {}).get('name', '')})"
                for e in recent
            )
            or "-"
        )
        return Group(
            status_table(rows, title=title, provisioning=True),
            jobs,
            pool_text,
            Panel(ev, title="recent events"),
        )

    def finished(self, rows: list[WorkloadRow], rayjobs: list[dict]) -> bool:
        done_jobs = {
            j["metadata"]["name"]
            for j in rayjobs
            if (j.get("status") or {}).get("jobDeploymentStatus") in ("Complete", "Failed")
        }
        for name in JOBS:
            mine = [r for r in rows if r.job.split("/", 1)[-1] == name and r.state != "Replaced"]
            if name not in done_jobs and not any(r.state in TERMINAL_STATES for r in mine):
                return False
        return True

    def watch(self) -> list[WorkloadRow]:
        budget = self.opts.virtual_limit if self.opts.simulated else self.opts.timeout
        deadline = self.twin.now() + budget
        live_on = self.opts.live if self.opts.live is not None else self.console.is_terminal
        rows, rayjobs, nodes, events = self.snapshot()
        live = (
            Live(
                self.view(rows, rayjobs, nodes, events),
                console=self.console,
                auto_refresh=False,
                transient=True,
            )
            if live_on
            else None
        )
        try:
            if live:
                live.start()
            while True:
                self.tick()
                rows, rayjobs, nodes, events = self.snapshot()
                self.note_changes(rows, events)
                if live:
                    live.update(self.view(rows, rayjobs, nodes, events), refresh=True)
                if self.finished(rows, rayjobs):
                    break
                if self.twin.now() > deadline:
                    raise TimeoutError(
                        f"the jobs did not finish within {format_duration(budget)} of twin time"
                    )
        finally:
            if live:
                live.stop()
        self.console.print(
            status_table(rows, title=f"workloads at twin time {format_duration(self.elapsed())}")
        )
        return rows

    def diagnose(self) -> None:
        """After a failed run: the end of the log of each pod whose container failed or keeps restarting."""
        shown = 0
        for pod in self.twin.list("Pod", "default"):
            statuses = (pod.get("status") or {}).get("containerStatuses") or []
            bad = [
                c
                for c in statuses
                if c.get("restartCount", 0) > 0
                or (c.get("state") or {}).get("terminated", {}).get("exitCode", 0) != 0
            ]
            if not bad or shown >= 2:
                continue
            shown += 1
            name = pod["metadata"]["name"]
            try:
                text = self.twin.runtime.logs.read("default", name, bad[0].get("name"))
            except Exception as exc:  # the log may be gone with the pod
                text = f"(no log: {exc})"
            tail = "\n".join(text.splitlines()[-15:]) or "(empty)"
            self.console.print(
                Panel(
                    Text(tail),
                    title=f"failing pod {name} ({bad[0].get('name')})",
                    title_align="left",
                    border_style="red",
                )
            )

    # -- results ------------------------------------------------------------------------------------------------
    def output_of(self, job: str) -> str:
        try:
            return self.twin.logs(f"job/{job}")
        except Exception as exc:  # no submitter pod (the job never started), or its log is gone
            return f"(no output: {exc})"

    def outcomes(self, rows: list[WorkloadRow]) -> list[JobOutcome]:
        out = []
        for name in JOBS:
            mine = [r for r in rows if r.job.split("/", 1)[-1] == name and r.state != "Replaced"]
            r = mine[-1] if mine else None
            out.append(
                JobOutcome(
                    name=name,
                    flavor=(r.flavor_of(WORKER_GROUP) or "") if r else "",
                    state=r.state if r else "missing",
                    waited=r.waited if r else 0.0,
                    cost=sum(x.cost for x in mine),
                    provisioning=(r.provisioning if r else "") or self.provisioning.get(name, ""),
                    output=self.output_of(name),
                )
            )
        return out

    def show_outputs(self, jobs: list[JobOutcome]) -> None:
        for j in jobs:
            lines, title = training_lines(j.output, self.opts.log_lines)
            self.console.print(
                Panel(
                    Text("\n".join(lines) or "(empty)"),
                    title=f"kubectl logs job/{j.name}  ({title})",
                    title_align="left",
                )
            )

    def summary(self, result: DemoResult) -> None:
        t = Table(title="summary", header_style="bold")
        for col in ("JOB", "PLAN", "STATE", "WAITED", "PROVISIONING", "COST"):
            t.add_column(col)
        for j in result.jobs:
            t.add_row(
                j.name,
                PLAN_NAMES.get(j.flavor, j.flavor or "-"),
                Text(j.state, style=STATE_STYLE.get(j.state, "")),
                format_duration(j.waited),
                j.provisioning.partition(" (")[0] or "-",
                fmt_cost(j.cost),
            )
        self.console.print(t)
        if result.story_holds:
            self.console.print(
                "[bold green]As in the tutorial:[/] job 1 ran on plan A (on-demand); plan A's "
                "quota was then in use, so job 2 fell back to plan B (DWS flex-start) and ran "
                "once its ProvisioningRequest was provisioned."
            )
        else:
            self.console.print(
                "[bold red]The run did not tell the tutorial's story[/] "
                + (
                    f"({result.error})"
                    if result.error
                    else "(expected job 1 on on-demand and job 2 on dws, both Succeeded)"
                )
            )
        self.console.print(
            f"twin time {format_duration(result.elapsed)}; total cost "
            f"{fmt_cost(sum(j.cost for j in result.jobs))}"
        )


def capacity_profile(opts: DemoOptions) -> dict | None:
    """The CapacityProfile the demo installs, or None for the twin's built-in live default."""
    from flexq.api.capacity_profile import live_default_profile, tutorial_profile

    if opts.capacity == "tutorial":
        if not opts.simulated:
            raise ValueError("--capacity tutorial queues DWS for hours: use it with --simulated")
        return tutorial_profile()
    if opts.dws_wait is None:
        return None
    profile = live_default_profile()
    profile["spec"]["defaults"]["queueWait"] = {"fixed": f"{max(1, round(opts.dws_wait))}s"}
    return profile


def run_demo(
    opts: DemoOptions, console: Console | None = None, make_twin: Callable[..., Twin] | None = None
) -> DemoResult:
    """Run the whole demo; never raises for a failed run (the result says what went wrong)."""
    # the twin is loaded here, when the demo runs: `flexq status` and every other command build the parser that
    # holds the demo's, and must not pay for every controller (a second of import)
    from flexq import Twin
    from flexq.api.scheme import ADMIT
    from flexq.loop import RealtimeLoop

    console = console or Console()
    make = make_twin or Twin
    profile = capacity_profile(opts)  # refuse bad options before anything starts
    twin = (
        make(clock="virtual", executor="simulated") if opts.simulated else make(clock="real", executor="ray")
    )
    if profile is not None:  # the project store serves twin.flexq.dev profiles; write it on the loop's thread
        loop = twin.core.loop
        create = lambda: twin.core.project.create(profile, admission=ADMIT)  # noqa: E731
        loop.call_sync(create) if isinstance(loop, RealtimeLoop) else create()
    demo = _Demo(twin, opts, console)
    result = DemoResult()
    rows: list[WorkloadRow] = []
    try:
        demo.create_infrastructure()
        demo.configure_and_submit()
        rows = demo.watch()
    except (CloudError, RuntimeError, TimeoutError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        console.print(f"[bold red]demo stopped:[/] {result.error}")
        try:
            demo.diagnose()
            rows = demo.snapshot()[0]
        except Exception:  # the twin itself is broken; report what we had
            rows = []
    try:
        result.jobs = demo.outcomes(rows)
        result.elapsed = demo.elapsed()
        demo.show_outputs(result.jobs)
        demo.summary(result)
        console.print(NEXT_STEPS, markup=False, highlight=False)
    finally:
        twin.close()
    return result


def run(args: argparse.Namespace) -> int:
    """``flexq demo [--simulated] [--timeout S]``: 0 when both jobs trained where the tutorial says."""
    opts = DemoOptions(simulated=bool(getattr(args, "simulated", False)))
    if getattr(args, "timeout", None):
        opts.timeout = float(args.timeout)
    if getattr(args, "no_live", False):
        opts.live = False
    opts.capacity = getattr(args, "capacity", None) or "fast"
    opts.dws_wait = getattr(args, "dws_wait", None)
    if opts.dws_wait is None and not opts.simulated and opts.capacity == "fast":
        # Real Ray: stagger the two clusters' start-up (ten Ray nodes starting at once on two cores can miss
        # Ray's 30 s node-registration deadline); job 2 still waits for DWS while job 1 trains.
        opts.dws_wait = REAL_DWS_WAIT
    if opts.capacity == "tutorial" and not opts.simulated:
        Console(stderr=True).print("--capacity tutorial queues DWS for hours of twin time: add --simulated")
        return 2
    if not opts.simulated:
        from flexq.errors import require_extra

        require_extra("ray", "flexq demo (real training; `flexq demo --simulated` needs nothing more)")
    from flexq.cli.views import console  # piped output gets a wide page, as every command's does

    result = run_demo(opts, console)
    return 0 if result.story_holds else 1


# -- the command line -------------------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """``flexq demo``."""
    d = sub.add_parser(
        "demo",
        help="run the tutorial end to end in this process",
        description="The tutorial end to end in this process, no servers: the GKE cluster and both node "
        "pools, Kueue's configuration, two RayJobs training the tutorial's train.py on real Ray "
        "(job 1 on plan A, on-demand; job 2 on plan B, DWS flex-start), a live view, each job's output.",
        epilog=examples(
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
    d.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    return int(run(args))
