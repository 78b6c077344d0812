"""`tile-stages`: choose how each stage runs and record its band."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from tigris_ir.plan.ir import PlanOptions, band_record, form_stage_ops, match_stages, stages_in


@dataclass(frozen=True)
class TileStagesPass(PlanOptions, ModulePass):
    """Give every stage its strategy: normal, strips, a 2D grid or another band kind.

    A stage that fits runs normally (a plan of one stage in place); one that
    does not is cut into horizontal strips with the receptive field's halo,
    the tile height found by binary search on band_bytes and evened out, or
    into a grid of 2D tiles when no strip fits or the grid loads fewer input
    bytes; matrix products, GlobalAveragePool, Resize, softmax-like,
    independent-axis, reshape and transposed-convolution stages get the band
    kinds of spec/tiling.md. Stages are formed first if there are none.

    The bodies of `nn.if` and `nn.loop` are tiled the same way, each as a model
    of its own; the control-flow op itself runs whole in its stage.
    """

    name = "tile-stages"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sc in self.scopes(op):
            assert sc.plan is not None
            if not stages_in(sc.block):
                form_stage_ops(sc.block, sc.view, sc.plan, sc.prefix)
            for st, sp in match_stages(sc.block, sc.view, sc.plan):
                # a stage the plan chains is recorded with the chain's band already
                st.properties["strategy"] = StringAttr(sp.strategy)
                if sp.tiled:
                    st.properties["band"] = band_record(sp)
                else:
                    st.properties.pop("band", None)
