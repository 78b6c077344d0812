"""`lower-gebp`: every register-tiled matrix product of a plan to its kernel ops.

On a loop-level plan (after `lower-to-loops` and `gebp-tile`), every
matrix-product band whose op carries a geometry (`#rtile.geom`) gets, beside
that op in the band body, its register-tiled GEBP as an `rtile.kernel` op
(`tigris_ir.rtile.lower.kernel` of the decisions `tigris_ir.rtile.kernel.plan`
makes for the site's target): row blocks, packing or im2col gathering of A
with its scratch buffer, K blocks, the panel sweeps with their micro-tiles and
edge tiles, and the epilogue (a float32 convolution of one group whose kernel
rows are runs of at least `WINDOW_MIN_RUN` input values reads its pixels'
windows in place, one K block per kernel row: `rtile.pack_a "window"`, its
scratch only for the pixels whose window leaves the image); a pointwise
convolution's row blocks say how many output rows one call covers (`merge
W`: all the band's rows at once, where both its memrefs hold whole dense rows
of W pixels; else one call per row), and an int8 kernel's packing what its
rows hold over x - zp (`offset N`, from the input's zero point and the
instruction's byte type). A float32
convolution whose band is followed by an in-place Relu or Clip band on its
output (the activation's band reads and writes the buffer the convolution's
band wrote, with only address arithmetic and the deallocs of other buffers
between them) takes the activation
into its epilogue (`bias_clamp`) and the activation's band is removed: the
buffer holds the activated values as soon as the product is stored, and
nothing reads it in between. A float32 depthwise convolution (no matrix
product, no kernel op) takes such a band the same way, as its `rtile.clamp`
attribute. The C backend prints exactly those ops. A site `gebp-tile` gave no
geometry (no register tile fits it) keeps no kernel: its
band runs the direct loop nest. The tensor-level functions of the module (the
untiled reference) are left alone.

A module without a loop-level plan is refused: the matrix products of
tensor-level functions have no lowering (plan them with `lower-to-loops`).
Running the pass twice replaces the kernels it made.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, Float32Type, MemRefType, ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.rtile import (
    CLAMP,
    TARGET,
    EpilogueOp,
    KernelOp,
    clamp_attr,
    kernel_of,
)
from tigris_ir.rtile import decide
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile.lower import kernel
from tigris_ir.rtile.sites import Site, describe


def site_kernel(op: Operation, site: Site) -> None:
    """Replace the kernel of one site by the one its geometry and target give
    (an activation fused before stays fused: its band is gone)."""
    old = kernel_of(op)
    clamp = old.epilogue.clamp if old is not None else None
    if old is not None:
        Rewriter.erase_op(old)
    g = decide.geometry_of(op)
    if g is None:
        if clamp is not None:
            raise PassFailedException(
                f"lower-gebp: {describe(op)}: its activation was fused into the kernel "
                "of an earlier geometry and this site now has none"
            )
        return
    try:
        target = decide.site_target(op)
    except ValueError as e:
        raise PassFailedException(f"lower-gebp: {describe(op)}: {TARGET}: {e}") from None
    run = window_run(op, site)
    packing: rk.Packing = "window" if run is not None else site.packing
    plan = rk.plan(target, g, site.k, site.dtype == "int8", packing, site.m, run or 0)
    groups = op.groups() if isinstance(op, nn.ConvOp) else 1
    merge = row_merge(op, site)
    offset = packed_offset(op, plan.dot)
    new = kernel(op.results[0], g, plan, site.k, site.n, packing, groups, merge, offset)
    if clamp is not None:
        _set_clamp(new, clamp)
    Rewriter.insert_op(new, InsertPoint.after(op))


def window_run(op: Operation, site: Site) -> int | None:
    """The taps of one kernel row where a convolution's kernel reads its
    pixels' windows in place (`rtile.kernel.window_run`: float32, one group,
    no dilation along the width, kw * c taps at least `WINDOW_MIN_RUN`); None:
    its im2col rows are gathered (every other site)."""
    if site.packing != "im2col" or not isinstance(op, nn.ConvOp):
        return None
    dil = op.dilations()
    return rk.window_run(
        site.dtype, op.groups(), dil[-1] if dil else 1, op.kernel()[-1],
        nn.shape_of(op.input)[-1],
    )


def _strides(v: SSAValue) -> tuple[int, ...] | None:
    """A memref's static element strides (None: not a memref, or dynamic)."""
    t = v.type
    if not isinstance(t, MemRefType):
        return None
    st = t.get_strides()
    if st is None or any(s is None or s == DYNAMIC_INDEX for s in st):
        return None
    return tuple(int(s) for s in st)  # type: ignore[arg-type]


def row_merge(op: Operation, site: Site) -> int | None:
    """W of `merge W` for a pointwise convolution's kernel: where its band's
    input and output memrefs hold whole dense rows of W pixels, one call covers
    the band's output rows at once (`rtile.kernel.row_merge`); None elsewhere
    (one call per output row; every other site)."""
    band = op.parent_op()
    if not (isinstance(op, nn.ConvOp) and isinstance(band, loop.BandOp)):
        return None
    if site.kind != "1x1 conv" or site.packing != "rows" or len(band.outputs) != 1:
        return None
    x = op.input
    if not isinstance(x, BlockArgument) or x.owner is not band.body.block:
        return None
    xs, ys = _strides(band.inputs[x.index]), _strides(band.outputs[0])
    if xs is None or ys is None:
        return None
    c, co = nn.shape_of(op.input)[-1], nn.shape_of(op.output)[-1]
    return rk.row_merge(xs, ys, c, co)


