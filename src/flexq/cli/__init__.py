"""The ``flexq`` command (thin: parses arguments, calls the SDK or the Kubernetes API, renders with rich)."""

from flexq.cli.main import main

__all__ = ["main"]
