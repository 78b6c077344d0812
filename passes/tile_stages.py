"""`tile-stages`: choose how each stage runs and record its band."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from tigris_ir.plan.ir import band_record, form_stage_ops, match_stages, planned_scopes, stages_in


@dataclass(frozen=True)
class TileStagesPass(ModulePass):
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

    budget: int | str = 0
    slow_budget: int | str = ""
    """Bytes of slow memory (empty: unbounded, else the module's `tile.slow_budget`;
    0: none, every tensor in the fast arena)."""
    stream_input: bool = False
    """The model inputs arrive in bands of rows through a callback (recorded
    on the module as `tile.stream_input`)."""
    stream_output: bool = False
    """The model outputs leave in bands of rows through a callback (recorded
    on the module as `tile.stream_output`)."""
    reread_input: bool = False
    """The streamed model inputs may be asked again, in windows of rows and
    columns (a frame buffer or flash); implies `stream_input` (recorded on
    the module as `tile.reread_input`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sc in planned_scopes(
            op,
            self.budget,
            self.slow_budget,
            self.stream_input,
            self.stream_output,
            self.reread_input,
        ):
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
