"""Between the planner and the `tile` IR: the budget, the plan, and the rewrites.

The tiling passes share one plan per function and budget (`plan_of`), so the
figures the IR records are exactly those `tigris-analyze` reports. Each pass
materialises its part: stages, their strategies and band records, chains,
band rows. A function holding `nn.if` / `nn.loop` is a tree of graphs
(`plan_tree`): every body is planned as a model of its own, and each pass
materialises every graph of the tree the same way (`planned_scopes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn, tile
from tigris_ir.plan.memory import align, format_bytes, parse_budget
from tigris_ir.plan.nn_graph import (
    BodyNeed,
    GraphView,
    build_body_view,
    build_view,
    control_flow_ops,
    scope_ops,
)
from tigris_ir.plan.planner import Plan, StagePlan, min_budget, normal_peak, plan

DEFAULT_BUDGET = 256 * 1024
BUDGET_ATTR = "tile.budget"
SLOW_BUDGET_ATTR = "tile.slow_budget"
"""The slow-memory budget in bytes (absent: unbounded; 0: no slow memory)."""
BODY_SLOW_BUDGET = 0
"""The slow budget of every If / Loop body: a body runs in its node's
workspace of the fast arena with no slow memory of its own. Its inputs and
outputs are the node's operands and results, which the enclosing stage holds
(`held`): the body plan streams them (`stream_input`, `stream_output`), so
they are resident nowhere in its own plan, and its loads and spills move
bytes within the fast arena (no slow traffic)."""
STREAM_INPUT_ATTR = "tile.stream_input"
"""Present: the model inputs arrive in bands of rows through a callback."""


STREAM_OUTPUT_ATTR = "tile.stream_output"
"""Present: the model outputs leave in bands of rows through a callback."""

REREAD_INPUT_ATTR = "tile.reread_input"
"""Present (with `tile.stream_input`): the streamed inputs may be asked
again, in windows of rows and columns (`Plan.reread_input`)."""


def reread_input_of(module: ModuleOp, option: bool) -> bool:
    """The pass option if set (recorded on the module, which then streams its
    inputs too), else the module's `tile.reread_input`."""
    if option:
        module.attributes[REREAD_INPUT_ATTR] = UnitAttr()
        module.attributes[STREAM_INPUT_ATTR] = UnitAttr()
        return True
    return REREAD_INPUT_ATTR in module.attributes


def stream_output_of(module: ModuleOp, option: bool) -> bool:
    """The pass option if set (recorded on the module), else the module's
    `tile.stream_output`."""
    if option:
        module.attributes[STREAM_OUTPUT_ATTR] = UnitAttr()
        return True
    return STREAM_OUTPUT_ATTR in module.attributes


def stream_input_of(module: ModuleOp, option: bool) -> bool:
    """The pass option if set (recorded on the module), else the module's
    `tile.stream_input`."""
    if option:
        module.attributes[STREAM_INPUT_ATTR] = UnitAttr()
        return True
    return STREAM_INPUT_ATTR in module.attributes


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


def slow_budget_of(module: ModuleOp, option: str | int | None) -> int | None:
    """The pass option if given, else the module's `tile.slow_budget`, else
    None (unbounded). The option is parsed like the fast budget; 0 is allowed
    and means no slow memory."""
    if option not in (None, ""):
        try:
            value = parse_budget(option, zero_ok=True)  # type: ignore[arg-type]
        except ValueError as e:
            raise PassFailedException(f"slow-budget: {e}") from None
        module.attributes[SLOW_BUDGET_ATTR] = IntegerAttr(value, i64)
        return value
    attr = module.attributes.get(SLOW_BUDGET_ATTR)
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    return None


def main_func(module: ModuleOp) -> func.FuncOp:
    fns = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if not fns:
        raise PassFailedException("the module has no func.func to plan")
    return next((f for f in fns if f.sym_name.data == "main"), fns[0])


_CACHE: dict[tuple[int, int, int | None, bool, bool, bool], tuple[str, Plan]] = {}


