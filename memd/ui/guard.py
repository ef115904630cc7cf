"""Who may use the page: the person who started it, from this machine, by this page alone.

- Every request needs the token: the one in the printed address (``?t=``) once, then the
  cookie that visit sets (HttpOnly, SameSite=Strict: no other site's page sends it). A
  browser keeps one cookie of a name for 127.0.0.1 whatever the port, so the cookie is
  named for the page's port: two pages (two workspaces) stay open side by side. The
  address's token is swapped for the cookie and dropped from the address at once, so it
  stays out of the history and of every later request; and it is used up: a new one is
  made for the next browser (``on_new``), so an address left in a terminal or a shell's
  history opens nothing.
- The ``Host`` must be this page's own (127.0.0.1 or localhost at its port): a web page
  that points a name of its own at 127.0.0.1 (DNS rebinding) is refused.
- A request that changes something is a POST from this page: its ``Origin`` (or, failing
  that, ``Referer``) is this page's, and its form carries the CSRF token the page put in.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

COOKIE = "memd_ui"  # and the page's port
_HOSTS = ("127.0.0.1", "localhost")


def _fresh() -> str:
    return secrets.token_urlsafe(32)


@dataclass
class Guard:
    """The secrets of one running page and the checks that use them."""

    port: int = 0  # set once the socket is bound
    token: str = field(default_factory=_fresh)  # in the printed address only
    session: str = field(default_factory=_fresh)  # the cookie's value
    csrf: str = field(default_factory=_fresh)  # in the page's forms
    on_new: Callable[[str], None] | None = None  # told the next address once one is used

    def url(self) -> str:
        """The address to open, token included."""
        return f"http://127.0.0.1:{self.port}/?t={self.token}"

    def origins(self) -> set[str]:
        return {f"http://{host}:{self.port}" for host in _HOSTS}

    def host_ok(self, host: str | None) -> bool:
        return host is not None and f"http://{host.lower()}" in self.origins()

    def use_token(self, given: str | None) -> bool:
        """Whether ``given`` is the address's token; if so it is used up."""
        if given is None or not secrets.compare_digest(given.encode(), self.token.encode()):
            return False
        self.token = _fresh()
        if self.on_new is not None:
            self.on_new(self.url())
        return True

    def session_ok(self, cookies: Mapping[str, str]) -> bool:
        given = cookies.get(self.cookie_name())
        return given is not None and secrets.compare_digest(given.encode(), self.session.encode())

    def same_origin(self, headers: Mapping[str, str]) -> bool:
        """A POST's ``Origin`` is this page's; without one, its ``Referer`` is."""
        origin = headers.get("origin")
        if origin is not None:
            return origin.lower() in self.origins()
        referer = headers.get("referer")
        if not referer:
            return False
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() in self.origins()

    def csrf_ok(self, given: object) -> bool:
        return isinstance(given, str) and secrets.compare_digest(given.encode(), self.csrf.encode())

    def cookie_name(self) -> str:
        return f"{COOKIE}_{self.port}"

    def cookie_header(self) -> str:
        return f"{self.cookie_name()}={self.session}; HttpOnly; SameSite=Strict; Path=/"
