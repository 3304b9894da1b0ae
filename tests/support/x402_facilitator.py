"""A local x402 facilitator on 127.0.0.1 for the "exact" scheme on EVM (USDC moved by an
EIP-3009 transferWithAuthorization signed as EIP-712), speaking the HTTP API that x402's
HTTPFacilitatorClient calls: POST /verify, POST /settle, GET /supported.

Verification is real: the signer is recovered from the EIP-712 signature with eth-account,
and the checks and their reasons are those of x402's own exact-EVM facilitator. Settlement
happens on a simulated chain per chain id that remembers used nonces and, for the wallets
listed in `balances`, debits balances. Knobs make it fail, refuse settlements, stall or
answer that a settlement is pending, as a real facilitator may.

Like x402's own facilitator, it settles a payload carrying `permit2Authorization` through
that authorization, whatever else the payload holds and whatever was offered: the
payer is then the Permit2 signer. (The Permit2 block here is signed like an EIP-3009
authorization, which is all a test of the payer binding needs.)"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from eth_account import Account
from eth_account.messages import encode_typed_data
from x402.mechanisms.evm.constants import (
    ERR_AUTHORIZATION_VALUE_MISMATCH,
    ERR_INSUFFICIENT_BALANCE,
    ERR_INVALID_SIGNATURE,
    ERR_MISSING_EIP712_DOMAIN,
    ERR_NETWORK_MISMATCH,
    ERR_NONCE_ALREADY_USED,
    ERR_RECIPIENT_MISMATCH,
    ERR_UNSUPPORTED_SCHEME,
    ERR_VALID_AFTER_FUTURE,
    ERR_VALID_BEFORE_EXPIRED,
    SCHEME_EXACT,
)
from x402.mechanisms.evm.v1.constants import V1_NETWORK_CHAIN_IDS

V1_NETWORKS = ("base", "base-sepolia")
V2_NETWORKS = ("eip155:8453", "eip155:84532")
# x402's facilitator refuses an authorization that expires within this many seconds: it
# could lapse before the transfer is mined.
VALID_BEFORE_MARGIN = 6

# General x402 reasons, for requests that never reach the EVM checks.
INVALID_X402_VERSION = "invalid_x402_version"
INVALID_PAYLOAD = "invalid_payload"
INVALID_PAYMENT_REQUIREMENTS = "invalid_payment_requirements"
INVALID_NETWORK = "invalid_network"

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_NONCE = re.compile(r"0x[0-9a-fA-F]{64}")
_AUTHORIZATION_FIELDS = ("from", "to", "value", "validAfter", "validBefore", "nonce")

# Spelled out rather than taken from x402, so that signing through x402's client and
# verifying here check each other.
_EIP712_TYPES: dict[str, list[dict[str, str]]] = {
    "EIP712Domain": [
        {"name": "name", "type": "string"},
        {"name": "version", "type": "string"},
        {"name": "chainId", "type": "uint256"},
        {"name": "verifyingContract", "type": "address"},
    ],
    "TransferWithAuthorization": [
        {"name": "from", "type": "address"},
        {"name": "to", "type": "address"},
        {"name": "value", "type": "uint256"},
        {"name": "validAfter", "type": "uint256"},
        {"name": "validBefore", "type": "uint256"},
        {"name": "nonce", "type": "bytes32"},
    ],
}

NonceKey = tuple[int, str, str, str]  # (chain id, asset, from, nonce), lowercased


def chain_id_of(network: str) -> int:
    """The chain id of a v1 network name ("base-sepolia") or a CAIP-2 one ("eip155:84532")."""
    if network.startswith("eip155:"):
        return int(network.removeprefix("eip155:"))
    return V1_NETWORK_CHAIN_IDS[network]


def transfer_typed_data(
    *, chain_id: int, asset: str, name: str, version: str, authorization: Mapping[str, Any]
) -> dict[str, Any]:
    """The EIP-712 document a payer signs for `authorization` (x402 field names).
    Addresses go in lowercased: EIP-712 encodes only their bytes, and eth-account would
    refuse a mixed-case address whose checksum is off."""
    return {
        "types": _EIP712_TYPES,
        "primaryType": "TransferWithAuthorization",
        "domain": {
            "name": name,
            "version": version,
            "chainId": chain_id,
            "verifyingContract": asset.lower(),
        },
        "message": {
            "from": authorization["from"].lower(),
            "to": authorization["to"].lower(),
            "value": int(authorization["value"]),
            "validAfter": int(authorization["validAfter"]),
            "validBefore": int(authorization["validBefore"]),
            "nonce": authorization["nonce"],
        },
    }


class _Refusal(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class _Payment:
    """A verified payment: who pays how much, and the nonce its settlement consumes."""

    payer: str
    network: str
    value: int
    nonce_key: NonceKey


def _uint(value: Any) -> int | None:
    """A uint256 sent as a decimal string (or a JSON integer), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _address(value: Any) -> bool:
    return isinstance(value, str) and _ADDRESS.fullmatch(value) is not None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass
