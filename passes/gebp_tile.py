"""`gebp-tile`: register-tile geometries for the matrix products of a graph.

Every matrix product of the `nn` graph is a GEBP site of m rows, n columns and
a k-long contraction: `nn.gemm` and 2D `nn.matmul` directly, a 1x1 `nn.conv`
with m = N*H*W pixels (channels-last rows), n = Cout and k = Cin, and any other
non-depthwise convolution as an implicit GEMM (im2col rows) with n = Cout/group
and k = kh*kw*Cin/group. The pass attaches the geometry `register_tile.default`
picks for the site (`rtile.geom`), its decomposition (`rtile.cover`) and the
target it was fitted to (`rtile.target`). Depthwise convolutions are no matrix
product; for a Cortex-M target they get the `rtile.target` alone, which selects
the CPU's depthwise kernel (DSP or Helium) in the C, and so do its quantized
Add and Sub ops (Helium lanes where the CPU has MVE). A Cortex-M target whose
int8 instruction caps the tile's rows (`Target.int8_rows`: Helium's VMLADAVA)
gets the model's default with its rows capped (`rtile.model.target_default`).

On a loop-level plan (after `lower-to-loops`) the sites are the `nn` ops in the
bodies of `loop.band` ops, and m is the rows of the largest band the op
computes (its output memref), which is what the kernel is called on. int8
sites are fitted to the register file of the target's int8 instruction
(`Target.int8_file`: zmm for VNNI, ymm for AVX2's pmaddwd).

`autotune=true` times each site as its kernel will run it (`timed_shape`): a
convolution that `lower-gebp` runs as Winograd's F(4, 3) (its default) is
timed as one of its six products, a row per tile of four output pixels over
the kernel rows' channels, not as the direct product of kh*kw*Cin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import COVER, GEOM, REQUEST, TARGET, GeomAttr, kernel_of
from tigris_ir.passes.lower_gebp import winograd_channels
from tigris_ir.rtile import autotune as tune
from tigris_ir.rtile import decide
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.sites import Site, describe, gemm_site, warn

__all__ = ["COVER", "GEOM", "REQUEST", "TARGET", "GebpTilePass", "Site", "describe", "gemm_site"]

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


_GEOMETRY = re.compile(r"rm(\d+)\W*rn(\d+)\W*lanes(\d+)")


def parse_geometry(text: str) -> rt.Geometry:
    """A geometry in the display form, the separators free: "rm4 rn2 lanes8",
    "rm4-rn2-lanes8" (a command line's) or "rm4rn2lanes8"; else a failure."""
    m = _GEOMETRY.fullmatch(text.strip())
    if m is None:
        raise PassFailedException(
            f"gebp-tile: geometry '{text}' is not of the form rm<rows>-rn<vectors>-lanes<lanes> "
            "(e.g. geometry=rm4-rn2-lanes8)"
        )
    try:
        GeomAttr(*(int(v) for v in m.groups())).verify()
    except VerifyException as e:
        raise PassFailedException(f"gebp-tile: geometry '{text}': {e}") from None
    return rt.Geometry(*(int(v) for v in m.groups()))


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

    Options: `target` (a preset of `tigris_ir.rtile.targets`, a Cortex-M among
    them, or "host"; tigris-opt's `--mcpu` gives it where the option is not), `registers`
    (override the target's vector register count), `autotune` (time the
    candidates on this machine and keep the fastest), `cache` (the autotune
    cache file), `rm_twin` (also time the two-row twin of a four-row default),
    `geometry` (a geometry requested for every site that carries no
    `rtile.request` of its own, e.g. `rm2-rn2-lanes8`: honoured or declined
    site by site, as a request is).
    """

    name = "gebp-tile"

    target: str = "host"
    registers: int = 0
    autotune: bool = False
    cache: str = ""
    rm_twin: bool = False
    geometry: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target, self.registers)
        asked = parse_geometry(self.geometry) if self.geometry else None
        label = decide.target_label(target)
        config = rt.TileConfig(autotune_register_tile_rm_twin=self.rm_twin)
        cache = None
        if self.autotune:
            path = self.cache or str(tune.default_cache_path())
            cache = tune.TuneCache(Path(path))
        for site_op, site in list(decide.sites(op)):
            g = self._choose(site_op, site, decide.file_of(target, site), config, cache, asked)
            old = kernel_of(site_op)
            if old is not None and old.epilogue.clamp is not None:
                same = decide.geometry_of(site_op) == g and site_op.attributes.get(
                    TARGET
                ) == StringAttr(label)
                if same:  # its kernel, whose epilogue holds the activation, stays
                    continue
                raise PassFailedException(
                    f"gebp-tile: {describe(site_op)}: its kernel holds a fused activation "
                    "(lower-gebp removed the activation's band), so its tile cannot change; "
                    "run gebp-tile before lower-gebp"
                )
            decide.set_geometry(site_op, site, g, label)
        if target.mcu is not None:  # the Cortex-M depthwise kernels are the CPU's
            for dw in decide.depthwise_ops(op):
                dw.attributes[TARGET] = StringAttr(label)
            for lane_op in decide.lane_ops(op):  # and its int8 Add / Sub and pool lanes
                lane_op.attributes[TARGET] = StringAttr(label)

    def _choose(
        self,
        op: Operation,
        site: Site,
        target: tg.Target,
        config: rt.TileConfig,
        cache: tune.TuneCache | None,
        asked: rt.Geometry | None,
    ) -> rt.Geometry | None:
        request = _requested(op)
        if site.dtype not in target.tiled:
            if request is not None or asked is not None:
                g = request.geometry if request is not None else asked
                assert g is not None
                warn(
                    self.name,
                    op,
                    f"declined the requested geometry {rt.show(g)} of this {site.kind}: "
                    f"target '{target.name}' prints no register-tiled {site.dtype} kernel; "
                    "it keeps the direct loops",
                )
            return None
        dflt = rt.target_default(target, site.m, site.n, site.dtype == "int8")
        if request is not None or asked is not None:
            g = request.geometry if request is not None else asked
            assert g is not None
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
        m, k = timed_shape(op, site, target)
        try:
            choice = tune.autotune(target, m, site.n, k, site.dtype, cache=cache, config=config)
        except tune.CacheError as e:
            raise PassFailedException(f"gebp-tile: {e}") from None
        if choice is None:
            return dflt
        if choice.source == "untimed":
            warn(self.name, op, f"autotune kept the default {rt.show(dflt)}: {choice.note}")
        return choice.geometry


def timed_shape(op: Operation, site: Site, target: tg.Target) -> tuple[int, int]:
    """The rows and contraction of the product autotune times for a site: its
    own, or for a convolution `lower-gebp` runs as Winograd's F(4, 3) by
    default (`winograd_channels`), one of its six products: a row per tile of
    four output pixels, over the kernel rows' channels (kh * Cin)."""
    channels = winograd_channels(op, site, target)
    if channels is None or not isinstance(op, nn.ConvOp):
        return site.m, site.k
    return -(-site.m // 4), op.kernel()[0] * channels
