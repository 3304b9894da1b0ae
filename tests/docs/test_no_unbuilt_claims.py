"""No document calls a served feature unbuilt, or an emitted reason unused."""

from __future__ import annotations

import pytest

from tests.support.docs import FEATURES, emitted_reasons, markdown_documents, unbuilt_claims


def test_every_feature_the_check_knows_is_served(every_route):
    """The check names a feature only when its route is served: all of them are today."""
    assert {route for _, route in FEATURES.values()} <= every_route


@pytest.mark.parametrize("path", markdown_documents(), ids=lambda p: p.name)
def test_no_document_calls_a_served_feature_unbuilt(path, every_route):
    claims = unbuilt_claims(path.read_text(encoding="utf-8"), every_route, emitted_reasons())
    assert not claims, f"{path}: " + "; ".join(f"line {n}: {c}" for n, c in claims)


@pytest.mark.parametrize(
    "sentence",
    [
        "x402 payments are not implemented yet.",
        "Those reason codes (`x402_payment_replay`) are never emitted.",
        "There is no push channel: poll.",
        "The service itself never calls your route.",
        "Certification is not built yet.",
    ],
)
def test_the_claims_the_documents_once_made_are_caught(sentence, every_route):
    assert unbuilt_claims(sentence, every_route, emitted_reasons())


def test_an_unbuilt_feature_may_be_called_so(every_route):
    text = "One reason belongs to a part of escrow that is not built: account_has_escrow."
    assert not unbuilt_claims(text, every_route, emitted_reasons())