class LocalFacilitator:
    url: str = ""
    # Atomic units a listed wallet holds (address in any case); unlisted wallets hold plenty.
    balances: dict[str, int] = field(default_factory=dict)
    fail_status: int | None = None  # answer every call with this status and a text body
    settle_fails_with: str | None = None  # settle answers success:false with this reason
    stall_seconds: float = 0.0  # wait this long before answering any call
    # Settle calls answered "settlement_pending" (with a broadcast transaction hash)
    # before settling as usual: 1 is cured by the one retry x402 servers make.
    pending_settles: int = 0
    # Answers that name another payer, network or amount than the payment's (a
    # facilitator that verified or settled something else than it was given).
    verify_payer: str | None = None
    settle_payer: str | None = None
    settle_network: str | None = None
    settle_amount: str | None = None
    now: Callable[[], int] | None = None  # the clock; time.time() when None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, body)
    settled: list[dict[str, Any]] = field(default_factory=list)  # successful settle answers
    used_nonces: set[NonceKey] = field(default_factory=set)
    # The address /supported names as this facilitator's signer on eip155:*.
    address: str = field(default_factory=lambda: Account.create().address)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> LocalFacilitator:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._stopping.clear()
        # A short poll: shutdown() waits up to one poll interval per stop.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._server = server
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # cuts short any stall, so a stop never waits for one
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> LocalFacilitator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the API, callable without HTTP too ------------------------------------------------

    def supported(self) -> dict[str, Any]:
        kinds = [
            {"x402Version": 1, "scheme": SCHEME_EXACT, "network": network}
            for network in V1_NETWORKS
        ] + [
            {"x402Version": 2, "scheme": SCHEME_EXACT, "network": network}
            for network in V2_NETWORKS
        ]
        return {"kinds": kinds, "extensions": [], "signers": {"eip155:*": [self.address]}}

    def verify(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A VerifyResponse document for a /verify body."""
        payer, _ = _payer_and_network(body)
        try:
            with self._lock:
                payment = self._check(body)
        except _Refusal as refusal:
            answer = {
                "isValid": False,
                "invalidReason": refusal.reason,
                "invalidMessage": refusal.message,
            }
            return answer | ({"payer": payer} if payer else {})
        return {"isValid": True, "payer": self.verify_payer or payment.payer}

    def settle(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A SettleResponse document for a /settle body; a success consumes the nonce."""
        payer, network = _payer_and_network(body)
        # One lock over verification and the nonce's use: of two settles of one
        # authorization exactly one succeeds, as on chain.
        with self._lock:
            try:
                if self.settle_fails_with is not None:
                    raise _Refusal(self.settle_fails_with, "settlement refused by the test")
                payment = self._check(body)
                if self.pending_settles > 0:
                    self.pending_settles -= 1
                    return {
                        "success": False,
                        "errorReason": "settlement_pending",
                        "errorMessage": "the transfer is broadcast, its receipt not yet seen",
                        "transaction": "0x" + secrets.token_hex(32),
                        "network": network,
                        "payer": payment.payer,
                    }
            except _Refusal as refusal:
                answer = {
                    "success": False,
                    "errorReason": refusal.reason,
                    "errorMessage": refusal.message,
                    "transaction": "",
                    "network": network,
                }
                return answer | ({"payer": payer} if payer else {})
            self.used_nonces.add(payment.nonce_key)
            key = self._balance_key(payment.payer)
            if key is not None:
                self.balances[key] -= payment.value
            result = {
                "success": True,
                "transaction": "0x" + secrets.token_hex(32),
                "network": self.settle_network or payment.network,
                "payer": self.settle_payer or payment.payer,
                "amount": self.settle_amount or str(payment.value),
            }
            self.settled.append(result)
            return result

    # --- internals ------------------------------------------------------------------------

    def clock(self) -> int:
        return int(self.now()) if self.now is not None else int(time.time())

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append((path, body))

    def stall(self) -> None:
        if self.stall_seconds > 0:
            self._stopping.wait(self.stall_seconds)

    def _balance_key(self, address: str) -> str | None:
        return next((key for key in self.balances if key.lower() == address.lower()), None)

    def _check(self, body: Mapping[str, Any]) -> _Payment:
        """The checks of x402's exact-EVM facilitator, in its order; the caller holds the
        lock, since the nonce and balance checks read the simulated chain."""
        payload = body.get("paymentPayload")
        requirements = body.get("paymentRequirements")
        if not isinstance(payload, dict):
            raise _Refusal(INVALID_PAYLOAD, "paymentPayload is not an object")
        if not isinstance(requirements, dict):
            raise _Refusal(INVALID_PAYMENT_REQUIREMENTS, "paymentRequirements is not an object")

        version = body.get("x402Version", payload.get("x402Version"))
        if version not in (1, 2) or payload.get("x402Version", version) != version:
            raise _Refusal(INVALID_X402_VERSION, f"x402Version {version!r} is not 1 or 2")
        if version == 1:
            scheme, network = payload.get("scheme"), payload.get("network")
            amount_field, networks = "maxAmountRequired", V1_NETWORKS
        else:
            accepted = _object(payload.get("accepted"))
            scheme, network = accepted.get("scheme"), accepted.get("network")
            amount_field, networks = "amount", V2_NETWORKS

        if scheme != SCHEME_EXACT or requirements.get("scheme") != SCHEME_EXACT:
            raise _Refusal(ERR_UNSUPPORTED_SCHEME, f"scheme {scheme!r} is not {SCHEME_EXACT!r}")
        if network != requirements.get("network"):
            raise _Refusal(
                ERR_NETWORK_MISMATCH,
                f"payment on {network!r}, requirements on {requirements.get('network')!r}",
            )
        if network not in networks:
            raise _Refusal(INVALID_NETWORK, f"network {network!r} is not supported on v{version}")
        chain_id = chain_id_of(network)

        extra = requirements.get("extra")
        if isinstance(extra, str):  # v1 servers may send extra JSON-encoded
            try:
                extra = json.loads(extra)
            except ValueError:
                extra = None
        extra = _object(extra)
        if not isinstance(extra.get("name"), str) or not isinstance(extra.get("version"), str):
            raise _Refusal(ERR_MISSING_EIP712_DOMAIN, "extra lacks the token's name and version")
        asset, pay_to = requirements.get("asset"), requirements.get("payTo")
        required = _uint(requirements.get(amount_field))
        if not _address(asset) or not _address(pay_to) or required is None:
            raise _Refusal(
                INVALID_PAYMENT_REQUIREMENTS, f"asset, payTo or {amount_field} is malformed"
            )

        inner = _object(payload.get("payload"))
        signature = inner.get("signature")
        authorization = _object(inner.get("authorization"))
        if "permit2Authorization" in inner:
            # Settled through Permit2 whatever the rest says: the Permit2 signer pays.
            authorization = _object(inner["permit2Authorization"])
            signature = authorization.get("signature")
        if not isinstance(signature, str) or any(
            key not in authorization for key in _AUTHORIZATION_FIELDS
        ):
            raise _Refusal(INVALID_PAYLOAD, "payload needs a signature and an authorization")
        payer, to, nonce = authorization["from"], authorization["to"], authorization["nonce"]
        value = _uint(authorization["value"])
        valid_after = _uint(authorization["validAfter"])
        valid_before = _uint(authorization["validBefore"])
        if (
            not _address(payer)
            or not _address(to)
            or not isinstance(nonce, str)
            or _NONCE.fullmatch(nonce) is None
            or value is None
            or valid_after is None
            or valid_before is None
        ):
            raise _Refusal(INVALID_PAYLOAD, "authorization fields are malformed")

        if to.lower() != pay_to.lower():
            raise _Refusal(ERR_RECIPIENT_MISMATCH, f"authorization pays {to}, not {pay_to}")
        if value != required:
            raise _Refusal(
                ERR_AUTHORIZATION_VALUE_MISMATCH, f"authorization moves {value}, not {required}"
            )
        now = self.clock()
        if valid_before < now + VALID_BEFORE_MARGIN:
            raise _Refusal(ERR_VALID_BEFORE_EXPIRED, f"validBefore {valid_before} has passed")
        if valid_after > now:
            raise _Refusal(ERR_VALID_AFTER_FUTURE, f"validAfter {valid_after} is still ahead")

        typed = transfer_typed_data(
            chain_id=chain_id,
            asset=asset,
            name=extra["name"],
            version=extra["version"],
            authorization=authorization,
        )
        try:
            signer = Account.recover_message(
                encode_typed_data(full_message=typed), signature=signature
            )
        except Exception as exc:  # a malformed signature recovers no one
            raise _Refusal(ERR_INVALID_SIGNATURE, f"signature does not recover: {exc}") from exc
        if signer.lower() != payer.lower():
            raise _Refusal(ERR_INVALID_SIGNATURE, f"signed by {signer}, not by {payer}")

        nonce_key = (chain_id, asset.lower(), payer.lower(), nonce.lower())
        if nonce_key in self.used_nonces:
            raise _Refusal(ERR_NONCE_ALREADY_USED, f"nonce {nonce} of {payer} is used")
        key = self._balance_key(payer)
        if key is not None and self.balances[key] < value:
            raise _Refusal(
                ERR_INSUFFICIENT_BALANCE, f"{payer} holds {self.balances[key]}, needs {value}"
            )
        return _Payment(payer=payer, network=network, value=value, nonce_key=nonce_key)


def _payer_and_network(body: Mapping[str, Any]) -> tuple[str | None, str]:
    """What a refusal names, read leniently since the body may be malformed."""
    payload = _object(body.get("paymentPayload"))
    authorization = _object(_object(payload.get("payload")).get("authorization"))
    payer = authorization.get("from")
    network = _object(body.get("paymentRequirements")).get("network")
    return (
        payer if isinstance(payer, str) else None,
        network if isinstance(network, str) else "",
    )


def _handler(facilitator: LocalFacilitator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (a timeout test): nobody to answer

        def _answer(self, status: int, document: Any) -> None:
            self._send(status, json.dumps(document).encode(), "application/json")

        def _serve(self, method: str) -> None:
            path = urlsplit(self.path).path
            body: Any = {}
            if method == "POST":
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                facilitator.record(path, body if isinstance(body, dict) else {})
            else:
                facilitator.record(path, {})
            facilitator.stall()
            if facilitator.fail_status is not None:
                return self._send(facilitator.fail_status, b"facilitator unavailable", "text/plain")
            if not isinstance(body, dict):
                return self._send(400, b"the body is not a JSON object", "text/plain")
            match method, path:
                case "GET", "/supported":
                    return self._answer(200, facilitator.supported())
                case "POST", "/verify":
                    return self._answer(200, facilitator.verify(body))
                case "POST", "/settle":
                    return self._answer(200, facilitator.settle(body))
            return self._send(404, b"no such endpoint", "text/plain")

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def local_facilitator(**settings: Any) -> Iterator[LocalFacilitator]:
    """A running LocalFacilitator (fields as keyword arguments), stopped on exit."""
    with LocalFacilitator(**settings) as facilitator:
        yield facilitator
