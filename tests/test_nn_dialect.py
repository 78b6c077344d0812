"""The nn dialect: tiling classes against the spec, shape inference, the numpy
references on hand-checked examples, and print/parse round trips of every op."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from tigris_ir.dialects import nn
from tigris_ir.plan.tiling_class import TilingClass as T

LIT = Path(__file__).parent / "lit" / "nn"

# ------------------------------------------------------------------------ helpers


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, nn.NN):
        ctx.load_dialect(dialect)
    return ctx


def f32(*shape: int) -> TensorType:
    return nn.tensor_type(shape, np.float32)


def qt(shape: tuple[int, ...], scale: float, zp: int, dtype: type = np.int8) -> TensorType:
    return nn.tensor_type(shape, dtype, nn.QuantAttr(scale, zp))


def build(
    cls: type[IRDLOperation],
    operands: list[TensorType],
    results: list[TensorType],
    props: dict[str, Attribute] | None = None,
    *,
    verify: bool = True,
) -> nn.NNOp:
    """An op on block arguments of the given types (verified unless told not to)."""
    block = Block(arg_types=operands)
    op = cls.create(operands=list(block.args), result_types=results, properties=props or {})
    block.add_op(op)
    if verify:
        op.verify()
    assert isinstance(op, nn.NNOp)
    return op


def tt(shape: tuple[int, ...], dtype: type) -> TensorType:
    return nn.tensor_type(shape, dtype)


def ints(*v: int) -> Attribute:
    return nn.ints_prop(v)


def i(v: int) -> Attribute:
    return nn.int_prop(v)


def fl(v: float) -> Attribute:
    return nn.float_prop(v)


def s(v: str) -> Attribute:
    return StringAttr(v)


def arr(values: object, dtype: type = np.float32) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


# ------------------------------------------------------------------ tiling table

# spec/tiling.md, "Op tileability": the row each operator of the dialect is in.
SPEC_TILING: dict[str, T] = {
    # height (and width) with a halo: Conv, Conv1D, DepthwiseConv, MaxPool, AveragePool
    "nn.conv": T.HALO,
    "nn.max_pool": T.HALO,
    "nn.average_pool": T.HALO,
    # height and width of the expanded output
    "nn.conv_transpose": T.EXPANDED,
    # with the tile, no halo: binary ops, activations, Quantize, Dequantize,
    # elementwise math, channel Concat (see test_concat_tiling_follows_the_axis)
    "nn.relu": T.POINTWISE,
    "nn.sigmoid": T.POINTWISE,
    "nn.tanh": T.POINTWISE,
    "nn.hard_swish": T.POINTWISE,
    "nn.hard_sigmoid": T.POINTWISE,
    "nn.leaky_relu": T.POINTWISE,
    "nn.elu": T.POINTWISE,
    "nn.gelu": T.POINTWISE,
    "nn.prelu": T.POINTWISE,
    "nn.clip": T.POINTWISE,
    "nn.identity": T.POINTWISE,
    "nn.exp": T.POINTWISE,
    "nn.log": T.POINTWISE,
    "nn.sqrt": T.POINTWISE,
    "nn.abs": T.POINTWISE,
    "nn.floor": T.POINTWISE,
    "nn.add": T.POINTWISE,
    "nn.sub": T.POINTWISE,
    "nn.mul": T.POINTWISE,
    "nn.div": T.POINTWISE,
    "nn.max": T.POINTWISE,
    "nn.min": T.POINTWISE,
    "nn.batch_norm": T.POINTWISE,
    "nn.quantize": T.POINTWISE,
    "nn.dequantize": T.POINTWISE,
    # with the tile, whole rows
    "nn.softmax": T.WHOLE_ROWS,
    "nn.log_softmax": T.WHOLE_ROWS,
    # height bands of the output
    "nn.resize": T.RESIZE,
    # bands of input rows, accumulated
    "nn.global_average_pool": T.ACCUMULATE,
    # bands of matrix rows
    "nn.gemm": T.MATRIX_ROWS,
    "nn.matmul": T.MATRIX_ROWS,
    # bands along an independent axis
    "nn.reduce_mean": T.INDEPENDENT_AXIS,
    "nn.reduce_max": T.INDEPENDENT_AXIS,
    "nn.reduce_sum": T.INDEPENDENT_AXIS,
    "nn.split": T.INDEPENDENT_AXIS,
    "nn.concat": T.INDEPENDENT_AXIS,
    "nn.transpose": T.INDEPENDENT_AXIS,
    "nn.pad": T.INDEPENDENT_AXIS,
    # bands of a reshape
    "nn.reshape": T.RESHAPE,
    "nn.flatten": T.RESHAPE,
    "nn.squeeze": T.RESHAPE,
    "nn.unsqueeze": T.RESHAPE,
    # the extended set
    **{
        f"nn.{n}": T.POINTWISE
        for n in (
            "neg", "reciprocal", "softplus", "softsign", "selu", "sign", "shrink", "erf",
            "mish", "pow",
        )
    },
    "nn.reduce_min": T.INDEPENDENT_AXIS,
    "nn.reduce_l2": T.INDEPENDENT_AXIS,
    "nn.reduce_prod": T.INDEPENDENT_AXIS,
    "nn.lrn": T.WHOLE_ROWS,
    "nn.layer_norm": T.WHOLE_ROWS,  # over its last axis; whole otherwise (test below)
    "nn.instance_norm": T.WHOLE,
    **{f"nn.{n}": T.INDEPENDENT_AXIS for n in ("slice", "tile", "expand", "gather")},
    # integer and boolean data: comparisons, logic, Where, Cast with the tile;
    # ArgMax / ArgMin, TopK (as ArgMax: along an axis it does not order) and
    # a run-time Gather along an independent axis
    **{f"nn.{n}": T.POINTWISE for n in ("cast", "not", "and", "or", "xor", "where")},
    **{
        f"nn.{n}": T.INDEPENDENT_AXIS
        for n in ("argmax", "argmin", "top_k_values", "top_k_indices", "take")
    },
    "nn.matmul_integer": T.MATRIX_ROWS,
    "nn.conv_integer": T.HALO,
    "nn.quantize_linear": T.POINTWISE,
    "nn.dequantize_linear": T.POINTWISE,
    # whole: the recurrence reads every step
    "nn.lstm": T.WHOLE,
    "nn.gru": T.WHOLE,
}  # fmt: skip

OPS = [c for c in nn.NN_OPS if issubclass(c, nn.NNOp)]


def test_every_operator_is_an_nn_op_except_the_weight():
    assert [c for c in nn.NN_OPS if c not in OPS] == [nn.WeightOp]
    assert sorted(c.name for c in OPS) == sorted(SPEC_TILING)


@pytest.mark.parametrize("cls", OPS, ids=lambda c: c.name)
def test_tiling_class_matches_the_spec_table(cls: type[nn.NNOp]):
    assert cls.TILING is SPEC_TILING[cls.name]


def test_concat_tiling_follows_the_axis():
    """Concat along the channel axis tiles with the band; along H it does not."""
    x, y = f32(1, 4, 4, 8), f32(1, 4, 4, 2)
    channel = build(nn.ConcatOp, [x, y], [f32(1, 4, 4, 10)], {"axis": i(3)})
    negative = build(nn.ConcatOp, [x, y], [f32(1, 4, 4, 10)], {"axis": i(-1)})
    rows = build(nn.ConcatOp, [x, x], [f32(1, 8, 4, 8)], {"axis": i(1)})
    matrix = build(nn.ConcatOp, [f32(2, 3), f32(2, 5)], [f32(2, 8)], {"axis": i(1)})
    assert channel.tiling() is T.POINTWISE
    assert negative.tiling() is T.POINTWISE
    assert rows.tiling() is T.INDEPENDENT_AXIS
    assert matrix.tiling() is T.INDEPENDENT_AXIS


SPEC_QUANT: dict[str, nn.QuantKind] = {
    **{n: nn.QuantKind.INTEGER for n in ("nn.conv", "nn.conv_transpose", "nn.gemm", "nn.matmul")},
    **{
        n: nn.QuantKind.EXACT
        for n in (
            "nn.identity", "nn.max", "nn.min", "nn.max_pool", "nn.concat", "nn.split",
            "nn.reshape", "nn.flatten", "nn.squeeze", "nn.unsqueeze", "nn.transpose",
            "nn.pad", "nn.reduce_max", "nn.reduce_min", "nn.slice", "nn.tile", "nn.expand",
            "nn.gather", "nn.argmax", "nn.argmin", "nn.take",
            "nn.top_k_values", "nn.top_k_indices",
        )
    },
    # one integer definition: an exp table, int64 sums (kernels.softmax_quantized)
    "nn.softmax": nn.QuantKind.INTEGER,
    "nn.log_softmax": nn.QuantKind.INTEGER,
}  # fmt: skip


@pytest.mark.parametrize("cls", OPS, ids=lambda c: c.name)
def test_quant_kind(cls: type[nn.NNOp]):
    """Only ops that move or select values run on the stored integers."""
    assert cls.QUANT_KIND is SPEC_QUANT.get(cls.name, nn.QuantKind.REAL)


def test_resize_quant_kind_follows_the_mode():
    x = f32(1, 2, 2, 1)
    props = {"coordinate_transformation_mode": s("asymmetric")}
    near = build(nn.ResizeOp, [x], [f32(1, 4, 4, 1)], {**props, "mode": s("nearest")})
    lin = build(nn.ResizeOp, [x], [f32(1, 4, 4, 1)], {**props, "mode": s("linear")})
    assert near.quant_kind() is nn.QuantKind.EXACT
    assert lin.quant_kind() is nn.QuantKind.REAL


# --------------------------------------------------------------- shape inference


def infer(
    cls: type[IRDLOperation], operands: list[TensorType], props: dict[str, Attribute]
) -> list[tuple[int, ...]]:
    """Shapes implied by operands and properties; the result type is a placeholder."""
    return build(cls, operands, [f32(1)], props, verify=False).infer_shapes()


def test_conv_shape_with_strides_dilations_and_pads():
    # H: (10 + 1 + 1 - 3) // 2 + 1 = 5; W: effective kernel (3-1)*2+1 = 5, 12 - 5 + 1 = 8
    props = {
        "kernel": ints(3, 3),
        "strides": ints(2, 1),
        "dilations": ints(1, 2),
        "pads": ints(1, 0, 1, 0),
    }
    shapes = infer(nn.ConvOp, [f32(1, 10, 12, 3), f32(8, 3, 3, 3), f32(8)], props)
    assert shapes == [(1, 5, 8, 8)]


def test_conv_shape_asymmetric_pads():
    # pads are (h_begin, w_begin, h_end, w_end): H 6 + 0 + 2 - 3 + 1 = 6, W 6 + 1 + 0 - 3 + 1 = 5
    props = {"kernel": ints(3, 3), "pads": ints(0, 1, 2, 0)}
    assert infer(nn.ConvOp, [f32(1, 6, 6, 2), f32(4, 3, 3, 2), f32(4)], props) == [(1, 6, 5, 4)]


def test_conv1d_shape():
    # (16 + 2 + 2 - 5) // 3 + 1 = 6
    props = {"kernel": ints(5), "strides": ints(3), "pads": ints(2, 2)}
    assert infer(nn.ConvOp, [f32(1, 16, 4), f32(6, 5, 4), f32(6)], props) == [(1, 6, 6)]


@pytest.mark.parametrize(
    ("size", "pads", "ceil_mode", "expected"),
    [
        (7, (0, 0), 0, 3),  # (7 - 2) // 2 + 1
        (7, (0, 0), 1, 4),  # ceil(5 / 2) + 1: the last window is partial
        (5, (1, 1), 0, 3),  # (5 + 2 - 2) // 2 + 1
        (5, (1, 1), 1, 3),  # ceil gives 4, but that window would start in the end pad
        (6, (0, 0), 1, 3),  # exact fit: ceil changes nothing
    ],
)
def test_pool_shape_with_ceil_mode(size: int, pads: tuple[int, int], ceil_mode: int, expected: int):
    props = {
        "kernel": ints(2, 1),
        "strides": ints(2, 1),
        "pads": ints(pads[0], 0, pads[1], 0),
        "ceil_mode": i(ceil_mode),
    }
    assert infer(nn.MaxPoolOp, [f32(1, size, 3, 2)], props) == [(1, expected, 3, 2)]
    assert infer(nn.AveragePoolOp, [f32(1, size, 3, 2)], props) == [(1, expected, 3, 2)]


def test_conv_transpose_shape_with_output_padding():
    # 2 * (4 - 1) + 1 + (3 - 1) + 1 - 1 - 1 = 8; Cout = 5 per group x 1
    props = {
        "kernel": ints(3, 3),
        "strides": ints(2, 2),
        "pads": ints(1, 1, 1, 1),
        "output_padding": ints(1, 0),
    }
    shapes = infer(nn.ConvTransposeOp, [f32(1, 4, 4, 2), f32(2, 3, 3, 5), f32(5)], props)
    assert shapes == [(1, 8, 7, 5)]


def test_grouped_conv_transpose_shape():
    # weights (Cin, kh, kw, Cout / group): Cout = 3 x group 2 = 6
    props = {"kernel": ints(2, 2), "strides": ints(2, 2), "group": i(2)}
    shapes = infer(nn.ConvTransposeOp, [f32(1, 3, 3, 4), f32(4, 2, 2, 3), f32(6)], props)
    assert shapes == [(1, 6, 6, 6)]


@pytest.mark.parametrize(
    ("a", "b", "trans_a", "trans_b", "expected"),
    [
        ((3, 4), (4, 5), 0, 0, (3, 5)),
        ((4, 3), (4, 5), 1, 0, (3, 5)),
        ((3, 4), (5, 4), 0, 1, (3, 5)),
        ((4, 3), (5, 4), 1, 1, (3, 5)),
    ],
)
def test_gemm_shape_with_transposes(
    a: tuple[int, int], b: tuple[int, int], trans_a: int, trans_b: int, expected: tuple
):
    props = {"trans_a": i(trans_a), "trans_b": i(trans_b)}
    assert infer(nn.GemmOp, [f32(*a), f32(*b), f32(5)], props) == [expected]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((3, 4), (4, 6), (3, 6)),
        ((2, 1, 3, 4), (5, 4, 6), (2, 5, 3, 6)),
        ((2, 3, 4), (4, 6), (2, 3, 6)),
        ((4,), (2, 4, 3), (2, 3)),
        ((2, 3, 4), (4,), (2, 3)),
        ((4,), (4,), ()),
    ],
)
def test_matmul_shape_broadcasts_batch_axes(a: tuple, b: tuple, expected: tuple):
    assert infer(nn.MatMulOp, [f32(*a), f32(*b)], {}) == [expected]


@pytest.mark.parametrize(
    ("axes", "keepdims", "expected"),
    [
        ((1, 2), 1, (1, 1, 1, 8)),
        ((1, 2), 0, (1, 8)),
        ((-1,), 0, (1, 4, 5)),
        ((), 1, (1, 1, 1, 1)),
        ((), 0, ()),
    ],
)
def test_reduce_shape_with_keepdims(axes: tuple, keepdims: int, expected: tuple):
    props = {"axes": ints(*axes), "keepdims": i(keepdims)}
    for cls in (nn.ReduceMeanOp, nn.ReduceMaxOp, nn.ReduceSumOp):
        assert infer(cls, [f32(1, 4, 5, 8)], props) == [expected]


@pytest.mark.parametrize(
    ("axis", "expected"),
    [(0, (1, 160)), (1, (1, 160)), (2, (4, 40)), (-1, (20, 8)), (4, (160, 1)), (-4, (1, 160))],
)
def test_flatten_shape_counts_negative_axes_from_the_back(axis: int, expected: tuple):
    assert infer(nn.FlattenOp, [f32(1, 4, 5, 8)], {"axis": i(axis)}) == [expected]


def test_squeeze_unsqueeze_split_concat_transpose_pad_shapes():
    assert infer(nn.SqueezeOp, [f32(1, 4, 1, 8)], {"axes": ints(0, -2)}) == [(4, 8)]
    assert infer(nn.UnsqueezeOp, [f32(4, 8)], {"axes": ints(0, -1)}) == [(1, 4, 8, 1)]
    split = infer(nn.SplitOp, [f32(1, 4, 4, 10)], {"axis": i(-1), "sizes": ints(3, 7)})
    assert split == [(1, 4, 4, 3), (1, 4, 4, 7)]
    cat = infer(nn.ConcatOp, [f32(1, 2, 4, 8), f32(1, 3, 4, 8)], {"axis": i(1)})
    assert cat == [(1, 5, 4, 8)]
    assert infer(nn.TransposeOp, [f32(1, 4, 5, 8)], {"perm": ints(0, 3, 1, 2)}) == [(1, 8, 4, 5)]
    pads = {"pads": ints(0, 1, 2, 0, 0, 3, 4, 0), "mode": s("constant")}
    assert infer(nn.PadOp, [f32(1, 4, 5, 8)], pads) == [(1, 8, 11, 8)]
    assert infer(nn.GlobalAveragePoolOp, [f32(1, 7, 5, 3)], {}) == [(1, 1, 1, 3)]
    assert infer(nn.AddOp, [f32(1, 4, 1, 8), f32(1, 1, 5, 1)], {}) == [(1, 4, 5, 8)]


# ------------------------------------------------------------------- references


@dataclass
class Case:
    """One op on hand-checked inputs: operand types, result types, properties."""

    cls: type[IRDLOperation]
    operands: list[TensorType]
    results: list[TensorType]
    args: list[np.ndarray]
    expected: list[np.ndarray]
    props: dict[str, Attribute] = field(default_factory=dict)
    tol: float = 1e-6
    name: str = ""

    def op(self) -> nn.NNOp:
        return build(self.cls, self.operands, self.results, self.props)


X5 = arr([-2.0, -0.5, 0.0, 1.0, 4.0])


def unary(
    cls: type[IRDLOperation],
    fn: Callable[[float], float],
    x: np.ndarray = X5,
    props: dict[str, Attribute] | None = None,
    name: str = "",
) -> Case:
    want = arr([fn(float(v)) for v in x])
    t = f32(*x.shape)
    return Case(cls, [t], [t], [x], [want], props or {}, tol=1e-6, name=name)


def hard_swish(v: float) -> float:
    return v * min(max(v + 3.0, 0.0), 6.0) / 6.0


def gelu_tanh(v: float) -> float:
    return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))


RAMP = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
GRID = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
M22 = arr([[1.0, 2.0], [3.0, 4.0]])

CASES: list[Case] = [
    # -------- unary: each value checked against Python's math
    unary(nn.ReluOp, lambda v: max(v, 0.0)),
    unary(nn.SigmoidOp, lambda v: 1.0 / (1.0 + math.exp(-v))),
    unary(nn.TanhOp, math.tanh),
    unary(nn.HardSwishOp, hard_swish),
    unary(
        nn.HardSigmoidOp,
        lambda v: min(max(0.2 * v + 0.5, 0.0), 1.0),
        props={"alpha": fl(0.2), "beta": fl(0.5)},
    ),
    unary(nn.LeakyReluOp, lambda v: v if v >= 0 else 0.1 * v, props={"alpha": fl(0.1)}),
    unary(nn.EluOp, lambda v: v if v > 0 else math.exp(v) - 1.0, props={"alpha": fl(1.0)}),
    unary(nn.GeluOp, lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))),
    unary(nn.GeluOp, gelu_tanh, props={"approximate": s("tanh")}, name="gelu_tanh"),
    unary(nn.ExpOp, math.exp),
    unary(nn.LogOp, math.log, x=arr([0.5, 1.0, math.e, 10.0])),
    unary(nn.SqrtOp, math.sqrt, x=arr([0.0, 2.25, 4.0, 9.0])),
    unary(nn.AbsOp, abs),
    unary(nn.FloorOp, math.floor, x=arr([-1.5, -0.5, 0.0, 1.7, 2.0])),
    unary(
        nn.ClipOp, lambda v: min(max(v, -1.0), 1.0), props={"min": fl(-1.0), "max": fl(1.0)}
    ),
    unary(nn.IdentityOp, lambda v: v),
    # -------- binary ops, a per-column vector broadcast over rows
    Case(nn.AddOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([10, 20])],
         [arr([[11, 22], [13, 24]])]),
    Case(nn.SubOp, [f32(2, 2), f32(2, 1)], [f32(2, 2)], [M22, arr([[1], [2]])],
         [arr([[0, 1], [1, 2]])]),
    Case(nn.MulOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([2, -1])],
         [arr([[2, -2], [6, -4]])]),
    Case(nn.DivOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([2, 4])],
         [arr([[0.5, 0.5], [1.5, 1.0]])]),
    Case(nn.MaxOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([2, 3])],
         [arr([[2, 3], [3, 4]])]),
    Case(nn.MinOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([2, 3])],
         [arr([[1, 2], [2, 3]])]),
    Case(nn.PReluOp, [f32(2, 2), f32(2)], [f32(2, 2)], [arr([[-1, 2], [3, -4]]), arr([0.1, 0.5])],
         [arr([[-0.1, 2], [3, -2]])]),
    # -------- window ops
    # 3x3 ones kernel, pads 1, bias 1: neighbourhood sums of 1..9 plus one
    Case(nn.ConvOp, [f32(1, 3, 3, 1), f32(1, 3, 3, 1), f32(1)], [f32(1, 3, 3, 1)],
         [GRID, np.ones((1, 3, 3, 1), np.float32), arr([1])],
         [arr([[13, 22, 17], [28, 46, 34], [25, 40, 29]]).reshape(1, 3, 3, 1)],
         {"kernel": ints(3, 3), "pads": ints(1, 1, 1, 1)}),
    # depthwise: channel 0 scaled by 2, channel 1 by -1
    Case(nn.ConvOp, [f32(1, 1, 2, 2), f32(2, 1, 1, 1), f32(2)], [f32(1, 1, 2, 2)],
         [arr([[[[1, 2], [3, 4]]]]), arr([2, -1]).reshape(2, 1, 1, 1), arr([0, 0])],
         [arr([[[[2, -2], [6, -4]]]])], {"kernel": ints(1, 1), "group": i(2)},
         name="depthwise"),
    # stride 2, 2x2 ones kernel: each input pixel becomes a 2x2 block
    Case(nn.ConvTransposeOp, [f32(1, 2, 2, 1), f32(1, 2, 2, 1), f32(1)], [f32(1, 4, 4, 1)],
         [M22.reshape(1, 2, 2, 1), np.ones((1, 2, 2, 1), np.float32), arr([0.5])],
         [arr([[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]).reshape(1, 4, 4, 1)
          + 0.5],
         {"kernel": ints(2, 2), "strides": ints(2, 2)}),
    Case(nn.MaxPoolOp, [f32(1, 4, 4, 1)], [f32(1, 2, 2, 1)], [RAMP],
         [arr([[5, 7], [13, 15]]).reshape(1, 2, 2, 1)],
         {"kernel": ints(2, 2), "strides": ints(2, 2)}),
    Case(nn.AveragePoolOp, [f32(1, 4, 4, 1)], [f32(1, 2, 2, 1)], [RAMP],
         [arr([[2.5, 4.5], [10.5, 12.5]]).reshape(1, 2, 2, 1)],
         {"kernel": ints(2, 2), "strides": ints(2, 2)}),
    # a top-left pad: without count_include_pad the padded cells do not count
    Case(nn.AveragePoolOp, [f32(1, 2, 2, 1)], [f32(1, 2, 2, 1)], [M22.reshape(1, 2, 2, 1)],
         [arr([[1, 1.5], [2, 2.5]]).reshape(1, 2, 2, 1)],
         {"kernel": ints(2, 2), "pads": ints(1, 1, 0, 0)}, name="avg_exclude_pad"),
    Case(nn.AveragePoolOp, [f32(1, 2, 2, 1)], [f32(1, 2, 2, 1)], [M22.reshape(1, 2, 2, 1)],
         [arr([[0.25, 0.75], [1, 2.5]]).reshape(1, 2, 2, 1)],
         {"kernel": ints(2, 2), "pads": ints(1, 1, 0, 0), "count_include_pad": i(1)},
         name="avg_include_pad"),
    Case(nn.GlobalAveragePoolOp, [f32(1, 2, 2, 2)], [f32(1, 1, 1, 2)],
         [arr([[[[1, 10], [2, 20]], [[3, 30], [6, 60]]]])], [arr([3, 30]).reshape(1, 1, 1, 2)]),
    # (x - mean) / sqrt(var) * scale + bias, per channel
    Case(nn.BatchNormOp, [f32(1, 2), f32(2), f32(2), f32(2), f32(2)], [f32(1, 2)],
         [arr([[3, 5]]), arr([2, 1]), arr([0, 1]), arr([1, 0]), arr([4, 1])],
         [arr([[2, 6]])], {"epsilon": fl(0.0)}),
    # -------- matrix products
    Case(nn.GemmOp, [f32(2, 2), f32(2, 2), f32(2)], [f32(2, 2)],
         [M22, arr([[1, 0], [0, 1]]), arr([10, 20])], [arr([[7, 14], [11, 18]])],
         {"alpha": fl(2.0), "beta": fl(0.5), "trans_b": i(1)}),
    Case(nn.GemmOp, [f32(2, 1), f32(3, 2), f32(1)], [f32(1, 3)],
         [arr([[1], [2]]), arr([[1, 1], [2, 0], [0, 3]]), arr([1])], [arr([[4, 3, 7]])],
         {"trans_a": i(1), "trans_b": i(1)}, name="gemm_trans_a"),
    Case(nn.MatMulOp, [f32(2, 2), f32(2, 2)], [f32(2, 2)], [M22, arr([[5, 6], [7, 8]])],
         [arr([[19, 22], [43, 50]])]),
    Case(nn.MatMulOp, [f32(2), f32(2, 2, 1)], [f32(2, 1)],
         [arr([1, 2]), arr([[[1], [1]], [[2], [-1]]])], [arr([[3], [0]])], name="matmul_vec"),
    # -------- shape and layout
    Case(nn.ConcatOp, [f32(1, 2), f32(1, 1)], [f32(1, 3)], [arr([[1, 2]]), arr([[3]])],
         [arr([[1, 2, 3]])], {"axis": i(-1)}),
    Case(nn.SplitOp, [f32(5)], [f32(2), f32(3)], [arr([1, 2, 3, 4, 5])],
         [arr([1, 2]), arr([3, 4, 5])], {"axis": i(0), "sizes": ints(2, 3)}),
    Case(nn.ReshapeOp, [f32(2, 3)], [f32(3, 2)], [arr([[1, 2, 3], [4, 5, 6]])],
         [arr([[1, 2], [3, 4], [5, 6]])]),
    Case(nn.FlattenOp, [f32(2, 1, 2)], [f32(2, 2)], [arr([[[1, 2]], [[3, 4]]])],
         [arr([[1, 2], [3, 4]])], {"axis": i(-2)}),
    Case(nn.SqueezeOp, [f32(1, 2, 1)], [f32(2)], [arr([[[1], [2]]])], [arr([1, 2])],
         {"axes": ints(0, 2)}),
    Case(nn.UnsqueezeOp, [f32(2)], [f32(1, 2, 1)], [arr([1, 2])], [arr([[[1], [2]]])],
         {"axes": ints(0, -1)}),
    Case(nn.TransposeOp, [f32(2, 3)], [f32(3, 2)], [arr([[1, 2, 3], [4, 5, 6]])],
         [arr([[1, 4], [2, 5], [3, 6]])], {"perm": ints(1, 0)}),
    Case(nn.PadOp, [f32(3)], [f32(6)], [arr([1, 2, 3])], [arr([9, 9, 1, 2, 3, 9])],
         {"pads": ints(2, 1), "mode": s("constant"), "value": fl(9.0)}),
    Case(nn.PadOp, [f32(3)], [f32(6)], [arr([1, 2, 3])], [arr([3, 2, 1, 2, 3, 2])],
         {"pads": ints(2, 1), "mode": s("reflect")}, name="pad_reflect"),
    Case(nn.PadOp, [f32(3)], [f32(6)], [arr([1, 2, 3])], [arr([1, 1, 1, 2, 3, 3])],
         {"pads": ints(2, 1), "mode": s("edge")}, name="pad_edge"),
    # nearest 2x upsampling repeats every pixel into a 2x2 block
    Case(nn.ResizeOp, [f32(1, 2, 2, 1)], [f32(1, 4, 4, 1)], [M22.reshape(1, 2, 2, 1)],
         [arr([[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]).reshape(1, 4, 4, 1)],
         {"mode": s("nearest"), "coordinate_transformation_mode": s("asymmetric"),
          "nearest_mode": s("floor")}),
    # half_pixel source coordinates -0.25, 0.25, 0.75, 1.25, clamped to [0, 1]
    Case(nn.ResizeOp, [f32(1, 2, 1)], [f32(1, 4, 1)], [arr([0, 1]).reshape(1, 2, 1)],
         [arr([0, 0.25, 0.75, 1]).reshape(1, 4, 1)],
         {"mode": s("linear"), "coordinate_transformation_mode": s("half_pixel")},
         name="resize_linear"),
    # exp of (0, ln 2, ln 3) is (1, 2, 3): the softmax is (1, 2, 3) / 6
    Case(nn.SoftmaxOp, [f32(1, 3)], [f32(1, 3)], [arr([[0, math.log(2), math.log(3)]])],
         [arr([[1 / 6, 2 / 6, 3 / 6]])], {"axis": i(-1)}),
    Case(nn.LogSoftmaxOp, [f32(1, 3)], [f32(1, 3)], [arr([[0, math.log(2), math.log(3)]])],
         [arr([[math.log(1 / 6), math.log(2 / 6), math.log(3 / 6)]])], {"axis": i(1)}),
    Case(nn.ReduceMeanOp, [f32(2, 3)], [f32(2, 1)], [arr([[1, 2, 6], [0, 0, 3]])],
         [arr([[3], [1]])], {"axes": ints(1), "keepdims": i(1)}),
    Case(nn.ReduceMaxOp, [f32(2, 3)], [f32(3)], [arr([[1, 5, 6], [4, 0, 3]])],
         [arr([4, 5, 6])], {"axes": ints(0), "keepdims": i(0)}),
    Case(nn.ReduceSumOp, [f32(2, 3)], [f32()], [arr([[1, 5, 6], [4, 0, 3]])], [arr(19)],
         {"axes": ints(), "keepdims": i(0)}),
    # -------- the extended set
    unary(nn.NegOp, lambda v: -v),
    unary(nn.ReciprocalOp, lambda v: 1.0 / v, x=arr([0.5, 2.0, -4.0, 1.0])),
    unary(nn.SoftplusOp, lambda v: math.log1p(math.exp(v))),
    unary(nn.SoftsignOp, lambda v: v / (1.0 + abs(v))),
    unary(nn.SeluOp, lambda v: 2.0 * v if v > 0 else 2.0 * 1.5 * (math.exp(v) - 1.0),
          props={"alpha": fl(1.5), "gamma": fl(2.0)}),
    unary(nn.SignOp, lambda v: float(np.sign(v)), x=arr([-2.0, 0.0, 3.0])),
    unary(nn.ShrinkOp, lambda v: v + 0.5 if v < -1 else v - 0.5 if v > 1 else 0.0,
          x=arr([-2.0, -0.5, 0.5, 2.0]), props={"bias": fl(0.5), "lambd": fl(1.0)}),
    unary(nn.ErfOp, math.erf),
    unary(nn.MishOp, lambda v: v * math.tanh(math.log1p(math.exp(v)))),
    Case(nn.PowOp, [f32(2, 2), f32(2)], [f32(2, 2)], [M22, arr([2, 0.5])],
         [arr([[1, math.sqrt(2)], [9, 2]])]),
    Case(nn.ReduceMinOp, [f32(2, 3)], [f32(2, 1)], [arr([[1, 5, 6], [4, 0, 3]])],
         [arr([[1], [0]])], {"axes": ints(1), "keepdims": i(1)}),
    Case(nn.ReduceL2Op, [f32(2, 3)], [f32(2, 1)], [arr([[1, 5, 6], [4, 0, 3]])],
         [arr([[math.sqrt(62)], [5]])], {"axes": ints(1), "keepdims": i(1)}),
    Case(nn.ReduceProdOp, [f32(2, 3)], [f32(2)], [arr([[1, 5, 6], [4, 0, 3]])],
         [arr([30, 0])], {"axes": ints(1), "keepdims": i(0)}),
    # channel windows {0,1}, {0,1,2}, {1,2}: squares 5, 14, 13; alpha / size = 1
    Case(nn.LRNOp, [f32(1, 1, 3)], [f32(1, 1, 3)], [arr([[[1, 2, 3]]])],
         [arr([[[1 / 6, 2 / 15, 3 / 14]]])],
         {"size": i(3), "alpha": fl(3.0), "beta": fl(1.0), "bias": fl(1.0)}),
    # mean 2, variance 1: (-1, 1) * (1, 2) + (0, 1)
    Case(nn.LayerNormOp, [f32(1, 2), f32(2), f32(2)], [f32(1, 2)],
         [arr([[1, 3]]), arr([1, 2]), arr([0, 1])], [arr([[-1, 3]])],
         {"axis": i(-1), "epsilon": fl(0.0)}),
    # one channel over two positions: mean 2, variance 1, then * 2 + 1
    Case(nn.InstanceNormOp, [f32(1, 2, 1), f32(1), f32(1)], [f32(1, 2, 1)],
         [arr([[[1], [3]]]), arr([2]), arr([1])], [arr([[[-1], [3]]])],
         {"epsilon": fl(0.0)}),
    # x[::2, ::-1] of a 3 x 2 matrix: rows 0 and 2, columns reversed
    Case(nn.SliceOp, [f32(3, 2)], [f32(2, 2)], [arr([[1, 2], [3, 4], [5, 6]])],
         [arr([[2, 1], [6, 5]])],
         {"starts": ints(0, 1), "ends": ints(3, -1), "steps": ints(2, -1)}),
    Case(nn.TileOp, [f32(1, 2)], [f32(2, 4)], [arr([[1, 2]])],
         [arr([[1, 2, 1, 2], [1, 2, 1, 2]])], {"repeats": ints(2, 2)}),
    Case(nn.ExpandOp, [f32(2, 1)], [f32(2, 3)], [arr([[1], [2]])],
         [arr([[1, 1, 1], [2, 2, 2]])], {"shape": ints(1, 3)}),
    Case(nn.GatherOp, [f32(2, 3)], [f32(2, 3)], [arr([[1, 2, 3], [4, 5, 6]])],
         [arr([[3, 1, 1], [6, 4, 4]])], {"axis": i(1), "indices": ints(2, 0, 0)}),
    # one step, zero weights: gates i, o, f = 0.5 and a candidate tanh(atanh 0.5) = 0.5,
    # so c = 0.5 * 1 + 0.5 * 0.5 and h = 0.5 * tanh(c)
    Case(nn.LSTMOp, [f32(1, 1, 1), f32(1, 4, 1), f32(1, 4, 1), f32(1, 8), f32(1, 1, 1),
                     f32(1, 1, 1)],
         [f32(1, 1, 1, 1), f32(1, 1, 1), f32(1, 1, 1)],
         [arr([[[2.0]]]), np.zeros((1, 4, 1), np.float32), np.zeros((1, 4, 1), np.float32),
          arr([[0, 0, 0, math.atanh(0.5), 0, 0, 0, 0]]), arr([[[0.0]]]), arr([[[1.0]]])],
         [arr([[[[0.5 * math.tanh(0.75)]]]]), arr([[[0.5 * math.tanh(0.75)]]]),
          arr([[[0.75]]])],
         {"hidden_size": i(1), "direction": s("forward")}),
    # z = 0.5, candidate tanh(atanh 0.5) = 0.5, h = 0.5 * 0.5 + 0.5 * 1
    Case(nn.GRUOp, [f32(1, 1, 1), f32(1, 3, 1), f32(1, 3, 1), f32(1, 6), f32(1, 1, 1)],
         [f32(1, 1, 1, 1), f32(1, 1, 1)],
         [arr([[[2.0]]]), np.zeros((1, 3, 1), np.float32), np.zeros((1, 3, 1), np.float32),
          arr([[0, 0, math.atanh(0.5), 0, 0, 0]]), arr([[[1.0]]])],
         [arr([[[[0.75]]]]), arr([[[0.75]]])],
         {"hidden_size": i(1), "direction": s("reverse"), "linear_before_reset": i(0)}),
    # -------- integer and boolean data
    # floats truncate toward zero and saturate, NaN gives 0
    Case(nn.CastOp, [f32(5)], [tt((5,), np.int8)], [arr([-1.7, 2.9, 300.0, -300.0, np.nan])],
         [arr([-1, 2, 127, -128, 0], np.int8)]),
    Case(nn.NotOp, [tt((2,), np.bool_)], [tt((2,), np.bool_)], [arr([True, False], np.bool_)],
         [arr([False, True], np.bool_)]),
    *[Case(cls, [tt((4,), np.bool_), tt((4,), np.bool_)], [tt((4,), np.bool_)],
           [arr([0, 0, 1, 1], np.bool_), arr([0, 1, 0, 1], np.bool_)], [arr(want, np.bool_)])
      for cls, want in ((nn.AndOp, [0, 0, 0, 1]), (nn.OrOp, [0, 1, 1, 1]),
                        (nn.XorOp, [0, 1, 1, 0]))],
    Case(nn.WhereOp, [tt((2, 1), np.bool_), f32(2), f32(1)], [f32(2, 2)],
         [arr([[True], [False]], np.bool_), arr([1, 2]), arr([9])], [arr([[1, 2], [9, 9]])]),
    # ties: the first index, or the last with select_last_index
    Case(nn.ArgMaxOp, [f32(2, 3)], [tt((2,), np.int64)], [arr([[1, 5, 5], [7, 0, 7]])],
         [arr([1, 0], np.int64)], {"axes": ints(1), "keepdims": i(0),
                                   "select_last_index": i(0)}),
    Case(nn.ArgMinOp, [f32(2, 3)], [tt((2, 1), np.int64)], [arr([[1, 0, 0], [7, 0, 7]])],
         [arr([[2], [1]], np.int64)], {"axes": ints(1), "keepdims": i(1),
                                       "select_last_index": i(1)}),
    # the 2 largest of each row in order, ties by the lower index, NaN the largest;
    # the 2 smallest of each column
    Case(nn.TopKValuesOp, [f32(2, 4)], [f32(2, 2)],
         [arr([[1, 5, 2, 5], [7, np.nan, 0, 7]])], [arr([[5, 5], [np.nan, 7]])],
         {"axis": i(1), "k": i(2), "largest": i(1)}),
    Case(nn.TopKIndicesOp, [f32(2, 4)], [tt((2, 2), np.int64)],
         [arr([[1, 5, 2, 5], [7, np.nan, 0, 7]])], [arr([[1, 3], [1, 0]], np.int64)],
         {"axis": i(1), "k": i(2), "largest": i(1)}),
    Case(nn.TopKIndicesOp, [f32(3, 2)], [tt((2, 2), np.int64)],
         [arr([[4, 1], [4, 0], [3, 1]])], [arr([[2, 1], [0, 0]], np.int64)],
         {"axis": i(0), "k": i(2), "largest": i(0)}),
    Case(nn.TakeOp, [f32(3, 2), tt((2,), np.int64)], [f32(2, 2)],
         [arr([[1, 2], [3, 4], [5, 6]]), arr([-1, 0], np.int64)], [arr([[5, 6], [1, 2]])],
         {"axis": i(0)}),
    # per channel: scales (0.5, 2), zero points (1, -1); 0.5 and -0.5 round to even 0
    Case(nn.QuantizeLinearOp, [f32(2, 2), f32(1, 2), tt((1, 2), np.int8)], [tt((2, 2), np.int8)],
         [arr([[0.25, 3.0], [100.0, -1.0]]), arr([[0.5, 2.0]]), arr([[1, -1]], np.int8)],
         [arr([[1, 1], [127, -1]], np.int8)]),
    Case(nn.DequantizeLinearOp, [tt((2, 2), np.uint8), f32(2, 1), tt((2, 1), np.uint8)],
         [f32(2, 2)],
         [arr([[0, 255], [7, 9]], np.uint8), arr([[0.5], [2.0]]), arr([[128], [8]], np.uint8)],
         [arr([[-64.0, 63.5], [-2.0, 2.0]])]),
    # (a - 2) @ b: [[-1, 0], [1, 2]] @ [[1, -1], [2, 3]]
    Case(nn.MatMulIntegerOp, [tt((2, 2), np.uint8), tt((2, 2), np.int32)], [tt((2, 2), np.int32)],
         [arr([[1, 2], [3, 4]], np.uint8), arr([[1, -1], [2, 3]], np.int32)],
         [arr([[-1, 1], [5, 5]], np.int32)], {"a_zero_point": i(2)}),
    # a 1x2 window of ones over (x - 1) with one zero pad at the end
    Case(nn.ConvIntegerOp, [tt((1, 3, 1), np.int8), tt((1, 2, 1), np.int32)],
         [tt((1, 3, 1), np.int32)], [arr([[[1], [3], [6]]], np.int8), arr([[[1], [1]]], np.int32)],
         [arr([[[2], [7], [5]]], np.int32)],
         {"kernel": ints(2), "pads": ints(0, 1), "x_zero_point": i(1)}),
    # -------- quantization: q = saturate(rint(x / 0.5) + 1), half to even
    Case(nn.QuantizeOp, [f32(5)], [qt((5,), 0.5, 1)], [arr([0.0, 0.25, 0.75, -1.0, 100.0])],
         [arr([1, 1, 3, -1, 127], np.int8)]),
    Case(nn.DequantizeOp, [qt((3,), 0.5, 1, np.uint8)], [f32(3)], [arr([1, 3, 255], np.uint8)],
         [arr([0.0, 1.0, 127.0])]),
]  # fmt: skip


def case_id(c: Case) -> str:
    return c.name or c.cls.name.removeprefix("nn.")


def test_reference_cases_cover_every_op():
    assert {c.cls for c in CASES} == set(OPS)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_reference_on_hand_checked_example(case: Case):
    got = case.op().reference(case.args)
    assert len(got) == len(case.expected)
    for g, want in zip(got, case.expected, strict=True):
        assert g.dtype == want.dtype
        assert g.shape == want.shape
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(g, want)
        else:
            np.testing.assert_allclose(g, want, rtol=case.tol, atol=case.tol)


def test_one_by_one_conv_is_a_matmul():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 5, 4)).astype(np.float32)
    w = rng.standard_normal((6, 1, 1, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    conv = build(
        nn.ConvOp, [f32(1, 3, 5, 4), f32(6, 1, 1, 4), f32(6)], [f32(1, 3, 5, 6)],
        {"kernel": ints(1, 1)},
    )  # fmt: skip
    matmul = build(nn.MatMulOp, [f32(15, 4), f32(4, 6)], [f32(15, 6)])
    (y,) = conv.reference([x, w, b])
    (m,) = matmul.reference([x.reshape(15, 4), w.reshape(6, 4).T.copy()])
    np.testing.assert_allclose(y.reshape(15, 6), m + b, rtol=1e-5, atol=1e-5)


def direct_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A stride-1, unpadded NHWC conv written out in float64, independent of kernels.py."""
    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, cout))
    for r in range(out.shape[1]):
        for c in range(out.shape[2]):
            patch = x[:, r : r + kh, c : c + kw, :].astype(np.float64)
            out[:, r, c, :] = np.einsum("nijc,oijc->no", patch, w.astype(np.float64))
    return out + b


