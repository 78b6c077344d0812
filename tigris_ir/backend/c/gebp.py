"""The network's GEBP kernel on its own, for the benchmark and the autotuner.

There is one GEBP generator: the row drivers the network's pointwise
convolutions and matrix products call (`conv.float_rows`, `conv.int8_rows`).
`build` prints one of them for a geometry, from the `rtile.kernel` op
`lower-gebp` would place in a network's band (`tigris_ir.rtile.lower.kernel` of
`rtile.kernel.plan`), into a unit of its own with one exported entry point,

    void gebp(const void *a, const void *bp, const void *bias, const void *mult,
              void *y, int m)

(C[m, n] = A[m, k] B + bias with A and C row-major and dense, B in the kernel's
panels, `mult` the int8 requantization multipliers), and compiles it with the
network's flags (`build.REQUIRED_FLAGS`, `build.DEFAULT_FLAGS`) into a shared
object. So a timing of a candidate geometry is a timing of the code a network
with that geometry runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir import Block

from tigris_ir.backend.c import conv
from tigris_ir.backend.c.band import PRELUDE, CLoweringError
from tigris_ir.backend.c.build import DEFAULT_FLAGS, REQUIRED_FLAGS, cache_dir, default_cc
from tigris_ir.dialects.rtile import KernelOp
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.lower import kernel
from tigris_ir.rtile.targets import Target, host_target

Dtype = Literal["float32", "int8"]


@dataclass(frozen=True)
class Problem:
    """C[m, n] = A[m, k] @ B[k, n] + bias, in float32 or int8."""

    m: int
    n: int
    k: int
    dtype: Dtype = "float32"


class _Unit:
    """The `CUnit` of a standalone kernel: helpers in order, no constants."""

    def __init__(self) -> None:
        self.helpers: dict[str, str] = {}
        self.names: set[str] = set()

    def helper(self, key: str, code: str) -> None:
        self.helpers.setdefault(key, code)

    def const(self, hint: str, value: np.ndarray) -> str:
        raise CLoweringError(f"a standalone GEBP takes its operands as arguments ({hint})")

    def fresh(self, hint: str) -> str:
        name, i = hint, 0
        while name in self.names:
            i += 1
            name = f"{hint}_{i}"
        self.names.add(name)
        return name

    def scratch(self, nbytes: int) -> None:
        del nbytes  # the stack buffer is the kernel's own


@dataclass(frozen=True)
class Kernel:
    """A compiled GEBP and how to call it on numpy arrays."""

    problem: Problem
    geometry: rt.Geometry
    plan: rk.KernelPlan
    source: str
    panels: Any
    fn: Any

    def pack(self, b: np.ndarray) -> np.ndarray:
        """B[k, n] in the kernel's panels (done once, as the network stores weights)."""
        return conv.pack_b(self.panels, np.ascontiguousarray(b))

    def pad(self, v: np.ndarray) -> np.ndarray:
        """A per-column vector (the multipliers) padded to the panels' columns."""
        return conv.pad_cols(self.panels, np.ascontiguousarray(v))

    def bias(self, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """The bias the kernel starts from for weights B (done once, as the
        network stores it): padded, and for int8 as `conv.bias_cols` makes it
        for int8 rows of zero point 0."""
        if self.problem.dtype == "float32":
            return self.pad(bias)
        return conv.bias_cols(self.panels, b, bias)

    def call(
        self,
        a: np.ndarray,
        bp: np.ndarray,
        bias: np.ndarray,
        y: np.ndarray,
        mult: np.ndarray | None = None,
    ) -> None:
        """y = A B + bias (requantized by `mult` for int8), B packed, bias padded."""
        p = self.problem
        if a.shape != (p.m, p.k) or y.shape != (p.m, p.n):
            raise ValueError(f"expected A {p.m}x{p.k} and C {p.m}x{p.n}, got {a.shape}, {y.shape}")
        for arr in (a, bp, bias, y):
            if not arr.flags.c_contiguous:
                raise ValueError("operands must be C-contiguous")
        self.fn(
            a.ctypes.data,
            bp.ctypes.data,
            bias.ctypes.data,
            None if mult is None else mult.ctypes.data,
            y.ctypes.data,
            p.m,
        )


def kernel_op(g: rt.Geometry, p: Problem, target: Target) -> KernelOp:
    """The `rtile.kernel` lower-gebp gives a band of rows of this problem."""
    int8 = p.dtype == "int8"
    plan = rk.plan(target, g, p.k, int8, "rows", p.m)
    site = Block(arg_types=[TensorType(i32 if int8 else f32, [p.m, p.n])]).args[0]
    offset = rk.row_offset(plan.dot, False, 0)  # int8 rows of zero point 0
    return kernel(site, g, plan, p.k, p.n, "rows", offset=offset)


def source(kern: KernelOp, p: Problem, target: Target) -> tuple[str, rk.KernelPlan, Any]:
    """The unit of one standalone GEBP printed from its kernel op, its kernel
    plan and its panels."""
    int8 = p.dtype == "int8"
    panels = conv.panels_of(kern, target)
    if (panels.k, panels.n, panels.int8) != (p.k, p.n, int8):
        raise CLoweringError(f"{kern.name} of {panels.k} x {panels.n} is no kernel of {p}")
    plan = panels.plan
    unit = _Unit()
    if int8:
        rows = conv.int8_rows(unit, panels, 0, 0)
        call = (
            f"  {rows}((const int8_t *)a, {p.k}, m, (const int8_t *)bp, (const int32_t *)bias,"
            f" (const float *)mult, (int8_t *)y, {p.n});"
        )
    else:
        rows = conv.float_rows(unit, panels)
        call = (
            f"  (void)mult;\n  {rows}((const float *)a, {p.k}, m, (const float *)bp,"
            f" (const float *)bias, (float *)y, {p.n});"
        )
    entry = (
        "void gebp(const void *a, const void *bp, const void *bias, const void *mult,"
        " void *y, int m);\n"
        "void gebp(const void *a, const void *bp, const void *bias, const void *mult,"
        f" void *y, int m)\n{{\n{call}\n}}\n"
    )
    return "\n\n".join([PRELUDE, *unit.helpers.values(), entry]), plan, panels


def compile_flags(flags: tuple[str, ...] = DEFAULT_FLAGS) -> tuple[str, ...]:
    """The network's flags (REQUIRED_FLAGS, then `flags`) for a shared object."""
    return (*REQUIRED_FLAGS, *flags, "-shared", "-fPIC")


_LIBS: dict[Path, ctypes.CDLL] = {}


def load(text: str, flags: tuple[str, ...] = DEFAULT_FLAGS, cc: str | None = None) -> ctypes.CDLL:
    """Compile (cached by source and flags) and load a unit."""
    cc = cc or default_cc()
    args = compile_flags(flags)
    key = hashlib.sha256("\0".join([text, cc, *args]).encode()).hexdigest()[:24]
    out = cache_dir() / f"gebp_{key}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        src = out.with_suffix(".c")
        src.write_text(text)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = [cc, *args, str(src), "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"{cc} failed ({' '.join(cmd)}):\n{res.stderr}")
        os.replace(tmp, out)
    if out not in _LIBS:
        _LIBS[out] = ctypes.CDLL(str(out))
    return _LIBS[out]


def build(
    g: rt.Geometry,
    p: Problem,
    target: Target | None = None,
    flags: tuple[str, ...] = DEFAULT_FLAGS,
    kern: KernelOp | None = None,
) -> Kernel:
    """Print, compile and load the network's GEBP for one geometry and problem
    (from `kern`, a band's own kernel op, when given)."""
    target = target or host_target()
    text, plan, panels = source(kern or kernel_op(g, p, target), p, target)
    fn = load(text, flags).gebp
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int]
    return Kernel(p, g, plan, text, panels, fn)
