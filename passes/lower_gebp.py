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
scratch only for the pixels whose window leaves the image; a float32
convolution of one group three taps wide at stride and dilation 1 along the
width, of at least `WINOGRAD_MIN_CHANNELS` input channels, on a target with a
float vector unit runs Winograd's F(4, 3) along the width instead:
`rtile.pack_a "winograd"`, six products of kh * c, unless the pass's option
`winograd=false` asks for the window kernels); a pointwise
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
attribute, and so does a float32 Add; a float32 Gemm's or MatMul's kernel
takes it into its epilogue as a convolution's does. Every depthwise
convolution states its kernel (`rtile.depthwise`: which one, its lanes, the
channel vectors a step, the pixels a step; `rtile.kernel.depthwise_plan`),
and every convolution, Gemm or MatMul whose band runs the direct loops states
that and why (`rtile.direct`, `tigris_ir.rtile.direct`: no register-tiled
kernel, or operands its kernel cannot read; such a band keeps no kernel). The
int8 Add / Sub and pools of a Cortex-M target (marked with its
`rtile.target` by `gebp-tile`) get their SIMD unit, `rtile.lanes = "dsp"` or
`"mve"`, where the target's description has it and a kernel exists for the
op (`decide.int8_lanes`); without it they print their portable loops. The
C backend prints exactly those ops and attributes. A site `gebp-tile` gave no
geometry (no register tile fits it) keeps no kernel: its
band runs the direct loop nest (`rtile.direct`). The tensor-level functions of the module (the
untiled reference) are left alone.

A module without a loop-level plan is refused: the matrix products of
tensor-level functions have no lowering (plan them with `lower-to-loops`).
Running the pass twice replaces the kernels it made.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float32Type,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.rtile import (
    CLAMP,
    DEPTHWISE,
    DIRECT,
    LANES,
    TARGET,
    EpilogueOp,
    KernelOp,
    clamp_attr,
    clamp_of,
    depthwise_attr,
    kernel_of,
)
from tigris_ir.rtile import decide
from tigris_ir.rtile import direct as rd
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.lower import kernel
from tigris_ir.rtile.sites import Site, describe


def site_kernel(
    op: Operation,
    site: Site,
    winograd: bool = True,
    operands: tuple[list[rd.Operand], rd.Operand] | None = None,
) -> None:
    """Replace the kernel of one site by the one its geometry and target give
    (an activation fused before stays fused: its band is gone); `winograd`:
    a convolution that qualifies (`winograd_channels`, on `operands`, the
    band's memrefs' where not given) runs F(4, 3)."""
    old = kernel_of(op)
    clamp = clamp_of(op)  # of its kernel, or stated beside its direct loops
    op.attributes.pop(CLAMP, None)
    op.attributes.pop(DIRECT, None)
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
    k = site.k
    channels = winograd_channels(op, site, target, operands) if winograd else None
    run = window_run(op, site)
    packing: rk.Packing = "window" if run is not None else site.packing
    if channels is not None and isinstance(op, nn.ConvOp):
        packing, run = "winograd", channels
        k = op.kernel()[0] * channels  # each product: the kernel rows' channels
    plan = rk.plan(target, g, k, site.dtype == "int8", packing, site.m, run or 0, site.n)
    groups = op.groups() if isinstance(op, nn.ConvOp) else 1
    merge = row_merge(op, site)
    offset = packed_offset(op, plan.dot)
    new = kernel(op.results[0], g, plan, k, site.n, packing, groups, merge, offset)
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


def winograd_channels(
    op: Operation,
    site: Site,
    target: tg.Target,
    operands: tuple[list[rd.Operand], rd.Operand] | None = None,
) -> int | None:
    """The input channels of a convolution whose kernel runs Winograd's F(4, 3)
    along the width (`rtile.kernel.winograd_taps`: float32, one group, three
    taps wide at stride and dilation 1 along the width, enough channels, a
    target with a float vector unit) and whose band's operands its driver reads
    (channels whole and dense: `operands`, the band's memrefs' where not
    given); None for every other site."""
    if site.packing != "im2col" or not isinstance(op, nn.ConvOp) or len(op.kernel()) != 2:
        return None
    dil, st = op.dilations(), op.strides()
    c = nn.shape_of(op.input)[-1]
    got = rk.winograd_taps(
        target, site.dtype, op.groups(), op.kernel()[-1], st[-1] if st else 1,
        dil[-1] if dil else 1, c,
    )
    operands = operands or band_operands(op)
    if got is None or operands is None:
        return None
    ins, y = operands
    return got if rd.dense_channels(op, ins[0], y) and rd.consts_ready(ins, False) else None


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


