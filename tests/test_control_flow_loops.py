"""If and Loop at the loop level: lowered with their bodies' plans, placed by
plan-arena (each body in its node's workspace), run by the loop machine.

The oracles: the untiled reference (int8 bit-exact, float32 within 1e-5), the
planned figures (the function's fast peak, slow peak and traffic; each body's
own peak on the path that ran), on every path of the control flow and at
several budgets, from the smallest that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cf_models
import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop
from tigris_ir.frontend.onnx_import import Imported, import_file, import_model
from tigris_ir.interp.loop_ir import Interpreting
from tigris_ir.interp.run_stats import RunStats
from tigris_ir.loops.arena import arena_problems
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func, plan_tree, tree_min_budget
from tigris_ir.reference.executor import module_layouts, run_reference, to_boundary, to_internal

INPUTS = Path(__file__).parent / "lit" / "Inputs"


def lowered(module: ModuleOp, budget: int) -> ModuleOp:
    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


@dataclass
class Ran:
    outputs: list[np.ndarray]
    machine: Interpreting

    def machine_stats(self) -> RunStats:
        m = self.machine
        return RunStats(
            m.fast.peak, m.fast.high, m.fast.size, m.slow.peak, m.reads, m.writes, m.tiles
        )


def interpret(low: ModuleOp, imp: Imported, inputs: list[np.ndarray]) -> Ran:
    il, ol = module_layouts(main_func(low))
    m = Interpreting(low, imp.weights)
    outs = m.run([to_internal(x, lay) for x, lay in zip(inputs, il)])
    return Ran([to_boundary(y, lay) for y, lay in zip(outs, ol)], m)


def same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype == np.float32:
        scale = max(float(np.abs(want).max()), 1e-30)
        assert float(np.abs(got.astype(np.float64) - want).max()) / scale <= 1e-5
    else:
        np.testing.assert_array_equal(got, want)


def check_run(imp: Imported, budget: int, feeds: list[list[np.ndarray]]) -> set[str]:
    """Lower at `budget`, run every input: reference outputs, planned figures.
    Returns the bodies that ran."""
    tree = plan_tree(main_func(imp.module), budget)
    assert tree.fits and tree.plan is not None
    low = lowered(imp.module, budget)
    bodies = {sc.path: sc for sc in tree.walk() if sc.path}
    ran: set[str] = set()
    for inputs in feeds:
        want = run_reference(imp.module, imp.weights, inputs)
        r = interpret(low, imp, inputs)
        for g, w in zip(r.outputs, want, strict=True):
            same(g, w)
        m, p = r.machine, tree.plan
        assert m.fast.peak == m.fast.size == p.peak <= budget
        assert (m.slow.peak, m.reads, m.writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
        for path, peak in m.body_peaks.items():
            assert peak == bodies[path].peak, path
            assert peak + bodies[path].held <= budget
        ran |= set(m.body_peaks)
    return ran


# ------------------------------------------------------------- the lit models


def _feeds(path: Path, offsets: tuple[float, ...]) -> list[list[np.ndarray]]:
    model = onnx.load(str(path))
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(5)
    return [[rng.standard_normal(dims).astype(np.float32) + np.float32(o)] for o in offsets]


@pytest.mark.parametrize(
    ("name", "offsets", "bodies"),
    [
        ("control_flow_if", (-1.0, 1.0), {"if0/then", "if0/else"}),
        ("control_flow_loop", (0.0, 2.0), {"loop0/body"}),
        ("control_flow_while", (-2.0, 5.0), {"loop0/body"}),
        ("control_flow_nested", (-5.0, 0.0), {"if0/then", "if0/then/loop0/body", "if0/else"}),
        ("control_flow_qdq_if", (-1.0, 1.0), {"if0/then", "if0/else"}),
    ],
)
def test_lit_models_run_at_the_loop_level(name: str, offsets, bodies) -> None:
    path = INPUTS / f"{name}.onnx"
    imp = import_file(path)
    least = tree_min_budget(main_func(imp.module))
    ran: set[str] = set()
    for budget in (least, least + least // 2, 256 * 1024):
        ran |= check_run(imp, budget, _feeds(path, offsets))
    assert ran == bodies


# ------------------------------------------------------ models whose bodies tile


def _cf_feeds(name: str, model: onnx.ModelProto) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(1)
    feeds = []
    for k in range(3):
        x = rng.standard_normal((1, cf_models.C, cf_models.H, cf_models.W)).astype(np.float32)
        x += np.float32((k - 1) * 0.5)
        f = [x]
        if len(model.graph.input) > 1:
            f.append(np.array([k % 2 == 0]))
        feeds.append(f)
    return feeds


@pytest.fixture(scope="module", params=[False, True], ids=["f32", "int8"])
def dtype_models(request) -> dict[str, tuple[onnx.ModelProto, Imported]]:
    out = {}
    for name, build in cf_models.MODELS.items():
        model = build(request.param)
        out[name] = (model, import_model(model, origin=name))
    return out


@pytest.mark.parametrize(
    ("name", "bodies"),
    [
        ("if_input", {"if0/then", "if0/else"}),
        ("loop_chain", {"loop0/body"}),
        ("loop_if", {"loop0/body", "loop0/body/if0/then", "loop0/body/if0/else"}),
    ],
)
def test_bodies_tile_and_run_as_planned(dtype_models, name: str, bodies: set[str]) -> None:
    model, imp = dtype_models[name]
    least = tree_min_budget(main_func(imp.module))
    ran: set[str] = set()
    for budget in (least, least + least // 2, 256 * 1024):
        ran |= check_run(imp, budget, _cf_feeds(name, model))
    assert ran == bodies


def test_reference_of_the_models_matches_onnxruntime(dtype_models) -> None:
    ort = pytest.importorskip("onnxruntime")
    for name, (model, imp) in dtype_models.items():
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        int8 = any(n.op_type == "QuantizeLinear" for n in model.graph.node)
        for inputs in _cf_feeds(name, model):
            feed = {i.name: x for i, x in zip(model.graph.input, inputs)}
            want = sess.run(None, feed)[0]
            got = run_reference(imp.module, imp.weights, inputs)[0]
            # int8: a few output steps of 0.05 over the loop's trips
            tol = 4 * 0.05 + 1e-6 if int8 else 1e-5 * float(np.abs(want).max())
            assert float(np.abs(got - want).max()) <= tol, name


def test_the_smallest_budget_tiles_the_bodies() -> None:
    """At their smallest budget the float32 bodies run in tiles."""
    for name, build in cf_models.MODELS.items():
        model = build(False)
        imp = import_model(model, origin=name)
        least = tree_min_budget(main_func(imp.module))
        low = lowered(imp.module, least)
        whiles_and_ifs = [
            op for op in main_func(low).walk() if loop.BODIES_ATTR in op.attributes
        ]
        tile_loops = [
            op
            for ctl in whiles_and_ifs
            for op in ctl.walk()
            if isinstance(op, scf.ForOp) and loop.KIND_ATTR in op.attributes
        ]
        assert tile_loops, name
        assert interpret(low, imp, _cf_feeds(name, model)[0]).machine.tiles > 0


def test_branches_of_different_needs_each_run_within_the_budget() -> None:
    """The If's branches differ in what they need; both paths run in the budget,
    each branch at its own planned peak, the node holding the larger."""
    model = cf_models.if_input()
    imp = import_model(model, origin="if_input")
    least = tree_min_budget(main_func(imp.module))
    budget = least + least // 2
    tree = plan_tree(main_func(imp.module), budget)
    then, other = (sc for sc in tree.walk() if sc.path)
    assert then.peak != other.peak
    low = lowered(imp.module, budget)
    feeds = _cf_feeds("if_input", model)
    seen = {}
    for inputs in feeds[:2]:
        r = interpret(low, imp, inputs)
        assert tree.plan is not None
        assert r.machine.fast.peak == tree.plan.peak <= budget
        seen.update(r.machine.body_peaks)
    assert seen == {then.path: then.peak, other.path: other.peak}


# ---------------------------------------------------------------- the loop IR


def test_lowered_control_flow_is_scf_with_bodies_in_the_workspace() -> None:
    model = cf_models.loop_if()
    imp = import_model(model, origin="loop_if")
    least = tree_min_budget(main_func(imp.module))
    low = lowered(imp.module, least)
    fn = main_func(low)
    whiles = [op for op in fn.walk() if isinstance(op, scf.WhileOp)]
    ifs = [op for op in fn.walk() if isinstance(op, scf.IfOp)]
    assert len(whiles) == 1 and len(ifs) == 1
    assert ifs[0].parent_op() is whiles[0]
    assert loop.WORKSPACE_ATTR in whiles[0].attributes
    assert not arena_problems(fn, least)


def test_the_verifier_names_a_body_buffer_outside_its_workspace() -> None:
    model = cf_models.loop_chain()
    imp = import_model(model, origin="loop_chain")
    least = tree_min_budget(main_func(imp.module))
    low = lowered(imp.module, least)
    fn = main_func(low)
    (w,) = [op for op in fn.walk() if isinstance(op, scf.WhileOp)]
    from xdsl.dialects import memref
    from xdsl.dialects.builtin import IntegerAttr, i64

    inner = next(op for op in w.after_region.block.ops if isinstance(op, memref.AllocOp))
    inner.attributes[loop.OFFSET_ATTR] = IntegerAttr(1 << 20, i64)
    problems = arena_problems(fn, least)
    assert any("loop0/body" in p and "workspace" in p for p in problems), problems


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("loop_chain", ["'b_add", "(Add) in loop0/body", "8224 bytes are held"]),
        ("if_input", ["(Conv) in if0/", "8208 bytes are held"]),
        ("loop_if", ["(Conv) in loop0/body/if0/then"]),
    ],
)
def test_a_body_that_does_not_fit_names_the_body_the_op_and_the_budget(name, words) -> None:
    imp = import_model(cf_models.MODELS[name](), origin=name)
    least = tree_min_budget(main_func(imp.module))
    with pytest.raises(PassFailedException) as e:
        LowerToLoopsPass(budget=least - 1).apply(Context(), imp.module.clone())
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    assert f"the smallest budget that fits it is {least} bytes" in msg


def test_a_node_that_leaves_its_bodies_nothing_says_so() -> None:
    imp = import_model(cf_models.loop_chain(), origin="loop_chain")
    with pytest.raises(PassFailedException, match="loop0: 'loop_0' holds 8224 bytes .* nothing"):
        LowerToLoopsPass(budget=8192).apply(Context(), imp.module.clone())


# ------------------------------------------------------------------- the C


def _c_or_skip():
    import shutil

    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")


@pytest.mark.parametrize("name", ["if_input", "loop_chain", "loop_if"])
def test_the_c_runs_control_flow_as_the_interpreter(dtype_models, name: str) -> None:
    """Host C (bounds-checked, with stats) equals the reference and the
    interpreter's figures on every path, at the smallest budget."""
    _c_or_skip()
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.backend.c.network import print_network

    model, imp = dtype_models[name]
    least = tree_min_budget(main_func(imp.module))
    low = lowered(imp.module, least)
    src = print_network(low, weights=imp.weights)
    assert "malloc" not in src.c and "free(" not in src.c
    assert "if (" in src.c and ("for (;;)" in src.c) == name.startswith("loop")
    for inputs in _cf_feeds(name, model)[:2]:
        want = run_reference(imp.module, imp.weights, inputs)
        got, stats = run_c(src, None, inputs, variant=("bounds", "stats"), strict=True)
        for g, w in zip(got, want, strict=True):
            same(g, w)
        assert stats == interpret(low, imp, inputs).machine_stats()


