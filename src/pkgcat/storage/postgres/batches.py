"""What one commit of the counts on PostgreSQL carries, its statement, and its reply.

Each batch is applied exactly once, whatever happens to its reply. A worker numbers its
batches (``count_batches``, migration 0014: a random number of its own, then 1, 2, 3...),
and the batch's statement inserts its row (``landed`` true) in the batch's own
transaction, before any count: the row is there if and only if the counts are. A
statement whose reply is lost (the connection broke after it was sent: before the
server had it, while it ran, or after its commit, on the way back) leaves its batch *in
doubt*. The worker's next statement settles every batch in doubt first, in the same
round trip: it inserts each one's key with ``landed`` false, or, finding the batch's own
row, reads ``landed`` true from it. A batch still running on the server holds its row's
key, so the next statement waits for its commit or rollback first; a batch that reaches
the server later than the statement that settled it finds its key taken and counts
nothing (``ON CONFLICT DO NOTHING``, and every write of the batch waits on that claim). So
the answer is final, and a batch found landed is taken back once by the counter
(:mod:`pkgcat.storage.postgres.counter`), its requests having been answered as not counted.

A server error on a connection still open (the statement's transaction rolled back: a
deadlock, a timeout the server enforced) and a connection that could not be had leave no
doubt: nothing landed.

The rows are pruned as they go: once :data:`SETTLE_EVERY` of its batches are settled, a
worker's statement deletes their rows, by key, and the first statement of each worker,
then one an hour, deletes other workers' rows older than :data:`KEPT_FOR` (a worker that
died leaves its last rows behind). So the table holds at most :data:`SETTLE_EVERY` rows
and the batches in doubt a live worker, as many a worker stopped within the week. Those
chores, and the settling of batches in doubt, ride in :data:`COUNT_SETTLING`; the
statement of every other batch (:data:`COUNT`) only makes its claim, which costs it
about a fifth more than the statement had cost without (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import asyncpg

from pkgcat.storage import rows
from pkgcat.storage.interfaces import Counted

KEPT_FOR = 7 * 24 * 3600
"""Seconds another worker's rows are kept: longer than any worker waits to settle a batch
(it settles one with its next statement that the database answers)."""
EXPIRE_EVERY = 3600.0
"""Seconds between two statements of a worker that delete other workers' old rows."""
SETTLE_EVERY = 64
"""Rows of its settled batches a worker lets gather before a statement deletes them."""


def _commit_setting(parameter: int) -> str:
    """SQL that sets this transaction's ``synchronous_commit`` to the text parameter
    ``$parameter`` (NULL: as the database sets it), and is never NULL itself."""
    return (
        f"set_config('synchronous_commit', "
        f"coalesce(${parameter}::text, current_setting('synchronous_commit')), true)"
    )


_NOW = "extract(epoch FROM statement_timestamp())::bigint"

