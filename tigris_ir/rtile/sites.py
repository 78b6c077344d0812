"""Matrix-product sites: which ops are a GEBP, with what m, n, k, and how
their C kernel reaches A.

Every matrix product of the `nn` graph is a GEBP site of m rows, n columns and
a k-long contraction: `nn.gemm` and `nn.matmul` with a 2D B directly, a 1x1
`nn.conv` with m = N*H*W pixels (channels-last rows), n = Cout and k = Cin, and
any other non-depthwise convolution as an implicit GEMM (im2col rows) with
n = Cout/group and k = kh*kw*Cin/group. Inside a `loop.band` body, m is the
rows of the largest band the op computes (its output memref).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import FileLineColLoc, MemRefType, NameLoc
from xdsl.ir import Operation, SSAValue

from tigris_ir.dialects import loop, nn
from tigris_ir.rtile.kernel import Packing

Dtype = Literal["float32", "int8"]

SiteKind = Literal["gemm", "matmul", "1x1 conv", "conv"]


@dataclass(frozen=True)
class Site:
    """One matrix product: C[m, n] = A[m, k] @ B[k, n] per group."""

    kind: SiteKind
    m: int
    n: int
    k: int
    dtype: Dtype
    """The operand element type the product runs in (quantized ui8 counts as int8)."""
    packing: Packing = "rows"
    """How the kernel reaches A: rows in place (or packed, int8), or im2col."""


def _dtype(op: Operation) -> Dtype:
    return "float32" if nn.dtype_of(op.operands[0]) == "float32" else "int8"


def _held(value: SSAValue, rank: int) -> list[int | None]:
    """Per axis, the extent of the buffer a (sub)view `value` lies in, where
    its source is a static buffer of the same rank (else None)."""
    owner = value.owner
    if isinstance(owner, memref.SubviewOp):
        src = owner.source.type
        if isinstance(src, MemRefType):
            shape = list(src.get_shape())
            if len(shape) == rank:
                return [d if d >= 0 else None for d in shape]
    return [None] * rank


def _band_shape(op: Operation) -> tuple[int, ...] | None:
    """The output shape of the largest band a loop-level op computes, if it is
    the body of a `loop.band`.

    A band of varying rows has a dynamic extent on its memref: its bound is what
    the buffer holds along that axis (the extent of the buffer it is a view of,
    and the stride of the axis outside it over its own), and never more than the
    op's whole output.
    """
    parent = op.parent_op()
    if not (isinstance(parent, loop.BandOp) and parent.outputs):
        return None
    ty = parent.outputs[0].type
    if not isinstance(ty, MemRefType):
        return None
    shape = list(ty.get_shape())
    if all(d >= 0 for d in shape):
        return tuple(shape)
    whole = nn.shape_of(op.results[0]) if op.results else None
    strides = ty.get_strides()
    held = _held(parent.outputs[0], len(shape))
    for i, d in enumerate(shape):
        if d >= 0:
            continue
        bound = whole[i] if whole is not None and len(whole) == len(shape) else None
        buf = held[i]
        if buf is not None:
            bound = buf if bound is None else min(bound, buf)
        outer, inner = (strides[i - 1], strides[i]) if strides is not None and i > 0 else (0, 0)
        if outer and inner:
            rows = outer // inner
            bound = rows if bound is None else min(bound, rows)
        if bound is None:
            return None
        shape[i] = bound
    return tuple(shape)


def _rows(shape: tuple[int, ...]) -> int:
    rows = 1
    for d in shape:
        rows *= d
    return rows


def gemm_site(op: Operation) -> Site | None:
    """The GEBP site of an op, or None if it is no (2D) matrix product."""
    band = _band_shape(op)
    if isinstance(op, nn.GemmOp):
        m, n, k = op.dims()
        if band is not None:
            m = band[0]
        return Site("gemm", m, n, k, _dtype(op))
    if isinstance(op, nn.MatMulOp):
        sa, sb = nn.shape_of(op.a), nn.shape_of(op.b)
        if len(sb) != 2 or len(sa) < 2:
            return None
        m = _rows(tuple(sa[:-1])) if band is None else _rows(band[:-1])
        return Site("matmul", m, sb[1], sa[-1], _dtype(op))
    if isinstance(op, nn.ConvOp):
        if op.is_depthwise():
            return None
        ys, ws = nn.shape_of(op.output), nn.shape_of(op.weight)
        pixels = _rows(tuple(ys[:-1]) if band is None else band[:-1])
        taps = 1
        for d in ws[1:-1]:
            taps *= d
        kind: SiteKind = "1x1 conv" if taps == 1 else "conv"
        plain = all(s == 1 for s in op.strides()) and not any(op.pads()) and op.groups() == 1
        packing: Packing = "rows" if taps == 1 and plain else "im2col"
        return Site(kind, pixels, ws[0] // op.groups(), taps * ws[-1], _dtype(op), packing)
    return None


def describe(op: Operation) -> str:
    """The op and where it is: `'nn.gemm' %y in @f at file:line:col`.

    Ops parsed without a `loc(...)` have no source position in xDSL, so the
    result name and the enclosing function locate them instead.
    """
    text = f"'{op.name}'"
    if op.results and op.results[0].name_hint:
        text += f" %{op.results[0].name_hint}"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if isinstance(parent, func.FuncOp):
        text += f" in @{parent.sym_name.data}"
        block = op.parent_block()
        if block is not None and op.parent_op() is parent:
            text += f" (op {block.get_operation_index(op) + 1} of its body)"
    loc = op.location
    if isinstance(loc, NameLoc):
        text += f" [{loc.desc.data}]"
        loc = loc.location
    if isinstance(loc, FileLineColLoc):
        text += f" at {loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return text


def warn(pass_name: str, op: Operation, message: str) -> None:
    """A warning diagnostic on stderr: the op, its location and the message."""
    print(f"warning: {pass_name}: {describe(op)}: {message}", file=sys.stderr)


