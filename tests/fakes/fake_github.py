"""A loopback fake of the GitHub App endpoints OCC's repository driver calls (real HTTP).

- ``POST /app/installations/{id}/access_tokens`` needs ``Authorization: Bearer <App JWT>``
  signed (RS256) with the App's private key (``key_file``, written by the fake) and issued by
  its App id; it answers 201 with a token for exactly the ``repository_ids`` asked for (all
  of the installation's when none) and exactly the ``permissions`` asked for, 422 for an
  unknown repository id or a permission the App was not granted (``app_permissions``), 404
  once the installation is revoked (``revoke()``), 401 for a bad JWT.
- ``GET /installation/repositories`` needs ``Authorization: token <installation token>`` (or
  Bearer) and lists the repositories that token may reach, paged (``per_page``, ``page``); a
  token past its expiry (``expire_tokens()`` or ``token_ttl`` <= 0) answers 401.
- ``rate_limit`` = ``"403"`` (primary limit: ``x-ratelimit-remaining: 0``) or ``"429"``
  (``retry-after``) answers every request so; ``wrong_grant`` answers tokens with wider
  permissions than asked for (the driver must discard them).

``grant_of(token)`` says what a token issued here may reach. Requests are recorded (method,
path, query, the body of a token request) without credentials.
"""

from __future__ import annotations

import json
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.loopback import LoopbackFake, LoopbackServer

APP_ID = "424242"
INSTALLATION_ID = "5151"
REPOSITORIES: list[dict[str, Any]] = [
    {"id": 1001, "full_name": "Acme/Widgets", "description": "The widget factory", "private": True},
    {"id": 1002, "full_name": "acme/docs", "description": None, "private": False},
    {"id": 1003, "full_name": "acme/secret-plans", "description": "Not for every Agent", "private": True},
    {"id": 1004, "full_name": "acme/old-thing", "description": "archived", "archived": True},
]
ALL_PERMISSIONS = {"contents": "write", "pull_requests": "write", "issues": "write", "metadata": "read",
                   "checks": "read", "statuses": "read"}
LEVEL = {"read": 1, "write": 2}


@dataclass
class Grant:
    repository_ids: list[int]
    permissions: dict[str, str]
    expires_at: datetime


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeGitHub]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, code: int, document: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(document).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code: int, headers: dict[str, str] | None = None) -> None:
        self._json(code, {"message": f"UPSTREAM-TEXT {code}", "documentation_url": "https://docs.github.com"},
                   headers)

    def _credential(self) -> str:
        auth = self.headers.get("authorization") or ""
        scheme, _, value = auth.partition(" ")
        return value if scheme.lower() in ("bearer", "token") else ""

    def _rate_limited(self, owner: FakeGitHub) -> bool:
        if owner.rate_limit == "403":
            self._error(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 60)})
        elif owner.rate_limit == "429":
            self._error(429, {"retry-after": "60"})
        return owner.rate_limit is not None

    def do_POST(self) -> None:
        owner = self.server.owner
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        owner.record({"method": "POST", "path": url.path, "body": body})
        if self._rate_limited(owner):
            return
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["app", "installations"] or parts[3] != "access_tokens":
            self._error(404)
            return
        if not owner.app_jwt_valid(self._credential()):
            self._error(401)
            return
        if parts[2] != owner.installation_id or owner.revoked:
            self._error(404)
            return
        if not isinstance(body, dict):
            self._error(400)
            return
        grant = owner.grant(body)
        if grant is None:
            self._error(422)
            return
        token = "ghs_" + secrets.token_hex(18)
        owner.tokens[token] = grant
        permissions = dict(grant.permissions)
        if owner.wrong_grant:
            permissions["administration"] = "write"
        self._json(201, {"token": token, "expires_at": grant.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "permissions": permissions,
                         "repository_selection": "selected" if "repository_ids" in body else "all",
                         **({"repositories": owner.repositories_of(grant)} if "repository_ids" in body else {})})

    def do_GET(self) -> None:
        owner = self.server.owner
        url = urlsplit(self.path)
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        owner.record({"method": "GET", "path": url.path, "query": query})
        if self._rate_limited(owner):
            return
        if url.path != "/installation/repositories":
            self._error(404)
            return
        grant = owner.tokens.get(self._credential())
        if grant is None or grant.expires_at <= datetime.now(UTC) or owner.revoked:
            self._error(401)
            return
        per_page, page = int(query.get("per_page", "30")), int(query.get("page", "1"))
        repositories = owner.repositories_of(grant)
        chunk = repositories[(page - 1) * per_page:page * per_page]
        self._json(200, {"total_count": len(repositories), "repositories": chunk})


