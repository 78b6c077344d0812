"""Quantized forms users produce: onnxruntime's QOperator format and
import onto the int8 ops of the QDQ form, checked
against onnxruntime running the QOperator model itself (within one
quantization step of the output: onnxruntime's integer kernels round their
own way) and bit for bit against our import of the equivalent QDQ model.
Per-axis scales on activations are read per axis (as data, around float ops);
a DequantizeLinear whose parameters differ from its QuantizeLinear's, and
forms of ConvInteger outside its rules are refused by name, never read
another way."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(5)
MS = "com.microsoft"


def _t(name: str, v) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(v), name)


def _model(nodes, inits, shape_in, shape_out) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape_in))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape_out))],
        inits,
    )
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)]
    )
    m.ir_version = 7
    return m


def ort_run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def common_inits():
    rng = np.random.default_rng(7)  # the same values for both forms of the model
    w = rng.integers(-60, 60, (8, 3, 3, 3)).astype(np.int8)
    ws = (rng.uniform(0.5, 1.5, 8) * 0.01).astype(np.float32)
    b = rng.integers(-500, 500, 8).astype(np.int32)
    return [
        _t("xs", np.float32(0.02)),
        _t("xz", np.int8(3)),
        _t("w", w),
        _t("ws", ws),
        _t("wz", np.zeros(8, np.int8)),
        _t("cs", np.float32(0.05)),
        _t("cz", np.int8(-5)),
        _t("b", b),
        _t("as", np.float32(0.08)),
        _t("az", np.int8(-2)),
        _t("gs", np.float32(0.04)),
        _t("gz", np.int8(1)),
        _t("ls", np.float32(0.03)),
        _t("lz", np.int8(0)),
    ]


def qoperator_model() -> onnx.ModelProto:
    """Q -> QLinearConv -> QLinearLeakyRelu -> QLinearAdd (with the conv) ->
    QLinearConcat -> QLinearAveragePool -> QLinearGlobalAveragePool -> DQ."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
        helper.make_node(
            "QLinearConv",
            ["xq", "xs", "xz", "w", "ws", "wz", "cs", "cz", "b"],
            ["c"],
            name="conv",
            pads=[1, 1, 1, 1],
        ),
        helper.make_node(
            "QLinearLeakyRelu", ["c", "cs", "cz", "ls", "lz"], ["l"], name="lrelu",
            domain=MS, alpha=0.1,
        ),
        helper.make_node(
            "QLinearAdd", ["c", "cs", "cz", "l", "ls", "lz", "as", "az"], ["a"], name="add",
            domain=MS,
        ),
        helper.make_node(
            "QLinearConcat", ["as", "az", "a", "as", "az", "c", "cs", "cz"], ["cat"],
            name="concat", domain=MS, axis=1,
        ),
        helper.make_node(
            "QLinearAveragePool", ["cat", "as", "az", "as", "az"], ["p"], name="pool",
            domain=MS, kernel_shape=[2, 2], strides=[2, 2],
        ),
        helper.make_node(
            "QLinearGlobalAveragePool", ["p", "as", "az", "gs", "gz"], ["g"], name="gap",
            domain=MS,
        ),
        helper.make_node("DequantizeLinear", ["g", "gs", "gz"], ["y"], name="dq"),
    ]  # fmt: skip
    return _model(nodes, common_inits(), (1, 3, 8, 8), (1, 16, 1, 1))


