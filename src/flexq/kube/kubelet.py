"""The twin's kubelets (one controller for every node of a cluster): run bound pods and report on them.

Owns pod ``status`` except the ``PodScheduled`` condition: ``phase`` (Pending -> Running ->
Succeeded/Failed), the ``Initialized`` / ``ContainersReady`` / ``Ready`` / ``DisruptionTarget``
conditions, ``containerStatuses`` and ``initContainerStatuses`` (waiting ``ContainerCreating`` /
``PodInitializing`` / ``CrashLoopBackOff``, running, terminated with ``exitCode`` and reason
``Completed`` / ``Error``, ``restartCount``, ``lastState``), ``hostIP``, ``podIP``, ``startTime``,
``qosClass``; the ``Started`` / ``Killing`` / ``FailedMount`` / ``InspectFailed`` / ``Failed`` / ``BackOff`` /
``TaintManagerEviction`` events. Also the executors' lifecycle: a bound pod starts on the first of
``ctx.executors`` whose ``accepts(pod)`` is true, with a ``PodLaunch`` carrying its ConfigMap files; what
``podenv.start_blocker`` finds first keeps it Pending instead, as upstream's kubelet reports it: a missing
ConfigMap or Secret volume (``ContainerCreating``, ``FailedMount``: ``MountVolume.SetUp failed for volume "v" :
configmap "x" not found``) until it appears, an image reference it cannot parse (``InvalidImageName``), an
env reference to a missing ConfigMap, Secret or key (``CreateContainerConfigError``). Its ServiceAccount
token volumes when the twin serves
its API (``sa_volumes``), the node's TPU environment, the pod logs and
the clock; it is stopped when the pod is deleted, finishes, or its node disappears (the pod is then
failed with reason ``NodeLost``, as PodGC marks pods of deleted nodes). Pods on a node with a
``NoExecute`` taint they do not tolerate (or only for ``tolerationSeconds``) are evicted as the taint
manager does: ``DisruptionTarget`` reason ``DeletionByTaintManager``, then deleted. ``restartPolicy`` is
honoured: ``Never`` ends the pod, ``OnFailure`` / ``Always`` restart the container after a back-off of
10 s doubling to 300 s. A pod's logs go away with the pod. Must not import other domain packages.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from flexq.api.core_defaults import qos_class
from flexq.api.jsoncopy import ByIdentity, clone_kept
from flexq.clock import format_time, parse_time
from flexq.errors import NotFound
from flexq.kube.cache import ClusterCache, PodKey, controller_owner, is_terminal, pod_key
from flexq.kube.podenv import api_env, configmap_files, start_blocker, tpu_env
from flexq.kube.sa_volumes import token_files
from flexq.runtime import Context, Controller, Result, Watch
from flexq.runtime.executor import PodExecutor, PodLaunch, PodRunState
from flexq.semantics import satokens
from flexq.semantics.conditions import set_core_condition
from flexq.semantics.pods import pods_differ_semantically
from flexq.semantics.taints import tolerates
from flexq.store.store import WatchEvent

MAX_BACKOFF, BASE_BACKOFF = 300.0, 10.0
# a pod's QoS class depends on its spec alone: remembered for the stored spec (status writes keep the object)
_QOS = ByIdentity(lambda spec: qos_class({"spec": spec}))

_COND_ORDER = {
    "PodReadyToStartContainers": 0,
    "Initialized": 1,
    "Ready": 2,
    "ContainersReady": 3,
    "PodScheduled": 4,
    "DisruptionTarget": 5,
}
_UNKNOWN = {
    "exitCode": 137,
    "reason": "ContainerStatusUnknown",
    "message": "The container could not be located when the pod was terminated",
}


def _no_sync(ev: WatchEvent) -> bool:
    """Whether an update of a pod needs no sync. The kubelet's pod config source
    (``pkg/kubelet/config/config.go`` ``checkAndUpdatePod``) syncs a pod whose spec, labels, annotations or
    deletion mark changed (``semantics.pods.pods_differ_semantically``); a status-only update is reconciled
    into its copy without a sync (``HandlePodReconcile``), but for a pod some other writer ended (an eviction:
    its phase made terminal), which is stopped. Its own status writes do not sync it again. True for an update
    that needs no sync (``Watch.unchanged``: the key keeps its turn, the reconcile is skipped)."""
    if ev.type != "MODIFIED" or ev.old is None:
        return False
    return not pods_differ_semantically(ev.old, ev.object) and is_terminal(ev.old) == is_terminal(ev.object)


@dataclass
class _Running:
    executor: PodExecutor
    uid: str
    host_ip: str
    wake: float | None = None


def _host_ip(node: dict) -> str:
    for a in (node.get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return a.get("address", "")
    return ""


class Kubelet(Controller):
    """Starts, watches and stops the pods bound to this cluster's nodes."""

    name = "kubelet"

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.running: dict[PodKey, _Running] = {}
        self.backoff: dict[PodKey, float] = {}
        self.waiting_cm: dict[tuple[str, str, str], set[PodKey]] = {}  # (kind, namespace, name) -> pods
        self.log_owner: dict[PodKey, str] = {}  # uid of the pod whose logs are kept under this name
        self._signer: tuple[bytes, satokens.Signer] | None = None

    def watches(self) -> list[Watch]:
        return [
            Watch("Pod", self._pod_keys, unchanged=_no_sync),
            Watch("Node", self._node_keys),
            Watch("ConfigMap", self._configmap_keys),
            Watch("Secret", self._configmap_keys),
        ]

    def _pod_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        key = pod_key(ev.object)
        if key in self.running or key in self.backoff or (ev.object.get("spec") or {}).get("nodeName"):
            return [key]
        return []

    def _node_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        name = ev.object["metadata"]["name"]
        if ev.type == "DELETED":
            return self.cache.pods_on(name)
        node = self.cache.nodes.get(name)
        if (
            ev.rv == self.cache.node_changed[0]
            and node is not None
            and any(t.get("effect") == "NoExecute" for t in node.taints)
        ):
            return self.cache.pods_on(name)
        return []

    def _configmap_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        m = ev.object["metadata"]
        return sorted(
            self.waiting_cm.get((ev.object.get("kind", ""), m.get("namespace") or "default", m["name"]), ())
        )

    def stop(self) -> None:
        for key, rec in sorted(self.running.items()):
            rec.executor.stop(key)
        self.running.clear()

    # -- reconcile ----------------------------------------------------------------------------------
    def reconcile(self, key: PodKey) -> Result | None:
        pod = self.cache.pods.get(key)
        rec = self.running.get(key)
        if rec is not None and (pod is None or pod["metadata"].get("uid") != rec.uid):
            self._stop(key, rec, None)
            rec = None
        if pod is None:
            self.backoff.pop(key, None)
            self._forget_configmaps(key)
            if self.log_owner.pop(key, None) is not None:
                self.ctx.logs.delete(*key)  # kubectl logs of a deleted pod: gone
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return None
        if pod["metadata"].get("deletionTimestamp") or is_terminal(pod):
            if rec is not None:
                self._stop(key, rec, pod)
            if not is_terminal(pod):
                killed = (
                    {"exitCode": 137, "reason": "Error"} if self._running_started(pod) else dict(_UNKNOWN)
                )
                self._write(pod, self._terminal_status(pod, "Failed", killed))
            self.backoff.pop(key, None)
            return None
        if node_name not in self.cache.nodes:
            if rec is not None:
                self._stop(key, rec, None)
            self._node_lost(pod, node_name)
            return None
        evict_in = self._noexecute(pod, node_name)
        if evict_in is not None:
            if evict_in <= 0:
                self._evict(pod, rec)
                return None
            if rec is None:
                return Result(requeue_after=evict_in)
        if rec is None:
            until = self.backoff.get(key)
            if until is not None and self.ctx.now() < until:
                return Result(requeue_after=until - self.ctx.now())
            return self._start(key, pod, node_name)
        state = rec.executor.poll(key) or PodRunState(
            "Failed", exit_code=137, reason="ContainerStatusUnknown"
        )
        result = self._observe(key, pod, rec, state)
        if evict_in is not None and (
            result is None or result.requeue_after is None or result.requeue_after > evict_in
        ):
            return Result(requeue_after=evict_in)
        return result

    # -- taint eviction (the node lifecycle controller's taint manager) ------------------------------
    def _noexecute(self, pod: dict, node_name: str) -> float | None:
        """Seconds until the pod must leave its node for a NoExecute taint (<= 0: now), or None."""
        node = self.cache.nodes[node_name]
        tols = (pod.get("spec") or {}).get("tolerations") or []
        due: float | None = None
        for taint in node.taints:
            if taint.get("effect") != "NoExecute":
                continue
            matching = [t for t in tols if tolerates(t, taint)]
            if not matching:
                return 0.0
            limits = [t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None]
            if not limits:
                continue  # tolerated forever
            added = parse_time(taint["timeAdded"]) if taint.get("timeAdded") else self.ctx.now()
            left = added + max(0, min(limits)) - self.ctx.now()
            due = left if due is None else min(due, left)
        return due

    def _evict(self, pod: dict, rec: _Running | None) -> None:
        key = pod_key(pod)
        if rec is not None:
            self._stop(key, rec, pod)
        st = clone_kept(pod.get("status") or {})
        set_core_condition(
            st.setdefault("conditions", []),
            "DisruptionTarget",
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
            self.ctx.now(),
        )
        st["conditions"].sort(key=lambda c: _COND_ORDER.get(c.get("type", ""), 9))
        self._write(pod, st)
        self.events.record(
            pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key[0]}/{key[1]}"
        )
        with contextlib.suppress(NotFound):
            self.store.delete("Pod", key[1], key[0])

    # -- start / stop ---------------------------------------------------------------------------------
    def _start(self, key: PodKey, pod: dict, node_name: str) -> Result | None:
        blocker = start_blocker(pod, lambda kind, name: self.store.peek(kind, name, key[0]))
        if blocker is not None:
            self._forget_configmaps(key)
            for kind, name in blocker.refs:
                self.waiting_cm.setdefault((kind, key[0], name), set()).add(key)
            st = self._base_status(pod, "Pending", "", False)
            waiting = {"reason": blocker.waiting_reason} | (
                {"message": blocker.waiting_message} if blocker.waiting_message else {}
            )
            st["containerStatuses"] = self._containers(pod, {"waiting": waiting}, False)
            if self._write(pod, st):
                self.events.record(pod, "Warning", blocker.event_reason, blocker.event_message)
            return None
        files, _missing = configmap_files(pod, lambda name: self.store.peek("ConfigMap", name, key[0]))
        self._forget_configmaps(key)
        for path, content in self._token_files(pod).items():
            files.setdefault(path, {}).update(content)
        owners = self._owners(pod)
        executor = next((ex for ex in self.ctx.executors if ex.accepts(pod, owners)), None)
        if executor is None:
            return None
        node = self.store.peek("Node", node_name)  # read-only, as the pod (PodLaunch)
        if node is None:
            node = self.store.get("Node", node_name)  # raises NotFound: retried
        rec = _Running(executor, pod["metadata"].get("uid", ""), _host_ip(node))
        if self.log_owner.get(key, rec.uid) != rec.uid:
            self.ctx.logs.delete(*key)  # an earlier pod of the same name
        self.log_owner[key] = rec.uid
        self.running[key] = rec
        self.backoff.pop(key, None)
        launch = PodLaunch(
            pod=pod,
            node=node,
            files=files,
            env={
                **api_env(self.ctx.settings.kube_endpoint),
                **tpu_env(pod, self.cache.nodes[node_name], self.cache.nodes.values()),
            },
            logs=self.ctx.logs,
            notify=lambda: self.ctx.loop.post(lambda: self.enqueue(key)),
            now=self.ctx.now,
            wake_at=lambda when: self._wake(key, when),
            owners=owners,
        )
        try:
            executor.start(launch)
        except Exception:
            self.running.pop(key, None)  # retried by the manager with its back-off
            raise
        for c in (pod.get("spec") or {}).get("containers") or []:
            self.events.record(pod, "Normal", "Started", f"Started container {c['name']}")
        state = executor.poll(key) or PodRunState("Pending")
        return self._observe(key, pod, rec, state)

    def _owners(self, pod: dict) -> tuple[dict, ...]:
        """The pod's chain of controllers, closest first: each ``controller: true`` owner reference followed to
        the stored object of that kind, name and uid in the pod's namespace (a reference to anything else ends
        the chain), at most four deep. Executors trust a pod by who created it, never by its command."""
        chain: list[dict] = []
        obj, ns = pod, pod["metadata"].get("namespace") or "default"
        for _ in range(4):
            ref = controller_owner(obj)
            if ref is None or not ref.get("kind") or not ref.get("name"):
                break
            try:
                owner = self.store.peek(ref["kind"], ref["name"], ns)
            except (KeyError, ValueError, NotFound):  # a kind this cluster does not serve
                break
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            if (
                owner is None
                or owner["metadata"].get("uid") != ref.get("uid")
                or str(owner.get("apiVersion", "")).rpartition("/")[0] != group
            ):
                break
            chain.append(owner)
            obj = owner
        return tuple(chain)

    def _token_files(self, pod: dict) -> dict[str, dict[str, str]]:
        """The pod's ServiceAccount token volumes (``sa_volumes``), when the twin serves its API (whose key
        signs them, as the API server's TokenRequest signs a kubelet's)."""
        settings = self.ctx.settings
        key = settings.service_account_key
        if key is None:
            return {}
        if self._signer is None or self._signer[0] != key:
            self._signer = (key, satokens.Signer(key))
        signer = self._signer[1]
        md, spec = pod["metadata"], pod.get("spec") or {}
        ns = md.get("namespace") or "default"
        sa = self.store.peek("ServiceAccount", spec.get("serviceAccountName") or "default", ns)
        cs = self.ctx.cluster_settings
        issuer = satokens.issuer_for(cs.gke_project, cs.gke_location, cs.gke_cluster)
        ca = base64.b64decode(settings.kube_ca_b64).decode() if settings.kube_ca_b64 else None
        rng = self.ctx.rng("service-account-tokens")

        def mint(audience: str | None, seconds: int) -> str:
            assert sa is not None
            claims = satokens.claims(
                issuer=issuer,
                audiences=[audience or issuer],
                now=self.ctx.now(),
                seconds=max(satokens.MIN_EXPIRATION, seconds),
                namespace=ns,
                sa=sa,
                bound=pod,
                jti=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            )
            return signer.sign(claims)

        return token_files(pod, sa, mint, ca)

    def _wake(self, key: PodKey, when: float) -> None:
        rec = self.running.get(key)
        if rec is not None:
            rec.wake = when
        self.enqueue_after(key, max(0.0, when - self.ctx.now()))

    def _stop(self, key: PodKey, rec: _Running, pod: dict | None) -> None:
        self.running.pop(key, None)
        rec.executor.stop(key)
        if pod is not None and not is_terminal(pod):
            for c in (pod.get("spec") or {}).get("containers") or []:
                self.events.record(pod, "Normal", "Killing", f"Stopping container {c['name']}")

    def _forget_configmaps(self, key: PodKey) -> None:
        for cm_key in [k for k, pods in self.waiting_cm.items() if key in pods]:
            self.waiting_cm[cm_key].discard(key)
            if not self.waiting_cm[cm_key]:
                del self.waiting_cm[cm_key]

    # -- status ---------------------------------------------------------------------------------------
    def _observe(self, key: PodKey, pod: dict, rec: _Running, state: PodRunState) -> Result | None:
        now = self.ctx.now()
        if state.phase == "Pending":
            waiting = {"reason": state.reason or "ContainerCreating"} | (
                {"message": state.message} if state.message else {}
            )
            restarted = self._restart_count(pod) > 0
            initializing = bool((pod.get("spec") or {}).get("initContainers")) and not restarted
            st = self._base_status(
                pod,
                "Running" if restarted else "Pending",
                rec.host_ip,
                False,
                state.pod_ip,
                initialized=not initializing,
            )
            if initializing:
                waiting = {"reason": "PodInitializing"}
            st["containerStatuses"] = self._containers(pod, {"waiting": waiting}, False)
            self._write(pod, self._with_inits(pod, st, done=not initializing))
        elif state.phase == "Running":
            st = self._base_status(pod, "Running", rec.host_ip, state.ready, state.pod_ip)
            started = self._running_started(pod) or format_time(now)
            st["containerStatuses"] = self._containers(pod, {"running": {"startedAt": started}}, state.ready)
            self._write(pod, self._with_inits(pod, st, done=True))
        else:
            return self._exited(key, pod, rec, state)
        if rec.wake is not None and rec.wake > now:
            return Result(requeue_after=rec.wake - now)
        return None

    def _exited(self, key: PodKey, pod: dict, rec: _Running, state: PodRunState) -> Result | None:
        now = self.ctx.now()
        code = state.exit_code if state.exit_code is not None else (0 if state.phase == "Succeeded" else 1)
        term = {
            "exitCode": code,
            "reason": state.reason or ("Completed" if code == 0 else "Error"),
            "startedAt": self._running_started(pod) or format_time(now),
            "finishedAt": format_time(now),
        }
        if state.message:
            term["message"] = state.message
        self._stop(key, rec, None)
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        if policy == "Never" or (policy == "OnFailure" and code == 0):
            self._write(
                pod,
                self._terminal_status(
                    pod, "Succeeded" if code == 0 else "Failed", term, rec.host_ip, state.pod_ip
                ),
            )
            return None
        restarts = self._restart_count(pod) + 1
        delay = min(MAX_BACKOFF, BASE_BACKOFF * 2 ** (restarts - 1))
        self.backoff[key] = now + delay
        c0 = ((pod.get("spec") or {}).get("containers") or [{"name": ""}])[0]["name"]
        m = pod["metadata"]
        msg = f"back-off {delay:g}s restarting failed container={c0} pod={m['name']}_{key[0]}({m.get('uid', '')})"
        st = self._base_status(pod, "Running", rec.host_ip, False, state.pod_ip)
        st["containerStatuses"] = self._containers(
            pod,
            {"waiting": {"reason": "CrashLoopBackOff", "message": msg}},
            False,
            restarts,
            {"terminated": term},
        )
        self._write(pod, self._with_inits(pod, st, done=True))
        self.events.record(
            pod,
            "Warning",
            "BackOff",
            f"Back-off restarting failed container {c0} in pod {m['name']}_{key[0]}({m.get('uid', '')})",
        )
        return Result(requeue_after=delay)

    def _node_lost(self, pod: dict, node: str) -> None:
        if is_terminal(pod):
            return
        st = self._terminal_status(pod, "Failed", dict(_UNKNOWN))
        st["reason"] = "NodeLost"
        st["message"] = f"Node {node} which was running pod {pod['metadata']['name']} no longer exists"
        set_core_condition(
            st["conditions"],
            "DisruptionTarget",
            "True",
            "DeletionByPodGC",
            "PodGC: node no longer exists",
            self.ctx.now(),
        )
        st["conditions"].sort(key=lambda c: _COND_ORDER.get(c.get("type", ""), 9))
        self._write(pod, st)

    def _terminal_status(
        self, pod: dict, phase: str, term: dict, host_ip: str | None = None, pod_ip: str | None = None
    ) -> dict:
        started = self._running_started(pod)
        term = (
            ({"startedAt": started} if started else {}) | {"finishedAt": format_time(self.ctx.now())} | term
        )
        st = self._base_status(pod, phase, host_ip, False, pod_ip)
        st["containerStatuses"] = self._containers(pod, {"terminated": term}, False)
        return self._with_inits(pod, st, done=True)

    def _base_status(
        self,
        pod: dict,
        phase: str,
        host_ip: str | None,
        ready: bool,
        pod_ip: str | None = None,
        *,
        initialized: bool = True,
    ) -> dict:
        now = self.ctx.now()
        st = clone_kept(pod.get("status") or {})  # stored by the status write (take)
        st["phase"] = phase
        conds = st.setdefault("conditions", [])
        terminal = phase in ("Succeeded", "Failed")
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        reason = None if ready else ("PodCompleted" if terminal else "ContainersNotReady")
        msg = None if ready or terminal else f"containers with unready status: [{' '.join(names)}]"
        if initialized:
            set_core_condition(
                conds, "Initialized", "True", "PodCompleted" if terminal else None, None, now, probe=True
            )
        else:
            inits = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
            set_core_condition(
                conds,
                "Initialized",
                "False",
                "ContainersNotInitialized",
                f"containers with incomplete status: [{' '.join(inits)}]",
                now,
                probe=True,
            )
        for t in ("Ready", "ContainersReady"):
            set_core_condition(conds, t, "True" if ready else "False", reason, msg, now, probe=True)
        conds.sort(key=lambda c: _COND_ORDER.get(c.get("type", ""), 9))
        if host_ip:
            st["hostIP"], st["hostIPs"] = host_ip, [{"ip": host_ip}]
        if pod_ip and not terminal:
            st["podIP"], st["podIPs"] = pod_ip, [{"ip": pod_ip}]
        st.setdefault("startTime", format_time(now))
        st["qosClass"] = _QOS(pod.get("spec") or {})
        return st

    def _containers(
        self, pod: dict, state: dict, ready: bool, restarts: int | None = None, last: dict | None = None
    ) -> list[dict]:
        prev = {c.get("name"): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
        out = []
        for c in (pod.get("spec") or {}).get("containers") or []:
            p = prev.get(c["name"], {})
            n = p.get("restartCount", 0) if restarts is None else restarts
            cs = {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": ready,
                "restartCount": n,
                "started": "running" in state,
                "state": state,
                "lastState": last if last is not None else p.get("lastState", {}),
            }
            if "waiting" not in state or n:
                digest = hashlib.sha256(f"{pod['metadata'].get('uid')}/{c['name']}/{n}".encode()).hexdigest()
                cs["containerID"] = f"containerd://{digest}"
            out.append(cs)
        return out

    @staticmethod
    def _with_inits(pod: dict, st: dict, *, done: bool) -> dict:
        """Add ``initContainerStatuses``: the first one running while initialising, all Completed after."""
        inits = (pod.get("spec") or {}).get("initContainers") or []
        if not inits:
            return st
        at = st.get("startTime", "")
        out = []
        for i, c in enumerate(inits):
            if done:
                state: dict = {
                    "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at}
                }
            else:
                state = (
                    {"running": {"startedAt": at}} if i == 0 else {"waiting": {"reason": "PodInitializing"}}
                )
            out.append(
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": done,
                    "restartCount": 0,
                    "started": not done and i == 0,
                    "state": state,
                    "lastState": {},
                }
            )
        st["initContainerStatuses"] = out
        return st

    @staticmethod
    def _restart_count(pod: dict) -> int:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return int(statuses[0].get("restartCount", 0)) if statuses else 0

    @staticmethod
    def _running_started(pod: dict) -> str | None:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if not statuses:
            return None
        st = statuses[0].get("state") or {}
        return (st.get("running") or {}).get("startedAt") or (st.get("terminated") or {}).get("startedAt")

    def _write(self, pod: dict, status: dict) -> bool:
        """Write ``status`` if it differs from the stored one; True when written."""
        if status == pod.get("status"):
            return False
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(pod["metadata"]), "status": status}
        self.store.update_status(obj, take=True)  # ``status``: the caller's own, not changed after
        return True
