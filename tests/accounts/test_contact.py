"""PUT /v1/account/contact: limits, mail-capable addresses, contact_url, target ignored."""

from __future__ import annotations

import pytest

from tests.support.accounts import profile, register
from tests.support.http import assert_problem

CONTACT = "/v1/account/contact"

# 64-character local part + 189-character domain = 254 characters, a valid address.
EMAIL_254 = "a" * 64 + "@" + ".".join(["b" * 63, "c" * 63, "d" * 57]) + ".dev"
EMAIL_255 = "a" * 64 + "@" + ".".join(["b" * 63, "c" * 63, "d" * 58]) + ".dev"


def _contact(client, agent) -> dict | None:
    return profile(client, agent)["contact"]


def _put(client, agent, **body):
    return client.put(CONTACT, headers=agent.headers, json=body)


def test_put_contact_is_204_with_empty_body(client):
    agent = register(client)

    response = _put(client, agent, contact_name="Ops Team", contact_email="ops@agents.dev")

    assert response.status_code == 204, response.text
    assert response.content == b""


def test_contact_reads_back_in_the_profile(client):
    agent = register(client)

    response = _put(
        client,
        agent,
        contact_name="Ops Team",
        contact_email="ops@agents.dev",
        contact_url="https://agents.dev/contact",
    )

    assert response.status_code == 204, response.text
    assert _contact(client, agent) == {
        "contact_name": "Ops Team",
        "contact_email": "ops@agents.dev",
        "contact_url": "https://agents.dev/contact",
    }


def test_a_second_write_replaces_the_contact(client):
    agent = register(client)
    first = _put(client, agent, contact_name="First", contact_email="one@agents.dev")
    assert first.status_code == 204, first.text
    response = _put(client, agent, contact_name="Second", contact_email="two@agents.dev")

    assert response.status_code == 204, response.text
    contact = _contact(client, agent)
    assert contact["contact_name"] == "Second"
    assert contact["contact_email"] == "two@agents.dev"


def test_contact_without_key_is_401(client):
    response = client.put(CONTACT, json={"contact_name": "Ops", "contact_email": "ops@agents.dev"})
    assert_problem(response, 401, "unauthorized")


# --- lengths and required fields ---------------------------------------------------------


def test_contact_name_of_200_characters_is_accepted(client):
    agent = register(client)
    name = "n" * 200

    assert _put(client, agent, contact_name=name, contact_email="ops@agents.dev").status_code == 204
    assert _contact(client, agent)["contact_name"] == name


def test_contact_name_over_200_characters_is_400(client):
    agent = register(client)

    response = _put(client, agent, contact_name="n" * 201, contact_email="ops@agents.dev")

    assert_problem(response, 400, "invalid_input")
    assert _contact(client, agent) is None


def test_contact_email_of_254_characters_is_accepted(client):
    agent = register(client)
    assert len(EMAIL_254) == 254

    response = _put(client, agent, contact_name="Ops", contact_email=EMAIL_254)

    assert response.status_code == 204, response.text
    assert _contact(client, agent)["contact_email"] == EMAIL_254


def test_contact_email_over_254_characters_is_400(client):
    agent = register(client)
    assert len(EMAIL_255) == 255

    response = _put(client, agent, contact_name="Ops", contact_email=EMAIL_255)

    assert_problem(response, 400, "invalid_input")
    assert _contact(client, agent) is None


@pytest.mark.parametrize(
    "body",
    [
        {"contact_email": "ops@agents.dev"},
        {"contact_name": "Ops"},
        {},
        {"contact_name": "", "contact_email": "ops@agents.dev"},
        {"contact_name": "   ", "contact_email": "ops@agents.dev"},
        {"contact_name": "Ops", "contact_email": ""},
        {"contact_name": None, "contact_email": "ops@agents.dev"},
        {"contact_name": "Ops", "contact_email": None},
        {"contact_name": 42, "contact_email": "ops@agents.dev"},
    ],
    ids=[
        "no-name",
        "no-email",
        "empty-object",
        "empty-name",
        "blank-name",
        "empty-email",
        "null-name",
        "null-email",
        "numeric-name",
    ],
)
def test_missing_or_empty_required_fields_are_400(client, body):
    agent = register(client)

    assert_problem(client.put(CONTACT, headers=agent.headers, json=body), 400, "invalid_input")
    assert _contact(client, agent) is None


def test_malformed_json_is_400(client):
    agent = register(client)
    response = client.put(
        CONTACT,
        headers={**agent.headers, "content-type": "application/json"},
        content=b'{"contact_name": "Ops",',
    )
    assert_problem(response, 400, "invalid_input")


