"""The band rule of spec/tiling.md, checked on `tile.stage` and `tile.chain` IR.

Every operator in a tiled or chained stage has to read the band the stage
holds. We make that exact with row rates: walking back from the outputs, a
value read by an op whose output advances `r` rows per output row of the band
advances `r * stride` rows (a window op) or `r` rows (a pointwise op). If two
readers of one value need it at different rates, or a tiled stage hands out
values of different heights, some op reads rows the band does not hold:
`TIGRIS_ERR_TILE_BAND` for a stage, `TIGRIS_ERR_CHAIN_BAND` for a chain. A
chain member may read nothing from outside the chain but the chain's input
(and weights), and only the last member's outputs may leave the chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tigris_ir.plan.tiling_class import TilingClass

if TYPE_CHECKING:
    from tigris_ir.dialects.tile import ChainOp, StageOp

TILE_BAND = "TIGRIS_ERR_TILE_BAND"
CHAIN_BAND = "TIGRIS_ERR_CHAIN_BAND"

HEIGHT_TILED = ("strips", "grid")
_HEIGHT_CLASSES = (TilingClass.HALO, TilingClass.POINTWISE, TilingClass.WHOLE_ROWS)


def _label(op: Operation) -> str:
    return op.name


def _height(v: SSAValue) -> int | None:
    from tigris_ir.dialects import nn

    s = nn.shape_of(v)
    return s[1] if len(s) in (3, 4) else None


def _row_stride(op: Operation) -> int:
    from tigris_ir.dialects import nn

    if isinstance(op, nn.WindowOp):
        return op.strides()[0]
    return 1


def _compute_ops(ops: Iterable[Operation]) -> list[Operation]:
    from tigris_ir.dialects import nn

    return [op for op in ops if isinstance(op, nn.NNOp)]


def check_rates(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    code: str,
    where: str,
    alias: dict[SSAValue, SSAValue] | None = None,
) -> dict[SSAValue, Fraction]:
    """Row rates of every value the ops read; raise on the first inconsistency.

    `alias` maps a stage result to the value its `tile.yield` hands out, so that
    a chain is checked as one band across its members.
    """
    alias = alias or {}
    rate: dict[SSAValue, Fraction] = {}
    reader: dict[SSAValue, Operation] = {}
    for v in outputs:
        rate[v] = Fraction(1)
    for op in reversed(list(ops)):
        known = [rate[r] for r in op.results if r in rate]
        if not known:
            continue  # a value no output needs: nothing to hold for it
        out_rate = known[0]
        for r in op.results:
            if r in rate and rate[r] != out_rate:
                raise VerifyException(
                    f"{code}: in {where}, '{_label(op)}' hands out results at different row rates"
                )
        step = out_rate * _row_stride(op)
        for v in op.operands:
            from tigris_ir.dialects import nn

            v = alias.get(v, v)
            if isinstance(v.owner, nn.WeightOp) or _height(v) is None:
                continue
            if v in rate and rate[v] != step:
                other = reader.get(v)
                raise VerifyException(
                    f"{code}: in {where}, '{_label(op)}' reads a value at {step} rows per "
                    f"band row while '{_label(other) if other else 'an output'}' reads it at "
                    f"{rate[v]}: one of them reads rows the band does not hold"
                )
            rate[v] = step
            reader[v] = op
    return rate


def check_stage_band(stage: StageOp) -> None:
    """TIGRIS_ERR_TILE_BAND: a strip- or grid-tiled stage whose ops leave its band."""
    if stage.strategy_name not in HEIGHT_TILED:
        return
    where = f"tile.stage '{stage.sym_name.data}'"
    ops = _compute_ops(stage.body.block.ops)
    for op in ops:
        from tigris_ir.dialects import nn

        assert isinstance(op, nn.NNOp)
        if op.tiling() not in _HEIGHT_CLASSES:
            raise VerifyException(
                f"{TILE_BAND}: in {where}, '{op.name}' ({op.tiling().value}) cannot be cut "
                f"into height bands; strategy '{stage.strategy_name}' needs every op to "
                "tile along the height"
            )
    term = stage.body.block.last_op
    assert term is not None
    outs = list(term.operands)
    heights = {_height(v) for v in outs}
    if len(heights) != 1 or None in heights:
        raise VerifyException(
            f"{TILE_BAND}: in {where}, the outputs have heights "
            f"{sorted(h for h in heights if h is not None)}: one band cannot hold them all"
        )
    check_rates(ops, outs, TILE_BAND, where)


def check_chain_band(chain: ChainOp) -> None:
    """TIGRIS_ERR_CHAIN_BAND: members reading outside the chain or off its band."""
    where = f"tile.chain '{chain.sym_name.data}'"
    stages = chain.stages()
    produced: set[SSAValue] = set()
    for i, st in enumerate(stages):
        if st.strategy_name not in HEIGHT_TILED:
            raise VerifyException(
                f"{CHAIN_BAND}: in {where}, stage '{st.sym_name.data}' has strategy "
                f"'{st.strategy_name}', which does not tile along the height"
            )
        inner = set()
        for op in st.body.walk():
            inner.update(op.results)
        for op in st.body.walk():
            for v in op.operands:
                from tigris_ir.dialects import nn

                if v in inner or v in produced or isinstance(v.owner, nn.WeightOp):
                    continue
                if i > 0:
                    raise VerifyException(
                        f"{CHAIN_BAND}: in {where}, stage '{st.sym_name.data}' reads a "
                        "value from outside the chain; only the first stage may"
                    )
        produced.update(st.outputs)
    last = stages[-1]
    for st in stages[:-1]:
        for r in st.outputs:
            for use in r.uses:
                if chain.is_ancestor(use.operation) and not isinstance(
                    use.operation, type(chain.body.block.last_op)
                ):
                    continue
                raise VerifyException(
                    f"{CHAIN_BAND}: in {where}, an output of stage '{st.sym_name.data}' "
                    "leaves the chain; only the last stage's outputs may"
                )
    ops = [op for st in stages for op in _compute_ops(st.body.block.ops)]
    # a stage's yield is the identity: map member results to the yielded values
    alias: dict[SSAValue, SSAValue] = {}
    for st in stages:
        term = st.body.block.last_op
        assert term is not None
        for r, v in zip(st.outputs, term.operands):
            alias[r] = v
    outs = [alias.get(v, v) for v in last.outputs]
    check_rates(ops, outs, CHAIN_BAND, where, alias)
