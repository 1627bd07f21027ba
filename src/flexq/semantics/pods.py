"""Pod lifecycle facts every domain reads the same way."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["TERMINAL_PHASES", "is_terminal", "image_reference_error"]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodTerminal``: the pod's phase is Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


# The container image reference grammar (distribution/reference, as the kubelet parses it before a pull):
# [domain[:port]/]path-component[/path-component...][:tag][@digest]
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"(?:(?:{_DOMAIN})/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?"
)
MAX_IMAGE_NAME = 255  # distribution/reference NameTotalLengthMax


def image_reference_error(image: str) -> str | None:
    """Why the kubelet cannot parse ``image`` as a container image reference (its ``InvalidImageName``:
    ``couldn't parse image reference "X": invalid reference format``), or None when it can."""
    if len(image) > 4 * MAX_IMAGE_NAME:
        return f"couldn't parse image reference: it is {len(image)} characters long"
    if image and _REFERENCE.fullmatch(image):
        return None
    why = "invalid reference format"
    if image and image != image.lower() and _REFERENCE.fullmatch(image.lower()):
        why += ": repository name must be lowercase"
    return f'couldn\'t parse image reference "{image}": {why}'
