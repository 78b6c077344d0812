"""Memory accounting shared by every level (budget parsing; see planner for the rest)."""

from __future__ import annotations

import re

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
}


def parse_budget(text: str | int) -> int:
    """`262144`, `256K`, `1M` (also KiB/MiB) to bytes; zero, negative or garbage is an error."""
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(-?\d+)\s*([A-Za-z]*)\s*", str(text))
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(
                f"bad budget '{text}': expected bytes like 262144, 256K or 1M"
            )
        value = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if value <= 0:
        raise ValueError(f"bad budget '{text}': a budget must be positive")
    return value