def test_quantized_conv_within_one_lsb_of_the_float_conv():
    rng = np.random.default_rng(1)
    sx, zx, sy, zy = 0.05, -3, 0.08, 4
    w_scale = arr([0.01, 0.02, 0.015])
    x = rng.integers(-128, 128, (1, 5, 5, 4)).astype(np.int8)
    w = rng.integers(-127, 128, (3, 3, 3, 4)).astype(np.int8)
    b = rng.integers(-500, 500, 3).astype(np.int32)
    conv = build(
        nn.ConvOp,
        [qt((1, 5, 5, 4), sx, zx), nn.tensor_type((3, 3, 3, 4), np.int8),
         nn.tensor_type((3,), np.int32), f32(3)],
        [qt((1, 3, 3, 3), sy, zy)],
        {"kernel": ints(3, 3)},
    )  # fmt: skip
    assert conv.is_quantized() and conv.quant_kind() is nn.QuantKind.INTEGER
    (y,) = conv.reference([x, w, b, w_scale])
    assert y.dtype == np.int8
    xr = (x.astype(np.float64) - zx) * sx
    wr = w.astype(np.float64) * w_scale.astype(np.float64)[:, None, None, None]
    br = b.astype(np.float64) * sx * w_scale.astype(np.float64)
    real = direct_conv(xr, wr, br)
    ideal = np.clip(np.rint(real / sy) + zy, -128, 127)
    assert np.abs(y.astype(np.int64) - ideal).max() <= 1
    assert np.unique(y).size > 5  # the example is not saturated to a constant


