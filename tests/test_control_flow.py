"""ONNX If and Loop: the `nn.if` / `nn.loop` ops, their import, reference
execution against onnxruntime, and their plans (each body a model of its own).

The models are the committed `tests/lit/Inputs/control_flow_*.onnx` (written by
`make_inputs.py`); a few edge cases are built here with onnx.helper.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn, tile
from tigris_ir.frontend.onnx_import import ImportDiagnostic, Imported, import_file, import_model
from tigris_ir.passes.backprop_heights import ROWS_ATTR, BackpropHeightsPass
from tigris_ir.passes.form_stages import FormStagesPass
from tigris_ir.passes.fuse_chains import FuseChainsPass
from tigris_ir.plan.ir import main_func, plan_tree, tree_min_budget
from tigris_ir.plan.memory import align
from tigris_ir.reference.executor import run_reference
from tigris_ir.tools.tigris_analyze import analyze

ort = pytest.importorskip("onnxruntime")

INPUTS = Path(__file__).parent / "lit" / "Inputs"


def load(name: str) -> tuple[onnx.ModelProto, Imported]:
    path = INPUTS / f"{name}.onnx"
    return onnx.load(str(path)), import_file(path)


def onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def inputs_of(model: onnx.ModelProto, offsets: tuple[float, ...]) -> list[np.ndarray]:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(5)
    return [rng.standard_normal(dims).astype(np.float32) + np.float32(o) for o in offsets]


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


# --------------------------------------------------------------------- reference


@pytest.mark.parametrize(
    ("name", "offsets"),
    [
        ("control_flow_if", (-1.0, 1.0)),  # the mean's sign picks the branch
        ("control_flow_loop", (0.0, 2.0)),
        ("control_flow_while", (-2.0, 0.0, 5.0)),  # several trips, ..., none
        ("control_flow_nested", (-5.0, 0.0)),
    ],
)
def test_reference_matches_onnxruntime(name: str, offsets: tuple[float, ...]) -> None:
    model, imp = load(name)
    for x in inputs_of(model, offsets):
        want = onnxruntime(model, x)
        got = run_reference(imp.module, imp.weights, [x])[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_if_runs_the_branch_its_condition_picks() -> None:
    model, imp = load("control_flow_if")
    neg, pos = inputs_of(model, (-1.0, 1.0))
    assert neg.mean() < 0 < pos.mean()
    (if_op,) = ops_named(imp.module, "nn.if")
    convs = [
        [op for op in region.walk() if isinstance(op, nn.ConvOp)] for _, region in if_op.bodies()
    ]
    assert [c[0].dilations() for c in convs] == [(1, 1), (2, 2)]  # then, else
    y_neg = run_reference(imp.module, imp.weights, [neg])[0]
    y_pos = run_reference(imp.module, imp.weights, [pos])[0]
    np.testing.assert_allclose(y_neg, onnxruntime(model, neg), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_pos, onnxruntime(model, pos), rtol=1e-5, atol=1e-5)


def test_while_loop_trip_count_follows_the_condition() -> None:
    """No trip at all when the first condition is false: the input comes back."""
    model, imp = load("control_flow_while")
    many, none = inputs_of(model, (-2.0, 5.0))
    np.testing.assert_array_equal(run_reference(imp.module, imp.weights, [none])[0], none)
    y = run_reference(imp.module, imp.weights, [many])[0]
    assert y.mean() >= 4.0 > many.mean()  # it ran until the body's condition failed


def test_int8_body_fuses_and_matches_onnxruntime_to_one_step() -> None:
    model, imp = load("control_flow_qdq_if")
    convs = [op for op in imp.module.walk() if isinstance(op, nn.ConvOp)]
    assert len(convs) == 1 and convs[0].is_quantized()
    assert isinstance(convs[0].parent_op(), nn.IfOp)
    step = 0.03  # the branches' output scale
    for x in inputs_of(model, (-1.0, 1.0)):
        diff = np.abs(run_reference(imp.module, imp.weights, [x])[0] - onnxruntime(model, x))
        assert diff.max() <= step * 1.001


# ------------------------------------------------------------------------ import


def test_bodies_capture_outer_values_and_stay_channels_last() -> None:
    _, imp = load("control_flow_loop")
    (loop,) = ops_named(imp.module, "nn.loop")
    assert isinstance(loop, nn.LoopOp)
    assert loop.trips() == 3 and loop.cond is None
    assert nn.shape_of(loop.inits[0]) == (1, 8, 8, 4)  # NHWC across the boundary
    _, imp = load("control_flow_if")
    (branch,) = ops_named(imp.module, "nn.if")
    assert isinstance(branch, nn.IfOp)
    fn = main_func(imp.module)
    assert fn.body.block.args[0] in branch.captured()


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _tensor_condition_if() -> onnx.ModelProto:
    """An If whose condition is a whole bool tensor, not one element."""
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"])],
        "b",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    )
    return _model(
        [
            helper.make_node("Greater", ["x", "zero"], ["c"], name="elementwise"),
            helper.make_node(
                "If", ["c"], ["y"], name="the_if", then_branch=branch, else_branch=branch
            ),
        ],
        [numpy_helper.from_array(np.array(0.0, np.float32), "zero")],
    )


def _loop_model(cond: bool, trips: int, change_shape: bool = False) -> onnx.ModelProto:
    step = (
        helper.make_node("MaxPool", ["h"], ["h2"], kernel_shape=[2, 2], strides=[2, 2])
        if change_shape
        else helper.make_node("Relu", ["h"], ["h2"])
    )
    body = helper.make_graph(
        [step, helper.make_node("Identity", ["c"], ["c2"])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("c2", TensorProto.BOOL, None),
            helper.make_tensor_value_info("h2", TensorProto.FLOAT, None),
        ],
    )
    inits = [
        numpy_helper.from_array(np.array(cond), "cond"),
        numpy_helper.from_array(np.array(trips, np.int64), "M"),
    ]
    loop = helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="the_loop", body=body)
    return _model([loop], inits)


def test_constant_false_condition_never_runs_the_body() -> None:
    imp = import_model(_loop_model(False, 3))
    assert not ops_named(imp.module, "nn.loop")
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_reference(imp.module, imp.weights, [x])[0], x)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: load("control_flow_scan")[0],
            "node 0 'scanning' (Loop): error: Loop's scan outputs are not supported",
        ),
        (
            lambda: load("control_flow_branch_types")[0],
            "node 2 'shapes' (If): error: output 0 ('y') is tensor<1x8x8x4xf32> in then_branch "
            "but tensor<1x4x4x4xf32> in else_branch",
        ),
        (
            lambda: load("control_flow_body_unsupported")[0],
            "node 2 'branch' (If): then_branch: node 0 'the_einsum' (Einsum): error: "
            "unsupported operator 'Einsum'",
        ),
        (
            lambda: _loop_model(True, 2, change_shape=True),
            "node 0 'the_loop' (Loop): error: loop-carried value 0 ('x') enters the body as "
            "tensor<1x4x4x2xf32> but leaves it as tensor<1x2x2x2xf32>",
        ),
        (
            _tensor_condition_if,
            "node 1 'the_if' (If): error: the condition 'c' must be a single-element bool "
            "tensor, got tensor<1x4x4x2xi1>",
        ),
    ],
    ids=["scan", "branch-types", "body-op", "carried-type", "tensor-condition"],
)
def test_import_diagnostics_name_the_node(build, message: str) -> None:
    with pytest.raises(ImportDiagnostic) as e:
        import_model(build(), origin="m.onnx")
    assert message in str(e.value)


# ---------------------------------------------------------------------- planning


@pytest.mark.parametrize(
    "name", ["control_flow_if", "control_flow_loop", "control_flow_while", "control_flow_nested"]
)
@pytest.mark.parametrize("tight", [False, True])
def test_each_body_is_planned_under_what_its_node_leaves(name: str, tight: bool) -> None:
    _, imp = load(name)
    fn = main_func(imp.module)
    budget = tree_min_budget(fn) + 64 if tight else 64 * 1024
    tree = plan_tree(fn, budget)
    assert tree.fits and tree.plan is not None
    for sc in tree.walk():
        assert sc.plan is not None
        g = sc.view.graph
        for body in sc.bodies:
            assert body.owner is not None
            node = g.nodes[g.node_index(body.owner)]
            io = dict.fromkeys((*node.inputs, *node.outputs))
            held = sum(
                align(g.tensors[t].nbytes)
                for t in io
                if not g.tensors[t].is_const and t not in sc.view.workspace
            )
            assert body.held == held and body.budget == sc.budget - held
            assert body.peak <= body.budget
            # the node's workspace is its largest body's peak
            owners = [b for b in sc.bodies if b.owner == body.owner]
            ws = [t for t in node.outputs if t in sc.view.workspace]
            assert [sc.view.workspace[t] for t in ws] == [max(b.peak for b in owners)]
        # the enclosing plan holds the node's operands, results and body peak at once
        for s in sc.plan.stages:
            for n in s.nodes:
                if sc.view.ops[n].name in ("nn.if", "nn.loop"):
                    bodies = [b for b in sc.bodies if b.owner == n]
                    assert s.peak >= bodies[0].held + max(b.peak for b in bodies)
                    assert s.peak <= budget


@pytest.mark.parametrize("name", ["control_flow_if", "control_flow_while", "control_flow_nested"])
def test_min_budget_accounts_for_bodies(name: str) -> None:
    _, imp = load(name)
    fn = main_func(imp.module)
    m = tree_min_budget(fn)
    assert plan_tree(fn, m).fits
    smaller = plan_tree(fn, m - 1)
    assert not smaller.fits
    # at the minimum, some body has to tile or some node is at its limit
    assert any(b.peak + b.held > 0 for b in plan_tree(fn, m).walk())


def test_analyze_reports_the_bodies_and_whether_each_fits() -> None:
    path = INPUTS / "control_flow_nested.onnx"
    r = analyze(path, 64 * 1024, {}, with_min=True)
    assert r["fits"] and r["min_budget_bytes"] > 0
    (then, other) = r["bodies"]
    assert (then["name"], other["name"]) == ("if0/then", "if0/else")
    assert then["op"] == other["op"] == "if_3"
    (inner,) = then["bodies"]
    assert inner["name"] == "if0/then/loop0/body" and inner["trips"] == 2
    assert [s["name"] for s in inner["stages"]] == ["if0/then/loop0/body/s0"]
    assert all(b["fits"] for b in (then, other, inner))
    # a loop of two trips counts its body's MACs twice; the If its largest branch
    assert then["macs"] == 2 * inner["macs"] and r["macs"] == then["macs"]
    low = analyze(path, r["min_budget_bytes"] - 1, {}, with_min=False)
    assert not low["fits"] and low["not_fitting"]
    assert low["not_fitting_min_budget_bytes"] <= r["min_budget_bytes"]


# ---------------------------------------------------------------------- passes


def _tile(imp: Imported, budget: int) -> ModuleOp:
    module = imp.module.clone()
    ctx = Context()
    FormStagesPass(budget=budget).apply(ctx, module)
    FuseChainsPass(budget=budget).apply(ctx, module)
    BackpropHeightsPass(budget=budget).apply(ctx, module)
    module.verify()
    return module


@pytest.mark.parametrize("name", ["control_flow_if", "control_flow_while", "control_flow_nested"])
def test_tiling_passes_tile_bodies_and_keep_the_numbers(name: str) -> None:
    model, imp = load(name)
    fn = main_func(imp.module)
    budget = tree_min_budget(fn) + 256
    tiled = _tile(imp, budget)
    tree = plan_tree(main_func(tiled), budget)
    for sc in tree.walk():
        if sc.plan is None:
            continue
        names = [
            op.sym_name.data
            for op in sc.block.walk()
            if isinstance(op, tile.StageOp) and op.parent_op() is not None
        ]
        assert f"{sc.prefix}s0" in names
    body_stages = [
        op
        for op in tiled.walk()
        if isinstance(op, tile.StageOp) and "/" in op.sym_name.data and op.band is not None
    ]
    assert body_stages, "at this budget some body has to tile"
    assert all(
        ROWS_ATTR in inner.attributes
        for st in body_stages
        for inner in st.body.block.ops
        if isinstance(inner, nn.NNOp)
    )
    for x in inputs_of(model, (-1.0, 1.0)):
        want = run_reference(imp.module, imp.weights, [x])[0]
        np.testing.assert_array_equal(run_reference(tiled, imp.weights, [x])[0], want)


def test_passes_are_idempotent_on_bodies() -> None:
    _, imp = load("control_flow_loop")
    once = _tile(imp, 4096)
    twice = once.clone()
    ctx = Context()
    FuseChainsPass(budget=4096).apply(ctx, twice)
    BackpropHeightsPass(budget=4096).apply(ctx, twice)
    assert str(once) == str(twice)


def test_a_body_that_cannot_fit_is_a_diagnostic() -> None:
    _, imp = load("control_flow_if")
    with pytest.raises(PassFailedException, match="if0: 'if_3' holds 1808 bytes"):
        FormStagesPass(budget=1500).apply(Context(), imp.module.clone())