# Only the applications that exist are counted, their rows locked FOR KEY SHARE
# (what the foreign key check takes anyway): a delete in progress is waited for, and then
# its application drops out of the join instead of failing the foreign key, and with it
# every other count of the batch. Nothing is written unless the batch's claim is: it is
# made before the cutoff, and not settled already (see the module's docstring).
_COUNTS = """
counted AS (
    INSERT INTO usage_days (application_id, day, count)
    SELECT c.application_id, c.day, c.count
    FROM unnest($1::integer[], $2::text[], $3::bigint[]) AS c(application_id, day, count)
    JOIN applications AS a ON a.id = c.application_id
    WHERE EXISTS (SELECT FROM claimed)
    ORDER BY c.application_id, c.day
    FOR KEY SHARE OF a
    ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + excluded.count
    RETURNING application_id, day, count
), split AS (
    INSERT INTO usage_operations (application_id, day, operation, count)
    SELECT o.application_id, o.day, o.operation, o.count
    FROM unnest($4::integer[], $5::text[], $6::text[], $7::bigint[])
        AS o(application_id, day, operation, count)
    JOIN applications AS a ON a.id = o.application_id
    WHERE EXISTS (SELECT FROM claimed)
    ORDER BY o.application_id, o.day, o.operation
    FOR KEY SHARE OF a
    ON CONFLICT (application_id, day, operation)
    DO UPDATE SET count = usage_operations.count + excluded.count
), downloaded AS (
    INSERT INTO download_days (package, day, count)
    SELECT d.package, d.day, d.count
    FROM unnest($9::text[], $10::text[], $11::bigint[]) AS d(package, day, count)
    WHERE EXISTS (SELECT FROM claimed)
    ORDER BY d.package, d.day
    ON CONFLICT (package, day) DO UPDATE SET count = download_days.count + excluded.count
), totalled AS (
    INSERT INTO download_totals (package, count)
    SELECT t.package, t.count FROM unnest($12::text[], $13::bigint[]) AS t(package, count)
    WHERE EXISTS (SELECT FROM claimed)
    ORDER BY t.package
    ON CONFLICT (package) DO UPDATE SET count = download_totals.count + excluded.count
)
SELECT application_id, day, count, NULL::bigint AS batch FROM counted
"""
_CLAIM = f"""
claimed AS (
    INSERT INTO count_batches (worker, batch, landed, at)
    SELECT $15, $16, true, {_NOW}
    WHERE statement_timestamp() < to_timestamp($8::float8){{after}}
    ON CONFLICT (worker, batch) DO NOTHING
    RETURNING batch
),"""
_ENDS = f"""
UNION ALL  -- a row of nulls: too late, nothing counted
SELECT NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT FROM claimed)
UNION ALL  -- never a row: sets how this transaction's commit waits for the disk
SELECT NULL, NULL, NULL, NULL WHERE {_commit_setting(14)} IS NULL
"""  # noqa: S608 - constants only
# The batches in doubt are settled before the claim and the counts take any lock, so a
# batch still running on the server, waited for there, never waits on this one in turn.
_FENCE = f"""
WITH fenced AS (
    INSERT INTO count_batches (worker, batch, landed, at)
    SELECT $15, f.batch, false, {_NOW} FROM unnest($17::bigint[]) AS f(batch)
    ON CONFLICT (worker, batch) DO UPDATE SET landed = count_batches.landed
    RETURNING batch, landed
),"""  # noqa: S608 - constants only
_PRUNE = f"""
settled AS (
    DELETE FROM count_batches WHERE worker = $15 AND batch = ANY($18::bigint[])
), expired AS (
    DELETE FROM count_batches
    WHERE $19::boolean AND worker <> $15 AND at < {_NOW} - {KEPT_FOR}
),"""  # noqa: S608 - constants only
_FENCED = """UNION ALL  -- each batch in doubt, settled: count 1 if it had landed, 0 if it never will
SELECT NULL, NULL, landed::integer::bigint, batch FROM fenced"""

COUNT = "WITH" + _CLAIM.format(after="") + _COUNTS + _ENDS
"""A batch's statement, when no batch is in doubt and no row is due to go."""
COUNT_SETTLING = (
    _FENCE
    + _CLAIM.format(after="\n        AND (SELECT count(*) FROM fenced) >= 0  -- settled first")
    + _PRUNE
    + _COUNTS
    + _FENCED
    + _ENDS
)
"""The same, which also settles the batches in doubt and deletes the rows due to go."""
TOUCH = f"""
WITH locked AS (
    SELECT id FROM secret_keys WHERE id = ANY($1::integer[]) ORDER BY id FOR UPDATE
)
UPDATE secret_keys SET last_used_at = used.at
FROM unnest($1::integer[], $2::bigint[]) AS used(key_id, at), locked
WHERE secret_keys.id = used.key_id AND locked.id = used.key_id
    -- checked for each row it updates: its commit waits for the disk as the counts' did
    AND {_commit_setting(3)} IS NOT NULL
"""  # noqa: S608 - constants only


class Waiter(NamedTuple):
    """A waiting caller, resolved by the batch that carries it."""

    future: asyncio.Future[Counted]
    key: tuple[int, str] | None
    """The (application, day) of its count; None for a download or a probe."""
    operation: str
    cutoff: float
    download: tuple[str, str, int] | None = None
    """The (package, UTC day, count) of its download."""


class TooLate(TimeoutError):
    """A batch reached the database after its cutoff: nothing of it was counted."""


