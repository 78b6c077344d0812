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


DIALECTS: dict[str, Callable[[], Dialect]] = {"nn": _nn, "rtile": _rtile, "tile": _tile}

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}

TARGETS: dict[str, Callable[[], type[Target]]] = {}

TIGRIS = Universe(all_dialects=DIALECTS, all_passes=PASSES, all_targets=TARGETS)