def test_quantized_gemm_and_matmul_within_one_lsb():
    rng = np.random.default_rng(2)
    sa, za, sy, zy = 0.03, 2, 0.05, -1
    ws = arr([0.02, 0.01, 0.03])
    a = rng.integers(-128, 128, (4, 6)).astype(np.int8)
    b = rng.integers(-127, 128, (6, 3)).astype(np.int8)
    c = rng.integers(-300, 300, 3).astype(np.int32)
    i8, i32 = nn.tensor_type((6, 3), np.int8), nn.tensor_type((3,), np.int32)
    gemm = build(nn.GemmOp, [qt((4, 6), sa, za), i8, i32, f32(3)], [qt((4, 3), sy, zy)])
    matmul = build(nn.MatMulOp, [qt((4, 6), sa, za), i8, f32(3)], [qt((4, 3), sy, zy)])
    real = ((a.astype(np.float64) - za) * sa) @ (b.astype(np.float64) * ws)
    for op, extra, bias in ((gemm, [c], c * sa * ws), (matmul, [], 0.0)):
        (y,) = op.reference([a, b, *extra, ws])
        ideal = np.clip(np.rint((real + bias) / sy) + zy, -128, 127)
        assert np.abs(y.astype(np.int64) - ideal).max() <= 1, op.name


