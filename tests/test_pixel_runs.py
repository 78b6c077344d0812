"""Pixel runs: where a line-buffered chain does not fit even with its scratch
shared, runs of its ops (an op with a scratch output, then the ops reading it
at their own rows and columns) compute block by block of `PIXEL_BLOCK`
columns, and a scratch buffer read only inside its run holds one block.

Checked against the untiled reference (int8 bit-exact) with the measured
fast peak equal to the planned one: in the loop-level interpreter, in the
host C and under QEMU on Cortex-M4 and M55 (the input streamed by rows).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
import zoo
from ops_oracle import boundary_reference
from xdsl.context import Context
from xdsl.dialects import scf

from tigris_ir.backend.c import cortex
from tigris_ir.backend.c.network import print_network
from tigris_ir.dialects import loop
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.boundary import set_int8_boundary
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_single_budget, plan
from tigris_ir.plan.scratch import PIXEL_BLOCK, reread_bytes
from tigris_ir.reference.executor import run_function
from tigris_ir.rtile import targets as tg

MISSING = cortex.tools_available()


def _model(size: Literal["small", "full"]):
    imported = import_model(zoo.build("mobilenet_v2_035", size=size, int8=True))
    set_int8_boundary(imported.module)
    return imported


def _lowered(module, budget: int, cpu: str | None = None):
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=True).apply(Context(), m)
    tile_and_lower(m, target=cpu) if cpu else tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def _input(module) -> list[np.ndarray]:
    fn = main_func(module)
    rng = np.random.default_rng(3)
    out = []
    for a in fn.body.block.args:
        t = a.type
        shape, dt = t.get_shape(), np.dtype(np.int8)  # type: ignore[attr-defined]
        out.append(rng.integers(-128, 128, shape).astype(dt))
    return out


def test_mobilenet_v2_035_int8_streamed_fits_26_kib_without_recomputing():
    """MobileNetV2-0.35-144 int8 (full size, int8 boundary, input streamed)
    in one SRAM of at most 26 KiB with no recomputed MAC: its first two
    chains take pixel runs (depthwise -> 1x1 -> 1x1, depthwise -> 1x1), and
    the plan runs as planned, equal to the untiled reference."""
    imported = _model("full")
    g = build_view(main_func(imported.module)).graph
    budget = min_single_budget(g, stream_input=True, max_recompute=0.0)
    assert budget <= 26 * 1024
    p = plan(g, budget, slow_budget=0, stream_input=True)
    assert p.fits and p.recomputed_macs == 0 and p.peak <= budget
    pix = [c for c in p.chains if c.pixel_block]
    assert [c.index for c in pix] == [0, 1] and all(c.pixel_block == PIXEL_BLOCK for c in pix)
    names = [[g.nodes[k].name for k in r] for r in pix[1].pixel_runs]
    assert names == [["conv_7", "conv_8", "add_9", "conv_10"], ["conv_11", "conv_12"]]
    # read by a window op (a line buffer) or written where it is resident: not blocked
    assert set(pix[1].blocked) == {"conv_7", "conv_8", "add_9", "conv_11"}
    m = _lowered(imported.module, budget)
    x = _input(m)
    ref = run_function(main_func(imported.module), imported.weights, x)
    res = run_loop_module(m, imported.weights, x)
    np.testing.assert_array_equal(res.outputs[0], ref[0])
    assert res.stats.fast_peak == res.stats.arena_bytes == p.peak
    assert res.stats.slow_peak == 0 and res.stats.stream_rows == 144


def test_a_pixel_run_is_a_loop_over_blocks_with_block_buffers():
    """The lowered IR shows the decision: an `scf.for` over the blocks
    (`loop.pixel_block`), inside it the run's band ops cutting the width, and
    the blocked scratch buffers one block wide."""
    imported = _model("small")
    g = build_view(main_func(imported.module)).graph
    budget = min_single_budget(g, stream_input=True)
    p = plan(g, budget, slow_budget=0, stream_input=True)
    (c,) = [c for c in p.chains if c.pixel_block]
    m = _lowered(imported.module, budget)
    loops = [op for op in m.walk() if isinstance(op, scf.ForOp)]
    runs = [op for op in loops if loop.PIXEL_BLOCK_ATTR in op.attributes]
    assert len(runs) == len(c.pixel_runs)
    for r in runs:
        bands = [op for op in r.body.block.ops if isinstance(op, loop.BandOp)]
        assert len(bands) == len(c.pixel_runs[runs.index(r)])
        assert all(2 in axes for b in bands for axes in b.cut_axes()[-1:])
    shapes = {
        op.attributes[loop.TENSOR_ATTR].data: op.results[0].type.get_shape()  # type: ignore[attr-defined]
        for op in m.walk()
        if op.name == "memref.alloc" and loop.TENSOR_ATTR in op.attributes
    }
    assert c.blocked
    for t in c.blocked:
        assert shapes[t][2] == c.blocked_cols[t] < g.tensors[t].width


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
@pytest.mark.parametrize("cpu", ["cortex-m4", "cortex-m55"])
def test_pixel_runs_on_the_board_equal_the_untiled_reference(cpu: str):
    """The same plan built for a Cortex-M (its kernels on blocks of columns),
    its input streamed by the harness: bit-exact, the planned fast peak, the
    input's rows asked once each."""
    imported = _model("small")
    g = build_view(main_func(imported.module)).graph
    budget = min_single_budget(g, stream_input=True)
    p = plan(g, budget, slow_budget=0, stream_input=True)
    assert any(c.pixel_block for c in p.chains)
    m = _lowered(imported.module, budget, cpu)
    source = print_network(m, weights=imported.weights)
    x = _input(m)
    ref = boundary_reference(m, imported.weights, x)
    run = cortex.run_on_target(source, tg.get_target(cpu), x, stats=True)
    assert run.outputs[0].tobytes() == ref[0].tobytes()
    assert run.stats is not None and run.stats.fast_peak == p.peak
    assert run.stats.stream_rows == g.tensors[g.inputs[0]].shape[1]


