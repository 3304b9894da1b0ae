from __future__ import annotations

import logging
import re

import pytest
import uvicorn.config
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError

from agent_broker.config import (
    LOG_LEVELS,
    RATE_LIMIT_SETTINGS,
    SIGNING_KEY_FORMAT,
    Settings,
    parse_rate_limit,
)
from agent_broker.http.rate_limits import RateLimiter

STRONG = "a" * 40
SEED = "ab" * 32
CARD_SEED = "cd" * 32


def test_production_refuses_development_secrets():
    with pytest.raises(ValidationError, match="BROKER_KEY_HASH_SECRET"):
        Settings(env="production", signing_key=SEED, database_url="postgresql+psycopg://db/b")
    with pytest.raises(ValidationError, match="BROKER_SIGNING_KEY"):
        Settings(env="production", key_hash_secret=STRONG, database_url="postgresql+psycopg://db/b")
    with pytest.raises(ValidationError, match="BROKER_CARD_SIGNING_KEY"):
        Settings(
            env="production",
            key_hash_secret=STRONG,
            signing_key=SEED,
            database_url="postgresql+psycopg://db/b",
        )
    with pytest.raises(ValidationError, match="BROKER_ALLOW_PRIVATE_FETCH"):
        Settings(
            env="production",
            key_hash_secret=STRONG,
            signing_key=SEED,
            database_url="postgresql+psycopg://db/b",
            allow_private_fetch=True,
        )


def test_production_starts_with_real_secrets():
    settings = Settings(
        env="production",
        key_hash_secret=STRONG,
        signing_key=SEED,
        card_signing_key=CARD_SEED,
        database_url="postgresql+psycopg://db/b",
    )
    assert not settings.is_sqlite


def test_settings_come_from_broker_environment_variables(monkeypatch):
    monkeypatch.setenv("BROKER_PUBLIC_BASE_URL", "https://market.example.org")
    monkeypatch.setenv("BROKER_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.1")
    settings = Settings()
    assert settings.effective_bindings_base == "https://market.example.org/bindings"
    assert len(settings.trusted_proxy_networks) == 2


def test_trusted_proxies_must_be_addresses_or_ranges():
    with pytest.raises(ValidationError, match="BROKER_TRUSTED_PROXIES"):
        Settings(trusted_proxies="10.0.0.0/8, load-balancer")


# --- values checked when read, not on first use ------------------------------------------


@pytest.mark.parametrize("name", RATE_LIMIT_SETTINGS)
@pytest.mark.parametrize("value", ["20/hour", "5 per minute", "100/day", "2/2 second", "1/Second"])
def test_a_rate_limit_is_one_rate_in_the_limits_notation(name, value):
    assert getattr(Settings(**{name: value}), name) == value


@pytest.mark.parametrize("name", RATE_LIMIT_SETTINGS)
@pytest.mark.parametrize("value", ["garbage", "", "35", "35/fortnight", "35/hour garbage"])
def test_a_rate_limit_outside_the_notation_is_refused(name, value):
    with pytest.raises(ValidationError, match="a rate in the `limits` notation") as refused:
        Settings(**{name: value})
    assert [error["loc"] for error in refused.value.errors()] == [(name,)]
    if value:
        assert value not in str(refused.value)


@pytest.mark.parametrize("name", RATE_LIMIT_SETTINGS)
@pytest.mark.parametrize("value", ["0/hour", "0 per minute"])
def test_a_rate_of_zero_is_refused(name, value):
    with pytest.raises(ValidationError, match="must allow at least one request per period"):
        Settings(**{name: value})


@pytest.mark.parametrize("value", ["10/hour;20/day", "10/hour,20/day", "10/hour|20/day"])
def test_several_rates_are_refused_not_cut_to_the_first(value):
    with pytest.raises(ValidationError, match='takes one rate, e.g. "20/hour"'):
        Settings(register_rate_limit=value)


def test_the_rate_limiter_reads_a_limit_as_the_settings_do():
    limiter = RateLimiter(Settings())
    assert limiter._item("5 per minute") == parse_rate_limit("5 per minute")
    with pytest.raises(ValueError, match="takes one rate"):
        limiter._item("10/hour;20/day")


@pytest.mark.parametrize(
    ("value", "read"), [("INFO", "INFO"), ("debug", "DEBUG"), ("Warning", "WARNING")]
)
def test_a_log_level_is_taken_in_any_case(value, read):
    assert Settings(log_level=value).log_level == read


@pytest.mark.parametrize("value", ["bogus", "", "TRACE", "WARN", "NOTSET", "10", " info"])
def test_a_log_level_the_logging_set_up_does_not_take_is_refused(value):
    levels = "DEBUG, INFO, WARNING, ERROR, CRITICAL"
    with pytest.raises(ValidationError, match=f"must be one of {levels}"):
        Settings(log_level=value)


def test_the_log_levels_are_those_the_logging_and_uvicorn_both_take():
    for level in LOG_LEVELS:
        assert isinstance(logging.getLevelName(level), int)
        assert level.lower() in uvicorn.config.LOG_LEVELS


@pytest.mark.parametrize("name", ["signing_key", "card_signing_key"])
def test_a_signing_key_is_checked_when_read(name):
    pem = (
        Ed25519PrivateKey.generate()
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    for good in (SEED, SEED.upper(), f" {SEED}\n", pem, pem.replace("\n", "\\n")):
        assert getattr(Settings(**{name: good}), name) == good
    for bad in ("hunter2", SEED[:-2], "zz" * 32, "-----BEGIN PRIVATE KEY-----\nbm90\n"):
        with pytest.raises(ValidationError, match=re.escape(SIGNING_KEY_FORMAT)) as refused:
            Settings(**{name: bad})
        assert [error["loc"] for error in refused.value.errors()] == [(name,)]
        assert bad not in str(refused.value)
