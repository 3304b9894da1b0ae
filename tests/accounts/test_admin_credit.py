from __future__ import annotations

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.ledger.models import JournalEntry
from tests.support.accounts import register


def test_admin_credit_is_journalled_and_shows_in_the_balance(app, client, broker_env):
    agent = register(client)
    result = CliRunner().invoke(
        cli, ["admin", "credit", agent.account_id, "2500000", "--reason", "launch promo"]
    )
    assert result.exit_code == 0, result.output
    account = client.get("/v1/account", headers=agent.headers).json()
    assert account["balance_micro"] == 2_500_000
    assert account["reputation"]["funded"] is False
    with app.state.context.db.reader() as session:
        entry = session.scalars(select(JournalEntry)).one()
    assert (entry.kind, entry.memo, entry.real_money) == ("admin_credit", "launch promo", False)


def test_real_money_admin_credit_marks_the_account_funded(client, broker_env):
    agent = register(client)
    result = CliRunner().invoke(
        cli, ["admin", "credit", agent.account_id, "1000", "--reason", "wire", "--real-money"]
    )
    assert result.exit_code == 0, result.output
    assert client.get("/v1/account", headers=agent.headers).json()["reputation"]["funded"] is True


@pytest.mark.parametrize(
    "args, code",
    [
        (["00000000-0000-4000-8000-000000000000", "10", "--reason", "x"], 1),
        (["not-a-uuid", "10", "--reason", "x"], 2),
        (["{account}", "0", "--reason", "x"], 2),
        (["{account}", "--", "-5", "--reason", "x"], 2),
        (["{account}", "10", "--reason", "  "], 2),
        (["{account}", "10"], 2),
    ],
)
def test_admin_credit_refuses_bad_arguments_and_writes_nothing(app, client, broker_env, args, code):
    agent = register(client)
    argv = ["admin", "credit", *[a.format(account=agent.account_id) for a in args]]
    assert CliRunner().invoke(cli, argv).exit_code == code
    assert client.get("/v1/account", headers=agent.headers).json()["balance_micro"] == 0
