"""``POST /1.0/package/upload.json``: a seller's key with the publish scope uploads a .deb.

In-process against the test's database (SQLite and PostgreSQL); the upload through a
real server and apt-get is in test_apt.py.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import socket
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from pkgcat.repository.debs import Refused
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from pkgcat.storage.writes.idempotency import Claim, claim
from tests.conftest import Api, AppFactory
from tests.debs import ZEROS, build_deb, deb_bytes, zeros_tar
from tests.repository.conftest import Publisher, scalar
from tests.repository.test_publish import REFUSALS, state
from tests.servers import environment, granted_key, seed, serving

UPLOAD = "/1.0/package/upload.json"
DEB = "application/vnd.debian.binary-package"
MIB = 1024 * 1024


@pytest.fixture
def uploader(make_api: AppFactory, blob_dir: Path) -> Api:
    return make_api(blob_dir=str(blob_dir))


@pytest.fixture
def publish_key(admin: CatalogueAdmin) -> str:
    """A key of alpha-a (source Alpha, shape A) that may publish."""
    return admin.create_key("Alpha", "alpha-a", ("publish",)).secret_key


def post(api: Api, key: str, body: bytes, **headers: str) -> httpx.Response:
    response: httpx.Response = api.http.post(
        UPLOAD,
        content=body,
        headers={"authorization": f"Bearer {key}", "content-type": DEB, **headers},
    )
    return response


def test_a_publish_key_uploads_and_gets_the_details(
    uploader: Api, publish_key: str, tmp_path: Path, blob_dir: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.sent", "1.2", Section="Tweaks")
    answer = post(uploader, publish_key, deb.read_bytes())
    assert answer.status_code == 200, answer.text
    details = answer.json()
    assert details["code"] == 0
    assert details["response"]["package"] == "com.alpha.sent"
    assert details["response"]["version"] == "1.2"
    assert details["response"]["size"] == str(deb.stat().st_size)
    read = uploader.get(
        "/1.0/package/details.json", uploader.keys["beta-a"], package="com.alpha.sent"
    )
    assert read.json()["response"]["section"] == "Tweaks"
    assert [p.name for p in blob_dir.rglob("*") if p.is_file()] != []


def test_a_multipart_form_with_a_part_named_file_is_taken(
    uploader: Api, publish_key: str, tmp_path: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.form", "3.0")
    answer = uploader.http.post(
        UPLOAD,
        headers={"authorization": f"Bearer {publish_key}"},
        data={"note": "ignored"},
        files={"file": ("form.deb", deb.read_bytes(), DEB)},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"]["version"] == "3.0"
    shape_b = uploader.get(
        "/1.0/package/details.json", uploader.keys["alpha-b"], package="com.alpha.form"
    )
    assert shape_b.json()["response"]["version"] == "3.0"


def test_the_answer_is_in_the_callers_shape(
    uploader: Api, admin: CatalogueAdmin, tmp_path: Path
) -> None:
    key_b = admin.create_key("Alpha", "alpha-b", ("publish",)).secret_key
    deb = build_deb(tmp_path, "com.alpha.shapeb")
    answer = post(uploader, key_b, deb.read_bytes())
    assert answer.status_code == 200, answer.text
    expected = uploader.get(
        "/1.0/package/details.json", uploader.keys["alpha-b"], package="com.alpha.shapeb"
    )
    assert answer.json() == expected.json()


def test_a_read_key_gets_403_code_9_and_nothing_is_stored(
    uploader: Api, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.readonly")
    before = state(database_url, blob_dir)
    answer = post(uploader, uploader.keys["alpha-a"], deb.read_bytes())
    assert answer.status_code == 403
    assert answer.json()["code"] == 9
    assert "needs the scope 'publish'" in answer.json()["response"]
    assert "pkgcat key create --scope publish" in answer.json()["response"]
    assert state(database_url, blob_dir) == before


def test_a_get_of_the_upload_is_the_wrong_method(uploader: Api, publish_key: str) -> None:
    answer = uploader.get(UPLOAD, publish_key)
    assert answer.status_code == 405
    assert answer.json() == {"code": 7, "response": "method GET not allowed; use POST"}
    assert answer.headers["allow"] == "POST"
    # ...and reads stay GET.
    wrong = uploader.http.post(
        "/1.0/package/details.json", params={"package": "x", "secret_key": publish_key}
    )
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "GET")


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_upload_is_400_naming_the_reason_and_leaves_nothing(
    case: str,
    uploader: Api,
    publish_key: str,
    tmp_path: Path,
    database_url: str,
    blob_dir: Path,
) -> None:
    make, reason = REFUSALS[case]
    before = state(database_url, blob_dir)
    answer = post(uploader, publish_key, make(tmp_path).read_bytes())
    assert answer.status_code == 400
    assert answer.json()["code"] == 2
    assert answer.json()["response"].startswith("file: ")
    assert reason in answer.json()["response"]
    assert state(database_url, blob_dir) == before


def test_the_same_version_with_other_bytes_is_refused(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    first = build_deb(tmp_path, "com.alpha.fixed", "1.0", payload="one")
    assert post(uploader, publish_key, first.read_bytes()).status_code == 200
    before = state(database_url, blob_dir)
    second = build_deb(tmp_path, "com.alpha.fixed", "1.0", payload="two")
    answer = post(uploader, publish_key, second.read_bytes())
    assert answer.status_code == 400
    assert "is published already with other bytes" in answer.json()["response"]
    assert state(database_url, blob_dir) == before


def test_a_data_tar_past_the_unpacked_bound_is_refused(
    make_api: AppFactory, publish_key: str, database_url: str, blob_dir: Path
) -> None:
    api = make_api(blob_dir=str(blob_dir), publish_max_unpacked_bytes=ZEROS)
    body = deb_bytes(data_ext=".xz", data=zeros_tar("z", 2 * ZEROS, ".xz"))
    before = state(database_url, blob_dir)
    answer = post(api, publish_key, body)
    assert (answer.status_code, answer.json()) == (
        400,
        {
            "code": 2,
            "response": f"file: data.tar.xz: more than {ZEROS} bytes once decompressed "
            "(PKGCAT_PUBLISH_MAX_UNPACKED_BYTES)",
        },
    )
    assert state(database_url, blob_dir) == before


def test_a_refused_upload_leaves_nothing_for_the_collector_to_free(
    make_api: AppFactory, publish_key: str, blob_dir: Path
) -> None:
    # A served worker runs its cyclic collector seldom (pkgcat.app.GC_THRESHOLDS, after
    # gc.freeze): what a refusal leaves in a reference cycle stays for as long. Each refused
    # bomb's refusal did, with every frame of the reading and the xz decoder's dictionary:
    # 10 MiB a bomb in a real worker (tests/repository/test_upload_bombs_memory.py). With
    # the collector off here, only reference counting frees anything.
    api = make_api(blob_dir=str(blob_dir), publish_max_unpacked_bytes=ZEROS)
    body = deb_bytes(data_ext=".xz", data=zeros_tar("z", 2 * ZEROS, ".xz"))
    assert post(api, publish_key, body).status_code == 400  # the path warmed up
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        answer = post(api, publish_key, body)
        held, _ = tracemalloc.get_traced_memory()
        refusals = sum(isinstance(found, Refused) for found in gc.get_objects())
    finally:
        tracemalloc.stop()
        gc.enable()
    assert answer.status_code == 400
    assert "more than" in answer.json()["response"]
    assert (refusals, held < MIB) == (0, True), f"{held / MIB:.1f} MiB held"


def test_a_body_over_the_limit_is_refused_early(
    make_api: AppFactory, publish_key: str, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    api = make_api(blob_dir=str(blob_dir), publish_max_bytes=2048)
    deb = build_deb(tmp_path, "com.alpha.big", payload="x" * 1000 + str(tmp_path))
    body = deb.read_bytes() + b"\0" * 4096
    before = state(database_url, blob_dir)
    answer = post(api, publish_key, body)
    assert answer.status_code == 400
    assert answer.json()["response"] == (
        f"file: too large: {len(body)} bytes, over the limit of 2048"
    )
    # Sent in pieces without a length, it is cut off once past the limit.
    chunked = api.http.post(
        UPLOAD,
        content=iter([body[:1500], body[1500:3000], body[3000:]]),
        headers={"authorization": f"Bearer {publish_key}", "content-type": DEB},
    )
    assert chunked.status_code == 400
    assert (
        chunked.json()["response"]
        == "file: too large: more than 2048 bytes, over the limit of 2048"
    )
    assert state(database_url, blob_dir) == before


def test_an_interrupted_body_leaves_nothing(
    uploader: Api,
    publish_key: str,
    tmp_path: Path,
    database_url: str,
    blob_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client goes away mid-body: no blob, no row, no generation moved, no file left."""
    # The upload's temporary file is made in a folder of this test's own: the system's is
    # shared with other tests (and processes) uploading at the same time.
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    deb = build_deb(tmp_path, "com.alpha.cut").read_bytes()
    before = state(database_url, blob_dir)
    app: Any = uploader.http.app
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": deb[: len(deb) // 2], "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": UPLOAD,
        "raw_path": UPLOAD.encode(),
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {publish_key}".encode()),
            (b"content-type", DEB.encode()),
            (b"content-length", str(len(deb)).encode()),
        ],
    }
    # In the loop the app's connections belong to (the test client's).
    portal = uploader.http.portal
    assert portal is not None
    portal.call(app, scope, receive, send)
    assert sent[0]["status"] == 400
    assert b"interrupted" in sent[1]["body"]
    assert state(database_url, blob_dir) == before
    assert list(spool.iterdir()) == []


