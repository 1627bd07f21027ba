"""Defaulting of the core/v1 and batch/v1 kinds, as the API server does it (see ``flexq.api.core``).

- ``default_*``: ``SetDefaults_*`` of ``pkg/apis/core/v1`` and ``pkg/apis/batch/v1`` (decode time, on create
  and update), run on the raw object before validation by each top-level model of ``flexq.api.core``.
- ``prepare_*``: what the registry strategies, the IP allocator and the admission plugins set on create
  (pod status and QoS class, a Service's IPs and families, a Namespace's finalizer and phase, a
  Job's selector), run by the store once the uid is known, on every create path.
- ``qos_class``: ``qos.GetPodQOS`` (the kubelet reports the same).
No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from flexq.api.jsoncopy import clone
from flexq.api.quantity import QuantityError, canonical_quantity, parse_quantity
from flexq.api.wellknown import COMPUTE_CLASS_LABEL, QUEUE_NAME_LABEL

# -- defaulting: SetDefaults_* of core/v1 and batch/v1 (run before validation, on create and update) ----------
# Each function takes the raw object and fills in, in place, what the API server's defaulters fill in. They
# touch only well-formed parts (a dict where a dict belongs), leaving anything malformed to validation.


PRIVATE_INPUT = "private_input"  # validation context key: the object validated is the caller's own copy


def defaulted(data: Any, fill: Any, info: Any = None) -> Any:
    """A defaulted copy of a raw object about to be validated (the caller's dict is not changed), or the object
    itself defaulted in place when the validation context says it is the caller's own copy (``PRIVATE_INPUT``:
    the store admits the copy it made of what it was given, and drops it)."""
    if not isinstance(data, dict):
        return data
    context = getattr(info, "context", None)
    if not (context and context.get(PRIVATE_INPUT)):
        data = clone(data)
    fill(data)
    return data


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def child_dict(parent: dict, key: str) -> dict | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def image_pull_policy(image: Any) -> str:
    """``Always`` for a ``:latest`` tag or no tag and no digest (the tag then defaults to latest), else
    ``IfNotPresent`` (as ``SetDefaults_Container`` with ``parsers.ParseImageName``)."""
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag == "latest" or (not tag and not digest) else "IfNotPresent"


def _default_field_ref(holder: dict) -> None:
    ref = child_dict(holder, "fieldRef")
    if ref is not None:
        ref.setdefault("apiVersion", "v1")


def _default_http_get(handler: dict | None) -> None:
    get = child_dict(handler, "httpGet") if handler is not None else None
    if get is not None:
        get.setdefault("path", "/")
        get.setdefault("scheme", "HTTP")


def _default_probe(probe: dict) -> None:
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe)
    grpc = child_dict(probe, "grpc")
    if grpc is not None:
        grpc.setdefault("service", "")


def default_container(c: dict) -> None:
    """``SetDefaults_Container`` and the generated defaults below it (ports, env, probes, lifecycle)."""
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = image_pull_policy(c.get("image"))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})  # a struct, not a pointer: the API server always writes it
    for port in _dicts(c.get("ports")):
        port.setdefault("protocol", "TCP")
    for env in _dicts(c.get("env")):
        value_from = child_dict(env, "valueFrom")
        if value_from is not None:
            _default_field_ref(value_from)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = child_dict(c, key)
        if probe is not None:
            _default_probe(probe)
    lifecycle = child_dict(c, "lifecycle")
    if lifecycle is not None:
        _default_http_get(child_dict(lifecycle, "postStart"))
        _default_http_get(child_dict(lifecycle, "preStop"))


_MODE_DEFAULTED = ("configMap", "secret", "downwardAPI", "projected")  # defaultMode 0644


def default_volume(v: dict) -> None:
    """``SetDefaults_Volume`` (no source: an emptyDir) and each source's defaults."""
    if set(v) <= {"name"}:
        v["emptyDir"] = {}
    for key in _MODE_DEFAULTED:
        source = child_dict(v, key)
        if source is not None:
            source.setdefault("defaultMode", 0o644)
    host_path = child_dict(v, "hostPath")
    if host_path is not None:
        host_path.setdefault("type", "")
    downward = child_dict(v, "downwardAPI")
    for item in _dicts((downward or {}).get("items")):
        _default_field_ref(item)
    for source in _dicts((child_dict(v, "projected") or {}).get("sources")):
        for item in _dicts((child_dict(source, "downwardAPI") or {}).get("items")):
            _default_field_ref(item)
        token = child_dict(source, "serviceAccountToken")
        if token is not None:
            token.setdefault("expirationSeconds", 3600)
    claim = child_dict(child_dict(v, "ephemeral") or {}, "volumeClaimTemplate")
    claim_spec = child_dict(claim, "spec") if claim is not None else None
    if claim_spec is not None:
        claim_spec.setdefault("volumeMode", "Filesystem")


