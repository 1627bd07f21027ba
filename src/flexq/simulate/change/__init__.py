"""A change applied to a study: the room below both ``flexq.simulate.whatif`` (a cause's options, run before they
are shown) and ``flexq.simulate.sweep`` (a search over knobs), which are both made of it.

``knob`` (``Knob``: what a change turns and the values to try), ``apply`` (``apply_point``: a point — one value
per knob — applied to a copy of a variant), ``diff`` (what a change does, as a reader takes it: ``diff``,
``apply_yaml`` for ``kubectl apply -f``, ``change_size``). Imports neither ``whatif`` nor ``sweep`` (an
import-linter contract holds it). Must not import flexq.http.
"""

from __future__ import annotations

from flexq.simulate.change.apply import apply_point
from flexq.simulate.change.diff import apply_yaml, change_size, diff
from flexq.simulate.change.knob import KINDS, Knob

__all__ = ["Knob", "KINDS", "apply_point", "apply_yaml", "change_size", "diff"]
