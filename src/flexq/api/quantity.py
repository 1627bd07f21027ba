"""Kubernetes resource quantities, parsed and compared exactly.

Owns: parsing (`500m`, `75Gi`, `1000000000Gi`, `1e3`, `0.5`), exact arithmetic (``fractions.Fraction``),
canonical formatting as the API server prints quantities, and the integer "resource value" Kueue
uses for quota math (milli-units for ``cpu``, whole units rounded up for everything else).
Must not import anything from flexq.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

__all__ = [
    "QuantityError",
    "format_quantity",
    "parse_quantity",
    "resource_value",
    "from_resource_value",
]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Same grammar as k8s.io/apimachinery/pkg/api/resource: <signedNumber><suffix>
_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)
_MAX_ABS = Fraction(2**63 - 1) * 10**18  # far beyond anything a cluster uses; guards against 1e99999


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_MEMO_SIZE = 4096  # distinct quantity strings remembered (a cluster repeats the same few endlessly)


def parse_quantity(value: str | int | float | Fraction) -> Fraction:
    """Parse a quantity into an exact Fraction. Raises QuantityError with the API server's wording.
    Strings are memoised (a cluster repeats the same few quantities endlessly; Fractions are immutable)."""
    if type(value) is str:
        return _parse_string(value)
    return _parse_quantity(value)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _parse_string(value: str) -> Fraction:
    return _parse_quantity(value)  # an invalid string raises and is not remembered


_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NANO = Fraction(1, 10**9)
_MAX_BINARY = Fraction(2**63 - 1)  # apimachinery caps binary-SI quantities at the largest int64


def _parse_quantity(value: str | int | float | Fraction) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError(_FORMAT_ERROR)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    # no stripping: apimachinery refuses leading and trailing whitespace (" 1", "1 ")
    m = _RE.match(str(value))
    if not m:
        raise QuantityError(_FORMAT_ERROR)
    num = Fraction(m.group("num"))
    suffix = m.group("suffix") or ""
    if m.group("exp"):
        exp = int(m.group("exp")[1:])
        if abs(exp) > 60:
            raise QuantityError("quantity exponent out of range")
        num *= Fraction(10) ** exp
    else:
        num *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    if abs(num) > _MAX_ABS:
        raise QuantityError("quantity is too large")
    # as ParseQuantity: a non-zero amount is rounded up (away from zero) to a whole number of nano-units,
    # "if you want some resources, you should get some resources" (3.001n -> 4n, 0.0000000001 -> 1n) ...
    if num.denominator != 1 and (num / _NANO).denominator != 1:
        num = Fraction(-((-num.numerator * 10**9) // num.denominator), 10**9)
    # ... and a binary-SI amount is capped at the largest int64 (9Ei -> 9223372036854775807)
    if suffix in _BINARY and num > _MAX_BINARY:
        num = _MAX_BINARY
    return -num if m.group("sign") == "-" else num


def format_quantity(q: Fraction | int, binary: bool = False) -> str:
    """Canonical string: integers plainly, binary suffixes when asked and exact, else milli / nano."""
    q = Fraction(q)
    if q.denominator == 1:
        n = q.numerator
        if binary and n != 0:
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                if n % _BINARY[suffix] == 0:
                    return f"{n // _BINARY[suffix]}{suffix}"
        return str(n)
    milli = q * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    nano = q * 10**9
    return f"{-(-nano.numerator // nano.denominator)}n"  # round up, as the API server does


def resource_value(name: str, value: str | int | float | Fraction) -> int:
    """Kueue's int64 view of a request: milli-units for cpu, whole units (rounded up) otherwise."""
    q = parse_quantity(value)
    if name == "cpu":
        q *= 1000
    return -((-q.numerator) // q.denominator)


def from_resource_value(name: str, value: int) -> str:
    """Inverse of resource_value, formatted as Kueue writes usage (``2``, ``500m``, ``16Gi``)."""
    if name == "cpu":
        return format_quantity(Fraction(value, 1000))
    return format_quantity(Fraction(value), binary=name in ("memory", "ephemeral-storage"))


def canonical_quantity(value: str | int | float | Fraction) -> str:
    """The string the API server stores for a quantity (``resource.Quantity.String()``).

    The format of the input is kept: binary suffixes stay binary (``1.5Gi`` -> ``1536Mi``), exponents stay
    exponents (``1e3`` -> ``1e3``), everything else is decimal SI (``1000000000`` -> ``1G``, ``0.5`` -> ``500m``).
    Strings are memoised.
    """
    if type(value) is str:
        return _canonical_string(value)
    return _canonical_quantity(value)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _canonical_string(value: str) -> str:
    return _canonical_quantity(value)


_DEC_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def _canonical_quantity(value: str | int | float | Fraction) -> str:
    """``Quantity.String()``: the format (binary SI, decimal exponent, decimal SI) is the input's; binary
    falls back to decimal SI below 1024 or for a fraction; decimal forms use the largest power of 1000
    that leaves a whole mantissa (``1.5`` -> ``1500m``, ``0.5e0`` -> ``500e-3``, ``300e6``)."""
    q = parse_quantity(value)
    text = value if isinstance(value, str) else ""
    suffix_m = _RE.match(text)
    binary = bool(suffix_m and (suffix_m.group("suffix") or "") in _BINARY)
    exponent = bool(suffix_m and suffix_m.group("exp"))
    if q == 0:
        return "0"
    sign = "-" if q < 0 else ""
    q = abs(q)
    if binary and q >= 1024 and q.denominator == 1:
        n, k = q.numerator, 0
        while k < 6 and n % 1024 == 0:
            n //= 1024
            k += 1
        return f"{sign}{n}{('', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei')[k]}"
    # q is a whole number of nano-units (parse rounds): find the largest exponent (a multiple of 3) that
    # keeps the mantissa whole
    nano = q.numerator * (10**9 // q.denominator)
    e = -9
    while nano % 1000 == 0 and (exponent or e < 18):
        nano //= 1000
        e += 3
    if exponent:
        return f"{sign}{nano}" + (f"e{e}" if e else "")
    return f"{sign}{nano}{_DEC_SUFFIX[e]}"
