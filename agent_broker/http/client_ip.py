"""The client's address, believing X-Forwarded-For only from configured trusted proxies."""

from __future__ import annotations

import ipaddress

from fastapi import Request

from agent_broker.http.context import context_of


def _trusted(address: str, networks: tuple[ipaddress._BaseNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_ip(request: Request) -> str:
    networks = context_of(request).settings.trusted_proxy_networks
    peer = request.client.host if request.client else "unknown"
    if not networks or not _trusted(peer, networks):
        return peer
    forwarded = request.headers.get("x-forwarded-for", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    # Walk from the nearest hop outwards; the first address no trusted proxy vouches
    # for is the client. Anything left of it could have been written by the client.
    for hop in reversed(hops):
        if not _trusted(hop, networks):
            return hop
    return hops[0] if hops else peer
