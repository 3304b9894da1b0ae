"""Every reason the package answers with is in the errors page's table and in the interface
reference's (docs/interface.md §3.2), and the reasons the page calls unused really are."""

from __future__ import annotations

import re

from agent_broker.problems import Reason
from tests.support.docs import ERRORS, INTERFACE, emitted_reasons, first_cell_codes, table_rows
from tools.docs_tables import REASON_MEANINGS


def test_the_scan_finds_reasons_raised_through_problem_classes_and_arguments():
    emitted = emitted_reasons()
    # A problem class's `reason = Reason.x` (certification/subscription.py), and
    # `reason=Reason.x` at a raise (payments/x402/gate.py).
    assert {"certification_unfunded", "insufficient_funds_self", "invalid_input"} <= emitted
    assert emitted <= set(Reason.__members__)


def test_every_emitted_reason_is_a_row_of_the_errors_table():
    documented = first_cell_codes(ERRORS.read_text(encoding="utf-8"))
    missing = sorted(emitted_reasons() - documented)
    assert not missing, f"reasons the service answers that docs/agents/errors.md lacks: {missing}"


def test_every_emitted_reason_is_a_row_of_the_interface_reference():
    text = INTERFACE.read_text(encoding="utf-8")
    section = text[text.index("### 3.2 Reason codes") : text.index("### 3.3")]
    documented = {
        code for row in table_rows(section) for code in re.findall(r"`([a-z0-9_]+)`", row[1])
    }
    missing = sorted(emitted_reasons() - documented)
    assert not missing, f"reasons the service answers that interface.md §3.2 lacks: {missing}"


def test_the_reasons_called_unused_are_emitted_by_nothing():
    unused = {
        code for code, (_, meaning) in REASON_MEANINGS.items() if "not answered by any" in meaning
    }
    assert unused == {"account_has_escrow"}
    assert not unused & emitted_reasons()
    text = ERRORS.read_text(encoding="utf-8")
    for code in unused:
        assert f"`{code}`" in text