def qdq_equivalent() -> onnx.ModelProto:
    def dq(x, s, z, y, **kw):
        return helper.make_node("DequantizeLinear", [x, s, z], [y], **kw)

    def q(x, s, z, y):
        return helper.make_node("QuantizeLinear", [x, s, z], [y])

    inits = common_inits()
    xs, ws = 0.02, numpy_helper.to_array(inits[3])
    inits += [
        _t("bs", (np.float32(xs) * ws).astype(np.float32)),
        _t("bz", np.zeros(8, np.int32)),
    ]
    nodes = [
        q("x", "xs", "xz", "xq"),
        dq("xq", "xs", "xz", "xd"),
        dq("w", "ws", "wz", "wd", axis=0),
        dq("b", "bs", "bz", "bd", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["cf"], pads=[1, 1, 1, 1]),
        q("cf", "cs", "cz", "c"),
        dq("c", "cs", "cz", "cd1"),
        helper.make_node("LeakyRelu", ["cd1"], ["lf"], alpha=0.1),
        q("lf", "ls", "lz", "l"),
        dq("c", "cs", "cz", "cd2"),
        dq("l", "ls", "lz", "ld"),
        helper.make_node("Add", ["cd2", "ld"], ["af"]),
        q("af", "as", "az", "a"),
        dq("a", "as", "az", "ad"),
        dq("c", "cs", "cz", "cd3"),
        helper.make_node("Concat", ["ad", "cd3"], ["catf"], axis=1),
        q("catf", "as", "az", "cat"),
        dq("cat", "as", "az", "catd"),
        helper.make_node("AveragePool", ["catd"], ["pf"], kernel_shape=[2, 2], strides=[2, 2]),
        q("pf", "as", "az", "p"),
        dq("p", "as", "az", "pd"),
        helper.make_node("GlobalAveragePool", ["pd"], ["gf"]),
        q("gf", "gs", "gz", "g"),
        dq("g", "gs", "gz", "y"),
    ]
    return _model(nodes, inits, (1, 3, 8, 8), (1, 16, 1, 1))


def test_qoperator_model_imports_onto_the_int8_ops() -> None:
    model = qoperator_model()
    imp = import_model(model, origin="qop")
    names = [op.name for op in imp.module.walk()]
    assert names.count("nn.conv") == 1 and "nn.global_average_pool" in names
    # the conv is the fused int8 one: its weight is int8
    conv = next(op for op in imp.module.walk() if op.name == "nn.conv")
    assert "i8" in str(conv.operands[1].type)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    (got,) = run_reference(imp.module, imp.weights, [x])
    want = ort_run(model, x)
    assert np.max(np.abs(got - want)) <= 0.04 + 1e-6  # one step of the output scale
    qdq = import_model(qdq_equivalent(), origin="qdq")
    (same,) = run_reference(qdq.module, qdq.weights, [x])
    np.testing.assert_array_equal(got, same)


