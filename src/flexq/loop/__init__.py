"""The event loop: one heap of timers, virtual or real time. See ``core`` and ``realtime``."""

from flexq.loop.core import EventLoop, Timer, tune_gc
from flexq.loop.realtime import RealtimeLoop
from flexq.loop.rng import Rngs

__all__ = ["EventLoop", "RealtimeLoop", "Rngs", "Timer", "tune_gc"]
