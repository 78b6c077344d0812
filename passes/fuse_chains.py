"""`fuse-chains`: fuse the tile loops of consecutive tileable stages."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from tigris_ir.dialects import tile
from tigris_ir.plan.ir import (
    PlanOptions,
    ScopePlan,
    band_record,
    chains_in,
    match_stages,
    planned_scopes,
    stages_in,
    wrap,
)
from tigris_ir.plan.planner import ChainPlan


def _chain_band(c: ChainPlan) -> tile.BandAttr:
    return tile.BandAttr(c.tile_h, 0, c.num_tiles, c.halo_sides, c.peak)


def _untiled(sc: ScopePlan) -> bool:
    stages = stages_in(sc.block)
    return not stages or any(st.strategy is None for st in stages)


@dataclass(frozen=True)
class FuseChainsPass(PlanOptions, ModulePass):
    """Group runs of height-tileable stages into tile.chain ops (spec chain rules 1-4).

    Chains extend greedily, admit a residual Add of an earlier member's
    output when no conv or pool in between changes its rows, and split where
    the whole does not fit; the chain tile height comes from a binary search
    over the sum of every buffer with alignment padding. A chain with a halo
    is line-buffered: its buffers keep their overlap rows, so its input is
    read once. Runs tile-stages first when stages have no strategy yet.
    Bodies of `nn.if` and `nn.loop` get their own chains (`if0/then/c0`).
    """

    name = "fuse-chains"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from tigris_ir.passes.tile_stages import TileStagesPass

        scopes = self.scopes(op)
        if any(_untiled(sc) for sc in scopes):
            TileStagesPass(budget=scopes[0].budget).apply(ctx, op)
            scopes = planned_scopes(op, scopes[0].budget)
        for sc in scopes:
            plan = sc.plan
            assert plan is not None
            pairs = match_stages(sc.block, sc.view, plan)
            if chains_in(sc.block):
                continue  # already fused
            by_index = {sp.index: st for st, sp in pairs}
            for c in plan.chains:
                members = [by_index[i] for i in c.stages]
                for i in c.stages:
                    st, sp = by_index[i], plan.stages[i]
                    st.properties["strategy"] = StringAttr("strips")
                    st.properties["band"] = band_record(sp)
                wrap(
                    members,
                    lambda region, types, c=c, sc=sc: tile.ChainOp(
                        f"{sc.prefix}c{c.index}",
                        c.tile_h,
                        region,
                        types,
                        band=_chain_band(c),
                        line_buffered=c.line_buffered,
                    ),
                )
