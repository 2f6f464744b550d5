"""The event types, declared once (pkgcat.events), and what lists them held to the declaration.

What reads the declaration is tested where it is served: the endpoints' filters and the API's
parameters in tests/webhooks/test_api.py and tests/test_operations.py, the dashboard's list in
tests/functional/test_dashboard_files.py, the bodies in tests/webhooks/test_bodies.py.
"""

from __future__ import annotations

import re

import orjson
import pytest

from pkgcat import events
from pkgcat.ingest.operator_data import PURCHASE_STATUSES
from pkgcat.webhooks.endpoints import EndpointRefused, check_events
from tests.test_docs import DOCS, read, sections, table_rows

NAMES = [kind.name for kind in events.DECLARED]


def test_the_webhooks_page_lists_every_type_in_order_saying_when_it_is_emitted() -> None:
    table = table_rows(sections(read(DOCS / "webhooks.md"))["Events"])
    assert table[0] == ["Type", "When"]
    assert table[1:] == [[f"`{kind.name}`", events.described(kind)] for kind in events.DECLARED]


@pytest.mark.parametrize("kind", events.DECLARED, ids=NAMES)
def test_each_type_reads_back_the_facts_it_stores(kind: type[events.Event]) -> None:
    made = kind.sample(7, 1_711_886_400)
    stored = orjson.loads(orjson.dumps(made.facts()))  # as the outbox's column keeps them
    assert events.read(kind.name, 7, stored) == made


def test_every_status_a_purchase_may_have_emits_its_sale_event() -> None:
    assert set(events.SALE_BY_STATUS) == set(PURCHASE_STATUSES)
    for status, kind in events.SALE_BY_STATUS.items():
        assert kind.sample(1, 0).status == status


def test_the_refusal_shown_in_the_api_reference_is_the_one_answered() -> None:
    """The one page that writes out every type: its example of a refused ``events``."""
    with pytest.raises(EndpointRefused) as refused:
        check_events(["sale.done"])
    shown = re.findall(r'"response":"(events: .*?)"\}', read(DOCS / "api.md"))
    assert shown == [str(refused.value)]


def test_no_other_page_writes_out_every_type() -> None:
    """Every other page links to webhooks.md's table, so a new type is documented once."""
    listing = {
        (path.name, line)
        for path in sorted(DOCS.glob("*.md"))
        for line in read(path).splitlines()
        if all(name in line for name in NAMES)
    }
    assert {page for page, _ in listing} == {"api.md"}  # the refusal above
