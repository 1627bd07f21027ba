"""Deletion propagation and garbage collection, as the API server's registry and the garbage collector of
kube-controller-manager do them together, run synchronously inside one store write.

Owns: the ``orphan`` and ``foregroundDeletion`` finalizers a delete sets (``deletionFinalizersForGarbage
Collection`` in the registry's ``store.go``); marking an object that keeps finalizers (``deletionTimestamp``,
``deletionGracePeriodSeconds: 0``, generation bumped); and the collector's three jobs (``garbagecollector.go``):
- attempt to delete a dependent: its owners are *solid* (alive), *dangling* (absent, looked up by kind,
  namespace and name, with the uid compared: the "virtual node" check) or *waiting* (being deleted in the
  foreground). With a solid owner it stays and loses its dangling and waiting references; without one it
  is deleted, in the foreground if a waiting owner has it and it has dependents of its own;
- an owner deleting in the foreground (``foregroundDeletion`` and a ``deletionTimestamp``) loses that
  finalizer, and goes, once no dependent with ``blockOwnerDeletion: true`` is left;
- an owner being orphaned (``orphan``) takes its reference off each dependent, then loses that finalizer.
Upstream these steps are asynchronous; here a store call runs them to a fixed point before it commits, so
they cost no time on any clock and all their watch events carry the call's resourceVersions, in order.
A step that waits on another writer (a dependent's own finalizer) resumes when that writer's update comes.
Must not import ``flexq.runtime``, domain packages or ``flexq.http``; it reads the store's tables.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from flexq.api.registry import KindInfo
from flexq.clock import format_time
from flexq.errors import NotFound

if TYPE_CHECKING:
    from flexq.store.store import Store

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

Key = tuple[str, str]
Ref = tuple[str, Key]  # (kind key, key)
Op = tuple[str, KindInfo, Key, dict]


def deleting_dependents(obj: dict) -> bool:
    """Is ``obj`` being deleted in the foreground (waiting for its blocking dependents)?"""
    m = obj["metadata"]
    return bool(m.get("deletionTimestamp")) and FOREGROUND in (m.get("finalizers") or ())


def gc_finalizers(finalizers: list[str], policy: str | None) -> list[str]:
    """The finalizers a delete with ``policy`` leaves: an explicit policy sets ``orphan`` or
    ``foregroundDeletion`` (and drops the other); none keeps what the object already asks for."""
    if policy is None:
        return list(finalizers)
    out = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if policy == "Orphan":
        out.append(ORPHAN)
    elif policy == "Foreground":
        out.append(FOREGROUND)
    return out


def _refs(obj: dict) -> list[dict]:
    return obj["metadata"].get("ownerReferences") or []


class Txn:
    """The writes of one store call, not committed yet: reads see them, in order. ``ops`` is what to commit."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ops: list[Op] = []
        self._view: dict[Ref, dict | None] = {}
        self._new_children: dict[str, set[Ref]] = {}  # owner uid -> dependents written in this call
        self._queue: deque[tuple[str, Ref]] = deque()
        self._queued: set[tuple[str, Ref]] = set()
        self._deferred: set[Ref] = set()
        self._namespaces: set[str] = set()

    # -- reading through the pending writes --------------------------------------------------------------
    def get(self, ref: Ref) -> dict | None:
        if ref in self._view:
            return self._view[ref]
        return self.store._objs.get(ref[0], {}).get(ref[1])

    def children(self, uid: str) -> list[tuple[Ref, dict]]:
        """The live dependents of the object with ``uid``, in key order."""
        cands = set(self.store._children.get(uid, ())) | self._new_children.get(uid, set())
        out = []
        for ref in sorted(cands):
            dep = self.get(ref)
            if dep is not None and any(r.get("uid") == uid for r in _refs(dep)):
                out.append((ref, dep))
        return out

    def owner(self, dep_ref: Ref, ref: dict) -> dict | None:
        """The object ``ref`` names, if it exists with that uid; raises LookupError when that cannot be
        decided (a kind this cluster does not serve, a cluster-scoped dependent naming a namespaced owner),
        as the collector then leaves the dependent alone."""
        try:
            info = self.store.registry.by_gvk(ref.get("apiVersion") or "", ref.get("kind") or "")
        except NotFound:
            raise LookupError(ref) from None
        if info.key in self.store.disabled:
            raise LookupError(ref)
        if info.namespaced and not dep_ref[1][0]:
            raise LookupError(ref)
        owner = self.get((info.key, (dep_ref[1][0] if info.namespaced else "", ref.get("name") or "")))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        return owner

    # -- writing ------------------------------------------------------------------------------------------
    def put(self, typ: str, info: KindInfo, key: Key, obj: dict) -> None:
        self.ops.append((typ, info, key, obj))
        self._view[(info.key, key)] = None if typ == "DELETED" else obj
        if typ != "DELETED":
            for r in _refs(obj):
                self._new_children.setdefault(r.get("uid", ""), set()).add((info.key, key))

    def enqueue(self, job: str, ref: Ref) -> None:
        if (job, ref) not in self._queued:
            self._queued.add((job, ref))
            self._queue.append((job, ref))

    def written(self, info: KindInfo, key: Key, old: dict | None, new: dict) -> None:
        """After an ADDED or MODIFIED ``new`` (``old`` before it): what the collector must look at again."""
        if old is None or _refs(old) != _refs(new):
            self.enqueue("attempt", (info.key, key))
            for r in _refs(old) if old is not None else ():
                self._owner_changed(r)

    def resync(self, info: KindInfo, key: Key, obj: dict) -> None:
        """Look at a stored object afresh (on start): its owners, and what its finalizers ask for."""
        self.enqueue("attempt", (info.key, key))
        if obj["metadata"].get("deletionTimestamp"):
            finalizers = obj["metadata"].get("finalizers") or ()
            if ORPHAN in finalizers:
                self.enqueue("orphan", (info.key, key))
            if FOREGROUND in finalizers:
                self.enqueue("foreground", (info.key, key))

    def _owner_changed(self, r: dict) -> None:
        """A dependent lost (or stopped blocking on) the owner ``r``: a waiting owner may go now."""
        ref = self.store._by_uid.get(r.get("uid", ""))
        if ref is not None:
            self.enqueue("foreground", ref)

    def delete(self, info: KindInfo, key: Key, obj: dict, policy: str | None) -> None:
        """The API server's delete: set the finalizers ``policy`` asks for, then remove the object, or mark
        it (Terminating) while finalizers remain and hand it to the collector."""
        m = obj["metadata"]
        finalizers = gc_finalizers(m.get("finalizers") or [], policy)
        if not finalizers and not self._holds_content(info, key):
            self.remove(info, key, obj)
            return
        if m.get("deletionTimestamp") and set(finalizers) == set(m.get("finalizers") or []):
            return
        marked = now_marked(self.store, obj)
        if finalizers:
            marked["metadata"]["finalizers"] = finalizers
        else:
            marked["metadata"].pop("finalizers", None)
        if info.kind == "Namespace":
            marked["status"] = {**(marked.get("status") or {}), "phase": "Terminating"}
        self.put("MODIFIED", info, key, marked)
        self.marked(info, key, marked)

    def marked(self, info: KindInfo, key: Key, obj: dict) -> None:
        """``obj`` (just written) carries a deletionTimestamp: start what its finalizers ask of the collector."""
        finalizers = obj["metadata"].get("finalizers") or ()
        if ORPHAN in finalizers:
            self.enqueue("orphan", (info.key, key))
        if FOREGROUND in finalizers:
            for ref, _ in self.children(obj["metadata"].get("uid", "")):
                self.enqueue("attempt", ref)
            self.enqueue("foreground", (info.key, key))
        if info.kind == "Namespace":
            self._delete_content(key[1])

    def remove(self, info: KindInfo, key: Key, obj: dict) -> None:
        """Take ``obj`` out of storage (DELETED) and let the collector look at its dependents and owners."""
        self.put("DELETED", info, key, obj)
        for ref, _ in self.children(obj["metadata"].get("uid", "")):
            self.enqueue("attempt", ref)
        for r in _refs(obj):
            self._owner_changed(r)
        if info.namespaced:
            self._namespaces.add(key[0])

    def remove_finalizer(self, ref: Ref, obj: dict, finalizer: str) -> None:
        """The collector's ``removeFinalizer``: an object left without finalizers goes (DELETED only)."""
        info = self.store.registry.by_key(ref[0])
        left = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        upd = dict(obj)
        upd["metadata"] = dict(obj["metadata"])
        if left:
            upd["metadata"]["finalizers"] = left
        else:
            upd["metadata"].pop("finalizers", None)
        self.settle(info, ref[1], upd)

    def settle(self, info: KindInfo, key: Key, obj: dict) -> None:
        """Write ``obj``, marked for deletion: without finalizers it goes instead (DELETED only, as an
        update that empties the finalizers of a Terminating object does), a namespace once it is empty."""
        if not obj["metadata"].get("finalizers") and not self._holds_content(info, key):
            self.remove(info, key, obj)
        else:
            self.put("MODIFIED", info, key, obj)

    # -- the collector --------------------------------------------------------------------------------------
    def run(self) -> list[Op]:
        """Work until nothing is left to do; then the ops to commit. Dependents that would only lose
        references wait until every deletion this call causes is done (so one whose owners all go in the
        same cascade goes, rather than first losing all but one reference)."""
        while self._queue or self._deferred:
            if self._queue:
                job, ref = self._queue.popleft()
                self._queued.discard((job, ref))
                if job == "attempt":
                    self._attempt(ref, strip=False)
                elif job == "foreground":
                    self._foreground(ref)
                else:
                    self._orphan(ref)
            else:
                ref = min(self._deferred)
                self._deferred.discard(ref)
                self._attempt(ref, strip=True)
        self._finish_namespaces()
        return self.ops

    def _attempt(self, ref: Ref, strip: bool) -> None:
        """``attemptToDeleteItem``."""
        obj = self.get(ref)
        if obj is None:
            return
        m = obj["metadata"]
        if deleting_dependents(obj):
            self.enqueue("foreground", ref)
            return
        if m.get("deletionTimestamp") or not m.get("ownerReferences"):
            return  # being deleted: wait for the final deletion; or nobody's dependent
        solid: list = []
        dangling: list = []
        waiting: list = []
        try:
            for r in m["ownerReferences"]:
                owner = self.owner(ref, r)
                (dangling if owner is None else waiting if deleting_dependents(owner) else solid).append(r)
        except LookupError:
            return
        info = self.store.registry.by_key(ref[0])
        if solid:
            if not dangling and not waiting:
                return
            if not strip:
                self._deferred.add(ref)
                return
            drop = {r.get("uid") for r in dangling + waiting}
            upd = self._with_refs(obj, [r for r in m["ownerReferences"] if r.get("uid") not in drop])
            self.put("MODIFIED", info, ref[1], upd)
            for r in waiting:
                self._owner_changed(r)
            return
        if waiting and self.children(m.get("uid", "")):
            if any(deleting_dependents(dep) for _, dep in self.children(m.get("uid", ""))):
                # a possible cycle: stop blocking the owners, then go in the foreground (as upstream)
                obj = self._with_refs(
                    obj,
                    [
                        {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r
                        for r in m["ownerReferences"]
                    ],
                )
                self.put("MODIFIED", info, ref[1], obj)
                for r in waiting:
                    self._owner_changed(r)
            self.delete(info, ref[1], obj, "Foreground")
            return
        finalizers = m.get("finalizers") or ()
        policy = (
            "Orphan" if ORPHAN in finalizers else "Foreground" if FOREGROUND in finalizers else "Background"
        )
        self.delete(info, ref[1], obj, policy)

    def _foreground(self, ref: Ref) -> None:
        """``processDeletingDependentsItem``."""
        obj = self.get(ref)
        if obj is None or not deleting_dependents(obj):
            return
        uid = obj["metadata"].get("uid", "")
        blocking = [
            (dref, dep)
            for dref, dep in self.children(uid)
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in _refs(dep))
        ]
        if not blocking:
            self.remove_finalizer(ref, obj, FOREGROUND)
            return
        for dref, dep in blocking:
            if not deleting_dependents(dep):
                self.enqueue("attempt", dref)

    def _orphan(self, ref: Ref) -> None:
        """``attemptToOrphanWorker``: the dependents lose their reference, then the owner its finalizer."""
        obj = self.get(ref)
        if (
            obj is None
            or not obj["metadata"].get("deletionTimestamp")
            or ORPHAN not in (obj["metadata"].get("finalizers") or ())
        ):
            return
        uid = obj["metadata"].get("uid", "")
        for dref, dep in self.children(uid):
            upd = self._with_refs(dep, [r for r in _refs(dep) if r.get("uid") != uid])
            self.put("MODIFIED", self.store.registry.by_key(dref[0]), dref[1], upd)
        self.remove_finalizer(ref, obj, ORPHAN)

    @staticmethod
    def _with_refs(obj: dict, refs: list[dict]) -> dict:
        upd = dict(obj)
        upd["metadata"] = dict(obj["metadata"])
        if refs:
            upd["metadata"]["ownerReferences"] = refs
        else:
            upd["metadata"].pop("ownerReferences", None)
        return upd

    # -- namespaces ---------------------------------------------------------------------------------------
    def _holds_content(self, info: KindInfo, key: Key) -> bool:
        """A namespace goes only when it is empty (what the namespace controller's ``kubernetes``
        finalizer stands for)."""
        return info.kind == "Namespace" and any(True for _ in self._content(key[1]))

    def _content(self, ns: str) -> Iterator[tuple[Ref, dict]]:
        for kk, objs in self.store._objs.items():
            if kk == "namespaces":
                continue
            for k in objs:
                if k[0] == ns:
                    obj = self.get((kk, k))
                    if obj is not None:
                        yield (kk, k), obj

    def _delete_content(self, ns: str) -> None:
        """The namespace controller: delete everything in ``ns`` (in the background)."""
        for ref, _ in sorted(self._content(ns), key=lambda item: item[0]):
            obj = self.get(ref)
            if obj is not None:
                self.delete(self.store.registry.by_key(ref[0]), ref[1], obj, "Background")
        self._namespaces.add(ns)

    def _finish_namespaces(self) -> None:
        """A Terminating namespace without finalizers whose last object went in this call goes too."""
        for ns in sorted(self._namespaces):
            ref = ("namespaces", ("", ns))
            obj = self.get(ref)
            if (
                obj is None
                or not obj["metadata"].get("deletionTimestamp")
                or obj["metadata"].get("finalizers")
            ):
                continue
            if not any(True for _ in self._content(ns)):
                self.put("DELETED", self.store.registry.by_key("namespaces"), ("", ns), obj)


def now_marked(store: Store, obj: dict) -> dict:
    """A copy of ``obj`` marked for deletion now, as ``markAsDeleting``: ``deletionTimestamp`` (kept if
    already set), ``deletionGracePeriodSeconds: 0``, and the generation bumped on first marking."""
    marked = dict(obj)
    marked["metadata"] = m = dict(obj["metadata"])
    if not m.get("deletionTimestamp"):
        m["deletionTimestamp"] = format_time(store.clock.now())
        if m.get("generation"):
            m["generation"] += 1
    m["deletionGracePeriodSeconds"] = 0
    return marked