def test_an_idempotency_key_replays_the_first_answer(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    first = build_deb(tmp_path, "com.alpha.retry", "1.0").read_bytes()
    answer = post(uploader, publish_key, first, **{"idempotency-key": "upload-1"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"]["version"] == "1.0"
    newer = build_deb(tmp_path, "com.alpha.retry", "2.0").read_bytes()
    assert post(uploader, publish_key, newer).json()["response"]["version"] == "2.0"
    before = state(database_url, blob_dir)
    # A retry gets the first answer (1.0), not a new publish's (which would show 2.0).
    again = post(uploader, publish_key, first, **{"idempotency-key": "upload-1"})
    assert again.status_code == 200
    assert again.content == answer.content
    assert state(database_url, blob_dir) == before
    other = post(uploader, publish_key, newer, **{"idempotency-key": "upload-1"})
    assert other.status_code == 400
    assert other.json() == {
        "code": 2,
        "response": "Idempotency-Key: already used with another request body; "
        "send a new key for a new request",
    }
    assert scalar(database_url, "SELECT count(*) FROM idempotency_records") == 1


def test_idempotency_keys_are_the_applications_own(
    uploader: Api, publish_key: str, admin: CatalogueAdmin, tmp_path: Path
) -> None:
    other_key = admin.create_key("Alpha", "alpha-b", ("publish",)).secret_key
    deb = build_deb(tmp_path, "com.alpha.mine").read_bytes()
    assert post(uploader, publish_key, deb, **{"idempotency-key": "same"}).status_code == 200
    other = build_deb(tmp_path, "com.alpha.theirs").read_bytes()
    answer = post(uploader, other_key, other, **{"idempotency-key": "same"})
    assert answer.status_code == 200
    assert answer.json()["response"]["package"] == "com.alpha.theirs"


def test_key_create_grants_a_scope_and_key_list_shows_each_keys_scopes(
    pkgcat: Publisher, uploader: Api, tmp_path: Path
) -> None:
    made = pkgcat("key", "create", "--source", "Alpha", "--app", "alpha-a", "--scope", "publish")
    assert made.exit_code == 0, made.output
    assert "scopes: read publish" in made.output
    listed = json.loads(pkgcat("key", "list", "--json").stdout)
    assert sorted(k["scopes"] for k in listed) == ["read"] * 4 + ["read publish"]
    [secret] = re.findall(r"pkc_[0-9A-Za-z]{40}", made.output)
    answer = post(uploader, secret, build_deb(tmp_path, "com.alpha.bycli").read_bytes())
    assert answer.status_code == 200, answer.text
    unknown = pkgcat("key", "create", "--source", "Alpha", "--app", "alpha-a", "--scope", "admin")
    assert unknown.exit_code == 1
    assert "unknown scope 'admin'; scopes are read, publish" in unknown.output


def test_an_expired_idempotency_record_is_neither_answered_nor_kept(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str
) -> None:
    first = build_deb(tmp_path, "com.alpha.expiry", "1.0").read_bytes()
    assert post(uploader, publish_key, first, **{"idempotency-key": "k"}).status_code == 200
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:  # a day later, as far as the record is concerned
            db.execute(text("UPDATE idempotency_records SET expires_at = 1"))
    finally:
        engine.dispose()
    other = build_deb(tmp_path, "com.alpha.expiry", "2.0").read_bytes()
    answer = post(uploader, publish_key, other, **{"idempotency-key": "k"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"]["version"] == "2.0"
    kept = scalar(database_url, "SELECT request_sha256 FROM idempotency_records")
    assert kept == hashlib.sha256(other).hexdigest()
    assert scalar(database_url, "SELECT count(*) FROM idempotency_records") == 1


@pytest.mark.server
def test_an_upload_cut_off_on_a_real_connection_leaves_nothing(tmp_path: Path) -> None:
    """`pkgcat serve` (granian) sees the client go mid-body: no blob, no row, no index change."""
    database_url = f"sqlite:///{tmp_path / 'cut.db'}"
    blob_dir = tmp_path / "blobs"
    env = environment(database_url, blob_dir=str(blob_dir))
    with serving(env, tmp_path / "server.log", apps=seed(env)) as server:
        app = server.apps[0]
        key = granted_key(env, app, "publish")
        deb = build_deb(tmp_path, "com.cut.off", payload="x" * 200_000).read_bytes()
        before = state(database_url, blob_dir)
        with socket.create_connection(("127.0.0.1", server.port)) as connection:
            head = (
                f"POST {UPLOAD} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: {DEB}\r\nContent-Length: {len(deb)}\r\n\r\n"
            )
            connection.sendall(head.encode() + deb[: len(deb) // 2])
        # The server logs the request once it has given up on it: wait for that line.
        deadline = time.monotonic() + 15
        while f"POST {UPLOAD}" not in Path(server.log.name).read_text():
            assert time.monotonic() < deadline, "the cut upload was never answered"
            time.sleep(0.05)  # polling the server's log, not timing anything
        assert state(database_url, blob_dir) == before
        # ...and the same file, sent whole, is taken.
        whole = httpx.post(
            f"{server.base}{UPLOAD}",
            content=deb,
            headers={"authorization": f"Bearer {key}", "content-type": DEB},
        )
        assert whole.status_code == 200, whole.text


def _claim_left(database_url: str, key: str, body: bytes, now: int) -> None:
    """A claim of alpha-a's ``key`` for ``body`` at ``now``, as a request still publishing
    (or one whose process died then) leaves it."""
    engine = engine_for(database_url)
    try:
        digest = hashlib.sha256(body).hexdigest()
        claimed = claim(engine, 1, key, "package/upload", digest, now=now, bound=300)
        assert isinstance(claimed, Claim)
    finally:
        engine.dispose()


def test_an_upload_whose_key_is_still_in_progress_gets_409_and_publishes_nothing(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.busy", "1.0").read_bytes()
    _claim_left(database_url, "busy", deb, int(time.time()))
    before = state(database_url, blob_dir)
    busy = post(uploader, publish_key, deb, **{"idempotency-key": "busy"})
    assert busy.status_code == 409, busy.text
    assert busy.headers["retry-after"] == "1"
    assert busy.json() == {
        "code": 16,
        "response": "Idempotency-Key: a request with this key and body is still in progress; "
        "retry after 1 s to get its answer",
    }
    other = build_deb(tmp_path, "com.alpha.busy", "2.0").read_bytes()
    refused = post(uploader, publish_key, other, **{"idempotency-key": "busy"})
    assert refused.status_code == 400
    assert refused.json()["response"].startswith("Idempotency-Key: already used with another")
    assert state(database_url, blob_dir) == before


def test_a_claim_left_by_a_dead_request_is_taken_over_after_its_bound(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str
) -> None:
    deb = build_deb(tmp_path, "com.alpha.orphan", "1.0").read_bytes()
    # Claimed PKGCAT_IDEMPOTENCY_CLAIM_SECONDS (300 by default) ago, never answered.
    _claim_left(database_url, "orphan", deb, int(time.time()) - 300)
    answer = post(uploader, publish_key, deb, **{"idempotency-key": "orphan"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"]["version"] == "1.0"
    assert scalar(database_url, "SELECT status FROM idempotency_records") == 200


def test_a_refused_upload_is_kept_and_a_fixed_file_needs_a_new_key(
    uploader: Api, publish_key: str, tmp_path: Path
) -> None:
    """As Stripe keeps a 400 once the work began: one key, one request, one answer."""
    refused = post(uploader, publish_key, b"not a deb", **{"idempotency-key": "broken"})
    assert refused.status_code == 400
    assert refused.json() == {"code": 2, "response": "file: not a .deb: not an ar archive"}
    again = post(uploader, publish_key, b"not a deb", **{"idempotency-key": "broken"})
    assert (again.status_code, again.content) == (400, refused.content)
    fixed = build_deb(tmp_path, "com.alpha.fixed").read_bytes()
    reused = post(uploader, publish_key, fixed, **{"idempotency-key": "broken"})
    assert reused.status_code == 400
    assert reused.json()["response"].startswith("Idempotency-Key: already used with another")
    assert post(uploader, publish_key, fixed, **{"idempotency-key": "new"}).status_code == 200


def test_a_server_error_gives_the_key_back_and_the_retry_publishes(
    uploader: Api, publish_key: str, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.fault", "1.0").read_bytes()
    blob_dir.write_bytes(b"")  # a file where the blob directory should be: the store fails
    failed = post(uploader, publish_key, deb, **{"idempotency-key": "fault"})
    assert (failed.status_code, failed.json()["code"]) == (503, 15), failed.text  # storage failed
    assert scalar(database_url, "SELECT count(*) FROM idempotency_records") == 0
    blob_dir.unlink()
    retried = post(uploader, publish_key, deb, **{"idempotency-key": "fault"})
    assert retried.status_code == 200, retried.text
    assert retried.json()["response"]["version"] == "1.0"


def test_a_form_that_cannot_be_read_is_code_2_not_a_500(uploader: Api, publish_key: str) -> None:
    """python-multipart raises on a body that is not the form its boundary says; the answer
    names the file, as for every other unreadable upload."""
    answer = post(
        uploader,
        publish_key,
        b"not multipart at all",
        **{"content-type": "multipart/form-data; boundary=xyz"},
    )
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == 2
    assert "multipart form cannot be read" in body["response"]
