"""Plans under a slow-memory budget: `--slow-budget 0` keeps every tensor in
the one fast arena. Every plan is lowered, placed and run at the loop level
and checked against the untiled reference (int8 bit-exact) with its measured
fast peak equal to the planned one and its slow peak within the slow budget."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import zoo
from xdsl.context import Context

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.graph import GraphBuilder
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import parse_budget
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_single_budget, plan
from tigris_ir.reference.executor import run_function

INPUTS = Path(__file__).resolve().parent / "lit" / "Inputs"


def rand(t, rng: np.random.Generator) -> np.ndarray:
    shape, dt = nn.shape_of(t), nn.dtype_of(t)
    if dt == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def _case(name: str, int8: bool):
    imported = import_model(zoo.build(name, size="small", int8=int8))
    fn = main_func(imported.module)
    rng = np.random.default_rng(0)
    args = [rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    return imported.module, imported.weights, args, run_function(fn, imported.weights, args)


def _check(module, weights, args, ref, budget: int, slow: int | None):
    view = build_view(main_func(module))
    p = plan(view.graph, budget, slow_budget=slow)
    if not p.fits:
        return p, None
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget="" if slow is None else slow).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    for r, y in zip(ref, res.outputs, strict=True):
        if r.dtype == np.float32:
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert s.slow_peak == p.slow_peak
    if slow is not None:
        assert s.slow_peak <= slow
    if slow == 0:
        assert s.slow_reads == s.slow_writes == 0
    return p, s


MODELS = ["mobilenet_v2_035", "vgg", "resnet", "ds_cnn", "dilated"]


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("name", MODELS)
def test_single_arena_plans_run_as_planned(name: str, int8: bool):
    """At the smallest single-arena budget and above it, with no slow memory
    the loop IR allocates no slow arena, and the run matches the reference."""
    module, weights, args, ref = _case(name, int8)
    g = build_view(main_func(module)).graph
    least = min_single_budget(g)
    p, s = _check(module, weights, args, ref, least, 0)
    assert p.fits and s is not None and s.slow_peak == 0
    below = plan(g, least - 1, slow_budget=0)
    assert not below.fits and below.min_single == least
    for budget in (least + least // 4, 2 * least):
        p, s = _check(module, weights, args, ref, budget, 0)
        assert p.fits and s is not None


@pytest.mark.parametrize("name", ["mobilenet_v2_035", "resnet"])
def test_a_slow_budget_between_is_held(name: str):
    """A slow budget below the unbounded plan's slow peak gives a plan within
    it; one at or above that peak keeps the unbounded plan."""
    module, weights, args, ref = _case(name, True)
    g = build_view(main_func(module)).graph
    least = min_single_budget(g)
    free = plan(g, least)
    assert free.fits
    _, s = _check(module, weights, args, ref, least, free.slow_peak)
    assert s is not None and s.slow_peak == free.slow_peak
    if free.slow_peak:
        p, s = _check(module, weights, args, ref, least, free.slow_peak - 1)
        assert p.fits and s is not None and s.slow_peak <= free.slow_peak - 1


def test_a_pair_that_cannot_fit_names_the_stage_tensor_and_budgets():
    b = GraphBuilder(elem_bytes=1)
    x = b.input("x", (1, 32, 32, 8))
    for _ in range(3):
        x = b.conv(x, 8, 3, 1)
    b.output(x)
    g = b.build()
    p = plan(g, 4096, slow_budget=0)
    assert not p.fits
    assert p.failed_tensor == "x"
    need = min_single_budget(g)
    assert p.min_single == need and plan(g, need, slow_budget=0).fits
    assert "'x' of 8192 bytes" in p.message
    assert f"a fast memory of {need} bytes" in p.message
    assert p.slow_needed == plan(g, 4096).slow_peak


def test_slow_budgets_parse_like_fast_ones():
    assert parse_budget("0", zero_ok=True) == 0
    assert parse_budget("64K", zero_ok=True) == 65536
    with pytest.raises(ValueError, match="must not be negative"):
        parse_budget("-1", zero_ok=True)
    with pytest.raises(ValueError, match="expected bytes like"):
        parse_budget("lots", zero_ok=True)


def _check_stream(module, weights, args, ref, budget: int, slow: int | None):
    view = build_view(main_func(module))
    p = plan(view.graph, budget, slow_budget=slow, stream_input=True)
    if not p.fits:
        return p, None
    m = module.clone()
    LowerToLoopsPass(
        budget=budget, slow_budget="" if slow is None else slow, stream_input=True
    ).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    for r, y in zip(ref, res.outputs, strict=True):
        if r.dtype == np.float32:
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    assert (s.stream_rows, s.stream_bytes) == (p.stream_rows, p.stream_bytes)
    assert s.stream_rows >= view.graph.tensors[view.graph.inputs[0]].shape[1]
    return p, s


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("name", ["mobilenet_v2_035", "vgg", "resnet"])
def test_streamed_input_plans_run_as_planned(name: str, int8: bool):
    """With the input streamed by rows (never resident: the bands that read it
    load their rows from the callback) plans run as planned at the smallest
    single arena, above it and with unbounded slow memory; the rows the loop
    IR asks for are the plan's (a line-buffered chain asks each row once)."""
    module, weights, args, ref = _case(name, int8)
    g = build_view(main_func(module)).graph
    least = min_single_budget(g, stream_input=True)
    for budget, slow in ((least, 0), (2 * least, 0), (least, None)):
        p, s = _check_stream(module, weights, args, ref, budget, slow)
        assert p.fits and s is not None


