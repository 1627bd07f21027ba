"""Credentials of a served twin: its own certificate authority, the server certificate, the bearer token, the
ServiceAccount token signing key.

Owns: ``Credentials`` (paths and PEM text under the twin's home), ``ensure_credentials(home, now)`` which
creates a CA (10 years) and a server certificate for ``127.0.0.1``/``localhost``/``::1`` signed by it,
a random bearer token and an ECDSA key ServiceAccount tokens are signed with (``pki/sa.key``), once, and
reuses them afterwards (so a kubeconfig written earlier keeps
working after a restart). Files holding secrets are mode 0600. ``now`` is passed in (style rule 1).
Must not import flexq modules outside ``flexq.http``, ``flexq.semantics.satokens`` and ``flexq.store.private``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from flexq.semantics.satokens import new_signing_key
from flexq.store.private import private_dir, private_file

__all__ = ["Credentials", "ensure_credentials"]

CA_CERT, CA_KEY, SERVER_CERT, SERVER_KEY, TOKEN = "ca.crt", "ca.key", "server.crt", "server.key", "token"
SA_KEY = "sa.key"  # kube-apiserver's --service-account-signing-key-file
_TEN_YEARS = _dt.timedelta(days=3650)


@dataclass(frozen=True)
class Credentials:
    """Where a served twin's TLS material and token live."""

    home: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    token_file: Path
    sa_key_file: Path

    @property
    def sa_key(self) -> bytes:
        """The key ServiceAccount tokens are signed with (PEM)."""
        return self.sa_key_file.read_bytes()

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()

    @property
    def ca_pem(self) -> str:
        return self.ca_cert.read_text()

    @property
    def ca_b64(self) -> str:
        """The CA as kubeconfig's ``certificate-authority-data`` / GKE's ``clusterCaCertificate`` want it."""
        return base64.b64encode(self.ca_cert.read_bytes()).decode()


def _write_secret(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when an older file was readable
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _make_ca(now: _dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flexq twin CA")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(hours=1))
        .not_valid_after(now + _TEN_YEARS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _make_server(
    ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, now: _dt.datetime, hosts: list[str]
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flexq-apiserver")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(hours=1))
        .not_valid_after(now + _TEN_YEARS)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def ensure_credentials(
    home: str | Path, now: float, hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
) -> Credentials:
    """Create (first time) or reuse the CA, server certificate and token under ``home/pki``."""
    pki = Path(home) / "pki"
    private_dir(pki)
    creds = Credentials(
        Path(home), pki / CA_CERT, pki / SERVER_CERT, pki / SERVER_KEY, pki / TOKEN, pki / SA_KEY
    )
    when = _dt.datetime.fromtimestamp(now, tz=_dt.UTC)
    if not (creds.ca_cert.exists() and (pki / CA_KEY).exists()):
        ca, ca_key = _make_ca(when)
        _write_secret(pki / CA_KEY, _key_pem(ca_key))
        _write_secret(creds.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
        creds.server_cert.unlink(missing_ok=True)
    if not (creds.server_cert.exists() and creds.server_key.exists()):
        ca = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
        loaded = serialization.load_pem_private_key((pki / CA_KEY).read_bytes(), password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        cert, key = _make_server(ca, loaded, when, list(hosts))
        _write_secret(creds.server_key, _key_pem(key))
        _write_secret(creds.server_cert, cert.public_bytes(serialization.Encoding.PEM))
    if not creds.sa_key_file.exists():
        _write_secret(creds.sa_key_file, new_signing_key())
    for f in pki.iterdir():  # owner-only, also what an older flexq left readable
        if f.is_file():
            private_file(f)
    if not creds.token_file.exists():
        # no trailing newline: the kubernetes Python client sends a tokenFile verbatim as a header
        _write_secret(creds.token_file, secrets.token_urlsafe(32).encode())
    return creds
