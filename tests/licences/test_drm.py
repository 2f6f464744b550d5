"""The Packix/Havoc DRM check: a device, its model, a package identifier and a token, as a
middleman posts them (guillermo-moran/Packix-DRM-Middleman, middleman.php at 4ffe894, lines
29-35: ``{"user": {"udid", "model", "identifier", "token"}}``), answered ``completed`` or
``failed`` (DRMUtils.m at 7c4c153, lines 64-73: any other status is an error)."""

from __future__ import annotations

import pytest

from pkgcat.errors import (
    ApiError,
    InvalidArgument,
    KeyMissing,
    OutsideKeyPackage,
    PermissionDenied,
    Unauthenticated,
)
from pkgcat.licences import DrmAnswer, DrmRequest
from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import stored_count
from tests.licences.conftest import BOUGHT, MODEL, UNKNOWN, WHITELISTED, Services, Worker


def request(token: str | None, udid: str | None, package: str = "com.alpha.paid") -> DrmRequest:
    return DrmRequest(token=token, udid=udid, model=MODEL, identifier=package)


def test_seller_and_package_tokens_answer_completed_or_failed(
    admin: CatalogueAdmin,
    catalogue: dict[str, str],
    database_url: str,
    devices: None,
    public_key: str,
    worker: Worker,
) -> None:
    seller = catalogue["alpha-a"]  # a secret key of the source: a Packix seller token
    package = admin.create_key("Alpha", "alpha-b", kind="public", package="com.alpha.paid")

    async def work(services: Services) -> list[str]:
        answers: list[str] = []
        for token in (seller, public_key, package.secret_key):
            for udid in (BOUGHT, WHITELISTED, UNKNOWN):
                answer, _, _ = await services.licences.drm_check(request(token, udid))
                answers.append(answer.status)
        return answers

    assert worker(work) == ["completed", "completed", "failed"] * 3
    # Counted as any request is, under each token's application.
    assert stored_count(database_url, 1) == 6
    assert stored_count(database_url, 2) == 3


def test_the_answer_names_the_package_and_device(
    catalogue: dict[str, str], database_url: str, devices: None, worker: Worker
) -> None:
    async def work(services: Services) -> DrmAnswer:
        wanted = request(catalogue["alpha-a"], BOUGHT, " com.alpha.paid\n")
        return (await services.licences.drm_check(wanted))[0]

    assert worker(work) == DrmAnswer("completed", "com.alpha.paid", BOUGHT)


@pytest.mark.parametrize(
    ("token", "udid", "package", "error"),
    [
        (None, BOUGHT, "com.alpha.paid", KeyMissing),
        ("00000", BOUGHT, "com.alpha.paid", Unauthenticated),  # middleman.php's placeholder
        ("alpha-a", BOUGHT, "com.beta.paid", PermissionDenied),  # another seller's package
        ("package", BOUGHT, "com.alpha.other", OutsideKeyPackage),  # outside its token
        ("alpha-a", None, "com.alpha.paid", InvalidArgument),
        ("alpha-a", "not/a/udid", "com.alpha.paid", InvalidArgument),
        ("alpha-a", BOUGHT, "", InvalidArgument),
    ],
)
def test_what_is_not_a_check_is_an_error(
    admin: CatalogueAdmin,
    catalogue: dict[str, str],
    database_url: str,
    devices: None,
    worker: Worker,
    token: str | None,
    udid: str | None,
    package: str,
    error: type[ApiError],
) -> None:
    tokens = {
        "alpha-a": catalogue["alpha-a"],
        "package": admin.create_key(
            "Alpha", "alpha-a", kind="public", package="com.alpha.paid"
        ).secret_key,
    }

    async def work(services: Services) -> ApiError:
        with pytest.raises(ApiError) as refused:
            await services.licences.drm_check(
                request(tokens.get(token or "", token), udid, package)
            )
        return refused.value

    found = worker(work)
    assert type(found) is error, found
    if isinstance(found, InvalidArgument):  # named as the middleman's fields are
        assert found.parameter == ("identifier" if not package else "udid")
