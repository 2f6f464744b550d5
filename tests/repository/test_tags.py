"""A served stanza's ``Tag``: ``cydia::commercial`` first when paid, no ``::commercial`` when free."""

from __future__ import annotations

import pytest

from pkgcat.repository.tags import tagged
from tests.store.sileo import sileo_paid
from tests.store.zebra import zebra_paid

HEAD = "Package: com.example.tweak\nVersion: 1.0\nArchitecture: iphoneos-arm64"


def _tag(control: str) -> str | None:
    lines = [line for line in control.split("\n") if line.startswith("Tag:")]
    assert len(lines) <= 1
    return lines[0].removeprefix("Tag: ") if lines else None


@pytest.mark.parametrize(
    ("control", "paid", "expected"),
    [
        (HEAD, True, "cydia::commercial"),
        (HEAD, False, None),
        (f"{HEAD}\nTag: role::enduser,purpose::x", True, "cydia::commercial, role::enduser, purpose::x"),
        (f"{HEAD}\nTag: role::enduser, cydia::commercial", True, "cydia::commercial, role::enduser"),
        (f"{HEAD}\nTag: Cydia::Commercial, role::enduser", True, "cydia::commercial, role::enduser"),
        # Sileo stops at the first "::commercial": one that is not a whole tag must come after ours.
        (f"{HEAD}\ntag: purpose::commercially-minded", True, "cydia::commercial, purpose::commercially-minded"),
        (f"{HEAD}\nTag: cydia::commercial, role::enduser", False, "role::enduser"),
        (f"{HEAD}\nTag: purpose::commercial", False, None),
        (f"{HEAD}\nTag: role::enduser,\n compatible_min::ios14.0", True, "cydia::commercial, role::enduser, compatible_min::ios14.0"),
    ],
)  # fmt: skip
def test_the_tag_says_paid_exactly_as_sileo_and_zebra_read_it(
    control: str, paid: bool, expected: str | None
) -> None:
    served = tagged(f"{control}\nDescription: a tweak\n more about it", paid)
    assert _tag(served) == expected
    assert sileo_paid(expected or "") is paid
    assert zebra_paid(expected or "") is paid
    # Every other field stays, in its place, the folded description included.
    assert served.startswith(HEAD)
    assert served.endswith("Description: a tweak\n more about it") or served.endswith(
        "Tag: cydia::commercial"
    )


def test_a_stanza_whose_tag_is_right_is_left_as_it_is() -> None:
    for control, paid in (
        (f"{HEAD}\nTag: cydia::commercial, role::enduser", True),
        (f"{HEAD}\nTag: role::enduser,purpose::x", False),
        (HEAD, False),
    ):
        assert tagged(control, paid) == control


def test_a_free_package_s_only_tag_goes_with_its_line_wherever_it_stands() -> None:
    assert tagged(f"{HEAD}\nTag: cydia::commercial", False) == HEAD
    assert tagged(f"Tag: cydia::commercial\n{HEAD}", False) == HEAD
    assert tagged(f"{HEAD}\nTag: Cydia::Commercial,\n purpose::commercial\nSection: x", False) == (
        f"{HEAD}\nSection: x"
    )
