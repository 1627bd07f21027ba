"""Kubernetes quantities are parsed and compared exactly, and print as ``resource.Quantity.String()`` does.

The vectors follow apimachinery's ``pkg/api/resource/quantity_test.go`` (TestQuantityParse, TestQuantityString,
TestQuantityParseEmit): round-up to nano-units, the binary-SI cap, the format kept from the input.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from flexq.api.quantity import QuantityError, canonical_quantity, parse_quantity, resource_value

Gi = 2**30


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("75Gi", 75 * Gi),
        ("1000000000Gi", 10**9 * Gi),
        ("1e3", 1000),
        ("1E3", 1000),
        ("0", 0),
        ("0Ki", 0),
        ("1", 1),
        ("8Ki", 8 * 1024),
        ("3Ei", 3 * 2**60),
        ("5n", Fraction(5, 10**9)),
        ("4u", Fraction(4, 10**6)),
        ("50k", 50_000),
        ("2P", 2 * 10**15),
        ("1E", 10**18),
        ("1E-3", Fraction(1, 1000)),
        ("100.035k", 100_035),
        ("0.5e-2", Fraction(5, 1000)),
        ("1.3E+6", 1_300_000),
        ("7.123456M", 7_123_456),
        (".001", Fraction(1, 1000)),
        ("1.", 1),
        ("1.G", 10**9),
        ("+1", 1),
        ("-1", -1),
        ("0.5Mi", 2**19),
        # rounded up (away from zero) to whole nano-units, as ParseQuantity does
        ("3.001n", Fraction(4, 10**9)),
        ("1.1E-9", Fraction(2, 10**9)),
        ("0.0000000001", Fraction(1, 10**9)),
        ("0.00000012345", Fraction(124, 10**9)),
        ("-3.001n", Fraction(-4, 10**9)),
        ("0.000000000001Ki", Fraction(2, 10**9)),
        # binary-SI amounts are capped at the largest int64; decimal ones are not
        ("9Ei", 2**63 - 1),
        ("9223372036854775807Ki", 2**63 - 1),
        ("12E", 12 * 10**18),
    ],
)
def test_parse(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        "1 Gi",
        "1GB",
        "--1",
        "1e",
        "0x10",
        "1K",
        "1ki",
        "Gi",
        "1e3Gi",
        "1m5",
        "1e1.5",
        "١",
    ],
)
def test_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_comparisons_are_exact() -> None:
    assert parse_quantity("1Gi") > parse_quantity("1G")
    assert parse_quantity("1000m") == parse_quantity("1") == parse_quantity("1e0")
    assert parse_quantity("1e3") == parse_quantity("1k") == parse_quantity(1000)
    assert parse_quantity("1000000000Gi") - parse_quantity("1000000000Gi") + parse_quantity("1n") > 0
    assert parse_quantity("75Gi") == parse_quantity("76800Mi") < parse_quantity("80530636801")
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("300m")  # no float error
    assert resource_value("cpu", "500m") == 500 and resource_value("memory", "75Gi") == 75 * Gi
    assert resource_value("cpu", "1000000000") == 10**12


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("300Mi", "300Mi"),
        ("307200Ki", "300Mi"),
        ("1001Gi", "1001Gi"),
        ("1025024Mi", "1001Gi"),
        ("1024Gi", "1Ti"),
        ("1000M", "1G"),
        ("0.001T", "1G"),
        ("1000000000", "1G"),
        ("1000u", "1m"),
        ("1.08", "1080m"),
        ("1080000000n", "1080m"),
        ("300M", "300M"),
        ("1234567M", "1234567M"),
        ("3k", "3k"),
        ("1025", "1025"),
        ("0", "0"),
        ("00", "0"),
        (".001e12", "1e9"),
        ("0.001e0", "1e-3"),
        ("1000e-12", "1e-9"),
        ("80e-3", "80e-3"),
        ("300e6", "300e6"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("0.5e0", "500e-3"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("-1.5Gi", "-1536Mi"),
        ("-0.5", "-500m"),
        ("75Gi", "75Gi"),
        ("1000000000Gi", "1000000000Gi"),
        ("500m", "500m"),
        ("9Ei", "9223372036854775807"),
        (2, "2"),
        (1.5, "1500m"),
        (1000, "1k"),
    ],
)
def test_canonical_string(text: str | int | float, canonical: str) -> None:
    assert canonical_quantity(text) == canonical
    assert canonical_quantity(canonical) == canonical  # canonical strings are fixed points
    assert parse_quantity(canonical) == parse_quantity(text)
