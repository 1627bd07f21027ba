"""Controller runtime: reconcilers, de-duplicating delaying work queues, the manager that wires watches
to queues, and the per-cluster context controllers receive. See ``controller`` and ``manager``."""

from flexq.runtime.controller import Context, Controller, EventRecorder, Result, Watch
from flexq.runtime.manager import Manager

__all__ = ["Context", "Controller", "EventRecorder", "Manager", "Result", "Watch"]
