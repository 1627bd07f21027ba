"""``flexq simulate --from-cluster DIR`` on a cluster with nothing running or waiting: the jobs it has finished as
the study's traffic, so the study runs.

Owns ``history_traffic(state)`` (each finished job with a RayJob or Job object: when it was submitted, relative to
the first, its object as it can be submitted again — ``flexq.eta.scenario.clean_job``, and without the node
selectors of the flavors Kueue gave it, which Kueue injects again —, its run time from its pods being ready to its
end, its outcome) and ``write_history_study(out, state, model, traffic)``, which replaces the state's (empty)
trace written by ``flexq.eta.files.write_study`` with those jobs: ``trace.jsonl`` and ``jobs/``, the ConfigMaps
their templates mount (empty keys, as for live jobs), the fitted capacity profile without the warm-up rule that
re-creates running jobs (there are none), and ``until`` — the study's horizon, over which its node pools are
billed — following the cluster's own history: from the first job's submission to the last one's end, plus a
margin for a replay whose jobs end later. The README and the command's output say so. A cluster that has run no
job gets no study: the error says what to do instead.

Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flexq.clock import format_duration, format_time, parse_time_or_none

__all__ = ["HistoryJob", "history_traffic", "write_history_study", "MARGIN"]

MARGIN = 600.0  # seconds after the history's span: a replay's jobs may wait or run a little longer


@dataclass(frozen=True)
class HistoryJob:
    kind: str
    name: str
    namespace: str
    queue: str
    created: float  # epoch seconds
    started: float
    finished: float
    outcome: str  # Succeeded or Failed
    template: dict[str, Any]

    @property
    def run(self) -> float:
        return max(1.0, self.finished - self.started)


def _cond(obj: dict, ctype: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == "True":
            return c
    return None


def _templates(obj: dict) -> list[dict]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        return [spec.get("template") or {}]
    rc = spec.get("rayClusterSpec") or {}
    out = [(rc.get("headGroupSpec") or {}).get("template") or {}]
    out += [(g or {}).get("template") or {} for g in rc.get("workerGroupSpecs") or []]
    if isinstance(spec.get("submitterPodTemplate"), dict):
        out.append(spec["submitterPodTemplate"])
    return out


def _unpin(obj: dict, wl: dict, flavor_labels: dict[str, dict[str, str]], queue_flavors: list[str]) -> None:
    """Drop from the templates the node selectors of the flavors Kueue admitted the job on (it injects them again
    when it admits the job in the study, on whichever flavor it then picks) — those of its ClusterQueue's flavors
    when the finished Workload no longer says which — and those its admission checks added."""
    st = wl.get("status") or {}
    assigned = [
        f
        for psa in (st.get("admission") or {}).get("podSetAssignments") or []
        for f in (psa.get("flavors") or {}).values()
    ]
    injected: list[tuple[str, str]] = []
    for flavor in sorted(set(assigned or queue_flavors)):
        injected += list(flavor_labels.get(flavor, {}).items())
    for chk in st.get("admissionChecks") or []:
        for upd in chk.get("podSetUpdates") or []:
            injected += list((upd.get("nodeSelector") or {}).items())
    for t in _templates(obj):
        sel = (t.get("spec") or {}).get("nodeSelector")
        if not isinstance(sel, dict):
            continue
        for k, v in list(sel.items()):
            if (k, v) in injected:
                del sel[k]
        if not sel:
            t["spec"].pop("nodeSelector", None)


def _mounts(obj: dict) -> set[tuple[str, str, tuple[str, ...]]]:
    """(namespace, ConfigMap, keys) each template mounts."""
    ns = (obj.get("metadata") or {}).get("namespace", "default")
    out = set()
    for t in _templates(obj):
        for v in (t.get("spec") or {}).get("volumes") or []:
            cm = (v or {}).get("configMap")
            if isinstance(cm, dict) and cm.get("name"):
                keys = tuple(sorted(str(i.get("key")) for i in cm.get("items") or [] if i.get("key")))
                out.add((ns, str(cm["name"]), keys))
    return out


def _outcome(wl: dict, job: dict) -> str:
    reason = (_cond(wl, "Finished") or {}).get("reason", "")
    if reason in ("Succeeded", "Failed"):
        return reason
    st = job.get("status") or {}
    if job.get("kind") == "RayJob":
        return (
            "Failed"
            if st.get("jobStatus") == "FAILED" or st.get("jobDeploymentStatus") == "Failed"
            else "Succeeded"
        )
    return "Failed" if _cond(job, "Failed") else "Succeeded"


def history_traffic(state: Any) -> list[HistoryJob]:
    """The cluster's finished jobs (a Workload Kueue marked Finished, whose RayJob or Job is still there), oldest
    first."""
    from flexq.eta.scenario import clean_job
    from flexq.semantics.owners import controller_owner

    flavor_labels = {
        (f.get("metadata") or {}).get("name", ""): dict((f.get("spec") or {}).get("nodeLabels") or {})
        for f in state.flavors
    }
    cq_of_lq = {
        f"{(q.get('metadata') or {}).get('namespace', '')}/{(q.get('metadata') or {}).get('name', '')}": (
            q.get("spec") or {}
        ).get("clusterQueue", "")
        for q in state.localqueues
    }
    flavors_of_cq = {
        (cq.get("metadata") or {}).get("name", ""): [
            f.get("name", "")
            for g in (cq.get("spec") or {}).get("resourceGroups") or []
            for f in g.get("flavors") or []
        ]
        for cq in state.clusterqueues
    }
    out = []
    for wl in state.workloads:
        fin = _cond(wl, "Finished")
        ref = controller_owner(wl)
        md = wl.get("metadata") or {}
        if fin is None or not ref or ref.get("kind") not in ("RayJob", "Job"):
            continue
        job = state.job(ref["kind"], md.get("namespace", ""), ref.get("name", ""))
        created = parse_time_or_none(md.get("creationTimestamp"))
        finished = parse_time_or_none(fin.get("lastTransitionTime"))
        if job is None or created is None or finished is None:
            continue
        began = _cond(wl, "PodsReady") or _cond(wl, "Admitted")
        started = parse_time_or_none((began or {}).get("lastTransitionTime")) or created
        obj = clean_job(job)
        lq = f"{md.get('namespace', '')}/{(wl.get('spec') or {}).get('queueName', '')}"
        _unpin(obj, wl, flavor_labels, flavors_of_cq.get(cq_of_lq.get(lq, ""), []))
        out.append(
            HistoryJob(
                kind=ref["kind"],
                name=ref.get("name", ""),
                namespace=md.get("namespace", "default"),
                queue=(wl.get("spec") or {}).get("queueName", ""),
                created=created,
                started=min(max(started, created), finished),
                finished=finished,
                outcome=_outcome(wl, job),
                template=obj,
            )
        )
    return sorted(out, key=lambda j: (j.created, j.namespace, j.name))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in name)[:200]


def write_history_study(
    out: Path, state: Any, model: Any, traffic: list[HistoryJob]
) -> tuple[list[Path], str]:
    """Replace the empty trace of the study ``flexq.eta.files.write_study`` wrote in ``out`` by ``traffic`` (see
    the module docstring). Returns the files written and one line saying what the horizon and the billing
    follow."""
    from flexq.simulate.outputs import write_file

    t0 = traffic[0].created
    end = max(j.finished for j in traffic)
    span = end - t0
    until = span + MARGIN
    files: list[Path] = []
    (out / "jobs").mkdir(exist_ok=True)
    rows, mounts = [], set()
    for j in traffic:
        tname = f"jobs/{_safe(j.namespace)}--{_safe(j.name)}.yaml"
        files.append(write_file(out / tname, yaml.safe_dump(j.template, sort_keys=False)))
        mounts |= _mounts(j.template)
        row = {
            "submit": round(j.created - t0, 3),
            "queue": j.queue,
            "kind": j.kind,
            "name": j.name,
            "namespace": j.namespace,
            "run": round(j.run, 3),
            "outcome": j.outcome,
            "template": tname,
        }
        rows.append(json.dumps(row, sort_keys=False))
    files.append(write_file(out / "trace.jsonl", "\n".join(rows) + "\n"))
    queues = list(yaml.safe_load_all((out / "queues.yaml").read_text()))
    have = {
        ((d.get("metadata") or {}).get("namespace", ""), (d.get("metadata") or {}).get("name", ""))
        for d in queues
        if isinstance(d, dict) and d.get("kind") == "ConfigMap"
    }
    for ns, cm, keys in sorted(mounts):
        if (ns, cm) not in have:
            queues.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": cm, "namespace": ns},
                    "data": {k: "" for k in keys},
                }
            )
    files.append(
        write_file(out / "queues.yaml", yaml.safe_dump_all([d for d in queues if d], sort_keys=False))
    )
    profile = model.profile(None)
    spec = profile["spec"]
    spec["rules"] = [r for r in spec.get("rules") or [] if "during" not in (r.get("match") or {})]
    evidence = "\n".join(f"# {line}" for line in model.describe())
    files.append(
        write_file(
            out / "capacity.yaml",
            f"# The capacity model fitted to the cluster's history at {format_time(state.now)} (flexq eta).\n"
            "# Edit it freely (docs/capacity-profile.md).\n"
            + f"{evidence}\n"
            + yaml.safe_dump(profile, sort_keys=False),
        )
    )
    sim = yaml.safe_load((out / "simulation.yaml").read_text())
    pools = ", ".join(
        f"{p.get('name')} ({p.get('nodes')} node{'s' if p.get('nodes') != 1 else ''} all along)"
        if p.get("nodes") and not (p.get("autoscaling") or {}).get("max")
        else f"{p.get('name')} (as its nodes come and go)"
        for p in sim.get("cluster", {}).get("nodePools") or []
    )
    horizon = (
        f"the cluster's own history: {len(traffic)} finished job(s) from {format_time(t0)} to {format_time(end)} "
        f"({format_duration(span)}); the study runs {format_duration(until)} (that span plus "
        f"{format_duration(MARGIN)} for jobs that end later in a replay), and its node pools are billed over it"
        + (f": {pools}" if pools else "")
    )
    sim["description"] = (
        f"the jobs the cluster finished ({format_time(t0)} to {format_time(end)}), as its traffic"
    )
    sim["until"] = f"{until:g}s"
    files.append(write_file(out / "simulation.yaml", yaml.safe_dump(sim, sort_keys=False)))
    readme = [
        f"# The cluster's history at {format_time(state.now)}",
        "",
        "Written by `flexq simulate --from-cluster` on a cluster with no job running or waiting: the traffic is the "
        f"jobs it finished. `flexq simulate {out.name}` runs them again, each submitted when it was (relative to "
        "the first), running as long as it ran once its pods were ready, under the capacity model fitted to the "
        "cluster's history; add variants to compare.",
        "",
        f"Horizon and billing: {horizon}.",
        "",
        "The jobs (their objects in jobs/, as they can be submitted again: without what Kueue wrote into them when "
        "it admitted them, which it writes again):",
        "",
    ]
    readme += [
        f"- {j.kind} {j.namespace}/{j.name}: submitted at +{format_duration(j.created - t0)}, ran "
        f"{format_duration(j.run)}, {j.outcome}"
        for j in traffic
    ]
    if state.notes:
        readme += ["", "Assumed while reading the cluster:", ""] + [f"- {n}" for n in state.notes]
    files.append(write_file(out / "README.md", "\n".join(readme) + "\n"))
    return list(dict.fromkeys(files)), horizon
