"""Search: a query read for time words and bounds, keyword and vector candidates from the
store, ranked by the pure stages (fusion, time, decay, diversity) into honest scores.

Imports the base, ``sources``, ``embed`` and ``store``; never ``index``.
"""