@pytest.mark.parametrize("stream", [False, True], ids=["resident", "streamed"])
def test_single_arena_c_runs_as_planned(stream: bool):
    """The printed C of a single-arena plan (its input fed row by row by the
    harness's callback when streamed) gives the interpreter's output and
    figures: no slow arena, the planned fast peak, the planned input rows."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _case("resnet", True)
    g = build_view(main_func(module)).graph
    budget = min_single_budget(g, stream_input=stream)
    p = plan(g, budget, slow_budget=0, stream_input=stream)
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=stream).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    in_lay, out_lay = module_layouts(main_func(m))
    x = to_boundary(args[0], in_lay[0])
    got, stats = run_c(m, weights, [x], variant=("bounds", "stats"), strict=True)
    np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
    assert stats == res.stats
    assert stats is not None and stats.fast_peak == p.peak and stats.slow_peak == 0
    assert stats.stream_rows == p.stream_rows == (g.tensors[g.inputs[0]].shape[1] if stream else 0)


def test_plot_draws_the_plan_or_names_the_missing_extra(tmp_path, monkeypatch):
    """--plot writes an .svg of the plan and its frontier (matplotlib
    present), refuses other suffixes, and without matplotlib says how to get it."""
    import builtins

    from tigris_ir.tools import tigris_analyze
    from tigris_ir.tools.cli import UserError

    model = str(INPUTS / "conv_relu.onnx")
    bad = tmp_path / "plan.pdf"
    with pytest.raises(UserError, match="a .png or .svg file"):
        tigris_analyze.run([model, "-m", "2K", "--plot", str(bad), "--json"])
    real_import = builtins.__import__

    def no_matplotlib(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(UserError, match=r"pip install '\.\[plot\]'"):
        tigris_analyze.run([model, "-m", "2K", "--plot", str(tmp_path / "p.png"), "--json"])
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    out = tmp_path / "plan.svg"
    args = [model, "-m", "1920", "--slow-budget", "0", "--frontier", "--json", "--plot", str(out)]
    assert tigris_analyze.run(args) == 0
    assert out.read_text().count("<svg") == 1


@pytest.mark.parametrize("slow", [0, None], ids=["one-arena", "unbounded"])
def test_streamed_output_plans_run_as_planned(slow):
    """The output of a model ending in a feature map (no classifier) leaves by
    rows as it is produced: resident nowhere, each row sent once; the loop IR
    and the C (whose harness takes the rows) give the reference's output."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    imported = import_model(zoo.build("unet", size="small", int8=True))
    module, weights = imported.module, imported.weights
    fn = main_func(module)
    rng = np.random.default_rng(0)
    args = [rand(a.type, rng) for a in fn.body.block.args]
    ref = run_function(fn, weights, args)
    g = build_view(fn).graph
    kw = {"stream_input": True, "stream_output": True}
    budget = min_single_budget(g, **kw) if slow == 0 else 16384
    p = plan(g, budget, slow_budget=slow, **kw)
    assert p.fits and p.stream_output and p.out_rows == g.tensors[g.outputs[0]].shape[1]
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget="" if slow is None else slow, **kw).apply(
        Context(), m
    )
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    np.testing.assert_array_equal(res.outputs[0], ref[0])
    s = res.stats
    assert s.fast_peak == p.peak and s.out_rows == p.out_rows
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    in_lay, out_lay = module_layouts(main_func(m))
    got, stats = run_c(m, weights, [to_boundary(args[0], in_lay[0])], variant="stats")
    np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
    assert stats == s


