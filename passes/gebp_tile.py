"""`gebp-tile`: register-tile geometries for the matrix products of a graph.

Every matrix product of the `nn` graph is a GEBP site of m rows, n columns and
a k-long contraction: `nn.gemm` and 2D `nn.matmul` directly, a 1x1 `nn.conv`
with m = N*H*W pixels (channels-last rows), n = Cout and k = Cin, and any other
non-depthwise convolution as an implicit GEMM (im2col rows) with n = Cout/group
and k = kh*kw*Cin/group. The pass attaches the geometry `register_tile.default`
picks for the site (`rtile.geom`), its decomposition (`rtile.cover`) and the
target it was fitted to (`rtile.target`). Depthwise convolutions are no matrix
product and are left alone.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import CoverAttr, GeomAttr
from tigris_ir.rtile import autotune as tune
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg

GEOM = "rtile.geom"
COVER = "rtile.cover"
TARGET = "rtile.target"
REQUEST = "rtile.request"
"""A geometry the user asks for on one op: honoured when `check` accepts it."""

SiteKind = Literal["gemm", "matmul", "1x1 conv", "conv"]


@dataclass(frozen=True)
class Site:
    """One matrix product: C[m, n] = A[m, k] @ B[k, n] per group."""

    kind: SiteKind
    m: int
    n: int
    k: int
    dtype: tune.Dtype
    """The operand element type the product runs in (quantized ui8 counts as int8)."""


def _dtype(op: Operation) -> tune.Dtype:
    return "float32" if nn.dtype_of(op.operands[0]) == "float32" else "int8"


def gemm_site(op: Operation) -> Site | None:
    """The GEBP site of an op, or None if it is no (2D) matrix product."""
    if isinstance(op, nn.GemmOp):
        m, n, k = op.dims()
        return Site("gemm", m, n, k, _dtype(op))
    if isinstance(op, nn.MatMulOp):
        sa, sb = nn.shape_of(op.a), nn.shape_of(op.b)
        if len(sa) != 2 or len(sb) != 2:
            return None
        return Site("matmul", sa[0], sb[1], sa[1], _dtype(op))
    if isinstance(op, nn.ConvOp):
        if op.is_depthwise():
            return None
        ys, ws = nn.shape_of(op.output), nn.shape_of(op.weight)
        pixels = 1
        for d in ys[:-1]:
            pixels *= d
        taps = 1
        for d in ws[1:-1]:
            taps *= d
        kind: SiteKind = "1x1 conv" if taps == 1 else "conv"
        return Site(kind, pixels, ws[0] // op.groups(), taps * ws[-1], _dtype(op))
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


def resolve_target(name: str, registers: int = 0) -> tg.Target:
    """The named target (with `registers` vector registers if > 0), or a failure."""
    try:
        target = tg.get_target(name)
    except ValueError as e:
        raise PassFailedException(f"gebp-tile: {e}") from None
    if registers > 0:
        target = replace(target, vector_registers=registers)
    if rt.rn_cap(target) < 1:
        floor = rt.resident_floor(rt.Geometry(rt.rm_cap, 1, 1))
        raise PassFailedException(
            f"gebp-tile: target '{name}' has {target.vector_registers} vector "
            f"registers, too few for any register tile: a {rt.rm_cap}-row tile of "
            f"one vector column keeps {floor} resident (resident_floor of "
            f"{rt.show(rt.Geometry(rt.rm_cap, 1, 1))})"
        )
    return target


def target_label(target: tg.Target) -> str:
    """The preset a resolved target is (its own name for "host"), for `rtile.target`."""
    if target.name == "host":
        for preset in tg.PRESETS.values():
            if replace(preset, name="host") == target:
                return preset.name
    return target.name


def _requested(op: Operation) -> GeomAttr | None:
    attr = op.attributes.get(REQUEST)
    if attr is None:
        return None
    if not isinstance(attr, GeomAttr):
        raise PassFailedException(
            f"gebp-tile: {describe(op)}: {REQUEST} must be a #rtile.geom<...>, got {attr}"
        )
    return attr


@dataclass(frozen=True)
class GebpTilePass(ModulePass):
    """Attach register-tile geometries (#rtile.geom) to gemm, matmul and conv sites.

    Options: `target` (a preset of `tigris_ir.rtile.targets` or "host"), `registers`
    (override the target's vector register count), `autotune` (time the
    candidates on this machine and keep the fastest), `cache` (the autotune
    cache file), `rm_twin` (also time the two-row twin of a four-row default).
    """

    name = "gebp-tile"

    target: str = "host"
    registers: int = 0
    autotune: bool = False
    cache: str = ""
    rm_twin: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target, self.registers)
        label = target_label(target)
        config = rt.TileConfig(autotune_register_tile_rm_twin=self.rm_twin)
        cache = None
        if self.autotune:
            path = self.cache or str(tune.default_cache_path())
            cache = tune.TuneCache(Path(path))
        for site_op in list(op.walk()):
            site = gemm_site(site_op)
            if site is None:
                continue
            g = self._choose(site_op, site, target, config, cache)
            for key in (GEOM, COVER, TARGET):
                site_op.attributes.pop(key, None)
            if g is None:
                continue
            site_op.attributes[GEOM] = GeomAttr.from_geometry(g)
            site_op.attributes[COVER] = CoverAttr.from_cover(rt.cover(g, site.m, site.n))
            site_op.attributes[TARGET] = StringAttr(label)

    def _choose(
        self,
        op: Operation,
        site: Site,
        target: tg.Target,
        config: rt.TileConfig,
        cache: tune.TuneCache | None,
    ) -> rt.Geometry | None:
        dflt = rt.default(target, site.m, site.n)
        request = _requested(op)
        if request is not None:
            g = request.geometry
            error = rt.check(target, site.m, site.n, g)
            if error is None:
                return g
            fallback = (
                f"falls back to the default {rt.show(dflt)}"
                if dflt is not None
                else "no default tile fits the site either; it keeps no register tile"
            )
            warn(
                self.name,
                op,
                f"declined the requested geometry {rt.show(g)} of this {site.kind} "
                f"({site.m}x{site.n}x{site.k}): {error}; {fallback}",
            )
            return dflt
        if not self.autotune or dflt is None:
            return dflt
        assert cache is not None
        try:
            choice = tune.autotune(
                target, site.m, site.n, site.k, site.dtype, cache=cache, config=config
            )
        except tune.CacheError as e:
            raise PassFailedException(f"gebp-tile: {e}") from None
        if choice is None:
            return dflt
        if choice.source == "untimed":
            warn(self.name, op, f"autotune kept the default {rt.show(dflt)}: {choice.note}")
        return choice.geometry
