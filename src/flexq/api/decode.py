"""Decoding bodies and manifests the way the API server does, with its limits.

Owns: ``load_json`` / ``load_yaml`` / ``load_yaml_all`` (JSON or YAML text -> plain data: YAML timestamps stay
strings as sigs.k8s.io/yaml leaves them, a key given twice in one map is refused as the API server's strict
YAML decoding and kubectl refuse it, JSON's ``NaN``/``Infinity`` are not JSON), and ``check_decoded`` (a bounded
walk over decoded data: nesting deeper than ``MAX_DEPTH`` is refused with 400, and data larger once expanded
than ``MAX_REQUEST`` bytes with 413, so that a YAML alias bomb of a few hundred bytes is refused after a few
million steps at most instead of expanding to gigabytes). Must not import ``flexq`` outside ``flexq.api`` and
``flexq.errors``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator
from typing import Any

import yaml

from flexq.errors import BadRequest, RequestEntityTooLarge

MAX_REQUEST = 3 * 1024 * 1024  # the API server's MaxRequestBodyBytes (and etcd's request limit)
MAX_DEPTH = 100  # deeper nesting than any object the twin serves needs; Python recursion stays far away
_TIMESTAMP = "tag:yaml.org,2002:timestamp"

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):
    """The safe loader without timestamp resolution and with duplicate keys refused."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            # only the keys written in this map: a key merged in with `<<: *anchor` and given again here is
            # an override (YAML's merge key), not a duplicate
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:  # as JSON keys: `1` and `true` are two keys ("1", "true"), though 1 == True in Python
                    key = _json_key(key, None)
                    dup = key in seen
                    seen.add(key)
                except (TypeError, yaml.YAMLError):  # unhashable, or null: refused below
                    continue
                if dup:
                    raise yaml.constructor.ConstructorError(
                        None, None, f'key "{key}" already set in map', key_node.start_mark
                    )
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # the base constructor's error
        self.flatten_mapping(node)  # merge keys (`<<: *anchor`) first, so that the keys written here win
        mapping: dict[str, Any] = {}  # keyed as JSON: Python's 1 == True would merge `1:` and `true:`
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                )
            value = self.construct_object(value_node, deep=deep)
            mapping[_json_key(key, value)] = value
        return mapping


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)


