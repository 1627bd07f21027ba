"""flexq simulate --sweep: knobs turned on the study's own manifests and cluster, every point on the same seeds,
the Pareto front of (jobs lost, censored mean wait, cost), the recommended point and its diff; bad sweep files
stopped with the file and the field named."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from flexq.cli.main import main
from flexq.errors import InputError
from flexq.simulate import load_study, run_sweep
from flexq.simulate.change import apply_point
from flexq.simulate.sweep import load_sweep, pareto, points

DATA = Path(__file__).with_name("data") / "lost"
SWEEP = {
    "base": "dws-tight",
    "knobs": [
        {"name": "dws-max", "kind": "poolMax", "pool": "dws-pool", "values": [2, 8]},
        {"name": "retries", "kind": "retryLimit", "config": "dws-config", "values": [1, 6]},
    ],
}


def _study(tmp_path: Path) -> Path:
    dst = tmp_path / "lost"
    shutil.copytree(DATA, dst)
    return dst


def test_the_sweep_finds_a_point_that_loses_no_job_and_says_what_changed(tmp_path) -> None:
    study = load_study(_study(tmp_path))
    res = run_sweep(study, SWEEP, out=tmp_path / "out", workers=1, plots=False)
    rows = {r["point"]: r for r in res.rows}
    assert list(rows)[:5] == ["base-dws-tight", "p00", "p01", "p02", "p03"]
    # then the changes the base's causes suggest that no grid point already is, run as points of their own
    extra = list(rows)[5:]
    assert extra and all(rows[p]["cause"] for p in extra) and all(r["cause"] is None for r in res.rows[:5])
    base = rows["base-dws-tight"]
    assert base["jobsLost"] == 9
    # the same seeds for every point: the point equal to the base gives the base's figures
    same = rows["p00"]  # dws-max=2, retries=1: the study's own values
    assert (same["jobsLost"], same["waitCensoredMeanSeconds"], same["costUSD"]) == (
        base["jobsLost"],
        base["waitCensoredMeanSeconds"],
        base["costUSD"],
    )
    best = rows[res.overall]
    grid_best = min(res.rows[1:5], key=lambda r: (r["jobsLost"], r["waitCensoredMeanSeconds"]))
    assert best["jobsLost"] == 0 and (grid_best["dws-max"], grid_best["retries"]) == (8, 6)
    assert best["waitCensoredMeanSeconds"] < base["waitCensoredMeanSeconds"] and best["pareto"]
    assert res.overall in res.headline
    # the recommended point ranks first among those no dearer than the base (per unit of finished work, as
    # the base lost jobs)
    rec = rows[res.recommended]
    per_work = lambda r: r["costUSD"] / r["goodput"]  # noqa: E731
    assert per_work(rec) <= per_work(base) + 1e-9
    cheaper = [r for r in res.rows if per_work(r) <= per_work(base) + 1e-9 or r["costUSD"] <= base["costUSD"]]
    assert min((r["jobsLost"], r["waitCensoredMeanSeconds"]) for r in cheaper) == (
        rec["jobsLost"],
        rec["waitCensoredMeanSeconds"],
    )
    # nothing on the front is beaten on all three figures by another point
    front = [r for r in res.rows if r["pareto"]]
    for f in front:
        for r in res.rows:
            key = ("jobsLost", "waitCensoredMeanSeconds", "costUSD")
            assert not (all(r[k] <= f[k] for k in key) and any(r[k] < f[k] for k in key))
    assert res.diff.startswith("---") and "a/cluster" in res.diff
    out = tmp_path / "out"
    table = list(csv.DictReader(io.StringIO((out / "sweep.csv").read_text())))
    assert [r["point"] for r in table] == list(rows) and {"dws-max", "retries", "pareto"} <= set(table[0])
    assert table[1]["dws-max"] == "2"  # plain values, not JSON in CSV
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["recommended"] == res.recommended and len(doc["points"]) == len(rows)
    assert (out / "best.diff").read_text() == res.diff


def test_points_apply_every_knob_kind_to_the_variant(tmp_path) -> None:
    study = load_study(_study(tmp_path))
    spec = load_sweep(
        {
            "base": "dws-tight",
            "knobs": [
                {
                    "kind": "nominalQuota",
                    "clusterQueue": "cq",
                    "flavor": "dws",
                    "resource": "google.com/tpu",
                    "values": [64],
                },
                {"kind": "podsReadyTimeout", "values": ["12m"]},
                {"kind": "fallback", "values": [{"grace_seconds": 30}]},
                {"kind": "setting", "path": "fallback.backoff_seconds", "values": [600]},
                {
                    "kind": "field",
                    "object": "ClusterQueue/cq",
                    "path": "spec.queueingStrategy",
                    "values": ["StrictFIFO"],
                },
                {"kind": "cluster", "path": "nodePools[name=on-demand-pool].autoscaling.max", "values": [6]},
            ],
        },
        study,
    )
    (pt,) = points(spec)
    v = apply_point(study, study.variant("dws-tight"), spec.knobs, pt, "p0")
    docs = [d for m in v.manifests for d in yaml.safe_load_all(m.text)]
    cq = next(d for d in docs if d["kind"] == "ClusterQueue")
    res = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert {r["name"]: r["nominalQuota"] for r in res}["google.com/tpu"] == 64
    assert cq["spec"]["queueingStrategy"] == "StrictFIFO"
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    assert "timeout: 12m" in cm["data"]["controller_manager_config.yaml"]
    lq = next(d for d in docs if d["kind"] == "LocalQueue")
    assert lq["metadata"]["labels"]["fallback.flexq.dev/enabled"] == "true"
    assert v.settings["fallback"] == {"grace_seconds": 30, "backoff_seconds": 600}
    pool = next(p for p in v.cluster["nodePools"] if p["name"] == "on-demand-pool")
    assert pool["autoscaling"]["max"] == 6
    # the study's own variant is untouched
    base = study.variant("dws-tight")
    assert "fallback" not in base.settings and "StrictFIFO" not in "".join(m.text for m in base.manifests)


def test_random_search_draws_distinct_points_reproducibly(tmp_path) -> None:
    study = load_study(_study(tmp_path))
    spec = load_sweep(
        {
            "search": {"random": 7, "seed": 3},
            "knobs": [
                {"kind": "poolMax", "pool": "dws-pool", "values": list(range(2, 12))},
                {"kind": "retryLimit", "config": "dws-config", "values": [1, 2, 3, 4]},
            ],
        },
        study,
    )
    a, b = points(spec), points(spec)
    assert a == b and len(a) == 7 and len({json.dumps(p, sort_keys=True) for p in a}) == 7


@pytest.mark.parametrize(
    ("sweep", "message", "field"),
    [
        ({"knobs": [{"kind": "poolMax", "values": [2]}]}, "needs 'pool'", "knobs[0]"),
        ({"knobs": [{"kind": "poolsize", "pool": "x", "values": [2]}]}, "Input should be", "knobs[0].kind"),
        ({"knobs": [{"kind": "poolMax", "pool": "x", "values": []}]}, "at least 1", "knobs[0].values"),
        ({"knobs": [{"kind": "poolMax", "pool": "x", "values": [-1]}]}, "whole number", "knobs[0].values[0]"),
        (
            {"knobs": [{"kind": "poolMax", "pool": "x", "values": [2]}], "colour": 1},
            "unknown field 'colour'",
            "colour",
        ),
        ({"base": "nope", "knobs": [{"kind": "fallback", "values": [True]}]}, "no variant named", "base"),
        (
            {
                "knobs": [{"kind": "poolMax", "pool": "x", "values": list(range(40))}] * 1
                + [
                    {"name": f"k{i}", "kind": "retryLimit", "config": "c", "values": list(range(40))}
                    for i in range(2)
                ]
            },
            "use search: {random: N}",
            "search",
        ),
    ],
)
def test_bad_sweep_files_are_named(tmp_path, sweep, message, field) -> None:
    study = load_study(_study(tmp_path))
    with pytest.raises(InputError) as info:
        load_sweep(sweep, study)
    assert message in info.value.message and info.value.field == field


def test_a_knob_on_a_pool_the_cluster_lacks_stops_before_running(tmp_path, capsys) -> None:
    study = _study(tmp_path)
    (study / "sweep.yaml").write_text(
        yaml.safe_dump({"knobs": [{"kind": "poolMax", "pool": "gpu-pool", "values": [4]}]})
    )
    code = main(["simulate", str(study), "--sweep", str(study / "sweep.yaml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "no node pool 'gpu-pool'" in err and "knobs" in err


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=12)
)
def test_pareto_front_is_exactly_the_undominated_points(values) -> None:
    rows = [
        {"point": f"p{i}", "jobsLost": a, "waitCensoredMeanSeconds": b, "costUSD": c}
        for i, (a, b, c) in enumerate(values)
    ]
    front = pareto(rows)
    assert front  # a finite set always has an undominated point
    for r in rows:
        beaten = any(
            all(o[k] <= r[k] for k in ("jobsLost", "waitCensoredMeanSeconds", "costUSD"))
            and any(o[k] < r[k] for k in ("jobsLost", "waitCensoredMeanSeconds", "costUSD"))
            for o in rows
        )
        assert (r["point"] in front) == (not beaten)
