"""Tables and the plot of the fallback study, from the three result directories `flexq simulate` wrote.

    for s in a b c; do
      flexq simulate examples/fallback-study/scenario-$s.yaml --out results-$s
      flexq simulate examples/fallback-study/scenario-$s-race.yaml --out results-$s-race
    done
    python examples/fallback-study/report.py results-a+results-a-race results-b+results-b-race \
        results-c+results-c-race --png docs/images/fallback-study.png

Prints one Markdown table per scenario (mean and p95 wait to start, cost, evictions by Kueue reason, jobs
finished) and the ratios of flexq's policy to the tutorial's config and to the best upstream mechanism.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

VARIANTS = ["tutorial", "pods-ready", "plan-a-check", "race", "compute-class", "flexq"]
UPSTREAM = ["pods-ready", "plan-a-check", "race", "compute-class"]


def load(dirs: str) -> dict[str, dict]:
    """``dirs``: one result directory, or several joined by ``+`` (scenario-X.yaml's and scenario-X-race.yaml's)."""
    out = {}
    for v in VARIANTS:
        found = [Path(d) / f"{v}.json" for d in dirs.split("+") if (Path(d) / f"{v}.json").exists()]
        if not found:
            continue
        doc = json.loads(found[0].read_text(encoding="utf-8"))
        agg, rep = doc["aggregate"], doc["replicas"][0]
        ev: dict[str, int] = {}
        for reasons in rep["evictions"].values():
            for r, n in reasons.items():
                ev[r] = ev.get(r, 0) + n
        out[v] = {
            "mean": agg["waitToStartMean"]["mean"] / 60,
            "p95": agg["waitToStartP95"]["mean"] / 60,
            "cost": agg["costUSD"]["mean"],
            "evictions": ev,
            "finished": int(agg["succeeded"]["mean"] + agg["failed"]["mean"]),
            "jobs": rep["jobs"]["total"],
        }
    return out


def table(name: str, res: dict[str, dict]) -> str:
    lines = [
        f"**{name}**",
        "",
        "| variant | wait to start, mean (min) | p95 (min) | cost (USD) | evictions (Kueue reason) "
        "| jobs finished |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for v, r in res.items():
        ev = ", ".join(f"{k} {n}" for k, n in sorted(r["evictions"].items())) or "none"
        lines.append(
            f"| {v} | {r['mean']:.1f} | {r['p95']:.1f} | {r['cost']:,.0f} | {ev} | "
            f"{r['finished']}/{r['jobs']} |"
        )
    t, f = res["tutorial"], res["flexq"]
    up = [v for v in UPSTREAM if v in res]
    best_mean = min(up, key=lambda v: res[v]["mean"])
    best_p95 = min(up, key=lambda v: res[v]["p95"])
    lines += [
        "",
        f"flexq / tutorial: mean wait {f['mean'] / max(t['mean'], 1e-9):.2f}x, cost "
        f"{f['cost'] / t['cost']:.3f}x; best upstream on mean: {best_mean} ({res[best_mean]['mean']:.1f} min), "
        f"on p95: {best_p95} ({res[best_p95]['p95']:.1f} min)",
        "",
    ]
    return "\n".join(lines)


def plot(all_res: dict[str, dict[str, dict]], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), dpi=80)
    colors = ["#888888", "#6baed6", "#9e9ac8", "#fdae6b", "#74c476", "#e6550d"]
    metrics = [
        ("mean", "mean wait to start (min)"),
        ("p95", "p95 wait to start (min)"),
        ("cost", "cost (USD)"),
    ]
    width = 0.13
    for ax, (key, label) in zip(axes, metrics, strict=True):
        for i, v in enumerate(VARIANTS):
            xs = [j + (i - 2.5) * width for j in range(len(all_res))]
            ax.bar(
                xs,
                [res[v][key] if v in res else 0 for res in all_res.values()],
                width,
                label=v,
                color=colors[i],
            )
        ax.set_xticks(range(len(all_res)), list(all_res))
        ax.set_title(label, fontsize=10)
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "results", nargs=3, help="the result directories of scenarios (a), (b), (c) (each DIR or DIR+RACEDIR)"
    )
    ap.add_argument("--png", default=None)
    args = ap.parse_args()
    names = ["(a) no stock-out", "(b) 2 h stock-outs 3x a day", "(c) almost no on-demand"]
    all_res = {n.split()[0]: load(d) for n, d in zip(names, args.results, strict=True)}
    for n, res in zip(names, all_res.values(), strict=True):
        print(table(n, res))
    if args.png:
        plot(all_res, Path(args.png))


if __name__ == "__main__":
    main()
