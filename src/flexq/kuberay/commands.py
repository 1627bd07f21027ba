"""The shell commands KubeRay puts in pods, built (controller side) and read back (executor side).

Owns:
- the head/worker container command, ``ulimit -n 65536; ray start [--head] --block ...``, with KubeRay's
  defaulting of ``rayStartParams`` from the container's resources (``num-cpus`` from the cpu limit rounded up,
  ``memory`` in bytes, ``num-gpus``, ``{"TPU": n}`` from ``google.com/tpu``), as in KubeRay's
  ``common/pod.go``;
- parsing a pod's ``ray start`` back into parameters (the local Ray executor starts its own ``ray start`` from
  them, overriding addresses, ports and directories);
- the K8sJobMode submitter script (``common/job.go``: wait for ``/api/gcs_healthz``; ``ray job status`` or
  submit ``--no-wait``; ``ray job logs --follow``) and the rewrites the local executor applies to it: the
  cluster DNS address becomes the local dashboard, mount paths become local directories, the runtime env
  JSON is replaced, and the ``ray job status`` existence probe becomes an HTTP probe of the same endpoint.

Pure; must not import anything in flexq but ``flexq.api``.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field

from flexq.api.quantity import parse_quantity
from flexq.api.wellknown import RESOURCE_TPU

from . import names

TPU_RESOURCE = RESOURCE_TPU
GPU_RESOURCE = "nvidia.com/gpu"
_HEALTH_PY = (
    "import sys,urllib.request;"
    "r=urllib.request.urlopen(sys.argv[1],timeout={timeout});"
    "sys.exit(0 if r.status==200 else 1)"
)
_EXISTS_PY = (  # with the Ray token where one is set (the local executor turns Ray's token auth on)
    "import os,sys,urllib.request;"
    "p=os.environ.get('RAY_AUTH_TOKEN_PATH');"
    "h={'Authorization':'Bearer '+open(p).read().strip()} if p else {};"
    "urllib.request.urlopen(urllib.request.Request(sys.argv[1].rstrip('/')+'/api/jobs/'+sys.argv[2],headers=h),"
    "timeout=5)"
)


# ---------------------------------------------------------------------------------------------- ray start


def _container_resources(container: dict) -> dict[str, str]:
    """Limits, falling back to requests per resource (KubeRay reads limits first)."""
    res = container.get("resources") or {}
    out = dict(res.get("requests") or {})
    out.update(res.get("limits") or {})
    return {k: str(v) for k, v in out.items()}


def default_ray_start_params(
    container: dict, params: dict[str, str] | None, *, head: bool, head_address: str = ""
) -> dict[str, str]:
    """``rayStartParams`` after KubeRay's defaulting for one head or worker container."""
    out = {k: str(v) for k, v in (params or {}).items()}
    res = _container_resources(container)
    if "num-cpus" not in out and "cpu" in res:
        out["num-cpus"] = str(math.ceil(parse_quantity(res["cpu"])))
    if "memory" not in out and "memory" in res:
        out["memory"] = str(math.ceil(parse_quantity(res["memory"])))
    if "num-gpus" not in out and GPU_RESOURCE in res:
        out["num-gpus"] = str(math.ceil(parse_quantity(res[GPU_RESOURCE])))
    tpus = math.ceil(parse_quantity(res.get(TPU_RESOURCE, "0")))
    if tpus > 0:
        extra = json.loads(out.get("resources", "{}").strip("'") or "{}")
        extra.setdefault("TPU", tpus)
        out["resources"] = json.dumps(extra, separators=(",", ":"), sort_keys=True)
    out.setdefault("metrics-export-port", str(names.PORT_METRICS))
    out.setdefault("dashboard-agent-listen-port", str(names.PORT_AGENT))
    out.setdefault("block", "true")
    if head:
        out.setdefault("dashboard-host", "0.0.0.0")
    else:
        out.setdefault("address", head_address)
    return out


