"""The outgoing-URL policy: where OCC sends a request to an address a person typed (a budget's
webhook), so that the address cannot turn OCC's own network position against it (server-side
request forgery: a cloud metadata service, the database, the Kubernetes API, a gateway's port).

The rule, checked when the URL is saved and again before every request:

- ``http`` or ``https``, with a host and no user name or password in it (those end up in logs);
- the host is not ``localhost`` (or a name under ``.localhost``);
- every address the host is, or resolves to, is a public (globally routable) unicast address:
  no loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), link-local
  (169.254/16 with the metadata services, fe80::/10), multicast, reserved or unspecified
  address, an IPv4 address written as IPv6 included;
- unless the address is inside ``OCC_OUTGOING_ALLOWED_NETWORKS`` (CIDRs an operator trusts: a
  receiver on the company network; the tests' loopback receivers).

A name that does not resolve when it is saved is accepted (DNS is not OCC's to decide); before a
request it must resolve, and the request goes to the address that was checked (the connection is
pinned to it, TLS still verifies the name), so a name that re-resolves elsewhere in between
(DNS rebinding) is never followed. Redirects are never followed by the callers.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import httpx
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = ("http", "https")


class RefusedDestination(Exception):
    """The URL is not one OCC may send to; the message is ours and never echoes the URL."""


@dataclass(frozen=True)
class Destination:
    """A checked URL and the one address its request goes to."""

    url: httpx.URL
    address: IPAddress

    @property
    def pinned_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address (the ``Host`` header and TLS
        keep the name: ``headers``, ``extensions``)."""
        return self.url.copy_with(host=str(self.address))

    @property
    def headers(self) -> dict[str, str]:
        """``Host``: the name (and port) the request was for, not the address it goes to."""
        return {"Host": self.url.netloc.decode("ascii")}

    @property
    def extensions(self) -> dict[str, str]:
        """httpx's request extensions: TLS sends and verifies the name (SNI), not the address."""
        return {"sni_hostname": self.url.host} if self.url.scheme == "https" else {}


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in settings.OCC_OUTGOING_ALLOWED_NETWORKS]


def address_allowed(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in _allowed_networks()):
        return True
    return address.is_global and not address.is_multicast


def _parsed(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
        parsed.host  # noqa: B018 - decoding a malformed international name raises here
    except (httpx.InvalidURL, ValueError, TypeError):  # UnicodeError (IDNA) is a ValueError
        raise RefusedDestination("The URL is not a valid http:// or https:// URL.") from None
    if parsed.scheme not in SCHEMES or not parsed.host:
        raise RefusedDestination("The URL must be an http:// or https:// URL with a host.")
    if parsed.userinfo:
        raise RefusedDestination("The URL must not carry a user name or password.")
    host = parsed.host.rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        raise RefusedDestination("OCC does not send to its own machine (localhost).")
    return parsed


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _resolved(url: httpx.URL) -> list[IPAddress]:
    """Every address the URL's host resolves to (empty when it does not resolve)."""
    try:
        found = socket.getaddrinfo(url.host, url.port or (443 if url.scheme == "https" else 80),
                                   type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in found))


def _refuse_private(addresses: list[IPAddress]) -> None:
    if any(not address_allowed(address) for address in addresses):
        raise RefusedDestination("OCC does not send to private, loopback, link-local or reserved addresses; "
                                 "use a public address (an operator can allow a network with "
                                 "OCC_OUTGOING_ALLOWED_NETWORKS).")


def check_outgoing_url(url: str) -> None:
    """Refuse (``RefusedDestination``) a URL the policy forbids, when it is saved. A name that
    does not resolve now passes: ``outgoing_destination`` checks it again before each request."""
    parsed = _parsed(url)
    literal = _literal(parsed.host)
    _refuse_private([literal] if literal is not None else _resolved(parsed))


def outgoing_destination(url: str) -> Destination:
    """The checked URL and the address to send to, right before a request."""
    parsed = _parsed(url)
    literal = _literal(parsed.host)
    addresses = [literal] if literal is not None else _resolved(parsed)
    if not addresses:
        raise RefusedDestination("The URL's host does not resolve.")
    _refuse_private(addresses)
    return Destination(url=parsed, address=addresses[0])
