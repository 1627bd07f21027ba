"""Shared fixtures for the whole suite."""

from __future__ import annotations

import pytest

from flexq import Twin


@pytest.fixture
def twin():
    """A virtual twin (in memory, simulated executors), running the default Kueue (0.20.7: v1beta2 only)."""
    t = Twin(clock="virtual")
    yield t
    t.close()


@pytest.fixture
def twin_v1beta1():
    """A virtual twin running Kueue 0.19.2, the last release that serves kueue.x-k8s.io/v1beta1: for tests of
    v1beta1 manifests (the tutorial's as published) and of the API server converting them."""
    t = Twin(clock="virtual", kueue="0.19.2")
    yield t
    t.close()


def pytest_configure(config):
    # every deep copy the twin makes (``flexq.api.jsoncopy.clone``, an orjson round trip) checks that what
    # it copies holds nothing the round trip would change (a tuple, an Enum, a UUID)
    from flexq.api.jsoncopy import strict_checks

    strict_checks()