class FakeGitHub(LoopbackFake):
    def __init__(self, *, port: int = 0, key_dir: str | None = None) -> None:
        super().__init__(_Handler, port=port, name="fake-github")
        self.app_id = APP_ID
        self.installation_id = INSTALLATION_ID
        self.repositories = [dict(repo) for repo in REPOSITORIES]
        self.app_permissions = dict(ALL_PERMISSIONS)
        self.tokens: dict[str, Grant] = {}
        self.revoked = False
        self.rate_limit: str | None = None
        self.wrong_grant = False
        self.token_ttl = timedelta(hours=1)
        self._private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._key_dir = tempfile.TemporaryDirectory(dir=key_dir)
        self.key_file = Path(self._key_dir.name) / "app.pem"
        self.key_file.write_bytes(self._private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.key_file.chmod(0o600)

    # --- what tests change ---------------------------------------------------------------------

    def revoke(self) -> None:
        self.revoked = True

    def expire_tokens(self) -> None:
        past = datetime.now(UTC) - timedelta(seconds=1)
        for grant in self.tokens.values():
            grant.expires_at = past

    def grant_of(self, token: str) -> Grant | None:
        return self.tokens.get(token)

    # --- what the handler asks -----------------------------------------------------------------

    def app_jwt_valid(self, token: str) -> bool:
        try:
            claims = jwt.decode(token, self._private_key.public_key(), algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]})
        except jwt.PyJWTError:
            return False
        return claims.get("iss") == self.app_id and claims["exp"] - claims["iat"] <= 600

    def grant(self, body: dict[str, Any]) -> Grant | None:
        known = {repo["id"] for repo in self.repositories}
        ids = body.get("repository_ids")
        if ids is None:
            ids = sorted(known)
        if not isinstance(ids, list) or not set(ids) <= known:
            return None
        permissions = body.get("permissions") or dict(self.app_permissions)
        for name, level in permissions.items():
            if LEVEL.get(level, 9) > LEVEL.get(self.app_permissions.get(name, ""), 0):
                return None
        return Grant(repository_ids=sorted(ids), permissions=dict(permissions),
                     expires_at=datetime.now(UTC).replace(microsecond=0) + self.token_ttl)

    def repositories_of(self, grant: Grant) -> list[dict[str, Any]]:
        return [repo for repo in self.repositories if repo["id"] in grant.repository_ids]

    def stop(self) -> None:
        super().stop()
        self._key_dir.cleanup()


def serving(settings: Any) -> Iterator[FakeGitHub]:
    """A fixture body: start a fake GitHub and point OCC's GitHub App driver at it."""
    from occ.drivers.repositories import forget_repository_drivers

    with FakeGitHub() as fake:
        settings.OCC_REPOSITORY_DRIVER = "github_app"
        settings.OCC_GITHUB_API_BASE_URL = fake.origin
        settings.OCC_GITHUB_APP_ID = fake.app_id
        settings.OCC_GITHUB_APP_INSTALLATION_ID = fake.installation_id
        settings.OCC_GITHUB_APP_PRIVATE_KEY_FILE = str(fake.key_file)
        settings.OCC_REPOSITORY_TIMEOUT_SECONDS = 10.0
        forget_repository_drivers()
        yield fake
    forget_repository_drivers()
