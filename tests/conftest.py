"""Shared fixtures for the whole suite."""

from __future__ import annotations

import pytest

from flexq import Twin


@pytest.fixture
def twin():
    """A virtual twin (in memory, simulated executors)."""
    t = Twin(clock="virtual")
    yield t
    t.close()


def pytest_configure(config):
    # every deep copy the twin makes (``flexq.api.jsoncopy.clone``, an orjson round trip) checks that what
    # it copies holds nothing the round trip would change (a tuple, an Enum, a UUID)
    from flexq.api.jsoncopy import strict_checks

    strict_checks()
