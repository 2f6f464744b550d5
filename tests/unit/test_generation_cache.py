"""The generation cache holds at most its bound in bytes, whatever is put in it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pkgcat.storage.cache import GenerationCache, entry_footprint

BOUND = 64 * 1024

# Puts of values from empty to larger than the whole bound, under a few keys, in
# generations that move on now and then (and an old one that must not be kept).
PUTS = st.lists(
    st.tuples(
        st.sampled_from([7, 7, 7, 8, 6]),
        st.integers(0, 40),
        st.integers(0, 2 * BOUND),
    ),
    max_size=60,
)


@given(PUTS)
def test_the_bytes_held_never_pass_the_bound(puts: list[tuple[int, int, int]]) -> None:
    cache: GenerationCache[int, bytes] = GenerationCache(BOUND)
    newest = -1
    for generation, key, size in puts:
        cache.get(generation, key)  # a request's lookup: it moves the cache to a newer generation
        newest = max(newest, generation)
        value = bytes(size)
        cache.put(generation, key, value)
        assert cache.nbytes <= BOUND
        fits = entry_footprint(key, value) <= BOUND
        # The latest value is kept when it fits and was read in the cache's generation.
        assert (cache.get(generation, key) == value) == (fits and generation == newest)


def test_the_oldest_entries_make_room_for_a_new_one() -> None:
    cache: GenerationCache[int, bytes] = GenerationCache(BOUND)
    cache.get(1, 0)
    value = bytes(BOUND // 4)
    for key in range(10):
        cache.put(1, key, value)
    kept = [key for key in range(10) if cache.get(1, key) is not None]
    assert kept == list(range(10 - len(kept), 10))  # the newest ones
    assert 2 <= len(kept) < 4
    assert cache.nbytes == sum(entry_footprint(key, value) for key in kept)


def test_a_key_put_again_replaces_its_entry() -> None:
    cache: GenerationCache[tuple[str, int], bytes] = GenerationCache(BOUND)
    cache.get(1, ("buyers", 0))
    for _ in range(1000):
        cache.put(1, ("buyers", 100), bytes(1000))
    assert len(cache) == 1
    assert cache.nbytes == entry_footprint(("buyers", 100), bytes(1000))


def test_a_new_generation_starts_empty() -> None:
    cache: GenerationCache[int, bytes] = GenerationCache(BOUND)
    cache.get(1, 0)
    cache.put(1, 0, b"old")
    assert cache.get(2, 0) is None
    assert (len(cache), cache.nbytes) == (0, 0)