def test_quantized_add_goes_through_dequantize_and_requantize():
    # lhs real = 0.5 * q, rhs real = 0.25 * (q - 10), result q = rint(real / 1.0) - 5
    x, y = arr([[10, -4, 100]], np.int8), arr([[14, 10, 127]], np.int8)
    add = build(
        nn.AddOp,
        [qt((1, 3), 0.5, 0), qt((1, 3), 0.25, 10)],
        [qt((1, 3), 1.0, -5)],
    )
    assert add.quant_kind() is nn.QuantKind.REAL
    (out,) = add.reference([x, y])
    # reals: 5 + 1 = 6; -2 + 0 = -2; 50 + 29.25 = 79.25 -> 79; minus 5, saturating at 127
    np.testing.assert_array_equal(out, arr([[1, -7, 74]], np.int8))


def test_quantized_relu_rounds_once_at_the_result():
    relu = build(nn.ReluOp, [qt((4,), 0.1, 3)], [qt((4,), 0.2, -2)])
    (out,) = relu.reference([arr([-100, 3, 8, 127], np.int8)])
    # reals 0, 0, 0.5, 12.4 -> rint(/0.2) = 0, 0, 2 (half to even), 62 -> minus 2
    np.testing.assert_array_equal(out, arr([-2, -2, 0, 60], np.int8))


