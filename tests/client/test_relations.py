"""Relation fields (Debian Policy 7.1) read into groups of alternatives."""

from __future__ import annotations

import pytest

from pkgcat.client import Relation
from pkgcat.client._relations import parse_relations


@pytest.mark.parametrize(
    ("raw", "groups"),
    [
        ("", ()),
        ("   ", ()),
        ("mobilesubstrate", ((Relation("mobilesubstrate"),),)),
        ("firmware (>= 14.0)", ((Relation("firmware", ">=", "14.0"),),)),
        ("a(<<2:1.0-1~b)", ((Relation("a", "<<", "2:1.0-1~b"),),)),
        ("a (= 1), b (>> 2) , c (<= 3)", (
            (Relation("a", "=", "1"),),
            (Relation("b", ">>", "2"),),
            (Relation("c", "<=", "3"),),
        )),
        ("x | y (>= 1) | z", ((Relation("x"), Relation("y", ">=", "1"), Relation("z")),)),
        ("libc6 [amd64 !i386]", ((Relation("libc6", architectures=("amd64", "!i386")),),)),
        ("python3:any (>= 3.9)", ((Relation("python3", ">=", "3.9", arch_qualifier="any"),),)),
        # The deprecated operators mean "or equal" (Policy 7.1).
        ("old (< 2), older (> 1)", ((Relation("old", "<=", "2"),), (Relation("older", ">=", "1"),))),
        ("a,,b,", ((Relation("a"),), (Relation("b"),))),
    ],
)  # fmt: skip
def test_relations(raw: str, groups: tuple[tuple[Relation, ...], ...]) -> None:
    parsed = parse_relations(raw)
    assert parsed.groups == groups
    assert parsed.raw == raw


def test_a_part_outside_the_syntax_is_kept_whole_as_a_name() -> None:
    parsed = parse_relations("good (>= 1), bad (~> 2), fine")
    assert parsed.names == ("good", "bad (~> 2)", "fine")
    assert parsed.groups[1] == (Relation("bad (~> 2)"),)
