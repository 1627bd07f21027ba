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