Q = (0.05, -3)


def qx(*shape: int) -> TensorType:
    return qt(shape, *Q)


EXACT_CASES: list[tuple[str, Callable[[], nn.NNOp], Callable[[np.ndarray], np.ndarray]]] = [
    ("identity", lambda: build(nn.IdentityOp, [qx(2, 4)], [qx(2, 4)]), lambda a: a),
    ("max_pool", lambda: build(nn.MaxPoolOp, [qx(1, 4, 4, 2)], [qx(1, 2, 2, 2)],
                               {"kernel": ints(2, 2), "strides": ints(2, 2)}),
     lambda a: a.reshape(1, 2, 2, 2, 2, 2).max(axis=(2, 4))),
    ("transpose", lambda: build(nn.TransposeOp, [qx(1, 4, 4, 2)], [qx(1, 2, 4, 4)],
                                {"perm": ints(0, 3, 1, 2)}),
     lambda a: a.transpose(0, 3, 1, 2)),
    ("reshape", lambda: build(nn.ReshapeOp, [qx(1, 4, 4, 2)], [qx(16, 2)]),
     lambda a: a.reshape(16, 2)),
    ("pad_zero", lambda: build(nn.PadOp, [qx(1, 4, 4, 2)], [qx(1, 5, 4, 2)],
                               {"pads": ints(0, 1, 0, 0, 0, 0, 0, 0), "mode": s("constant")}),
     lambda a: np.concatenate([np.full((1, 1, 4, 2), Q[1], np.int8), a], axis=1)),
    ("reduce_max", lambda: build(nn.ReduceMaxOp, [qx(1, 4, 4, 2)], [qx(1, 2)],
                                 {"axes": ints(1, 2), "keepdims": i(0)}),
     lambda a: a.max(axis=(1, 2))),
    ("resize_nearest", lambda: build(
        nn.ResizeOp, [qx(1, 4, 4, 2)], [qx(1, 8, 8, 2)],
        {"mode": s("nearest"), "coordinate_transformation_mode": s("asymmetric"),
         "nearest_mode": s("floor")}),
     lambda a: a.repeat(2, axis=1).repeat(2, axis=2)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "expect"), EXACT_CASES, ids=[c[0] for c in EXACT_CASES])
