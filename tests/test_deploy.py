"""deploy/: the compose file, image and proxy configuration agree with each other and with
the service's settings. (No Docker here: the compose file is checked as YAML.)"""

from __future__ import annotations

import inspect
import ipaddress
import re
from pathlib import Path

import pytest
import uvicorn
import yaml
from pydantic import ValidationError

from agent_broker.config import Settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _example_settings() -> dict[str, str]:
    """BROKER_* names of broker.env.example, commented-out optional ones included."""
    found = {}
    for line in (DEPLOY / "broker.env.example").read_text().splitlines():
        match = re.fullmatch(r"#?\s*(BROKER_[A-Z_]+)=(.*)", line.strip())
        if match:
            found[match[1]] = match[2]
    return found


def test_only_the_proxy_is_reachable_and_replicas_wait_for_the_migration(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "migrate", "broker", "proxy"}
    assert [name for name, s in services.items() if "ports" in s] == ["proxy"]
    assert services["migrate"]["command"] == ["agent-broker", "db", "upgrade"]
    broker = services["broker"]
    assert broker["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert "replicas" in broker["deploy"]
    assert broker["env_file"] == services["migrate"]["env_file"] == "broker.env"


def test_the_image_serves_every_replica_with_workers_and_without_migrating():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "\nFROM python:3.11-slim\n" in dockerfile
    command = next(line for line in dockerfile.splitlines() if line.startswith("CMD"))
    for part in ("agent-broker serve", "--host 0.0.0.0", '--workers \\"${WORKERS}\\"'):
        assert part in command
    assert "--no-migrate" in command


def test_replicas_trust_exactly_the_proxy_address(compose):
    services = compose["services"]
    proxy_address = services["proxy"]["networks"]["backend"]["ipv4_address"]
    subnet = compose["networks"]["backend"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(proxy_address) in ipaddress.ip_network(subnet)
    for name in ("migrate", "broker"):
        environment = services[name]["environment"]
        assert environment["BROKER_TRUSTED_PROXIES"] == proxy_address
        assert environment["BROKER_REDIS_URL"].startswith("redis://redis:")


def test_the_env_example_names_real_settings_and_cannot_start_production_as_it_is():
    example = _example_settings()
    fields = {f"BROKER_{name.upper()}" for name in Settings.model_fields}
    assert set(example) <= fields, set(example) - fields
    required = {"BROKER_ENV", "BROKER_DATABASE_URL", "BROKER_PUBLIC_BASE_URL"}
    secrets = {"BROKER_KEY_HASH_SECRET", "BROKER_SIGNING_KEY", "BROKER_CARD_SIGNING_KEY"}
    assert required | secrets <= set(example)
    assert example["BROKER_ENV"] == "production"
    # Placeholders only: copied unchanged, production refuses to start.
    assert {example[name] for name in secrets} == {"CHANGE-ME"}
    values = {name.removeprefix("BROKER_").lower(): v for name, v in example.items()}
    with pytest.raises(ValidationError) as refused:
        Settings(**values)
    # The placeholder keys are not keys; with real ones, the placeholder secret is refused.
    refused_settings = {error["loc"] for error in refused.value.errors()}
    assert refused_settings == {("signing_key",), ("card_signing_key",)}
    real_keys = {"signing_key": "ab" * 32, "card_signing_key": "cd" * 32}
    with pytest.raises(ValidationError, match="BROKER_KEY_HASH_SECRET"):
        Settings(**(values | real_keys))


def _caddy_value(directive: str) -> str:
    match = re.search(rf"^\s*{directive}\s+(\S+)", (DEPLOY / "Caddyfile").read_text(), re.M)
    assert match, directive
    return match[1]


def _seconds(text: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(s|m)", text).groups()
    return int(number) * (60 if unit == "m" else 1)


def test_the_proxy_limits_sit_around_the_service_limits():
    defaults = Settings.model_fields
    # The service, not the proxy, refuses slow and large bodies with a problem document.
    assert _seconds(_caddy_value("read_body")) > defaults["body_timeout_seconds"].default
    max_size = re.fullmatch(r"(\d+)MB", _caddy_value("max_size"))
    assert max_size and int(max_size[1]) * 10**6 > defaults["max_body_bytes"].default
    # A pooled upstream connection is dropped before uvicorn would close it.
    keep_alive = inspect.signature(uvicorn.Config).parameters["timeout_keep_alive"].default
    assert _seconds(_caddy_value("keepalive")) < keep_alive
    assert "dynamic a broker 8080" in (DEPLOY / "Caddyfile").read_text()
