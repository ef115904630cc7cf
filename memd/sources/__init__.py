"""Notes and transcripts becoming text: the workspace's file layout, Markdown with exact
lines, chunks under a token budget, the passages a model embeds, transcripts and redaction.

Imports only the top-level base (config, errors, records, log); nothing here touches storage.
"""