def test_exact_ops_are_bit_exact_on_quantized_tensors(
    name: str, make: Callable[[], nn.NNOp], expect: Callable[[np.ndarray], np.ndarray]
):
    rng = np.random.default_rng(3)
    op = make()
    assert op.quant_kind() is nn.QuantKind.EXACT
    shape = nn.shape_of(op.operands[0])
    a = rng.integers(-128, 128, shape).astype(np.int8)
    (out,) = op.reference([a])
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, expect(a))


def test_exact_binary_and_concat_and_split_stay_on_the_stored_integers():
    a = arr([[-128, 5], [127, 0]], np.int8)
    b = arr([[-127, 4], [126, 1]], np.int8)
    t = qx(2, 2)
    (mx,) = build(nn.MaxOp, [t, t], [t]).reference([a, b])
    (mn,) = build(nn.MinOp, [t, t], [t]).reference([a, b])
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))
    (cat,) = build(nn.ConcatOp, [t, t], [qx(2, 4)], {"axis": i(1)}).reference([a, b])
    np.testing.assert_array_equal(cat, np.concatenate([a, b], axis=1))
    split = build(nn.SplitOp, [qx(2, 4)], [qx(2, 1), qx(2, 3)], {"axis": i(1), "sizes": ints(1, 3)})
    lo, hi = split.reference([cat])
    np.testing.assert_array_equal(lo, cat[:, :1])
    np.testing.assert_array_equal(hi, cat[:, 1:])