MULTI = {
    "f32": ({}, False),
    "int8": ({}, True),
    "f32-2in-features": ({"two_inputs": True, "features_out": True}, False),
    "int8-2in-features": ({"two_inputs": True, "features_out": True}, True),
    "f32-split": ({"split": True}, False),
}


@functools.cache
def _multi(case: str):
    """A model of two heads of different shapes (zoo.two_heads), its inputs
    (internal layout) and its untiled reference outputs."""
    kw, int8 = MULTI[case]
    model = zoo.two_heads(**kw)
    imported = import_model(zoo.quantize(model, seed=0) if int8 else model)
    fn = main_func(imported.module)
    rng = np.random.default_rng(0)
    args = [rand(a.type, rng) for a in fn.body.block.args]
    return imported.module, imported.weights, args, run_function(fn, imported.weights, args)


@pytest.mark.parametrize("at", ["smallest-one-arena", "4K", "64K"])
@pytest.mark.parametrize("case", list(MULTI))
def test_streamed_outputs_of_a_model_of_several_run_as_planned(case: str, at: str):
    """Every output that nothing reads leaves by rows through the one callback,
    under its own index; an output some op reads (the trunk's features) stays
    resident and is returned as usual. Each streamed output sends each of its
    rows once; the loop IR and the C (whose harness reassembles each output
    from its callback) equal the untiled reference (int8 bit-exact) with the
    planned fast peak, slow figures and rows per input and output (at the
    smallest single arena, at 4K with slow memory and at 64K)."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _multi(case)
    fn = main_func(module)
    g = build_view(fn).graph
    kw = {"stream_input": True, "stream_output": True}
    budget, slow = {
        "smallest-one-arena": (min_single_budget(g, **kw), 0),
        "4K": (4096, None),
        "64K": (65536, None),
    }[at]
    p = plan(g, budget, slow_budget=slow, **kw)
    assert p.fits and p.stream_output and len(g.outputs) == len(ref) >= 2
    # 64K runs these small models in place (sending each output when it
    # ends); the smaller budgets tile them (chains, strips, normal stages)
    assert p.in_place == (at == "64K") and (p.in_place or any(s.tiled for s in p.stages))
    unread = [x for x in g.outputs if not g.consumers(x)]
    assert p.streamed_outputs == frozenset(unread)
    # the float trunk's features are read by the heads; the QDQ model's are a
    # DequantizeLinear of their own that nothing reads, streamed like the heads
    assert len(g.outputs) == 2 + ("features" in case)
    assert len(unread) == len(g.outputs) - ("features" in case and "int8" not in case)
    heights = tuple(g.tensors[x].shape[1] if x in unread else 0 for x in g.outputs)
    assert len(set(heights) - {0}) == 2 - ("split" in case)  # heads of different heights
    assert dict(p.out_rows_by) == {x: h for x, h in zip(g.outputs, heights) if h}
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget="" if slow is None else slow, **kw).apply(
        Context(), m
    )
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    in_lay, out_lay = module_layouts(main_func(m))
    xs = [to_boundary(a, lay) for a, lay in zip(args, in_lay)]
    got, stats = run_c(m, weights, xs, variant=("bounds", "stats"), strict=True)
    for r, y, c, lay in zip(ref, res.outputs, got, out_lay, strict=True):
        c = to_internal(c, lay)
        if r.dtype == np.float32:
            tol = 1e-5 * float(np.max(np.abs(r)))
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=tol)
            np.testing.assert_allclose(c, r, rtol=1e-5, atol=tol)
        else:
            np.testing.assert_array_equal(y, r)
            np.testing.assert_array_equal(c, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    if slow == 0:
        assert s.slow_peak == 0
    assert s.out_rows_by == heights and s.out_rows == p.out_rows == sum(heights)
    rows_in = dict(p.stream_rows_by)
    assert s.stream_rows_by == tuple(rows_in[x] for x in g.inputs)
    assert all(n >= g.tensors[x].shape[1] for x, n in rows_in.items())  # each row at least once
    assert (s.stream_rows, s.stream_bytes) == (p.stream_rows, p.stream_bytes)
    assert stats == s


def test_the_harness_refuses_an_output_row_sent_twice():
    """The C harness's callback takes each row of a streamed output once: a
    unit whose call for output #1 is doubled (by hand) fails its run."""
    import dataclasses

    from tigris_ir.backend.c.build import CRunError, build, execute
    from tigris_ir.backend.c.network import print_network
    from tigris_ir.reference.executor import module_layouts, to_boundary

    module, weights, args, _ = _multi("f32")
    m = module.clone()
    LowerToLoopsPass(budget=65536, stream_output=True).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    source = print_network(m, weights=weights)
    (call,) = [ln for ln in source.c.splitlines() if "tigris_output_rows(1," in ln]
    xs = [to_boundary(a, lay) for a, lay in zip(args, module_layouts(main_func(m))[0])]
    got, _ = execute(source, build(source), xs)  # as printed: runs
    assert len(got) == 2
    twice = dataclasses.replace(source, c=source.c.replace(call, f"{call}\n{call}"))
    with pytest.raises(CRunError, match="tigris_run_n returned 2"):
        execute(twice, build(twice), xs)


