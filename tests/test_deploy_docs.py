"""docs/deploy.md's configuration files and commands work as shown: nginx accepts its block,
the systemd unit starts where its SQLite directory is missing and lets pkgcat stop its workers,
and the large catalogue to try is imported from where apt keeps it.

nginx is Debian's (``apt-get install nginx-light``, as .ci/run does); without it the nginx
test skips with one line, and fails under CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import lz4.frame

from pkgcat.config import Settings
from tests.backends import unavailable
from tests.ingest.conftest import stanza
from tests.servers import PKGCAT, environment, pasted
from tests.test_docs import DOCS, read


def block(language: str, first: str = "") -> str:
    """The one code block of docs/deploy.md in ``language`` whose text starts with ``first``."""
    blocks = re.findall(rf"```{language}\n(.*?)```", read(DOCS / "deploy.md"), flags=re.DOTALL)
    (found,) = [text for text in blocks if text.startswith(first)]
    text: str = found
    return text


def ini_values(text: str) -> dict[str, str]:
    """``Name=value`` lines of a unit or an environment file (comments left out)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith(("#", "[")):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def test_nginx_accepts_the_block_inside_http(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        unavailable("nginx is missing for the deploy docs' test: apt-get install nginx-light")
    openssl = shutil.which("openssl")
    if openssl is None:
        unavailable("openssl is missing for the deploy docs' test: apt-get install openssl")
    key, certificate = tmp_path / "tls.key", tmp_path / "tls.crt"
    command = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-subj", "/CN=catalogue.example", "-keyout", str(key), "-out", str(certificate)]
    subprocess.run(command, capture_output=True, check=True)
    # As shown, but for the files this machine has not: the certificate and the log folder.
    shown = block("nginx", "# /etc/nginx/conf.d/pkgcat.conf")
    assert "/etc/ssl/catalogue.example.crt" in shown
    assert "/var/log/nginx/" in shown
    config = (
        shown.replace("/etc/ssl/catalogue.example.crt", str(certificate))
        .replace("/etc/ssl/catalogue.example.key", str(key))
        .replace("/var/log/nginx/", f"{tmp_path}/")
    )
    (tmp_path / "pkgcat.conf").write_text(config)
    # What Debian's nginx.conf does with /etc/nginx/conf.d/*.conf: include them in http.
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\n"
        f"error_log {tmp_path}/error.log;\n"
        "events {}\n"
        f"http {{\n    include {tmp_path}/pkgcat.conf;\n}}\n"
    )
    checked = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


def test_the_systemd_unit_starts_without_the_sqlite_directory_and_outwaits_pkgcat() -> None:
    unit = ini_values(block("ini"))
    environment = ini_values(block("sh", "# /etc/pkgcat/pkgcat.env"))
    # "-": a missing path is no error (PostgreSQL hosts have no database directory).
    assert all(path.startswith("-") for path in unit["ReadWritePaths"].split())
    stop = int(
        environment.get("PKGCAT_STOP_TIMEOUT", Settings.model_fields["stop_timeout"].default)
    )
    # pkgcat kills a worker that outlasts PKGCAT_STOP_TIMEOUT; systemd's SIGKILL comes later.
    assert int(unit["TimeoutStopSec"].removesuffix("s")) > stop


def quoted_error(starting: str) -> str:
    """The error docs/deploy.md quotes (in backquotes, over lines or not) that starts so."""
    text = " ".join(read(DOCS / "deploy.md").split())
    found = re.search(rf"`({re.escape(starting)}[^`]*)`", text)
    assert found, f"docs/deploy.md quotes no error starting {starting!r}"
    return found.group(1)


def test_the_large_catalogue_to_try_imports_an_index_where_and_as_apt_keeps_it(
    tmp_path: Path,
) -> None:
    """The commands of "A large catalogue to try", pasted into a shell as shown, with a small
    index in the place of apt's, under its name and in its compression (the real one takes
    half a minute); and the two refusals the page quotes: no --url, a link."""
    shown = block("sh", "ls /var/lib/apt/lists/")
    lists = tmp_path / "lists"
    lists.mkdir()
    index = lists / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"
    assert index.name in shown
    stanzas = "\n".join(stanza(f"org.example.p{n}", architecture="amd64") for n in range(3))
    index.write_bytes(lz4.frame.compress(stanzas.encode()))
    env = environment(f"sqlite:///{tmp_path / 'pkgcat.db'}")
    env["PATH"] = os.pathsep.join([str(Path(PKGCAT).parent), os.environ.get("PATH", os.defpath)])
    assert pasted("pkgcat init", env, tmp_path).returncode == 0

    done = pasted(shown.replace("/var/lib/apt/lists", str(lists)), env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert index.name in done.stdout  # the ls
    assert "records: 3 read, 3 added" in done.stdout
    assert "warning: no InRelease or Release beside the index: not verified" in done.stderr

    command = " ".join(line.rstrip(" \\").strip() for line in shown.splitlines()[1:])
    command = re.sub(r" --url \S+", "", command).replace("/var/lib/apt/lists", str(lists))
    unnamed = pasted(command.replace("Debian main", "Debian again"), env, tmp_path)
    wanted = quoted_error("error: no source named").replace("Debian main", "Debian again")
    assert unnamed.returncode == 1
    assert wanted in " ".join(unnamed.stderr.split())

    linked = tmp_path / "try"
    linked.mkdir()
    (linked / "Packages.lz4").symlink_to(index)
    refused = pasted(f"pkgcat import-repo {linked / 'Packages.lz4'} --source Linked", env, tmp_path)
    wanted = quoted_error("error: Packages.lz4: leads outside").replace("/home/me/try", str(linked))
    assert refused.returncode == 1
    assert wanted in " ".join(refused.stderr.split())
