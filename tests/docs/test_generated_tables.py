"""The documents' generated tables (tools/docs_tables.py) are what the code says now, and
every setting is documented where operators look for it."""

from __future__ import annotations

import re

import pytest

from agent_broker.config import Settings
from tests.support.docs import CONFIGURATION, ERRORS, SCALING, markdown_documents
from tools import docs_tables


def test_every_generated_block_is_what_the_generator_makes_now():
    documents = docs_tables.documents()
    assert CONFIGURATION in documents and ERRORS in documents
    for path in documents:
        text = path.read_text(encoding="utf-8")
        assert docs_tables.render(text) == text, f"{path}: out of date; run `make docs`"


def test_the_blocks_hold_the_tables_they_name():
    assert "<!-- generated: settings -->\n| Variable |" in CONFIGURATION.read_text()
    assert "<!-- generated: reasons -->\n| Reason |" in ERRORS.read_text()


def test_every_markdown_document_with_a_block_is_found():
    marker = re.compile(r"^<!-- generated: \w+ -->$", re.MULTILINE)
    marked = [p for p in markdown_documents() if marker.search(p.read_text())]
    assert sorted(marked) == sorted(docs_tables.documents())


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_is_in_the_configuration_page(name):
    assert f"`BROKER_{name.upper()}`" in CONFIGURATION.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_is_shared_or_free_to_differ_in_the_scaling_page(name):
    """docs/operators/scaling.md lists what replicas must share and what may differ: a
    setting in neither list leaves operators guessing."""
    text = SCALING.read_text(encoding="utf-8")
    section = text[text.index("## What every replica must share") :]
    section = section[: section.index("\n## ", 1)]
    variable = f"BROKER_{name.upper()}"
    chains = variable.startswith("BROKER_PROCESSOR_B_ADDRESS_")
    assert f"`{variable}`" in section or (
        chains and "BROKER_PROCESSOR_B_ADDRESS_<CHAIN>" in section
    )


def test_a_setting_without_a_meaning_stops_the_generator(monkeypatch):
    meanings = dict(docs_tables.SETTING_MEANINGS)
    del meanings["card_signing_key"]
    monkeypatch.setattr(docs_tables, "SETTING_MEANINGS", meanings)
    with pytest.raises(docs_tables.Undocumented, match="card_signing_key"):
        docs_tables.settings_table()


def test_a_reason_without_a_meaning_stops_the_generator(monkeypatch):
    meanings = dict(docs_tables.REASON_MEANINGS)
    del meanings["listing_conflict"]
    monkeypatch.setattr(docs_tables, "REASON_MEANINGS", meanings)
    with pytest.raises(docs_tables.Undocumented, match="listing_conflict"):
        docs_tables.reasons_table()


def test_the_check_mode_names_a_stale_document_and_changes_nothing(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "stale.md"
    stale.write_text("# A page\n\n<!-- generated: reasons -->\n| old |\n<!-- end -->\n")
    monkeypatch.setattr(docs_tables, "documents", lambda: [stale])
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    assert docs_tables.main(["--check"]) == 1
    assert "stale.md: out of date" in capsys.readouterr().err
    assert "| old |" in stale.read_text()
    assert docs_tables.main([]) == 0
    assert "`x402_payment_replay`" in stale.read_text()
    assert docs_tables.main(["--check"]) == 0
