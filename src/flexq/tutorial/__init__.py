"""The tutorial's own files, verbatim: ``dws-tpu-queue.yaml``, ``rayjob-tpu-v6e-dws.yaml`` and ``train.py``.

``render(name, **env)`` substitutes ``${VAR}`` as ``envsubst`` does (unset variables become empty).
"""

from __future__ import annotations

import re
from importlib import resources

TUTORIAL_ENV = {
    "ZONE": "us-east5-b", "REGION": "us-east5", "CLUSTER_NAME": "tpu-cluster", "GKE_VERSION": "1.34",
    "ONDEMAND_NODEPOOL": "on-demand-pool", "DWS_NODEPOOL": "dws-pool",
}


def text(name: str) -> str:
    """A tutorial file's text as published."""
    return resources.files(__package__).joinpath(name).read_text()


def render(name: str, **env: str) -> str:
    """The file with ``${VAR}`` substituted from ``env`` over the tutorial's own values, as envsubst would."""
    values = {**TUTORIAL_ENV, **env}
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: values.get(m.group(1) or m.group(2), ""), text(name))