def _fingerprint(view: GraphView) -> str:
    g = view.graph
    return repr((g.nodes, sorted((k, v.shape, v.elem_bytes, v.kind) for k, v in g.tensors.items())))


def _plan_cached(
    key: int,
    view: GraphView,
    budget: int,
    cache: bool,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    reread_input: bool = False,
) -> Plan:
    fp = _fingerprint(view)
    ck = (key, budget, slow_budget, stream_input, stream_output, reread_input)
    hit = _CACHE.get(ck) if cache else None
    if hit is not None and hit[0] == fp:
        return hit[1]
    p = plan(
        view.graph,
        budget,
        slow_budget=slow_budget,
        stream_input=stream_input,
        stream_output=stream_output,
        reread_input=reread_input,
    )
    if cache:
        _CACHE[ck] = (fp, p)
    return p


@dataclass(frozen=True)
class ScopePlan:
    """The plan of one graph of a function: its top level, or an If / Loop body.

    The accounting of control flow (spec: "If and While hold nothing in fast
    memory themselves: each subgraph is planned and tiled as a model of its
    own under the same budget"):

    * "the same budget" is the one fast memory of the device. A body is a
      model of its own: its inputs are its block arguments and the outer
      values it reads, its outputs what it yields; its plan counts them like a
      model's (in its own arena when it runs in place, else loaded from and
      spilled to slow memory, which its slow figures count);
    * while a body runs, the enclosing stage still holds the If / Loop node's
      operands and results (`held`: the aligned bytes of the node's non-constant
      inputs, captured values included, and of its results; a loop passes its
      carried values from one trip to the next through its result buffers). So
      a body is planned under the budget less `held`, and in the enclosing
      graph the node needs `held` plus the largest body peak: it produces a
      workspace tensor of that peak which only the node itself uses
      (`nn_graph.BodyNeed`). A node with its bodies fits exactly when this sum
      does, and the enclosing planner places it like any op that runs whole;
    * MACs of a node are those of its largest branch (If) or of its body times
      the trip limit (Loop; once when the condition alone ends it), per run.
    """

    path: str
    """"" for the function, `if0/then`, `loop0/body`, `if0/then/loop0/body`."""
    block: Block
    view: GraphView
    plan: Plan | None
    """None for a body with no ops, or when `held` leaves nothing of the budget."""
    budget: int
    owner: str | None = None
    """The If / Loop node in the enclosing graph's view, e.g. `if_2`."""
    held: int = 0
    trips: int | None = 1
    """Runs per run of the enclosing graph: 1 for a branch, the loop's limit
    (None: the condition alone ends the loop)."""
    bodies: tuple[ScopePlan, ...] = field(default=())
    error: str | None = None

    @property
    def prefix(self) -> str:
        return f"{self.path}/" if self.path else ""

    @property
    def own_fits(self) -> bool:
        return self.error is None and (self.plan is None or self.plan.fits)

    @property
    def fits(self) -> bool:
        return self.own_fits and all(b.fits for b in self.bodies)

    @property
    def peak(self) -> int:
        return self.plan.peak if self.plan is not None else 0

    @property
    def macs(self) -> int:
        return self.plan.macs if self.plan is not None else 0

    def walk(self) -> Iterator[ScopePlan]:
        """This graph, then every body, depth first."""
        yield self
        for b in self.bodies:
            yield from b.walk()


def _held(view: GraphView, node: str) -> int:
    """Aligned bytes of a node's non-constant inputs and outputs."""
    g = view.graph
    info = g.nodes[g.node_index(node)]
    names = dict.fromkeys((*info.inputs, *info.outputs))
    return sum(align(g.tensors[n].nbytes) for n in names if not g.tensors[n].is_const)


