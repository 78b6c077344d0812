"""Import-time simplification and opset semantics, against onnxruntime.

Models built here with the patterns exporters write (a Flatten as
Shape-Gather-Unsqueeze-Concat-Reshape, weights reshaped, transposed and cast
at run time, ConstantOfShape / Range / Expand / Equal / Where shape
subgraphs, Dropout with its mask, Identity, no-op Cast) import with those
parts folded, match onnxruntime, and run tiled equal to the untiled
reference. Old-opset semantics (Softmax before 13, Pad before 11) are
checked against onnxruntime, which implements each version.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_file, import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func
from tigris_ir.reference.executor import run_function, run_reference

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(11)


def _i64(name: str, values) -> onnx.NodeProto:
    return helper.make_node(
        "Constant",
        [],
        [name],
        value=numpy_helper.from_array(np.asarray(values, np.int64), name + "_v"),
    )


def _w(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits=(), opset: int = 13) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def _fm(name: str, *shape, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, list(shape))


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def assert_close(got: np.ndarray, want: np.ndarray, rel: float = 1e-5) -> None:
    assert got.shape == want.shape
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert err <= rel, err


def op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def tiled_equals_untiled(imported, x: np.ndarray, budget: int) -> None:
    fn = main_func(imported.module)
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    xi = np.ascontiguousarray(np.moveaxis(x, 1, -1)) if x.ndim == 4 else x
    res = run_loop_module(m, imported.weights, [xi])
    (ref,) = run_function(fn, imported.weights, [xi])
    assert res.stats.fast_peak <= budget
    assert_close(res.outputs[0], ref)


# ----------------------------------------------------------------- exporters


def exporter_flatten() -> onnx.ModelProto:
    """conv -> relu -> Flatten written as Shape-Gather-Unsqueeze-Concat-Reshape
    -> Gemm whose weight is reshaped, transposed and cast at run time."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["r_id"], name="id"),
        helper.make_node("Shape", ["r_id"], ["s"], name="shape"),
        _i64("zero", 0),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
        _i64("ax0", [0]),
        _i64("minus1", [-1]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["r_id", "target"], ["flat"], name="flatten"),
        helper.make_node("Reshape", ["fcw_flat", "fcw_shape"], ["fcw_r"], name="w_reshape"),
        helper.make_node("Transpose", ["fcw_r"], ["fcw_t"], name="w_transpose", perm=[1, 0]),
        helper.make_node("Cast", ["fcw_t"], ["fcw"], name="w_cast", to=TensorProto.FLOAT),
        helper.make_node("Cast", ["flat"], ["flat_f"], name="noop_cast", to=TensorProto.FLOAT),
        helper.make_node("Dropout", ["flat_f"], ["drop", "mask"], name="dropout"),
        helper.make_node("Cast", ["mask"], ["mask_f"], name="mask_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["drop", "mask_f"], ["kept"], name="apply_mask"),
        helper.make_node("Gemm", ["kept", "fcw", "fcb"], ["y"], name="fc"),
    ]
    # reorder so that every value is defined before use (Constants first)
    consts = [n for n in nodes if n.op_type == "Constant"]
    rest = [n for n in nodes if n.op_type != "Constant"]
    inits = [
        _w("w", 4, 3, 3, 3),
        _w("b", 4),
        numpy_helper.from_array(
            (RNG.standard_normal(4 * 6 * 6 * 5) * 0.1).astype(np.float64), "fcw_flat"
        ),
        numpy_helper.from_array(np.array([5, 4 * 6 * 6], np.int64), "fcw_shape"),
        _w("fcb", 5),
    ]
    return _model(consts + rest, [_fm("x", 1, 3, 6, 6)], [_fm("y", 1, 5)], inits)