def default_pod_spec(spec: dict) -> None:
    """``SetDefaults_PodSpec`` and the generated defaults of containers and volumes: for Pods and every
    pod template of a built-in kind (PodTemplate, Job)."""
    for key, value in (
        ("dnsPolicy", "ClusterFirst"),
        ("restartPolicy", "Always"),
        ("securityContext", {}),
        ("terminationGracePeriodSeconds", 30),
        ("schedulerName", "default-scheduler"),
    ):
        if spec.get(key) in (None, ""):
            spec[key] = value
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _dicts(spec.get(key)):
            default_container(c)
    for v in _dicts(spec.get("volumes")):
        default_volume(v)


def default_pod(pod: dict) -> None:
    """``SetDefaults_Pod`` (only for Pods, not templates): requests default to limits, service links on,
    host-network ports; then the pod spec's defaults."""
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    for c in [*_dicts(spec.get("containers")), *_dicts(spec.get("initContainers"))]:
        res = child_dict(c, "resources")
        limits = child_dict(res, "limits") if res is not None else None
        if res is not None and limits:
            requests = res.get("requests")
            if requests is None:
                requests = res["requests"] = {}
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for c in [*_dicts(spec.get("containers")), *_dicts(spec.get("initContainers"))]:
            for port in _dicts(c.get("ports")):
                if not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")
    default_pod_spec(spec)


def _default_template(holder: dict | None) -> None:
    template = child_dict(holder, "template") if holder is not None else None
    spec = child_dict(template, "spec") if template is not None else None
    if spec is not None:
        default_pod_spec(spec)


def default_pod_template(obj: dict) -> None:
    """A PodTemplate: its template's pod spec defaults."""
    _default_template(obj)


