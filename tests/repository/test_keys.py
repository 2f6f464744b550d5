"""The repository's keys: sealed in the database, opened only with the passphrase, never shown."""

from __future__ import annotations

import pysequoia as pgp
import pytest

from pkgcat.repository.keys import KeyProblem, Signers, create_key, export_keys, retire_key
from pkgcat.sealing import unseal
from pkgcat.storage.engine import engine_for
from pkgcat.storage.signing_keys import sealed_signing_keys
from tests.conftest import AppFactory
from tests.repository.conftest import Publisher

PASSPHRASE = "a test passphrase of some length"


def test_a_secret_key_is_stored_only_sealed(database_url: str) -> None:
    engine = engine_for(database_url)
    try:
        made = create_key(engine, PASSPHRASE, "Test")
        [(fingerprint, sealed)] = sealed_signing_keys(engine)
        assert fingerprint == made.fingerprint
        assert "PRIVATE KEY" not in sealed
        assert sealed.startswith("-----BEGIN PGP MESSAGE-----")
        opened = unseal(sealed, PASSPHRASE, what="the keys", setting="PKGCAT_REPOSITORY_PASSPHRASE")
        secret = pgp.Tsk.from_bytes(opened)
        assert secret.extract_certificate().fingerprint == fingerprint
        assert bytes(secret) not in sealed.encode()
        with pytest.raises(
            KeyProblem, match="do not open with PKGCAT_REPOSITORY_PASSPHRASE"
        ) as found:
            Signers("another passphrase of some length").current(engine)
        assert "backtrace" not in str(found.value).lower()
    finally:
        engine.dispose()


def test_without_a_passphrase_nothing_signs_and_no_key_is_made(
    database_url: str, pkgcat: Publisher, cli_env: dict[str, str]
) -> None:
    engine = engine_for(database_url)
    try:
        create_key(engine, PASSPHRASE, "Test")
        assert Signers(None).current(engine) == []
    finally:
        engine.dispose()
    del cli_env["PKGCAT_REPOSITORY_PASSPHRASE"]
    refused = pkgcat("repo", "key", "create")
    assert refused.exit_code == 1
    assert "PKGCAT_REPOSITORY_PASSPHRASE is not set" in refused.output


def test_retiring_needs_a_successor_and_export_holds_the_signing_keys(database_url: str) -> None:
    engine = engine_for(database_url)
    try:
        with pytest.raises(KeyProblem, match="no signing key yet"):
            export_keys(engine)
        first = create_key(engine, PASSPHRASE, "Test")
        with pytest.raises(KeyProblem, match="only signing key"):
            retire_key(engine, first.fingerprint)
        second = create_key(engine, PASSPHRASE, "Test")
        with pytest.raises(KeyProblem, match="no signing key 'zz'"):
            retire_key(engine, "zz")
        exported = {c.fingerprint for c in pgp.Cert.split_bytes(export_keys(engine).encode())}
        assert exported == {first.fingerprint, second.fingerprint}
        retire_key(engine, first.fingerprint[:16])
        exported = {c.fingerprint for c in pgp.Cert.split_bytes(export_keys(engine).encode())}
        assert exported == {second.fingerprint}
    finally:
        engine.dispose()


def test_a_server_with_the_wrong_passphrase_serves_no_repository(
    make_api: AppFactory, pkgcat: Publisher, cli_env: dict[str, str]
) -> None:
    assert pkgcat("repo", "key", "create").exit_code == 0
    api = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"], repository_passphrase="not the passphrase at all"
    )
    answer = api.http.get("/repo/InRelease")
    assert answer.status_code == 503
    assert "not available" in answer.text
    assert "passphrase" not in answer.text
