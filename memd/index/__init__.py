"""Indexing: reconcile a workspace's files with its store (only what changed is re-read),
re-chunk only the grown end of an appended file, session transcripts as a source, and the
embedding queue that brings vectors in line.

Imports the base, ``sources``, ``embed`` and ``store``.
"""