def test_exporter_flatten_and_weight_reshape_fold_and_match_onnxruntime() -> None:
    model = exporter_flatten()
    imp = import_model(model, origin="exporter")
    s = imp.simplified
    assert s is not None
    assert s.folded["Shape"] == 1 and s.folded["Gather"] == 1 and s.folded["Concat"] == 1
    assert s.folded["Transpose"] == 1 and s.folded["Reshape"] == 1  # the weight's
    assert s.removed["Identity"] == 1 and s.removed["Dropout"] == 1
    assert s.removed["Cast"] == 1  # the no-op one; the weight's Cast folds
    kept = {n.op_type for n in s.model.graph.node}
    assert kept == {"Conv", "Relu", "Reshape", "Mul", "Gemm"}, kept  # the mask's Cast folds
    ops = op_names(imp.module)
    assert "nn.gemm" in ops and ops.count("nn.transpose") <= 1  # only the activation's
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    (got,) = run_reference(imp.module, imp.weights, [x])
    assert_close(got, want)
    tiled_equals_untiled(imp, x, 2048)


def shape_subgraphs() -> onnx.ModelProto:
    """ConstantOfShape, Range, Expand, Equal and Where computing a bias and a
    Reshape target from static shapes."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        _i64("one", 1),
        _i64("two", 2),
        helper.make_node("Gather", ["s", "one"], ["c"], name="gather_c", axis=0),
        helper.make_node("Unsqueeze", ["c", "ax0"], ["c1"], name="unsq"),
        _i64("ax0", [0]),
        helper.make_node(
            "ConstantOfShape",
            ["c1"],
            ["ones"],
            name="cos",
            value=numpy_helper.from_array(np.array([1.0], np.float32), "v"),
        ),
        _i64("zero", 0),
        helper.make_node("Range", ["zero", "c", "one"], ["idx"], name="range"),
        helper.make_node("Cast", ["idx"], ["idx_f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Equal", ["idx", "two"], ["is2"], name="eq"),
        helper.make_node("Where", ["is2", "ones", "idx_f"], ["bias"], name="where"),
        helper.make_node("Reshape", ["bias", "bshape"], ["bias_r"], name="bias_reshape"),
        _i64("bshape", [1, 3, 1, 1]),
        helper.make_node("Expand", ["bias_r", "s4"], ["bias4"], name="expand"),
        _i64("s4", [1, 3, 4, 1]),
        helper.make_node("Add", ["x", "bias_r"], ["y0"], name="add"),
        helper.make_node("Mul", ["y0", "bias4"], ["y1"], name="mul"),
        helper.make_node("Relu", ["y1"], ["y"], name="relu"),
    ]
    consts = [n for n in nodes if n.op_type == "Constant"]
    rest = [n for n in nodes if n.op_type != "Constant"]
    return _model(consts + rest, [_fm("x", 1, 3, 4, 5)], [_fm("y", 1, 3, 4, 5)])


def test_shape_subgraphs_fold_to_constants() -> None:
    model = shape_subgraphs()
    imp = import_model(model, origin="shapes")
    s = imp.simplified
    assert s is not None
    for op in ("Shape", "Gather", "ConstantOfShape", "Range", "Equal", "Where", "Expand"):
        assert s.folded[op] == 1, (op, s.folded)
    assert [n.op_type for n in s.model.graph.node] == ["Add", "Mul", "Relu"]
    x = RNG.standard_normal((1, 3, 4, 5)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    (got,) = run_reference(imp.module, imp.weights, [x])
    assert_close(got, want)
    tiled_equals_untiled(imp, x, 1024)


def test_diagnostics_name_the_original_node_after_removals() -> None:
    nodes = [
        helper.make_node("Identity", ["x"], ["a"], name="id0"),
        helper.make_node("Dropout", ["a"], ["b"], name="drop1"),
        helper.make_node("Identity", ["b"], ["c"], name="id2"),
        helper.make_node("Det", ["c"], ["y"], name="det3"),
    ]
    model = _model(nodes, [_fm("x", 1, 4)], [_fm("y", 1, 4)])
    with pytest.raises(ImportDiagnostic) as e:
        import_model(model, origin="m.onnx")
    assert e.value.where == "m.onnx: node 3 'det3' (Det)"


def test_a_symbolic_dimension_is_fixed_by_input_shape() -> None:
    """A Flatten written with Shape on an input of symbolic size: without
    --input-shape the diagnostic names the input, the dimension and the
    option; with it the shape subgraph folds."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "ax0"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
    ]
    model = _model(nodes, [_fm("x", 1, 3, "h", "w")], [_fm("y", 1, "k")], inits)
    with pytest.raises(ImportDiagnostic) as e:
        import_model(model, origin="m.onnx")
    assert "input 'x'" in str(e.value) and "symbolic dimension 'h'" in str(e.value)
    assert "--input-shape x:1x3x1x1" in str(e.value)
    imp = import_model(model, origin="m.onnx", input_shapes={"x": (1, 3, 4, 5)})
    assert imp.simplified is not None and imp.simplified.folded["Shape"] == 1
    x = RNG.standard_normal((1, 3, 4, 5)).astype(np.float32)
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, x.reshape(1, -1))


