"""The ``pkgcat`` command: one module per command group, imported only when it runs.

``pkgcat --help`` and ``pkgcat client ...`` must start fast and must work where
only the client is installed (``pip install pkgcat``, without the ``server``
extra). So this module imports nothing but Typer: the table below names each
command's module and its one-line summary, ``pkgcat --help`` lists the
summaries, and a command's module (with SQLAlchemy, Alembic or granian behind
it) is imported when that command is the one being run.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from pkgcat import __version__


@dataclass(frozen=True)
class _Entry:
    module: str
    attribute: str
    summary: str
    server: bool = True
    """Needs the ``server`` extra (everything but the client does)."""


COMMANDS: dict[str, _Entry] = {
    "serve": _Entry("serve", "serve", "Serve the API until interrupted."),
    "init": _Entry("database", "init", "Create a new, empty catalogue database."),
    "migrate": _Entry("database", "migrate", "Bring the database to the current schema."),
    "demo": _Entry(
        "demo",
        "demo",
        "Seed the demo catalogue and its store (signed repository, test mode, webhook receiver).",
    ),
    "source": _Entry("sources", "app", "Sources (repository owners)."),
    "app": _Entry("apps", "app", "Applications and their keys."),
    "key": _Entry("keys", "app", "Secret keys, and public keys for tweaks."),
    "whitelist": _Entry("whitelist", "app", "The devices allowed a package whatever they bought."),
    "import-repo": _Entry("imports", "import_repo", "Import an APT repository's packages."),
    "import-purchases": _Entry("imports", "purchases_command", "Load purchases (buyers)."),
    "import-stats": _Entry("imports", "stats_command", "Set packages' download and vote counts."),
    "import-prices": _Entry("imports", "prices_command", "Set packages' prices."),
    "publish": _Entry("publish", "publish_command", "Publish a .deb to the served repository."),
    "repo": _Entry("repo", "app", "The served repository's signing keys."),
    "webhook": _Entry("webhooks", "app", "Applications' webhook endpoints."),
    "deliver": _Entry("deliver", "deliver", "Deliver webhook events until interrupted."),
    "buyer": _Entry("buyers", "app", "The store's buyers: list them, revoke their sign-ins."),
    "shop": _Entry("shop", "app", "Sellers' shops: import customers as gifts, read a history."),
    "money": _Entry("money", "app", "Sellers' money: balances, payouts, adjustments, commissions."),
    "check": _Entry("checks", "app", "Check the catalogue against rules older data may break."),
    "client": _Entry("client", "app", "Read a catalogue server as a seller.", False),
}
"""Every command, in the order ``pkgcat --help`` lists them."""

SERVER_EXTRA_HINT = "pip install 'pkgcat[server]'"


def group(name: str) -> typer.Typer:
    """The Typer app of the command group ``name``, its help from :data:`COMMANDS`.

    Help and usage errors are Click's plain text: Typer's Rich panels would import
    Rich's Markdown and syntax highlighting, about three times the time of the
    rest of ``pkgcat --help``.
    """
    return typer.Typer(help=COMMANDS[name].summary, no_args_is_help=True, rich_markup_mode=None)


def _load(name: str) -> Any:
    """The command ``name`` as Click sees it, its module imported now."""
    entry = COMMANDS[name]
    try:
        module = importlib.import_module(f"pkgcat.cli.{entry.module}")
    except ModuleNotFoundError as error:
        if not entry.server or (error.name or "").startswith("pkgcat"):
            raise
        typer.echo(
            f"error: `pkgcat {name}` needs the server, which is not installed "
            f"(no module {error.name!r}): {SERVER_EXTRA_HINT}",
            err=True,
        )
        raise typer.Exit(2) from None
    target = getattr(module, entry.attribute)
    command: Any
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)  # a group, even while it has one command
    else:
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class _OnDemand(TyperGroup):
    """A group that lists every command from :data:`COMMANDS` and imports only the one run."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, entry in COMMANDS.items():
            self.commands[name] = TyperCommand(name, help=entry.summary)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] in COMMANDS:
            self.commands[args[0]] = _load(args[0])
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="pkgcat",
    cls=_OnDemand,
    no_args_is_help=True,
    rich_markup_mode=None,  # see group()
    add_completion=False,
    pretty_exceptions_enable=False,
)


def command_tree() -> Any:
    """The whole command tree as Click sees it, every command's module imported (for tools)."""
    group = typer.main.get_group(app)
    for name in COMMANDS:
        group.commands[name] = _load(name)
    return group


def _print_version(given: bool) -> None:
    if given:
        typer.echo(f"pkgcat {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Package Catalogue API: serve it, run its catalogue, read it as a seller."""


def main() -> None:
    """The ``pkgcat`` entry point (also ``python -m pkgcat``)."""
    try:
        app(prog_name="pkgcat")
    except Exception as error:
        from pkgcat.cli._failures import database_failure

        line = database_failure(error)
        if line is None:
            raise
        typer.echo(f"error: {line}", err=True)
        sys.exit(2)
