"""The one setting for trusted reverse proxies, ``DJANGO_TRUSTED_PROXIES``, and the uvicorn
flags derived from it (issue 37: the settings and the server used to disagree).

The value is a comma-separated list of the addresses (or networks, ``10.0.0.0/24``) of the
proxies that connect to uvicorn, or ``none``. Unset or empty means ``none`` outside
production; production settings refuse to start without it set explicitly.

uvicorn alone reads ``X-Forwarded-For`` and ``X-Forwarded-Proto``, and only on a connection
from one of these addresses (``--proxy-headers --forwarded-allow-ips <list>``; with no
proxy, ``--no-proxy-headers``, since uvicorn's default trusts 127.0.0.1). It rewrites the
ASGI scope's client (the rightmost address of ``X-Forwarded-For`` that is not a trusted
proxy) and scheme (``https``/``wss``), so everything after it reads one truth: Django's
``REMOTE_ADDR`` and ``request.is_secure()``, DRF's throttles (``NUM_PROXIES`` stays 0: a
second reading of the header would take an entry a client sent past the proxy), and the
WebSocket origin check. Every command that starts uvicorn appends ``uvicorn_args``:
``ops/run`` and the documented production command through ``python -m
exchange.settings.proxies``, ``ops/stack.py`` by calling it.

Plain Python, no Django: ``ops/stack.py`` imports it without settings.
"""

from __future__ import annotations

import ipaddress
import os
import sys

NAME = "DJANGO_TRUSTED_PROXIES"
NONE = "none"


class ProxySettingError(ValueError):
    """A value of ``DJANGO_TRUSTED_PROXIES`` that is not a list of addresses or ``none``."""


def trusted_proxies(value: str | None) -> tuple[str, ...]:
    """The addresses and networks ``value`` lists, each checked; ``()`` for ``none``, empty
    or unset. uvicorn takes a malformed address as a literal that matches nothing, silently,
    and ``*`` as everyone: both are refused here."""
    if value is None or value.strip().lower() in ("", NONE):
        return ()
    proxies = []
    for item in (part.strip() for part in value.split(",")):
        try:
            if "/" in item:
                proxies.append(str(ipaddress.ip_network(item, strict=False)))
            else:
                proxies.append(str(ipaddress.ip_address(item)))
        except ValueError:
            raise ProxySettingError(
                f"{NAME}: {item!r} is not an IP address or network; list the addresses of "
                f"the reverse proxies in front of the server, comma-separated, or write {NONE}"
            ) from None
    return tuple(proxies)


def uvicorn_args(proxies: tuple[str, ...]) -> list[str]:
    """uvicorn's proxy flags for ``proxies``: trust the forwarded headers from them alone."""
    if not proxies:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", "--forwarded-allow-ips", ",".join(proxies)]


def main() -> int:
    """Print ``uvicorn_args`` for the environment's ``DJANGO_TRUSTED_PROXIES``, space
    separated (for ``ops/run`` and the production command); exit 2 on a malformed value."""
    try:
        proxies = trusted_proxies(os.environ.get(NAME))
    except ProxySettingError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(" ".join(uvicorn_args(proxies)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
