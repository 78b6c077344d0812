"""Property tests: every plan of a random graph runs as planned, or the planner
says it does not fit.

Random `nn` graphs of convolutions (kernels 1 to 7, strides 1 and 2,
dilations, depthwise, 1D), max and average pools, residual Adds, channel
Concats, Resizes and an optional GlobalAveragePool, in float32 and int8,
under random budgets. For each, the loop level either runs the plan with

  * output == the untiled reference (int8 bit-exact, float32 to 1e-5),
  * measured fast peak == planned peak <= budget (arena of exactly the peak),
  * measured slow peak, reads and writes == planned,

or the plan does not fit, and then nothing runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue

from tigris_ir.dialects import nn
from tigris_ir.interp.loop_ir import lower_plan, run_loop_module
from tigris_ir.loops.schedule import LineBufferGap, PlanRunError, TiledUnit, schedule
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, min_budget, min_single_budget, plan
from tigris_ir.reference.executor import run_function

# ---------------------------------------------------------------------------
# A small builder of nn graphs


@dataclass
class Net:
    """An `nn` function under construction, float32 or int8 (QDQ-free: the
    graph input is already quantized)."""

    int8: bool
    rng: np.random.Generator
    block: Block
    weights: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    values: list[SSAValue] = field(default_factory=list[SSAValue])

    def quant(self) -> nn.QuantAttr:
        return nn.QuantAttr(float(self.rng.uniform(0.03, 0.08)), int(self.rng.integers(-8, 9)))

    def ttype(self, shape: tuple[int, ...], quant: nn.QuantAttr | None = None) -> TensorType:
        if not self.int8:
            return nn.tensor_type(shape, np.float32)
        return nn.tensor_type(shape, np.int8, quant or self.quant())

    def weight(self, array: np.ndarray) -> SSAValue:
        name = f"w{len(self.weights)}"
        self.weights[name] = array
        op = nn.WeightOp(name, nn.tensor_type(array.shape, array.dtype))
        self.block.add_op(op)
        return op.result

    def emit(
        self,
        cls: type[nn.NNOp],
        operands: list[SSAValue],
        props: dict[str, Attribute],
        quant: nn.QuantAttr | None = None,
    ) -> SSAValue | None:
        """The op's result, or None when its shape is empty or invalid."""
        probe = cls.create(
            operands=operands,
            properties=dict(props),
            result_types=[nn.tensor_type([1], np.float32)],
        )
        try:
            shapes = probe.infer_shapes()
        except Exception:
            return None
        finally:
            probe.erase(safe_erase=False)
        shape = tuple(shapes[0])
        if min(shape) < 1 or math.prod(shape) > 40000:
            return None
        op = cls.create(
            operands=operands, properties=dict(props), result_types=[self.ttype(shape, quant)]
        )
        op.verify()
        self.block.add_op(op)
        self.values.append(op.results[0])
        return op.results[0]