_FUSING = (nn.ConvOp, nn.GemmOp, nn.MatMulOp, nn.AddOp)
"""The ops whose stores can take the activation after them: a site's kernel
(its epilogue), a depthwise convolution's kernel and an Add (`rtile.clamp`)."""


def fusable_activation(op: Operation) -> loop.BandOp | None:
    """The in-place Relu / Clip band the band of a float32 convolution,
    matrix product or Add feeds directly (only address arithmetic, and
    deallocs of other buffers, between), which its stores can take."""
    band = op.parent_op()
    if not isinstance(op, _FUSING) or not isinstance(band, loop.BandOp):
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


def fuse_clamp(op: nn.ConvOp | nn.AddOp) -> bool:
    """Take the in-place Relu / Clip band after the band of a float32
    depthwise convolution or Add into the op (`rtile.clamp`: its kernel, or
    its loop, clamps every value it stores) and remove that band; False
    where there is none."""
    if CLAMP in op.attributes or nn.quant_of(op.results[0]) is not None:
        return False
    if any(nn.dtype_of(v) != "float32" for v in (*op.operands[:2], op.results[0])):
        return False
    act_band = fusable_activation(op)
    if act_band is None:
        return False
    op.attributes[CLAMP] = clamp_attr(*_clamp_of(act_band.nn_op))
    feeders = [v.owner for v in act_band.operands if isinstance(v.owner, Operation)]
    Rewriter.erase_op(act_band)
    _erase_dead(feeders)
    return True


def band_operands(op: Operation) -> tuple[list[rd.Operand], rd.Operand] | None:
    """The inputs and the output of the band an op is the body of, as its
    kernel reads them (None: the op is no band's body)."""
    band = op.parent_op()
    if not isinstance(band, loop.BandComputeOp) or len(band.outputs) != 1:
        return None
    cuts = band.cut_axes()
    body = band.body.block.args
    mems: list[rd.Operand] = []
    for i, v in enumerate((*band.inputs, *band.outputs)):
        st = _strides(v)
        if st is None:
            return None
        shape = nn.shape_of(body[i].type) if i < len(body) else nn.shape_of(op.results[0])
        const = isinstance(v.owner, memref.GetGlobalOp)
        mems.append(rd.Operand(tuple(shape), st, cuts[i], const))
    return mems[:-1], mems[-1]


def state_direct(
    op: Operation, operands: tuple[list[rd.Operand], rd.Operand] | None = None
) -> str | None:
    """State on a convolution or matrix product whether its band runs the
    direct loops, and why (`rtile.direct`, `tigris_ir.rtile.direct`); such a
    band has no kernel: one made for the site is removed (an activation fused
    into it stays, as `rtile.clamp`). `operands`: the band's inputs and
    output (its memrefs' where not given)."""
    op.attributes.pop(DIRECT, None)
    operands = operands or band_operands(op)
    if operands is None:
        return None
    ins, y = operands
    int8 = isinstance(op, nn.NNOp) and op.is_quantized()
    kern = kernel_of(op)
    if isinstance(op, nn.ConvOp):
        reason = rd.conv_reason(op, ins, y, int8, kern is not None)
    elif isinstance(op, nn.GemmOp | nn.MatMulOp):
        reason = rd.matmul_reason(op, ins, y, int8, kern is not None)
    else:
        return None
    if reason is None:
        return None
    if kern is not None:
        clamp = kern.epilogue.clamp
        if clamp is not None:
            op.attributes[CLAMP] = clamp_attr(*clamp)
        Rewriter.erase_op(kern)
    op.attributes[DIRECT] = StringAttr(reason)
    return reason