def test_analyze_reports_streamed_rows_per_input_and_output(tmp_path, capsys):
    """tigris-analyze --json lists the rows of each streamed input and output."""
    import json

    import onnx

    from tigris_ir.tools import tigris_analyze

    path = tmp_path / "two_heads.onnx"
    onnx.save(zoo.two_heads(two_inputs=True), str(path))
    args = [str(path), "-m", "64K", "--stream-input", "--stream-output", "--json"]
    assert tigris_analyze.run(args) == 0
    r = json.loads(capsys.readouterr().out)
    outs = {o["name"]: o["shape"] for o in r["outputs"]}
    ins = {i["name"]: i["shape"] for i in r["inputs"]}
    assert r["output_rows_by"] == {name: shape[1] for name, shape in outs.items()}
    assert set(r["stream_rows_by"]) == set(ins) and len(ins) == 2
    assert r["output_rows"] == sum(r["output_rows_by"].values())
    assert r["stream_rows"] == sum(r["stream_rows_by"].values())


def test_the_onnx_chunk_case_keeps_its_rank_1_outputs_and_refuses_a_rank_1_stream(capsys):
    """onnx's pytorch-operator/test_operator_chunk (a Split of a vector into
    two outputs): its outputs of rank 1 are not streamed under
    --stream-output, and the loop IR and the C give the expected outputs;
    its rank-1 input cannot be streamed by rows in the C, which names it."""
    import onnx
    from onnx import numpy_helper

    from tigris_ir.backend.c.build import run_c
    from tigris_ir.tools import tigris_run

    case = Path(onnx.__file__).parent / "backend/test/data/pytorch-operator/test_operator_chunk"
    data = case / "test_data_set_0"
    x = numpy_helper.to_array(onnx.load_tensor(str(data / "input_0.pb")))
    want = [numpy_helper.to_array(onnx.load_tensor(str(data / f"output_{i}.pb"))) for i in (0, 1)]
    imported = import_model(onnx.load(str(case / "model.onnx")))
    g = build_view(main_func(imported.module)).graph
    p = plan(g, 1024, stream_output=True)
    assert len(g.outputs) == 2 and p.fits and p.streamed_outputs == frozenset()
    m = imported.module.clone()
    LowerToLoopsPass(budget=1024, stream_output=True).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, imported.weights, [x])
    got, stats = run_c(m, imported.weights, [x], variant="stats")
    for w, y, c in zip(want, res.outputs, got, strict=True):
        np.testing.assert_allclose(y, w, rtol=1e-6)
        np.testing.assert_allclose(c, w, rtol=1e-6)
    assert stats == res.stats and stats is not None and stats.out_rows_by == ()
    argv = [str(case / "model.onnx"), "-m", "1K", "--stream-input", "--backend", "c"]
    assert tigris_run.main([*argv, "--random-input", "0"]) == 1
    err = capsys.readouterr().err
    assert "input #0 '0' is of rank 1: a streamed input is read in bands of rows" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["mobilenet_v2_035", "vgg"])