def _plan_scope(
    block: Block,
    budget: int,
    path: str,
    build: Callable[[Mapping[Operation, BodyNeed] | None], GraphView],
    cache: bool,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    reread_input: bool = False,
) -> tuple[GraphView, Plan | None, tuple[ScopePlan, ...]]:
    """Plan one graph after its bodies, whose peaks its control-flow nodes hold."""
    view = build(None)
    cf = control_flow_ops(block)
    if not cf:
        top = path == ""
        p = None
        if top or view.graph.nodes:
            p = _plan_cached(
                id(block), view, budget, cache, slow_budget, stream_input, stream_output,
                reread_input,
            )
        return view, p, ()
    names = {id(op): n for n, op in view.ops.items()}
    counts: dict[str, int] = {}
    bodies: list[ScopePlan] = []
    needs: dict[Operation, BodyNeed] = {}
    prefix = f"{path}/" if path else ""
    for op in cf:
        kind = op.name.removeprefix("nn.")
        label = f"{prefix}{kind}{counts.get(kind, 0)}"
        counts[kind] = counts.get(kind, 0) + 1
        node = names[id(op)]
        held = _held(view, node)
        trips = op.trips() if isinstance(op, nn.LoopOp) else 1
        subs = [
            _body_plan(
                region,
                budget - held,
                f"{label}/{name}",
                node,
                held,
                trips,
                budget,
                cache,
            )
            for name, region in op.bodies()
        ]
        body_macs = [s.macs for s in subs]
        macs = max(body_macs) if isinstance(op, nn.IfOp) else body_macs[0] * (trips or 1)
        needs[op] = BodyNeed(max(s.peak for s in subs), macs)
        bodies.extend(subs)
    view = build(needs)
    p = None
    if path == "" or view.graph.nodes:
        p = _plan_cached(
            id(block), view, budget, cache, slow_budget, stream_input, stream_output, reread_input
        )
    return view, p, tuple(bodies)


def _body_plan(
    region: Region,
    budget: int,
    path: str,
    owner: str,
    held: int,
    trips: int | None,
    outer_budget: int,
    cache: bool,
) -> ScopePlan:
    """A body's plan: a model of its own in one arena (no slow memory), the
    If / Loop node's workspace in the enclosing arena."""
    block = region.block
    if budget <= 0:
        view = build_body_view(region)
        return ScopePlan(
            path,
            block,
            view,
            None,
            budget,
            owner,
            held,
            trips,
            error=(
                f"'{owner}' holds {held} bytes of operands and results, which leaves "
                f"nothing of the {outer_budget}-byte budget to its bodies"
            ),
        )
    view, p, subs = _plan_scope(
        block,
        budget,
        path,
        lambda needs: build_body_view(region, needs),
        cache,
        BODY_SLOW_BUDGET,
        stream_input=True,
        # a Loop's next trip reads its carried values from the node's results:
        # the body keeps what it yields until the trip ends
        stream_output=not isinstance(region.parent_op(), nn.LoopOp),
    )
    return ScopePlan(path, block, view, p, budget, owner, held, trips, subs)


def plan_tree(
    fn: func.FuncOp,
    budget: int,
    *,
    cache: bool = True,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    reread_input: bool = False,
) -> ScopePlan:
    """The plan of the function and, recursively, of every If and Loop body,
    each under the fast budget and the slow one (None: unbounded). With
    `stream_input` the function's inputs arrive as rows (a body's do not),
    with `reread_input` as well in windows asked as often as needed."""
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    view, p, bodies = _plan_scope(
        fn.body.block,
        budget,
        "",
        lambda needs: build_view(fn, needs),
        cache,
        slow_budget,
        stream_input,
        stream_output,
        reread_input and stream_input,
    )
    return ScopePlan("", fn.body.block, view, p, budget, bodies=bodies)


def plan_of(
    fn: func.FuncOp,
    budget: int,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
) -> tuple[GraphView, Plan]:
    """The plan of the function's `nn` ops under `budget` (memoised per graph);
    an If or Loop node holds its bodies' peak (see `ScopePlan`)."""
    tree = plan_tree(
        fn, budget, slow_budget=slow_budget, stream_input=stream_input, stream_output=stream_output
    )
    assert tree.plan is not None
    return tree.view, tree.plan