class Batch(NamedTuple):
    """What one statement carries."""

    number: int
    added: dict[tuple[int, str, str], int]
    """The waiting requests' counts by (application, day, operation)."""
    downloads: dict[tuple[str, str], int]
    """The waiting downloads by (package, UTC day)."""
    retracted: dict[tuple[int, str, str], int]
    """Counts taken back, landed earlier."""
    untaken: dict[tuple[str, str], int]
    """Downloads taken back, landed earlier."""
    touches: dict[int, int]
    cutoff: float
    fences: tuple[int, ...] = ()
    """The worker's batches in doubt, settled by this statement."""
    settled: tuple[int, ...] = ()
    """The worker's batches settled since its last statement: their rows go."""
    expire: bool = False
    """Whether to delete other workers' old rows."""
    probe: bool = False
    """A download waits to know the database answers (``reachable``): the statement goes
    even with nothing to count."""

    @property
    def settling(self) -> bool:
        """Whether the statement is :data:`COUNT_SETTLING` (else :data:`COUNT`)."""
        return bool(self.fences or self.settled or self.expire)

    @property
    def going(self) -> bool:
        """Whether there is anything to send."""
        return bool(
            self.added
            or self.downloads
            or self.retracted
            or self.untaken
            or self.fences
            or self.probe
        )


class Reply(NamedTuple):
    """What the statement answered."""

    totals: dict[tuple[int, str], int]
    """Each (application, day) counted, as the commit left it."""
    fenced: dict[int, bool]
    """Each batch in doubt, settled: whether it had landed."""
    late: bool
    """The statement reached the database after the cutoff: nothing of the batch counted."""


def reply(found: list[Any]) -> Reply:
    totals: dict[tuple[int, str], int] = {}
    fenced: dict[int, bool] = {}
    late = False
    for row in found:
        if row["batch"] is not None:
            fenced[int(row["batch"])] = bool(row["count"])
        elif row["application_id"] is None:
            late = True
        else:
            totals[row["application_id"], row["day"]] = int(row["count"])
    return Reply(totals, fenced, late)


def statement(batch: Batch, worker: int, synchronous_commit: str | None) -> tuple[object, ...]:
    """The batch's statement, then its parameters: the batch's counts less what it takes
    back, in the order their rows are locked."""
    by_operation = dict(batch.added)
    for taken, n in batch.retracted.items():
        by_operation[taken] = by_operation.get(taken, 0) - n
    by_day: dict[tuple[int, str], int] = {}
    for (a, d, _), n in by_operation.items():
        by_day[a, d] = by_day.get((a, d), 0) + n
    downloads = dict(batch.downloads)
    for taken_file, n in batch.untaken.items():
        downloads[taken_file] = downloads.get(taken_file, 0) - n
    ordered = sorted(by_day.items())
    split = sorted(by_operation.items())
    fetched = sorted(downloads.items())
    per_package = rows.downloads_by_package(downloads)
    hot = (
        [a for (a, _), _ in ordered],
        [d for (_, d), _ in ordered],
        [n for _, n in ordered],
        [a for (a, _, _), _ in split],
        [d for (_, d, _), _ in split],
        [o for (_, _, o), _ in split],
        [n for _, n in split],
        batch.cutoff,
        [p for (p, _), _ in fetched],
        [d for (_, d), _ in fetched],
        [n for _, n in fetched],
        [p for p, _ in per_package],
        [n for _, n in per_package],
        synchronous_commit,
        worker,
        batch.number,
    )
    if not batch.settling:
        return (COUNT, *hot)
    return (COUNT_SETTLING, *hot, list(batch.fences), list(batch.settled), batch.expire)


def refused(error: BaseException, connection: Any) -> bool:
    """Whether ``error``, met by a statement, says for sure that its transaction did not
    commit: the server answered with an error and the connection is still open."""
    return (
        isinstance(error, asyncpg.PostgresError)
        and getattr(error, "severity_en", None) in (None, "ERROR")
        and not closed(connection)
    )


def closed(connection: Any) -> bool:
    """Whether the pool's connection is gone (asyncpg may have taken back one it lost)."""
    try:
        return bool(connection.is_closed())
    except asyncpg.InterfaceError:
        return True
