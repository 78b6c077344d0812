"""Writes the small ONNX models the lit tests import (run once; outputs committed).

python tests/lit/Inputs/make_inputs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).parent
RNG = np.random.default_rng(7)


def _w(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(
        RNG.standard_normal(shape).astype(np.float32) * 0.3, name
    )


def _model(nodes, inputs, outputs, inits=(), opset: int = 13) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _fm(
    name: str, *shape: int | str, dtype: int = TensorProto.FLOAT
) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, list(shape))


def conv_relu() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node(
                "Conv", ["input", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]
            ),
            helper.make_node("Relu", ["c"], ["output"], name="relu1"),
        ],
        [_fm("input", 1, 3, 8, 8)],
        [_fm("output", 1, 4, 8, 8)],
        [_w("w", 4, 3, 3, 3), _w("b", 4)],
    )


def conv_bn_gap_gemm() -> onnx.ModelProto:
    bn = [
        numpy_helper.from_array(
            np.abs(RNG.standard_normal(4)).astype(np.float32) + 0.5, n
        )
        for n in ("g", "beta", "mean", "var")
    ]
    return _model(
        [
            helper.make_node(
                "Conv",
                ["x", "w"],
                ["c"],
                name="conv",
                strides=[2, 2],
                auto_pad="SAME_UPPER",
            ),
            helper.make_node(
                "BatchNormalization",
                ["c", "g", "beta", "mean", "var"],
                ["n"],
                name="bn",
            ),
            helper.make_node("GlobalAveragePool", ["n"], ["p"], name="gap"),
            helper.make_node("Flatten", ["p"], ["f"], name="flat"),
            helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
        ],
        [_fm("x", 1, 3, 9, 9)],
        [_fm("y", 1, 5)],
        [_w("w", 4, 3, 3, 3), *bn, _w("fw", 5, 4), _w("fb", 5)],
    )


def conv1d_pool() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node(
                "Conv", ["x", "w", "b"], ["c"], name="conv1d", pads=[2, 2]
            ),
            helper.make_node(
                "MaxPool", ["c"], ["y"], name="pool1d", kernel_shape=[2], strides=[2]
            ),
        ],
        [_fm("x", 1, 2, 16)],
        [_fm("y", 1, 4, 8)],
        [_w("w", 4, 2, 5), _w("b", 4)],
    )


def symbolic() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [_fm("x", "N", 3, 4, 4)],
        [_fm("y", "N", 3, 4, 4)],
    )


def unsupported() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node(
                "Einsum", ["r", "r"], ["y"], name="the_einsum", equation="ij,ij->ij"
            ),
        ],
        [_fm("x", 2, 2)],
        [_fm("y", 2, 2)],
    )


def double_input() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [_fm("x", 1, 4, dtype=TensorProto.DOUBLE)],
        [_fm("y", 1, 4, dtype=TensorProto.DOUBLE)],
    )


def dangling() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
        [_fm("x", 1, 4)],
        [_fm("y", 1, 4)],
    )


def runtime_weight() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="dynconv")],
        [_fm("x", 1, 2, 4, 4), _fm("w", 2, 2, 1, 1)],
        [_fm("y", 1, 2, 4, 4)],
    )


def cubic_resize() -> onnx.ModelProto:
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    return _model(
        [
            helper.make_node(
                "Resize", ["x", "roi", "scales"], ["y"], name="up", mode="cubic"
            )
        ],
        [_fm("x", 1, 2, 4, 4)],
        [_fm("y", 1, 2, 8, 8)],
        [scales, roi],
    )


def resize_concat() -> onnx.ModelProto:
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    return _model(
        [
            helper.make_node(
                "Resize", ["x", "roi", "scales"], ["u"], name="up", mode="linear"
            ),
            helper.make_node("Concat", ["u", "s"], ["y"], name="cat", axis=1),
        ],
        [_fm("x", 1, 2, 4, 4), _fm("s", 1, 3, 8, 8)],
        [_fm("y", 1, 5, 8, 8)],
        [scales, roi],
    )


def whole_map_avgpool() -> onnx.ModelProto:
    return _model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[5, 3])],
        [_fm("x", 1, 4, 5, 3)], [_fm("y", 1, 4, 1, 1)],
    )


def qdq_conv() -> onnx.ModelProto:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the zoo
    import zoo

    return zoo.quantize(conv_relu(), seed=0)


def main() -> None:
    for name, build in [
        ("conv_relu", conv_relu),
        ("conv_bn_gap_gemm", conv_bn_gap_gemm),
        ("conv1d_pool", conv1d_pool),
        ("symbolic", symbolic),
        ("unsupported", unsupported),
        ("double_input", double_input),
        ("runtime_weight", runtime_weight),
        ("cubic_resize", cubic_resize),
        ("resize_concat", resize_concat),
        ("qdq_conv", qdq_conv),
        ("whole_map_avgpool", whole_map_avgpool),
    ]:
        (HERE / f"{name}.onnx").write_bytes(build().SerializeToString())
    (HERE / "dangling.onnx").write_bytes(dangling().SerializeToString())
    good = conv_relu().SerializeToString()
    (HERE / "truncated.onnx").write_bytes(good[: len(good) // 2])
    (HERE / "not_onnx.onnx").write_text("this is not a protobuf\n")
    (HERE / "empty.onnx").write_bytes(b"")
    control_flow_inputs()
    stream_inputs()


# ------------------------------------------------ several outputs (streamed by rows)

STREAM_RNG = np.random.default_rng(13)


def two_outputs() -> onnx.ModelProto:
    """Conv+Relu, then two heads that nothing reads: a 1x1 conv ("dense",
    1x4x8x8) and a 2x2 MaxPool ("coarse", 1x4x4x4)."""

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(
            STREAM_RNG.standard_normal(shape).astype(np.float32) * 0.3, name
        )

    return _model(
        [
            helper.make_node(
                "Conv", ["input", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]
            ),
            helper.make_node("Relu", ["c"], ["r"], name="relu1"),
            helper.make_node("Conv", ["r", "w2", "b2"], ["dense"], name="dense"),
            helper.make_node(
                "MaxPool", ["r"], ["coarse"], name="coarse", kernel_shape=[2, 2], strides=[2, 2]
            ),
        ],
        [_fm("input", 1, 3, 8, 8)],
        [_fm("dense", 1, 4, 8, 8), _fm("coarse", 1, 4, 4, 4)],
        [w("w", 4, 3, 3, 3), w("b", 4), w("w2", 4, 4, 1, 1), w("b2", 4)],
    )


def stream_inputs() -> None:
    """The models of several outputs (their own random stream)."""
    (HERE / "two_outputs.onnx").write_bytes(two_outputs().SerializeToString())


# ----------------------------------------------------------- If and Loop (control flow)

CF_RNG = np.random.default_rng(11)


def _cw(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(
        CF_RNG.standard_normal(shape).astype(np.float32) * 0.3, name
    )


def _scalar(value: object, name: str, dtype: type) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype), name)


def _any(name: str, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    """A subgraph value of unknown shape (our importer infers it)."""
    return helper.make_tensor_value_info(name, dtype, None)


def _if_node(name: str, then_g: onnx.GraphProto, else_g: onnx.GraphProto) -> onnx.NodeProto:
    return helper.make_node(
        "If", ["cnd"], ["y"], name=name, then_branch=then_g, else_branch=else_g
    )


def _loop_inputs(carried: str) -> list[onnx.ValueInfoProto]:
    return [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
        _any(carried),
    ]


def cf_if() -> onnx.ModelProto:
    """If choosing between two conv branches on the sign of the input's mean."""
    then_g = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "wa", "ba"], ["ya"], name="conv_a", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["ya"], ["ta"], name="relu_a"),
        ],
        "then",
        [],
        [_any("ta")],
    )
    else_g = helper.make_graph(
        [
            helper.make_node(
                "Conv", ["x", "wb", "bb"], ["tb"], name="conv_b", pads=[2] * 4, dilations=[2, 2]
            )
        ],
        "else",
        [],
        [_any("tb")],
    )
    return _model(
        [
            helper.make_node("ReduceMean", ["x"], ["m"], name="mean", keepdims=0),
            helper.make_node("Greater", ["m", "zero"], ["cnd"], name="positive"),
            _if_node("branch", then_g, else_g),
            helper.make_node("Relu", ["y"], ["out"], name="post"),
        ],
        [_fm("x", 1, 3, 8, 8)],
        [_fm("out", 1, 4, 8, 8)],
        [_cw("wa", 4, 3, 3, 3), _cw("ba", 4), _cw("wb", 4, 3, 3, 3), _cw("bb", 4),
         _scalar(0.0, "zero", np.float32)],
    )  # fmt: skip


