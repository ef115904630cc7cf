"""What to keep before compaction: the flush prompt, and asking a chat model to apply it.

Any OpenAI-compatible chat endpoint (``flush.llm``) through the ``openai`` package. The
reply is written through the same safe append as any flush; an empty reply writes nothing.
It is a network call: callers run it before taking the writer thread, never on it.
"""

from __future__ import annotations

from memd.config import FlushLLM
from memd.errors import BackendUnavailable
from memd.records import FlushPrompt

# Replies that mean "nothing worth keeping" from models that will not stay silent.
_NOTHING = {"", "nothing", "none", "n/a", "(nothing)", "nothing to keep", "nothing worth keeping"}


FLUSH_SYSTEM = """\
You keep an AI agent's long-term memory, stored as Markdown notes. The conversation is about \
to be compacted: whatever is not written down now is lost.

Write down what must survive:
- durable facts (names, numbers, paths, versions, links) and how things work;
- decisions, with their reasons and what was rejected;
- the user's preferences and corrections;
- commitments, open threads and next steps, with who owns them.

Skip greetings, chit-chat, thinking out loud, and anything already in memory. Each note must \
make sense on its own to someone who never saw this conversation. Be brief and exact.
If nothing is worth keeping, reply with nothing at all."""

FLUSH_USER = """\
Today is {date}. What you reply will be appended to {target}.
Review the conversation above and reply with the notes to keep, as Markdown bullet points \
(optionally under short ### headings), or reply with nothing."""


def flush_prompt(date: str, target: str) -> FlushPrompt:
    """The prompt for a flush whose notes will be appended to ``target`` on ``date``."""
    return FlushPrompt(FLUSH_SYSTEM, FLUSH_USER.format(date=date, target=target), target)


def transcript_text(transcript: str | list[dict]) -> str:
    """A transcript as plain text: a string as is, or ``role: content`` lines."""
    if isinstance(transcript, str):
        return transcript
    return "\n\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in transcript)


def extract_notes(llm: FlushLLM, system: str, user: str, transcript: str | list[dict]) -> str:
    """The notes the model wants kept (Markdown), or "" when there is nothing."""
    import openai

    client = openai.OpenAI(
        base_url=llm.base_url,
        api_key=llm.api_key or "unused",
        timeout=llm.timeout_s,
        max_retries=llm.retries,
    )
    messages = [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": f"<conversation>\n{transcript_text(transcript)}\n</conversation>",
        },
        {"role": "user", "content": user},
    ]
    try:
        response = client.chat.completions.create(model=llm.model, messages=messages, temperature=0)
    except openai.APIError as exc:
        status = getattr(exc, "status_code", None)
        where = f" (HTTP {status})" if status else ""
        raise BackendUnavailable(
            f"flush.llm endpoint failed{where}: {exc}; nothing was written"
        ) from exc
    except Exception as exc:
        raise BackendUnavailable(f"flush.llm endpoint failed: {exc}; nothing was written") from exc
    reply = (response.choices[0].message.content or "").strip() if response.choices else ""
    return "" if reply.lower().strip(".! ") in _NOTHING else reply
