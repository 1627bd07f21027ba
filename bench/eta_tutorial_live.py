"""Issue 46, acceptance 0: the ETA on the tutorial itself, live, as a new user meets it.

Per Kueue release (0.19.2 and 0.20.7, side by side): ``flexq tutorial init`` and ``flexq up --executor simulated``
(the wall clock; pods simulated, no Ray), the tutorial's commands (``tutorial.sh``: its two RayJobs), then four more
jobs with ``flexq submit``. Right after the last submission, ``flexq eta -A -o json`` predicts every waiting job
(the median, the 80 % interval, the plan and what it waits for), and ``flexq simulate --from-cluster`` writes the
same state as a study that ``flexq simulate`` runs. Then the twin goes on until every job has started (its
Workload's PodsReady), and each prediction meets its start:

- the job's reading of its own state (what ``flexq eta`` says it waits for) against what the cluster showed;
- whether the start fell inside the 80 % interval;
- whether ``flexq simulate``'s run of the same state started the job within that interval too.

Prints one table per release and exits 1 if a start fell outside its interval. Several minutes of wall time
(the DWS waits and the jobs' minutes are real time here)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from flexq.clock import parse_time
from flexq.eta.calibration import Prediction

BIN = Path(sys.executable).parent
TRAIN = """import time
print("training", flush=True)
time.sleep(60)
"""


def sh(script: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def must(r: subprocess.CompletedProcess[str], what: str) -> str:
    if r.returncode != 0:
        raise SystemExit(f"{what} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def starts(cwd: Path, env: dict[str, str]) -> tuple[dict[str, float], set[str]]:
    """Each Workload's first PodsReady=True time (its start), by namespace/name; and the Workloads that will not
    start (deactivated, or finished without a start)."""
    out = json.loads(must(sh('eval "$(flexq env)"; kubectl get workloads -A -o json', cwd, env), "kubectl"))
    got, never = {}, set()
    for wl in out["items"]:
        key = f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"
        for c in (wl.get("status") or {}).get("conditions") or []:
            if c["type"] == "PodsReady" and c["status"] == "True":
                got[key] = parse_time(c["lastTransitionTime"])
            if c["type"] == "Finished" and c["status"] == "True":
                never.add(key)
        if (wl.get("spec") or {}).get("active") is False:
            never.add(key)
    return got, never - set(got)


def simulated_starts(study: Path, cwd: Path, env: dict[str, str]) -> dict[str, list[float | None]]:
    """``flexq simulate STUDY``: each job's start in the study's runs (seconds from the study's start, the
    instant ``--from-cluster`` read; None: it did not start), by the job column of ``jobs.csv``."""
    out = study / "out"
    must(sh(f"flexq simulate {study} --out {out} --no-what-if", cwd, env, timeout=900), "flexq simulate")
    got: dict[str, list[float | None]] = {}
    for path in out.rglob("jobs.csv"):
        with path.open() as f:
            for row in csv.DictReader(f):
                started = row.get("started") or ""
                got.setdefault(row["job"], []).append(float(started) if started not in ("", "None") else None)
    return got


def one_release(kueue: str, base: Path, jobs: int, keep: Path | None = None) -> dict[str, Any]:
    home = base / kueue
    work = home / "work"
    work.mkdir(parents=True)
    env = {
        **os.environ,
        "FLEXQ_HOME": str(home / "flexq"),
        "HOME": str(home),
        "PATH": f"{BIN}:{os.environ['PATH']}",
    }
    up = "flexq up --executor simulated" + (f" --kueue {kueue}" if kueue != "0.20.7" else "")
    must(sh(f"flexq tutorial init tutorial && {up}", work, env, timeout=300), "flexq up")
    tut = work / "tutorial"
    try:
        must(sh("bash tutorial.sh", tut, env, timeout=900), "tutorial.sh")
        (tut / "more.py").write_text(TRAIN)
        for i in range(jobs):
            must(
                sh(
                    'eval "$(flexq env)"; flexq submit more.py --queue user-queue '
                    f"--name more-{i + 1} --annotation twin.flexq.dev/run-seconds=180",
                    tut,
                    env,
                ),
                "flexq submit",
            )
            time.sleep(2)
        eta = json.loads(
            must(sh('eval "$(flexq env)"; flexq eta -A -o json', tut, env, timeout=900), "flexq eta")
        )
        at = parse_time(eta["observedAt"])
        study = home / "study"
        must(
            sh(f'eval "$(flexq env)"; flexq simulate --from-cluster {study}', tut, env, timeout=900),
            "from-cluster",
        )
        read_at = time.time()
        said = re.search(r"instant is t = ([0-9.]+) s", (study / "README.md").read_text())
        instant = float(said.group(1)) if said else 0.0
        sim = simulated_starts(study, tut, env)
        waiting = {f"{j['namespace']}/{j['workload']}": j for j in eta["jobs"]}
        deadline = time.time() + 3600
        seen: dict[str, float] = {}
        while time.time() < deadline:
            seen, never = starts(tut, env)
            if all(k in seen or k in never for k in waiting):
                break
            time.sleep(5)
        if keep is not None:  # what the cluster did, for a miss to be traced
            dump = keep / kueue
            dump.mkdir(parents=True, exist_ok=True)
            (dump / "eta.json").write_text(json.dumps(eta, indent=1))
            for kind in ("workloads", "provisioningrequests", "nodes", "events", "rayjobs", "pods"):
                r = sh(f'eval "$(flexq env)"; kubectl get {kind} -A -o json', tut, env)
                (dump / f"{kind}.json").write_text(r.stdout)
        rows = []
        for key, j in waiting.items():
            start = seen.get(key)
            got = None if start is None else start - at
            lo, hi = j.get("low"), j.get("high")
            if start is not None:  # the online correction's own rule, as the forecast records it
                horizon = float(eta.get("horizonSeconds") or 7 * 86400)
                p = Prediction.of(key, "", at, lo, j.get("median"), hi, horizon)
                inside = not j.get("cannot") and not p.miss(start)
            else:  # it will not start: covered when the interval reaches past the horizon
                inside = bool(j.get("cannot")) or hi is None
            job_name = j["job"].split("/", 1)[-1]
            sims = next((v for k, v in sim.items() if k.split("/")[-1] == job_name), [])
            # from the ETA's instant (about): the study's runs re-create the running jobs first, and its README
            # says at which second of a run the state's instant falls
            sims = [None if v is None else v - instant + (read_at - at) for v in sims]
            rows.append(
                {
                    "job": key,
                    "reads": j.get("now"),
                    "waits_for": j.get("waits_for"),
                    "plan": j.get("plan"),
                    "median": j.get("median"),
                    "low": lo,
                    "high": hi,
                    "started_after": got,
                    "inside": inside,
                    "simulate_waits": sims,
                    "interval": j.get("interval"),
                    "reasoning": j.get("reasoning"),
                }
            )
        return {"kueue": kueue, "eta_at": at, "rows": rows, "model": eta.get("model")}
    finally:
        sh("flexq down", tut, env, timeout=300)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", nargs="+", default=["0.19.2", "0.20.7"])
    ap.add_argument("--jobs", type=int, default=4, help="jobs submitted after the tutorial's two")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument(
        "--keep", type=Path, help="write each release's ETA and the cluster's objects at the end here"
    )
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="flexq-eta-live-") as tmp,
        ThreadPoolExecutor(len(args.releases)) as ex,
    ):
        results = list(ex.map(lambda k: one_release(k, Path(tmp), args.jobs, args.keep), args.releases))
    bad = 0
    for res in results:
        print(f"Kueue {res['kueue']}:")
        for line in res.get("model") or []:
            print(f"  model: {line}")
        for r in res["rows"]:

            def m(v: float | None) -> str:
                return "-" if v is None else f"{v / 60:.1f}m"

            sims = r["simulate_waits"]
            print(
                f"  {r['job']}: reads {r['reads']!r}; waits for {r['waits_for']}; plan {r['plan']}; "
                f"ETA {m(r['median'])} [{m(r['low'])}, {m(r['high'])}]; started after {m(r['started_after'])} "
                f"({'inside' if r['inside'] else 'OUTSIDE'} the interval); flexq simulate: "
                + (", ".join("never" if w is None else m(w) for w in sims) if sims else "no run of it")
            )
            bad += not r["inside"]
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