def _conv_body(name: str, extra: list[onnx.NodeProto] | None = None) -> onnx.GraphProto:
    return helper.make_graph(
        [
            helper.make_node("Conv", ["h", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["h2"], name="relu"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            *(extra or []),
        ],
        name,
        _loop_inputs("h"),
        [_any("cond_out", TensorProto.BOOL), _any("h2")],
    )


def cf_loop() -> onnx.ModelProto:
    """Loop applying conv + relu three times to a carried feature map."""
    return _model(
        [
            helper.make_node("Conv", ["x", "w0", "b0"], ["h0"], name="stem", pads=[1, 1, 1, 1]),
            helper.make_node("Loop", ["M", "T", "h0"], ["y"], name="repeat", body=_conv_body("b")),
        ],
        [_fm("x", 1, 3, 8, 8)],
        [_fm("y", 1, 4, 8, 8)],
        [_cw("w0", 4, 3, 3, 3), _cw("b0", 4), _cw("w", 4, 4, 3, 3), _cw("b", 4),
         _scalar(3, "M", np.int64), _scalar(True, "T", np.bool_)],
    )  # fmt: skip


def cf_while() -> onnx.ModelProto:
    """A while loop: no trip count, the condition is computed in the body."""
    body = helper.make_graph(
        [
            helper.make_node("Conv", ["h", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("Add", ["h", "r"], ["s"], name="residual"),
            helper.make_node("Add", ["s", "half"], ["h2"], name="bump"),
            helper.make_node("ReduceMean", ["h2"], ["m"], name="mean", keepdims=0),
            helper.make_node("Less", ["m", "limit"], ["go"], name="below"),
        ],
        "body",
        _loop_inputs("h"),
        [_any("go", TensorProto.BOOL), _any("h2")],
        [_scalar(0.5, "half", np.float32)],
    )
    return _model(
        [
            helper.make_node("ReduceMean", ["x"], ["m0"], name="mean0", keepdims=0),
            helper.make_node("Less", ["m0", "limit"], ["go0"], name="below0"),
            helper.make_node("Loop", ["", "go0", "x"], ["y"], name="grow", body=body),
        ],
        [_fm("x", 1, 4, 8, 8)],
        [_fm("y", 1, 4, 8, 8)],
        [_cw("w", 4, 4, 3, 3), _cw("b", 4), _scalar(4.0, "limit", np.float32)],
    )


def cf_nested() -> onnx.ModelProto:
    """A Loop inside an If branch: bodies are planned recursively."""
    then_g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["t"], name="inner", body=_conv_body("inner"))],
        "then",
        [],
        [_any("t")],
    )
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"], name="relu_e")], "else", [], [_any("e")]
    )
    return _model(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], name="peak", keepdims=0),
            helper.make_node("Greater", ["m", "zero"], ["cnd"], name="positive"),
            _if_node("branch", then_g, else_g),
        ],
        [_fm("x", 1, 4, 8, 8)],
        [_fm("y", 1, 4, 8, 8)],
        [_cw("w", 4, 4, 3, 3), _cw("b", 4), _scalar(2, "M", np.int64),
         _scalar(0.0, "zero", np.float32)],
    )  # fmt: skip


