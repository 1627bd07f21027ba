"""policy/v1 PodDisruptionBudget, served so flexq fallback's manifests (and a user's) apply to the twin as to GKE
(issue 50): validated as ``ValidatePodDisruptionBudgetSpec`` does; stored, not enforced (no Eviction API)."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.errors import Invalid


def _pdb(name: str, **spec: object) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, **spec},
    }


@pytest.fixture(scope="module")
def twin() -> Twin:
    t = Twin(clock="virtual")
    yield t
    t.close()


@pytest.mark.parametrize("spec", [{"maxUnavailable": 1}, {"minAvailable": "50%"}, {"minAvailable": 0}, {}])
def test_a_valid_budget_is_stored(twin: Twin, spec: dict) -> None:
    name = f"ok-{abs(hash(str(spec))) % 10**6}"
    twin.apply(_pdb(name, **spec))
    assert twin.get("poddisruptionbudget", name, "default")["spec"] == {
        "selector": {"matchLabels": {"app": "x"}},
        **spec,
    }


@pytest.mark.parametrize(
    ("spec", "field", "text"),
    [
        ({"minAvailable": 1, "maxUnavailable": 1}, "spec.minAvailable", "cannot be both set"),
        ({"maxUnavailable": "150%"}, "spec.maxUnavailable", "must not be greater than 100%"),
        ({"minAvailable": -1}, "spec.minAvailable", "must be greater than or equal to 0"),
        ({"minAvailable": "half"}, "spec.minAvailable", "a valid percent string"),
    ],
)
def test_an_invalid_budget_is_refused_naming_the_field(twin: Twin, spec: dict, field: str, text: str) -> None:
    with pytest.raises(Invalid) as exc:
        twin.apply(_pdb("bad", **spec))
    assert exc.value.causes[0].field == field and text in exc.value.causes[0].message, exc.value.message
    assert twin.try_get("poddisruptionbudget", "bad", "default") is None
