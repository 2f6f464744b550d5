"""The ``pkgcat`` command: one module per command group, registered here explicitly."""

from __future__ import annotations

import typer

from pkgcat.cli import apps, client, database, demo, imports, keys, serve, sources

app = typer.Typer(
    name="pkgcat",
    help="Package Catalogue API: serve it and run its catalogue.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("serve")(serve.serve)
app.command("demo")(demo.demo)
app.add_typer(database.app, name="db")
app.add_typer(sources.app, name="source")
app.add_typer(apps.app, name="app")
app.add_typer(keys.app, name="key")
app.add_typer(client.app, name="client")
app.command("import-repo")(imports.import_repo)
app.command("import-purchases")(imports.purchases_command)
app.command("import-stats")(imports.stats_command)
app.command("import-prices")(imports.prices_command)


def main() -> None:
    app()
