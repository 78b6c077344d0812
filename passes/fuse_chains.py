"""`fuse-chains`: fuse the tile loops of consecutive tileable stages."""

from __future__ import annotations

from dataclasses import dataclass

from tigris_ir.dialects import tile
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from tigris_ir.plan_ir import (
    band_record,
    match_stages,
    planned,
    wrap,
)
from tigris_ir.planner import ChainPlan


def _chain_band(c: ChainPlan) -> tile.BandAttr:
    return tile.BandAttr(c.tile_h, 0, c.num_tiles, c.halo_sides, c.peak)


@dataclass(frozen=True)
class FuseChainsPass(ModulePass):
    """Group runs of height-tileable stages into tile.chain ops (spec chain rules 1-4).

    Chains extend greedily, admit a residual Add of an earlier member's
    output when no conv or pool in between changes its rows, and split where
    the whole does not fit; the chain tile height comes from a binary search
    over the sum of every buffer with alignment padding. A chain with a halo
    is line-buffered: its buffers keep their overlap rows, so its input is
    read once. Runs tile-stages first when stages have no strategy yet.
    """

    name = "fuse-chains"

    budget: int | str = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from tigris_ir.passes.tile_stages import TileStagesPass

        fn, view, plan = planned(op, self.budget)
        pairs = (
            match_stages(fn, view, plan)
            if any(isinstance(o, tile.StageOp) for o in fn.walk())
            else []
        )
        if not pairs or any(st.strategy is None for st, _ in pairs):
            TileStagesPass(budget=plan.budget).apply(ctx, op)
            pairs = match_stages(fn, view, plan)
        if any(isinstance(o, tile.ChainOp) for o in fn.walk()):
            return  # already fused
        by_index = {sp.index: st for st, sp in pairs}
        for c in plan.chains:
            members = [by_index[i] for i in c.stages]
            for i in c.stages:
                st, sp = by_index[i], plan.stages[i]
                st.properties["strategy"] = StringAttr("strips")
                st.properties["band"] = band_record(sp)
            wrap(
                members,
                lambda region, types, c=c: tile.ChainOp(
                    f"c{c.index}",
                    c.tile_h,
                    region,
                    types,
                    band=_chain_band(c),
                    line_buffered=c.line_buffered,
                ),
            )