def test_pixel_runs_with_slow_memory_where_they_pay():
    """With slow memory, MobileNetV2-224 float32 at 128K runs the depthwise
    convolution of its second block and the 1x1 projection after it in
    pixel runs, the depthwise output (56 x 56 x 144) held 8 columns wide:
    the weights of the run (19,680 bytes) read again for 6 more blocks a
    row, 6.6 MB at 1/8 of a byte each, against 3.6 MB of the depthwise
    output spilled and loaded. The interpreter and the C run it as planned
    (fast peak, slow peak, traffic), equal to the untiled reference."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    imported = import_model(zoo.build("mobilenet_v2", size="full"))
    g = build_view(main_func(imported.module)).graph
    budget = 128 * 1024
    p = plan(g, budget)
    c = next(c for c in p.chains if c.pixel_block)
    assert [[g.nodes[k].name for k in r] for r in c.pixel_runs] == [
        ["conv_12", "clip_13", "conv_14"]
    ]
    assert c.blocked == ("conv_12",)
    assert reread_bytes(g, c.pixel_runs, PIXEL_BLOCK) == 19680 * 6 * 56
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    fn = main_func(imported.module)
    x = np.random.default_rng(5).standard_normal((1, 224, 224, 3)).astype(np.float32)
    ref = run_function(fn, imported.weights, [x])[0]
    res = run_loop_module(m, imported.weights, [x])
    tol = 1e-5 * float(np.max(np.abs(ref)))
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=tol)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    in_lay, out_lay = module_layouts(main_func(m))
    got, stats = run_c(m, imported.weights, [to_boundary(x, in_lay[0])], variant="stats")
    np.testing.assert_allclose(to_internal(got[0], out_lay[0]), ref, rtol=1e-5, atol=tol)
    assert stats == s


def test_pixel_runs_of_window_convolutions_do_not_pay_with_slow_memory():
    """ResNet int8 at 64K: runs of 3x3 convolutions (each with its residual
    Add) would read their weights once per block of 8 columns, 13 MB again
    at 1/8 of a byte each, to hold 1 MB of tensors in blocks (55 KB less
    traffic in the end); the chain is cut instead and none takes pixel
    runs."""
    imported = import_model(zoo.build("resnet", size="full", int8=True))
    g = build_view(main_func(imported.module)).graph
    p = plan(g, 64 * 1024)
    assert p.fits and not any(c.pixel_block for c in p.chains)
