"""Slurm host list expansion (rooftop.launchers.hostlist)."""

from __future__ import annotations

import pytest

from rooftop.launchers.base import LauncherError
from rooftop.launchers.hostlist import MAX_HOSTS, HostlistError, expand, expand_counts


@pytest.mark.parametrize(
    "text, hosts",
    [
        ("login1", ["login1"]),
        ("nid[0001-0003,0007],login1", ["nid0001", "nid0002", "nid0003", "nid0007", "login1"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[8-10]", ["n8", "n9", "n10"]),  # width of the lower bound
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("n[001-3]", ["n001", "n002", "n003"]),
        ("n[098-100]", ["n098", "n099", "n100"]),
        ("n[0]", ["n0"]),
        ("n[5,3,1]", ["n5", "n3", "n1"]),  # order kept
        ("n[1-2],n[1-2]", ["n1", "n2", "n1", "n2"]),  # duplicates kept
        ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),  # first group outermost
        ("rack[0-1]-node[01,03]", ["rack0-node01", "rack0-node03", "rack1-node01", "rack1-node03"]),
        ("n[1-2]-ib", ["n1-ib", "n2-ib"]),  # suffix after the brackets
        ("x[1-2]y[1]z[7-8]", ["x1y1z7", "x1y1z8", "x2y1z7", "x2y1z8"]),
        ("a,b c\td", ["a", "b", "c", "d"]),  # Slurm's separators
        (" a,,b, ", ["a", "b"]),  # empty tokens skipped
        ("", []),
        ("node-1.example.org", ["node-1.example.org"]),
        ("n[ 1-2 , 4 ]", ["n1", "n2", "n4"]),
        ("[1-2]", ["1", "2"]),  # as Slurm: no prefix needed
    ],
)
def test_expand(text, hosts):
    assert expand(text) == hosts


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("n[1-3", "never closed"),
        ("n1-3]", "without '['"),
        ("n[[1]]", "nested"),
        ("n[]", "empty brackets"),
        ("n[ ]", "empty brackets"),
        ("n[3-1]", "descends"),
        ("n[a]", "'a' is not a number"),
        ("n[1-]", "'1-' is not a number"),
        ("n[-1]", "'-1' is not a number"),
        ("n[1-2-3]", "'1-2-3'"),
        ("n[1,,2]", "'' is not a number"),
        ("n[1.5]", "'1.5'"),
        ("n[\u0661]", "is not a number"),  # non-ASCII digit
        (f"n[0-{MAX_HOSTS}]", "too large"),
        ("a[0-1023]b[0-1023]c[0-1]", "expands to"),
    ],
)
def test_expand_errors_name_the_input(text, fragment):
    with pytest.raises(HostlistError) as e:
        expand(text)
    assert fragment in str(e.value)
    assert text.split(",")[0] in str(e.value) or text in str(e.value)


def test_error_is_a_launcher_error():
    with pytest.raises(LauncherError):
        expand("n[")
    with pytest.raises(ValueError):
        expand("n[")


def test_not_a_string():
    with pytest.raises(HostlistError):
        expand(["n1"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text, counts", [("64", [64]), ("64(x4),32", [64, 64, 64, 64, 32]), ("2(x2),4,8(x1)", [2, 2, 4, 8]), (" 36 ", [36])]
)
def test_expand_counts(text, counts):
    assert expand_counts(text) == counts


@pytest.mark.parametrize("text", ["", "x", "4(2)", "4(x)", "-1", "4,,4", f"1(x{MAX_HOSTS + 1})"])
def test_expand_counts_errors(text):
    with pytest.raises(HostlistError) as e:
        expand_counts(text)
    assert f"'{text}'" in str(e.value)
