"""Storage: what indexing and search need from an index database, as one interface
(``store.base``), and SQLite, its one backend today (schema, FTS5, vectors in memory, the
flush ledger). Only this stage imports apsw or writes SQL.

Imports the base, ``sources`` and ``embed``.
"""
