"""Memory accounting shared by every level: alignment, tensor sizes, budgets.

The planner, the loop-level interpreter (which measures its real peak) and the
C emitter (which sizes its static arena) all size buffers through this module,
so a planned peak and a measured peak are the same number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

ALIGN = 16
"""Every buffer of the fast arena starts on a 16-byte boundary.

16 bytes is the widest vector load of the targets (Cortex-M Helium/MVE, NEON,
SSE): an aligned buffer start keeps every vector and every int32/float32 access
aligned. Each buffer is rounded up to it, so the arena is a sum of aligned sizes.
"""

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


def align(nbytes: int) -> int:
    """`nbytes` rounded up to a multiple of ALIGN (0 stays 0: no buffer)."""
    if nbytes < 0:
        raise ValueError(f"align: negative size {nbytes}")
    return -(-nbytes // ALIGN) * ALIGN


def tensor_bytes(shape: Iterable[int], elem_bytes: int) -> int:
    """Bytes of a dense tensor, before alignment (a scalar has shape ())."""
    dims = tuple(shape)
    if any(d < 0 for d in dims) or elem_bytes <= 0:
        raise ValueError(f"tensor_bytes: bad shape {dims} or element size {elem_bytes}")
    return math.prod(dims) * elem_bytes


def parse_budget(text: str | int, *, zero_ok: bool = False) -> int:
    """`262144`, `256K`, `1M` (also `k`, `KiB`, `MiB`) to bytes; K = 1024.

    Zero (unless `zero_ok`: a slow budget of 0 means no slow memory),
    negative or unparsable budgets raise ValueError naming the input.
    """
    if isinstance(text, bool):
        raise ValueError(f"bad budget {text!r}: expected bytes like 262144, 256K or 1M")
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*([+-]?\d+)\s*([A-Za-z]*)\s*", str(text))
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"bad budget '{text}': expected bytes like 262144, 256K or 1M")
        value = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 0 or (value == 0 and not zero_ok):
        rule = "must not be negative" if zero_ok else "must be positive"
        raise ValueError(f"bad budget '{text}': a budget {rule}, got {value} bytes")
    return value


def format_bytes(n: int) -> str:
    """Human-readable bytes: `512 B`, `37.5 KiB`, `1.47 MiB` (K = 1024)."""
    if n < 1024:
        return f"{n} B"
    if n < 1 << 20:
        return f"{n / 1024:.1f}".removesuffix(".0") + " KiB"
    text = f"{n / (1 << 20):.2f}".rstrip("0").removesuffix(".")
    return text + " MiB"