def default_job(job: dict) -> None:
    """``SetDefaults_Job`` (batch/v1) and its template's pod spec defaults."""
    spec = child_dict(job, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    _job_labels_from_template(job)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = child_dict(spec, "podFailurePolicy")
    for rule in _dicts((policy or {}).get("rules")):
        for pattern in _dicts(rule.get("onPodConditions")):
            pattern.setdefault("status", "True")
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    _default_template(spec)


def _job_labels_from_template(job: dict) -> None:
    """A Job without labels takes its pod template's (``SetDefaults_Job``; the API server defaults again
    when it reads the stored Job back, so the selector labels added on create show up here too)."""
    meta = job.get("metadata")
    template = child_dict(child_dict(job, "spec") or {}, "template")
    labels = (child_dict(template, "metadata") or {}).get("labels") if template is not None else None
    if isinstance(meta, dict) and isinstance(labels, dict) and labels and not meta.get("labels"):
        meta["labels"] = dict(labels)


def default_service(svc: dict) -> None:
    """``SetDefaults_Service``: session affinity, type, port protocols and target ports, traffic policies."""
    spec = svc.get("spec")
    if spec is None:
        spec = svc["spec"] = {}
    if not isinstance(spec, dict):
        return
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = child_dict(child_dict(spec, "sessionAffinityConfig") or {}, "clientIP")
        if client_ip is None or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in _dicts(spec.get("ports")):
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    if (kind in ("NodePort", "LoadBalancer") or spec.get("externalIPs")) and not spec.get(
        "externalTrafficPolicy"
    ):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


# -- what validation changes in a valid, defaulted object (``KindInfo.canonical``) --------------------------------


def _canonical_quantities(spec: dict | None) -> None:
    """A pod spec's quantities as a built-in kind stores them, canonical (``resource.Quantity.String()``), in
    place: the model's ``Quantity`` fields (the containers' and init containers' limits and requests, the
    overhead)."""
    if spec is None:
        return
    parts = [child_dict(spec, "overhead")]
    for c in [*_dicts(spec.get("containers")), *_dicts(spec.get("initContainers"))]:
        res = child_dict(c, "resources")
        if res is not None:
            parts += [child_dict(res, "limits"), child_dict(res, "requests")]
    for values in parts:
        if values:
            for name, value in values.items():
                values[name] = canonical_quantity(value)


def canonical_pod(pod: dict) -> None:
    _canonical_quantities(child_dict(pod, "spec"))


def canonical_pod_template(obj: dict) -> None:
    _canonical_quantities(child_dict(child_dict(obj, "template") or {}, "spec"))


def canonical_job(job: dict) -> None:
    canonical_pod_template(child_dict(job, "spec") or {})


def canonical_as_is(obj: dict) -> None:
    """A kind with no field validation changes (a Service: no quantities)."""


def default_namespace(ns: dict) -> None:
    """``SetDefaults_Namespace``: the ``kubernetes.io/metadata.name`` label (a named namespace only)."""
    meta = ns.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta["name"]


def default_secret(secret: dict) -> None:
    """``SetDefaults_Secret`` (``type: Opaque``) and what decoding a v1 Secret does with ``stringData``
    (``Convert_v1_Secret_To_core_Secret``): each entry is written into ``data`` (base64 of its UTF-8),
    over a ``data`` entry of the same key, and ``stringData`` itself is never stored."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    string_data = secret.get("stringData")
    if isinstance(string_data, dict) and all(isinstance(v, str) for v in string_data.values()):
        data = secret.get("data")
        if not isinstance(data, dict):
            data = secret["data"] = {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(v.encode()).decode()
        del secret["stringData"]


def suspend_queued_job(new: dict, old: dict | None) -> dict:
    """Kueue's mutating webhook for batch/v1 Jobs: one with ``kueue.x-k8s.io/queue-name`` is created suspended."""
    labels = (new.get("metadata") or {}).get("labels") or {}
    if old is not None or not labels.get(QUEUE_NAME_LABEL):
        return new
    return {**new, "spec": {**(new.get("spec") or {}), "suspend": True}}


def generate_job_selector(job: dict) -> None:
    """What the API server does for a new Job without ``manualSelector``: select its pods by controller uid
    and label the pod template so (``kubectl logs job/<name>`` finds the job's own pods through this)."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    meta = spec.setdefault("template", {}).setdefault("metadata", {})
    meta["labels"] = {
        **(meta.get("labels") or {}),
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


# -- on create: registry strategies, the IP allocator, admission plugins ------------------------------------


def qos_class(pod: dict) -> str:
    """``qos.GetPodQOS``: only cpu and memory count; Guaranteed when every container limits both and the
    pod's summed requests equal its summed limits, BestEffort when nothing requests or limits them."""
    spec = pod.get("spec") or {}
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for c in [*_dicts(spec.get("containers")), *_dicts(spec.get("initContainers"))]:
        res = c.get("resources") or {}
        found = set()
        for src, into in ((res.get("requests") or {}, requests), (res.get("limits") or {}, limits)):
            for name, value in src.items():
                try:
                    q = parse_quantity(value)
                except (QuantityError, TypeError, ValueError):
                    continue
                if name in ("cpu", "memory") and q != 0:
                    prev = into.get(name)  # q is a Fraction: the first one kept as it is (0 + q equals q)
                    into[name] = q if prev is None else prev + q
                    if into is limits:
                        found.add(name)
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed and requests == limits else "Burstable"


def prepare_pod(pod: dict) -> None:
    """A new Pod: its defaults (again: a controller may create one without validation), the
    ``DefaultTolerationSeconds`` and GKE compute-class admission, and the strategy's ``status`` (Pending, with
    its QoS class). The Priority plugin (``flexq.api.scheduling.admit_pod``) ran before, with the store."""
    default_pod(pod)
    spec = pod.get("spec") or {}
    if isinstance(spec, dict):
        default_toleration_seconds(spec)
        compute_class_toleration(spec)
    if not pod.get("status"):
        pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod)}


def compute_class_toleration(spec: dict) -> None:
    """GKE's admission for custom ComputeClasses: a pod selecting a class (``nodeSelector:
    cloud.google.com/compute-class: NAME``) tolerates the class's node taint
    ``cloud.google.com/compute-class=NAME:NoSchedule``, so it fits the class's manual node pools."""
    sel = spec.get("nodeSelector")
    name = sel.get(COMPUTE_CLASS_LABEL) if isinstance(sel, dict) else None
    if not isinstance(name, str) or not name:
        return
    tols = spec.get("tolerations")
    if tols is not None and not isinstance(tols, list):
        return
    want = {"key": COMPUTE_CLASS_LABEL, "operator": "Equal", "value": name, "effect": "NoSchedule"}
    if want not in (tols or []):
        spec["tolerations"] = [*(tols or []), want]