def test_qlinear_matmul_and_sigmoid() -> None:
    b = RNG.integers(-100, 100, (6, 4)).astype(np.int8)
    inits = [
        _t("xs", np.float32(0.05)),
        _t("xz", np.int8(0)),
        _t("b", b),
        _t("bs", np.float32(0.01)),
        _t("bz", np.int8(0)),
        _t("ms", np.float32(0.1)),
        _t("mz", np.int8(4)),
        _t("ss", np.float32(1 / 256)),
        _t("sz", np.int8(-128)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
        helper.make_node(
            "QLinearMatMul",
            ["xq", "xs", "xz", "b", "bs", "bz", "ms", "mz"],
            ["m"],
            name="mm",
        ),
        helper.make_node(
            "QLinearSigmoid",
            ["m", "ms", "mz", "ss", "sz"],
            ["s"],
            name="sig",
            domain=MS,
        ),
        helper.make_node("DequantizeLinear", ["s", "ss", "sz"], ["y"], name="dq"),
    ]
    model = _model(nodes, inits, (2, 6), (2, 4))
    imp = import_model(model, origin="qmm")
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    (got,) = run_reference(imp.module, imp.weights, [x])
    want = ort_run(model, x)
    assert np.max(np.abs(got - want)) <= 1 / 256 + 1e-7


def test_conv_integer_with_auto_pad_is_refused_by_name() -> None:
    inits = [
        _t("w", np.ones((2, 3, 1, 1), np.int8)),
        _t("xs", np.float32(1)),
        _t("xz", np.int8(0)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
        helper.make_node("ConvInteger", ["xq", "w"], ["acc"], name="ci", auto_pad="SAME_UPPER"),
        helper.make_node("Cast", ["acc"], ["y"], name="cast", to=TensorProto.FLOAT),
    ]
    model = _model(nodes, inits, (1, 3, 2, 2), (1, 2, 2, 2))
    with pytest.raises(ImportDiagnostic, match=r"node 1 'ci' \(ConvInteger\).*auto_pad"):
        import_model(model, origin="ci.onnx")


def test_a_dequantize_with_other_parameters_than_its_quantize_is_refused() -> None:
    inits = [_t("s", np.float32(0.1)), _t("z", np.int8(0)), _t("s2", np.float32(0.2))]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
        helper.make_node("DequantizeLinear", ["q", "s2", "z"], ["d"], name="dq"),
        helper.make_node("Relu", ["d"], ["y"], name="relu"),
    ]
    model = _model(nodes, inits, (1, 3, 4, 4), (1, 3, 4, 4))
    with pytest.raises(ImportDiagnostic, match="node 1 'dq'.*scale 0.2.*quantized with scale 0.1"):
        import_model(model, origin="m.onnx")


def test_per_axis_dequantize_of_an_activation_is_read_per_axis() -> None:
    inits = [
        _t("s", np.array([0.1, 0.5, 2.0], np.float32)),
        _t("z", np.array([1, -3, 5], np.int8)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q", axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq", axis=1),
        helper.make_node("Relu", ["d"], ["y"], name="relu"),
    ]
    model = _model(nodes, inits, (1, 3, 4, 4), (1, 3, 4, 4))
    imported = import_model(model, origin="pa.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32) * 3
    (y,) = run_reference(imported.module, imported.weights, [x])
    report = compare_with_onnxruntime(model.SerializeToString(), {"x": x}, [y], ["y"])
    assert report.ok and report.diffs[0].worst == 0, report.text


def test_qoperator_models_tile_and_run_as_c() -> None:
    """The QOperator model above, and QLinearMul with QLinearSigmoid, through
    every oracle of `ops_oracle.check_model`: within one step of onnxruntime
    running the QOperator nodes, planned at the minimum budget and run tiled
    (interpreter and C) equal to the untiled reference."""
    from ops_oracle import check_model  # noqa: PLC0415

    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = check_model(qoperator_model(), {"x": x}, min_tiles=1)
    assert got.worst == [0.0] or max(got.worst) <= 1, got.worst

    x = RNG.standard_normal((1, 4, 6, 10)).astype(np.float32) * 2
    got = check_model(qlinear_mul_model(), {"x": x})  # at its minimum budget, 48 B
    assert got.budget == 48 and max(got.worst) <= 1, (got.budget, got.worst)


def qlinear_mul_model() -> onnx.ModelProto:
    """QLinearMul by a per-channel int8 constant, then QLinearSigmoid."""
    rng = np.random.default_rng(11)
    inits = [
        _t("xs", np.float32(0.05)),
        _t("xz", np.int8(2)),
        _t("k", rng.integers(-90, 90, (1, 4, 1, 1)).astype(np.int8)),
        _t("ks", np.float32(0.02)),
        _t("kz", np.int8(-3)),
        _t("ms", np.float32(0.01)),
        _t("mz", np.int8(-1)),
        _t("ss", np.float32(1 / 256)),
        _t("sz", np.int8(-128)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
        helper.make_node(
            "QLinearMul", ["xq", "xs", "xz", "k", "ks", "kz", "ms", "mz"], ["m"], name="mul",
            domain=MS,
        ),
        helper.make_node(
            "QLinearSigmoid", ["m", "ms", "mz", "ss", "sz"], ["s"], name="sig", domain=MS
        ),
        helper.make_node("DequantizeLinear", ["s", "ss", "sz"], ["y"], name="dq"),
    ]  # fmt: skip
    return _model(nodes, inits, (1, 4, 6, 10), (1, 4, 6, 10))


@pytest.mark.parametrize("budget", [48, 64, 80, 96])
def test_int8_mul_by_a_channel_constant_builds_strict_at_small_budgets(budget: int) -> None:
    """The int8 Mul by a per-channel constant planned at 48 to 96 bytes: the C
    builds with -Werror and runs bit-exact to the untiled reference, plain,
    with its counters and with every access checked against its arena.

    gcc 12 -O3 once warned here (-Wstringop-overflow, "writing 32 bytes into a
    region of size 0"): with the band kernels inlined into the run, it
    vectorised the Mul kernel's loop over a tile's cells, whose count is read
    from the plan's tile table and which gcc could not bound, and its 32-byte
    stores (eight cells of four channels) on the path for eight cells or more
    would pass the arena. The table keeps that count at 2 to 4 cells (the
    bounds-checked build checks it), so the warned path never ran: a false
    positive. The kernels are now functions gcc propagates no arena address
    into (noipa), so it sees no object to overflow."""
    from ops_oracle import check_model, lowered  # noqa: PLC0415

    from tigris_ir.backend.c.build import run_c  # noqa: PLC0415

    x = np.random.default_rng(budget).standard_normal((1, 4, 6, 10)).astype(np.float32) * 2
    got = check_model(qlinear_mul_model(), {"x": x}, budget=budget)
    assert max(got.worst) <= 1 and got.tiles >= 2, (got.worst, got.tiles)
    (ref,) = run_reference(got.module, got.weights, [x])
    low = lowered(got.module, budget)
    for variant in ("default", "bounds"):
        (y,), _ = run_c(low, got.weights, [x], variant=variant, strict=True)
        np.testing.assert_array_equal(y, ref, err_msg=variant)


def _conv_act_qdq(act: str) -> onnx.ModelProto:
    """x -> Q -> DQ -> Conv (int8 per-channel weights, int32 bias) -> `act`
    -> Q -> DQ -> y: an exporter's fused activation left between the
    convolution and its QuantizeLinear (TFLite's, through tf2onnx)."""
    w = RNG.integers(-90, 90, (8, 4, 3, 3)).astype(np.int8)
    sw = RNG.uniform(0.004, 0.01, 8).astype(np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        *(
            [helper.make_node("Relu", ["c"], ["a"])]
            if act == "relu"
            else [helper.make_node("Clip", ["c", "lo", "hi"], ["a"])]
        ),
        helper.make_node("QuantizeLinear", ["a", "sy", "zy"], ["aq"]),
        helper.make_node("DequantizeLinear", ["aq", "sy", "zy"], ["y"]),
    ]
    inits = [
        _t("sx", np.float32(0.03)), _t("zx", np.int8(2)),
        _t("w", w), _t("sw", sw), _t("zw", np.zeros(8, np.int8)),
        _t("b", RNG.integers(-500, 500, 8).astype(np.int32)),
        _t("sb", (0.03 * sw).astype(np.float32)),
        _t("zb", np.zeros(8, np.int32)),
        _t("lo", np.float32(0.0)), _t("hi", np.float32(6.0)),
        _t("sy", np.float32(0.04)), _t("zy", np.int8(-100)),
    ]
    return _model(nodes, inits, (1, 4, 10, 10), (1, 8, 10, 10))


@pytest.mark.parametrize("act", ["relu", "clip"])
def test_an_activation_between_a_convolution_and_its_quantize_is_fused(act: str) -> None:
    """Conv -> Relu (or Clip 0..6) -> QuantizeLinear: the int8 convolution,
    then the activation on its int8 result (exact: quantization is
    monotone), within 1 LSB of onnxruntime; before, the convolution fell to
    the float path and was refused ('the weight must be a constant')."""
    model = _conv_act_qdq(act)
    imported = import_model(model)
    ops = [op for op in imported.module.walk() if op.name in ("nn.conv", "nn.relu", "nn.clip")]
    assert [op.name for op in ops] == ["nn.conv", f"nn.{act}"]
    assert all(str(op.results[0].type).endswith("#nn.q<0.04 : -100>>") for op in ops)
    x = RNG.standard_normal((1, 4, 10, 10)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])
    report = compare_with_onnxruntime(model.SerializeToString(), {"x": x}, ours, ["y"])
    assert report.ok, report.text


def _tflite_style(transpose: bool) -> onnx.ModelProto:
    """A fully quantized model as tf2onnx writes a TFLite one: an int8 NHWC
    image, DequantizeLinear, (Transpose to NCHW, QuantizeLinear,
    DequantizeLinear,) Conv -> Relu -> QuantizeLinear, DequantizeLinear."""
    w = RNG.integers(-60, 60, (8, 3, 3, 3)).astype(np.int8)
    sw = RNG.uniform(0.005, 0.01, 8).astype(np.float32)
    src = "img_f"
    nodes = [helper.make_node("DequantizeLinear", ["img", "s_in", "z_in"], ["img_f"])]
    if transpose:
        nodes += [
            helper.make_node("Transpose", ["img_f"], ["t"], perm=[0, 3, 1, 2]),
            helper.make_node("QuantizeLinear", ["t", "s_in", "z_in"], ["tq"]),
            helper.make_node("DequantizeLinear", ["tq", "s_in", "z_in"], ["td"]),
        ]
        src = "td"
    nodes += [
        helper.make_node("DequantizeLinear", ["w", "s_w", "z_w"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "s_b"], ["bd"], axis=0),
        helper.make_node("Conv", [src, "wd", "bd"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["yr"]),
        helper.make_node("QuantizeLinear", ["yr", "s_out", "z_out"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "s_out", "z_out"], ["out"]),
    ]
    inits = [
        _t("s_in", np.float32(0.02)), _t("z_in", np.int8(-3)),
        _t("w", w), _t("s_w", sw), _t("z_w", np.zeros(8, np.int8)),
        _t("b", RNG.integers(-100, 100, 8).astype(np.int32)),
        _t("s_b", (0.02 * sw).astype(np.float32)),
        _t("s_out", np.float32(0.05)), _t("z_out", np.int8(-128)),
    ]
    shape = [1, 16, 16, 3] if transpose else [1, 3, 16, 16]
    g = helper.make_graph(
        nodes,
        "tflite_style",
        [helper.make_tensor_value_info("img", TensorProto.INT8, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8, 16, 16])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("transpose", [False, True], ids=["nchw", "nhwc"])
def test_a_fully_quantized_input_is_the_quantized_tensor(transpose: bool) -> None:
    """An int8 input every reader dequantizes with one scale and zero point
    is that quantized tensor: the convolution reads it as int8 (no float
    copy of it, no QuantizeLinear again); an NHWC one transposed inside its
    QDQ group is taken as it arrives (no transpose). Within 1 LSB of
    onnxruntime; the plan at 2K bit-exact in the interpreter and the C."""
    from ops_oracle import check_model

    model = _tflite_style(transpose)
    shape = (1, 16, 16, 3) if transpose else (1, 3, 16, 16)
    img = RNG.integers(-128, 128, shape).astype(np.int8)
    checked = check_model(model, {"img": img}, budget=2048)
    fn = next(iter(checked.module.ops))
    arg = fn.body.block.args[0]  # type: ignore[attr-defined]
    assert str(arg.type).endswith("#nn.q<0.02 : -3>>")
    names = [op.name for op in fn.body.block.ops]  # type: ignore[attr-defined]
    assert "nn.transpose" not in names and "nn.quantize" not in names
    assert "nn.dequantize_linear" not in names


def test_an_int8_input_read_otherwise_stays_raw_integers() -> None:
    """An int8 input that one reader dequantizes and another casts is raw
    integers: its type carries no quantization."""
    nodes = [
        helper.make_node("DequantizeLinear", ["img", "s", "z"], ["f"]),
        helper.make_node("Cast", ["img"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["f", "c"], ["out"]),
    ]
    g = helper.make_graph(
        nodes,
        "raw",
        [helper.make_tensor_value_info("img", TensorProto.INT8, [1, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])],
        [_t("s", np.float32(0.5)), _t("z", np.int8(1))],
    )
    imported = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    fn = next(iter(imported.module.ops))
    assert "#nn.q" not in str(fn.body.block.args[0].type)  # type: ignore[attr-defined]


def test_the_nhwc_int8_input_streams_by_rows_into_the_c(tmp_path, capsys) -> None:
    """The TFLite-style model's int8 NHWC input, taken as it arrives (3
    bytes a pixel, 48 a row), is streamed by rows into the host C in one
    SRAM of 9K (the 8 KiB float output resident): each of its 16 rows asked
    once, the output equal to the untiled reference bit for bit."""
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "tflite_style.onnx"
    onnx.save(_tflite_style(True), path)
    argv = [str(path), "-m", "9K", "--slow-budget", "0", "--stream-input", "--stats"]
    rc = main([*argv, "--random-input", "0", "--check", "--backend", "c"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "input rows streamed: 16 (768 bytes)" in out
    assert "equals the untiled reference (0.00e+00 relative at most" in out
