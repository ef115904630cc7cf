"""What every benchmark shares: percentiles and printing and saving a result."""

from __future__ import annotations

import json
import time
from pathlib import Path


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def write_result(result: dict, out: Path) -> None:
    """Print ``result`` one figure a line and write it as JSON to ``out``."""
    result.setdefault("date", time.strftime("%Y-%m-%d"))
    for key, value in result.items():
        print(f"{key:28} {value}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
