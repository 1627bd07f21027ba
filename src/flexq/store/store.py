"""The versioned object store: what an API server and etcd are to a Kubernetes cluster.

Owns the write path: create / update / update_status / patch / delete / expire of storage-version dicts;
``resourceVersion`` (optimistic concurrency: a stale update is a Conflict); status as a separate write; the
commit (journal, then memory, then watchers). Its rooms: ``objects`` (the stored objects and every read of them),
``index`` (the informers' tables), ``watch`` (one event per write, subscriptions, the resume history), ``rules``
(the storage rules: uid, generation, creation and deletion metadata, namespaces that must exist, a patch's name
checks, no-op writes), ``identity`` (uids and generated names), ``readonly`` (the read-only check of the tests),
``gc`` (deletion propagation and the garbage collector, run inside each write), ``patch``, ``selectors``, ``shared``.
Every write is journalled (if a Journal is given) before it is acknowledged and before watchers hear
of it. Thread-safe (one lock), but in flexq all writes come from the loop thread.
Must not import ``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable
from random import Random
from typing import Any

from flexq.api import scheme
from flexq.api.jsoncopy import clone, clone_kept
from flexq.api.registry import KindInfo, Registry
from flexq.api.scheme import Admission
from flexq.clock import Clock, format_time
from flexq.errors import BadRequest, Conflict, SharedObjectChanged
from flexq.store import rules
from flexq.store.gc import Txn
from flexq.store.identity import Identities
from flexq.store.index import Key
from flexq.store.journal import Journal
from flexq.store.objects import Objects
from flexq.store.patch import apply_patch
from flexq.store.readonly import Pristine
from flexq.store.shared import SharedTrees
from flexq.store.watch import Subscription, Watchers, WatchEvent, deliver

log = logging.getLogger("flexq.store")

_CHECK_WRITES = False


def check_writes(on: bool = True) -> None:
    """A test setting (the suite turns it on, as ``jsoncopy.strict_checks``): every store made afterwards admits
    each trusted write (a write without an ``admission``: a controller's) as the API face would, and raises
    ``InvalidWrite`` naming the writer (``Store.writer``: the controller and key the manager is reconciling)
    when admission refuses it. What a client sends is admitted once, at the face; this checks the other half of
    the contract: that what the twin's own controllers build needs no admission."""
    global _CHECK_WRITES
    _CHECK_WRITES = on


class Store(Objects):
    """All objects of one Kubernetes cluster (or of the twin's project-level GKE state): its ``Objects`` (the
    read path) and the write path."""

    HISTORY = 20_000  # watch events kept for resuming

    def __init__(
        self,
        registry: Registry,
        clock: Clock,
        *,
        name: str = "default",
        journal: Journal | None = None,
        rng: Random | None = None,
        namespaces: Iterable[str] = (),
        check_readonly: bool = False,
        check_writes: bool | None = None,
        history: int | None = None,
    ) -> None:
        """``check_readonly`` (for tests): keep a private copy of every stored version and fail loudly when
        one was changed in place (by a watcher or a ``peek`` caller) before it is replaced or at
        ``verify_readonly``. ``history``: watch events kept for resuming (default ``HISTORY``); a watch from
        an older resourceVersion gets Gone, as from an API server's watch cache."""
        self.registry, self.clock, self.name, self.journal = registry, clock, name, journal
        self.check_readonly = check_readonly
        # ``check_writes`` (a test setting, by default the module's ``check_writes()``): admit every trusted write
        self.check_writes = _CHECK_WRITES if check_writes is None else check_writes
        self.writer = ""  # who is writing (the manager names the reconcile): for ``check_writes``' errors
        super().__init__(registry)  # the objects, their indexes and the read path (``flexq.store.objects``)
        self._pristine = Pristine()  # with ``check_readonly``: every stored version's copy
        # with ``check_readonly``: the stored versions handed out read-only since the last ``verify_reads``
        self._reads = set() if check_readonly else None
        self.rng = rng or Random(0)
        # uids and generated names are keyed hashes of what is created and when (``flexq.store.identity``), not
        # draws from a stream: one object's identity does not depend on how many others were created before it
        self.ids = Identities(self.rng)
        self._rv = 0
        # subscriptions and the history kept for resuming (``flexq.store.watch``)
        self.watchers = Watchers(self.HISTORY if history is None else history, self._lock)
        self._seq = 0
        self.shared = SharedTrees()  # the subtrees created objects share (``flexq.store.shared``)
        # validating admission webhooks a controller registers (as Kueue's manager registers its own with the
        # API server): kind key -> checks (new, old) -> causes, run after schema validation on create and update
        self.webhooks: dict[str, list[Callable[[dict, dict | None], list]]] = {}
        if journal is not None:
            self._load()
        for ns in namespaces:
            if ("", ns) not in self._objs.get("namespaces", {}):
                self.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                    admission=scheme.ADMIT,
                )

    def add_webhook(self, kind: str, check: Callable[[dict, dict | None], list]) -> None:
        """Register a validating webhook for ``kind`` (create and update of the object, not of its status)."""
        self.webhooks.setdefault(self.info(kind).key, []).append(check)

    def _webhooks(self, info: KindInfo, stored: dict, old: dict | None) -> None:
        causes = [c for check in self.webhooks.get(info.key, ()) for c in check(stored, old)]
        if causes:
            raise scheme.invalid(info, (stored.get("metadata") or {}).get("name", ""), causes)

    def next_seq(self) -> int:
        """A number unique within this store's life (for generated names such as Events')."""
        self._seq += 1
        return self._seq

    # -- reading ----------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    # -- writing ------------------------------------------------------------------------------------
    def create(
        self,
        obj: dict,
        *,
        admission: Admission | None = None,
        keep_status: bool = False,
        namespace: str | None = None,
        dry_run: bool = False,
        take: bool = False,
        kind_info: KindInfo | None = None,
    ) -> dict:
        """Store a new object: a client's, admitted by ``admission`` (the face's), or a controller's, trusted
        as given (storage version; only the storage rules, webhooks and built-in admission apply). Returns the
        stored version itself, read-only as ``peek`` (copy-on-write: ``clone`` it to change it). With ``take`` the store keeps ``obj`` itself instead of a
        copy: the caller built it for this call and never changes (or reads) it afterwards. ``kind_info``:
        the object's kind, resolved by a caller that built it (a controller's Event): its apiVersion, kind
        and metadata are not checked again."""
        info = self._resolve(obj, admission) if kind_info is None else kind_info
        self.info(info.key)
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or namespace
        if info.namespaced and namespace and meta.get("namespace") and meta["namespace"] != namespace:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        data = obj if take else clone_kept(obj)
        if data.get("metadata") is None:
            data["metadata"] = {}
        if info.namespaced:
            data["metadata"]["namespace"] = ns or "default"
        else:
            data["metadata"].pop("namespace", None)
        requested = data["metadata"].get("name") or data["metadata"].get("generateName") or ""
        if not data["metadata"].get("name") and data["metadata"].get("generateName"):
            data["metadata"]["name"] = self._generate_name(info, data["metadata"])
        status = data.get("status")
        # ``data`` is the store's own (a copy, or taken): admission may default it in place
        stored = self._admit(info, data, None, admission)
        if info.key in self.webhooks:
            self._webhooks(info, stored, None)
        if info.shared:
            self.shared.share(info, stored)
        if keep_status and status is not None:
            stored["status"] = status
        elif info.status_subresource:
            stored.pop("status", None)
        with self._lock:
            key = self._key(info, stored["metadata"].get("namespace"), stored["metadata"]["name"])
            rules.check_new(info, key, self._objs)
            if info.admission is not None:
                info.admission("CREATE", stored, None, self, requested)
            m = rules.created(
                info, stored, self._new_uid(info, key[0], key[1]), format_time(self.clock.now())
            )
            if info.prepare_create is not None:
                info.prepare_create(stored)
            if dry_run:
                m["resourceVersion"] = str(self._rv)
                return clone(stored)
            if not m.get("ownerReferences"):
                self._commit([("ADDED", info, key, stored)])
            else:  # the collector checks its owners at once (an absent one: collected, as upstream)
                txn = Txn(self)
                txn.put("ADDED", info, key, stored)
                txn.written(info, key, None, stored)
                self._commit(txn.run())
            return stored

    def _resolve(self, obj: dict, admission: Admission | None) -> KindInfo:
        """The kind of a write's object: a client's is read as the API server decodes a body (BadRequest for a
        missing kind or metadata of the wrong JSON types); a controller's is looked up."""
        if admission is not None:
            return scheme.resolve_object(self.registry, obj)
        return self.registry.by_gvk(obj.get("apiVersion") or "", obj.get("kind") or "")

    def _admit(self, info: KindInfo, data: dict, old: dict | None, admission: Admission | None) -> dict:
        """A write's object admitted: a client's by ``admission``; a controller's trusted, or admitted as it was
        built (``scheme.BUILT``: with ``check_writes``, checked to be what a client's admission would store)."""
        if admission is None:
            return self._trusted(info, data, old)
        given = clone(data) if not admission.rebuild and self.check_writes else None
        stored = admission(info, data, old)
        if given is not None:
            rules.check_built(info, given, stored, old, self.writer)
        return stored

    def _trusted(self, info: KindInfo, data: dict, old: dict | None) -> dict:
        """A trusted write's object (a controller's, in the storage version). With ``check_writes``, admitted
        as a client's would be: refused, it raises ``InvalidWrite`` naming the writer."""
        data["apiVersion"] = info.storage_api_version
        data["kind"] = info.kind
        if self.check_writes:
            rules.check_trusted(info, data, old, self.writer)
        return data

    def _new_uid(self, info: KindInfo, namespace: str, name: str) -> str:
        return self.ids.uid(self.clock.now(), info.key, namespace, name, self._by_uid)

    def _generate_name(self, info: KindInfo, meta: dict) -> str:
        bucket = self._objs.get(info.key, {})
        ns = meta.get("namespace")
        return self.ids.generated_name(
            self.clock.now(),
            info.key,
            ns or "",
            meta["generateName"],
            lambda n: self._key(info, ns, n) in bucket,
        )

    def _current(self, info: KindInfo, meta: dict, namespace: str | None = None) -> tuple[Key, dict]:
        key = self._key(info, meta.get("namespace") or namespace, meta.get("name", ""))
        cur = self._objs.get(info.key, {}).get(key)
        if cur is None:
            raise rules.not_found(info, key[1])
        rules.check_version(info, key[1], cur, meta.get("resourceVersion"))
        return key, cur

    def update(
        self,
        obj: dict,
        *,
        admission: Admission | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
        take: bool = False,
        on_write: Callable[[dict, dict], dict] | None = None,
        with_status: bool = False,
    ) -> dict:
        """Replace spec/metadata (status is kept for kinds with a status subresource), admitted by
        ``admission`` (a client's write) or trusted (a controller's), as ``create``'s. Returns the
        stored version itself (read-only, as ``create``'s). With
        ``take`` the store keeps ``obj`` itself instead of a copy: the caller gives fresh top-level and
        ``metadata`` dicts and never changes anything reachable from ``obj`` afterwards (parts may be
        shared with earlier stored versions, which are read-only too). ``on_write(live, new)`` (both in
        ``obj``'s version) may amend the object before it is admitted (the HTTP face keeps
        ``managedFields`` with it). ``with_status``: ``obj``'s status is written too, in the same write: a
        subresource that sets both, as the API server's ``pods/binding`` sets a pod's ``spec.nodeName`` and
        its ``PodScheduled`` condition in one update (``BindingREST.setPodNodeAndMetadata``)."""
        info = self._resolve(obj, admission)
        with self._lock:
            key, cur = self._current(info, obj.get("metadata") or {}, namespace)
            uid = (obj.get("metadata") or {}).get("uid")
            if uid and uid != cur["metadata"].get("uid"):  # the API server's UID precondition on update
                raise Conflict(
                    f"Operation cannot be fulfilled on {info.plural}{'.' + info.group if info.group else ''}"
                    f' "{key[1]}": Precondition failed: UID in precondition: {uid}, UID in object meta: '
                    f"{cur['metadata'].get('uid')}",
                    kind=info.plural,
                    group=info.group,
                    name=key[1],
                )
            data = obj if take else clone_kept(obj)
            if data.get("metadata") is None:
                data["metadata"] = {}
            if on_write is not None:
                data = on_write(scheme.render(info, cur, obj.get("apiVersion")), data)
            data["metadata"]["namespace"] = key[0] if info.namespaced else None
            if not info.namespaced:
                data["metadata"].pop("namespace", None)
            if with_status and admission is None:
                # the binding subresource (BindingREST: spec.nodeName with PodScheduled, no pod-update rules):
                # checked against the pod as its binding leaves it
                bound = {
                    **cur,
                    "spec": {**(cur.get("spec") or {}), "nodeName": (data.get("spec") or {}).get("nodeName")},
                }
                stored = self._trusted(info, data, bound)
            else:
                stored = self._admit(info, data, cur, admission)
            if info.key in self.webhooks:
                self._webhooks(info, stored, cur)
            if info.admission is not None:
                info.admission("UPDATE", stored, cur, self, key[1])
            if info.status_subresource and not with_status:
                if "status" in cur:
                    stored["status"] = cur["status"]
                else:
                    stored.pop("status", None)
            m, cm = rules.carried(info, stored, cur), cur["metadata"]
            if rules.same(cur, stored):
                return cur
            if dry_run:
                return clone(stored)
            deleting = m.get("deletionTimestamp") and not m.get("finalizers")
            if not deleting and (m.get("ownerReferences") or None) == (cm.get("ownerReferences") or None):
                self._commit([("MODIFIED", info, key, stored)])
                return stored
            txn = Txn(self)
            if deleting:  # the last finalizer went: the object goes (a namespace, once empty)
                txn.settle(info, key, stored)
            else:
                txn.put("MODIFIED", info, key, stored)
                txn.written(info, key, cur, stored)
            self._commit(txn.run())
            return stored

    def update_status(
        self,
        obj: dict,
        *,
        admission: Admission | None = None,
        namespace: str | None = None,
        take: bool = False,
    ) -> dict:
        """Write only ``status`` (the /status subresource); a client's write is checked by ``admission`` (the
        whole new version is admitted; what is stored is the status as written). Returns the stored version itself (read-only,
        as ``peek``). With ``take`` the store
        keeps ``obj["status"]`` itself instead of a copy: the caller never changes it afterwards."""
        info = self._resolve(obj, admission)
        with self._lock:
            key, cur = self._current(info, obj.get("metadata") or {}, namespace)
            status = obj.get("status")
            if status == cur.get("status"):  # a no-op write (None and absent alike, as rules.same)
                return cur
            # the new version shares everything but status and metadata with the current one: stored
            # versions are never changed in place (readers get copies, or the object read-only)
            stored = dict(cur)
            stored["metadata"] = dict(cur["metadata"])
            if status is None:
                stored.pop("status", None)
            else:
                stored["status"] = status if take else clone_kept(status)
            if admission is not None:
                admission(info, clone(stored), cur)
            self._commit([("MODIFIED", info, key, stored)])
            return stored

    def patch(
        self,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        api_version: str | None = None,
        admission: Admission | None = None,
        dry_run: bool = False,
        on_write: Callable[[dict, dict], dict] | None = None,
    ) -> dict:
        """Patch the object as seen in ``api_version`` (storage version by default); ``admission`` and
        ``on_write`` as ``update``'s (a patch in another version than the storage one needs ``admission``:
        it converts)."""
        info = self.info(kind)
        with self._lock:
            cur = self.peek(kind, name, namespace)  # the stored version, read-only: ``render`` copies it once
            if cur is None:
                self.get(kind, name, namespace)  # NotFound, worded as the API server's
            assert cur is not None
            view = scheme.render(info, cur, api_version)
            patched = apply_patch(view, patch, patch_type, (info.group, info.kind))
            if not isinstance(patched, dict):
                raise BadRequest("patch result is not an object")
            if not isinstance(patched.get("metadata"), dict):
                patched["metadata"] = {} if patched.get("metadata") is None else patched["metadata"]
            scheme.check_shape(patched)
            rules.check_patched(info, patched, cur, name, namespace)
            if subresource == "status":
                if api_version and api_version != info.storage_api_version:
                    patched = scheme.admit(info, patched, cur, "Ignore")
                    patched["metadata"] = cur["metadata"]
                return self.update_status(patched, admission=admission, namespace=namespace)
            if info.status_subresource:
                patched.pop("status", None)
            if on_write is not None:
                patched = on_write(view, patched)
            return self.update(patched, admission=admission, namespace=namespace, dry_run=dry_run)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str | None = "Background",
        preconditions: dict | None = None,
        dry_run: bool = False,
    ) -> dict:
        """Delete as the API server and the garbage collector do (``flexq.store.gc``): ``Background``
        removes the object and then its dependents left with no live owner; ``Foreground`` keeps it,
        Terminating with the ``foregroundDeletion`` finalizer, until its dependents that block owner
        deletion are gone; ``Orphan`` (the ``orphan`` finalizer) takes the object's reference off its
        dependents first and leaves them; None keeps what the object's finalizers ask for. An object with
        other finalizers is only marked (``deletionTimestamp``) and goes when they are removed. Returns the
        object as the delete left it: marked (as the API server answers before its garbage collector has
        run), or as it was when it went: that version itself, read-only."""
        info = self.info(kind)
        with self._lock:
            key, cur = self._current(info, {"name": name, "namespace": namespace})
            if info.admission is not None:
                info.admission("DELETE", cur, cur, self, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != cur["metadata"].get("uid"):
                raise Conflict(
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                    f"{cur['metadata'].get('uid')}",
                    kind=info.plural,
                    name=name,
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                raise Conflict("Precondition failed: resourceVersion mismatch", kind=info.plural, name=name)
            if propagation not in (None, "Background", "Foreground", "Orphan"):
                raise BadRequest(
                    f"propagationPolicy: Unsupported value: {propagation!r}: supported values: "
                    '"Foreground", "Background", "Orphan"'
                )
            txn = Txn(self)
            txn.delete(info, key, cur, propagation)
            ops = txn.ops[:1] if dry_run else txn.run()
            # the reply is the object as the delete itself left it (marked), before the collector's work
            marked = ops[0][3] if ops[0][0] == "MODIFIED" else cur
            if not dry_run:
                self._commit(ops)
            return marked

    def expire(self, kind: str, entries: Iterable[tuple[str, str, int]]) -> builtins.list[dict]:
        """Remove the objects whose lease ran out, as etcd does when an Event's ``--event-ttl`` lease expires:
        ``entries`` are (namespace, name, resourceVersion of the write the lease was attached to); an object
        written since (another resourceVersion), or gone, is left alone. One commit, watchers see each
        DELETED in order. An object that a plain delete would not simply remove (finalizers, owners or
        dependents for the collector, a terminating namespace to finish) is deleted as ``delete`` with no
        propagation policy deletes it (finalizers keep it, marked). Returns the objects expired (read-only, as
        they were stored)."""
        info = self.info(kind)
        with self._lock:
            bucket = self._objs.get(info.key, {})
            namespaces = self._objs.get("namespaces", {})
            ops: builtins.list = []
            gone: builtins.list[dict] = []
            for ns, name, rv in entries:
                key = self._key(info, ns, name)
                cur = bucket.get(key)
                if cur is None or cur["metadata"].get("resourceVersion") != str(rv):
                    continue
                md = cur["metadata"]
                gone.append(cur)
                if not (
                    md.get("finalizers")
                    or md.get("ownerReferences")
                    or md.get("uid", "") in self._children
                    or (
                        info.namespaced
                        and (namespaces.get(("", key[0])) or {}).get("metadata", {}).get("deletionTimestamp")
                    )
                ):
                    ops.append(("DELETED", info, key, cur))
                    continue
                if ops:
                    self._commit(ops)
                    ops = []
                txn = Txn(self)
                txn.delete(info, key, cur, None)
                self._commit(txn.run())
            if ops:
                self._commit(ops)
            return gone

    # -- commit, index, watch -------------------------------------------------------------------------
    def _commit(self, ops: builtins.list) -> None:
        """Assign resourceVersions, journal atomically, then apply in memory and notify watchers."""
        staged = []
        rv = self._rv
        for typ, info, key, obj in ops:
            rv += 1
            if typ == "DELETED":  # the last stored version, read-only: a new top level and metadata
                obj = dict(obj)
                obj["metadata"] = dict(obj["metadata"])
            obj["metadata"]["resourceVersion"] = str(rv)
            staged.append((typ, info, key, obj, rv))
        # inside an open (outer) transaction — a group commit of the API server's writes — these writes reach
        # the disk only when it commits: watchers that must never see an uncommitted write (``committed``) hear
        # them then, and readers on other threads are told to ask again (``Journal.uncommitted``)
        nested = False
        if self.journal is not None:
            nested = self.journal.in_transaction()
            with self.journal.transaction():
                for typ, info, key, obj, ev_rv in staged:
                    if typ == "DELETED":
                        self.journal.remove(self.name, info.key, key[0], key[1])
                    else:
                        self.journal.put(self.name, info.key, key[0], key[1], ev_rv, obj)
                self.journal.set_rv(self.name, rv)
            if nested:
                self.journal.uncommitted = True  # before the memory holds them
        self._rv = rv
        texts, objs, history = self.texts, self._objs, self.watchers.history
        events = []
        for typ, info, key, obj, ev_rv in staged:
            kk = info.key
            old = objs.get(kk, {}).get(key)
            if texts and old is not None:
                texts.pop(id(old), None)
            if self.check_readonly:
                self._pristine.replaced(kk, key, old, None if typ == "DELETED" else obj)
            if typ == "DELETED":
                self._remove(kk, key, old)
                ev = WatchEvent(typ, kk, obj, ev_rv)
                history.append(ev)
            else:
                self._place(kk, key, old, obj)
                if typ == "MODIFIED" and old is not None:
                    ev = WatchEvent(typ, kk, obj, ev_rv, old)
                    history.append(WatchEvent(typ, kk, obj, ev_rv))  # the history keeps no old versions
                else:
                    ev = WatchEvent(typ, kk, obj, ev_rv)
                    history.append(ev)
            events.append(ev)
        later = self.watchers.publish(events, nested)
        if later:
            assert self.journal is not None
            self.journal.after_commit(lambda: deliver(later))

    def verify_reads(self, reader: str) -> None:
        """With ``check_readonly``: raise AssertionError naming ``reader`` (a controller and its key) if a stored
        version handed out read-only since the last call (``peek``, ``peek_list``...) was changed in place. The
        manager calls it after every reconcile, so a controller that changes a shared object fails at once, by
        name, instead of at the object's next write by whoever makes it."""
        reads = self._reads
        if not reads:
            return
        self._reads = set()
        # a copy at once: an HTTP thread's peek may still add to the old set
        bad = self._pristine.changed(self._objs, list(reads))
        if bad:
            raise SharedObjectChanged(
                f"{reader} changed stored objects in place (they are read-only; copy before changing): "
                + ", ".join(sorted(bad))
            )

    def verify_readonly(self) -> None:
        """With ``check_readonly``: raise AssertionError if any stored object was changed in place."""
        with self._lock:
            bad = self._pristine.changed_any(self._objs)
        if bad:
            raise AssertionError(
                "stored objects changed in place (they are read-only): " + ", ".join(sorted(bad))
            )

    def watch(
        self,
        callback: Callable[[WatchEvent], None],
        kinds: Iterable[str] | None = None,
        since: int | None = None,
        committed: bool = False,
    ) -> Subscription:
        """Deliver every later change (and, with ``since``, the changes after that resourceVersion first).
        ``committed``: hear a write made inside an open outer transaction only once it has committed (a
        client's watch); controllers on the loop hear every write at once."""
        # resolved without the addon gate: a controller may watch a kind this cluster does not serve yet
        keys = None if kinds is None else {self.registry.resolve(k).key for k in kinds}
        with self._lock:
            return self.watchers.subscribe(callback, keys, committed, since, self._rv)

    def _load(self) -> None:
        assert self.journal is not None
        rv, rows = self.journal.load(self.name)
        self._rv = rv
        for kk, obj in rows:
            info = self.registry.by_key(kk)
            key = self._key(info, obj["metadata"].get("namespace"), obj["metadata"]["name"])
            self._place(kk, key, None, obj)
        self._seq = rv  # generated names (Events') of this run do not repeat the last run's
        # the collector resyncs on start, as upstream's does: state written by an older flexq may hold
        # dependents whose owners are gone (every later write leaves the store at the collector's fixed point)
        txn = Txn(self)
        for kk, objs in sorted(self._objs.items()):
            for key, obj in sorted(objs.items()):
                if obj["metadata"].get("ownerReferences") or obj["metadata"].get("deletionTimestamp"):
                    txn.resync(self.registry.by_key(kk), key, obj)
        ops = txn.run()
        if ops:
            self._commit(ops)
