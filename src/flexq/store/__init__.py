"""The object store, its journal, selectors, patches and pod logs."""

from flexq.store.journal import Journal
from flexq.store.logs import PodLogs
from flexq.store.store import Store, Subscription, WatchEvent, clone, status_copy

__all__ = ["Journal", "PodLogs", "Store", "Subscription", "WatchEvent", "clone", "status_copy"]
