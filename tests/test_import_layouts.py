"""Layout changes an exporter leaves in a graph, imported without moving data.

A TensorFlow export takes its image channels-last (NHWC) and transposes it
to NCHW before the first convolution, and back before a channels-last
output; a PyTorch export writes a spatial mean as ReduceMean over axes 2 and
3. The kernels run channels-last, so those transposes are no ops, and the
spatial mean is the global average pool, which tiles by bands of rows
(a ReduceMean over H and W would run whole). Each model is held to
onnxruntime, and its plan to the untiled reference in the interpreter and
the C (`ops_oracle.check_model`).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from ops_oracle import check_model, make_model, qdq, rand
from xdsl.ir import Operation

from tigris_ir.frontend.onnx_import import import_model, module_io
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import plan

pytest.importorskip("onnxruntime")


def _op_names(module) -> list[str]:
    return [op.name for op in main_func(module).body.block.ops]


def _conv(name: str, x: str, y: str, **attrs) -> onnx.NodeProto:
    return helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [y], name=name, **attrs)


def _weights(cin: int, cout: int, k: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "w": (rng.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32),
        "b": (rng.standard_normal(cout) * 0.1).astype(np.float32),
    }


def _inits(**convs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {f"{n}_{k}": v for n, wb in convs.items() for k, v in wb.items()}


def test_a_tensorflow_nhwc_input_and_output_move_no_data():
    """NHWC input -> Transpose(0,3,1,2) -> a strided convolution with
    TensorFlow's SAME padding (end only) -> Relu -> 1x1 -> Transpose(0,2,3,1)
    -> NHWC output: no transpose in the IR, the input and output taken and
    given as they are ("plain"), and the plan tiles."""
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        _conv("c1", "nchw", "y1", kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Relu", ["y1"], ["r1"]),
        _conv("c2", "r1", "y2", kernel_shape=[1, 1]),
        helper.make_node("Transpose", ["y2"], ["out"], perm=[0, 2, 3, 1]),
    ]
    inits = _inits(c1=_weights(3, 8, 3, 1), c2=_weights(8, 16, 1, 2))
    model = make_model(nodes, {"image": (1, 24, 24, 3)}, ["out"], inits)
    checked = check_model(model, {"image": rand((1, 24, 24, 3), seed=3)}, budget=4096)
    assert "nn.transpose" not in _op_names(checked.module)
    _, _, in_layouts, _, out_layouts = module_io(checked.module)
    assert (in_layouts, out_layouts) == (["plain"], ["plain"])


def test_an_input_also_read_channels_first_keeps_its_layout():
    """An NHWC input that one reader transposes and another reads as it is
    (an Add with a tensor of its own shape) is not taken channels-last: the
    transpose stays, and both readers see the model's values."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
        helper.make_node("Relu", ["t"], ["a"]),
        helper.make_node("Add", ["x", "x"], ["b"]),
    ]
    model = make_model(nodes, {"x": (1, 6, 5, 4)}, ["a", "b"])
    checked = check_model(model, {"x": rand((1, 6, 5, 4), seed=4)}, c=False, min_tiles=1)
    assert "nn.transpose" in _op_names(checked.module)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_a_spatial_mean_is_the_global_average_pool(keepdims: int):
    """Conv -> Relu -> ReduceMean(axes 2, 3) -> (MatMul without keepdims):
    the mean is a global average pool (and a reshape to (N, C)), no
    transpose; its stage accumulates bands of rows, so the plan fits in less
    than the 32 x 32 x 16 map the mean reads."""
    nodes = [
        _conv("c1", "x", "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["m"], axes=[2, 3], keepdims=keepdims),
    ]
    inits = _inits(c1=_weights(3, 16, 3, 5))
    outs = ["m"]
    if not keepdims:
        nodes.append(helper.make_node("MatMul", ["m", "fc"], ["logits"]))
        inits["fc"] = (np.random.default_rng(6).standard_normal((16, 10)) * 0.2).astype(np.float32)
        outs = ["logits"]
    model = make_model(nodes, {"x": (1, 3, 32, 32)}, outs, inits, opset=13)
    map_bytes = 32 * 32 * 16 * 4
    checked = check_model(model, {"x": rand((1, 3, 32, 32), seed=7)}, budget=map_bytes // 4)
    names = _op_names(checked.module)
    assert "nn.global_average_pool" in names
    assert "nn.reduce_mean" not in names and "nn.transpose" not in names


def test_reductions_without_keepdims_stay_channels_last_where_the_order_allows():
    """ReduceMean over the channels without keepdims leaves (N, H, W) in the
    model's order straight from the channels-last map: no transpose. A
    ReduceMax over H alone leaves (N, C, W), whose order the channels-last
    map does not have: a transpose brings it back. Both equal onnxruntime."""
    nodes = [
        _conv("c1", "x", "y", kernel_shape=[1, 1]),
        helper.make_node("ReduceMean", ["y"], ["per_pixel"], axes=[1], keepdims=0),
        helper.make_node("ReduceMax", ["y"], ["per_column"], axes=[2], keepdims=0),
    ]
    model = make_model(
        nodes, {"x": (1, 3, 8, 6)}, ["per_pixel", "per_column"],
        _inits(c1=_weights(3, 4, 1, 8)), opset=13,
    )
    checked = check_model(model, {"x": rand((1, 3, 8, 6), seed=9)}, c=False, min_tiles=1)
    ops = list(main_func(checked.module).body.block.ops)
    mean = next(op for op in ops if op.name == "nn.reduce_mean")
    producer = mean.operands[0].owner
    assert isinstance(producer, Operation) and producer.name == "nn.conv"  # as the conv wrote it
    assert [op.name for op in ops].count("nn.transpose") == 1


def test_a_transpose_in_a_qdq_group_moves_no_data():
    """An int8 convolution's output transposed back to NHWC inside its own
    QuantizeLinear / DequantizeLinear pair (same scale): the transpose is
    no op, the int8 output as the convolution wrote it, within 1 LSB of
    onnxruntime, and the plan bit-exact with the reference."""
    conv = _conv("c1", "x", "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    cnodes, cinits = qdq(conv, 0.05, 0.1)
    tnodes, tinits = qdq(
        helper.make_node("Transpose", ["y"], ["out"], name="t", perm=[0, 2, 3, 1]), 0.1, 0.1
    )
    inits = {**cinits, **tinits, **_inits(c1=_weights(4, 8, 3, 10))}
    model = make_model(cnodes + tnodes, {"x": (1, 4, 12, 12)}, ["out"], inits)
    checked = check_model(model, {"x": rand((1, 4, 12, 12), seed=11)}, budget=2048)
    assert "nn.transpose" not in _op_names(checked.module)


def test_the_nhwc_input_plans_by_rows():
    """The channels-last input is cut by rows (its H, 20), as any feature
    map: a single-arena plan with the input streamed asks for bands of its
    rows (each of the 20 at least once, halo rows again) and holds less than
    the input and the output whole."""
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        _conv("c1", "nchw", "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    model = make_model(nodes, {"image": (1, 20, 16, 3)}, ["y"], _inits(c1=_weights(3, 4, 3, 12)))
    graph = build_view(main_func(import_model(model).module)).graph
    p = plan(graph, 8192, slow_budget=0, stream_input=True)
    assert p.fits and 20 <= p.stream_rows < 40 and p.peak < 20 * 16 * 3 * 4 + 20 * 16 * 4 * 4


def test_an_explicit_zero_pad_before_a_convolution_is_its_padding():
    """TensorFlow's explicit padding before a VALID strided convolution (a
    Pad of zeros on H and W) becomes the convolution's own pads: no nn.pad
    (which would need its whole input and output at once), the plan tiles
    in less than the padded input."""
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Pad", ["nchw", "pads"], ["padded"], mode="constant"),
        _conv("c1", "padded", "y", kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    inits = {
        "pads": np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64),
        **_inits(c1=_weights(3, 8, 3, 13)),
    }
    model = make_model(nodes, {"image": (1, 32, 32, 3)}, ["out"], inits, opset=13)
    checked = check_model(model, {"image": rand((1, 32, 32, 3), seed=14)}, budget=2048)
    names = _op_names(checked.module)
    assert "nn.pad" not in names and "nn.transpose" not in names


@pytest.mark.parametrize("case", ["value", "channels", "other_reader"])
def test_a_pad_the_convolution_cannot_take_stays(case: str):
    """A Pad of ones, a Pad of the channels, or a Pad another op reads too is
    no convolution's padding: it stays, and the model still equals
    onnxruntime."""
    pads = [0, 0, 1, 1, 0, 0, 1, 1] if case != "channels" else [0, 1, 1, 1, 0, 0, 1, 1]
    pad_in = ["x", "pads"] + (["one"] if case == "value" else [])
    nodes = [
        helper.make_node("Pad", pad_in, ["padded"], mode="constant"),
        _conv("c1", "padded", "y", kernel_shape=[3, 3]),
    ]
    outs = ["y"]
    if case == "other_reader":
        nodes.append(helper.make_node("Relu", ["padded"], ["r"]))
        outs.append("r")
    cin = 4 if case == "channels" else 3
    inits = {
        "pads": np.array(pads, np.int64),
        "one": np.array(1.0, np.float32),
        **_inits(c1=_weights(cin, 4, 3, 15)),
    }
    model = make_model(nodes, {"x": (1, 3, 10, 10)}, outs, inits, opset=13)
    checked = check_model(model, {"x": rand((1, 3, 10, 10), seed=16)}, c=False, min_tiles=1)
    assert "nn.pad" in _op_names(checked.module)


def test_a_tensorflow_mean_over_nhwc_rows_and_columns_is_the_global_average_pool():
    """tf2onnx's classifier head: the last convolution's output transposed
    back to NHWC, then ReduceMean over axes 1 and 2 without keepdims: no
    transpose, a global average pool and a reshape to (N, C)."""
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        _conv("c1", "nchw", "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Transpose", ["y"], ["nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("ReduceMean", ["nhwc"], ["m"], axes=[1, 2], keepdims=0),
    ]
    model = make_model(nodes, {"image": (1, 16, 16, 3)}, ["m"], _inits(c1=_weights(3, 8, 3, 17)),
                       opset=13)
    checked = check_model(model, {"image": rand((1, 16, 16, 3), seed=18)}, budget=2048)
    names = _op_names(checked.module)
    assert "nn.global_average_pool" in names
    assert "nn.transpose" not in names and "nn.reduce_mean" not in names


@pytest.mark.parametrize("op", ["split", "reduce"])
def test_a_channel_split_or_reduction_tiles_by_rows(op: str):
    """ShuffleNetV2's channel split (Split on C, one half through a Relu,
    Concat back) and a mean over the channels: bands cut the first axis of
    more than one element they leave whole (H, not N = 1), so the plan fits
    in less than the 8 KiB map (it needed all 16 KiB at once)."""
    nodes = [_conv("c1", "x", "c", kernel_shape=[1, 1])]
    inits = _inits(c1=_weights(3, 8, 1, 19))
    if op == "split":
        nodes += [
            helper.make_node("Split", ["c", "halves"], ["s1", "s2"], axis=1),
            helper.make_node("Relu", ["s2"], ["r2"]),
            helper.make_node("Concat", ["s1", "r2"], ["y"], axis=1),
        ]
        inits["halves"] = np.array([4, 4], np.int64)
    else:
        nodes.append(helper.make_node("ReduceMean", ["c"], ["y"], axes=[1], keepdims=1))
    model = make_model(nodes, {"x": (1, 3, 16, 16)}, ["y"], inits, opset=13)
    checked = check_model(model, {"x": rand((1, 3, 16, 16), seed=20)}, budget=2048)
    assert checked.tiles >= 8
