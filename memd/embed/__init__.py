"""Models behind meaning: embedding providers (an OpenAI-compatible endpoint, the bundled
local model) turning text into unit vectors, and the optional reranking endpoint.

Imports only the top-level base; indexing embeds chunks with it, search embeds the query.
"""
