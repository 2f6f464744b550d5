"""Fields clients render as links or rich text: what reaches Packages and the native depiction.

The clients, as their source reads:

- Sileo turns a native depiction's ``markdown`` into HTML with Down (CommonMark) and
  shows it in a web view (Sileo/Sileo,
  ``Sileo/UI/PackageViewController/DepictionView/DepictionMarkdownView/DepictionMarkdownView.swift``
  lines 75-80, at 6716a85: ``useRawFormat`` takes the string as HTML itself); the older
  ``DepictionMarkdownViewSlow.swift`` line 39 (at 5b9e4de) takes the markdown string as
  HTML, read by ``NSAttributedString`` (``documentType: .html``);
- Zebra v1 stores ``Depiction`` as the stanza gives it (zbrateam/Zebra,
  ``Zebra/Parsel/parsel.c``, ``bindPackage``, at 01580c2: bound to the ``DEPICTION``
  column unchecked) and loads it in a web view; it reads ``Description`` as Markdown
  (``Zebra/Tabs/Packages/Controllers/ZBPackageDepictionViewController.m`` line 74, at
  00dc7a1: ``initWithMarkdownString:self.package.packageDescription``).

So a seller's upload that puts a script or a ``javascript:``/``data:``/``file:`` address
in such a field is refused naming the field (code 2: the cases are ``RENDERED_REFUSALS``
of test_publish.py, refused by ``pkgcat publish`` there and by the upload in
test_upload.py, on both databases); a mirrored repository's stanza
keeps its package and loses what is unsafe; and the depiction's Markdown, rendered by a
CommonMark renderer that lets raw HTML and every link through (the unsafe case), holds no
script, no event handler and no link but an https one. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from debian.deb822 import Deb822
from markdown_it import MarkdownIt

from pkgcat.ingest.rendered import LINK_FIELDS, markdown
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.debs import build_deb
from tests.repository.conftest import Publisher, scalar
from tests.repository.test_mirror import mirrored
from tests.repository.test_publish import IMG, SCRIPT
from tests.repository.test_served import fetch, stanzas
from tests.repository.test_upload import post

COMMONMARK_TAGS = frozenset(
    ("p", "a", "em", "strong", "code", "pre", "br", "hr", "ul", "ol", "li", "blockquote",
     *(f"h{level}" for level in range(1, 7)))
)  # fmt: skip
"""What CommonMark itself writes: any other element came from raw HTML."""


def rendered_html(text: str) -> str:
    """``text`` as Markdown rendered by CommonMark with raw HTML on and no link refused: what
    the least careful client (Sileo's ``useRawFormat`` aside) could make of it."""
    renderer = MarkdownIt("commonmark", {"html": True})
    renderer.validateLink = lambda _url: True  # type: ignore[assignment,method-assign]
    html: str = renderer.render(text)
    return html


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def assert_inert(html: str, schemes: tuple[str, ...] = ("https://",)) -> None:
    """``html`` as a browser parses it holds only CommonMark's own elements, no event
    handler, and no address but one of ``schemes``: nothing a seller's text can run."""
    parser = _Elements()
    parser.feed(html)
    parser.close()
    for tag, attributes in parser.found:
        assert tag in COMMONMARK_TAGS, (tag, html)
        for name, value in attributes:
            assert not name.startswith("on"), (name, html)
            if name in ("href", "src"):
                assert (value or "").startswith(schemes), (value, html)


def assert_plain(text: str, schemes: tuple[str, ...] = ("https://", "http://", "mailto:")) -> None:
    """``text`` rendered as Markdown, with raw HTML on (Zebra's ``Description``), is inert
    (a ``Maintainer``'s ``<address>`` is CommonMark's email autolink: ``mailto:``)."""
    assert_inert(rendered_html(text), schemes)


@pytest.fixture
def uploader(make_api: AppFactory, blob_dir: Path) -> Api:
    return make_api(blob_dir=str(blob_dir), repository_url="https://repo.example/repo/")


@pytest.fixture
def publish_key(admin: CatalogueAdmin) -> str:
    return admin.create_key("Alpha", "alpha-a", ("publish",)).secret_key


def test_safe_links_text_and_https_markdown_links_are_taken_as_they_are(
    uploader: Api, publish_key: str, tmp_path: Path
) -> None:
    deb = build_deb(
        tmp_path,
        "com.alpha.fine",
        Name="Fine & Dandy",
        Author="Ann Author <ann@example.invalid>",
        Depiction="https://alpha.example/depiction/fine",
        Icon="https://alpha.example/icon.png",
        Description="Works on iOS < 14 & later\n read [the docs](https://alpha.example/docs)",
    )
    answer = post(uploader, publish_key, deb.read_bytes())
    assert answer.status_code == 200, answer.text
    [stanza] = stanzas(fetch(uploader, "/repo/Packages").content)
    assert stanza["Depiction"] == "https://alpha.example/depiction/fine"
    assert stanza["Author"] == "Ann Author <ann@example.invalid>"
    views = fetch(uploader, "/repo/depictions/com.alpha.fine.json").json()["tabs"][0]["views"]
    [text] = [v["markdown"] for v in views if v["class"] == "DepictionMarkdownView"]
    html = rendered_html(text)
    assert "iOS &lt; 14 &amp; later" in html
    assert '<a href="https://alpha.example/docs">the docs</a>' in html


def _hostile_repository(root: Path, tmp_path: Path) -> Path:
    """A flat repository of one .deb whose control file (and so its stanza) holds every
    vector in every rendered field; the .deb's path."""
    (root / "debs").mkdir(parents=True)
    built = build_deb(
        tmp_path,
        "org.mirror.hostile",
        "1.0",
        "iphoneos-arm64",
        nocheck=True,
        Name=f"Hostile {SCRIPT}\u2028Support: javascript:alert(2)",
        Author=f"Evil {IMG} <evil@example.invalid>",
        Depiction="javascript:alert(1)",
        SileoDepiction="data:text/html,<script>alert(1)</script>",
        Icon="file:///etc/passwd",
        Header='https://x.example/a"onerror="alert(1)',
        Homepage="http://old.example/hostile",
        Description=(
            f"short {SCRIPT}\n {IMG} and [x](javascript:alert(1))\n .\n"
            " [ref]: data:text/html,x\n <<b>script>alert(3)</script>"
        ),
    )
    target = root / "debs" / built.name
    target.write_bytes(built.read_bytes())
    control = subprocess.run(
        ["dpkg-deb", "-f", str(target)], capture_output=True, text=True, check=True
    ).stdout.rstrip("\n")
    data = target.read_bytes()
    (root / "Packages").write_text(
        f"{control}\nFilename: debs/{target.name}\nSize: {len(data)}\n"
        f"MD5sum: {hashlib.md5(data, usedforsecurity=False).hexdigest()}\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
    )
    return target


def _fields_as_clients_split(packages: str) -> list[dict[str, str]]:
    """The stanzas read both as Deb822 and as a parser that breaks lines at U+2028 too."""
    split = packages.replace("\u2028", "\n").replace("\r", "\n")
    return [dict(s) for s in stanzas(packages.encode())] + [
        dict(s) for s in Deb822.iter_paragraphs(split.splitlines(keepends=True))
    ]


def test_a_mirrored_stanza_keeps_its_package_and_loses_every_unsafe_field(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path, make_api: AppFactory
) -> None:
    repo = tmp_path / "repo"
    _hostile_repository(repo, tmp_path)
    done = mirrored(pkgcat, repo)
    assert done.exit_code == 0, done.output
    assert "files: 1 stored" in done.output
    api = make_api(blob_dir=str(blob_dir), repository_url="https://repo.example/repo/")
    packages = fetch(api, "/repo/Packages").text
    for stanza in _fields_as_clients_split(packages):
        assert stanza["Package"] == "org.mirror.hostile"
        for name, value in stanza.items():
            if name.lower() in LINK_FIELDS:
                assert value.startswith(("https://", "http://")), (name, value)
                assert '"' not in value
            else:
                assert_plain(value)
    [served] = stanzas(packages.encode())
    # The old repository's http link stays; ours is the depiction Sileo gets.
    assert served["Homepage"] == "http://old.example/hostile"
    assert (
        served["SileoDepiction"] == "https://repo.example/repo/depictions/org.mirror.hostile.json"
    )
    # The mirror's javascript: Depiction is gone: the one left is the repository's own page.
    assert served["Depiction"] == "https://repo.example/repo/depictions/org.mirror.hostile.html"
    assert {"Icon", "Header", "Support"}.isdisjoint(served)
    views = fetch(api, "/repo/depictions/org.mirror.hostile.json").json()["tabs"][0]["views"]
    for view in views:
        for key in ("title", "text"):
            if key in view:
                assert_plain(view[key])
    [text] = [v["markdown"] for v in views if v["class"] == "DepictionMarkdownView"]
    html = rendered_html(text)
    assert_inert(html)
    assert "<a " not in html
    assert "alert(1)" in html  # the text stays, as text
    # The catalogue's own record lost the markup and the unsafe addresses too.
    text = scalar(
        database_url,
        "SELECT name || ' ' || author || ' ' || description || ' ' || long_description"
        " FROM package_records WHERE package = 'org.mirror.hostile'",
    )
    assert_plain(text)
    icon = "SELECT icon FROM package_records WHERE package = 'org.mirror.hostile'"
    url = "SELECT url FROM package_records WHERE package = 'org.mirror.hostile'"
    assert scalar(database_url, icon) == ""
    assert scalar(database_url, url) == "http://old.example/hostile"


def test_a_row_stored_before_the_rules_is_served_without_its_unsafe_fields(
    pkgcat: Publisher, tmp_path: Path, cli_env: dict[str, str], make_api: AppFactory
) -> None:
    deb = build_deb(tmp_path, "com.alpha.old")
    assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0
    old = (
        "Package: com.alpha.old\nVersion: 1.0\nArchitecture: all\n"
        "Maintainer: Test Maintainer <test@example.invalid>\n"
        f"Name: Old {SCRIPT}\nDepiction: javascript:alert(1)\nIcon: data:image/png,x\n"
        f"Description: old\n {IMG}"
    )
    engine = engine_for(cli_env["PKGCAT_DATABASE_URL"])
    try:
        with engine.begin() as db:
            from sqlalchemy import text

            db.execute(text("UPDATE deb_files SET control = :c"), {"c": old})
    finally:
        engine.dispose()
    api = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"])
    [stanza] = stanzas(fetch(api, "/repo/Packages").content)
    assert stanza["Package"] == "com.alpha.old"
    assert stanza["Maintainer"] == "Test Maintainer <test@example.invalid>"
    assert {"Depiction", "Icon"}.isdisjoint(stanza)
    for value in stanza.values():
        assert_plain(value)


MARKDOWN_VECTORS: dict[str, str] = {
    "script": f"a {SCRIPT} b",
    "img onerror": f"a {IMG} b",
    "javascript link": "[x](javascript:alert(1))",
    "data image": "![x](data:text/html,<script>alert(1)</script>)",
    "file link": "[x](file:///etc/passwd)",
    "autolink": "<javascript:alert(1)>",
    "reference": "[x]\n\n[x]: javascript:alert(1)",
    "entity-spelt scheme": "[x](&#106;avascript:alert(1))",
    "entities": "&lt;script&gt;alert(1)&lt;/script&gt;",
    "http link": "[x](http://plain.example/)",
    "https link with a quote": '[x](https://ok.example/"onerror=alert(1))',
    "html comment": "<!-- x --><svg/onload=alert(1)>",
}


@pytest.mark.parametrize("case", sorted(MARKDOWN_VECTORS))
def test_the_depiction_markdown_renders_no_html_and_no_link_but_https(case: str) -> None:
    html = rendered_html(markdown(MARKDOWN_VECTORS[case]))
    assert_inert(html)
    assert "<a " not in html


def test_an_https_markdown_link_stays_a_link() -> None:
    html = rendered_html(markdown("see [the docs](https://ok.example/docs) & <b>"))
    assert '<a href="https://ok.example/docs">the docs</a>' in html
    assert "&amp; &lt;b&gt;" in html
