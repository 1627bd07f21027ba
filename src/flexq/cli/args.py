"""What every sub-command's parser shares: durations and Kueue releases as option values, the examples
paragraph, the kubeconfig and twin-home flags. Each sub-command's parser lives in its own module
(``add_parser(sub)``); ``flexq.cli.main`` gathers them."""

from __future__ import annotations

import argparse

__all__ = ["duration", "kueue_release", "examples", "kube_flags", "home_flag"]


def duration(text: str) -> float:
    """An option's time: seconds (``15``, ``2.5``) or a duration (``90s``, ``30m``, ``2h``, ``1h30m``)."""
    # the capacity profile's duration rule, loaded when an option is read: its module is the profile's pydantic
    # schema, which a command that parses no duration (flexq status) need not load
    from flexq.api.capacity_profile import parse_duration

    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def kueue_release(text: str) -> str:
    """``--kueue``: a Kueue release the twin models ("0.19.2", "v0.20.7"), as its plain version."""
    from flexq.api.kueue_versions import resolve
    from flexq.errors import Invalid

    try:
        return resolve(text).version
    except Invalid as exc:
        raise argparse.ArgumentTypeError(exc.causes[0].message if exc.causes else str(exc)) from None


def examples(*lines: str) -> str:
    """The epilog's examples, one a line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def kube_flags(p: argparse.ArgumentParser, namespace: bool = True) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    if namespace:
        p.add_argument("-n", "--namespace", default="default", help="the namespace")


def home_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", help="the twin's state directory (default: $FLEXQ_HOME or ~/.flexq)")
