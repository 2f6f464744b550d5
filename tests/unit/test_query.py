"""The request path's query parser reads every query as the standard library does."""

from __future__ import annotations

from urllib.parse import parse_qsl

from hypothesis import given
from hypothesis import strategies as st

from pkgcat.http.asgi import parse_query


def standard(raw: bytes) -> tuple[dict[str, str], set[str]]:
    """What ``parse_qsl`` makes of ``raw``: the last value of each name, and the repeated names."""
    query: dict[str, str] = {}
    repeated: set[str] = set()
    text = raw.decode("utf-8", "replace")
    for name, value in parse_qsl(text, keep_blank_values=True, errors="replace"):
        if name in query:
            repeated.add(name)
        query[name] = value
    return query, repeated


# Bytes that matter to a query (separators, escapes, '+', non-ASCII) and plain ones.
QUERY_BYTES = st.lists(
    st.sampled_from(
        [b"&", b"=", b"%", b"+", b"a", b"b", b"0", b"%41", b"%zz", b"\xc3\xa9", b"\xff"]
    ),
    max_size=20,
).map(b"".join)


@given(QUERY_BYTES)
def test_every_query_reads_as_parse_qsl_reads_it(raw: bytes) -> None:
    assert parse_query(raw) == standard(raw)


def test_plain_queries_keep_blank_values_and_note_repeats() -> None:
    assert parse_query(b"package=com.x&limit=&page&&page=2=3") == (
        {"package": "com.x", "limit": "", "page": "2=3"},
        {"page"},
    )
