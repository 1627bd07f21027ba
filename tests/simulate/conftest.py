"""Builders for the simulator's tests: small study directories written into tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: QUOTA}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
"""


def write_study(
    root: Path, doc: dict[str, Any], quota: int | str = 2, files: dict[str, str] | None = None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "queues.yaml").write_text(QUEUES.replace("QUOTA", str(quota)))
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    doc = {"manifests": ["queues.yaml"], **doc}
    (root / "simulation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


@pytest.fixture
def study_dir(tmp_path: Path):
    def make(doc: dict[str, Any], **kw: Any) -> Path:
        return write_study(tmp_path / "study", doc, **kw)

    return make