def tree_min_budget(fn: func.FuncOp) -> int:
    """The smallest budget under which the function and all its bodies fit.

    Without control flow this is the planner's `min_budget`; with it, a
    bisection over `plan_tree(...).fits` (a larger budget never fits less),
    from a budget at which every tensor of every graph is live at once.
    """
    if not any(isinstance(op, nn.ControlFlowOp) for op in fn.walk()):
        return min_budget(build_view(fn).graph)
    return _bisect(lambda b: plan_tree(fn, b, cache=False).fits, _all_bytes(fn, [build_view(fn)]))


def body_min_budget(region: Region) -> int:
    """The smallest budget under which an If / Loop body fits as a model of its own."""
    view = build_body_view(region)
    if not view.graph.nodes:
        return 0
    owner = region.parent_op()
    name = owner.name if owner is not None else "body"

    def ok(budget: int) -> bool:
        return _body_plan(region, budget, name, name, 0, 1, budget, False).fits

    return _bisect(ok, _all_bytes(region, [view]))


def _bisect(ok: Callable[[int], bool], hi: int) -> int:
    hi = max(1, hi)
    while not ok(hi):
        if hi > 1 << 40:
            raise ValueError("no budget below 1 TiB fits")
        hi *= 2
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def _all_bytes(root: Operation | Region, views: list[GraphView]) -> int:
    """Every tensor of every graph under `root`, aligned: all live at once."""
    for op in root.walk():
        if isinstance(op, nn.ControlFlowOp):
            views.extend(build_body_view(r) for _, r in op.bodies())
    return sum(align(t.nbytes) for v in views for t in v.graph.tensors.values() if not t.is_const)


def scope_need(tree: ScopePlan, sc: ScopePlan) -> int | None:
    """The smallest total budget that the first failure in `sc` needs: what the
    enclosing control flow holds plus the failing op's (or body's) own need."""
    above = tree.budget - sc.budget
    if sc.error is not None:  # the node's every body needs its share at once
        parent = next(p for p in tree.walk() if sc in p.bodies)
        regions = [b.block.parent for b in parent.bodies if b.owner == sc.owner]
        return above + max(body_min_budget(r) for r in regions if r is not None)
    region = sc.block.parent
    if sc.path and region is not None:  # a body in one arena: its own smallest budget
        return above + body_min_budget(region)
    if sc.plan is not None and not sc.plan.fits and sc.plan.failed_min_budget is not None:
        return above + sc.plan.failed_min_budget
    return None


def first_failure(tree: ScopePlan) -> ScopePlan | None:
    """The innermost graph that does not fit (a body before its enclosing graph,
    whose control-flow node fails because of it)."""
    for b in tree.bodies:
        hit = first_failure(b)
        if hit is not None:
            return hit
    return None if tree.own_fits else tree


def layer_by_layer_peak(fn: func.FuncOp) -> int:
    """The peak of running every op whole, one after the other, an If or Loop
    holding its largest body's own layer-by-layer peak."""

    def needs(block: Block) -> dict[Operation, BodyNeed]:
        return {
            op: BodyNeed(max(body_peak(r) for _, r in op.bodies()), 0)
            for op in control_flow_ops(block)
        }

    def peak(view: GraphView) -> int:
        g = view.graph
        return normal_peak(g, 0, len(g.nodes)) if g.nodes else 0

    def body_peak(region: Region) -> int:
        return peak(build_body_view(region, needs(region.block)))

    return peak(build_view(fn, needs(fn.body.block)))


def node_words(view: GraphView, node: str) -> str:
    """A graph node in a diagnostic: the model node it was imported from, as
    the model names it (`node 3 'conv1' (Conv)`), else the nn op and the
    node's name."""
    op = view.ops.get(node)
    if op is None:
        return f"'{node}'"
    source = nn.model_node_of(op)
    return source if source is not None else f"'{op.name}' ({node})"


def require_fit(view: GraphView, p: Plan) -> None:
    """A plan that does not fit is the user's error: name the op and the need."""
    if p.fits:
        return
    assert p.failed_node is not None
    where = node_words(view, p.failed_node)
    if p.min_single is not None:
        raise PassFailedException(
            f"{where} does not fit {p.budget_pair()}: {p.failure}; {p.smallest_budgets()}"
        )
    raise PassFailedException(
        f"{where} does not fit the budget of {p.budget} bytes ({format_bytes(p.budget)}) "
        f"{_even_with(p, body=False)}; the smallest budget that fits it is "
        f"{p.failed_min_budget} bytes ({format_bytes(p.failed_min_budget or 0)})"
    )