def ray_start_command(params: dict[str, str], *, head: bool) -> str:
    """KubeRay's container command text: ``ulimit -n 65536; ray start [--head] --k=v ...`` (keys sorted)."""
    parts = ["ray", "start"] + (["--head"] if head else [])
    for key in sorted(params):
        value = params[key]
        if value == "true" and key in ("block", "head"):
            parts.append(f"--{key}")
        elif key == "resources":
            parts.append(f"--resources={shlex.quote(value)}")
        else:
            parts.append(f"--{key}={value}")
    return "ulimit -n 65536; " + " ".join(parts)


@dataclass(frozen=True)
class RayStartSpec:
    """What a pod's ``ray start`` asks for, as the local executor needs it."""

    head: bool
    num_cpus: int | None = None
    num_gpus: int | None = None
    memory: int | None = None
    resources: dict[str, float] = field(default_factory=dict)
    labels: str = ""


def _container_text(container: dict) -> str:
    return " ".join([*(container.get("command") or []), *(container.get("args") or [])])


def parse_ray_start(pod: dict) -> RayStartSpec:
    """Read the ray container's ``ray start`` parameters; without one, derive them from its resources."""
    containers = pod.get("spec", {}).get("containers") or [{}]
    container = containers[0]
    head = (pod.get("metadata", {}).get("labels") or {}).get(names.LABEL_NODE_TYPE) == "head"
    text = _container_text(container)
    idx = text.find("ray start")
    if idx < 0:
        params = default_ray_start_params(container, {}, head=head, head_address="")
    else:
        params = _parse_flags(text[idx + len("ray start") :])
        head = head or "head" in params
    resources = {k: float(v) for k, v in json.loads(params.get("resources") or "{}").items()}

    def _int(key: str) -> int | None:
        return int(float(params[key])) if params.get(key) not in (None, "") else None

    return RayStartSpec(
        head=head,
        num_cpus=_int("num-cpus"),
        num_gpus=_int("num-gpus"),
        memory=_int("memory"),
        resources=resources,
        labels=params.get("labels", ""),
    )


def _parse_flags(text: str) -> dict[str, str]:
    """``--k=v`` / ``--k v`` / ``--flag`` tokens up to the first shell separator."""
    out: dict[str, str] = {}
    tokens = shlex.split(re.split(r";|&&|\|\|", text, maxsplit=1)[0])
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--"):
            key, eq, value = tok[2:].partition("=")
            if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                value = tokens[i + 1]
                i += 1
            out[key] = value if (eq or value) else "true"
        i += 1
    return out


# ------------------------------------------------------------------------------------------- submitter


def _dq(text: str) -> str:
    """Go's ``strconv.Quote`` for the text KubeRay puts in the script (bash reads it as a "..." string)."""
    return json.dumps(text)


def submitter_script(
    *,
    address: str,
    job_id: str,
    entrypoint: str,
    runtime_env_json: str = "",
    metadata_json: str = "",
    entrypoint_num_cpus: float = 0,
    entrypoint_num_gpus: float = 0,
    entrypoint_resources: str = "",
) -> str:
    """The K8sJobMode submitter's shell script (KubeRay ``BuildJobSubmitCommand``)."""
    if not address.startswith("http://"):
        address = "http://" + address
    health = f"python3 -c {_dq(_HEALTH_PY.format(timeout=2))} {address}/api/gcs_healthz"
    cmd = [
        "until",
        health,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        _dq(f"Waiting for Ray Dashboard GCS to become healthy at {address} ..."),
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
        "if",
        "!",
        "ray",
        "job",
        "status",
        "--address",
        address,
        job_id,
        ">/dev/null",
        "2>&1",
        ";",
        "then",
        "ray",
        "job",
        "submit",
        "--address",
        address,
        "--no-wait",
    ]
    if runtime_env_json:
        cmd += ["--runtime-env-json", _dq(runtime_env_json)]
    if metadata_json:
        cmd += ["--metadata-json", _dq(metadata_json)]
    cmd += ["--submission-id", job_id]
    if entrypoint_num_cpus > 0:
        cmd += ["--entrypoint-num-cpus", f"{entrypoint_num_cpus:f}"]
    if entrypoint_num_gpus > 0:
        cmd += ["--entrypoint-num-gpus", f"{entrypoint_num_gpus:f}"]
    if entrypoint_resources:
        cmd += ["--entrypoint-resources", _dq(entrypoint_resources)]
    cmd += [
        "--",
        entrypoint.strip(),
        ";",
        "fi",
        ";",
        "ray",
        "job",
        "logs",
        "--address",
        address,
        "--follow",
        job_id,
    ]
    return " ".join(cmd)


