"""A team database's connection string without its secret: what memd may print of it.

A libpq DSN comes as a URI (``postgresql://user:secret@host/db``) or as key/value pairs
(``host=h user=u password=secret``); both may carry a password. Nothing memd prints, logs
or sends to a client names one: ``describe`` says which database, ``scrub`` takes the
password out of any text (a driver's error may quote the string it could not parse).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

_URI = re.compile(r"^(postgres(?:ql)?)://", re.IGNORECASE)
_PAIR = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")
_URI_PASSWORD = re.compile(r"(://[^:/@\s]*:)([^@\s]*)(@)")
_PAIR_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&\s]*)", re.IGNORECASE)
HIDDEN = "***"


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` of ``dsn``, as much of it as it says; never its password."""
    if _URI.match(dsn):
        try:
            parts = urlsplit(dsn)
            user = unquote(parts.username or "")
            host = parts.hostname or dict(parse_qsl(parts.query)).get("host", "")
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            return "an unreadable team.dsn"
        db = unquote(parts.path.lstrip("/"))
    else:
        pairs = {k.lower(): v.strip("'") for k, v in _PAIR.findall(dsn)}
        user, host, db = pairs.get("user", ""), pairs.get("host", ""), pairs.get("dbname", "")
        port = f":{pairs['port']}" if pairs.get("port") else ""
    where = f"{host}{port}" or "the local socket"
    if "=" in db or _URI.match(db):  # libpq reads a dbname like this as a whole DSN
        db = "(a connection string)"
    return f"{user + '@' if user else ''}{where}{'/' + db if db else ''}"


def secrets(dsn: str) -> list[str]:
    """The passwords ``dsn`` carries (as written, and URI-decoded)."""
    found = [m.group(2) for m in _URI_PASSWORD.finditer(dsn)]
    found += [m.group(2).strip("'") for m in _PAIR_PASSWORD.finditer(dsn)]
    found += [m.group(2) for m in _QUERY_PASSWORD.finditer(dsn)]
    found += [unquote(s) for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: str, dsn: str | None) -> str:
    """``text`` with every password of ``dsn``, and any password a DSN in it shows, hidden."""
    for secret in secrets(dsn or ""):
        text = text.replace(secret, HIDDEN)
    text = _URI_PASSWORD.sub(rf"\g<1>{HIDDEN}\g<3>", text)
    text = _QUERY_PASSWORD.sub(rf"\g<1>{HIDDEN}", text)
    return _PAIR_PASSWORD.sub(rf"\g<1>{HIDDEN}", text)