def test_a_loop_whose_trip_count_is_not_known_at_import_says_so() -> None:
    from onnx import TensorProto, helper

    from tigris_ir.frontend.onnx_import import ImportDiagnostic

    m = cf_models.loop_chain()
    (node,) = [n for n in m.graph.node if n.op_type == "Loop"]
    node.input[0] = "M"
    m.graph.input.append(helper.make_tensor_value_info("M", TensorProto.INT64, []))
    with pytest.raises(ImportDiagnostic, match="trip count M .* must be a constant at import"):
        import_model(m, origin="runtime_trips")


def test_scan_is_refused_by_name() -> None:
    with pytest.raises(Exception, match="scan outputs are not supported"):
        import_file(INPUTS / "control_flow_scan.onnx")


def test_a_loop_holding_an_if_runs_on_a_cortex_m_board() -> None:
    """int8 loop_if under QEMU (cortex-m4): bit-exact against the reference on
    both branches of its If, skipped without the cross tools."""
    from tigris_ir.backend.c import cortex
    from tigris_ir.backend.c.network import print_network
    from tigris_ir.rtile import targets as tg

    missing = cortex.tools_available()
    if missing is not None:
        pytest.skip(f"no Cortex-M cross tools here: {missing}")
    model = cf_models.loop_if(True)
    imp = import_model(model, origin="loop_if")
    budget = tree_min_budget(main_func(imp.module))
    low = imp.module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), low)
    tile_and_lower(low, target="cortex-m4")
    PlanArenaPass(budget=budget).apply(Context(), low)
    src = print_network(low, weights=imp.weights)
    for inputs in _cf_feeds("loop_if", model)[:2]:
        want = run_reference(imp.module, imp.weights, inputs)
        run = cortex.run_on_target(src, tg.get_target("cortex-m4"), inputs)
        for y, r in zip(run.outputs, want, strict=True):
            assert y.dtype == r.dtype and y.tobytes() == r.tobytes()
