"""`backprop-heights`: every op of a tiled stage or chain gets its band rows."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.plan.ir import PlanOptions, match_stages

ROWS_ATTR = "tile.rows"


@dataclass(frozen=True)
class BackpropHeightsPass(PlanOptions, ModulePass):
    """Annotate each op of a tiled stage or chain with `tile.rows`, its output band.

    Starting from the last output's tile height, walk back through the band:
    input_tile_h = output_tile_h * stride + max((kernel - 1) * dilation + 1 - stride, 0)
    for every window op, unchanged through pointwise ops, the largest where
    branches meet. Needs stages with a strategy (run tile-stages first). The
    stages of `nn.if` and `nn.loop` bodies get their rows the same way.
    """

    name = "backprop-heights"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sc in self.scopes(op):
            plan = sc.plan
            assert plan is not None
            pairs = match_stages(sc.block, sc.view, plan)
            if any(st.strategy is None for st, _ in pairs):
                raise PassFailedException(
                    "backprop-heights needs tiled stages: run tile-stages (and fuse-chains) first"
                )
            names = {id(o): n for n, o in sc.view.ops.items()}
            for st, sp in pairs:
                if st.strategy_name in ("normal", "inplace", "whole"):
                    continue
                rows = sp.op_rows
                if sp.chain is not None:
                    rows = plan.chains[sp.chain].op_rows
                for inner in st.body.block.ops:
                    if isinstance(inner, nn.NNOp) and names[id(inner)] in rows:
                        inner.attributes[ROWS_ATTR] = IntegerAttr(rows[names[id(inner)]], i64)
