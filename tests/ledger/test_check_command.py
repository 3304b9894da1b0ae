"""`agent-broker ledger check`: every check now, printed, read-only."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.ledger import books
from tests.support.accounts import fund
from tests.support.ledger import journal, seal_now, stored_verdict, tamper


@pytest.fixture
def check(database_url, monkeypatch, app):
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)

    def invoke():  # type: ignore[no-untyped-def]
        return CliRunner().invoke(cli, ["ledger", "check"])

    return invoke


def test_a_clean_ledger_exits_0_with_a_summary(app, check, open_account):
    fund(app, open_account(), 1_000_000)
    journal(app, 1)
    seal_now(app)
    result = check()
    assert result.exit_code == 0, result.output
    assert result.output == "ledger ok: chain head at row 2; 0 problems\n"


def test_nothing_sealed_yet_is_not_a_problem(app, check):
    journal(app, 1)
    result = check()
    assert result.exit_code == 0, result.output
    assert result.output == "ledger ok: nothing sealed; 0 problems\n"


def test_each_problem_is_a_line_and_the_exit_status_is_1(app, check, open_account):
    account = open_account()
    fund(app, account, 1_000_000)
    journal(app, 1)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 2")
    code = books.wallet_code(account)
    with app.state.context.db.engine.begin() as conn:
        conn.execute(
            text("UPDATE ledger_accounts SET total_micro = total_micro + 1 WHERE code = :c"),
            {"c": code},
        )
    result = check()
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "row_altered\t2\tjournal row 2 differs from what was sealed",
        # The operator's command names the wallet by its code (the account id).
        f"balance_mismatch\t-\tthe balance of wallet {code} differs from the sum of its"
        " journal postings",
        "ledger broken: chain head at row 2; 2 problems",
    ]


def test_it_stores_no_verdict(app, check):
    journal(app, 2)
    seal_now(app)
    stored = stored_verdict(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 1")
    assert check().exit_code == 1
    assert stored_verdict(app) == stored  # still the sealer's `ok`
    with app.state.context.db.engine.begin() as conn:
        conn.execute(text("DELETE FROM ledger_verdicts"))
    assert check().exit_code == 1
    assert stored_verdict(app) is None


def test_it_lists_more_problems_than_the_verdict(app, check):
    journal(app, 25)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'rewritten'")
    lines = check().output.splitlines()
    assert len(lines) == 26
    assert lines[-1] == "ledger broken: chain head at row 25; 25 problems"


def test_it_compares_the_chain_with_the_stored_verdicts_mark(app, check):
    journal(app, 2)
    seal_now(app)
    tamper(
        app,
        "DELETE FROM ledger_postings",
        "DELETE FROM ledger_entries",
        "DELETE FROM ledger_checkpoints",
        "DELETE FROM ledger_seals",
    )
    result = check()
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "chain_regressed\t2\tthe chain's last checkpoint went back from row 2 to nothing: "
        "seals or checkpoints were removed",
        "ledger broken: nothing sealed; 1 problem",
    ]


def test_the_help_says_it_stores_no_verdict():
    result = CliRunner().invoke(cli, ["ledger", "check", "--help"])
    assert result.exit_code == 0
    assert "stores no verdict" in " ".join(result.output.split())
    listed = CliRunner().invoke(cli, ["ledger", "--help"])
    assert "check" in listed.output
