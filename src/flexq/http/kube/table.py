"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` objects for ``kubectl get``.

Owns: the JSONPath subset printer columns use (``.a.b``, ``[0]``, ``[*]``, ``[?(@.type=='X')]``),
``human_duration`` (apimachinery's ``HumanDuration``: ``45s``, ``3m12s``, ``5h``, ``2d3h``), the cells of
the built-in kinds kubectl knows (Pod, Job, Namespace, Node, Event, ConfigMap, Service), and ``table``
which turns objects into rows with each KindInfo's printer columns. Pure; ``now`` is an argument.
Must not import flexq modules outside ``flexq.api`` and ``flexq.clock``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from flexq.api.registry import KindInfo, PrinterColumn
from flexq.clock import parse_time

_TOKEN = re.compile(
    r"\.([A-Za-z0-9_$-]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]"
    r"|\['([^']+)'\]"
)


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (no match -> [])."""
    cur = [obj]
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            return []
        pos = m.end()
        field, index, fkey, fval, quoted = m.groups()
        nxt: list[Any] = []
        for c in cur:
            if field is not None or quoted is not None:
                key = field if field is not None else quoted
                if isinstance(c, dict) and key in c:
                    nxt.append(c[key])
            elif index is not None:
                if isinstance(c, list):
                    if index == "*":
                        nxt.extend(c)
                    elif int(index) < len(c):
                        nxt.append(c[int(index)])
            elif isinstance(c, list):
                for item in c:
                    v: Any = item
                    for part in fkey.split("."):
                        v = v.get(part) if isinstance(v, dict) else None
                    if v is not None and str(v) == fval:
                        nxt.append(item)
        cur = nxt
    return cur


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``."""
    s = int(seconds)
    if s < 0:
        s = 0
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    if h < 24 * 365 * 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"


def age(ts: str | None, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        return human_duration(now - parse_time(ts))
    except ValueError:
        return "<invalid>"


def _cell(col: PrinterColumn, obj: dict, now: float) -> Any:
    found = jsonpath(obj, col.json_path)
    if not found or found[0] is None:
        return None
    v = found[0]
    if col.type == "date":
        return age(v, now) if isinstance(v, str) else v
    if col.type == "integer" and isinstance(v, bool | int | float):
        return int(v)
    if col.type in ("string",) and not isinstance(v, str):
        return (
            json.dumps(v) if isinstance(v, dict | list) else str(v).lower() if isinstance(v, bool) else str(v)
        )
    return v


# -- built-in kinds (their printers are compiled into the real API server) --------------------------
def _pod_cells(o: dict, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    cs = st.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    reason = st.get("reason") or st.get("phase") or "Pending"
    for c in cs:
        state = c.get("state") or {}
        for k in ("waiting", "terminated"):
            if (state.get(k) or {}).get("reason"):
                reason = state[k]["reason"]
    if o["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in cs)
    return [f"{ready}/{total}", reason, restarts, age(o["metadata"].get("creationTimestamp"), now)]


def _job_cells(o: dict, now: float) -> list[Any]:
    st = o.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    status = (
        "Complete"
        if conds.get("Complete") == "True"
        else "Failed"
        if conds.get("Failed") == "True"
        else "Suspended"
        if conds.get("Suspended") == "True"
        else "Running"
    )
    comps = (o.get("spec") or {}).get("completions", 1)
    dur = ""
    if st.get("startTime"):
        end = parse_time(st["completionTime"]) if st.get("completionTime") else now
        dur = human_duration(end - parse_time(st["startTime"]))
    return [
        status,
        f"{st.get('succeeded', 0)}/{comps}",
        dur,
        age(o["metadata"].get("creationTimestamp"), now),
    ]


def _event_cells(o: dict, now: float) -> list[Any]:
    """``printEvent`` with ``Wide`` (the API server always prints wide; kubectl hides priority-1 columns)."""
    inv = o.get("involvedObject") or {}
    meta = o["metadata"]
    first = o.get("firstTimestamp") or o.get("eventTime")
    last = o.get("lastTimestamp") or first
    count = o.get("count") or 1
    series = o.get("series")
    if isinstance(series, dict):
        last = series.get("lastObservedTime") or last
        count = series.get("count") or count
    kind = (inv.get("kind") or "").lower()
    src = o.get("source") or {}
    component = src.get("component") or o.get("reportingComponent") or ""
    host = src.get("host") or o.get("reportingInstance") or ""
    return [
        age(last, now) if last else "<unknown>",
        o.get("type", ""),
        o.get("reason", ""),
        f"{kind}/{inv['name']}" if inv.get("name") else kind,
        inv.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        (o.get("message") or "").strip(),
        age(first, now) if first else "<unknown>",
        int(count),
        meta.get("name", ""),
    ]


def _node_cells(o: dict, now: float) -> list[Any]:
    """The API server's node printer: Ready/NotReady/Unknown (+SchedulingDisabled), roles from the
    ``node-role.kubernetes.io/<role>`` labels, kubelet version; wide: addresses and node info."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    ready = next((c.get("status") for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    status = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if spec.get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = sorted(
        {
            k.split("/", 1)[1]
            for k in labels
            if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]
        }
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    info = st.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in st.get("addresses") or []}
    return [
        status,
        ",".join(roles) or "<none>",
        age(o["metadata"].get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _pod_wide_cells(o: dict, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    gates = spec.get("readinessGates") or []
    if gates:
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        gate = f"{sum(1 for g in gates if conds.get(g.get('conditionType')) == 'True')}/{len(gates)}"
    else:
        gate = "<none>"
    return [
        *_pod_cells(o, now),
        st.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        gate,
    ]


def _selector(sel: dict | None) -> str:
    if not sel:
        return "<none>"
    parts = (
        [f"{k}={v}" for k, v in sorted(sel.items())] if all(isinstance(v, str) for v in sel.values()) else []
    )
    if not parts:  # a LabelSelector
        parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
        for e in sel.get("matchExpressions") or []:
            op, vals = e.get("operator", ""), ",".join(e.get("values") or [])
            parts.append(
                {
                    "In": f"{e.get('key')} in ({vals})",
                    "NotIn": f"{e.get('key')} notin ({vals})",
                    "Exists": f"{e.get('key')}",
                    "DoesNotExist": f"!{e.get('key')}",
                }.get(op, op)
            )
    return ",".join(parts) or "<none>"


def _job_wide_cells(o: dict, now: float) -> list[Any]:
    spec = o.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        *_job_cells(o, now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        _selector(spec.get("selector")),
    ]


def _service_cells(o: dict, now: float) -> list[Any]:
    spec = o.get("spec") or {}
    ports = (
        ",".join(
            f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/"
            f"{p.get('protocol', 'TCP')}"
            for p in spec.get("ports") or []
        )
        or "<none>"
    )
    ingress = [
        i.get("ip") or i.get("hostname")
        for i in ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ]
    external = ",".join([*(x for x in ingress if x), *(spec.get("externalIPs") or [])])
    if not external:
        external = (
            "<pending>"
            if spec.get("type") == "LoadBalancer"
            else spec.get("externalName", "<none>")
            if spec.get("type") == "ExternalName"
            else "<none>"
        )
    return [
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        external,
        ports,
        age(o["metadata"].get("creationTimestamp"), now),
        _selector(spec.get("selector")),
    ]


# name -> (columns as (name, type[, priority]): priority 1 shows only with ``-o wide``; cells in that order)
BUILTIN: dict[str, tuple[list[tuple[Any, ...]], Callable[[dict, float], list[Any]]]] = {
    "pods": (
        [
            ("Ready", "string"),
            ("Status", "string"),
            ("Restarts", "string"),
            ("Age", "string"),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod_wide_cells,
    ),
    "nodes": (
        [
            ("Status", "string"),
            ("Roles", "string"),
            ("Age", "string"),
            ("Version", "string"),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        _node_cells,
    ),
    "jobs.batch": (
        [
            ("Status", "string"),
            ("Completions", "string"),
            ("Duration", "string"),
            ("Age", "string"),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        _job_wide_cells,
    ),
    "events": (
        [
            ("Last Seen", "string"),
            ("Type", "string"),
            ("Reason", "string"),
            ("Object", "string"),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string"),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1, "name"),
        ],
        _event_cells,
    ),
    "namespaces": (
        [("Status", "string"), ("Age", "string")],
        lambda o, now: [
            (o.get("status") or {}).get("phase", "Active"),
            age(o["metadata"].get("creationTimestamp"), now),
        ],
    ),
    "configmaps": (
        [("Data", "integer"), ("Age", "string")],
        lambda o, now: [
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o["metadata"].get("creationTimestamp"), now),
        ],
    ),
    "secrets": (
        [("Type", "string"), ("Data", "string"), ("Age", "string")],
        lambda o, now: [
            o.get("type", ""),
            len(o.get("data") or {}),
            age(o["metadata"].get("creationTimestamp"), now),
        ],
    ),
    "priorityclasses.scheduling.k8s.io": (
        [
            ("Value", "integer"),
            ("Global-Default", "boolean"),
            ("Age", "string"),
            ("PreemptionPolicy", "string"),
        ],
        lambda o, now: [
            o.get("value", 0),
            bool(o.get("globalDefault")),
            age(o["metadata"].get("creationTimestamp"), now),
            o.get("preemptionPolicy") or "PreemptLowerPriority",
        ],
    ),
    "leases.coordination.k8s.io": (
        [("Holder", "string"), ("Age", "string")],
        lambda o, now: [
            (o.get("spec") or {}).get("holderIdentity") or "",
            age(o["metadata"].get("creationTimestamp"), now),
        ],
    ),
    "customresourcedefinitions.apiextensions.k8s.io": (  # the API server's default table convertor
        [("Created At", "date")],
        lambda o, now: [o["metadata"].get("creationTimestamp")],
    ),
    "services": (
        [
            ("Type", "string"),
            ("Cluster-IP", "string"),
            ("External-IP", "string"),
            ("Port(s)", "string"),
            ("Age", "string"),
            ("Selector", "string", 1),
        ],
        _service_cells,
    ),
}


# built-in kinds whose printer does not start with the name (an Event's name is its last, wide column)
_NAME_NOT_FIRST = {"events"}


def columns(info: KindInfo) -> list[dict[str, Any]]:
    """``columnDefinitions``: Name, then the kind's columns (Age when it declares none)."""
    defs = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "priority": 0,
            "description": "Name must be unique within a namespace.",
        }
    ]
    if info.key in BUILTIN:
        if info.key in _NAME_NOT_FIRST:
            defs = []
        defs += [
            {
                "name": c[0],
                "type": c[1],
                "format": c[3] if len(c) > 3 else "",
                "priority": c[2] if len(c) > 2 else 0,
                "description": c[0],
            }
            for c in BUILTIN[info.key][0]
        ]
        return defs
    cols = info.printer_columns or [PrinterColumn("Age", ".metadata.creationTimestamp", "date")]
    for c in cols:
        defs.append(
            {
                "name": c.name,
                "type": c.type,
                "format": "",
                "priority": c.priority,
                "description": c.description or c.name,
            }
        )
    return defs


def row(info: KindInfo, obj: dict, now: float, include: str = "Metadata") -> dict[str, Any]:
    """One ``TableRow``; ``include`` is the request's ``includeObject`` (None, Metadata, Object)."""
    name = obj["metadata"]["name"]
    if info.key in BUILTIN:
        cells = BUILTIN[info.key][1](obj, now)
        if info.key not in _NAME_NOT_FIRST:
            cells = [name, *cells]
    else:
        cols = info.printer_columns or [PrinterColumn("Age", ".metadata.creationTimestamp", "date")]
        cells = [name, *(_cell(c, obj, now) for c in cols)]
    out: dict[str, Any] = {"cells": cells}
    if include == "Object":
        out["object"] = obj
    elif include != "None":
        out["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    return out


def table(
    info: KindInfo,
    objs: list[dict],
    now: float,
    resource_version: str,
    include: str = "Metadata",
    with_columns: bool = True,
) -> dict[str, Any]:
    """A ``Table`` of ``objs`` (already rendered in the requested version)."""
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns(info) if with_columns else [],
        "rows": [row(info, o, now, include) for o in objs],
    }


def wants_table(accept: str) -> bool:
    return "as=Table" in accept.replace(" ", "")
