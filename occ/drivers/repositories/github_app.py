"""The GitHub App RepositoryDriver: real HTTP to GitHub's REST API with httpx.

- The App authenticates with a JWT (RS256, PyJWT) signed by its private key, read from the
  key file at each signing (a rotated key applies at once) and held nowhere else.
- The installation's repositories are listed with an installation token that may read
  metadata only; that token is kept in memory until shortly before it expires, and one
  refused because it expired is replaced once.
- A credential for a binding is an installation token for exactly the selected repository
  ids and exactly the profile's permissions; a token GitHub grants with other repositories or
  permissions is discarded, never returned.
- Every request is bounded in time and size, never follows a redirect, and fails with our own
  words (``occ.upstream``): no upstream text reaches a caller or a log line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt

from occ.documents.repositories import Profile
from occ.drivers.repositories.base import (
    PROFILE_PERMISSIONS,
    REPOSITORY_REF,
    RepositoryDriver,
    RepositoryDriverError,
    RepositoryDriverMisconfigured,
    RepositoryGrantRefused,
    RepositoryInstallationRevoked,
    RepositoryOption,
    RepositoryProviderRateLimited,
    RepositoryToken,
    canonical_ref,
)
from occ.upstream import Failure, UpstreamFailure, fetch_json

logger = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
PAGE_SIZE = 100
MAX_PAGES = 10  # at most 1,000 repositories, the anchor's registry bound
JWT_LIFETIME = timedelta(minutes=9)  # GitHub accepts at most ten
JWT_CLOCK_SKEW = timedelta(seconds=60)
TOKEN_MARGIN = timedelta(minutes=5)  # a cached token is replaced this long before it expires
DESCRIPTION_MAX = 350
LISTING_PERMISSIONS = {"metadata": "read"}


@dataclass(frozen=True)
class _Token:
    value: str
    expires_at: datetime
    document: Mapping[str, Any]


class GitHubAppDriver(RepositoryDriver):
    driver_id = "github_app"

    def __init__(self, *, api_base_url: str, app_id: str, installation_id: str, private_key_file: str,
                 timeout: float = 10.0, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.api_base_url = api_base_url.rstrip("/")
        self.app_id = app_id
        self.installation_id = installation_id
        self.private_key_file = private_key_file
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._listing_token: _Token | None = None
        self._lock = threading.Lock()

    # --- the contract -------------------------------------------------------------------------

    def list_options(self) -> list[RepositoryOption]:
        try:
            return self._list_with(self._cached_listing_token())
        except _ExpiredToken:
            with self._lock:
                self._listing_token = None
            return self._list_with(self._cached_listing_token())

    def mint_token(self, repository_refs: Sequence[str], profile: Profile) -> RepositoryToken:
        refs = sorted({canonical_ref(ref) for ref in repository_refs})
        if not refs:
            raise ValueError("a token is minted for at least one repository")
        ids = {option.repository_ref: option.repository_id for option in self.list_options()}
        if any(ref not in ids for ref in refs):
            raise RepositoryGrantRefused()
        permissions = dict(PROFILE_PERMISSIONS[profile])
        token = self._create_token({"repository_ids": [ids[ref] for ref in refs], "permissions": permissions})
        granted = token.document.get("repositories")
        granted_ids = ([repo.get("id") for repo in granted if isinstance(repo, dict)]
                       if isinstance(granted, list) else [])
        if token.document.get("permissions") != permissions or (
                sorted(map(str, granted_ids)) != sorted(str(ids[ref]) for ref in refs)):
            logger.warning("repositories: github_app granted a token other than the one requested; discarded")
            raise RepositoryGrantRefused()
        return RepositoryToken(token=token.value, expires_at=token.expires_at, repository_refs=tuple(refs),
                               permissions=permissions)

    # --- listing ------------------------------------------------------------------------------

    def _cached_listing_token(self) -> _Token:
        with self._lock:
            cached = self._listing_token
        if cached is not None and cached.expires_at - TOKEN_MARGIN > datetime.now(UTC):
            return cached
        fresh = self._create_token({"permissions": LISTING_PERMISSIONS})
        with self._lock:
            self._listing_token = fresh
        return fresh

    def _list_with(self, token: _Token) -> list[RepositoryOption]:
        options: dict[str, RepositoryOption] = {}
        deadline = time.monotonic() + self.timeout
        for page in range(1, MAX_PAGES + 1):
            document = self._request("GET", "/installation/repositories", credential=token.value,
                                     authorization=f"token {token.value}", deadline=deadline,
                                     params={"per_page": PAGE_SIZE, "page": page}, listing=True)
            repositories = document.get("repositories") if isinstance(document, dict) else None
            if not isinstance(repositories, list):
                raise RepositoryDriverError()
            for entry in repositories:
                option = _option(entry)
                if option is not None:
                    options[option.repository_ref] = option
            if len(repositories) < PAGE_SIZE:
                break
        return [options[ref] for ref in sorted(options)]

    # --- tokens -------------------------------------------------------------------------------

    def _create_token(self, body: dict[str, Any]) -> _Token:
        app_jwt = self._app_jwt()
        document = self._request("POST", f"/app/installations/{self.installation_id}/access_tokens",
                                 credential=app_jwt, authorization=f"Bearer {app_jwt}",
                                 deadline=time.monotonic() + self.timeout, body=body)
        value = document.get("token") if isinstance(document, dict) else None
        expires_at = _timestamp(document.get("expires_at")) if isinstance(document, dict) else None
        if not isinstance(value, str) or not value or expires_at is None:
            raise RepositoryDriverError()
        return _Token(value=value, expires_at=expires_at, document=document)

    def _app_jwt(self) -> str:
        if not (self.app_id.isdigit() and self.installation_id.isdigit() and self.private_key_file):
            raise RepositoryDriverMisconfigured()
        try:
            key = Path(self.private_key_file).read_bytes()
        except OSError:
            raise RepositoryDriverMisconfigured() from None
        now = datetime.now(UTC)
        claims = {"iat": int((now - JWT_CLOCK_SKEW).timestamp()), "exp": int((now + JWT_LIFETIME).timestamp()),
                  "iss": self.app_id}
        try:
            return jwt.encode(claims, key, algorithm="RS256")
        except (ValueError, TypeError, jwt.PyJWTError):
            # The message of a failed key load could quote the key file: never passed on.
            raise RepositoryDriverMisconfigured() from None

    # --- one bounded request -------------------------------------------------------------------

    def _request(self, method: str, path: str, *, credential: str, authorization: str, deadline: float,
                 params: dict[str, Any] | None = None, body: Any = None, listing: bool = False) -> Any:
        headers = {"accept": "application/vnd.github+json", "x-github-api-version": API_VERSION,
                   "authorization": authorization, "accept-encoding": "identity", "user-agent": "occ-repositories"}
        try:
            with httpx.Client(follow_redirects=False) as client:
                return fetch_json(client, method, self.api_base_url + path, credential=credential,
                                  deadline=deadline, max_bytes=self.max_bytes, headers=headers, params=params,
                                  body=body)
        except UpstreamFailure as failure:
            status = f" (HTTP {failure.status})" if failure.status else ""
            logger.info("repositories: github_app %s %s%s", path.split("/")[1], failure.kind.value, status)
            if listing and failure.status == 401:
                raise _ExpiredToken() from None
            raise _error(failure) from None


class _ExpiredToken(Exception):
    """The listing token was refused: it expired or was revoked; mint another once."""


def _error(failure: UpstreamFailure) -> RepositoryDriverError:
    if failure.kind is Failure.RATE_LIMITED:
        return RepositoryProviderRateLimited()
    if failure.kind in (Failure.REJECTED, Failure.NOT_FOUND):
        return RepositoryInstallationRevoked()  # 401/403/404 of the installation itself
    if failure.status == 422:
        return RepositoryGrantRefused()
    return RepositoryDriverError()


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _option(entry: object) -> RepositoryOption | None:
    """The option of one listed repository; None for an entry OCC could not bind."""
    if not isinstance(entry, dict):
        raise RepositoryDriverError()
    full_name, repository_id = entry.get("full_name"), entry.get("id")
    if not isinstance(full_name, str) or not isinstance(repository_id, int) or isinstance(repository_id, bool):
        raise RepositoryDriverError()
    ref = canonical_ref(full_name)
    if not REPOSITORY_REF.fullmatch(ref) or entry.get("archived") is True:
        return None
    description = entry.get("description")
    if not isinstance(description, str) or not description.strip():
        description = None
    else:
        description = description.strip()[:DESCRIPTION_MAX]
    return RepositoryOption(repository_ref=ref, display_name=full_name, repository_id=repository_id,
                            description=description)