def test_exact_op_with_differing_scales_requantizes():
    """A concat of two scales computes in real numbers and rounds into the result's."""
    cat = build(
        nn.ConcatOp,
        [qt((1, 2), 0.5, 0), qt((1, 2), 0.25, 0)],
        [qt((1, 4), 0.5, 0)],
        {"axis": i(1)},
    )
    (out,) = cat.reference([arr([[2, -3]], np.int8), arr([[2, 6]], np.int8)])
    # reals 1, -1.5, 0.5, 1.5 -> /0.5: 2, -3, 1, 3
    np.testing.assert_array_equal(out, arr([[2, -3, 1, 3]], np.int8))


# ------------------------------------------------------------------ round trips


def module_of(op: nn.NNOp) -> ModuleOp:
    """The op inside `func.func @f`, its operands the function's arguments."""
    arg_types = [v.type for v in op.operands]
    block = Block(arg_types=arg_types)
    clone = type(op).create(
        operands=list(block.args),
        result_types=[r.type for r in op.results],
        properties=dict(op.properties),
    )
    block.add_op(clone)
    block.add_op(ReturnOp(*clone.results))
    func = FuncOp("f", (arg_types, [r.type for r in clone.results]), Region(block))
    return ModuleOp([func])


def show(module: ModuleOp, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def weight_module() -> ModuleOp:
    weight = nn.WeightOp("conv1.weight", nn.tensor_type((4, 3, 3, 3), np.int8))
    block = Block()
    block.add_ops([weight, ReturnOp(weight.result)])
    func = FuncOp("f", ([], [weight.result.type]), Region(block))
    return ModuleOp([func])


ROUND_TRIP = [module_of(c.op()) for c in CASES] + [weight_module()]
ROUND_TRIP_IDS = [case_id(c) for c in CASES] + ["weight"]


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize("module", ROUND_TRIP, ids=ROUND_TRIP_IDS)
def test_every_op_prints_and_parses_back(module: ModuleOp, generic: bool):
    module.verify()
    text = show(module, generic)
    parsed = Parser(context(), text).parse_module()
    parsed.verify()
    assert show(parsed, generic) == text
    assert parsed.is_structurally_equivalent(module)


def test_quantized_ops_print_and_parse_back():
    ops = [
        build(nn.ConvOp,
              [qt((1, 3, 3, 4), 1e-10, -128), nn.tensor_type((2, 1, 1, 4), np.int8),
               nn.tensor_type((2,), np.int32), f32(2)],
              [qt((1, 3, 3, 2), 0.0235, 128, np.uint8)], {"kernel": ints(1, 1)}),
        build(nn.AddOp, [qx(2, 4), qt((4,), 1.5e-7, 7)], [qt((2, 4), 3.4028235e38, 255, np.uint8)]),
        build(nn.MaxPoolOp, [qx(1, 4, 4, 2)], [qx(1, 2, 2, 2)],
              {"kernel": ints(2, 2), "strides": ints(2, 2)}),
        build(nn.QuantizeOp, [f32(3)], [qt((3,), 1.0 / 3.0, 0, np.uint8)]),
    ]  # fmt: skip
    for op in ops:
        module = module_of(op)
        for generic in (False, True):
            text = show(module, generic)
            parsed = Parser(context(), text).parse_module()
            assert show(parsed, generic) == text
            assert parsed.is_structurally_equivalent(module)
    assert "#nn.q<1.0e-10 : -128>" in show(module_of(ops[0]))
    assert "ui8, #nn.q<0.0235 : 128>" in show(module_of(ops[0]))
    assert "#nn.q<3.4028235e+38 : 255>" in show(module_of(ops[1]))


# -------------------------------------------------------------- #nn.q attribute


def print_attr(attr: Attribute) -> str:
    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    return out.getvalue()


@pytest.mark.parametrize(
    ("scale", "zp", "text"),
    [
        (1e-10, -3, "#nn.q<1.0e-10 : -3>"),
        (1e-45, 0, "#nn.q<1.0e-45 : 0>"),  # the smallest float32 subnormal
        (0.1, 127, "#nn.q<0.1 : 127>"),
        (1.0 / 3.0, -128, "#nn.q<0.33333334 : -128>"),
        (2.0, 255, "#nn.q<2.0 : 255>"),
        (1e20, 0, "#nn.q<1.0e+20 : 0>"),
    ],
)
def test_quant_attr_prints_the_shortest_float32_and_parses_back(scale: float, zp: int, text: str):
    attr = nn.QuantAttr(scale, zp)
    assert print_attr(attr) == text
    parsed = Parser(context(), text).parse_attribute()
    assert parsed == attr
    assert isinstance(parsed, nn.QuantAttr)
    assert parsed.scale_value == np.float32(scale) and parsed.zp_value == zp


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#nn.q<0.0 : 0>", "#nn.q: the scale must be positive and finite, got 0.0"),
        ("#nn.q<-1.0 : 0>", "#nn.q: the scale must be positive and finite, got -1.0"),
        ("#nn.q<1.0e-50 : 0>", "not representable as a positive finite float32"),
        ("#nn.q<1.0e+39 : 0>", "not representable as a positive finite float32"),
        ("#nn.q<0.5 : 1.5>", "Expected integer literal as the #nn.q zero point"),
        ("#nn.q<0.5>", "Expected ':'"),
    ],
)
def test_quant_attr_parse_errors(text: str, message: str):
    with pytest.raises(ParseError, match=re.escape(message)):
        Parser(context(), text).parse_attribute()