def test_paced_chains_run_as_planned_in_the_interpreter_and_the_c(name: str):
    """At the smallest single arena with the input streamed, the plan holds
    paced chains (steps of input rows, each op at its own rate); the loop IR
    and the C, fed row by row, give the reference output (bit-exact) with the
    planned fast peak, no slow memory and each input row asked for once."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _case(name, True)
    g = build_view(main_func(module)).graph
    budget = min_single_budget(g, stream_input=True)
    p, s = _check_stream(module, weights, args, ref, budget, 0)
    assert s is not None and any(c.pace for c in p.chains)
    # a paced chain in whole rows computes every row once (one in column
    # bands recomputes its halo columns, one with window feeders those)
    assert all(
        c.recomputed_macs == 0 for c in p.chains if c.pace and not c.tile_w and not c.feeders
    )
    assert s.stream_rows == g.tensors[g.inputs[0]].shape[1]
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=True).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    in_lay, out_lay = module_layouts(main_func(m))
    got, stats = run_c(m, weights, [to_boundary(args[0], in_lay[0])], variant=("bounds", "stats"))
    np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
    assert stats == s


def test_analyze_reports_recomputed_macs_per_chain_and_stage(capsys, tmp_path):
    """tigris-analyze --json: the MACs each chain and each stage outside a
    chain recomputes add up to the plan's total (a tight budget: 2D tiles
    and plain chains recompute halos), and -v prints them per chain."""
    import json

    from tigris_ir.tools import tigris_analyze

    model = zoo.build("mobilenet_v2_035", size="small", int8=True)
    g = build_view(main_func(import_model(model).module)).graph
    budget = min_single_budget(g, stream_input=True)
    p = plan(g, budget, slow_budget=0, stream_input=True)
    assert p.recomputed_macs > 0
    f = tmp_path / "m.onnx"
    f.write_bytes(model.SerializeToString())
    args = [str(f), "-m", str(budget), "--slow-budget", "0", "--stream-input"]
    assert tigris_analyze.run([*args, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert tigris_analyze.run([*args, "-v"]) == 0
    text = capsys.readouterr().out
    chained = {s["name"] for s in r["stages"] if s["chain"]}
    own = sum(s["recompute_macs"] for s in r["stages"] if s["name"] not in chained)
    assert own + sum(c["recompute_macs"] for c in r["chains"]) == r["recompute_macs"]
    assert r["recompute_macs"] == p.recomputed_macs
    assert "recomputed MACs" in text and f"{p.recomputed_macs:,}" in text


def _pointwise_head(int8: bool):
    """A 3x3 convolution, a wide 1 x 1 convolution and the classifier: the 1 x 1
    convolution's output (16 x 16 x 96) is the model's largest tensor."""
    g = zoo._Graph(0)  # noqa: SLF001
    x = g.relu6(g.conv("input", 3, 8, (3, 3)))
    x = g.relu6(g.conv(x, 8, 96, (1, 1)))
    model = g.model("pw_head", (1, 3, 16, 16), g.head(x, 96, 10))
    return zoo.quantize(model, seed=0) if int8 else model


@pytest.mark.parametrize("stream", [False, True], ids=["resident", "streamed"])
@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_a_pointwise_convolution_accumulates_with_the_pool(int8: bool, stream: bool):
    """A 1 x 1 convolution joins the GlobalAveragePool's accumulated band, so
    its output is never whole in a single arena: the smallest single SRAM is
    below that tensor, and the loop IR and the C run the band (rows or runs
    of positions) with the reference's output and the planned figures."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    imported = import_model(_pointwise_head(int8))
    module, weights = imported.module, imported.weights
    fn = main_func(module)
    rng = np.random.default_rng(0)
    args = [rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    ref = run_function(fn, weights, args)
    g = build_view(fn).graph
    wide = max(
        g.tensors[n.outputs[0]].nbytes for n in g.nodes if n.op == "nn.conv" and n.kernel == (1, 1)
    )
    least = min_single_budget(g, stream_input=stream)
    assert least < wide
    for budget in (least, least + least // 2):
        p, s = (
            _check_stream(module, weights, args, ref, budget, 0)
            if stream
            else _check(module, weights, args, ref, budget, 0)
        )
        assert p.fits and s is not None
        acc = [st for st in p.stages if st.strategy == "accumulate"]
        assert acc and any(
            g.nodes[k].op == "nn.conv" for st in acc for k in range(st.start, st.stop)
        )
        m = module.clone()
        LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=stream).apply(Context(), m)
        tile_and_lower(m)
        PlanArenaPass().apply(Context(), m)
        in_lay, out_lay = module_layouts(main_func(m))
        got, stats = run_c(
            m, weights, [to_boundary(args[0], in_lay[0])], variant=("bounds", "stats")
        )
        if int8:
            np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
        else:
            np.testing.assert_allclose(
                to_internal(got[0], out_lay[0]), ref[0], rtol=1e-4, atol=1e-4
            )
        assert stats == s


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v1_025", "unet", "audio_1d"])
def test_the_other_zoo_models_fit_one_arena(name: str):
    """The zoo models the tests above leave out (int8, small sizes): at the
    smallest single SRAM with the input resident and with it streamed, and
    with the streamed input beside unbounded slow memory, the loop IR gives
    the reference output bit for bit with the planned figures."""
    module, weights, args, ref = _case(name, True)
    g = build_view(main_func(module)).graph
    p, s = _check(module, weights, args, ref, min_single_budget(g), 0)
    assert p.fits and s is not None and s.slow_peak == 0
    least = min_single_budget(g, stream_input=True)
    for slow in (0, None):
        p, s = _check_stream(module, weights, args, ref, least, slow)
        assert p.fits and s is not None


def _held_row_bytes(g, c, t: str) -> int:
    """The bytes of one row of tensor t in chain c's buffers: a column band's
    hold its columns."""
    whole = g.tensors[t].nbytes // g.tensors[t].shape[1]
    return whole // g.tensors[t].width * c.band_cols[t] if c.tile_w else whole


@pytest.mark.parametrize(
    ("name", "int8", "stream"),
    [("resnet", True, False), ("resnet", True, True), ("mobilenet_v2_035", False, False)],
    ids=["resnet-int8-resident", "resnet-int8-streamed", "mobilenet_v2_035-f32-resident"],
)
def test_chain_scratch_and_resident_inputs_run_as_planned(name: str, int8: bool, stream: bool):
    """At the smallest single arena, line-buffered chains hold their scratch
    buffers (no row kept from one tile to the next) in one workspace, each
    allocated per tile over its producer..last reader, and a resident plan's
    chains read their inputs where they are resident (no band buffer): the
    chain's peak is its other buffers plus the workspace, below the sum of
    every band buffer; the loop IR places the tile's buffers inside the
    workspace, and the interpreter and the C give the reference output
    (bit-exact for int8) at the planned fast peak."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.dialects import loop
    from tigris_ir.plan.memory import align
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _case(name, int8)
    g = build_view(main_func(module)).graph
    budget = min_single_budget(g, stream_input=stream)
    p = plan(g, budget, slow_budget=0, stream_input=stream)
    assert p.fits and any(c.scratch_bytes for c in p.chains)
    assert stream or any(c.in_place for c in p.chains)
    for c in p.chains:
        if not c.line_buffered:
            continue
        held = {
            t: align(_held_row_bytes(g, c, t) * r)
            for t, r in c.band_rows.items()
            if c.shared.get(t, t) == t
        }
        there = {*c.scratch, *c.in_place, *c.direct_out}
        own = sum(b for t, b in held.items() if t not in there)
        assert c.peak == own + c.scratch_bytes
        if c.scratch_bytes or c.in_place or c.direct_out:
            assert c.peak < sum(held.values())
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=stream).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    fors = [op for op in main_func(m).walk() if loop.WORKSPACE_ATTR in op.attributes]
    assert len(fors) == sum(1 for c in p.chains if c.scratch_bytes)
    res = run_loop_module(m, weights, args)
    if int8:
        np.testing.assert_array_equal(res.outputs[0], ref[0])
    else:
        r = ref[0]
        np.testing.assert_allclose(res.outputs[0], r, rtol=1e-5, atol=1e-5 * float(np.max(abs(r))))
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak and s.slow_peak == 0
    if int8:  # the C (float models: the interpreter above)
        in_lay, out_lay = module_layouts(main_func(m))
        x = to_boundary(args[0], in_lay[0])
        got, stats = run_c(m, weights, [x], variant=("bounds", "stats"), strict=True)
        np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
        assert stats == s


def _held_by_lifetime(g, start: int, stop: int, normal: bool, streamed: bool) -> set[str]:
    """What a unit of ops [start, stop) of a single-arena plan holds beside its
    buffers, from the tensors' lifetimes: every tensor produced before the
    unit (or a model input) and read in or after it, and every output of the
    unit read after it or a model output; a normal stage holds the model
    inputs it reads last as its own."""
    held = set()
    for name, info in g.tensors.items():
        if info.is_const or (streamed and name in g.inputs):
            continue
        readers = g.consumers(name)
        last = len(g.nodes) if name in g.outputs else max(readers, default=-1)
        p = g.producer(name)
        crosses = (p is None or p < start) and last >= start
        out = p is not None and start <= p < stop and last >= stop
        if normal and name in g.inputs and start <= last < stop:
            continue
        if crosses or out:
            held.add(name)
    return held


@pytest.mark.parametrize(
    ("name", "stream"),
    [("mobilenet_v2_035", True), ("mobilenet_v2_035", False), ("resnet", False)],
    ids=["mobilenet_v2_035-streamed", "mobilenet_v2_035-resident", "resnet-resident"],
)
def test_analyze_says_what_each_unit_of_one_arena_holds(name, stream, capsys, tmp_path):
    """tigris-analyze on a single-arena plan at its smallest budget: each stage
    and chain names the tensors held beside its buffers (those whose lifetimes
    span it), their bytes are the unit's resident figure, the units marked as
    setting the peak are exactly those whose buffers and held tensors reach
    it, and -v prints the two columns (an unbounded plan has neither)."""
    import json

    from tigris_ir.tools import tigris_analyze

    model = zoo.build(name, size="small", int8=True)
    g = build_view(main_func(import_model(model).module)).graph
    budget = min_single_budget(g, stream_input=stream)
    f = tmp_path / "m.onnx"
    f.write_bytes(model.SerializeToString())
    args = [str(f), "-m", str(budget), "--slow-budget", "0", *(["--stream-input"] * stream)]
    assert tigris_analyze.run([*args, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["single_arena"] and r["fits"]
    index = {n.name: k for k, n in enumerate(g.nodes)}
    ops = {s["name"]: [index[o] for o in s["ops"]] for s in r["stages"]}
    units = [s for s in r["stages"] if not s["chain"]] + r["chains"]
    assert r["chains"], "the plan has chains"
    for u in units:
        ks = [k for s in u.get("stages", [u["name"]]) for k in ops[s]]
        start, stop = min(ks), max(ks) + 1
        normal = u.get("strategy") in ("normal", "whole")
        names = [t["tensor"] for t in u["resident"]]
        assert set(names) == _held_by_lifetime(g, start, stop, normal, stream), u["name"]
        sizes = [t["bytes"] for t in u["resident"]]
        assert sum(sizes) == u["resident_bytes"] and sizes == sorted(sizes, reverse=True)
        reach = u["peak_bytes"] + u["resident_bytes"]
        assert reach <= r["peak_bytes"] and u["sets_peak"] == (reach == r["peak_bytes"])
    assert any(u["sets_peak"] for u in units)
    for s in r["stages"]:  # a chain member repeats its chain's figures
        if s["chain"]:
            c = next(c for c in r["chains"] if c["name"] == s["chain"])
            assert (s["resident"], s["sets_peak"]) == (c["resident"], c["sets_peak"])
    assert tigris_analyze.run([*args, "-v"]) == 0
    text = capsys.readouterr().out
    assert "held beside" in text and "sets the peak" in text
    assert tigris_analyze.run([str(f), "-m", str(budget), "-v"]) == 0
    assert "held beside" not in capsys.readouterr().out


def test_a_model_taken_apart_at_its_block_boundaries():
    """`PlanGraph.cuts` are the block boundaries (one activation alone
    crosses); `part(0, k)` gives that activation and `part(k, n)` reads it,
    every other tensor in one part only; the whole range is the model. Each
    part plans in one SRAM."""
    g = build_view(main_func(import_model(zoo.build("mobilenet_v2", int8=True)).module)).graph
    n = len(g.nodes)
    whole = g.part(0, n)
    assert (whole.nodes, whole.inputs, whole.outputs) == (g.nodes, g.inputs, g.outputs)
    cuts = g.cuts()
    adds = [k for k, node in enumerate(g.nodes) if node.op == "nn.add"]
    assert cuts and adds
    for k in range(1, n):
        before, after = g.part(0, k), g.part(k, n)
        crossing = set(before.outputs)
        assert set(after.inputs) - set(g.inputs) == crossing
        assert (k in cuts) == (len(crossing | (set(after.inputs) & set(g.inputs))) == 1)
        acts = {x for x, t in g.tensors.items() if not t.is_const}
        only = (set(before.tensors) & acts) ^ (set(after.tensors) & acts)
        assert only | crossing | (set(after.inputs) & set(g.inputs)) == acts
    # inside a residual block the skip crosses beside the block's tensor: no cut
    for a in adds:
        skip = g.nodes[a].inputs
        start = min(g.producer(x) or 0 for x in skip) + 1
        assert not any(start < k <= a for k in cuts)
    k = cuts[len(cuts) // 2]
    for part, stream in ((g.part(0, k), True), (g.part(k, n), False)):
        b = min_single_budget(part, stream_input=stream)
        p = plan(part, b, slow_budget=0, stream_input=stream)
        assert p.fits and p.slow_peak == 0 and p.peak <= b
    with pytest.raises(ValueError, match="nodes"):
        g.part(3, 3)
