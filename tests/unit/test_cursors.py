"""cursors.py on its own: a cursor reads back only for the list it was made for."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgcat.cursors import MAX_LENGTH, Cursors, Filters, key_position, text_position
from pkgcat.errors import InvalidArgument

KEY = bytes(range(32))
CURSORS = Cursors(KEY)
FILTERS = (("package", "com.alpha.paid"), ("status", None))
POSITION = (1711886400, "TXN-0001")


def refused(
    cursor: str, operation: str = "source/sales", source: int = 1, filters: Filters = FILTERS
) -> str:
    with pytest.raises(InvalidArgument) as raised:
        CURSORS.read(cursor, operation, source, filters)
    assert raised.value.parameter == "cursor"
    assert raised.value.message.startswith("cursor: ")
    return raised.value.message


def test_a_cursor_reads_back_its_position() -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, POSITION)
    assert CURSORS.read(cursor, "source/sales", 1, FILTERS) == POSITION
    assert key_position(CURSORS.read(cursor, "source/sales", 1, FILTERS)) == POSITION


def test_a_cursor_is_url_safe_and_unpadded() -> None:
    cursor = CURSORS.make("source/packages", 1, (), ("com.alpha.paid",))
    assert "=" not in cursor
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert text_position(CURSORS.read(cursor, "source/packages", 1, ())) == "com.alpha.paid"


def test_the_source_id_is_not_readable_in_the_cursor() -> None:
    token = base64.urlsafe_b64decode(CURSORS.make("source/sales", 4242, FILTERS, POSITION) + "==")
    assert b"4242" not in token
    assert b"com.alpha.paid" not in token


@given(st.data())
def test_changing_any_byte_is_refused(data: st.DataObject) -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, POSITION)
    token = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    index = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    token[index] ^= flip
    refused(base64.urlsafe_b64encode(bytes(token)).rstrip(b"=").decode())


@given(st.data())
def test_changing_any_character_is_refused(data: st.DataObject) -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, POSITION)
    index = data.draw(st.integers(min_value=0, max_value=len(cursor) - 1))
    other = data.draw(st.sampled_from("AQgw-_09az").filter(lambda c: c != cursor[index]))
    refused(cursor[:index] + other + cursor[index + 1 :])


def test_another_source_operation_or_filters_is_refused() -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, POSITION)
    refused(cursor, source=2)
    refused(cursor, operation="package/buyers")
    refused(cursor, filters=(("package", "com.alpha.other"), ("status", None)))
    refused(cursor, filters=(("package", "com.alpha.paid"), ("status", "refunded")))
    refused(cursor, filters=(("status", None), ("package", "com.alpha.paid")))
    refused(cursor, filters=())


def test_another_key_is_refused() -> None:
    cursor = Cursors(bytes(32)).make("source/sales", 1, FILTERS, POSITION)
    refused(cursor)


def test_too_long_is_refused_unread() -> None:
    assert "512" in refused("A" * (MAX_LENGTH + 1))


@pytest.mark.parametrize(
    "garbage", ["", "A", "!!!!", "not a cursor", "é" * 20, "AAAA=", "A" * 40, "\x00" * 30]
)
def test_garbage_is_refused(garbage: str) -> None:
    refused(garbage)


def test_non_canonical_spelling_is_refused() -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, POSITION)
    refused(cursor + "=")


def test_a_position_of_the_wrong_kind_is_refused() -> None:
    cursor = CURSORS.make("source/sales", 1, FILTERS, ("only-one",))
    with pytest.raises(InvalidArgument):
        key_position(CURSORS.read(cursor, "source/sales", 1, FILTERS))
    with pytest.raises(InvalidArgument):
        text_position(POSITION)


def test_longest_stored_sort_keys_fit() -> None:
    cursor = CURSORS.make("package/buyers", 10**9, (), (2**40, "T" * 128))
    assert len(cursor) <= MAX_LENGTH
    with pytest.raises(ValueError, match="too long"):
        CURSORS.make("source/packages", 1, (), ("p" * 400,))


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        Cursors(b"short")
    assert (
        Cursors.from_hex(KEY.hex()).read(
            CURSORS.make("source/sales", 1, FILTERS, POSITION), "source/sales", 1, FILTERS
        )
        == POSITION
    )
