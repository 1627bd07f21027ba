"""Container image references as the kubelet parses them before a pull (distribution/reference)."""

from __future__ import annotations

import pytest

from flexq.semantics.pods import image_reference_error


@pytest.mark.parametrize(
    "image",
    [
        "busybox",
        "python:3.11",
        "rayproject/ray:2.53.0-py311",
        "registry.k8s.io/pause:3.10",
        "localhost:5000/team/train:v1",
        "us-docker.pkg.dev/p/repo/img@sha256:" + "a" * 64,
        "REGISTRY/flexq-fallback:0.1.0",  # an upper-case first component is a registry host
        "a__b/c-d--e:T_1.0",
    ],
)
def test_references_the_kubelet_can_pull(image: str) -> None:
    assert image_reference_error(image) is None


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("BUSYBOX", "invalid reference format: repository name must be lowercase"),
        ("team/Train:1", "invalid reference format: repository name must be lowercase"),
        ("bad image", "invalid reference format"),
        ("x:", "invalid reference format"),
        ("", "invalid reference format"),
        ("x@sha256:short", "invalid reference format"),
    ],
)
def test_references_it_cannot_parse_say_why(image: str, why: str) -> None:
    assert image_reference_error(image) == f'couldn\'t parse image reference "{image}": {why}'
