"""What a Ray Train job's log says of its training, for a reader: the rank-0 worker's lines, the run's result and
Ray's verdict (``training_lines``), as ``flexq demo`` shows each job's output."""

from __future__ import annotations

import re

__all__ = ["training_lines"]

_TRAINING = (
    "Local Devices",
    "Starting training",
    "Epoch ",
    "Training Complete",
    "Run Result",
    "succeeded",
    "failed",
    "Error",
    "[flexq",
)


_RANK = re.compile(r"\(ip=[^,]*, pid=(\d+)\) world_rank=(\d+)")
_WORKER = re.compile(r"^\((?:RayTrainWorker|_RayTrainWorker__execute\.\w+) pid=(\d+)")


def training_lines(output: str, limit: int) -> tuple[list[str], str]:
    """The lines of a job's log that tell how training went, in the order they were printed: the rank-0
    worker's lines (train.py's prints, when Ray Train's controller says which worker is rank 0), then the run's
    result and Ray's verdict; at most ``limit``, the first ones kept. Else the log's last ``limit`` lines. Also
    a title saying which."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    ranks = {m.group(2): m.group(1) for ln in lines for m in [_RANK.search(ln)] if m}
    rank0 = ranks.get("0")
    picked = []
    for ln in lines:
        if not any(word in ln for word in _TRAINING):
            continue
        worker = _WORKER.match(ln)
        if rank0 is not None and worker is not None and worker.group(1) != rank0:
            continue  # another worker's copy of the same lines
        if worker is not None and ln in picked:
            continue  # the same line printed again (by a second log monitor of the emulated hosts)
        picked.append(ln)
    if picked:
        what = "rank-0 worker's training lines" if rank0 is not None else "training lines"
        if len(picked) > limit:  # keep the start of training and the verdict
            picked = picked[: limit - 2] + ["…"] + picked[-1:]
        return picked, f"{what}, {len(lines)} lines in all"
    return lines[-limit:], f"last {min(limit, len(lines))} lines"