# --- addresses that cannot receive mail --------------------------------------------------


@pytest.mark.parametrize(
    "email",
    [
        "ops@x.invalid",
        "ops@x.test",
        "ops@x.example",
        "ops@x.localhost",
        "ops@x.local",
        "ops@x.onion",
        "ops@x.alt",
        "ops@x.internal",
        "ops@x.home.arpa",
        "ops@home.arpa",
        "ops@deep.sub.x.test",
        "ops@X.TEST",
        "ops@x.test.",
        "ops@localhost",
        "ops@intranet",
        "ops@[192.0.2.1]",
        "ops@[IPv6:2001:db8::1]",
        "ops@192.0.2.1",
        "nope",
        "ops@",
        "@agents.dev",
        "ops@@agents.dev",
        "ops@agents..dev",
    ],
)
def test_address_that_cannot_receive_mail_is_400(client, email):
    agent = register(client)

    response = _put(client, agent, contact_name="Ops", contact_email=email)

    assert_problem(response, 400, "invalid_input")
    assert _contact(client, agent) is None


@pytest.mark.parametrize(
    "email",
    [
        "ops@agents.dev",
        "first.last+deals@mail.agents.co.uk",
        "ops@testing.dev",  # "test" as part of a label, not the reserved name
        "ops@local.agents.dev",  # "local" as a leftmost label only
        "ops@onion-router.io",
        "ops@internal-tools.net",
        "ops@arpa-labs.org",
    ],
)
def test_deliverable_addresses_are_accepted(client, email):
    agent = register(client)

    response = _put(client, agent, contact_name="Ops", contact_email=email)

    assert response.status_code == 204, response.text
    assert _contact(client, agent)["contact_email"] == email


# --- contact_url -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://agents.dev/contact", "ftp://agents.dev/contact", "agents.dev/contact", "https://"],
)
def test_contact_url_that_is_not_https_is_400(client, url):
    agent = register(client)

    response = _put(
        client, agent, contact_name="Ops", contact_email="ops@agents.dev", contact_url=url
    )

    assert_problem(response, 400, "invalid_input")
    assert _contact(client, agent) is None


def test_empty_contact_url_is_accepted_and_unset(client):
    agent = register(client)

    response = _put(
        client, agent, contact_name="Ops", contact_email="ops@agents.dev", contact_url=""
    )

    assert response.status_code == 204, response.text
    assert _contact(client, agent) == {
        "contact_name": "Ops",
        "contact_email": "ops@agents.dev",
    }


def test_empty_contact_url_clears_an_earlier_one(client):
    agent = register(client)
    first = _put(
        client,
        agent,
        contact_name="Ops",
        contact_email="ops@agents.dev",
        contact_url="https://agents.dev/contact",
    )
    assert first.status_code == 204, first.text

    second = _put(client, agent, contact_name="Ops", contact_email="ops@agents.dev", contact_url="")

    assert second.status_code == 204, second.text
    assert "contact_url" not in _contact(client, agent)


# --- the contact is always the caller's own ----------------------------------------------


@pytest.mark.parametrize("field", ["account_id", "target", "target_account_id", "handle"])
def test_target_in_the_body_is_ignored(client, field):
    caller = register(client)
    other = register(client)

    response = client.put(
        CONTACT,
        headers=caller.headers,
        json={
            "contact_name": "Caller Ops",
            "contact_email": "caller@agents.dev",
            field: other.account_id,
        },
    )

    assert response.status_code == 204, response.text
    assert _contact(client, caller)["contact_email"] == "caller@agents.dev"
    assert _contact(client, other) is None


@pytest.mark.parametrize("field", ["account_id", "target"])
def test_target_in_the_query_is_ignored(client, field):
    caller = register(client)
    other = register(client)

    response = client.put(
        CONTACT,
        headers=caller.headers,
        params={field: other.account_id},
        json={"contact_name": "Caller Ops", "contact_email": "caller@agents.dev"},
    )

    assert response.status_code == 204, response.text
    assert _contact(client, caller)["contact_email"] == "caller@agents.dev"
    assert _contact(client, other) is None


def test_writing_a_contact_leaves_other_accounts_untouched(client):
    caller = register(client)
    other = register(client)
    other_put = _put(client, other, contact_name="Other Ops", contact_email="other@agents.dev")
    assert other_put.status_code == 204, other_put.text

    response = _put(client, caller, contact_name="Caller Ops", contact_email="caller@agents.dev")

    assert response.status_code == 204, response.text
    assert _contact(client, other) == {
        "contact_name": "Other Ops",
        "contact_email": "other@agents.dev",
    }