def cf_qdq_if() -> onnx.ModelProto:
    """int8 QDQ inside If branches: the fusion reaches into the bodies."""
    wq = CF_RNG.integers(-100, 100, (3, 3, 3, 3)).astype(np.int8)
    bq = CF_RNG.integers(-500, 500, (3,)).astype(np.int32)
    then_g = helper.make_graph(
        [
            helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], name="dqw"),
            helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["bd"], name="dqb"),
            helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="qconv", pads=[1, 1, 1, 1]),
            helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["cq"], name="qc"),
            helper.make_node("DequantizeLinear", ["cq", "sy", "zy"], ["cd"], name="dqc"),
        ],
        "then",
        [],
        [_any("cd")],
    )
    else_g = helper.make_graph(
        [
            helper.make_node("Relu", ["xd"], ["r"], name="relu"),
            helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["rq"], name="qr"),
            helper.make_node("DequantizeLinear", ["rq", "sy", "zy"], ["rd"], name="dqr"),
        ],
        "else",
        [],
        [_any("rd")],
    )
    inits = [
        _scalar(0.05, "sx", np.float32), _scalar(3, "zx", np.int8),
        numpy_helper.from_array(wq, "wq"), _scalar(0.004, "sw", np.float32),
        _scalar(0, "zw", np.int8), numpy_helper.from_array(bq, "bq"),
        _scalar(0.05 * 0.004, "sb", np.float32), _scalar(0, "zb", np.int32),
        _scalar(0.03, "sy", np.float32), _scalar(-2, "zy", np.int8),
        _scalar(0.0, "zero", np.float32),
    ]  # fmt: skip
    return _model(
        [
            helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
            helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dqx"),
            helper.make_node("ReduceMean", ["x"], ["m"], name="mean", keepdims=0),
            helper.make_node("Greater", ["m", "zero"], ["cnd"], name="positive"),
            _if_node("branch", then_g, else_g),
        ],
        [_fm("x", 1, 3, 8, 8)],
        [_fm("y", 1, 3, 8, 8)],
        inits,
    )


