"""How the twin honours a RayJob's ``runtimeEnvYAML`` on the local Ray cluster: a visible, documented policy.

Every local Ray node runs the project's own interpreter and environment (``sys.executable``'s venv); the
twin never installs packages while a job runs. So a ``pip`` (or ``uv``) requirement is decided like this,
one log line each, printed at the top of the submitter's log (``kubectl logs job/<rayjob>``):

- **satisfied**: the project is installed and its version matches the specifier → used as is;
- **substituted**: the project is installed in another version (the tutorial asks ``pandas==2.3.3``; the
  venv has pandas 3.x) → the installed version is used, and the line says so;
- **TPU extra dropped**: ``[tpu]`` (and ``[cuda*]``) extras need real accelerators; emulated TPU hosts run
  JAX on the CPU, so the extra is ignored (``jax[tpu]==0.8.2`` → the installed ``jax``);
- **refused**: the project is not installed at all → the submission fails with a clear message
  (the RayJob ends ``Failed``), because the twin cannot promise the job the package.

``conda``, ``container`` and ``image_uri`` are refused the same way; every other runtime env key
(``env_vars``, ``working_dir``, ``py_modules``, ``config``, ...) is passed to Ray unchanged.

Pure apart from reading installed distribution metadata; must not import anything in flexq.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

_ACCEL_EXTRAS = ("tpu", "cuda", "cuda12", "cuda13", "cuda12_pip", "cuda12_local", "rocm")
_REFUSED_KEYS = ("conda", "container", "image_uri")


@dataclass(frozen=True)
class RuntimeEnvDecision:
    """The runtime env to hand to Ray, the log lines explaining it, and an error if it is refused."""

    runtime_env: dict
    lines: list[str] = field(default_factory=list)
    error: str = ""


def installed_version(project: str) -> str | None:
    """Version of an installed distribution in this interpreter's environment, or None."""
    try:
        return metadata.version(project)
    except metadata.PackageNotFoundError:
        return None


def _requirements(spec: object) -> list[str]:
    if isinstance(spec, dict):
        spec = spec.get("packages") or []
    if isinstance(spec, str):
        return [s.strip() for s in spec.splitlines() if s.strip() and not s.strip().startswith("#")]
    return [str(s) for s in (spec or [])]  # type: ignore[attr-defined]


def decide(
    runtime_env: dict | None, version_of: Callable[[str], str | None] = installed_version
) -> RuntimeEnvDecision:
    """Apply the policy above to a runtime env dict (the JSON KubeRay passes with ``--runtime-env-json``)."""
    env = dict(runtime_env or {})
    lines: list[str] = []
    for key in _REFUSED_KEYS:
        if key in env:
            msg = (
                f"runtime_env '{key}' is not supported by the flexq twin's local Ray cluster "
                "(every node runs the project's own Python environment)"
            )
            return RuntimeEnvDecision(runtime_env={}, lines=[*lines, "refused: " + msg], error=msg)
    for key in ("pip", "uv"):
        if key not in env:
            continue
        spec = env.pop(key)
        for raw in _requirements(spec):
            line, error = _decide_one(key, raw, version_of)
            lines.append(line)
            if error:
                return RuntimeEnvDecision(runtime_env={}, lines=lines, error=error)
    return RuntimeEnvDecision(runtime_env=env, lines=lines)


def _decide_one(key: str, raw: str, version_of: Callable[[str], str | None]) -> tuple[str, str]:
    """One requirement: (log line, error or '')."""
    try:
        req = Requirement(raw)
    except InvalidRequirement as exc:
        msg = f"runtime_env {key} requirement {raw!r} is not a valid requirement: {exc}"
        return "refused: " + msg, msg
    name = canonicalize_name(req.name)
    have = version_of(req.name)
    if have is None:
        msg = (
            f"runtime_env {key} requirement {raw!r}: {name} is not installed in the twin's Python "
            "environment, and the twin does not install packages for jobs; install it into the project's "
            "venv or remove it from runtimeEnvYAML"
        )
        return "refused: " + msg, msg
    notes = []
    dropped = sorted(e for e in req.extras if e.lower() in _ACCEL_EXTRAS)
    if dropped:
        notes.append(f"extra [{','.join(dropped)}] dropped: emulated TPU hosts run JAX on the CPU")
    if req.specifier and not req.specifier.contains(have, prereleases=True):
        verdict = f"substituted: using installed {name}=={have} (requested {req.specifier})"
    else:
        verdict = f"satisfied by installed {name}=={have}"
    return f"runtime_env {key} {raw!r}: " + "; ".join([verdict, *notes]), ""
