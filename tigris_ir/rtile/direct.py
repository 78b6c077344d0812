"""Which convolution and matrix-product bands run the direct loops.

The kernels of the C (the register-tiled GEBP of a site, the depthwise
kernel) read their operands the way their drivers walk them: weights, bias
and int8 weight scales as constants held whole (they are repacked at print
time), and for a convolution every pixel's channels whole, unit-strided and
dense; for a matrix product A's and the result's rows whole and unit-strided,
B constant (int8: symmetric), and a Gemm's C a row bias. A band whose
operands do not hold that -- or whose op has no such kernel at all (no
register tile fits the site, a channel multiplier, a float32 matrix product
on a Cortex-M) -- runs the direct loops over global indices. `reason` says
which, from the band's operands as `Operand`s: `lower-gebp` states it on the
op (`rtile.direct`), built from the band's memrefs; the C printer, from the
operands it prints, checks the IR against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from tigris_ir.dialects import nn


@dataclass(frozen=True)
class Operand:
    """One operand of a band as its kernel reads it."""

    shape: tuple[int, ...]
    """The whole tensor's shape."""
    strides: tuple[int, ...]
    """Its memref's element strides."""
    cut: tuple[int, ...]
    """The axes the memref holds a band of."""
    const: bool
    """A constant held in the IR (a `memref.get_global` of the weights)."""

    @property
    def whole(self) -> bool:
        """A constant held whole."""
        return self.const and not self.cut


NO_KERNEL = "no register-tiled kernel"
"""The reason of a site `gebp-tile` fitted no tile, and of a convolution that
is no site and no depthwise convolution (a channel multiplier)."""


def _conv_dims(op: nn.ConvOp) -> tuple[int, int, int]:
    """Input channels, output channels, groups."""
    return nn.shape_of(op.input)[-1], nn.shape_of(op.output)[-1], op.groups()


def channel_group(op: nn.ConvOp, x: Operand, y: Operand) -> int:
    """The channels per pixel of a float32 depthwise band of a channel group
    (both memrefs cut along the channels, unit-strided, the same pixel stride
    below the channel count), else 0."""
    c, co, groups = _conv_dims(op)
    last = len(x.shape) - 1
    if not (groups == c == co and len(x.shape) == len(y.shape) == 4):
        return 0
    if last not in x.cut or last not in y.cut or x.strides[-1] != 1 or y.strides[-1] != 1:
        return 0
    group = x.strides[-2]
    return group if y.strides[-2] == group and 1 < group < c else 0


def consts_ready(ins: Sequence[Operand], int8: bool) -> bool:
    """Weights and bias (and int8 weight scales) constants held whole."""
    return all(t.whole for t in (ins[1:4] if int8 else ins[1:3]))


def dense_channels(op: nn.ConvOp, x: Operand, y: Operand) -> bool:
    """Channels whole and unit-strided, pixels of both operands dense."""
    c, co, _ = _conv_dims(op)
    last = len(x.shape) - 1
    return (
        last not in x.cut
        and len(y.shape) - 1 not in y.cut
        and x.strides[-1] == 1
        and y.strides[-1] == 1
        and x.strides[-2] == c
        and y.strides[-2] == co
    )


def conv_reason(
    op: nn.ConvOp, ins: Sequence[Operand], y: Operand, int8: bool, tiled: bool
) -> str | None:
    """Why a convolution's band runs the direct loops, or None where it runs
    a kernel (`tiled`: the site has its register-tiled kernel)."""
    x = ins[0]
    ready = consts_ready(ins, int8)
    if not int8 and ready and channel_group(op, x, y):
        return None
    if not ready:
        return "weights not constants held whole"
    if not dense_channels(op, x, y):
        return "channels not whole and dense"
    c, co, groups = _conv_dims(op)
    if groups == c == co:
        return None
    return None if tiled else NO_KERNEL


def _rows_ok(a: Operand, y: Operand) -> bool:
    """A's and the result's last axes whole and unit-strided, no broadcast
    between A and the result's leading axes."""
    r = len(y.shape)
    return (
        r >= 2
        and len(a.shape) == r
        and a.shape[:-2] == y.shape[:-2]
        and r - 1 not in a.cut
        and r - 1 not in y.cut
        and a.strides[-1] == 1
        and y.strides[-1] == 1
    )


def row_bias(c: Operand) -> bool:
    """A Gemm's C is a constant that broadcasts along the rows."""
    return c.whole and not (len(c.shape) == 2 and c.shape[0] != 1)


def matmul_reason(
    op: Operation, ins: Sequence[Operand], y: Operand, int8: bool, tiled: bool
) -> str | None:
    """Why a Gemm's or MatMul's band runs the direct loops, or None where it
    runs its register-tiled kernel (`tiled`)."""
    if not tiled:
        return NO_KERNEL
    a, b = ins[0], ins[1]
    if not _rows_ok(a, y):
        return "rows of A or the result not whole and unit-strided"
    if isinstance(op, nn.GemmOp):
        if not int8 and op.int_("trans_a"):
            return "A transposed"
        if not b.whole:
            return "B not a constant held whole"
        if not row_bias(ins[2]):
            return "C not a constant row bias"
        if int8 and not (len(ins) > 3 and ins[3].const):
            return "weight scales not constants"
        return None
    if not (b.whole and len(b.shape) == 2):
        return "B not a constant matrix held whole"
    if int8:
        mm = op
        assert isinstance(mm, nn.MatMulOp)
        qb = nn.quant_of(mm.b)
        scales = qb is not None or (len(ins) > 2 and ins[2].const)
        if not scales:
            return "weight scales not constants"
        if nn.dtype_of(mm.b) != "int8" or (qb is not None and int(qb.zp_value) != 0):
            return "B not symmetric int8"
    return None