def default_toleration_seconds(spec: dict) -> None:
    """The ``DefaultTolerationSeconds`` admission plugin: a new pod that does not already tolerate the
    not-ready / unreachable ``NoExecute`` taints (a toleration with that key or no key, and that effect or
    none) tolerates each for 300 s."""
    tols = spec.get("tolerations")
    if tols is not None and not isinstance(tols, list):
        return
    tols = [t for t in tols or [] if isinstance(t, dict)] if tols else []
    added = []
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(
            t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None) for t in tols
        ):
            added.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    if added:
        spec["tolerations"] = [*(spec.get("tolerations") or []), *added]


def prepare_service(svc: dict) -> None:
    """A new Service: its cluster IP (a GKE-like services range, from the uid), IP families (a single-stack
    IPv4 cluster; a headless Service without selector asks for dual stack), and an empty ``status``."""
    spec = svc.setdefault("spec", {})
    if spec.get("type") != "ExternalName":
        if not spec.get("clusterIP"):
            n = int(svc["metadata"]["uid"].replace("-", ""), 16) % (256 * 254)
            spec["clusterIP"] = f"34.118.{n // 254}.{n % 254 + 1}"
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        headless_without_selector = spec["clusterIP"] == "None" and not spec.get("selector")
        spec.setdefault("ipFamilyPolicy", "RequireDualStack" if headless_without_selector else "SingleStack")
        spec.setdefault("ipFamilies", ["IPv4"])
    _allocate_node_ports(svc)
    if not svc.get("status"):
        svc["status"] = {"loadBalancer": {}}


NODE_PORTS = (30000, 32767)  # the API server's default --service-node-port-range


def _allocate_node_ports(svc: dict) -> None:
    """The node-port allocator: each port of a NodePort or LoadBalancer Service (unless
    ``allocateLoadBalancerNodePorts: false``) without a ``nodePort`` gets one from the range, distinct within
    the Service (drawn from the uid: the twin keeps no cluster-wide port map, so two Services may share one)."""
    spec = svc.get("spec") or {}
    if spec.get("type") not in ("NodePort", "LoadBalancer"):
        return
    if spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False:
        return
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    taken = {p["nodePort"] for p in ports if isinstance(p.get("nodePort"), int)}
    lo, hi = NODE_PORTS
    seed = int(svc["metadata"]["uid"].replace("-", ""), 16)
    for i, p in enumerate(ports):
        if p.get("nodePort"):
            continue
        n = lo + (seed + i * 7919) % (hi - lo + 1)
        while n in taken:
            n = lo if n == hi else n + 1
        p["nodePort"] = n
        taken.add(n)


def prepare_namespace(ns: dict) -> None:
    """A new Namespace: its label, the ``kubernetes`` finalizer in ``spec`` (the namespace controller's,
    removed through ``/finalize``) and phase Active."""
    default_namespace(ns)
    spec = ns.get("spec")
    if not isinstance(spec, dict):
        spec = ns["spec"] = {}
    finalizers = spec.get("finalizers") or []
    if "kubernetes" not in finalizers:
        spec["finalizers"] = [*finalizers, "kubernetes"]
    if not ns.get("status"):
        ns["status"] = {"phase": "Active"}


def keep_namespace_spec(new: dict, old: dict | None) -> dict:
    """An update leaves a Namespace's spec as it was (it changes only through ``/finalize``)."""
    if old is None:
        return new
    out = {k: v for k, v in new.items() if k != "spec"}
    if "spec" in old:
        out["spec"] = clone(old["spec"])
    return out


def prepare_job(job: dict) -> None:
    """A new Job: its generated selector, the job's labels from its template when it has none, and an
    empty ``status`` (the strategy's)."""
    generate_job_selector(job)
    _job_labels_from_template(job)
    if not job.get("status"):
        job["status"] = {}


def kubelet_ids(node_name: str) -> dict[str, str]:
    """The identifiers a kubelet reports in ``status.nodeInfo`` (``machineID`` from /etc/machine-id,
    ``systemUUID`` from the firmware, ``bootID`` from the kernel), stable per node name. NodeSystemInfo
    declares them required: the official clients refuse a Node without them (the Python client's
    ``list_node`` fails to decode it)."""
    digest = hashlib.sha256(node_name.encode()).hexdigest()
    boot = hashlib.sha256(f"{node_name}/boot".encode()).hexdigest()

    def as_uuid(h: str) -> str:
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    return {"machineID": digest[:32], "systemUUID": as_uuid(digest[32:64]), "bootID": as_uuid(boot[:32])}
