"""Issue 34, item 4 and acceptance 3: a study's variant chooses the Kueue release, so `flexq simulate` answers "what
changes for our jobs if we move from 0.19 to 0.20". The study here is ``data/lost``'s tight DWS one (twelve one-slice
TPU Jobs, a DWS pool of one slice) on both releases; ``examples/tutorial-week/upgrade.yaml`` does the
same on the tutorial's week (its figures are in the README). The causes explain the difference (kueue#18785)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import flexq
from flexq.errors import InputError
from flexq.simulate import load_study

DATA = Path(__file__).with_name("data") / "lost"
ROOT = Path(__file__).resolve().parents[2]


def _study(tmp_path: Path, variants: list[dict]) -> Path:
    """``data/lost`` with three retries (the default) and CPU quota for three jobs at a time: a job evicted at the
    end of its back-off is not always admitted again at once."""
    dst = tmp_path / "upgrade"
    shutil.copytree(DATA, dst)
    queues = (dst / "queues-dws.yaml").read_text()
    queues = queues.replace("backoffLimitCount: 1", "backoffLimitCount: 3")
    queues = queues.replace("{name: cpu, nominalQuota: 1000}", "{name: cpu, nominalQuota: 3}")
    (dst / "queues-dws.yaml").write_text(queues)
    doc = yaml.safe_load((dst / "simulation.yaml").read_text())
    doc["variants"] = variants
    (dst / "simulation.yaml").write_text(yaml.safe_dump(doc))
    return dst


def test_a_variant_on_each_release_shows_what_the_upgrade_changes(tmp_path: Path) -> None:
    study = _study(
        tmp_path,
        [
            {"name": "kueue-0.19", "kueue": "0.19.2", "manifests": ["queues-dws.yaml"]},
            {"name": "kueue-0.20", "kueue": "0.20.7", "manifests": ["queues-dws.yaml"]},
        ],
    )
    result = flexq.simulate(study, out=tmp_path / "out", workers=1, plots=False)
    old, new = (result.documents[v]["replicas"][0] for v in ("kueue-0.19", "kueue-0.20"))
    assert old["kueue"] == {"release": "0.19.2", "v1beta1Converted": 0}
    assert new["kueue"] == {
        "release": "0.20.7",
        "v1beta1Converted": 5,
    }  # the v1beta1 file, as an upgrade keeps it
    # 0.20.7 loses the jobs whose requests keep failing (the retry count survives the back-off); 0.19.2 keeps them
    # retrying, holding their quota through each back-off
    assert new["jobs"]["lost"] > old["jobs"]["lost"]
    assert (
        new["jobs"]["lost"]
        == new["lostByCause"][
            "Deactivated (DeactivatedDueToAdmissionCheck): ProvisioningRequest NodepoolSizeReached"
        ]
    )
    held = next(c for c in old["causes"] if c["code"] == "RetryHoldsQuota")
    assert held["title"] == "Kueue 0.19.2: quota held through dws-prov's retry back-off"
    assert "keeps the quota until the back-off ends" in held["evidence"] and held["waitHours"] > 0
    assert "kept retrying" in held["evidence"]
    assert "kueue#18785" in held["change"] and "backoffLimitCount" in held["change"]
    kept = next(c for c in new["causes"] if c["code"] == "RetryLimitKept")
    # every lost job of 0.20.7 was ended by the retry limit (counted here, or under its requests' own failure)
    assert (
        kept["evidence"].startswith(f"{new['jobs']['lost']} jobs deactivated after")
        and "kueue#18785" in kept["evidence"]
    )
    assert kept["knobs"] == [{"kind": "retryLimit", "config": "dws-config", "value": 6}]
    assert not any(c["code"] == "RetryLimitKept" for c in old["causes"])
    assert not any(c["code"] == "RetryHoldsQuota" for c in new["causes"])


@pytest.mark.parametrize(
    ("where", "value", "field"), [("top", "0.21.0", "kueue"), ("variant", "latest", "variants[0].kueue")]
)
def test_an_unknown_release_is_refused_naming_the_field(
    tmp_path: Path, where: str, value: str, field: str
) -> None:
    variant = {"name": "v", "manifests": ["queues-dws.yaml"]}
    if where == "variant":
        variant["kueue"] = value
    study = _study(tmp_path, [variant])
    if where == "top":
        doc = yaml.safe_load((study / "simulation.yaml").read_text())
        doc["kueue"] = value
        (study / "simulation.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as err:
        load_study(study)
    assert f"({field})" in str(err.value) and 'supported values: "0.19.2", "0.20.7"' in str(err.value)


def test_the_tutorial_weeks_upgrade_study_reads() -> None:
    study = load_study(ROOT / "examples/tutorial-week/upgrade.yaml")
    assert [(v.name, v.kueue) for v in study.variants] == [
        ("kueue-0.19", "0.19.2"),
        ("kueue-0.20", "0.20.7"),
        ("kueue-0.20-retries", "0.20.7"),
    ]
