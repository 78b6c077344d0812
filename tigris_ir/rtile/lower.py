"""The register-tiled kernel of one matrix product as `rtile` ops.

`kernel` turns a site's geometry and the kernel decisions of
`tigris_ir.rtile.kernel.plan` into an `rtile.kernel` op: the row blocks of
`plan.mc` rows, A packed (int8 rows minus the zero point, widened) or gathered
(im2col) into a stack buffer of `plan.scratch` bytes, the K blocks of `plan.kc`
(float32; int8 sweeps the whole packed contraction), the sweeps over the full
weight panels and over the one panel of the column tail (the geometry's
cover), each with its micro-tile of `plan.rows` rows (the geometry's rm, or
several of its row passes at once: `rtile.kernel.micro_rows`) and the row edge
tiles of the leftover rows, and the epilogue; a pointwise convolution's row
blocks state `merge W` where one call covers a band's rows at once
(`rtile.kernel.row_merge`), and an int8 kernel's packing the offset its
packed rows hold over x - zp (`rtile.kernel.row_offset`). `lower-gebp` places it in the
band beside its site; the standalone GEBP of the benchmark and the autotuner
(`backend/c/gebp.py`) builds the same op, so both print through one generator.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, Signedness, f32, i16
from xdsl.ir import Attribute, Operation, SSAValue

from tigris_ir.dialects.rtile import (
    EpilogueOp,
    KBlocksOp,
    KernelOp,
    MicroOp,
    PackOp,
    PanelsOp,
    RowBlocksOp,
)
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt

UNROLL = 4
"""The k-loop unroll of a full micro-tile of rm_cap rows (the leftover rows'
tiles run once per row block: not worth the code)."""


def _into(plan: rk.KernelPlan) -> Attribute:
    """The element type A is packed into."""
    if plan.dot == "fma":
        return f32
    if plan.dot == "vpdpbusd":
        return IntegerType(8, Signedness.UNSIGNED)
    if plan.dot == "vmladava":
        return IntegerType(8, Signedness.SIGNED)
    return i16


def kernel(
    site: SSAValue,
    g: rt.Geometry,
    plan: rk.KernelPlan,
    k: int,
    n: int,
    packing: rk.Packing,
    groups: int = 1,
    merge: int | None = None,
    offset: int | None = None,
) -> KernelOp:
    """The `rtile.kernel` of C[m, n] = A[m, k] B[k, n] (per group) tiled by `g`."""
    int8 = plan.dot != "fma"
    cv = rt.cover(g, g.rm, n)
    rows = plan.rows or g.rm
    edges = list(range(1, rows))
    # the Cortex-M kernels' k loops run as written (a do-while of one group)
    unroll = UNROLL if g.rm == rt.rm_cap and plan.dot not in ("smlad", "vmladava") else 1
    full = rt.Geometry(rows, g.rn, g.lanes)
    sweeps: list[Operation] = []
    if cv.n_full:
        sweeps.append(PanelsOp(0, cv.n_full, rt.columns(g), MicroOp(full, g.lanes, edges, unroll)))
    if cv.tail_widths:
        tv = len(cv.tail_widths)
        tail = rt.Geometry(rows, tv, g.lanes)
        micro = MicroOp(tail, cv.tail_widths[-1], edges, unroll)
        sweeps.append(PanelsOp(cv.n_full, n, rt.columns(tail), micro))
    body: list[Operation] = []
    if plan.scratch:
        body.append(PackOp(packing, plan.kp, _into(plan), plan.scratch, offset))
    body += sweeps if int8 else [KBlocksOp(k, plan.kc, sweeps)]
    epilogue = EpilogueOp("bias_requant" if int8 else "bias")
    return KernelOp(site, plan.dot, k, n, groups, [RowBlocksOp(plan.mc, body, merge), epilogue])
