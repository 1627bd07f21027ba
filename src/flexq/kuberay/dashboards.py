"""Where the RayJob controller reads a Ray job's status: KubeRay asks the Ray dashboard; the twin has two.

Owns: the ``RayDashboard`` protocol the RayJob controller reads through (``accepts`` a RayJob, answers its job's
status without blocking, says whether a running job must be polled), and its two implementations, chosen by the
assembly (``flexq.kuberay.registry``), never by the controller:

- ``LiveDashboard``: a cluster run for real by the local Ray executor, asked through its ``job_info``
  (``GET /api/jobs/<id>`` on the real dashboard, cached, non-blocking); polled every ``POLL_S``.
- ``SimulatedDashboard``: a simulated RayJob (``twin.flexq.dev/run-seconds`` annotation, or every RayJob of a twin
  whose executor is ``simulated``). In K8sJobMode the Ray job's status is its submitter Job's (running while the
  Job runs, ``SUCCEEDED``/``FAILED`` when it completes or fails); in HTTPMode it is submitted on entering Running
  (``rayJobInfo.startTime``) and done ``twin.flexq.dev/run-seconds`` later with ``twin.flexq.dev/outcome``;
  InteractiveMode jobs are not in a simulated dashboard. It answers with the seconds until the status changes,
  so the controller wakes exactly then instead of polling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from flexq.clock import parse_time

from . import names

POLL_S = 2.0  # how often a running real job's dashboard status is read (KubeRay: 3 s)
DEFAULT_SIM_SECONDS = 60.0  # a simulated HTTPMode job without run-seconds (as the simulated pod executor)

JobInfo = tuple[dict | None, float | None]  # (the dashboard's job details or None, seconds until it changes)


class JobInfoSource(Protocol):
    """Answers ``GET /api/jobs/<id>`` for a cluster, without blocking (None: not known yet)."""

    def job_info(self, namespace: str, cluster: str, job_id: str) -> dict | None:
        """The dashboard's job details (``status``, ``message``, ``start_time``, ``end_time``...)."""


class RayDashboard(Protocol):
    """What the RayJob controller asks about the Ray job of one RayJob."""

    polls: bool  # a running job's status must be read again every POLL_S (a real dashboard)

    def accepts(self, rayjob: dict) -> bool:
        """Whether this dashboard knows the RayJob's Ray job."""

    def job_info(self, rayjob: dict, status: dict, submitter: dict | None, now: float) -> JobInfo:
        """The job's details for ``status.jobId`` (None: not known yet), and when to look again."""


def submission_mode(rayjob: dict) -> str:
    return rayjob["spec"].get("submissionMode") or "K8sJobMode"


def job_finished(job: dict | None) -> tuple[str, str, str] | None:
    """("Complete" | "Failed", reason, message) once the submitter Job has finished."""
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"], c.get("reason", ""), c.get("message", "")
    return None


class LiveDashboard:
    """The real Ray dashboards of the local Ray executor's clusters."""

    polls = True

    def __init__(self, sources: Sequence[JobInfoSource]) -> None:
        self.sources = list(sources)

    def accepts(self, rayjob: dict) -> bool:
        return bool(self.sources) and not names.is_simulated(rayjob)

    def job_info(self, rayjob: dict, status: dict, submitter: dict | None, now: float) -> JobInfo:
        for src in self.sources:
            info = src.job_info(rayjob["metadata"]["namespace"], status["rayClusterName"], status["jobId"])
            if info is not None:
                return info, None
        return None, None


class SimulatedDashboard:
    """The simulated dashboard: answers from the submitter Job or from the run-seconds annotation."""

    polls = False

    def __init__(self, *, every_rayjob: bool) -> None:
        self.every_rayjob = every_rayjob  # the twin's executor is simulated: no real dashboard exists

    def accepts(self, rayjob: dict) -> bool:
        return self.every_rayjob or names.is_simulated(rayjob)

    def job_info(self, rayjob: dict, status: dict, submitter: dict | None, now: float) -> JobInfo:
        mode = submission_mode(rayjob)
        if mode == "K8sJobMode":
            return _info_from_submitter(submitter), None
        if mode == "HTTPMode":
            return _http_job(rayjob, status, now)
        return None, None  # InteractiveMode: the user's job is not in a simulated dashboard


def _info_from_submitter(job: dict | None) -> dict | None:
    """The Ray job's status is the submitter Job's."""
    if job is None:
        return None
    finished = job_finished(job)
    if finished is not None:
        return {
            "status": "SUCCEEDED" if finished[0] == "Complete" else "FAILED",
            "message": finished[2] or finished[1],
        }
    return {"status": "RUNNING" if ((job.get("status") or {}).get("active") or 0) > 0 else "PENDING"}


def _http_job(rayjob: dict, status: dict, now: float) -> JobInfo:
    """HTTPMode: submitted when first asked; ends run-seconds later."""
    start_s = (status.get("rayJobInfo") or {}).get("startTime")
    start = parse_time(start_s) if start_s else now
    anns = rayjob["metadata"].get("annotations") or {}
    try:
        run = max(0.0, float(anns.get(names.ANN_RUN_SECONDS, DEFAULT_SIM_SECONDS)))
    except ValueError:
        run = DEFAULT_SIM_SECONDS
    info = {"status": "RUNNING", "start_time": start * 1000.0}
    if now < start + run:
        return info, start + run - now
    failed = anns.get(names.ANN_OUTCOME, "Succeeded").strip().lower() == "failed"
    info.update(
        {
            "status": "FAILED" if failed else "SUCCEEDED",
            "end_time": (start + run) * 1000.0,
            "message": "Job failed due to an application error, last available logs (truncated to 20,000 "
            "chars):"
            if failed
            else "Job finished successfully.",
        }
    )
    return info, None
