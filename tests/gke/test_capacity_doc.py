"""Every profile example in docs/capacity-profile.md is a valid CapacityProfile, and the built-in ones match."""

import re
from pathlib import Path

import pytest
import yaml

from flexq.api.capacity_profile import CapacityProfile, harsh_profile, live_default_profile, tutorial_profile

DOC = Path(__file__).resolve().parents[2] / "docs" / "capacity-profile.md"
BLOCKS = [b for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S) if "spec:" in b]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example-{i + 1}" for i in range(len(BLOCKS))])
def test_doc_examples_validate(block: str) -> None:
    doc = yaml.safe_load(block)
    doc.setdefault("apiVersion", "twin.flexq.dev/v1alpha1")
    doc.setdefault("kind", "CapacityProfile")
    CapacityProfile.model_validate(doc)


def test_doc_shows_the_builtin_profiles() -> None:
    docs = [yaml.safe_load(b) for b in BLOCKS]
    specs = [d["spec"] for d in docs]
    assert live_default_profile()["spec"] in specs
    assert tutorial_profile()["spec"] in specs
    assert harsh_profile()["spec"] in specs
    assert len(BLOCKS) >= 5
