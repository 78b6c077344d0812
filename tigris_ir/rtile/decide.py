"""Writing register-tile decisions onto the sites of a module.

The `gebp-tile` and `lower-gebp` passes decide (geometries from the model, a
request or a timing; kernel plans from `kernel.plan`) and record their decisions
here, as the sites' `rtile.*` attributes. `decide_defaults` is the same two
steps with the model's defaults for the host, for the sites of a plan that
reaches the C printer without them (`tigris-run --backend c`, a plan printed
without `--gebp-tile`): it adds attributes only where none are, so whatever the
passes chose stays.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from tigris_ir.dialects.rtile import COVER, GEOM, KERNEL, TARGET, CoverAttr, GeomAttr, KernelAttr
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.sites import Site, gemm_site


def holds_plan(module: ModuleOp) -> bool:
    """Whether a function of the module is a loop-level plan (`loop.plan`)."""
    return any(isinstance(op, func.FuncOp) and "loop.plan" in op.attributes for op in module.ops)


def sites(module: ModuleOp) -> Iterator[tuple[Operation, Site]]:
    """Every matrix-product site of the module; in a module holding a plan, only
    those of its plan functions (their untiled references stay as they are)."""
    plan = holds_plan(module)
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or (plan and "loop.plan" not in fn.attributes):
            continue
        for op in fn.walk():
            site = gemm_site(op)
            if site is not None:
                yield op, site


def file_of(target: tg.Target, site: Site) -> tg.Target:
    """The register file a site's geometry is fitted to: the target's own, or
    that of its int8 instruction."""
    return target.int8_file() if site.dtype == "int8" else target


def target_label(target: tg.Target) -> str:
    """The preset a resolved target is (its own name for "host"), for `rtile.target`."""
    if target.name == "host":
        for preset in tg.PRESETS.values():
            if preset == replace(target, name=preset.name):
                return preset.name
    return target.name


def set_geometry(op: Operation, site: Site, g: rt.Geometry | None, label: str) -> None:
    """Record a site's geometry, its cover and the target (none: clear them)."""
    for key in (GEOM, COVER, TARGET, KERNEL):
        op.attributes.pop(key, None)
    if g is None:
        return
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


def set_kernel(op: Operation, site: Site) -> rk.KernelPlan | None:
    """Plan and record the kernel of a site that has a geometry."""
    g = geometry_of(op)
    if g is None:
        op.attributes.pop(KERNEL, None)
        return None
    p = rk.plan(site_target(op), g, site.k, site.dtype == "int8", site.packing)
    op.attributes[KERNEL] = KernelAttr.from_plan(p)
    return p


def decide_defaults(module: ModuleOp, target_name: str = "host") -> None:
    """The model's default geometry and kernel plan on every site that has none."""
    for op, _ in sites(module):
        decide_op(op, target_name)


def decide_op(op: Operation, target_name: str = "host") -> None:
    """The model's default geometry and kernel plan on one op, if it is a site
    without them."""
    site = gemm_site(op)
    if site is None:
        return
    if GEOM not in op.attributes:
        target = tg.get_target(target_name)
        g = rt.default(file_of(target, site), site.m, site.n)
        set_geometry(op, site, g, target_label(target))
    if GEOM in op.attributes and KERNEL not in op.attributes:
        set_kernel(op, site)
