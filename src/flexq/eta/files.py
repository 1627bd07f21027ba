"""``flexq simulate --from-cluster DIR``: a cluster's state and its fitted model, written as a study directory.

Owns ``write_study(state, model, cfg, out)``: the study of ``flexq.eta.scenario.build_study`` with the median of
each drawn time (one trace: variants and sweeps compare on it), as files ``flexq simulate`` reads and a person
edits —

- ``simulation.yaml``: the cluster (its node pools), the manifests, the capacity profile, the trace, ``until``
  (the warm-up and the ETA's horizon), one variant ``as-is`` (add your own to compare);
- ``queues.yaml``: Kueue's objects as the cluster has them, its priority classes and configuration, the
  namespaces and an empty ConfigMap for each one the jobs mount;
- ``capacity.yaml``: the fitted ``CapacityProfile``, its evidence in comments above it;
- ``trace.jsonl``: one line per job (running ones first, submitted at 0 for the rest of their run; at the
  warm-up's end the ones holding quota, then the pending ones in Kueue's order), each with ``jobs/<name>.yaml``
  as its template (the job's object as read, pinned to its flavors when it holds quota);
- ``README.md``: what the state was (running, waiting) and how to run it.

Every file goes through ``flexq.simulate.outputs`` (a real directory, no link written through).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from flexq.clock import format_duration, format_time
from flexq.eta.scenario import build_study
from flexq.forecast.config import EtaConfig
from flexq.forecast.jobs import entries
from flexq.forecast.model import FittedCapacity
from flexq.forecast.state import ClusterState
from flexq.simulate.outputs import output_dir, write_file

__all__ = ["write_study"]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in name)[:200]


def write_study(state: ClusterState, model: FittedCapacity, cfg: EtaConfig, out: Path) -> list[Path]:
    """Write the study (see the module docstring) into ``out``; the files written."""
    out = output_dir(Path(out), field="--from-cluster")
    listed = entries(state)  # read once: the study and the README's roles
    sc = build_study(state, model, cfg, None, listed)
    study, variant = sc.study, sc.study.variants[0]
    files: list[Path] = []
    jobs_dir = out / "jobs"
    jobs_dir.mkdir(exist_ok=True)
    lines = []
    for j in study.trace or []:
        row: dict[str, object] = {
            "submit": round(j.submit, 3),
            "queue": j.queue,
            "kind": j.kind,
            "name": j.name,
            "namespace": j.namespace,
            "run": round(j.run, 3),
        }
        if j.klass:
            row["class"] = j.klass
        if j.kind == "Workload":
            row["podsets"] = [
                {"name": p.name, "count": p.count, "requests": dict(p.requests)} for p in j.pod_sets
            ]
            if j.priority is not None:
                row["priority"] = str(j.priority)
        else:
            tname = f"jobs/{_safe(j.namespace)}--{_safe(j.name)}.yaml"
            files.append(write_file(out / tname, j.template))
            row["template"] = tname
        lines.append(json.dumps(row, sort_keys=False))
    files.append(write_file(out / "trace.jsonl", "\n".join(lines) + "\n"))
    files.append(write_file(out / "queues.yaml", variant.manifests[0].text))
    evidence = "\n".join(f"# {line}" for line in model.describe())
    files.append(
        write_file(
            out / "capacity.yaml",
            f"# The capacity model fitted to the cluster's history at {format_time(state.now)} (flexq eta).\n"
            f"# Its first rule is the warm-up: for {sc.warmup:g} s the jobs that were running get nodes at once;\n"
            "# then the fitted terms. Edit it freely (docs/capacity-profile.md).\n"
            f"{evidence}\n" + yaml.safe_dump(variant.capacity, sort_keys=False),
        )
    )
    sim = {
        "name": _safe(state.cluster.get("name") or "cluster") + "-from-cluster",
        "description": f"the cluster's state at {format_time(state.now)}, carried forward (flexq eta)",
        "seed": cfg.seed,
        **({"kueue": variant.kueue} if variant.kueue else {}),  # the release the cluster runs
        "until": f"{study.until:g}s",
        "cluster": variant.cluster,
        "manifests": ["queues.yaml"],
        "capacity": "capacity.yaml",
        "trace": "trace.jsonl",
        "variants": [{"name": "as-is", **({"settings": variant.settings} if variant.settings else {})}],
    }
    files.append(write_file(out / "simulation.yaml", yaml.safe_dump(sim, sort_keys=False)))
    es = {e.key: e for e in listed}
    roles: dict[str, list[str]] = {}
    for wl, role in sc.role_of.items():
        roles.setdefault(role, []).append(wl)
    readme = [
        f"# The cluster at {format_time(state.now)}",
        "",
        f"Written by `flexq simulate --from-cluster`. `flexq simulate {out.name}` carries this state forward "
        f"under the fitted capacity model: the first {sc.warmup:g} s re-create the running jobs; the state's "
        f"instant is t = {sc.warmup:g} s of the run; `until` is that plus {format_duration(cfg.horizon)}.",
        "",
    ]
    for role in ("running", "reserved", "pending"):
        keys = roles.get(role, [])
        readme.append(f"- {role}: {len(keys)}" + (f" ({', '.join(sorted(keys)[:20])})" if keys else ""))
    left = [k for k, e in es.items() if e.role == "deactivated"]
    if left:
        readme.append(f"- deactivated (left out: they do not run unless reactivated): {', '.join(left)}")
    readme += ["", "Run times (the median of each job's model):", ""]
    for k, t in sorted(sc.runs.items()):
        e = es.get(k)
        src = model.run_source(e) if e is not None else ""
        readme.append(f"- {k}: {format_duration(t)} ({src})")
    if state.notes:
        readme += ["", "Assumed while reading the cluster:", ""] + [f"- {n}" for n in state.notes]
    files.append(write_file(out / "README.md", "\n".join(readme) + "\n"))
    return files
