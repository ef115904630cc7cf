"""Writing: the only changes memd makes to a workspace (appended flush entries, its own key
lines), through safe paths, once (the flush ledger), in group commits, indexed on return.

Imports the base, ``sources``, ``embed``, ``store`` and ``index``; never ``search``.
"""