def channelwise(op: nn.ConvOp) -> bool:
    """A convolution the C runs as a depthwise one: one channel per group in
    and out (a single-channel convolution among them)."""
    c = nn.shape_of(op.input)[-1]
    return op.groups() == c == nn.shape_of(op.output)[-1]


def _row_width(op: nn.ConvOp) -> int:
    """The most output pixels of a row the op's band computes at once: the
    output's width (NHWC, or NWC in 1D), or its band buffer's where the band
    cuts the width (a 2D grid's tiles)."""
    width = nn.shape_of(op.results[0])[-2]
    band = op.parent_op()
    if not isinstance(band, loop.BandComputeOp) or len(band.outputs) != 1:
        return width
    out = band.outputs[0]
    held = out.owner.source if isinstance(out.owner, memref.SubviewOp) else out
    if isinstance(held.type, MemRefType):
        cols = held.type.get_shape()[-2]
        if 0 < cols < width:
            return cols
    return width


def state_depthwise(op: nn.ConvOp) -> None:
    """State a depthwise convolution's kernel (`rtile.depthwise`,
    `rtile.kernel.depthwise_plan`) for the target of its `rtile.target`
    (the running CPU's where it has none: gebp-tile names a depthwise
    convolution's target where its kernel is the CPU's, a Cortex-M's)."""
    op.attributes.pop(DEPTHWISE, None)
    if DIRECT in op.attributes:
        return
    label = op.attributes.get(TARGET)
    try:
        target = tg.get_target(label.data if isinstance(label, StringAttr) else "host")
    except ValueError as e:
        raise PassFailedException(f"lower-gebp: {describe(op)}: {TARGET}: {e}") from None
    taps = 1
    for d in nn.shape_of(op.weight)[1:-1]:
        taps *= d
    plan = rk.depthwise_plan(target, taps, op.is_quantized(), _row_width(op))
    op.attributes[DEPTHWISE] = depthwise_attr(plan)


@dataclass(frozen=True)
class LowerGebpPass(ModulePass):
    """Give every register-tiled matrix-product band its `rtile.kernel`."""

    name = "lower-gebp"

    winograd: bool = True
    """Convolutions that qualify run Winograd's F(4, 3) along the width
    (`rtile.pack_a "winograd"`); false: the direct window kernels."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not decide.holds_plan(op):
            raise PassFailedException(
                "lower-gebp: the module holds no loop-level plan; it lowers the matrix "
                "products of loop.band ops (run --lower-to-loops and --gebp-tile first)"
            )
        for site_op, site in list(decide.sites(op)):
            site_kernel(site_op, site, self.winograd)
            fuse_activation(site_op)
        for dw in list(decide.depthwise_ops(op)):
            if isinstance(dw, nn.ConvOp):
                fuse_clamp(dw)
        for o in list(decide.plan_ops(op)):
            if isinstance(o, nn.ConvOp | nn.GemmOp | nn.MatMulOp):
                state_direct(o)
            if isinstance(o, nn.ConvOp) and channelwise(o):
                state_depthwise(o)
            if isinstance(o, nn.AddOp):
                fuse_clamp(o)
        for lane_op in decide.lane_ops(op):  # a Cortex-M target's int8 Add / Sub and pools
            lane_op.attributes.pop(LANES, None)
            if TARGET in lane_op.attributes:
                lanes = decide.int8_lanes(lane_op, decide.site_target(lane_op))
                if lanes is not None:
                    lane_op.attributes[LANES] = StringAttr(lanes)


def tile_and_lower(module: ModuleOp, target: str = "host", winograd: bool = True) -> None:
    """`--gebp-tile=target=TARGET --lower-gebp` on a plan: the two passes as the
    pipeline runs them, for drivers that plan a model themselves (`tigris-run
    --backend c`, the benchmarks); `winograd`: the pass's option."""
    from tigris_ir.passes.gebp_tile import GebpTilePass

    ctx = Context()
    GebpTilePass(target=target).apply(ctx, module)
    LowerGebpPass(winograd=winograd).apply(ctx, module)