def packed_offset(op: Operation, dot: rk.Dot) -> int | None:
    """The offset an int8 kernel's packed rows of A hold over x - zp
    (`rtile.kernel.row_offset`), from the input's zero point and signedness."""
    if dot not in rk.OFFSET_DOTS:
        return None
    x = op.operands[0]
    q = nn.quant_of(x)
    zp = int(q.zp_value) if q is not None else 0
    return rk.row_offset(dot, nn.dtype_of(x) == "uint8", zp)


_CLAMPS = (nn.ReluOp, nn.ClipOp)
"""The activations an epilogue clamps by."""


def _root(v: SSAValue) -> SSAValue:
    """The buffer a memref view is of (through memref.subview)."""
    while isinstance(v.owner, memref.SubviewOp):
        v = v.owner.source
    return v


def _pure(op: Operation) -> bool:
    """Address arithmetic between bands: reads no data the bands write."""
    return isinstance(op, memref.SubviewOp | memref.LoadOp) or op.dialect_name() == "arith"


def _frees_other(op: Operation, buf: SSAValue) -> bool:
    """A dealloc of another buffer than `buf` (the end of a lifetime between
    the bands: it reads nothing the convolution wrote)."""
    return isinstance(op, memref.DeallocOp) and _root(op.memref) is not buf


def _clamp_of(act: Operation) -> tuple[float | None, float | None]:
    if isinstance(act, nn.ClipOp):
        return act.float_("min"), act.float_("max")
    return 0.0, None


def fusable_activation(op: Operation) -> loop.BandOp | None:
    """The in-place Relu / Clip band a float32 convolution site's band feeds
    directly (only address arithmetic, and deallocs of other buffers, between),
    which its epilogue can take."""
    band = op.parent_op()
    if not isinstance(op, nn.ConvOp) or not isinstance(band, loop.BandOp):
        return None
    if len(band.outputs) != 1:
        return None
    buf = _root(band.outputs[0])
    nxt = band.next_op
    while nxt is not None and (_pure(nxt) or _frees_other(nxt, buf)):
        nxt = nxt.next_op
    if not isinstance(nxt, loop.BandOp) or len(nxt.inputs) != 1 or len(nxt.outputs) != 1:
        return None
    act = nxt.nn_op
    t = act.results[0].type if act.results else None
    if not isinstance(act, _CLAMPS) or not isinstance(t, TensorType):
        return None
    if not isinstance(t.element_type, Float32Type) or nn.quant_of(act.results[0]) is not None:
        return None
    if _root(nxt.inputs[0]) is not buf or _root(nxt.outputs[0]) is not buf:
        return None
    return nxt


def _set_clamp(kern: KernelOp, clamp: tuple[float | None, float | None]) -> None:
    old = kern.epilogue
    Rewriter.replace_op(old, EpilogueOp("bias_clamp", *clamp))


def _erase_dead(ops: list[Operation]) -> None:
    """Erase the address arithmetic only a removed band used."""
    work = list(ops)
    while work:
        o = work.pop()
        if o.parent is None or not _pure(o) or any(r.uses for r in o.results):
            continue
        feeders = [v.owner for v in o.operands if isinstance(v.owner, Operation)]
        Rewriter.erase_op(o)
        work += feeders


def fuse_activation(op: Operation) -> bool:
    """Take the activation band after a site's band into its kernel's epilogue
    (`bias_clamp`) and remove that band; False where there is none to take."""
    kern = kernel_of(op)
    if kern is None or kern.epilogue.kind.data != "bias":
        return False
    act_band = fusable_activation(op)
    if act_band is None:
        return False
    _set_clamp(kern, _clamp_of(act_band.nn_op))
    feeders = [v.owner for v in act_band.operands if isinstance(v.owner, Operation)]
    Rewriter.erase_op(act_band)
    _erase_dead(feeders)
    return True


def fuse_depthwise_activation(op: nn.ConvOp) -> bool:
    """Take the in-place Relu / Clip band after a float32 depthwise
    convolution's band into the convolution (`rtile.clamp`: its kernel clamps
    every value it stores) and remove that band; False where there is none."""
    if CLAMP in op.attributes or nn.quant_of(op.output) is not None:
        return False
    if nn.dtype_of(op.input) != "float32":
        return False
    act_band = fusable_activation(op)
    if act_band is None:
        return False
    op.attributes[CLAMP] = clamp_attr(*_clamp_of(act_band.nn_op))
    feeders = [v.owner for v in act_band.operands if isinstance(v.owner, Operation)]
    Rewriter.erase_op(act_band)
    _erase_dead(feeders)
    return True


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
            fuse_activation(site_op)
        for dw in list(decide.depthwise_ops(op)):
            if isinstance(dw, nn.ConvOp):
                fuse_depthwise_activation(dw)


def tile_and_lower(module: ModuleOp, target: str = "host") -> None:
    """`--gebp-tile=target=TARGET --lower-gebp` on a plan: the two passes as the
    pipeline runs them, for drivers that plan a model themselves (`tigris-run
    --backend c`, the benchmarks)."""
    from tigris_ir.passes.gebp_tile import GebpTilePass

    ctx = Context()
    GebpTilePass(target=target).apply(ctx, module)
    LowerGebpPass().apply(ctx, module)