def test_a_shape_known_only_at_run_time_is_named() -> None:
    """NonZero's output length depends on the data: the Shape of it names the
    tensor and its dimension (ONNX axes), after NonZero itself."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("NonZero", ["r"], ["nz"], name="nonzero"),
        helper.make_node("Shape", ["nz"], ["s"], name="shape"),
        helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape"),
    ]
    model = _model(nodes, [_fm("x", 2, 3)], [_fm("y", "a", "b")])
    from tigris_ir.frontend import onnx_import

    imp = onnx_import._Importer(model, "m.onnx", {})
    imp.simplified = onnx_import.simplify(model)
    imp.index()
    cause = imp.runtime_cause("s")
    assert cause is not None and "dimension 1 of 'nz'" in cause and "run time" in cause, cause
    with pytest.raises(ImportDiagnostic, match="node 1 'nonzero' \\(NonZero\\).*'NonZero'"):
        import_model(model, origin="m.onnx")


def test_old_and_future_opsets_are_refused() -> None:
    for v in (5, onnx.defs.onnx_opset_version() + 1):
        m = _model([helper.make_node("Relu", ["x"], ["y"])], [_fm("x", 1, 4)], [_fm("y", 1, 4)])
        m.opset_import[0].version = v
        with pytest.raises(ImportDiagnostic, match=f"opset {v} of the default ONNX domain"):
            import_model(m, origin="m.onnx")


# ------------------------------------------------------------ opset semantics


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("opset", "axis"), [(9, None), (11, 1), (11, 2), (13, 1), (13, None)])
def test_softmax_axis_and_flattening_follow_the_opset(op: str, opset: int, axis) -> None:
    kw = {} if axis is None else {"axis": axis}
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
        helper.make_node(op, ["c"], ["y"], name="softmax", **kw),
    ]
    model = _model(
        nodes,
        [_fm("x", 1, 3, 4, 4)],
        [_fm("y", 1, 5, 4, 4)],
        [_w("w", 5, 3, 1, 1), _w("b", 5)],
        opset=opset,
    )
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model, origin="softmax")
    (got,) = run_reference(imp.module, imp.weights, [x])
    assert_close(got, want)


@pytest.mark.parametrize("opset", [7, 10, 11, 18])
def test_pad_value_follows_the_opset(opset: int) -> None:
    pads = [0, 0, 1, 2, 0, 0, 2, 1]
    if opset < 11:
        node = helper.make_node("Pad", ["x"], ["y"], name="pad", pads=pads, value=1.5)
        inits = []
    else:
        node = helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pad")
        inits = [
            numpy_helper.from_array(np.array(pads, np.int64), "p"),
            numpy_helper.from_array(np.array(1.5, np.float32), "v"),
        ]
    model = _model([node], [_fm("x", 1, 2, 3, 3)], [_fm("y", 1, 2, 6, 6)], inits, opset=opset)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model, origin="pad")
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, want)


def test_pad_wrap_of_opset_19_runs_tiled() -> None:
    """Wrap padding (opset 19) of a feature map, then a conv: against
    onnxruntime, tiled in the interpreter and the C; before 19 it is refused."""
    from ops_oracle import check_model, make_model, rand  # noqa: PLC0415

    nodes = [
        helper.make_node("Pad", ["x", "p"], ["xp"], mode="wrap"),
        helper.make_node("Conv", ["xp", "w"], ["y"]),
    ]
    inits = {"p": np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64), "w": rand((4, 3, 3, 3), 2, 0.4)}
    model = make_model(nodes, {"x": (1, 3, 8, 6)}, ["y"], inits, opset=19)
    check_model(model, {"x": rand((1, 3, 8, 6), 3)})
    old = make_model(nodes, {"x": (1, 3, 8, 6)}, ["y"], inits, opset=18)
    with pytest.raises(ImportDiagnostic, match="mode 'wrap' exists from opset 19"):
        import_model(old, origin="pad")


@pytest.mark.parametrize("opset", [7, 9, 10])
def test_upsample_and_resize_10_scale_asymmetrically(opset: int) -> None:
    scales = np.array([1, 1, 2, 3], np.float32)
    if opset == 7:
        node = helper.make_node("Upsample", ["x"], ["y"], name="up", scales=list(scales))
        inits = []
    else:
        op = "Upsample" if opset == 9 else "Resize"
        node = helper.make_node(op, ["x", "s"], ["y"], name="up")
        inits = [numpy_helper.from_array(scales, "s")]
    model = _model([node], [_fm("x", 1, 2, 3, 3)], [_fm("y", 1, 2, 6, 9)], inits, opset=opset)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model, origin="up")
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, want)


def test_pad_axes_input_of_opset_18() -> None:
    node = helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], name="pad")
    inits = [
        numpy_helper.from_array(np.array([1, 2, 0, 1], np.int64), "p"),
        numpy_helper.from_array(np.array([2, -1], np.int64), "ax"),
    ]
    model = _model([node], [_fm("x", 1, 2, 3, 3)], [_fm("y", 1, 2, 4, 6)], inits, opset=18)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model, origin="pad")
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"])
def test_reduce_with_no_axes_and_noop_is_the_input(op: str) -> None:
    """noop_with_empty_axes with empty axes keeps the input (ReduceL2, which
    onnxruntime computes as sqrt(x * x) then, is refused by name)."""
    opset = 13 if op == "ReduceSum" else 18
    node = helper.make_node(op, ["x", "a"], ["r"], name="r", noop_with_empty_axes=1)
    relu = helper.make_node("Relu", ["r"], ["y"], name="relu")
    inits = [numpy_helper.from_array(np.array([], np.int64), "a")]
    model = _model([node, relu], [_fm("x", 1, 2, 3, 3)], [_fm("y", 1, 2, 3, 3)], inits, opset)
    if op == "ReduceL2":
        with pytest.raises(ImportDiagnostic, match="noop_with_empty_axes is supported where"):
            import_model(model, origin="r")
        return
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model, origin="r")
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("opset", [7, 12])
def test_dropout_giving_a_graph_output_with_its_mask(opset: int) -> None:
    """A Dropout whose output is the graph's keeps its name (the simplifier
    cannot rename it); with a mask output it is still the identity. In
    training mode it is refused by name."""
    ins = ["x"] if opset < 12 else ["x", "r", "t"]
    node = helper.make_node("Dropout", ins, ["y", "mask"], name="drop")
    inits = []
    if opset >= 12:
        inits = [
            numpy_helper.from_array(np.array(0.5, np.float32), "r"),
            numpy_helper.from_array(np.array(False), "t"),
        ]
    model = _model([node], [_fm("x", 1, 2, 3, 3)], [_fm("y", 1, 2, 3, 3)], inits, opset=opset)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    imp = import_model(model, origin="drop")
    (got,) = run_reference(imp.module, imp.weights, [x])
    np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])
    if opset >= 12:
        model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array(True), "t"))
        with pytest.raises(ImportDiagnostic, match="Dropout in training mode"):
            import_model(model, origin="drop")


def test_ir3_initializers_listed_as_inputs() -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    w = _w("w", 2, 3, 1, 1)
    g = helper.make_graph(
        nodes, "g", [_fm("x", 1, 3, 2, 2), _fm("w", 2, 3, 1, 1)], [_fm("y", 1, 2, 2, 2)], [w]
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    imp = import_model(model, origin="ir3")
    fn = main_func(imp.module)
    assert len(fn.body.block.args) == 1
    x = RNG.standard_normal((1, 3, 2, 2)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    (got,) = run_reference(imp.module, imp.weights, [x])
    assert_close(got, want)


def test_external_data_is_read_beside_the_model(tmp_path, monkeypatch) -> None:
    model = exporter_flatten()
    d = tmp_path / "model_dir"
    d.mkdir()
    stored = onnx.ModelProto()
    stored.CopyFrom(model)  # saving moves the tensors out of the proto
    onnx.save_model(
        stored,
        d / "m.onnx",
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="m.weights",
        size_threshold=0,
    )
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    imp = import_file(d / "m.onnx")
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (got,) = run_reference(imp.module, imp.weights, [x])
    (want,) = ort_run(model, {"x": x})
    assert_close(got, want)
    (d / "m.weights").unlink()
    with pytest.raises(ImportDiagnostic, match="external file 'm.weights'.*beside the model"):
        import_file(d / "m.onnx")


# ------------------------------------------------------------ channel shuffle


def test_single_axis_gather_finds_a_channel_shuffle_and_nothing_else() -> None:
    from tigris_ir.frontend.simplify import single_axis_gather

    shuffle = [
        ("reshape", (1, 2, 3, 4, 5)),
        ("transpose", (0, 2, 1, 3, 4)),
        ("reshape", (1, 6, 4, 5)),
    ]
    assert single_axis_gather((1, 6, 4, 5), shuffle) == (1, [0, 3, 1, 4, 2, 5])
    # a reshape there and back moves nothing: not a gather
    same = [("reshape", (1, 2, 3, 4, 5)), ("reshape", (1, 6, 4, 5))]
    assert single_axis_gather((1, 6, 4, 5), same) is None
    # a transpose of H and W moves two axes
    hw = [("reshape", (1, 6, 4, 5)), ("transpose", (0, 1, 3, 2)), ("reshape", (1, 6, 4, 5))]
    assert single_axis_gather((1, 6, 4, 5), hw) is None
    # space-to-depth style: channels and rows mix
    mix = [
        ("reshape", (1, 6, 2, 2, 5)),
        ("transpose", (0, 2, 1, 3, 4)),
        ("reshape", (1, 6, 4, 5)),
    ]
    assert single_axis_gather((1, 6, 4, 5), mix) is None


def test_a_channel_shuffle_becomes_a_gather_that_tiles() -> None:
    """ShuffleNet's Reshape(N, g, C/g, H, W) -> Transpose(0, 2, 1, 3, 4) ->
    Reshape(N, C, H, W) between two convolutions imports as one nn.gather
    along the channels, matches onnxruntime, and plans in strips at a
    budget below the tensors' size (the 5-D reshapes needed them whole)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        _i64("s5", [1, 2, 4, 16, 16]),
        helper.make_node("Reshape", ["c1", "s5"], ["r5"], name="split_groups"),
        helper.make_node("Transpose", ["r5"], ["t5"], name="swap", perm=[0, 2, 1, 3, 4]),
        _i64("s4", [1, 8, 16, 16]),
        helper.make_node("Reshape", ["t5", "s4"], ["sh"], name="merge_groups"),
        helper.make_node("Conv", ["sh", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
    ]
    consts = [n for n in nodes if n.op_type == "Constant"]
    rest = [n for n in nodes if n.op_type != "Constant"]
    model = _model(
        consts + rest,
        [_fm("x", 1, 3, 16, 16)],
        [_fm("y", 1, 4, 16, 16)],
        [_w("w1", 8, 3, 3, 3), _w("w2", 4, 8, 3, 3)],
    )
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    imp = import_model(model)
    names = op_names(imp.module)
    assert "nn.gather" in names and "nn.reshape" not in names and "nn.transpose" not in names
    assert_close(run_reference(imp.module, imp.weights, [x])[0], want)
    tiled_equals_untiled(imp, x, 4096)  # one 16x16x8 f32 tensor alone is 8 KiB


# ------------------------------------------------------ checker diagnostics


def test_a_checker_error_inside_a_body_names_the_if_and_the_body_node() -> None:
    """onnx's checker nests a body's error inside its If's; the diagnostic
    names both nodes and gives the innermost rule (it said only
    'Inference error(s):'). An unnamed node is found by its operator."""
    from tigris_ir.frontend.validate import check_model

    out = _fm("y", 1, 4)
    then = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["t"], name="bad_softmax", axis=5)],
        "then_body",
        [],
        [_fm("t", 1, 4)],
    )
    els = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"], name="ok_relu")], "else_body", [], [_fm("e", 1, 4)]
    )
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=els)
    g = helper.make_graph([node], "g", [_fm("c", dtype=TensorProto.BOOL), _fm("x", 1, 4)], [out])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(Exception) as e:
        check_model(m.SerializeToString(), m, "m.onnx")
    assert str(e.value) == (
        "m.onnx: node 0 'branch' (If): body node 'bad_softmax' (Softmax): error: "
        "'axis' must be in [-2 , 1]. Its actual value is: 5"
    )
    conv = helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0])
    g = helper.make_graph(
        [conv], "g", [_fm("x", 1, 3, 8, 8)], [_fm("y", 1, 4, 6, 6)], [_w("w", 4, 3, 3, 3)]
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(Exception) as e:
        check_model(m.SerializeToString(), m, "m.onnx")
    assert str(e.value) == (
        "m.onnx: node 0 '' (Conv): error: Attribute strides must only contain positive values"
    )


def _versioned(opset: int) -> onnx.ModelProto:
    """Clip, Split, ReduceMean, ReduceSum, Squeeze and Unsqueeze written as
    `opset` has them: attributes before the version that made them inputs
    (Clip 11, Split / ReduceSum / Squeeze / Unsqueeze 13, ReduceMean 18)."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, v) -> str:
        inits.append(numpy_helper.from_array(np.asarray(v), name))
        return name

    if opset < 11:
        nodes.append(helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.8))
    else:
        lo, hi = const("lo", np.float32(-0.5)), const("hi", np.float32(0.8))
        nodes.append(helper.make_node("Clip", ["x", lo, hi], ["c"]))
    if opset < 13:
        nodes.append(helper.make_node("Split", ["c"], ["s0", "s1"], axis=1, split=[1, 3]))
    else:
        nodes.append(helper.make_node("Split", ["c", const("sp", [1, 3])], ["s0", "s1"], axis=1))
    if opset < 18:
        nodes.append(helper.make_node("ReduceMean", ["s1"], ["m"], axes=[3], keepdims=1))
    else:
        nodes.append(helper.make_node("ReduceMean", ["s1", const("am", [3])], ["m"], keepdims=1))
    if opset < 13:
        nodes += [
            helper.make_node("ReduceSum", ["s0"], ["r"], axes=[2], keepdims=0),
            helper.make_node("Squeeze", ["m"], ["q"], axes=[3]),
            helper.make_node("Unsqueeze", ["q"], ["u"], axes=[0]),
        ]
    else:
        nodes += [
            helper.make_node("ReduceSum", ["s0", const("ar", [2])], ["r"], keepdims=0),
            helper.make_node("Squeeze", ["m", const("aq", [3])], ["q"]),
            helper.make_node("Unsqueeze", ["q", const("au", [0])], ["u"]),
        ]
    return _model(
        nodes,
        [_fm("x", 1, 4, 6, 8)],
        [_fm("r", 1, 1, 8), _fm("u", 1, 1, 3, 6)],
        inits,
        opset=opset,
    )


@pytest.mark.parametrize("opset", [7, 11, 13, 18])
def test_attributes_that_became_inputs_follow_the_opset(opset: int) -> None:
    """Each version's form against onnxruntime (which implements each),
    tiled in the interpreter and as C equal to the untiled reference."""
    from ops_oracle import check_model  # noqa: PLC0415

    x = RNG.standard_normal((1, 4, 6, 8)).astype(np.float32)
    check_model(_versioned(opset), {"x": x}, min_tiles=0)
