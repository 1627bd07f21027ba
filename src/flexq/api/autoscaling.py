"""autoscaling kinds (being written)."""

from flexq.api.registry import KindInfo

KINDS: list[KindInfo] = []
