from __future__ import annotations

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from agent_broker import clock
from agent_broker.ledger import books
from agent_broker.ledger.errors import InsufficientFunds, UnbalancedEntry
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.models import JournalEntry, Posting
from agent_broker.ledger.service import charge, credit, wallet


def _entries(app) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(JournalEntry))


def test_credit_then_charge_moves_the_balance_and_journals_both(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session:
        credit(
            session, account, 1_000_000, source=books.OPERATOR, kind="t", memo="in", now=clock.now()
        )
        charge(session, account, 400_000, sink=books.FEES, kind="t", memo="fee", now=clock.now())
        session.commit()
    with app.state.context.db.writer() as session:
        view = wallet(session, account, now=clock.now())
        assert (view.spendable_micro, view.held_micro, view.funded) == (600_000, 0, False)
        postings = session.execute(
            select(Posting.account_code, Posting.amount_micro).order_by(Posting.id)
        ).all()
    assert [tuple(p) for p in postings] == [
        (books.OPERATOR, -1_000_000),
        (books.wallet_code(account), 1_000_000),
        (books.wallet_code(account), -400_000),
        (books.FEES, 400_000),
    ]


def test_real_money_credit_marks_the_wallet_funded_for_good(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session:
        credit(
            session,
            account,
            500_000,
            source=books.PROCESSOR_A,
            kind="t",
            memo="pack",
            now=clock.now(),
            real_money=True,
        )
        charge(session, account, 500_000, sink=books.FEES, kind="t", memo="fee", now=clock.now())
        session.commit()
    with app.state.context.db.writer() as session:
        view = wallet(session, account, now=clock.now())
    assert view.spendable_micro == 0
    assert view.funded is True


def test_a_charge_beyond_the_balance_is_refused_and_writes_nothing(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session:
        credit(session, account, 100, source=books.OPERATOR, kind="t", memo="in", now=clock.now())
        session.commit()
    before = _entries(app)
    with app.state.context.db.writer() as session, pytest.raises(InsufficientFunds):
        charge(session, account, 101, sink=books.FEES, kind="t", memo="fee", now=clock.now())
    assert _entries(app) == before
    with app.state.context.db.writer() as session:
        assert wallet(session, account, now=clock.now()).spendable_micro == 100


@pytest.mark.parametrize(
    "postings",
    [
        [(books.OPERATOR, -5), (books.FEES, 4)],
        [(books.OPERATOR, -5), (books.FEES, 5.0)],
        [(books.OPERATOR, 0), (books.FEES, 0)],
        [],
    ],
)
def test_unbalanced_or_non_integer_entries_are_refused(app, postings):
    with app.state.context.db.writer() as session, pytest.raises(UnbalancedEntry):
        post_entry(session, kind="t", memo="bad", postings=postings, now=clock.now())


def test_every_entry_sums_to_zero(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session:
        for amount in (7, 11, 13):
            credit(
                session,
                account,
                amount,
                source=books.OPERATOR,
                kind="t",
                memo="in",
                now=clock.now(),
            )
        charge(session, account, 20, sink=books.FEES, kind="t", memo="fee", now=clock.now())
        session.commit()
    with app.state.context.db.reader() as session:
        sums = session.execute(
            select(Posting.entry_sequence, func.sum(Posting.amount_micro)).group_by(
                Posting.entry_sequence
            )
        ).all()
    assert len(sums) == 4
    assert all(total == 0 for _, total in sums)


@pytest.mark.parametrize("table", ["ledger_entries", "ledger_postings"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET {c} = {c}", "DELETE FROM {t}"])
def test_the_journal_is_append_only_in_the_database(app, open_account, table, statement):
    account = open_account()
    with app.state.context.db.writer() as session:
        credit(session, account, 10, source=books.OPERATOR, kind="t", memo="in", now=clock.now())
        session.commit()
    column = "memo" if table == "ledger_entries" else "amount_micro"
    with app.state.context.db.writer() as session, pytest.raises(DBAPIError):
        session.execute(text(statement.format(t=table, c=column)))
    assert _entries(app) == 1


def test_the_database_refuses_a_negative_wallet(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session, pytest.raises(IntegrityError):
        session.execute(
            text("UPDATE ledger_accounts SET total_micro = -1 WHERE code = :c"),
            {"c": books.wallet_code(account)},
        )
    with app.state.context.db.writer() as session, pytest.raises(IntegrityError):
        session.execute(
            text("UPDATE ledger_accounts SET held_micro = total_micro + 1 WHERE code = :c"),
            {"c": books.wallet_code(account)},
        )
