from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_broker.config import Settings

STRONG = "a" * 40


def test_production_refuses_development_secrets():
    with pytest.raises(ValidationError, match="BROKER_KEY_HASH_SECRET"):
        Settings(env="production", signing_key="x", database_url="postgresql+psycopg://db/b")
    with pytest.raises(ValidationError, match="BROKER_SIGNING_KEY"):
        Settings(env="production", key_hash_secret=STRONG, database_url="postgresql+psycopg://db/b")
    with pytest.raises(ValidationError, match="BROKER_CARD_SIGNING_KEY"):
        Settings(
            env="production",
            key_hash_secret=STRONG,
            signing_key="x",
            database_url="postgresql+psycopg://db/b",
        )
    with pytest.raises(ValidationError, match="BROKER_ALLOW_PRIVATE_FETCH"):
        Settings(
            env="production",
            key_hash_secret=STRONG,
            signing_key="x",
            database_url="postgresql+psycopg://db/b",
            allow_private_fetch=True,
        )


def test_production_starts_with_real_secrets():
    settings = Settings(
        env="production",
        key_hash_secret=STRONG,
        signing_key="x",
        card_signing_key="y",
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
