"""Lost jobs first, waits censored: a variant that loses jobs never ranks above one that loses fewer, whatever
its waits over the jobs that did start; every output carries both waits; reruns are byte-identical.

The study (``data/lost``): twelve one-slice TPU Jobs. ``dws-tight`` sends them all to a DWS pool of one slice
with a ProvisioningRequestConfig that retries once: Kueue deactivates the jobs whose requests fail with
``NodepoolSizeReached``, and the few that start wait little. ``on-demand`` queues them for an on-demand slice:
nobody is lost, everybody waits longer. Ranked on the started jobs' waits alone, ``dws-tight`` would win."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import flexq
from flexq.cli.main import main
from flexq.simulate.results import headline, ranking

DATA = Path(__file__).with_name("data") / "lost"


def _study(tmp_path: Path) -> Path:
    dst = tmp_path / "lost"
    shutil.copytree(DATA, dst)
    return dst


def test_a_variant_that_loses_jobs_never_ranks_first_on_waits(tmp_path) -> None:
    study = _study(tmp_path)
    result = flexq.simulate(study, out=tmp_path / "a", workers=1, plots=False)
    tight, od = result.documents["dws-tight"], result.documents["on-demand"]
    # the trap: over the jobs that started, dws-tight waited less
    assert tight["aggregate"]["waitToStartMean"]["mean"] < od["aggregate"]["waitToStartMean"]["mean"]
    assert tight["jobsLost"]["mean"] > 0 and od["jobsLost"]["mean"] == 0
    assert tight["waitCensoredMean"]["mean"] > od["waitCensoredMean"]["mean"]
    assert [r["variant"] for r in result.comparison["ranking"]] == ["on-demand", "dws-tight"]
    assert result.comparison["headline"].startswith("on-demand ranks first: no job lost")
    assert "dws-tight: 9 jobs lost" in result.comparison["headline"]
    # why they were lost, from the run's own evidence
    rep = tight["replicas"][0]
    listed = rep["lostJobs"]["listed"]
    assert rep["lostJobs"]["count"] == len(listed) == 9
    assert all(j["reason"] == "DeactivatedDueToAdmissionCheck" for j in listed)
    assert all("NodepoolSizeReached" in j["cause"] for j in listed)
    assert rep["lostByCause"] == {
        "Deactivated (DeactivatedDueToAdmissionCheck): ProvisioningRequest NodepoolSizeReached": 9
    }
    top = tight["causes"][0]
    assert top["code"] == "NodepoolSizeReached" and top["jobsLost"] == 9
    assert "dws-pool sat at its max of 2 nodes" in top["evidence"]
    # each change it suggests was run on the same seeds: the pool's max is shown with what it measured, the
    # retry limit (no better here: the pool stays full) is dropped from what is shown and kept as tried
    (shown,) = top["options"]
    assert shown["knobs"][0]["kind"] == "poolMax" and shown["knobs"][0]["value"] > 2
    assert shown["tested"]["helps"] and shown["tested"]["whatIf"]["jobsLost"] < 9
    assert shown["tested"]["effect"] in top["change"] and "raise dws-pool's max nodes" in top["change"]
    assert [k["kind"] for o in top["tried"] for k in o["knobs"]] == ["retryLimit"]
    assert not top["tried"][0]["tested"]["helps"]
    # where the wait went: the censored wait is split whole, the lost jobs' part as "deactivated"
    split = rep["waitSplit"]
    assert split["deactivated"]["jobHours"] > 0 and split["dws"]["jobHours"] > 0
    assert (
        abs(sum(b["meanMinutes"] for b in split.values()) - rep["waitToStartCensored"]["mean"] / 60)
        < 0.01 * rep["waitToStartCensored"]["mean"] / 60
    )
    assert rep["goodput"]["resource"] == "google.com/tpu" and rep["goodput"]["ratio"] == 0.25
    assert od["replicas"][0]["goodput"]["ratio"] == 1.0
    # jobs.csv: both waits, the lost rows first with their reason and cause
    rows = list(csv.DictReader(io.StringIO((tmp_path / "a" / "jobs.csv").read_text())))
    assert {"wait_censored", "wait_start", "lost", "reason", "cause", "wait_deactivated"} <= set(rows[0])
    mine = [r for r in rows if r["variant"] == "dws-tight"]
    assert [r["lost"] for r in mine] == ["true"] * 9 + ["false"] * 3
    horizon = rep["horizonSeconds"]
    for r in mine[:9]:
        assert (
            r["wait_start"] == "" and abs(float(r["wait_censored"]) - (horizon - float(r["submit"]))) < 1e-3
        )
    for r in mine[9:]:
        assert r["wait_censored"] == r["wait_start"] != ""
    # <variant>.json leads with the jobs lost (keys in reading order, not sorted)
    doc = json.loads((tmp_path / "a" / "dws-tight.json").read_text())
    keys = list(doc)
    assert keys.index("jobsLost") < keys.index("aggregate") < keys.index("replicas")
    assert list(doc["replicas"][0])[:5] == ["replica", "seed", "jobs", "lostJobs", "lostByCause"]
    assert {"waitToStartCensored", "waitToStart"} <= set(doc["replicas"][0])


def test_reruns_are_byte_identical(tmp_path) -> None:
    study = _study(tmp_path)
    flexq.simulate(study, out=tmp_path / "a", workers=1, plots=False)
    flexq.simulate(study, out=tmp_path / "b", workers=2, plots=False)
    for name in ("jobs.csv", "dws-tight.json", "on-demand.json", "comparison.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_the_terminal_leads_with_the_headline_and_the_lost_jobs(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the phrases below are not folded
    study = _study(tmp_path)
    assert main(["simulate", str(study), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress"]) == 0
    text = capsys.readouterr().out
    first = text.index("on-demand ranks first")
    assert (
        first
        < text.index("Variants, best first")
        < text.index("9 job(s) lost")
        < text.index("what cost the most")
    )
    assert (
        "NodepoolSizeReached" in text and "dws-pool full" in text and "raise dws-pool's max nodes" in text
    ), text


def _doc(lost: float, wait: float, cost: float) -> dict:
    agg = {
        "replicas": 1,
        "jobsLost": {"mean": lost},
        "waitCensoredMean": {"mean": wait},
        "waitToStartMean": {"mean": wait},
        "costUSD": {"mean": cost},
    }
    return {"aggregate": agg, "lostByCause": {"Deactivated": int(lost)} if lost else {}}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),
            st.floats(0, 1e6, allow_nan=False),
            st.floats(0, 1e5, allow_nan=False),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_ranking_puts_fewer_lost_jobs_first_whatever_the_waits(variants) -> None:
    docs = {f"v{i}": _doc(*v) for i, v in enumerate(variants)}
    order = ranking(docs)
    lost = [docs[n]["aggregate"]["jobsLost"]["mean"] for n in order]
    assert lost == sorted(lost)
    for a, b in zip(order, order[1:], strict=False):
        if lost[order.index(a)] == lost[order.index(b)]:
            assert (
                docs[a]["aggregate"]["waitCensoredMean"]["mean"]
                <= docs[b]["aggregate"]["waitCensoredMean"]["mean"]
            )
    assert headline(docs).startswith(f"{order[0]} ranks first")
