"""Controller runtime: reconcilers, de-duplicating delaying work queues, the manager that wires watches
to queues, and the per-cluster context controllers receive. See ``controller`` and ``manager``."""

from flexq.runtime.controller import Context, Controller, EventRecorder, Result, Watch
from flexq.runtime.manager import Manager
from flexq.runtime.settings import ClusterSettings, TwinSettings

__all__ = ["ClusterSettings", "Context", "Controller", "EventRecorder", "Manager", "Result", "TwinSettings", "Watch"]
