"""The object store, its journal, selectors, patches and pod logs."""

from flexq.store.journal import Journal
from flexq.store.logs import PodLogs
from flexq.store.objects import status_copy
from flexq.store.store import Store, check_writes, clone
from flexq.store.watch import Subscription, WatchEvent

__all__ = [
    "Journal",
    "PodLogs",
    "Store",
    "Subscription",
    "WatchEvent",
    "check_writes",
    "clone",
    "status_copy",
]
