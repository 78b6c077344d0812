"""Single-arena line-buffered chains write their outputs in place: an output
that no op of the chain reads and that stays resident after it (a tensor the
next unit reads) has no band buffer and no spill; the op producing it writes
each new row straight into the resident tensor. The plans run in the
loop-level interpreter and in the C at the planned fast peak, with the
untiled reference's output (int8 bit-exact)."""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import StringAttr

from tigris_ir.dialects import loop, nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, min_single_budget, plan
from tigris_ir.reference.executor import run_function


def _case(name: str, int8: bool):
    imported = import_model(zoo.build(name, size="small", int8=int8))
    fn = main_func(imported.module)
    rng = np.random.default_rng(1)
    args = []
    for a in fn.body.block.args:
        shape, dt = nn.shape_of(a.type), nn.dtype_of(a.type)  # type: ignore[arg-type]
        args.append(rng.standard_normal(shape).astype(dt))
    return imported.module, imported.weights, args, run_function(fn, imported.weights, args)


def _lowered(module, budget: int, stream: bool):
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=stream).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def _direct_chains(p: Plan) -> list:
    return [c for c in p.chains if c.direct_out]


def _check_structure(p: Plan, m, graph) -> None:
    """Each output written in place has no buffer of its chain (the chain's
    peak is its other buffers plus its scratch workspace) and no copy in
    the loop IR writes it: only band ops do."""
    for c in _direct_chains(p):
        assert c.line_buffered
        for t in c.direct_out:
            assert t in c.outputs and t not in c.scratch
            assert all(t not in graph.nodes[k].inputs for k in range(c.start, c.stop))
        held = {
            t: align(graph.tensors[t].nbytes // graph.tensors[t].shape[1] * r)
            for t, r in c.band_rows.items()
            if c.shared.get(t, t) == t
        }
        there = {*c.scratch, *c.in_place, *c.direct_out}
        assert c.peak == sum(b for t, b in held.items() if t not in there) + c.scratch_bytes
        assert c.peak < sum(held.values())
    direct = {t for c in p.chains for t in c.direct_out}
    fn = main_func(m)

    def root(v):
        while isinstance(v.owner, memref.SubviewOp):
            v = v.owner.source
        return v.owner

    written = {}  # tensor -> the allocs band ops write it into
    for op in fn.walk():
        if isinstance(op, loop.BandOp):
            attr = op.attributes[loop.NODE_ATTR]
            assert isinstance(attr, StringAttr)
            node = graph.nodes[graph.node_index(attr.data)]
            for name, v in zip(node.outputs, op.outputs, strict=True):
                written.setdefault(name, set()).add(root(v))
    copied = {root(op.destination) for op in fn.walk() if isinstance(op, memref.CopyOp)}
    for t in direct:
        (target,) = written[t]  # one buffer: the resident tensor, written in place
        assert target.attributes[loop.TENSOR_ATTR] == StringAttr(t)
        assert target not in copied  # no spill


@pytest.mark.parametrize(
    ("name", "stream"),
    [("mobilenet_v2_035", True), ("resnet", True), ("resnet", False)],
    ids=["mobilenet_v2_035-streamed", "resnet-streamed", "resnet-resident"],
)
@pytest.mark.parametrize("zero", [True, False], ids=["no-recompute", "any"])
def test_int8_chains_write_outputs_in_place(name: str, stream: bool, zero: bool):
    """Zoo models (small, int8) at their smallest single arena, the input
    streamed or resident, recomputation allowed or not: the chains write
    their outputs in place, and the interpreter and the C give the reference
    output bit-exact at the planned peak."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _case(name, True)
    g = build_view(main_func(module)).graph
    budget = min_single_budget(g, stream_input=stream, max_recompute=0.0 if zero else None)
    p = plan(g, budget, slow_budget=0, stream_input=stream)
    assert p.fits and p.slow_peak == 0 and _direct_chains(p)
    if zero:
        assert p.recomputed_macs == 0
    m = _lowered(module, budget, stream)
    _check_structure(p, m, g)
    res = run_loop_module(m, weights, args)
    np.testing.assert_array_equal(res.outputs[0], ref[0])
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget and s.slow_peak == 0
    in_lay, out_lay = module_layouts(main_func(m))
    x = to_boundary(args[0], in_lay[0])
    got, stats = run_c(m, weights, [x], variant=("bounds", "stats"), strict=True)
    np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
    assert stats == s


@pytest.mark.parametrize("name", ["resnet", "vgg", "ds_cnn"])
def test_direct_outputs_run_as_planned_above_the_smallest_arena(name: str):
    """Other zoo models (small, float32) at budgets from their smallest single
    arena up: where a chain writes its outputs in place, the interpreter
    measures the planned peak and gives the reference output."""
    module, weights, args, ref = _case(name, False)
    g = build_view(main_func(module)).graph
    least = min_single_budget(g, stream_input=True)
    seen = 0
    for budget in (least, least + least // 4, 2 * least):
        p = plan(g, budget, slow_budget=0, stream_input=True)
        assert p.fits
        seen += len(_direct_chains(p))
        m = _lowered(module, budget, True)
        _check_structure(p, m, g)
        res = run_loop_module(m, weights, args)
        r = ref[0]
        np.testing.assert_allclose(res.outputs[0], r, rtol=1e-5, atol=1e-5 * float(np.max(abs(r))))
        assert res.stats.arena_bytes == res.stats.fast_peak == p.peak
    if name != "ds_cnn":
        assert seen
