"""The payment platform is the one the settings name, built by the table of platforms."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from pkgcat.config import Settings
from pkgcat.store.platforms import PLATFORMS, platform_for


def test_every_platform_the_setting_may_name_is_built() -> None:
    named = set(get_args(Settings.model_fields["store_platform"].annotation))
    assert named == {"none", *PLATFORMS}


@pytest.mark.parametrize("name", ["test", "stripe"])
def test_the_platform_built_is_the_one_named(name: str) -> None:
    given: dict[str, Any] = {
        "store_platform": name,
        "store_url": "https://store.example/store/",
        "mail_backend": "console" if name == "test" else "smtp",
        "smtp_host": "mail.example",
        "smtp_from": "store@example.org",
    }
    if name == "stripe":
        given |= {"stripe_secret_key": "sk_test_x", "stripe_webhook_secret": "whsec_x"}
    settings = Settings.model_validate(given)
    platform = platform_for(settings)
    assert platform is not None
    assert platform.name == name
    assert platform_for(Settings()) is None
