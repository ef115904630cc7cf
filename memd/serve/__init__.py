"""Serving: the daemon's lifecycle, one runner per workspace (watcher, index and embedding
loops), the JSON-RPC socket server and its methods, the router for the CLI, the MCP
server and the service-manager files.

Imports every stage below it and the ``memd.memory`` facade; nothing imports it but ``cli``.
"""
