"""Entry point of the ``flexq`` command: sub-commands up, down, env, demo, status, submit, logs, simulate."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from flexq import __version__

console = Console()

DEMO_PLAN = """flexq demo runs the tutorial "Optimize AI training on TPUs with DWS and Kueue" end to end,
in this process, with no servers and no cloud:
  1. GKE cluster tpu-cluster (n2-standard-16 default pool, RayOperator addon)
  2. node pools on-demand-pool (plan A) and dws-pool (plan B: --flex-start --enable-queued-provisioning),
     ct6e-standard-4t, topology 4x4, 0..4 nodes
  3. Kueue: flavors default-cpu / on-demand / dws, cluster-queue with the dws-prov admission check
  4. ConfigMap jax-train-script with the tutorial's train.py
  5. RayJobs rayjob-tpu-v6e-dws-1 and -2: job 1 lands on plan A, job 2 falls back to plan B (DWS)
  6. real training on a local Ray cluster with emulated v6e hosts; live view of plan, queue, provisioning,
     waiting time and cost
"""


def _cmd_demo(args: argparse.Namespace) -> int:
    try:
        from flexq.cli import demo  # type: ignore[attr-defined]
    except ImportError:
        console.print(DEMO_PLAN)
        console.print("[yellow]The embedded demo is not wired yet in this build; this is what it will do.[/]")
        return 0
    return int(demo.run(args))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flexq", description="A local twin of GKE + Kueue + KubeRay (DWS fallback).")
    p.add_argument("--version", action="version", version=f"flexq {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run the tutorial end to end in this process")
    d.add_argument("--simulated", action="store_true", help="simulate training instead of running Ray")
    d.set_defaults(func=_cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
