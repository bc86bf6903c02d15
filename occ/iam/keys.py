"""Service API keys: 256-bit random tokens, stored as SHA-256 digests.

A hash is enough (and ~100 ms cheaper per request than a password hasher) because the
token has full entropy: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.utils import timezone

from occ.iam.actor import Actor, Source
from occ.models import ServiceKey

TOKEN_PREFIX = "occ_sk_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def actor_for_token(token: str) -> Actor | None:
    """The actor a presented key authenticates, or None (unknown, expired, mis-scoped)."""
    if not token or len(token) > 256 or not token.startswith(TOKEN_PREFIX):
        return None
    wanted = digest(token)
    key = ServiceKey.objects.select_related("principal").filter(digest=wanted).first()
    # The lookup is by digest; compare again in constant time so timing says nothing.
    if key is None or not hmac.compare_digest(key.digest, wanted):
        return None
    if key.expires_at <= timezone.now():
        return None
    principal = key.principal
    # A key is bound to its principal's scope at issuance; if that changed, fail closed.
    if principal.agent_id is not None or key.namespace_id != principal.namespace_id:
        return None
    return Actor(principal=principal, source=Source.API, key_id=key.id, key_namespace_id=key.namespace_id)


def create_key_record(*, principal_id: str, namespace_id: str | None, name: str,
                      expires_at, created_by: str) -> tuple[ServiceKey, str]:
    """Store a new key's digest; the plaintext token is returned once and never stored."""
    token = new_token()
    key = ServiceKey.objects.create(principal_id=principal_id, namespace_id=namespace_id, name=name,
                                    digest=digest(token), expires_at=expires_at, created_by=created_by)
    return key, token