_ADDR_RE = re.compile(r"--address\s+(?:http://)?([A-Za-z0-9.\-]+):(\d+)")
_RENV_RE = re.compile(r'--runtime-env-json\s+("(?:[^"\\]|\\.)*"|\'[^\']*\')')
_STATUS_RE = re.compile(r"ray job status --address (\S+) (\S+)")


def submitter_script_of(pod: dict) -> str:
    """The submitter container's script: the ``-c``/``--`` argument of a shell command, or the whole text."""
    containers = pod.get("spec", {}).get("containers") or [{}]
    container = containers[0]
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if command and command[0].rsplit("/", 1)[-1] in ("bash", "sh"):
        return args[-1] if args else (command[-1] if len(command) > 1 else "")
    return " ".join(shlex.quote(t) for t in [*command, *args])


def submitter_target(script: str) -> tuple[str, str] | None:
    """``(host, port)`` of the first ``--address`` in the script (the cluster's dashboard address)."""
    m = _ADDR_RE.search(script)
    return (m.group(1), m.group(2)) if m else None


def service_of_host(host: str, default_namespace: str) -> tuple[str, str]:
    """``(namespace, service)`` of ``<svc>[.<ns>[.svc[.cluster.local]]]``."""
    parts = host.split(".")
    if len(parts) >= 2 and parts[1] != "svc":
        return parts[1], parts[0]
    return default_namespace, parts[0]


def _bash_dq_decode(quoted: str) -> str:
    if quoted.startswith("'"):
        return quoted[1:-1]
    return re.sub(r'\\([\\"$`])', r"\1", quoted[1:-1])


def runtime_env_of(script: str) -> dict | None:
    """The runtime env JSON passed with ``--runtime-env-json``, or None."""
    m = _RENV_RE.search(script)
    return json.loads(_bash_dq_decode(m.group(1))) if m else None


def rewrite_paths(text: str, mounts: dict[str, str]) -> str:
    """Replace absolute mount paths (``/app/train.py``) by their local directories, longest mount first."""
    for mount in sorted(mounts, key=len, reverse=True):
        if mount in ("", "/"):
            continue
        pattern = re.compile(r"(?<![\w/.:-])" + re.escape(mount.rstrip("/")) + r"(?=/|\s|$|[\"';])")
        text = pattern.sub(mounts[mount].replace("\\", "\\\\"), text)  # the path taken literally
    return text


def rewrite_submitter(
    script: str, *, local_address: str, runtime_env: dict | None, mounts: dict[str, str]
) -> str:
    """The script the local executor runs: loopback dashboard, local paths, policy-applied runtime env."""
    target = submitter_target(script)
    if target is not None:
        host, port = target
        script = re.sub(r"(http://)?" + re.escape(f"{host}:{port}"), "http://" + local_address, script)
    if runtime_env is not None:
        renv = json.dumps(runtime_env, separators=(",", ":"))
        script = _RENV_RE.sub(lambda _m: "--runtime-env-json " + shlex.quote(renv), script)
    script = _STATUS_RE.sub(
        lambda m: f"python3 -c {shlex.quote(_EXISTS_PY)} {m.group(1)} {m.group(2)}", script
    )
    return rewrite_paths(script, mounts)
