"""A small OpenID Connect provider for the single sign-on tests: a separate process on
127.0.0.1 speaking real HTTP, issuing real RS256-signed ID tokens (PyJWT, a fresh RSA key per
process) and publishing the key at its JWKS endpoint.

It implements what OCC's client uses of OpenID Connect Core and RFC 7636: discovery, the
authorization endpoint (response type ``code`` only), the token endpoint (client secret in the
body or HTTP Basic; the code once, for its client and redirect URI, within a minute; the PKCE
verifier against the S256 challenge), userinfo (Bearer access token) and the JWKS. Nobody types
a password: the authorization endpoint signs in the person a test scripted (``POST /_test/person``
with ``sub``, ``email``, ``email_verified``; ``nonce`` overrides the nonce the ID token carries,
``deny`` answers ``access_denied``) and redirects straight back. ``GET /_test/events`` lists what
it decided (each token request's outcome, e.g. ``pkce_mismatch``), never a secret.

Run: ``python -m tests.fakes.oidc_provider --client-id ID --client-secret-env VAR [--port N]``;
it prints ``listening <origin>`` once it accepts connections. ``OidcProvider`` (below) starts one
for a test and stops it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.loopback import LoopbackFake, LoopbackServer

CODE_SECONDS = 60
TOKEN_SECONDS = 300
KEY_ID = "fake-oidc-key-1"


class Provider(LoopbackFake):
    def __init__(self, *, port: int, client_id: str, client_secret: str) -> None:
        super().__init__(Handler, port=port, name="fake-oidc-provider")
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.person: dict[str, Any] = {"sub": "subject-1", "email": "person@example.test", "email_verified": True}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access_tokens: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()

    @property
    def issuer(self) -> str:
        return self.origin

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": KEY_ID, "alg": "RS256", "use": "sig"}]}

    def id_token(self, claims: dict[str, Any], nonce: str | None) -> str:
        now = int(time.time())
        payload = {**claims, "iss": self.issuer, "aud": self.client_id, "iat": now, "exp": now + TOKEN_SECONDS}
        if nonce is not None:
            payload["nonce"] = nonce
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": KEY_ID})


def _pkce_s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


class Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[Provider]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def provider(self) -> Provider:
        return self.server.owner

    def _send(self, status: int, body: Any = None, *, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, redirect_uri: str, **query: str) -> None:
        self._send(302, headers={"Location": f"{redirect_uri}?{urlencode(query)}"})

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(raw or "{}")
        return {key: values[0] for key, values in parse_qs(raw).items()}

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/.well-known/openid-configuration":
            origin = self.provider.origin
            self._send(200, {"issuer": origin, "authorization_endpoint": f"{origin}/authorize",
                             "token_endpoint": f"{origin}/token", "userinfo_endpoint": f"{origin}/userinfo",
                             "jwks_uri": f"{origin}/jwks", "response_types_supported": ["code"],
                             "code_challenge_methods_supported": ["S256"],
                             "id_token_signing_alg_values_supported": ["RS256"]})
        elif parts.path == "/jwks":
            self._send(200, self.provider.jwks())
        elif parts.path == "/authorize":
            self._authorize(query)
        elif parts.path == "/userinfo":
            self._userinfo()
        elif parts.path == "/_test/events":
            self._send(200, {"events": self.provider.requests})
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path == "/token":
            self._token(self._form())
        elif path == "/_test/person":
            with self.provider.lock:
                self.provider.person = self._form()
            self._send(204)
        else:
            self._send(404, {"error": "not_found"})

    def _authorize(self, query: dict[str, str]) -> None:
        provider = self.provider
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != provider.client_id or not redirect_uri.startswith("http"):
            provider.record({"endpoint": "authorize", "outcome": "unknown_client"})
            self._send(400, {"error": "invalid_request"})
            return
        with provider.lock:
            person = dict(provider.person)
        state = query.get("state", "")
        if person.get("deny"):
            provider.record({"endpoint": "authorize", "outcome": "access_denied"})
            self._redirect(redirect_uri, error="access_denied", state=state)
            return
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256" \
                or not query.get("code_challenge") or "openid" not in query.get("scope", "").split():
            provider.record({"endpoint": "authorize", "outcome": "invalid_request"})
            self._redirect(redirect_uri, error="invalid_request", state=state)
            return
        code = secrets.token_urlsafe(24)
        nonce = person.pop("nonce", None) or query.get("nonce")
        with provider.lock:
            provider.codes[code] = {"redirect_uri": redirect_uri, "challenge": query["code_challenge"],
                                    "nonce": nonce, "claims": person, "expires": time.time() + CODE_SECONDS}
        provider.record({"endpoint": "authorize", "outcome": "code", "sub": person.get("sub"),
                         "nonceSent": bool(query.get("nonce"))})
        self._redirect(redirect_uri, code=code, state=state)

    def _client_authenticated(self, form: dict[str, str]) -> bool:
        provider = self.provider
        client_id, secret = form.get("client_id", ""), form.get("client_secret")
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return client_id == provider.client_id and secret is not None and hmac.compare_digest(
            secret.encode(), provider.client_secret.encode())

    def _token(self, form: dict[str, str]) -> None:
        provider = self.provider

        def refuse(outcome: str, error: str = "invalid_grant") -> None:
            provider.record({"endpoint": "token", "outcome": outcome})
            self._send(401 if error == "invalid_client" else 400, {"error": error})

        if not self._client_authenticated(form):
            refuse("bad_client", "invalid_client")
            return
        with provider.lock:
            grant = provider.codes.pop(form.get("code", ""), None)  # once, whatever happens next
        if form.get("grant_type") != "authorization_code" or grant is None or grant["expires"] < time.time():
            refuse("bad_code")
            return
        if form.get("redirect_uri") != grant["redirect_uri"]:
            refuse("redirect_uri_mismatch")
            return
        verifier = form.get("code_verifier", "")
        if not verifier or not hmac.compare_digest(_pkce_s256(verifier), grant["challenge"]):
            refuse("pkce_mismatch")
            return
        claims = {key: value for key, value in grant["claims"].items() if key in {"sub", "email", "email_verified"}}
        access_token = secrets.token_urlsafe(24)
        with provider.lock:
            provider.access_tokens[access_token] = {"claims": claims, "expires": time.time() + TOKEN_SECONDS,
                                                    "userinfo_sub": grant["claims"].get("userinfo_sub")}
        provider.record({"endpoint": "token", "outcome": "issued", "pkce": "S256 verified", "sub": claims.get("sub")})
        self._send(200, {"access_token": access_token, "token_type": "Bearer", "expires_in": TOKEN_SECONDS,
                         "id_token": provider.id_token({"sub": claims["sub"]}, grant["nonce"])})

    def _userinfo(self) -> None:
        header = self.headers.get("Authorization", "")
        with self.provider.lock:
            entry = self.provider.access_tokens.get(header.removeprefix("Bearer "))
        if not header.startswith("Bearer ") or entry is None or entry["expires"] < time.time():
            self.provider.record({"endpoint": "userinfo", "outcome": "bad_token"})
            self._send(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
            return
        claims = dict(entry["claims"])
        if entry["userinfo_sub"]:
            claims["sub"] = entry["userinfo_sub"]
        self.provider.record({"endpoint": "userinfo", "outcome": "claims"})
        self._send(200, claims)


class OidcProvider:
    """The provider as a child process, for tests: ``with OidcProvider(client_id=..., client_secret=...) as op``."""

    def __init__(self, *, client_id: str, client_secret: str, log_path: Path | None = None) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.log_path = log_path
        self.origin = ""
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> OidcProvider:
        env = {**os.environ, "FAKE_OIDC_CLIENT_SECRET": self.client_secret}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.oidc_provider", "--client-id", self.client_id,
             "--client-secret-env", "FAKE_OIDC_CLIENT_SECRET"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=Path(__file__).resolve().parents[2], start_new_session=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith("listening "):
            self.stop()
            raise RuntimeError(f"the OIDC provider did not start: {line!r}")
        self.origin = line.split()[1]
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def settings(self, name: str = "Example ID") -> dict[str, str]:
        """OCC's environment for this provider."""
        return {"OCC_OIDC_ISSUER": self.origin, "OCC_OIDC_PROVIDER_NAME": name,
                "OCC_OIDC_AUTHORIZATION_ENDPOINT": f"{self.origin}/authorize",
                "OCC_OIDC_TOKEN_ENDPOINT": f"{self.origin}/token",
                "OCC_OIDC_USERINFO_ENDPOINT": f"{self.origin}/userinfo",
                "OCC_OIDC_JWKS_ENDPOINT": f"{self.origin}/jwks",
                "OCC_OIDC_CLIENT_ID": self.client_id, "OCC_OIDC_CLIENT_SECRET": self.client_secret}

    def sign_in_as(self, **person: Any) -> None:
        httpx.post(f"{self.origin}/_test/person", json=person, timeout=5).raise_for_status()

    def events(self) -> list[dict[str, Any]]:
        return httpx.get(f"{self.origin}/_test/events", timeout=5).json()["events"]

    def stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._process.terminate()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=5)
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process = None

    def __enter__(self) -> OidcProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret-env", required=True, help="the variable that holds the client secret")
    args = parser.parse_args()
    provider = Provider(port=args.port, client_id=args.client_id, client_secret=os.environ[args.client_secret_env])
    print(f"listening {provider.origin}", flush=True)
    provider.serve_forever()


if __name__ == "__main__":
    main()
