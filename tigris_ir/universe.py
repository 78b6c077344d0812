"""TiGrIS's dialects, passes and targets, published to every xDSL driver.

Loaded through the `xdsl.universe` entry point, so plain `xdsl-opt` sees them
(`xdsl-opt -p tile-stages`); `tigris-opt` registers them directly as well.
Everything is imported lazily: a driver pays only for what it uses.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


def _nn() -> Dialect:
    from tigris_ir.dialects.nn import NN

    return NN


def _rtile() -> Dialect:
    from tigris_ir.dialects.rtile import RTile

    return RTile


def _tile() -> Dialect:
    from tigris_ir.dialects.tile import Tile

    return Tile


def _loop() -> Dialect:
    from tigris_ir.dialects.loop import Loop

    return Loop


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "nn": _nn,
    "rtile": _rtile,
    "tile": _tile,
    "loop": _loop,
}


def _gebp_tile() -> type[ModulePass]:
    from tigris_ir.passes.gebp_tile import GebpTilePass

    return GebpTilePass


def _lower_gebp() -> type[ModulePass]:
    from tigris_ir.passes.lower_gebp import LowerGebpPass

    return LowerGebpPass


def _form_stages() -> type[ModulePass]:
    from tigris_ir.passes.form_stages import FormStagesPass

    return FormStagesPass


def _tile_stages() -> type[ModulePass]:
    from tigris_ir.passes.tile_stages import TileStagesPass

    return TileStagesPass


def _fuse_chains() -> type[ModulePass]:
    from tigris_ir.passes.fuse_chains import FuseChainsPass

    return FuseChainsPass


def _backprop_heights() -> type[ModulePass]:
    from tigris_ir.passes.backprop_heights import BackpropHeightsPass

    return BackpropHeightsPass


def _lower_to_loops() -> type[ModulePass]:
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass

    return LowerToLoopsPass


def _boundary() -> type[ModulePass]:
    from tigris_ir.passes.boundary import BoundaryPass

    return BoundaryPass


def _requant() -> type[ModulePass]:
    from tigris_ir.passes.requant import RequantPass

    return RequantPass


def _plan_arena() -> type[ModulePass]:
    from tigris_ir.passes.plan_arena import PlanArenaPass

    return PlanArenaPass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "boundary": _boundary,
    "requant": _requant,
    "form-stages": _form_stages,
    "tile-stages": _tile_stages,
    "fuse-chains": _fuse_chains,
    "backprop-heights": _backprop_heights,
    "gebp-tile": _gebp_tile,
    "lower-gebp": _lower_gebp,
    "lower-to-loops": _lower_to_loops,
    "plan-arena": _plan_arena,
}


def _c_target() -> type[Target]:
    from tigris_ir.backend.c.network import CTarget

    return CTarget


TARGETS: dict[str, Callable[[], type[Target]]] = {
    "c": _c_target,
}

TIGRIS = Universe(all_dialects=DIALECTS, all_passes=PASSES, all_targets=TARGETS)
