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
