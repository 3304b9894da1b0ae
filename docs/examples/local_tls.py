"""Shared by domain_proof.py and webhook.py (not an example of its own): a certificate
authority kept in EXAMPLE_TLS_DIR (default var/examples-tls, made on first use), and
HTTPS servers on 127.0.0.1 whose certificates it issues for the names the examples use.

The service fetches from a host an agent chose only through its guarded outbound client,
which refuses loopback addresses and trusts only public CAs. Three settings let it reach
these servers (production refuses the first and the last):

    BROKER_ALLOW_PRIVATE_FETCH=true                          # loopback allowed
    BROKER_OUTBOUND_CA_BUNDLE=$PWD/var/examples-tls/ca.pem   # trust this CA as well
    BROKER_OUTBOUND_RESOLVE=yourcompany.com=127.0.0.1:8443,hooks.yourcompany.com=127.0.0.1:8444

The service reads the CA file at its first outbound fetch, so it may start before the
file exists; start it with those settings, e.g.

    BROKER_ALLOW_PRIVATE_FETCH=true BROKER_OUTBOUND_CA_BUNDLE=$PWD/var/examples-tls/ca.pem \\
    BROKER_OUTBOUND_RESOLVE=yourcompany.com=127.0.0.1:8443,hooks.yourcompany.com=127.0.0.1:8444 \\
    make run
"""

from __future__ import annotations

import os
import ssl
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TLS_DIR = Path(os.environ.get("EXAMPLE_TLS_DIR", "var/examples-tls"))
PEM = serialization.Encoding.PEM


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def certificate_authority() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The examples' CA: loaded from TLS_DIR, or made there (ca.pem, ca-key.pem)."""
    cert_path, key_path = TLS_DIR / "ca.pem", TLS_DIR / "ca-key.pem"
    if cert_path.exists() and key_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return x509.load_pem_x509_certificate(cert_path.read_bytes()), key
    TLS_DIR.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("agent-broker examples CA"))
        .issuer_name(_name("agent-broker examples CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    secret = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    key_path.touch(mode=0o600)
    key_path.write_bytes(secret)
    cert_path.write_bytes(cert.public_bytes(PEM))
    return cert, key


def server_context(*names: str) -> ssl.SSLContext:
    """A TLS server context whose certificate, issued by the examples' CA, covers names."""
    ca_cert, ca_key = certificate_authority()
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as scratch:
        chain, secret = Path(scratch) / "cert.pem", Path(scratch) / "key.pem"
        chain.write_bytes(cert.public_bytes(PEM) + ca_cert.public_bytes(PEM))
        secret.write_bytes(
            key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        context.load_cert_chain(chain, secret)
    return context


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve_https(
    port: int, handler: type[BaseHTTPRequestHandler], *names: str
) -> ThreadingHTTPServer:
    """Serve `handler` over HTTPS on 127.0.0.1:port, in a background thread, with a
    certificate for `names`; `shutdown()` the answer to stop it."""
    httpd = _Server(("127.0.0.1", port), handler)
    httpd.socket = server_context(*names).wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return httpd
