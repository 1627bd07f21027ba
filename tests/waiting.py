"""Waiting in tests that drive a live (wall-clock) twin: poll until a condition holds, or fail saying what."""

from __future__ import annotations

import time
from typing import Any


def wait_for(pred: Any, timeout: float = 60.0, what: str = "") -> Any:
    """Poll ``pred`` every 0.2 s until it returns something truthy (returned), else fail after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