def _even_with(p: Plan, body: bool) -> str:
    """What the failed node was tried in: bands of whole rows where it reads
    or writes a stream (a body's operands and results are one), else also
    2D tiles."""
    if not p.failed_whole_rows:
        return "even with one-row bands or 2D tiles"
    if body:
        return "even with one-row bands (a body reads its operands in whole rows)"
    return "even with one-row bands (whole rows of a streamed input or output)"


def require_tree_fit(tree: ScopePlan) -> None:
    """`require_fit` for every graph of the tree; a body's message says where
    it is and what its enclosing node holds."""
    sc = first_failure(tree)
    if sc is None:
        return
    if not sc.path:
        assert sc.plan is not None
        require_fit(sc.view, sc.plan)
    need = scope_need(tree, sc) or 0
    above = tree.budget - sc.budget
    if sc.error is not None:
        raise PassFailedException(
            f"{sc.path.rsplit('/', 1)[0]}: {sc.error}; the smallest budget that fits it is "
            f"{need} bytes "
            f"({format_bytes(need)})"
        )
    assert sc.plan is not None
    p = sc.plan
    where = node_words(sc.view, p.failed_node or "")
    raise PassFailedException(
        f"{where} in {sc.path} does not fit the {p.budget} bytes the budget of {tree.budget} "
        f"leaves to the body ({above} bytes are held by the enclosing control flow) "
        f"{_even_with(p, body=True)}; the smallest budget that fits it is {need} bytes "
        f"({format_bytes(need)})"
    )


def planned_tree(
    module: ModuleOp,
    option: str | int | None,
    slow_option: str | int | None = None,
    stream_option: bool = False,
    send_option: bool = False,
    reread_option: bool = False,
) -> ScopePlan:
    """The fitting plan tree of the module's function under the budgets."""
    budget = budget_of(module, option)
    slow = slow_budget_of(module, slow_option)
    reread = reread_input_of(module, reread_option)
    stream = stream_input_of(module, stream_option)
    send = stream_output_of(module, send_option)
    tree = plan_tree(
        main_func(module),
        budget,
        slow_budget=slow,
        stream_input=stream,
        stream_output=send,
        reread_input=reread,
    )
    require_tree_fit(tree)
    return tree


def planned_scopes(
    module: ModuleOp,
    option: str | int | None,
    slow_option: str | int | None = None,
    stream_option: bool = False,
    send_option: bool = False,
    reread_option: bool = False,
) -> list[ScopePlan]:
    """Every graph the tiling passes materialise, the function's first; a body
    without ops has nothing to tile."""
    tree = planned_tree(module, option, slow_option, stream_option, send_option, reread_option)
    return [sc for sc in tree.walk() if sc.plan is not None]


@dataclass(frozen=True)
class PlanOptions:
    """The options of the passes that plan (`form-stages`, `tile-stages`,
    `fuse-chains`, `backprop-heights`, `lower-to-loops`): each recorded on the
    module, so that the passes after the first plan the same."""

    budget: int | str = 0
    """Bytes of fast memory (262144, 256K or 1M; 0: the module's `tile.budget`,
    else 256K)."""
    slow_budget: int | str = ""
    """Bytes of slow memory (empty: unbounded, else the module's `tile.slow_budget`;
    0: none, every tensor in the fast arena)."""
    stream_input: bool = False
    """The model inputs arrive in bands of rows through a callback: `"stream"`
    memrefs that only band loads read (recorded as `tile.stream_input`)."""
    stream_output: bool = False
    """The model outputs nothing reads leave in bands of rows through a
    callback: `"stream"` memrefs that only band spills write (recorded as
    `tile.stream_output`)."""
    reread_input: bool = False
    """The streamed model inputs may be asked again, in windows of rows and
    columns (a frame buffer or flash); implies `stream_input` (recorded as
    `tile.reread_input`)."""

    def tree(self, module: ModuleOp) -> ScopePlan:
        """`planned_tree` under these options: the module's plan tree, which
        fits (else `PassFailedException`)."""
        return planned_tree(
            module,
            self.budget,
            self.slow_budget,
            self.stream_input,
            self.stream_output,
            self.reread_input,
        )

    def scopes(self, module: ModuleOp) -> list[ScopePlan]:
        """`planned_scopes` under these options: the graphs of `tree` that the
        tiling passes materialise."""
        return [sc for sc in self.tree(module).walk() if sc.plan is not None]