def cf_scan() -> onnx.ModelProto:
    """A Loop with a scan output, which the importer refuses."""
    body = _conv_body("body", [helper.make_node("Identity", ["h2"], ["scan"], name="collect")])
    body.output.append(_any("scan"))
    return _model(
        [helper.make_node("Loop", ["M", "", "x"], ["y", "ys"], name="scanning", body=body)],
        [_fm("x", 1, 4, 8, 8)],
        [_fm("y", 1, 4, 8, 8), _fm("ys", 2, 1, 4, 8, 8)],
        [_cw("w", 4, 4, 3, 3), _cw("b", 4), _scalar(2, "M", np.int64)],
    )


def cf_branch_types() -> onnx.ModelProto:
    """If branches of different shapes: no single static type for the output."""
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="keep")], "then", [], [_any("t")]
    )
    pool = helper.make_node(
        "MaxPool", ["x"], ["e"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
    )
    else_g = helper.make_graph(
        [pool],
        "else",
        [],
        [_any("e")],
    )
    return _model(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], name="peak", keepdims=0),
            helper.make_node("Greater", ["m", "zero"], ["cnd"], name="positive"),
            _if_node("shapes", then_g, else_g),
        ],
        [_fm("x", 1, 4, 8, 8)],
        [_fm("y", 1, 4, "h", "w")],
        [_scalar(0.0, "zero", np.float32)],
    )


def cf_body_unsupported() -> onnx.ModelProto:
    """An unsupported operator inside a branch: the diagnostic names the path."""
    then_g = helper.make_graph(
        [helper.make_node("Einsum", ["x", "x"], ["t"], name="the_einsum", equation="ij,ij->ij")],
        "then",
        [],
        [_any("t")],
    )
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"], name="relu_e")], "else", [], [_any("e")]
    )
    return _model(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], name="peak", keepdims=0),
            helper.make_node("Greater", ["m", "zero"], ["cnd"], name="positive"),
            _if_node("branch", then_g, else_g),
        ],
        [_fm("x", 2, 2)],
        [_fm("y", 2, 2)],
        [_scalar(0.0, "zero", np.float32)],
    )


CONTROL_FLOW = [
    ("control_flow_if", cf_if),
    ("control_flow_loop", cf_loop),
    ("control_flow_while", cf_while),
    ("control_flow_nested", cf_nested),
    ("control_flow_qdq_if", cf_qdq_if),
    ("control_flow_scan", cf_scan),
    ("control_flow_branch_types", cf_branch_types),
    ("control_flow_body_unsupported", cf_body_unsupported),
]


def control_flow_inputs() -> None:
    """The If / Loop models alone (their own random stream: the others stay as they are)."""
    for name, build in CONTROL_FLOW:
        (HERE / f"{name}.onnx").write_bytes(build().SerializeToString())


if __name__ == "__main__":
    main()