def _construct_int(loader: Any, node: Any) -> Any:
    """An integer of more than 4,000 digits stays its text, as go-yaml resolves a plain scalar that parses as
    neither an int nor a float64 (``resolve``): a string, which a Go int field refuses in encoding/json's
    words (``cannot unmarshal string into Go struct field ...``), not Python's 4,300-digit limit."""
    text = loader.construct_scalar(node)
    if isinstance(text, str) and len(text) > 4000:
        return text
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _json_key(key: Any, value: Any) -> str:
    """A YAML map key as sigs.k8s.io/yaml's YAML-to-JSON conversion writes it: integers, floats and booleans
    become their text (``1: x`` is ``{"1": "x"}``); a null key is refused, as there."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if key != key:
            return ".nan"
        if key in (_INF, -_INF):
            return ".inf" if key > 0 else "-.inf"
        return repr(key)
    shown = "<nil>" if key is None else type(key).__name__
    raise yaml.constructor.ConstructorError(
        None, None, f"unsupported map key of type: {shown}, key: {key!r}, value: {value!r}"[:300]
    )


def _yaml_error(exc: Exception) -> BadRequest:
    return BadRequest(f"error converting YAML to JSON: yaml: {exc}".replace("\n", " "))


def load_yaml(text: str) -> Any:
    """One YAML document -> data (BadRequest when malformed)."""
    try:
        return yaml.load(text, Loader=_Loader)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        raise _yaml_error(exc) from None


def load_yaml_all(text: str) -> list[Any]:
    """Every YAML document of ``text`` (empty ones dropped)."""
    try:
        docs: Iterator[Any] = yaml.load_all(text, Loader=_Loader)
        return [d for d in docs if d is not None]
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        raise _yaml_error(exc) from None


_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml_all(docs: list[Any]) -> str:
    """``yaml.safe_dump_all(docs, sort_keys=False)`` through libyaml's emitter where PyYAML has it (the same
    text, five times faster: a generated file of 6,000 manifests took 1.8 s in the pure-Python emitter)."""
    return str(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False))


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_lone_surrogates(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate (``"\\ud800"`` escaped in JSON with no partner) replaced by
    U+FFFD, as Go's JSON decoder does: such a string cannot be encoded as UTF-8 (stored, or sent back)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_lone_surrogates(v) for v in value]
    return value


class GoNumber(float):
    """A JSON number whose literal Python would not print back as it was sent (``1e-400``, ``1e40``, ``1E2``) or
    cannot hold (an integer of more than 4,300 digits, a float past float64: ``value`` is then infinite, marked
    ``huge``): its ``literal`` is what Go's ``UnmarshalTypeError`` quotes (``cannot unmarshal number 1e-400
    into ... of type int32``). Where a float is wanted it is its float; a huge one is refused wherever it lands
    (``godecode`` for a compiled-in kind's field, ``check_finite`` after a custom resource's schema)."""

    literal: str

    @property
    def huge(self) -> bool:
        return self in (_INF, -_INF)


def _number(text: str) -> float:
    value = float(text)
    if repr(value) == text:
        return value
    number = GoNumber(value)
    number.literal = text
    return number


def _integer(text: str) -> int | float:
    if len(text) <= 4000:  # far below int's 4,300-digit limit on conversion from text
        return int(text)
    number = GoNumber(_INF if text[0] != "-" else -_INF)  # past every integer and float64 type of Go
    number.literal = text
    return number


def load_json(text: str) -> Any:
    """JSON text -> data (BadRequest when malformed, nested too deep, or using NaN/Infinity). A number Python
    would not print back as sent is a ``GoNumber`` carrying its literal."""
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_number, parse_int=_integer)
    except RecursionError:
        raise BadRequest(f"json: exceeded max depth of {MAX_DEPTH}") from None
    except ValueError as exc:
        raise BadRequest(f"couldn't get version/kind; json parse error: {exc}") from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then is the decoded data walked
        try:
            data = _replace_lone_surrogates(data)
        except RecursionError:
            raise BadRequest(f"json: exceeded max depth of {MAX_DEPTH}") from None
    return data


_KEY_END = re.compile(rb'"\s*:')


def _count_keys(data: Any) -> int:
    count, stack = 0, [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += len(value)
            stack.extend(v for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, (dict, list)))
    return count


def duplicate_fields(raw: bytes, data: Any) -> list[str]:
    """The paths of the fields a JSON text sets twice in one object (``spec.paused``), in the order found, as
    the API server's strict decoder names them (``duplicate field "spec.paused"``); ``data`` is the text as
    decoded (the last value of each kept, as Go's decoder keeps it). Cheap when there is none: every key in
    the text ends in ``"`` then ``:``, so when the decoded objects hold as many keys as the text has such
    marks (a string value can only add marks), no key was repeated and the text is not decoded again."""
    if not isinstance(data, (dict, list)) or len(_KEY_END.findall(raw)) <= _count_keys(data):
        return []
    repeated: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict:
        out: dict = {}
        twice: list[str] = []
        for key, value in items:
            if key in out and key not in twice:
                twice.append(key)
            out[key] = value
        if twice:
            repeated[id(out)] = twice
        return out

    try:
        again = json.loads(raw, object_pairs_hook=pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []

    def walk(value: Any, path: str) -> None:  # depth bounded: check_decoded refused deeper bodies
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    walk(v, f"{path}.{k}" if path else k)
            # a repeated key is found at its second place, after what the object held before it
            found.extend(f"{path}.{key}" if path else key for key in repeated.get(id(value), ()))
        elif isinstance(value, list):
            for n, v in enumerate(value):
                if isinstance(v, (dict, list)):
                    walk(v, f"{path}[{n}]")

    walk(again, "")
    return found


def nonfinite_path(data: Any) -> tuple[str, float] | None:
    """The path (``spec.template.x[2].y``) and value of the first NaN or infinite float in ``data``, or None.
    JSON cannot carry them (a real API server never sees one: its clients' encoders refuse them)."""
    stack: list[tuple[Any, str]] = [(data, "")]
    seen: set[int] = set()
    while stack:
        value, path = stack.pop()
        if type(value) is float or isinstance(value, float):
            if value != value or value in (_INF, -_INF):
                return path or "(the object)", value
        elif isinstance(value, (dict, list)):
            if id(value) in seen:  # a shared value (a YAML alias) is looked at once
                continue
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in reversed(list(items)):
                stack.append(
                    (v, f"{path}[{k}]" if isinstance(k, int) else (f"{path}.{k}" if path else str(k)))
                )
    return None


def check_finite(data: Any) -> None:
    """BadRequest naming the field when ``data`` holds a NaN or an infinite float."""
    found = nonfinite_path(data)
    if found is not None and isinstance(
        found[1], GoNumber
    ):  # a number past float64, as Go's decoder words it
        raise BadRequest(
            f"{found[0]}: json: cannot unmarshal number {found[1].literal} into Go value of type float64"
        )
    if found is not None:
        raise BadRequest(
            f"{found[0]}: Invalid value: {found[1]}: NaN and Infinity are not valid JSON numbers "
            "(json: unsupported value)"
        )


_INF = float("inf")


def _check_text(value: str) -> None:
    """A lone UTF-16 surrogate cannot be encoded as UTF-8: neither stored nor sent (JSON text never has one
    here: ``load_json`` replaces them; a Python caller of the SDK can pass one)."""
    if not value.isascii():
        found = _LONE_SURROGATE.search(value)
        if found:
            raise BadRequest(
                f"a string holds a lone UTF-16 surrogate (U+{ord(found.group()):04X}), which UTF-8 cannot "
                f"encode: {value[:60]!r}"
            )


def _scalar_size(value: Any) -> int:
    if isinstance(value, str):
        _check_text(value)
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return 20 if value.bit_length() < 64 else len(str(value))
    if isinstance(value, float):
        if value != value or value in (_INF, -_INF):
            if isinstance(
                value, GoNumber
            ):  # a number past every Go type: refused where it lands, by its field
                return len(value.literal)
            raise _NonFinite
        return 24
    raise BadRequest(f"json: unsupported type: {type(value).__name__}")


class _NonFinite(Exception):
    pass


def check_decoded(data: Any, limit: int = MAX_REQUEST, max_depth: int = MAX_DEPTH) -> int:
    """``_check_decoded``, with a NaN or infinite float refused by a BadRequest naming its field."""
    try:
        return _check_decoded(data, limit, max_depth)
    except _NonFinite:
        check_finite(data)
        raise BadRequest("json: unsupported value: NaN or Infinity") from None


def _check_decoded(data: Any, limit: int, max_depth: int) -> int:
    """Size ``data`` as JSON would spell it out, counting each shared value (a YAML alias) at every use, as the
    API server sees it after conversion to JSON: past ``limit`` bytes 413, nested deeper than ``max_depth`` or
    recursive (a YAML alias inside its own anchor) 400, a value JSON cannot carry (a YAML ``.inf``/``.nan``,
    a timestamp, binary) 400. Each distinct container is visited once, so an alias bomb costs no more than its
    text: the walk is linear in the decoded objects, without recursion. Returns the size."""
    if not isinstance(data, (dict, list)):
        return _scalar_size(data)
    memo: dict[int, tuple[int, int]] = {}  # id of a container -> (its size, its depth)
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    # a plain str (the most common value by far) is sized here rather than by a call to _scalar_size, as it would
    # be: 25,000 owner references are 100,000 strings (issue 49: the patched object is sized on the write path)
    while stack:
        value, done = stack.pop()
        key = id(value)
        is_map = isinstance(value, dict)
        children = value.values() if is_map else value
        if done:
            on_path.discard(key)
            size, depth = 2 + len(value), 1
            if is_map:
                for k in value:
                    if not isinstance(k, str):  # JSON has string keys only (a YAML key is converted)
                        raise BadRequest(
                            f"json: unsupported map key of type {type(k).__name__}: {str(k)[:100]}"
                        )
                    if not k.isascii():
                        _check_text(k)
                    size += len(k) + 3
            for child in children:
                kind = type(child)
                if kind is str:
                    if not child.isascii():
                        _check_text(child)
                    size += len(child) + 2
                elif kind is dict or kind is list or isinstance(child, (dict, list)):
                    csize, cdepth = memo[id(child)]
                    size += csize
                    if cdepth >= depth:
                        depth = cdepth + 1
                else:
                    size += _scalar_size(child)
                if size > limit:
                    raise RequestEntityTooLarge(
                        f"the decoded object is larger than the limit of {limit} bytes"
                    )
            if depth > max_depth:
                raise BadRequest(f"the object is nested too deeply: more than {max_depth} levels")
            memo[key] = (size, depth)
            continue
        if key in memo:
            continue
        if key in on_path:
            raise BadRequest("the object refers to itself (a recursive YAML alias)")
        if len(on_path) > max_depth:
            raise BadRequest(f"the object is nested too deeply: more than {max_depth} levels")
        on_path.add(key)
        stack.append((value, True))
        for c in children:
            if isinstance(c, (dict, list)) and id(c) not in memo:
                stack.append((c, False))
    return memo[id(data)][0]