def planned(module: ModuleOp, option: str | int | None) -> tuple[func.FuncOp, GraphView, Plan]:
    """What every tiling pass starts from: the function and its fitting plan."""
    tree = planned_tree(module, option)
    assert tree.plan is not None
    return main_func(module), tree.view, tree.plan


def _block(scope: func.FuncOp | Block) -> Block:
    return scope.body.block if isinstance(scope, func.FuncOp) else scope


def hoist_weights(scope: func.FuncOp | Block) -> None:
    """Weights are constants: move them to the top so stages can capture them."""
    block = _block(scope)
    weights = [op for op in block.ops if isinstance(op, nn.WeightOp)]
    anchor = next((op for op in block.ops if not isinstance(op, nn.WeightOp)), None)
    if anchor is None:
        return
    for w in weights:
        w.detach()
        block.insert_op_before(w, anchor)


def stages_in(scope: func.FuncOp | Block) -> list[tile.StageOp]:
    """The stages of one graph (chained or not), not those of If / Loop bodies."""
    out: list[tile.StageOp] = []
    for op in _block(scope).ops:
        if isinstance(op, tile.StageOp):
            out.append(op)
        elif isinstance(op, tile.ChainOp):
            out.extend(op.stages())
    return out


def chains_in(scope: func.FuncOp | Block) -> list[tile.ChainOp]:
    return [op for op in _block(scope).ops if isinstance(op, tile.ChainOp)]


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


def form_stage_ops(
    scope: func.FuncOp | Block, view: GraphView, p: Plan, prefix: str = ""
) -> list[tile.StageOp]:
    """Wrap the plan's stages; strategy and record are set by `tile-stages`.
    A body's stages are named after its path (`if0/then/s0`)."""
    hoist_weights(scope)
    stages: list[tile.StageOp] = []
    for s in p.stages:
        ops = [view.ops[n] for n in s.nodes]
        st = wrap(
            ops,
            lambda region, types, s=s: tile.StageOp(f"{prefix}s{s.index}", None, region, types),
        )
        assert isinstance(st, tile.StageOp)
        stages.append(st)
    return stages


def match_stages(
    scope: func.FuncOp | Block, view: GraphView, p: Plan
) -> list[tuple[tile.StageOp, StagePlan]]:
    """Pair the graph's stages with the plan's; they must be the same partition."""
    ir = stages_in(scope)
    pairs: list[tuple[tile.StageOp, StagePlan]] = []
    names = {id(op): n for n, op in view.ops.items()}
    if len(ir) != len(p.stages):
        raise PassFailedException(
            f"the function has {len(ir)} stages but the plan under {p.budget} bytes has "
            f"{len(p.stages)}; stages must come from form-stages with the same budget"
        )
    for st, sp in zip(ir, p.stages):
        got = tuple(names[id(op)] for op in scope_ops(st.body.block))
        if got != sp.nodes:
            raise PassFailedException(
                f"tile.stage '{st.sym_name.data}' holds {', '.join(got)} but the plan's "
                f"stage {sp.index} holds {', '.join(sp.nodes)}; stages must come from "
                "form-stages with the same budget"
            )
        pairs.append((st, sp))
    return pairs


def band_record(sp: StagePlan) -> tile.BandAttr:
    return tile.BandAttr(
        sp.tile_h or 1, sp.tile_w, sp.num_tiles, sp.halo_sides, sp.peak, sp.channel_group
    )
