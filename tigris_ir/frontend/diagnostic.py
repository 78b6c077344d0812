"""The import's user-facing errors and the size rule every tensor obeys, in
a module of their own so that the drivers can use them without loading onnx
(about a second of start-up) for inputs that are not ONNX."""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_TENSOR_BYTES = 1 << 32
"""The largest tensor any target can hold: a 32-bit address space (4 GiB)."""


class ImportDiagnostic(Exception):
    """A user-facing problem with the model, with its location."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: error: {message}")
        self.where = where
        self.message = message


class ModelInvalid(Exception):
    """A rule the model breaks: `where` (file, node or value) and the rule."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: error: {message}")
        self.where = where
        self.message = message


def format_shape(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) if len(shape) else "a scalar"


def format_size(n: int) -> str:
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.1f} {unit}"
    return f"{n} B"


def check_tensor_size(where: str, what: str, shape: Sequence[int], elem_bytes: int) -> None:
    """Refuse a tensor with a dimension below 1 or more than MAX_TENSOR_BYTES
    (computed in Python integers: nothing is allocated, nothing overflows)."""
    bad = [d for d in shape if d < 1]
    if bad:
        raise ModelInvalid(
            where,
            f"{what} has shape {format_shape(shape)}: every dimension must be >= 1 "
            f"(an empty tensor is not supported)",
        )
    n = math.prod(shape) * elem_bytes
    if n > MAX_TENSOR_BYTES:
        raise ModelInvalid(
            where,
            f"{what} of shape {format_shape(shape)} would take {format_size(n)}; no target "
            f"holds a tensor above {format_size(MAX_TENSOR_BYTES)} (a 32-bit address space)",
        )