def _conv(net: Net, x: SSAValue, spec: dict[str, int]) -> SSAValue | None:
    shape = nn.shape_of(x)
    n = len(shape) - 2
    cin = shape[-1]
    group = cin if spec["dw"] else 1
    cout = cin if spec["dw"] else spec["cout"]
    k = (spec["k"],) * n if n == 1 else (spec["k"], spec["k2"])
    pads = tuple(spec["pads"][: 2 * n])
    fan = math.prod(k) * (cin // group)
    if net.int8:
        w = net.rng.integers(-127, 128, (cout, *k, cin // group)).astype(np.int8)
        b = net.rng.integers(-500, 500, (cout,)).astype(np.int32)
        ws = (np.full(cout, 1.0 / (40 * math.sqrt(fan)))).astype(np.float32)
        operands = [x, net.weight(w), net.weight(b), net.weight(ws)]
    else:
        w = (net.rng.standard_normal((cout, *k, cin // group)) / math.sqrt(fan)).astype(np.float32)
        b = (net.rng.standard_normal(cout) * 0.1).astype(np.float32)
        operands = [x, net.weight(w), net.weight(b)]
    props: dict[str, Attribute] = {
        "kernel": nn.ints_prop(k),
        "strides": nn.ints_prop((spec["s"],) * n),
        "dilations": nn.ints_prop((spec["d"],) * n),
        "pads": nn.ints_prop(pads),
        "group": nn.int_prop(group),
    }
    return net.emit(nn.ConvOp, operands, props)


def _pool(net: Net, x: SSAValue, spec: dict[str, int], avg: bool) -> SSAValue | None:
    n = len(nn.shape_of(x)) - 2
    k = spec["pk"]
    pads = tuple(min(p, k - 1) for p in spec["pads"][: 2 * n])
    props: dict[str, Attribute] = {
        "kernel": nn.ints_prop((k,) * n),
        "strides": nn.ints_prop((spec["ps"],) * n),
        "pads": nn.ints_prop(pads),
        "ceil_mode": nn.int_prop(spec["ceil"]),
    }
    if avg:
        props["count_include_pad"] = nn.int_prop(spec["cip"])
        return net.emit(nn.AveragePoolOp, [x], props)
    return net.emit(nn.MaxPoolOp, [x], props, nn.quant_of(x))


def _resize(net: Net, x: SSAValue, spec: dict[str, int]) -> SSAValue | None:
    shape = nn.shape_of(x)
    out = (shape[0], *(d * 2 for d in shape[1:-1]), shape[-1])
    if math.prod(out) > 20000:
        return None
    mode = "nearest" if spec["nearest"] or net.int8 and spec["cip"] else "linear"
    ctm = ("half_pixel", "asymmetric", "align_corners")[spec["ctm"]]
    props: dict[str, Attribute] = {
        "mode": StringAttr(mode),
        "coordinate_transformation_mode": StringAttr(ctm),
    }
    probe = nn.ResizeOp.create(
        operands=[x], properties=props, result_types=[net.ttype(out, nn.quant_of(x))]
    )
    probe.verify()
    net.block.add_op(probe)
    net.values.append(probe.results[0])
    return probe.results[0]


def build(spec: Spec) -> tuple[ModuleOp, dict[str, np.ndarray], list[np.ndarray]]:
    """The function of a drawn spec, its weights and a seeded input."""
    rng = np.random.default_rng(spec.seed)
    net = Net(spec.int8, rng, Block())
    in_type = net.ttype(spec.shape)
    net.block = Block(arg_types=[in_type])
    x: SSAValue = net.block.args[0]
    net.values.append(x)
    for layer in spec.layers:
        kind = layer["kind"]
        y: SSAValue | None = None
        if kind == "conv":
            y = _conv(net, x, layer)
        elif kind in ("max", "avg"):
            y = _pool(net, x, layer, kind == "avg")
        elif kind == "relu":
            y = net.emit(nn.ReluOp, [x], {})
        elif kind in ("add", "concat"):
            same = [
                v
                for v in net.values[:-1]
                if nn.shape_of(v)[:-1] == nn.shape_of(x)[:-1]
                and (kind == "concat" or nn.shape_of(v) == nn.shape_of(x))
            ]
            if same:
                other = same[layer["pick"] % len(same)]
                if kind == "add":
                    y = net.emit(nn.AddOp, [x, other], {})
                else:
                    q = nn.quant_of(x) if layer["cip"] else None
                    y = net.emit(
                        nn.ConcatOp, [x, other], {"axis": nn.int_prop(len(nn.shape_of(x)) - 1)}, q
                    )
        elif kind == "resize":
            y = _resize(net, x, layer)
        if y is not None:
            x = y
    if x is net.block.args[0]:  # a graph needs one op at least
        y = net.emit(nn.ReluOp, [x], {})
        assert y is not None
        x = y
    outs = [x]
    if spec.gap:
        g = net.emit(nn.GlobalAveragePoolOp, [x], {})
        if g is not None:
            outs = [g]
    if spec.two_outputs and len(net.values) > 2 and net.values[-2] not in outs:
        extra = net.values[len(net.values) // 2]
        if spec.head:  # a head of its own from mid-graph, which nothing reads
            extra = net.emit(nn.ReluOp, [extra], {}) or extra
        outs.append(extra)
    net.block.add_op(func.ReturnOp(*outs))
    fn = func.FuncOp(
        "main", FunctionType.from_lists([in_type], [o.type for o in outs]), Region(net.block)
    )
    module = ModuleOp([fn])
    module.verify()
    if spec.int8:
        inp = rng.integers(-128, 128, spec.shape).astype(np.int8)
    else:
        inp = rng.standard_normal(spec.shape).astype(np.float32)
    return module, net.weights, [inp]


# ---------------------------------------------------------------------------
# Strategies


@dataclass(frozen=True)
class Spec:
    int8: bool
    shape: tuple[int, ...]
    layers: tuple[dict[str, int], ...]
    gap: bool
    two_outputs: bool
    seed: int
    budget_frac: float
    head: bool = False
    """With `two_outputs`: the second output is a Relu of the mid-graph value
    (nothing reads it) rather than the value itself (read later)."""


KINDS = ("conv", "conv", "conv", "max", "avg", "add", "concat", "resize", "relu")


@st.composite
def layers(draw: st.DrawFn) -> dict[str, int]:
    kind = draw(st.sampled_from(KINDS))
    k = draw(st.integers(1, 7))
    return {
        "kind": kind,  # type: ignore[dict-item]
        "k": k,
        "k2": draw(st.sampled_from([k, 1, 3])),
        "s": draw(st.sampled_from([1, 1, 2])),
        "d": draw(st.sampled_from([1, 1, 2, 3])),
        "dw": draw(st.booleans()),
        "cout": draw(st.integers(1, 8)),
        "pads": draw(st.lists(st.integers(0, 3), min_size=4, max_size=4)),
        "pk": draw(st.integers(2, 3)),
        "ps": draw(st.integers(1, 2)),
        "ceil": draw(st.integers(0, 1)),
        "cip": draw(st.integers(0, 1)),
        "nearest": draw(st.booleans()),
        "ctm": draw(st.integers(0, 2)),
        "pick": draw(st.integers(0, 7)),
    }


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    rank = draw(st.sampled_from([4, 4, 4, 3]))
    if rank == 4:
        shape = (1, draw(st.integers(3, 20)), draw(st.integers(2, 14)), draw(st.integers(1, 6)))
    else:
        shape = (1, draw(st.integers(4, 48)), draw(st.integers(1, 6)))
    return Spec(
        draw(st.booleans()),
        shape,
        tuple(draw(st.lists(layers(), min_size=1, max_size=6))),
        draw(st.integers(0, 3)) == 0,
        draw(st.integers(0, 4)) == 0,
        draw(st.integers(0, 2**31 - 1)),
        draw(st.floats(0.0, 1.0)),
    )


# ---------------------------------------------------------------------------
# The equalities


def check_run(
    module: ModuleOp, weights: dict[str, np.ndarray], inputs: list[np.ndarray], p: Plan
) -> None:
    """The three equalities, or nothing runs when the plan does not fit."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    view = build_view(fn)
    if not p.fits:
        assert p.failed_node is not None and p.failed_min_budget is not None
        assert p.failed_min_budget > p.budget
        with pytest.raises(PlanRunError, match="does not fit"):
            schedule(view, p)
        return
    try:
        # the plan as loop IR (lower-to-loops of this plan, gebp-tile,
        # lower-gebp, plan-arena placing and verifying it)
        lowered = lower_plan(module, p)
    except LineBufferGap:
        # the planner's line buffers read rows no tile computes or that were
        # dropped (tests/test_loop_level.py pins a case): nothing runs
        event("plan refused: its line buffers read rows never computed or dropped")
        return
    res = run_loop_module(lowered, weights, inputs)
    ref = run_function(fn, weights, inputs)
    for r, y in zip(ref, res.outputs, strict=True):
        assert y.dtype == r.dtype and y.shape == r.shape
        if r.dtype == np.float32:
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * scale + 1e-30)
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == p.peak <= p.budget
    assert s.fast_peak == p.peak
    assert s.fast_high <= p.peak
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    # one tile-loop trip per tile of the plan's schedule
    assert s.tiles == sum(len(u.tiles) for u in schedule(view, p).units if isinstance(u, TiledUnit))


def budget_of(fn: func.FuncOp, frac: float) -> int:
    """A budget from 90% of the smallest that fits up to the whole graph."""
    g = build_view(fn).graph
    lo = max(64, int(min_budget(g) * 0.9))
    hi = max(lo + 1, sum(align(t.nbytes) for t in g.tensors.values() if not t.is_const))
    return int(lo * (hi / lo) ** frac)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(specs())
def test_random_plans_run_as_planned(spec: Spec) -> None:
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    budget = budget_of(fn, spec.budget_frac)
    check_run(module, weights, inputs, plan(build_view(fn).graph, budget))


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(specs(), st.integers(0, 3))
def test_random_plans_at_tight_budgets(spec: Spec, step: int) -> None:
    """Budgets at and just above the smallest that fits: the most tiles, the
    deepest chains, 2D grids and sub-row bands."""
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    budget = min_budget(g) + step * 48
    check_run(module, weights, inputs, plan(g, budget))


def check_pair_run(
    module: ModuleOp,
    weights: dict[str, np.ndarray],
    inputs: list[np.ndarray],
    p: Plan,
    slow: int | None,
    stream: bool,
    stream_output: bool = False,
    reread: bool = False,
) -> None:
    """A plan under a budget pair, lowered and run at the loop level with the
    same pair: the reference output, the planned fast peak, a slow peak
    within the slow budget (none allocated at 0) and the planned traffic and
    input rows (and output rows, per input and output); or it does not fit
    and names its smallest budgets."""
    if not p.fits:
        assert p.failed_node is not None
        if slow is not None:
            assert p.min_single is not None and p.min_single > p.budget
        return
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    lowered = module.clone()
    LowerToLoopsPass(
        budget=p.budget,
        slow_budget="" if slow is None else slow,
        stream_input=stream,
        stream_output=stream_output,
        reread_input=reread,
    ).apply(Context(), lowered)
    tile_and_lower(lowered)
    PlanArenaPass().apply(Context(), lowered)
    res = run_loop_module(lowered, weights, inputs)
    ref = run_function(fn, weights, inputs)
    for r, y in zip(ref, res.outputs, strict=True):
        if r.dtype == np.float32:
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * scale + 1e-30)
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= p.budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    if slow is not None:
        assert s.slow_peak <= slow
    assert (s.stream_rows, s.stream_bytes) == (p.stream_rows, p.stream_bytes)
    g = build_view(fn).graph
    rows_in = dict(p.stream_rows_by)
    assert s.stream_rows_by == (tuple(rows_in[x] for x in g.inputs) if stream else ())
    sent = dict(p.out_rows_by)
    assert s.out_rows == p.out_rows == sum(sent.values())
    assert s.out_rows_by == (tuple(sent.get(x, 0) for x in g.outputs) if sent else ())
    # each row of a streamed output sent once
    assert all(n == g.tensors[x].shape[1] for x, n in sent.items())


@st.composite
def tall_specs(draw: st.DrawFn) -> Spec:
    """Taller feature maps through several windows (strided ones among
    them): the single-arena plans of these hold line-buffered chains, paced
    ones where no band of output rows fits."""
    shape = (1, draw(st.integers(16, 40)), draw(st.integers(2, 8)), draw(st.integers(1, 4)))
    convs = st.fixed_dictionaries(
        {
            "kind": st.just("conv"),
            "k2": st.sampled_from([1, 3]),
            "d": st.just(1),
            "dw": st.booleans(),
        }
        | {
            "k": st.sampled_from([1, 3, 3, 5]),
            "s": st.sampled_from([1, 1, 2]),
            "cout": st.integers(1, 8),
            "pads": st.lists(st.integers(0, 2), min_size=4, max_size=4),
        }
    )
    mixed = st.one_of(convs, convs, layers())
    return Spec(
        draw(st.booleans()),
        shape,
        tuple(draw(st.lists(mixed, min_size=3, max_size=7))),
        draw(st.integers(0, 3)) == 0,
        False,
        draw(st.integers(0, 2**31 - 1)),
        0.0,
    )


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.one_of(specs(), tall_specs(), tall_specs()),
    st.sampled_from(["none", "half", "unbounded"]),
    st.booleans(),
    st.integers(0, 2),
)
def test_random_plans_under_budget_pairs(spec: Spec, slow_kind: str, stream: bool, step: int):
    """Fast budgets from the smallest single arena up, beside no slow memory,
    half the unbounded plan's slow peak or unbounded slow memory, the input
    resident or streamed by rows: planned == measured."""
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    least = min_single_budget(g, stream_input=stream)
    budget = least + step * (least // 4)
    slow: int | None = None
    if slow_kind == "none":
        slow = 0
    elif slow_kind == "half":
        slow = plan(g, budget, stream_input=stream).slow_peak // 2
    p = plan(g, budget, slow_budget=slow, stream_input=stream)
    if slow == 0:
        assert p.fits  # at or above the smallest single arena
    event(f"paced chains: {sum(1 for c in p.chains if c.pace)}")
    event(f"chains with pixel runs: {sum(1 for c in p.chains if c.pixel_block)}")
    check_pair_run(module, weights, inputs, p, slow, stream)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.one_of(specs(), tall_specs(), tall_specs()),
    st.sampled_from(["none", "unbounded"]),
    st.integers(0, 2),
    st.booleans(),
)
def test_random_plans_reread_their_streamed_input(
    spec: Spec, slow_kind: str, step: int, send: bool
):
    """The input streamed and readable again (windows of rows and columns,
    some asked more than once), the outputs streamed or not, fast budgets
    from the smallest single arena up, beside no slow memory or unbounded
    slow memory: planned == measured (rows and bytes asked of the stream
    among the figures; each output row sent once)."""
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    kw = {"stream_input": True, "reread_input": True, "stream_output": send}
    least = min_single_budget(g, **kw)
    budget = least + step * (least // 4)
    slow = 0 if slow_kind == "none" else None
    p = plan(g, budget, slow_budget=slow, **kw)
    if slow == 0:
        assert p.fits
    height = g.tensors[g.inputs[0]].shape[1]
    event(f"rows asked again: {p.stream_rows > height}")
    event(f"chains in column bands: {sum(1 for c in p.chains if c.tile_w)}")
    check_pair_run(module, weights, inputs, p, slow, True, stream_output=send, reread=True)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.one_of(specs(), tall_specs()),
    st.booleans(),
    st.sampled_from(["none", "unbounded"]),
    st.integers(0, 2),
)
def test_random_plans_stream_every_output_nothing_reads(
    spec: Spec, head: bool, slow_kind: str, step: int
):
    """Graphs of one or two outputs (the second from mid-graph: read later, or
    a head of its own that nothing reads), input and outputs streamed, from
    the smallest single arena up: exactly the outputs nothing reads are
    streamed, each row once, counted per output; planned == measured."""
    module, weights, inputs = build(replace(spec, two_outputs=True, head=head))
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    kw = {"stream_input": True, "stream_output": True}
    least = min_single_budget(g, **kw)
    budget = least + step * (least // 4)
    slow = 0 if slow_kind == "none" else None
    p = plan(g, budget, slow_budget=slow, **kw)
    assert p.fits  # at or above the smallest single arena
    unread = {x for x in g.outputs if not g.consumers(x) and g.tensors[x].rank >= 2}
    assert p.streamed_outputs == unread
    event(f"outputs: {len(g.outputs)}, streamed: {len(unread)}")
    check_pair_run(module, weights, inputs, p, slow, True, stream_output=True)


@st.composite
def block_specs(draw: st.DrawFn) -> Spec:
    """One or two inverted residual blocks (1x1 expansion, 3x3 depthwise of
    stride 1 or 2, 1x1 projection, the residual Add where the shape allows)
    on maps wider than a pixel block: the chains pixel runs are for."""
    c = draw(st.integers(2, 6))
    shape = (1, draw(st.integers(6, 18)), draw(st.integers(12, 40)), c)
    base: dict[str, object] = {
        "k": 1, "k2": 1, "s": 1, "d": 1, "dw": False, "cout": c, "pads": [0, 0, 0, 0],
        "pk": 2, "ps": 1, "ceil": 0, "cip": 0, "nearest": False, "ctm": 0, "pick": 0,
    }  # fmt: skip
    out: list[dict[str, object]] = []
    for _ in range(draw(st.integers(1, 2))):
        stride = draw(st.sampled_from([1, 2]))
        out.append({**base, "kind": "conv", "cout": draw(st.integers(8, 24))})
        out.append(
            {**base, "kind": "conv", "k": 3, "k2": 3, "s": stride, "dw": True, "pads": [1] * 4}
        )
        out.append({**base, "kind": "conv"})
        if stride == 1 and draw(st.booleans()):
            out.append({**base, "kind": "add"})  # the block's input: the first of its shape
    layers = tuple(out)
    seed = draw(st.integers(0, 2**31 - 1))
    return Spec(draw(st.booleans()), shape, layers, False, False, seed, 0.0)  # type: ignore[arg-type]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(block_specs(), st.booleans())
def test_inverted_residual_blocks_in_the_smallest_sram_without_recomputing(
    spec: Spec, stream: bool
):
    """At the smallest single SRAM whose plan recomputes no MAC (pixel runs
    where a chain needs them): planned == measured, equal to the reference."""
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    budget = min_single_budget(g, stream_input=stream, max_recompute=0.0)
    p = plan(g, budget, slow_budget=0, stream_input=stream)
    assert p.fits and p.recomputed_macs == 0
    event(f"chains with pixel runs: {sum(1 for c in p.chains if c.pixel_block)}")
    check_pair_run(module, weights, inputs, p, 0, stream)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(block_specs(), st.sampled_from(["resident", "streamed", "read again"]))
def test_inverted_residual_blocks_in_the_smallest_sram_at_any_mac_cost(spec: Spec, source: str):
    """At the smallest single SRAM at any MAC cost (window feeders where a
    chain needs them: its expansions recomputed a block of columns at a
    time for the depthwise): planned == measured, equal to the reference."""
    module, weights, inputs = build(spec)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    g = build_view(fn).graph
    stream, reread = source != "resident", source == "read again"
    budget = min_single_budget(g, stream_input=stream, reread_input=reread)
    p = plan(g, budget, slow_budget=0, stream_input=stream, reread_input=reread)
    assert p.fits and p.peak <= budget
    event(f"chains with window feeders: {sum(1 for c in p.chains if c.feeders)}")
    check_pair_run(module, weights, inputs, p, 0, stream, reread=reread)
