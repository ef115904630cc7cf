"""Secrets out of session transcripts before anything is indexed, embedded or read back.

A transcript holds whatever passed through an agent's context: API keys pasted into a
prompt, tokens in tool output, private keys a command printed. ``redact`` replaces each
secret by ``[REDACTED]`` (keeping the name in ``password=[REDACTED]`` or
``Authorization: [REDACTED]`` so the text still reads), with the rules in ``RULES``; the
README lists them. Applied to transcript text only: a person's own notes are theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARK = "[REDACTED]"


@dataclass(frozen=True)
class Rule:
    """One kind of secret: ``pattern`` finds it; group ``keep`` (if any) stays."""

    name: str
    pattern: re.Pattern[str]
    keep: int = 0  # the leading group kept as written, e.g. "password=" of password=...
    chained: bool = False  # a value that names a further assignment hands the redaction on


_SECRET_KEYS = (
    r"pass(?:word|wd|phrase)?|pwd|secrets?|token|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?"
    r"|secret[_-]?access[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token"
    r"|refresh[_-]?token|private[_-]?key|credentials?"
)

RULES: tuple[Rule, ...] = (
    Rule("private key block", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?-----END [A-Z0-9 ]*PRIVATE KEY"
        r"(?: BLOCK)?-----", re.S)),
    Rule("authorization header", re.compile(
        r"((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot|digest)?\s*)"
        r"[^\s\"'\\,]+", re.I), keep=1),
    Rule("bearer token", re.compile(r"(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}", re.I), keep=1),
    Rule("OpenAI or Anthropic key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    Rule("Stripe key", re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    Rule("GitHub token", re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    Rule("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    Rule("Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    Rule("Slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+")),
    Rule("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    Rule("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    Rule("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    Rule("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    Rule("JSON web token", re.compile(
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    Rule("password in a URL", re.compile(
        r"(\b[a-z][a-z0-9+.-]*://[^\s/:@\"']+:)[^\s@/\"']+(?=@)", re.I), keep=1),
    Rule("secret assignment", re.compile(
        rf"(\b(?:[A-Za-z0-9]+[_-])*(?:{_SECRET_KEYS})(?:[_-]?(?:key|value))?\b(?:\\?[\"'])?"
        r"\s*[:=]\s*(?:\\?[\"'])?)"
        r"(?!\[REDACTED\])[^\s\"'\\,;&]+", re.I), keep=1, chained=True),
)  # fmt: skip

# In "credential: aws_secret_access_key = <secret>" the value of "credential:" is only the
# name of the assignment that holds the secret. A link is such a name and its separator:
# spaced or quoted, so that "abc=def" or "user:pw" stays one value and is redacted whole.
_LINK = re.compile(
    r"[^\s\"'\\,;&:=]+(?:\\?[\"']\s*[:=]\s*|\s+[:=]\s*|[:=]\s+)(?:\\?[\"'])?"
    r"(?=[^\s\"'\\,;&])"
)
_VALUE = re.compile(r"[^\s\"'\\,;&]+")


def redact(text: str) -> str:
    """``text`` with every secret ``RULES`` finds replaced by ``[REDACTED]``."""
    for rule in RULES:
        if rule.chained:
            text = _redact_chained(rule.pattern, text)
        elif rule.keep:
            text = rule.pattern.sub(lambda m: m.group(1) + MARK, text)
        else:
            text = rule.pattern.sub(MARK, text)
    return text


def _redact_chained(pattern: re.Pattern[str], text: str) -> str:
    """Each match's value redacted, or the value of the last assignment it chains to."""
    parts: list[str] = []
    pos = 0
    while m := pattern.search(text, pos):
        start = m.end(1)
        while link := _LINK.match(text, start):
            start = link.end()
        value = _VALUE.match(text, start)
        end = value.end() if value else start
        kept = text[start:end] if text.startswith(MARK, start) else MARK  # another rule's mark
        parts += [text[pos:start], kept]
        pos = end
    return "".join(parts) + text[pos:]


def redact_lines(text: str) -> str:
    """``redact`` line by line, so the text keeps its line count (for ``memory_get``)."""
    return "\n".join(redact(line) for line in text.split("\n"))
