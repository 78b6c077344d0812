"""Writing register-tile decisions onto the sites of a module.

The `gebp-tile` pass decides geometries (from the model, a request or a
timing) and records them here, as the sites' `rtile.*` attributes; a site no
tile fits keeps only its `rtile.target` (the pass has seen it: its band runs
the direct loops). `lower-gebp` reads them back (`geometry_of`, `site_target`)
to build the sites' kernels.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from tigris_ir.dialects.rtile import COVER, GEOM, TARGET, CoverAttr, GeomAttr, kernel_of
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.sites import Site, gemm_site


def holds_plan(module: ModuleOp) -> bool:
    """Whether a function of the module is a loop-level plan (`loop.plan`)."""
    return any(isinstance(op, func.FuncOp) and "loop.plan" in op.attributes for op in module.ops)


def plan_ops(module: ModuleOp) -> Iterator[Operation]:
    """Every op of the module's plan functions (of every function where the
    module holds no plan: their untiled references stay as they are)."""
    plan = holds_plan(module)
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and (not plan or "loop.plan" in fn.attributes):
            yield from fn.walk()


def sites(module: ModuleOp) -> Iterator[tuple[Operation, Site]]:
    """Every matrix-product site of the module's plan functions (`plan_ops`)."""
    for op in plan_ops(module):
        site = gemm_site(op)
        if site is not None:
            yield op, site


def depthwise_ops(module: ModuleOp) -> Iterator[Operation]:
    """The depthwise convolutions of a module's plan functions (every
    function where the module holds no plan)."""
    from tigris_ir.dialects import nn

    for op in plan_ops(module):
        if isinstance(op, nn.ConvOp) and op.groups() > 1:
            c = nn.shape_of(op.input)[-1]
            if op.groups() == c == nn.shape_of(op.output)[-1]:
                yield op


def int8_adds(module: ModuleOp) -> Iterator[Operation]:
    """The quantized Add and Sub ops of a module's plan functions (every
    function where the module holds no plan): the elementwise ops a Cortex-M
    target prints lanes for where it has them."""
    from tigris_ir.dialects import nn

    for op in plan_ops(module):
        if isinstance(op, nn.AddOp | nn.SubOp) and op.is_quantized():
            yield op


def int8_pools(module: ModuleOp) -> Iterator[Operation]:
    """The quantized max, average and global average pools of a module's
    plan functions (every function where the module holds no plan)."""
    from tigris_ir.dialects import nn

    for op in plan_ops(module):
        if isinstance(op, nn.MaxPoolOp | nn.AveragePoolOp | nn.GlobalAveragePoolOp) and (
            op.is_quantized()
        ):
            yield op


def lane_ops(module: ModuleOp) -> Iterator[Operation]:
    """The ops a Cortex-M target may give SIMD lanes (`rtile.lanes`): the
    int8 Add / Sub and pools."""
    yield from int8_adds(module)
    yield from int8_pools(module)


LANE_TAPS = 255
"""The most taps an average pool's lanes sum (and positions a global one's
DSP kernel sums along a row): the DSP kernels sum bytes in 16-bit halves
(SXTAB16), Helium's average pool in int16 lanes; 255 int8 or uint8 terms
stay inside them."""


def _fixed_path(op: Operation) -> bool:
    """Whether a quantized op runs its integer-only definition (the
    reference's "fixed" path: neither an integer op nor one computing on its
    stored values of one quantization)."""
    from tigris_ir.dialects import nn

    assert isinstance(op, nn.NNOp)
    if op.quant_kind() is nn.QuantKind.INTEGER:
        return False
    if op.quant_kind() is nn.QuantKind.EXACT and op._same_quantization():
        return False
    return op.FIXED and nn.requant_fixed(op)


def int8_lanes(op: Operation, target: tg.Target) -> str | None:
    """The SIMD unit (`Target.int8_lanes`) an int8 Add / Sub or pool of the
    target runs on, where its kernel exists for the op: an Add or Sub, an
    average pool of at most `LANE_TAPS` taps, or a global average pool (on
    the DSP extension: rows of at most `LANE_TAPS` positions) in fixed
    point; a max pool whose input and output share one quantization; 8-bit
    types throughout, two spatial axes for the pools. None: the portable
    loop."""
    import numpy as np

    from tigris_ir.dialects import nn

    lanes = target.int8_lanes
    if lanes is None or not isinstance(op, nn.NNOp):
        return None
    if any(np.dtype(nn.dtype_of(v)).itemsize != 1 for v in (*op.operands, *op.results)):
        return None
    if isinstance(op, nn.MaxPoolOp):
        same = op.quant_kind() is nn.QuantKind.EXACT and op._same_quantization()
        return lanes if same and len(nn.shape_of(op.input)) == 4 else None
    if not _fixed_path(op):
        return None
    if isinstance(op, nn.AveragePoolOp):
        taps = int(np.prod(op.kernel()))
        return lanes if taps <= LANE_TAPS and len(nn.shape_of(op.input)) == 4 else None
    if isinstance(op, nn.GlobalAveragePoolOp):
        shape = nn.shape_of(op.operands[0])
        rows_fit = lanes == "mve" or shape[-2] <= LANE_TAPS  # DSP: 16-bit sums along a row
        return lanes if len(shape) == 4 and rows_fit else None
    return lanes if isinstance(op, nn.AddOp | nn.SubOp) else None


def file_of(target: tg.Target, site: Site) -> tg.Target:
    """The register file a site's geometry is fitted to: that of the target's
    float32 FMA (`Target.float_file`) or of its int8 instruction."""
    return target.int8_file() if site.dtype == "int8" else target.float_file()


def target_label(target: tg.Target) -> str:
    """The preset a resolved target is (its own name for "host"), for `rtile.target`."""
    return tg.label(target)


def set_geometry(op: Operation, site: Site, g: rt.Geometry | None, label: str) -> None:
    """Record a site's geometry, its cover and the target (no geometry: the
    target alone); a kernel made for an earlier geometry is dropped."""
    for key in (GEOM, COVER, TARGET):
        op.attributes.pop(key, None)
    old = kernel_of(op)
    if old is not None:
        old.detach()
        old.erase()
    if g is not None:
        op.attributes[GEOM] = GeomAttr.from_geometry(g)
        op.attributes[COVER] = CoverAttr.from_cover(rt.cover(g, site.m, site.n))
    op.attributes[TARGET] = StringAttr(label)


def geometry_of(op: Operation) -> rt.Geometry | None:
    attr = op.attributes.get(GEOM)
    return attr.geometry if isinstance(attr, GeomAttr) else None


def site_target(op: Operation) -> tg.Target:
    """The target a site's geometry was fitted to (its `rtile.target`)."""
    label = op.attributes.get(TARGET)
    return tg.get_target(label.data if isinstance(label, StringAttr) else "host")
