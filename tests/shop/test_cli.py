"""``pkgcat shop``: a customer import mailed through a real SMTP server, a wrong file refused
whole, and a package's history as the operator reads it (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from pkgcat.cli import app as cli
from tests.backends import rows
from tests.shop.conftest import Mailbox


def test_a_customer_import_gifts_each_row_or_none_and_the_history_says_who(
    tmp_path: Path, cli_env: dict[str, str], mailbox: tuple[Mailbox, int], database_url: str,
    sold: dict[str, Path],
) -> None:  # fmt: skip
    env = cli_env | {
        "PKGCAT_SMTP_HOST": "127.0.0.1", "PKGCAT_SMTP_PORT": str(mailbox[1]),
        "PKGCAT_SMTP_FROM": "store@example.test", "PKGCAT_SMTP_STARTTLS": "false",
    }  # fmt: skip
    run = CliRunner()
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("email,package\nmoved@example.test,com.alpha.paid\nnope,com.alpha.paid\n")
    refused = run.invoke(
        cli, ["shop", "import-customers", str(wrong), "--source", "Alpha"], env=env
    )
    assert refused.exit_code == 2
    assert "wrong.csv: row 3: email: 'nope' is not an email address" in refused.output
    assert rows(database_url, "SELECT count(*) FROM gift_codes") == [(0,)]

    good = tmp_path / "customers.csv"
    good.write_text("email,package\nmoved@example.test,com.alpha.paid\n")
    done = run.invoke(
        cli, ["shop", "import-customers", str(good), "--source", "Alpha", "--json"], env=env
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == [
        {"email": "moved@example.test", "package": "com.alpha.paid", "delivered": "mailed"}
    ]
    [mail] = [m for m in mailbox[0].messages if m["To"] == "moved@example.test"]
    code = re.search(r"gift code is ([0-9A-Z-]{23})", str(mail.get_payload()))
    assert code is not None
    # The code mailed is the one stored (by its hash): its last four characters are the hint.
    assert rows(database_url, "SELECT hint, recipient FROM gift_codes") == [
        (code[1].replace("-", "")[-4:], "moved@example.test")
    ]
    history = run.invoke(
        cli, ["shop", "history", "--source", "Alpha", "--package", "com.alpha.paid", "--json"],
        env=env,
    )  # fmt: skip
    assert history.exit_code == 0, history.output
    [entry] = json.loads(history.stdout)
    assert (entry["by"], entry["change"]) == ("operator:shop import-customers", "gift.given")
