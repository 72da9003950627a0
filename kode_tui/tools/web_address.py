"""Where a FetchURL request goes: the URL's host, the addresses it resolves to, and whether any
of them is one a model must not reach unasked (server-side request forgery).

A page on the public internet is one thing; the user's own machine, router or cloud metadata
service is another. So every address of every hop is checked: loopback, link-local, private,
shared (CGNAT), multicast, reserved and unspecified addresses, and IPv6 forms that carry an
IPv4 one (`::ffff:127.0.0.1`, 6to4, NAT64), are all "private" here. The connection then goes to
an address that was checked (`Resolved.address`), never to a second lookup of the name, so a
name that resolves differently the next time (DNS rebinding) cannot slip past the check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressError(Exception):
    """A URL FetchURL cannot fetch (no host, not http/https, a name that does not resolve)."""


class Resolved(msgspec.Struct, frozen=True):
    """A URL's host and the addresses it resolved to, checked."""

    host: str
    """The host as the URL names it, lower case, without brackets."""
    addresses: tuple[IPAddress, ...]
    private: str = ""
    """Why the host is not a public one (`127.0.0.1 is a loopback address`); empty if it is."""

    @property
    def address(self) -> IPAddress:
        """The address to connect to: the first one checked."""
        return self.addresses[0]


def parse_url(raw: str) -> httpx.URL:
    """`raw` as an http(s) URL with a host; AddressError when it is not one."""
    import httpx  # at the first fetch, not with the tool set

    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise AddressError(f"`{raw}` is not a valid URL: {error}") from None
    if url.scheme not in ("http", "https"):
        raise AddressError(f"`{raw}` is not an http or https URL.")
    if not url.host:
        raise AddressError(f"`{raw}` has no host.")
    return url


def why_private(address: IPAddress) -> str:
    """What kind of non-public address `address` is (`a loopback address`); empty when it is
    a public internet address."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped or address.sixtofour
        if carried is None and address in _NAT64:
            carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if carried is not None:
            inner = why_private(carried)
            return f"a form of {carried}, {inner}" if inner else ""
    kinds = (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("unspecified", address.is_unspecified),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
        ("non-public", not address.is_global),
    )
    kind = next((name for name, hit in kinds if hit), "")
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} address" if kind else ""


async def resolve(url: httpx.URL) -> Resolved:
    """The addresses of `url`'s host (a literal address is its own), each checked."""
    host = url.host.lower()
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses: tuple[IPAddress, ...] = (literal,)
    else:
        port = url.port or (443 if url.scheme == "https" else 80)
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise AddressError(f"cannot resolve {host}: {error}") from None
        found = dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos)
        addresses = tuple(found)
        if not addresses:
            raise AddressError(f"cannot resolve {host}: no address")
    # One private address is enough: the connection may go to any of them.
    for address in addresses:
        kind = why_private(address)
        if kind and literal is not None:
            return Resolved(host, addresses, f"{address} is {kind}")
        if kind:
            return Resolved(host, addresses, f"{host} resolves to {address}, {kind}")
    return Resolved(host, addresses)


def host_allowed(host: str, patterns: list[str]) -> bool:
    """Whether the config's `[web] allow` covers `host` (`*.example.com` covers subdomains)."""
    host = host.lower().rstrip(".")
    return any(fnmatchcase(host, pattern.lower().rstrip(".")) for pattern in patterns)
