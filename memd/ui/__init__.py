"""The local page that shows memory (``memd ui``, or the daemon with ``ui.enabled``).

- ``guard``: the token, cookie, CSRF and origin checks every request passes.
- ``notehtml``: a note's Markdown as HTML in which nothing runs.
- ``reading``: the timeline and the updates, read from the index.
- ``pages``: each view as HTML.
- ``app``: the routes, thin over the protocol's methods and ``reading``.
- ``server``: uvicorn on 127.0.0.1 and the address to open.

Starlette and uvicorn come with the ``mcp`` extra; nothing here imports them until the
page is served.
"""
