"""`lower-gebp`: every register-tiled matrix product of a plan to its kernel ops.

On a loop-level plan (after `lower-to-loops` and `gebp-tile`), every
matrix-product band whose op carries a geometry (`#rtile.geom`) gets, beside
that op in the band body, its register-tiled GEBP as an `rtile.kernel` op
(`tigris_ir.rtile.lower.kernel` of the decisions `tigris_ir.rtile.kernel.plan`
makes for the site's target): row blocks, packing or im2col gathering of A
with its scratch buffer, K blocks, the panel sweeps with their micro-tiles and
edge tiles, and the epilogue. The C backend prints exactly those ops. A site
`gebp-tile` gave no geometry (no register tile fits it) keeps no kernel: its
band runs the direct loop nest. The tensor-level functions of the module (the
untiled reference) are left alone.

A module without a loop-level plan is refused: the matrix products of
tensor-level functions have no lowering (plan them with `lower-to-loops`).
Running the pass twice replaces the kernels it made.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import TARGET, kernel_of
from tigris_ir.rtile import decide
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile.lower import kernel
from tigris_ir.rtile.sites import Site, describe


def site_kernel(op: Operation, site: Site) -> None:
    """Replace the kernel of one site by the one its geometry and target give."""
    old = kernel_of(op)
    if old is not None:
        Rewriter.erase_op(old)
    g = decide.geometry_of(op)
    if g is None:
        return
    try:
        target = decide.site_target(op)
    except ValueError as e:
        raise PassFailedException(f"lower-gebp: {describe(op)}: {TARGET}: {e}") from None
    plan = rk.plan(target, g, site.k, site.dtype == "int8", site.packing, site.m)
    groups = op.groups() if isinstance(op, nn.ConvOp) else 1
    new = kernel(op.results[0], g, plan, site.k, site.n, site.packing, groups)
    Rewriter.insert_op(new, InsertPoint.after(op))


@dataclass(frozen=True)
class LowerGebpPass(ModulePass):
    """Give every register-tiled matrix-product band its `rtile.kernel`."""

    name = "lower-gebp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not decide.holds_plan(op):
            raise PassFailedException(
                "lower-gebp: the module holds no loop-level plan; it lowers the matrix "
                "products of loop.band ops (run --lower-to-loops and --gebp-tile first)"
            )
        for site_op, site in list(decide.sites(op)):
            site_kernel(site_op, site)


def tile_and_lower(module: ModuleOp, target: str = "host") -> None:
    """`--gebp-tile=target=TARGET --lower-gebp` on a plan: the two passes as the
    pipeline runs them, for drivers that plan a model themselves (`tigris-run
    --backend c`, the benchmarks)."""
    from tigris_ir.passes.gebp_tile import GebpTilePass

    ctx = Context()
    GebpTilePass(target=target).apply(ctx, module)
    LowerGebpPass().apply(ctx, module)
