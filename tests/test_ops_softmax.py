"""int8 Softmax and LogSoftmax: the integer definition against onnxruntime.

`kernels.softmax_quantized` is the one definition the reference, the
interpreter and the C share (tables made once, integer steps). Per test
shape it is held to 1 quantization step of onnxruntime's QDQ execution
(DequantizeLinear, the float op, QuantizeLinear); whole QDQ models then tile
and run as C bit for bit equal to the reference.

`python tests/test_ops_softmax.py` prints the table of figures.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from ops_oracle import check_model, make_model, rand

from tigris_ir.dialects import nn
from tigris_ir.reference import kernels as K

ort = pytest.importorskip("onnxruntime")

# (op, shape, axis, input scale, output scale, output zero point, dtype)
CASES = [
    ("Softmax", (1, 10), -1, 0.1, 1 / 256, -128, np.int8),
    ("Softmax", (4, 1000), -1, 0.05, 1 / 256, -128, np.int8),
    ("Softmax", (2, 3, 7, 5), 1, 0.3, 1 / 255, -128, np.int8),
    ("Softmax", (3, 5, 2), -1, 0.5, 1 / 255, -128, np.int8),
    ("Softmax", (2, 64, 8), 1, 0.02, 0.0039, -100, np.int8),
    ("Softmax", (8, 33), -1, 0.2, 1 / 255, 0, np.uint8),
    ("LogSoftmax", (1, 10), -1, 0.1, 0.1, 127, np.int8),
    ("LogSoftmax", (4, 1000), -1, 0.05, 0.05, 100, np.int8),
    ("LogSoftmax", (2, 3, 7, 5), 1, 0.3, 0.0625, 127, np.int8),
    ("LogSoftmax", (2, 64, 8), 1, 0.02, 0.03, 60, np.int8),
    ("LogSoftmax", (8, 33), -1, 0.2, 0.1, 255, np.uint8),
]


def _ort_qdq(
    op: str, shape, axis: int, sx: float, sy: float, zy: int, dtype, q: np.ndarray
) -> np.ndarray:
    elem = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    zx = np.array(3 if dtype == np.int8 else 128, dtype)
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "sx", "zx"], ["x"]),
        helper.make_node(op, ["x"], ["y"], axis=axis),
        helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["out"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(sx, np.float32), "sx"),
        numpy_helper.from_array(zx, "zx"),
        numpy_helper.from_array(np.array(sy, np.float32), "sy"),
        numpy_helper.from_array(np.array(zy, dtype), "zy"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("q", elem, shape)],
        [helper.make_tensor_value_info("out", elem, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"q": q})[0]


def lsb_figures(case: tuple, trials: int = 8) -> tuple[int, int, int]:
    """(max LSB difference, elements differing, elements compared). The
    inputs lie in windows 4, 16, 64 and 256 values wide around a random
    centre: narrow windows give outputs across the whole range, not one
    winner and zeros."""
    op, shape, axis, sx, sy, zy, dtype = case
    rng = np.random.default_rng(zlib.crc32(repr((op, shape)).encode()))  # not hash(): salted
    info = np.iinfo(dtype)
    worst = differ = total = 0
    for t in range(trials):
        width = (4, 16, 64, 256)[t % 4]
        centre = rng.integers(info.min, info.max + 1)
        q = centre + rng.integers(-width // 2, width // 2 + 1, shape)
        q = np.clip(q, info.min, info.max).astype(dtype)
        want = _ort_qdq(op, shape, axis, sx, sy, zy, dtype, q).astype(np.int64)
        got = K.softmax_quantized(
            q,
            axis=axis,
            s_x=float(np.float32(sx)),
            s_y=float(np.float32(sy)),
            zp_y=zy,
            dtype=dtype,
            log=op == "LogSoftmax",
        ).astype(np.int64)
        d = np.abs(got - want)
        worst = max(worst, int(d.max()))
        differ += int((d > 0).sum())
        total += d.size
    return worst, differ, total


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}" for c in CASES])
def test_integer_softmax_is_within_one_lsb_of_onnxruntime(case):
    worst, _, _ = lsb_figures(case)
    assert worst <= 1


def test_the_tables_refuse_a_tiny_output_scale():
    with pytest.raises(ValueError, match="output scale >= 2"):
        K.softmax_tables(0.1, 1e-6, False)


def _qdq_softmax_model(op: str, shape, axis: int, sy: float, zy: int):
    """Conv-free QDQ model: x -> Q/DQ -> op -> Q/DQ, as onnxruntime's
    quantizer writes a classifier's head."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node(op, ["xd"], ["y"], axis=axis),
        helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["out"]),
    ]
    inits = {
        "sx": np.array(0.08, np.float32),
        "zx": np.array(-3, np.int8),
        "sy": np.array(sy, np.float32),
        "zy": np.array(zy, np.int8),
    }
    return make_model(nodes, {"x": shape}, ["out"], inits, opset=13)


@pytest.mark.parametrize(
    ("op", "sy", "zy"), [("Softmax", 1 / 256, -128), ("LogSoftmax", 0.1, 127)]
)
def test_qdq_softmax_tiles_and_runs_as_c_bit_for_bit(op: str, sy: float, zy: int):
    """Along the channels of a feature map (whole rows of the channels-last
    layout): the plan tiles the rows, the interpreter and the C equal the
    reference bit for bit, and the reference is within 1 LSB of onnxruntime."""
    shape = (1, 16, 12, 10)
    model = _qdq_softmax_model(op, shape, 1, sy, zy)
    got = check_model(model, {"x": rand(shape, seed=3)})
    assert got.worst[0] <= 1
    ops = [o for o in got.module.walk() if isinstance(o, nn.SoftmaxLikeOp)]
    assert len(ops) == 1 and ops[0].is_quantized()


def test_a_tiny_output_scale_is_a_diagnostic_naming_the_node():
    from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model

    model = _qdq_softmax_model("Softmax", (1, 8), -1, 1e-6, 0)
    with pytest.raises(ImportDiagnostic, match=r"\(Softmax\).*scale >= 2\^-15"):
        import_model(model)


if __name__ == "__main__":
    print("op          shape        axis  s_x    s_y       zp    type   max LSB  differing")
    for c in CASES:
        w, dif, tot = lsb_figures(c)
        op, shape, axis, sx, sy, zy, dt = c
        print(
            f"{op:<11} {'x'.join(map(str, shape)):<12} {axis:>4}  {sx:<6} {sy:<9.6f} {zy:>4}  "
            f"{np.dtype(dt).name:<6} {w:>7}  {dif}/{tot}"
        )
