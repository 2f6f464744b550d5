"""Public keys: made to sit inside a tweak, so they may only check a device's licence, within
allowances of their own (per key, per device), and are stored as hashes as secret keys are."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import Any

import pytest
from sqlalchemy import text

from pkgcat import keys
from pkgcat.domain import RateDecision
from pkgcat.errors import (
    KeyKindRefused,
    KeyMissing,
    OutsideKeyPackage,
    PublicLimitSpent,
    Unauthenticated,
)
from pkgcat.storage.admin import AdminError, CatalogueAdmin
from pkgcat.storage.engine import engine_for
from pkgcat.storage.public_limits import PublicLimits, Spent
from tests.backends import REDIS_VARIABLE, service_url
from tests.conftest import stored_count
from tests.licences.conftest import BOUGHT, UNKNOWN, WHITELISTED, Services, Worker
from tests.proxy import proxied

LOGGER = "pkgcat.storage.public_limits"


def test_a_public_key_has_a_form_of_its_own() -> None:
    public, secret = keys.new_key("public"), keys.new_key()
    assert public.startswith("pkp_")
    assert secret.startswith("pkc_")
    assert keys.is_public(public)
    assert not keys.is_well_formed(public)
    assert keys.is_well_formed(secret)
    assert not keys.is_public(secret)
    # Display prefixes never collide across kinds: a revoke by prefix reaches one kind.
    assert keys.display_prefix(public)[:4] != keys.display_prefix(secret)[:4]


def test_a_public_key_is_stored_as_its_hash_only(
    admin: CatalogueAdmin, database_url: str, public_key: str
) -> None:
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            stored = (
                db.execute(text("SELECT * FROM secret_keys WHERE kind = 'public'")).mappings().one()
            )
    finally:
        engine.dispose()
    assert stored["key_hash"] == hashlib.sha256(public_key.encode()).hexdigest()
    assert stored["prefix"] == public_key[:12]
    assert public_key not in {str(value) for value in stored.values()}


def test_a_public_key_checks_a_device_and_is_counted(
    database_url: str, devices: None, public_key: str, worker: Worker
) -> None:
    async def work(services: Services) -> list[bool]:
        answers = []
        for udid in (BOUGHT, WHITELISTED, UNKNOWN):
            caller, _ = await services.licences.admit(public_key, udid)
            found = await services.licences.device_check(caller, "com.alpha.paid", udid)
            answers.append(found.owned)
        return answers

    before = stored_count(database_url, 1)
    assert worker(work) == [True, True, False]
    assert stored_count(database_url, 1) == before + 3  # counted under its application


def test_a_public_key_is_refused_everywhere_else(
    database_url: str, devices: None, public_key: str, worker: Worker
) -> None:
    async def work(services: Services) -> None:
        with pytest.raises(KeyKindRefused) as refused:
            await services.service.admit(public_key, "package/details")
        assert refused.value.code == 9
        assert "public key" in refused.value.message
        # An unknown key of the public form is no key at all.
        with pytest.raises(Unauthenticated) as unknown:
            await services.service.admit(keys.new_key("public"), "package/details")
        assert not isinstance(unknown.value, KeyKindRefused)

    worker(work)
    assert stored_count(database_url, 1) == 0  # refused before the count


def test_missing_unknown_and_revoked_public_keys_are_refused(
    admin: CatalogueAdmin, database_url: str, devices: None, public_key: str, worker: Worker
) -> None:
    admin.revoke_key(keys.display_prefix(public_key))

    async def work(services: Services) -> list[type[Exception]]:
        found: list[type[Exception]] = []
        for key in (None, "", keys.new_key("public"), public_key, "pkp_short"):
            try:
                await services.licences.admit(key, BOUGHT)
            except Unauthenticated as error:
                found.append(type(error))
        return found

    assert worker(work) == [
        KeyMissing,
        KeyMissing,
        Unauthenticated,
        Unauthenticated,
        Unauthenticated,
    ]


def test_a_key_for_one_package_answers_for_that_package_alone(
    admin: CatalogueAdmin, database_url: str, devices: None, worker: Worker
) -> None:
    token = admin.create_key("Alpha", "alpha-a", kind="public", package="com.alpha.paid")

    async def work(services: Services) -> bool:
        caller, _ = await services.licences.admit(token.secret_key, BOUGHT)
        with pytest.raises(OutsideKeyPackage) as outside:
            await services.licences.device_check(caller, "com.alpha.other", BOUGHT)
        assert outside.value.code == 12
        assert "'com.alpha.paid'" in outside.value.message
        return (await services.licences.device_check(caller, "com.alpha.paid", BOUGHT)).owned

    assert worker(work)


@pytest.mark.parametrize(
    ("kind", "scopes", "package", "wrong"),
    [
        ("public", ("publish",), None, "takes no --scope"),
        ("secret", (), "com.alpha.paid", "only a public key is made for one package"),
        ("public", (), "com.beta.paid", "has no package 'com.beta.paid'"),
        ("public", (), "com.nobody", "has no package 'com.nobody'"),
    ],
)
def test_keys_are_made_only_as_they_can_be_used(
    admin: CatalogueAdmin,
    catalogue: dict[str, str],
    kind: Any,
    scopes: tuple[str, ...],
    package: str | None,
    wrong: str,
) -> None:
    with pytest.raises(AdminError, match=wrong):
        admin.create_key("Alpha", "alpha-a", scopes, kind=kind, package=package)


def _refusals(limits: PublicLimits, plan: list[tuple[int, str | None]]) -> list[Spent | None]:
    async def main() -> list[Spent | None]:
        try:
            return [(await limits.hit(key, udid)).spent for key, udid in plan]
        finally:
            await limits.close()

    return asyncio.run(main())


def _allowances(limits: PublicLimits) -> list[Spent | None]:
    """Key 1 allows 4 checks, each of its devices 2: the sequence every backend must answer."""
    return _refusals(
        limits,
        [
            (1, "A"), (1, "A"),
            (1, "A"),  # A's own allowance is spent: refused without spending the key's
            (1, "B"), (1, "B"),  # the key's 3rd and 4th
            (1, "C"),  # the key's is spent: refused for every device
            (2, "A"),  # another key: its own allowances, A's included
        ],
    )  # fmt: skip


EXPECTED = [None, None, "device", None, None, "key", None]


def test_a_device_spends_its_allowance_and_the_key_its_own_in_memory() -> None:
    assert _allowances(PublicLimits("4/hour", "2/hour")) == EXPECTED


def test_the_allowances_are_shared_by_every_worker_in_redis() -> None:
    url = service_url(REDIS_VARIABLE, "Redis")
    namespace = f"test-{keys.new_key()[4:16]}"
    assert _allowances(PublicLimits("4/hour", "2/hour", redis_url=url, namespace=namespace)) == (
        EXPECTED
    )
    # A second worker sees the same windows: the key is spent for it too.
    again = PublicLimits("4/hour", "2/hour", redis_url=url, namespace=namespace)
    assert _refusals(again, [(1, "D"), (2, "A")]) == ["key", None]


def test_refusals_say_whose_allowance_and_when_it_comes_back(
    database_url: str, devices: None, public_key: str, worker: Worker
) -> None:
    async def work(services: Services) -> list[tuple[Spent, RateDecision]]:
        refused = []
        for udid in (BOUGHT, BOUGHT, BOUGHT, WHITELISTED, UNKNOWN):
            try:
                await services.licences.admit(public_key, udid)
            except PublicLimitSpent as spent:
                refused.append((spent.spent, spent.decision))
        return refused

    found = worker(work, public_key_limit="3/hour", public_device_limit="2/minute")
    assert [(whose, d.allowed, d.limit, d.window) for whose, d in found] == [
        ("device", False, 2, 60),
        ("key", False, 3, 3600),
    ]
    assert all(1 <= d.reset_after <= d.window for _, d in found)
    assert stored_count(database_url, 1) == 3  # the refused ones were not counted


def test_redis_down_fails_open_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    url = service_url(REDIS_VARIABLE, "Redis")
    namespace = f"test-{keys.new_key()[4:16]}"
    with proxied(url) as (proxy, through):
        limits = PublicLimits(
            "1/hour", "1/hour", redis_url=through, namespace=namespace, rest_after_failure=0
        )

        async def main() -> list[Spent | None]:
            try:
                spent = [(await limits.hit(1, "A")).spent, (await limits.hit(1, "A")).spent]
                proxy.cut()
                spent += [(await limits.hit(1, "A")).spent for _ in range(3)]
                proxy.restore()
                spent.append((await limits.hit(1, "A")).spent)
                return spent
            finally:
                await limits.close()

        # Enforced; then every check admitted while Redis is gone; enforced again after.
        assert asyncio.run(main()) == [None, "device", None, None, None, "device"]
    records = [r for r in caplog.records if r.name == LOGGER]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO]
    assert "not enforced" in records[0].getMessage()
    assert "answers again" in records[1].getMessage()


def test_a_device_refused_for_its_key_gets_no_window_of_its_own() -> None:
    """Only a check its key admits opens a device's window: made-up devices asked about
    after the key is spent cost no memory (and find their whole allowance later)."""
    now = [1000.0]
    limits = PublicLimits("2/minute", "1/hour", clock=lambda: now[0])

    async def main() -> list[Spent | None]:
        spent = [(await limits.hit(1, udid)).spent for udid in ("A", "B", "C")]
        now[0] += 61  # the key's window ends; the devices' (an hour) go on
        spent += [(await limits.hit(1, udid)).spent for udid in ("C", "A")]
        return spent

    assert asyncio.run(main()) == [None, None, "key", None, "device"]


def test_the_operator_makes_lists_and_revokes_public_keys(run: Any) -> None:
    assert run("source", "add", "Gamma", "--url", "https://gamma.example/").exit_code == 0
    assert run("app", "create", "--source", "Gamma", "--name", "tweak").exit_code == 0
    made = run("key", "create", "--source", "Gamma", "--app", "tweak", "--public", "--json")
    assert made.exit_code == 0, made.output
    record = json.loads(made.stdout)
    assert keys.is_public(record["public_key"])
    assert (record["kind"], record["package"]) == ("public", None)
    assert "secret_key" not in record
    assert "scopes" not in record
    shown = run("key", "create", "--source", "Gamma", "--app", "tweak", "--public")
    assert "public key (shown once)" in shown.stdout
    assert "checks licences only, for every package of the source" in shown.stdout
    listed = {k["prefix"]: k for k in json.loads(run("key", "list", "--json").stdout)}
    prefix = record["public_key"][:12]
    assert (listed[prefix]["kind"], listed[prefix]["package"]) == ("public", None)
    assert record["public_key"] not in run("key", "list", "--json").stdout
    assert run("key", "revoke", prefix).exit_code == 0
    refused = run("key", "create", "--source", "Gamma", "--app", "tweak", "--package", "x")
    assert refused.exit_code == 1
    assert "only a public key is made for one package" in refused.stderr
