"""Between the planner and the `tile` IR: the budget, the plan, and the rewrites.

The tiling passes share one plan per function and budget (`plan_of`), so the
figures the IR records are exactly those `tigris-analyze` reports. Each pass
materialises its part: stages, their strategies and band records, chains,
band rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn, tile
from tigris_ir.memory import format_bytes, parse_budget
from tigris_ir.nn_graph import GraphView, build_view
from tigris_ir.planner import Plan, StagePlan, plan

DEFAULT_BUDGET = 256 * 1024
BUDGET_ATTR = "tile.budget"


def budget_of(module: ModuleOp, option: str | int | None) -> int:
    """The pass option if given, else the module's `tile.budget`, else 256K."""
    if option not in (None, "", 0):
        try:
            value = parse_budget(option)  # type: ignore[arg-type]
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        module.attributes[BUDGET_ATTR] = IntegerAttr(value, i64)
        return value
    attr = module.attributes.get(BUDGET_ATTR)
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    return DEFAULT_BUDGET


def main_func(module: ModuleOp) -> func.FuncOp:
    fns = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if not fns:
        raise PassFailedException("the module has no func.func to plan")
    return next((f for f in fns if f.sym_name.data == "main"), fns[0])


_CACHE: dict[tuple[int, int], tuple[str, GraphView, Plan]] = {}


def _fingerprint(view: GraphView) -> str:
    g = view.graph
    return repr((g.nodes, sorted((k, v.shape, v.elem_bytes, v.kind) for k, v in g.tensors.items())))


def plan_of(fn: func.FuncOp, budget: int) -> tuple[GraphView, Plan]:
    """The plan of the function's `nn` ops under `budget` (memoised per graph)."""
    view = build_view(fn)
    key = (id(fn), budget)
    fp = _fingerprint(view)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == fp:
        return view, hit[2]
    p = plan(view.graph, budget)
    _CACHE[key] = (fp, view, p)
    return view, p


def require_fit(view: GraphView, p: Plan) -> None:
    """A plan that does not fit is the user's error: name the op and the need."""
    if p.fits:
        return
    assert p.failed_node is not None
    op = view.ops.get(p.failed_node)
    where = f"'{op.name}' ({p.failed_node})" if op is not None else f"'{p.failed_node}'"
    raise PassFailedException(
        f"{where} does not fit the budget of {p.budget} bytes ({format_bytes(p.budget)}) "
        f"even with one-row bands or 2D tiles; the smallest budget that fits it is "
        f"{p.failed_min_budget} bytes ({format_bytes(p.failed_min_budget or 0)})"
    )


def planned(module: ModuleOp, option: str | int | None) -> tuple[func.FuncOp, GraphView, Plan]:
    """What every tiling pass starts from: the function and its fitting plan."""
    budget = budget_of(module, option)
    fn = main_func(module)
    view, p = plan_of(fn, budget)
    require_fit(view, p)
    return fn, view, p


def hoist_weights(fn: func.FuncOp) -> None:
    """Weights are constants: move them to the top so stages can capture them."""
    block = fn.body.block
    weights = [op for op in block.ops if isinstance(op, nn.WeightOp)]
    anchor = next((op for op in block.ops if not isinstance(op, nn.WeightOp)), None)
    if anchor is None:
        return
    for w in weights:
        w.detach()
        block.insert_op_before(w, anchor)


def stages_in(fn: func.FuncOp) -> list[tile.StageOp]:
    return [op for op in fn.walk() if isinstance(op, tile.StageOp)]


def _outside_uses(ops: Sequence[Operation], inside: set[Operation]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for op in ops:
        for r in op.results:
            if any(u.operation not in inside and not _within(u.operation, inside) for u in r.uses):
                out.append(r)
    return out


def _within(op: Operation, inside: set[Operation]) -> bool:
    p = op.parent_op()
    while p is not None:
        if p in inside:
            return True
        p = p.parent_op()
    return False


def wrap(ops: Sequence[Operation], make) -> Operation:
    """Move consecutive ops of one block into a new region op built by `make`.

    `make(region, result_types)` builds the op; results are the values used
    after the wrapped ops, handed out through `tile.yield`.
    """
    inside = set(ops)
    escaping = _outside_uses(ops, inside)
    block = Block()
    region = Region(block)
    wrapper: Operation = make(region, [v.type for v in escaping])
    Rewriter.insert_op(wrapper, InsertPoint.before(ops[0]))
    for op in ops:
        op.detach()
        block.add_op(op)
    block.add_op(tile.YieldOp(*escaping))
    for v, r in zip(escaping, wrapper.results):
        for use in list(v.uses):
            if use.operation.parent_op() is wrapper or _within(use.operation, {wrapper}):
                continue
            use.operation.operands[use.index] = r
    return wrapper


def form_stage_ops(fn: func.FuncOp, view: GraphView, p: Plan) -> list[tile.StageOp]:
    """Wrap the plan's stages; strategy and record are set by `tile-stages`."""
    hoist_weights(fn)
    stages: list[tile.StageOp] = []
    for s in p.stages:
        ops = [view.ops[n] for n in s.nodes]
        st = wrap(ops, lambda region, types, s=s: tile.StageOp(f"s{s.index}", None, region, types))
        assert isinstance(st, tile.StageOp)
        stages.append(st)
    return stages


def match_stages(fn: func.FuncOp, view: GraphView, p: Plan) -> list[tuple[tile.StageOp, StagePlan]]:
    """Pair the function's stages with the plan's; they must be the same partition."""
    ir = stages_in(fn)
    pairs: list[tuple[tile.StageOp, StagePlan]] = []
    names = {id(op): n for n, op in view.ops.items()}
    if len(ir) != len(p.stages):
        raise PassFailedException(
            f"the function has {len(ir)} stages but the plan under {p.budget} bytes has "
            f"{len(p.stages)}; stages must come from form-stages with the same budget"
        )
    for st, sp in zip(ir, p.stages):
        got = tuple(names[id(op)] for op in st.body.block.ops if isinstance(op, nn.NNOp))
        if got != sp.nodes:
            raise PassFailedException(
                f"tile.stage '{st.sym_name.data}' holds {', '.join(got)} but the plan's "
                f"stage {sp.index} holds {', '.join(sp.nodes)}; stages must come from "
                "form-stages with the same budget"
            )
        pairs.append((st, sp))
    return pairs


def band_record(sp: StagePlan) -> tile.BandAttr:
    return tile.BandAttr(sp.tile_h or 1, sp.tile_w, sp.num_tiles, sp.halo_sides, sp.peak)