def test_quant_attr_constructor_rejects_a_bad_scale():
    with pytest.raises(VerifyException, match="#nn.q: the scale must be positive"):
        nn.QuantAttr(0.0, 0)
    with pytest.raises(VerifyException, match="not representable"):
        nn.QuantAttr(1e-60, 0)


# ------------------------------------------------------------------- verifiers


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: build(nn.FlattenOp, [f32(1, 4, 5, 8)], [f32(160, 1)], {"axis": i(-1)}),
         "nn.flatten: result shape 160x1 does not match the inferred shape 20x8"),
        (lambda: build(nn.ConvOp, [f32(1, 4, 4, 4), f32(4, 1, 1, 2), f32(4)],
                       [f32(1, 4, 4, 4)], {"kernel": ints(1, 1), "group": i(3)}),
         "nn.conv: Cout 4 is not divisible by group 3"),
        (lambda: build(nn.ConvTransposeOp, [f32(1, 2, 2, 3), f32(3, 2, 2, 2), f32(4)],
                       [f32(1, 4, 4, 4)],
                       {"kernel": ints(2, 2), "strides": ints(2, 2), "group": i(2)}),
         "nn.conv_transpose: Cin 3 is not divisible by group 2"),
        (lambda: build(nn.MatMulOp, [f32(3, 4), f32(4, 2), f32(2)], [f32(3, 2)]),
         "nn.matmul: weight scales need a quantized matmul"),
        (lambda: build(nn.GemmOp, [qt((2, 4), 0.1, 0), nn.tensor_type((4, 3), np.int8),
                                   nn.tensor_type((3,), np.int32), f32(2)],
                       [qt((2, 3), 0.1, 0)]),
         "nn.gemm: a quantized gemm needs f32 per-column weight scales of shape (3,), "
         "got tensor<2xf32>"),
        (lambda: build(nn.ReduceSumOp, [f32(2, 3)], [f32(2)],
                       {"axes": ints(1), "keepdims": i(2)}),
         "nn.reduce_sum: keepdims must be 0 or 1, got 2"),
        (lambda: build(nn.ResizeOp, [f32(1, 2, 2, 1)], [f32(1, 4, 4, 1)],
                       {"mode": s("nearest"), "coordinate_transformation_mode": s("half_pixel"),
                        "nearest_mode": s("round")}),
         "nn.resize: nearest_mode must be one of round_prefer_floor, round_prefer_ceil, "
         "floor, ceil, got round"),
        (lambda: build(nn.BatchNormOp, [f32(), f32(1), f32(1), f32(1), f32(1)], [f32()],
                       {"epsilon": fl(0.0)}),
         "nn.batch_norm: the input needs rank >= 2"),
    ],
)  # fmt: skip
def test_verifier_rules_beyond_the_lit_cases(make: Callable[[], nn.NNOp], message: str):
    with pytest.raises(VerifyException) as info:
        make()
    assert str(info.value) == message


def test_verifier_accepts_a_quantized_matmul_of_two_activations():
    op = build(nn.MatMulOp, [qx(2, 3), qt((3, 4), 0.1, 2)], [qt((2, 4), 0.025, 0)])
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = arr([[4, 2, 0, 12]] * 3, np.int8)
    (y,) = op.reference([a, b])
    # rows of A - zp are (3, 4, 5) and (6, 7, 8), columns of B - zp are 2, 0, -2, 10:
    # integer products 24, 0, -24, 120 and 42, 0, -42, 210, times 0.05 * 0.1 / 0.025
    np.testing.assert_array_equal(y, arr([[5, 0, -5, 24], [8, 0, -8, 42]], np.int8))


# -------------------------------------------------------------- the lit files


def test_lit_round_trip_files_cover_every_op():
    text = "".join(p.read_text() for p in sorted(LIT.glob("roundtrip*.mlir")))
    missing = [c.name for c in nn.NN_OPS if not re.search(rf"= {re.escape(c.name)}\b", text)]
    assert missing == []
    for variant in ("xi8, #nn.q<", "xui8, #nn.q<", "#nn.q<1.0e-10"):
        assert variant in text


def test_lit_invalid_files_hold_enough_cases():
    cases = sum(
        p.read_text().count("// CHECK: Operation does not verify: ")
        for p in LIT.glob("invalid*.mlir")
    )
    assert cases >= 25
