"""Writes the small ONNX models the lit tests import (run once; outputs committed).

python tests/lit/Inputs/make_inputs.py
"""

from __future__ import annotations

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
    from tigris_ir import zoo

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


if __name__ == "__main__":
    main()
