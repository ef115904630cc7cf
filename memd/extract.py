"""Ask a chat model which parts of a transcript must survive compaction.

Any OpenAI-compatible chat endpoint (``flush.llm``) through the ``openai`` package. The
reply is written through the same safe append as any flush; an empty reply writes nothing.
"""

from __future__ import annotations

from memd.config import FlushLLM
from memd.errors import BackendUnavailable

# Replies that mean "nothing worth keeping" from models that will not stay silent.
_NOTHING = {"", "nothing", "none", "n/a", "(nothing)", "nothing to keep", "nothing worth keeping"}


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
