"""The numpy reference kernels against onnxruntime, op by op.

Each test builds a one-node ONNX model, runs it in onnxruntime (CPU, one
thread) on seeded NCHW data, moves the result to channels-last and compares it
with `tigris_ir.reference.kernels`. Float32 must agree to 1e-4 relative; integer results
exactly, and requantized int8 to one step at most.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import ValueInfoProto, helper, numpy_helper
from onnx.helper import np_dtype_to_tensor_dtype

from tigris_ir.reference import kernels as K

Array = np.ndarray[Any, Any]

RTOL = 1e-4
WORST: dict[str, float] = {}
"""Worst relative error per kernel, printed at the end of the module (pytest -s)."""


@pytest.fixture(scope="module", autouse=True)
def _report_worst() -> Iterator[None]:
    yield
    for name, err in sorted(WORST.items()):
        print(f"worst {name}: {err:.3g}")


def run_onnx(
    op: str,
    inputs: dict[str, Array],
    consts: dict[str, Array] | None = None,
    *,
    opset: int = 13,
    domain: str = "",
    **attrs: Any,
) -> Array:
    """Run one ONNX node; `consts` become initializers, names in input order."""
    consts = consts or {}
    names = [*inputs, *consts]
    node = helper.make_node(op, names, ["y"], domain=domain or None, **attrs)
    graph = helper.make_graph(
        [node],
        "one",
        [
            helper.make_tensor_value_info(n, np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in inputs.items()
        ],
        [ValueInfoProto(name="y")],
        [numpy_helper.from_array(a, n) for n, a in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3  # tf_half_pixel_for_nn deprecation warnings
    sess = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return np.asarray(sess.run(None, inputs)[0])


def nhwc(a: Array) -> Array:
    """NC* -> N*C."""
    return np.moveaxis(a, 1, -1)


def ohwi(w: Array) -> Array:
    """ONNX (A, B, *kernel) weights -> (A, *kernel, B)."""
    return np.moveaxis(w, 1, -1)


def close(name: str, got: Array, want: Array, rtol: float = RTOL) -> None:
    """Float comparison: max-abs error over max-abs value, and allclose."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.float32, got.dtype
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
    err = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)) / scale
    WORST[name] = max(WORST.get(name, 0.0), err)
    assert err <= rtol, f"{name}: relative error {err:.3g}"
    assert np.allclose(got, want, rtol=rtol, atol=1e-6 * max(scale, 1.0))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(r: np.random.Generator, *shape: int) -> Array:
    return r.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------
# Conv


def _conv_cases() -> Iterator[tuple[int, int, int, int, int, int]]:
    # (cin, cout, group, kernel, stride, dilation)
    for kind, k, s, d in itertools.product(
        ("g1", "g2", "dw"), (1, 3, 5, 7), (1, 2), (1, 2)
    ):
        if k == 1 and d == 2:
            continue
        cin, cout, group = {"g1": (5, 6, 1), "g2": (6, 4, 2), "dw": (6, 6, 6)}[kind]
        yield cin, cout, group, k, s, d
    yield 4, 8, 4, 3, 1, 1  # depthwise with channel multiplier 2
    yield 4, 8, 4, 3, 2, 2
    yield 1, 5, 1, 3, 1, 1  # one input channel
    yield 8, 6, 2, 1, 2, 1


@pytest.mark.parametrize("cin,cout,group,k,s,d", list(_conv_cases()))
def test_conv2d(cin: int, cout: int, group: int, k: int, s: int, d: int) -> None:
    r = rng(k * 100 + s * 10 + d + group)
    x = randn(r, 2, cin, 13, 11)
    w = randn(r, cout, cin // group, k, k)
    b = randn(r, cout)
    pads = [k // 2, max(k // 2 - 1, 0), k // 2 + 1, k // 2]  # top, left, bottom, right
    want = run_onnx(
        "Conv",
        {"x": x, "w": w, "b": b},
        strides=[s, s],
        pads=pads,
        dilations=[d, d],
        group=group,
    )
    got = K.conv(
        nhwc(x), ohwi(w), b, strides=(s, s), pads=pads, dilations=(d, d), group=group
    )
    close("conv2d", got, nhwc(want))


def test_conv2d_rectangular_kernel_no_bias() -> None:
    r = rng(7)
    x, w = randn(r, 1, 4, 9, 12), randn(r, 6, 4, 3, 1)
    want = run_onnx("Conv", {"x": x, "w": w}, strides=[2, 1], pads=[0, 2, 1, 0])
    got = K.conv(
        nhwc(x),
        ohwi(w),
        None,
        strides=(2, 1),
        pads=(0, 2, 1, 0),
        dilations=(1, 1),
        group=1,
    )
    close("conv2d", got, nhwc(want))


@pytest.mark.parametrize(
    "cin,cout,group,k,s,d,pads",
    [
        (3, 5, 1, 3, 1, 1, (1, 1)),
        (4, 6, 2, 5, 2, 1, (2, 1)),
        (6, 6, 6, 3, 1, 2, (0, 3)),
        (4, 4, 1, 1, 2, 1, (0, 0)),
        (2, 3, 1, 7, 3, 2, (3, 0)),
    ],
)
def test_conv1d(
    cin: int, cout: int, group: int, k: int, s: int, d: int, pads: tuple[int, int]
) -> None:
    r = rng(cin + k)
    x, w, b = randn(r, 2, cin, 23), randn(r, cout, cin // group, k), randn(r, cout)
    want = run_onnx(
        "Conv",
        {"x": x, "w": w, "b": b},
        strides=[s],
        pads=list(pads),
        dilations=[d],
        group=group,
    )
    got = K.conv(
        nhwc(x), ohwi(w), b, strides=(s,), pads=pads, dilations=(d,), group=group
    )
    close("conv1d", got, nhwc(want))


@pytest.mark.parametrize(
    "cin,cout,group,k,s,d,pads,opad",
    [
        (4, 6, 1, 3, 2, 1, (1, 1, 1, 1), (1, 1)),
        (4, 6, 1, 4, 2, 1, (1, 0, 2, 1), (0, 1)),
        (6, 4, 2, 3, 2, 1, (0, 0, 0, 0), (1, 0)),
        (4, 4, 1, 3, 2, 2, (2, 1, 1, 2), (1, 1)),
        (4, 8, 4, 3, 2, 1, (1, 1, 1, 1), (1, 1)),
        (3, 5, 1, 2, 3, 1, (0, 1, 0, 1), (2, 2)),
        (5, 3, 1, 1, 1, 1, (0, 0, 0, 0), (0, 0)),
    ],
)
def test_conv_transpose2d(
    cin: int,
    cout: int,
    group: int,
    k: int,
    s: int,
    d: int,
    pads: tuple[int, ...],
    opad: tuple[int, int],
) -> None:
    r = rng(cin * 7 + k)
    x, w, b = randn(r, 2, cin, 6, 5), randn(r, cin, cout // group, k, k), randn(r, cout)
    want = run_onnx(
        "ConvTranspose",
        {"x": x, "w": w, "b": b},
        strides=[s, s],
        pads=list(pads),
        dilations=[d, d],
        group=group,
        output_padding=list(opad),
    )
    got = K.conv_transpose(
        nhwc(x),
        ohwi(w),
        b,
        strides=(s, s),
        pads=pads,
        dilations=(d, d),
        group=group,
        output_padding=opad,
    )
    close("conv_transpose", got, nhwc(want))


def test_conv_transpose1d() -> None:
    r = rng(3)
    x, w = randn(r, 1, 4, 9), randn(r, 4, 3, 5)
    want = run_onnx(
        "ConvTranspose", {"x": x, "w": w}, strides=[2], pads=[2, 1], output_padding=[1]
    )
    got = K.conv_transpose(
        nhwc(x),
        ohwi(w),
        None,
        strides=(2,),
        pads=(2, 1),
        dilations=(1,),
        group=1,
        output_padding=(1,),
    )
    close("conv_transpose", got, nhwc(want))


# ---------------------------------------------------------------------------
# Integer convolutions: exact accumulators and the requantization rule


def _small_ints(r: np.random.Generator, lo: int, hi: int, *shape: int) -> Array:
    return r.integers(lo, hi + 1, size=shape).astype(np.int32)


@pytest.mark.parametrize("group", [1, 2, 8])
def test_integer_conv_is_exact(group: int) -> None:
    """Integer-valued float32 is exact in onnxruntime below 2**24: compare exactly."""
    r = rng(group)
    x = _small_ints(r, -128, 127, 1, 8, 10, 9)
    w = _small_ints(r, -127, 127, 8, 8 // group, 3, 3)
    b = _small_ints(r, -5000, 5000, 8)
    attrs: dict[str, Any] = dict(
        strides=[2, 1], pads=[1, 0, 1, 2], dilations=[1, 2], group=group
    )
    want = run_onnx(
        "Conv",
        {
            "x": x.astype(np.float32),
            "w": w.astype(np.float32),
            "b": b.astype(np.float32),
        },
        **attrs,
    )
    got = K.conv(
        nhwc(x),
        ohwi(w),
        b,
        strides=(2, 1),
        pads=(1, 0, 1, 2),
        dilations=(1, 2),
        group=group,
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, nhwc(want).astype(np.int64))


def test_integer_conv_transpose_is_exact() -> None:
    r = rng(11)
    x = _small_ints(r, -128, 127, 1, 6, 5, 4)
    w = _small_ints(r, -127, 127, 6, 2, 3, 3)
    want = run_onnx(
        "ConvTranspose",
        {"x": x.astype(np.float32), "w": w.astype(np.float32)},
        strides=[2, 2],
        pads=[1, 1, 0, 1],
        output_padding=[1, 0],
        group=2,
    )
    got = K.conv_transpose(
        nhwc(x),
        ohwi(w),
        None,
        strides=(2, 2),
        pads=(1, 1, 0, 1),
        dilations=(1, 1),
        group=2,
        output_padding=(1, 0),
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, nhwc(want).astype(np.int64))


def test_integer_conv_large_operands_use_int64() -> None:
    """Operands past the float64-exact bound still give the exact sum."""
    r = rng(5)
    x = _small_ints(r, -(2**22), 2**22, 1, 5, 5, 4)
    x[..., 3] = 0
    w = _small_ints(r, -1, 1, 3, 1, 1, 4)
    w[:, 0, 0, 3] = 2**29  # meets only the zero channel; max|x|*max|w|*K > 2**53
    got = K.conv(
        x, w, None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1
    )
    want = np.einsum(
        "nhwc,oc->nhwo", x.astype(np.int64), w[:, 0, 0, :].astype(np.int64)
    )
    np.testing.assert_array_equal(got, want)


def test_integer_overflow_raises() -> None:
    x = np.full((1, 2, 2, 4), 2**20, dtype=np.int32)
    w = np.full((1, 1, 1, 4), 2**20, dtype=np.int32)
    with pytest.raises(OverflowError):
        K.conv(x, w, None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1)


def test_conv_rejects_bad_operands() -> None:
    x = np.zeros((1, 4, 4, 6), dtype=np.float32)
    with pytest.raises(ValueError, match="group"):
        K.conv(
            x,
            np.zeros((4, 3, 3, 4), np.float32),
            None,
            strides=(1, 1),
            pads=(0, 0, 0, 0),
            dilations=(1, 1),
            group=2,
        )
    with pytest.raises(TypeError, match="mix"):
        K.conv(
            x,
            np.zeros((4, 3, 3, 6), np.int32),
            None,
            strides=(1, 1),
            pads=(0, 0, 0, 0),
            dilations=(1, 1),
            group=1,
        )
    with pytest.raises(ValueError, match="pads"):
        K.conv(
            x,
            np.zeros((4, 3, 3, 6), np.float32),
            None,
            strides=(1, 1),
            pads=(0, 0),
            dilations=(1, 1),
            group=1,
        )


QCONV_CASES = [
    # (x dtype, cin, cout, group, k, stride, pads)
    (np.int8, 8, 16, 1, 3, 1, (1, 1, 1, 1)),
    (np.int8, 8, 16, 1, 3, 2, (0, 1, 1, 0)),
    (np.int8, 16, 16, 16, 3, 1, (1, 1, 1, 1)),
    (np.int8, 16, 16, 16, 3, 2, (1, 1, 1, 1)),
    (np.int8, 16, 24, 1, 1, 1, (0, 0, 0, 0)),
    (np.int8, 8, 8, 2, 5, 1, (2, 2, 2, 2)),
    (np.uint8, 8, 16, 1, 3, 1, (1, 1, 1, 1)),
    (np.uint8, 16, 16, 16, 3, 2, (0, 0, 1, 1)),
]
WORST_LSB: dict[str, int] = {}


@pytest.mark.parametrize("xdt,cin,cout,group,k,s,pads", QCONV_CASES)
def test_qlinear_conv_within_one_lsb(
    xdt: type[np.integer[Any]],
    cin: int,
    cout: int,
    group: int,
    k: int,
    s: int,
    pads: tuple[int, ...],
) -> None:
    """QLinearConv (int8 per-channel weights) == int32 conv + requantize."""
    r = rng(cin + cout + k + s)
    info = np.iinfo(xdt)
    x_zp = np.array(3 if xdt is np.int8 else 131, dtype=xdt)
    x_scale = np.array(0.021, dtype=np.float32)
    xq = r.integers(info.min, info.max + 1, size=(1, cin, 12, 10)).astype(xdt)
    w_scale = r.uniform(0.002, 0.01, size=cout).astype(np.float32)
    # uint8 x int8 on AVX2 goes through vpmaddubsw, which saturates pairs of
    # products to int16; onnxruntime's quantizer keeps such weights to 7 bits
    # (reduce_range), and so does this test.
    w_max = 127 if xdt is np.int8 else 63
    wq = r.integers(-w_max, w_max + 1, size=(cout, cin // group, k, k)).astype(np.int8)
    w_zp = np.zeros(cout, dtype=np.int8)
    bias = r.integers(-20000, 20000, size=cout).astype(np.int32)
    y_scale = np.array(0.05, dtype=np.float32)
    y_zp = np.array(-7 if xdt is np.int8 else 120, dtype=xdt)
    consts = {
        "xs": x_scale,
        "xz": x_zp,
        "w": wq,
        "ws": w_scale,
        "wz": w_zp,
        "ys": y_scale,
        "yz": y_zp,
        "b": bias,
    }
    want = run_onnx(
        "QLinearConv",
        {"x": xq},
        consts,
        strides=[s, s],
        pads=list(pads),
        group=group,
    )
    acc = K.conv(
        nhwc(xq).astype(np.int32) - int(x_zp),
        ohwi(wq).astype(np.int32),
        bias,
        strides=(s, s),
        pads=pads,
        dilations=(1, 1),
        group=group,
    )
    mult = K.requantize_multiplier(x_scale, w_scale, y_scale)
    got = K.requantize(acc, multiplier=mult, zero_point=int(y_zp), dtype=xdt)
    assert got.dtype == xdt
    diff = int(np.max(np.abs(got.astype(np.int32) - nhwc(want).astype(np.int32))))
    WORST["qlinear_conv_lsb"] = max(WORST.get("qlinear_conv_lsb", 0.0), diff)
    assert diff <= 1


@pytest.mark.parametrize("adt", [np.int8, np.uint8])
def test_qlinear_matmul_within_one_lsb(adt: type[np.integer[Any]]) -> None:
    r = rng(9)
    info = np.iinfo(adt)
    a = r.integers(info.min, info.max + 1, size=(2, 7, 24)).astype(adt)
    b_max = 127 if adt is np.int8 else 63  # 7-bit weights for u8s8, as above
    b = r.integers(-b_max, b_max + 1, size=(24, 5)).astype(np.int8)
    a_s, b_s, y_s = (np.array(v, dtype=np.float32) for v in (0.03, 0.007, 0.2))
    a_z = np.array(-4 if adt is np.int8 else 128, dtype=adt)
    b_z = np.array(0, dtype=np.int8)
    y_z = np.array(5 if adt is np.int8 else 128, dtype=adt)
    consts = {"as": a_s, "az": a_z, "b": b, "bs": b_s, "bz": b_z, "ys": y_s, "yz": y_z}
    want = run_onnx("QLinearMatMul", {"a": a}, consts)
    acc = K.matmul(a.astype(np.int32) - int(a_z), b.astype(np.int32))
    got = K.requantize(
        acc,
        multiplier=K.requantize_multiplier(a_s, b_s, y_s),
        zero_point=int(y_z),
        dtype=adt,
    )
    diff = int(np.max(np.abs(got.astype(np.int32) - want.astype(np.int32))))
    WORST["qlinear_matmul_lsb"] = max(WORST.get("qlinear_matmul_lsb", 0.0), diff)
    assert diff <= 1


@pytest.mark.parametrize(
    "adt,bdt", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)]
)
def test_matmul_integer_exact(
    adt: type[np.integer[Any]], bdt: type[np.integer[Any]]
) -> None:
    r = rng(4)
    a = r.integers(np.iinfo(adt).min, np.iinfo(adt).max + 1, size=(3, 5, 40)).astype(
        adt
    )
    lo, hi = np.iinfo(bdt).min, np.iinfo(bdt).max
    if adt is np.uint8 and bdt is np.int8:
        lo, hi = -63, 63  # 7-bit weights for u8s8, as above
    b = r.integers(lo, hi + 1, size=(40, 6)).astype(bdt)
    a_z, b_z = np.array(7, dtype=adt), np.array(2, dtype=bdt)
    want = run_onnx("MatMulInteger", {"a": a, "b": b}, {"az": a_z, "bz": b_z})
    got = K.matmul(a.astype(np.int32) - 7, b.astype(np.int32) - 2)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# Quantize / dequantize


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_quantize_per_tensor_ties_and_saturation(dt: type[np.integer[Any]]) -> None:
    r = rng(1)
    scale = np.array(0.0625, dtype=np.float32)  # exact: k + 0.5 steps are true ties
    zp = np.array(10 if dt is np.int8 else 128, dtype=dt)
    ties = (np.arange(-300, 300, dtype=np.float32) + 0.5) * scale
    x = np.concatenate([ties, randn(r, 400) * 9.0]).reshape(1, 2, 10, 50)
    want = run_onnx("QuantizeLinear", {"x": x}, {"s": scale, "z": zp})
    got = K.quantize(x, scale=scale, zero_point=zp, dtype=dt)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, want)
    back = run_onnx("DequantizeLinear", {"q": want}, {"s": scale, "z": zp})
    np.testing.assert_array_equal(K.dequantize(got, scale=scale, zero_point=zp), back)


def test_quantize_per_axis() -> None:
    r = rng(2)
    x = randn(r, 2, 4, 5, 6) * 3.0
    scale = np.array([0.01, 0.03, 0.007, 0.1], dtype=np.float32)
    zp = np.array([0, -3, 5, 100], dtype=np.int8)
    want = run_onnx("QuantizeLinear", {"x": x}, {"s": scale, "z": zp}, axis=1)
    got = K.quantize(nhwc(x), scale=scale, zero_point=zp, dtype=np.int8, axis=-1)
    np.testing.assert_array_equal(got, nhwc(want))
    back = run_onnx("DequantizeLinear", {"q": want}, {"s": scale, "z": zp}, axis=1)
    got_back = K.dequantize(got, scale=scale, zero_point=zp, axis=3)
    np.testing.assert_array_equal(got_back, nhwc(back))


def test_requantize_rounds_half_to_even_and_saturates() -> None:
    acc = np.array([[1, 3, 5, -1, -3, 1000, -1000, 7]], dtype=np.int32)
    got = K.requantize(acc, multiplier=np.float32(0.5), zero_point=0, dtype=np.int8)
    np.testing.assert_array_equal(got, [[0, 2, 2, 0, -2, 127, -128, 4]])
    per_channel = K.requantize(
        np.array([[10, 10]], dtype=np.int32),
        multiplier=np.array([0.25, 0.35], dtype=np.float32),
        zero_point=100,
        dtype=np.uint8,
    )
    np.testing.assert_array_equal(per_channel, [[102, 104]])


def test_saturate() -> None:
    v = np.array([-1e9, -129, -128, 0, 127, 128, 300, 1e12])
    np.testing.assert_array_equal(
        K.saturate(v, np.int8), [-128, -128, -128, 0, 127, 127, 127, 127]
    )
    np.testing.assert_array_equal(
        K.saturate(v, np.uint8), [0, 0, 0, 0, 127, 128, 255, 255]
    )
    assert K.saturate(v, np.int32)[-1] == np.iinfo(np.int32).max


# ---------------------------------------------------------------------------
# Pooling


POOL_CASES = [
    # kernel, strides, pads, dilations, ceil_mode
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((3, 2), (2, 3), (0, 1, 1, 0), (1, 1), True),
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((3, 3), (1, 1), (1, 0, 2, 1), (2, 2), False),
    ((2, 3), (3, 2), (1, 1, 0, 1), (2, 1), True),
    ((5, 5), (3, 3), (2, 2, 2, 2), (1, 1), True),
]


@pytest.mark.parametrize("kernel,strides,pads,dil,ceil", POOL_CASES)
def test_max_pool(
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, ...],
    dil: tuple[int, int],
    ceil: bool,
) -> None:
    r = rng(sum(kernel) + sum(pads))
    x = randn(r, 2, 3, 11, 12) - 3.0  # mostly negative: zero padding would win
    want = run_onnx(
        "MaxPool",
        {"x": x},
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(pads),
        dilations=list(dil),
        ceil_mode=int(ceil),
    )
    got = K.max_pool(
        nhwc(x),
        kernel=kernel,
        strides=strides,
        pads=pads,
        dilations=dil,
        ceil_mode=ceil,
    )
    np.testing.assert_array_equal(got, nhwc(want))


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_max_pool_integer(dt: type[np.integer[Any]]) -> None:
    r = rng(6)
    x = r.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, size=(1, 4, 9, 10)).astype(
        dt
    )
    attrs: dict[str, Any] = dict(
        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1
    )
    want = run_onnx("MaxPool", {"x": x}, **attrs)
    got = K.max_pool(
        nhwc(x),
        kernel=(3, 3),
        strides=(2, 2),
        pads=(1, 1, 1, 1),
        dilations=(1, 1),
        ceil_mode=True,
    )
    assert got.dtype == dt
    np.testing.assert_array_equal(got, nhwc(want))


def test_max_pool_1d() -> None:
    x = randn(rng(8), 2, 3, 17)
    want = run_onnx(
        "MaxPool", {"x": x}, kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1
    )
    got = K.max_pool(
        nhwc(x), kernel=(3,), strides=(2,), pads=(1, 1), dilations=(1,), ceil_mode=True
    )
    np.testing.assert_array_equal(got, nhwc(want))


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(
    "kernel,strides,pads,dil,ceil", [c for c in POOL_CASES if c[3] == (1, 1)]
)
def test_avg_pool(
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, ...],
    dil: tuple[int, int],
    ceil: bool,
    count_include_pad: bool,
) -> None:
    x = randn(rng(sum(kernel)), 2, 3, 11, 12)
    want = run_onnx(
        "AveragePool",
        {"x": x},
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(pads),
        ceil_mode=int(ceil),
        count_include_pad=int(count_include_pad),
    )
    got = K.avg_pool(
        nhwc(x),
        kernel=kernel,
        strides=strides,
        pads=pads,
        ceil_mode=ceil,
        count_include_pad=count_include_pad,
    )
    close("avg_pool", got, nhwc(want))


def test_avg_pool_1d() -> None:
    x = randn(rng(12), 1, 4, 15)
    want = run_onnx(
        "AveragePool", {"x": x}, kernel_shape=[4], strides=[3], pads=[2, 1], ceil_mode=1
    )
    got = K.avg_pool(
        nhwc(x),
        kernel=(4,),
        strides=(3,),
        pads=(2, 1),
        ceil_mode=True,
        count_include_pad=False,
    )
    close("avg_pool", got, nhwc(want))


@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (2, 6, 13)])
def test_global_avg_pool(shape: tuple[int, ...]) -> None:
    x = randn(rng(len(shape)), *shape) + 1.0
    want = run_onnx("GlobalAveragePool", {"x": x})
    got = K.global_avg_pool(nhwc(x))
    close("global_avg_pool", got, nhwc(want))


# ---------------------------------------------------------------------------
# Resize

COORD_MODES = [
    "half_pixel",
    "asymmetric",
    "align_corners",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
RESIZE_SHAPES = {
    "up": ((5, 7), (9, 16)),
    "down": ((9, 16), (5, 7)),
    "x2": ((6, 5), (12, 10)),
    "half": ((12, 10), (6, 5)),
    "mixed": ((6, 9), (11, 4)),
    "one_axis": ((6, 5), (6, 9)),
    "ties": ((20, 7), (6, 16)),  # exact half coordinates that float32 misses
}


def _resize_onnx(x: Array, out_hw: Sequence[int], **attrs: Any) -> Array:
    sizes = np.array([*x.shape[:2], *out_hw], dtype=np.int64)
    roi = np.zeros(0, dtype=np.float32)
    scales = np.zeros(0, dtype=np.float32)
    return run_onnx(
        "Resize", {"x": x}, {"roi": roi, "scales": scales, "sizes": sizes}, **attrs
    )


@pytest.mark.parametrize("shape", list(RESIZE_SHAPES))
@pytest.mark.parametrize("ctm", COORD_MODES)
@pytest.mark.parametrize("nearest", NEAREST_MODES)
def test_resize_nearest(shape: str, ctm: str, nearest: str) -> None:
    (h, w), out = RESIZE_SHAPES[shape]
    x = randn(rng(h * w), 2, 3, h, w)
    want = _resize_onnx(
        x, out, mode="nearest", coordinate_transformation_mode=ctm, nearest_mode=nearest
    )
    got = K.resize(
        nhwc(x),
        out_spatial=out,
        mode="nearest",
        coordinate_transformation_mode=ctm,
        nearest_mode=nearest,
    )
    np.testing.assert_array_equal(got, nhwc(want))


@pytest.mark.parametrize("shape", list(RESIZE_SHAPES))
@pytest.mark.parametrize("ctm", COORD_MODES)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_interpolating(shape: str, ctm: str, mode: str) -> None:
    (h, w), out = RESIZE_SHAPES[shape]
    x = randn(rng(h + w), 2, 3, h, w)
    want = _resize_onnx(x, out, mode=mode, coordinate_transformation_mode=ctm)
    got = K.resize(
        nhwc(x),
        out_spatial=out,
        mode=mode,
        coordinate_transformation_mode=ctm,
        nearest_mode="floor",
    )
    close(f"resize_{mode}", got, nhwc(want))


def test_resize_one_axis_and_integer_nearest() -> None:
    x = rng(3).integers(-128, 128, size=(1, 4, 6, 7)).astype(np.int8)
    want = _resize_onnx(
        x, (6, 14), mode="nearest", coordinate_transformation_mode="asymmetric"
    )
    got = K.resize(
        nhwc(x),
        out_spatial=(6, 14),
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="round_prefer_floor",
    )
    np.testing.assert_array_equal(got, nhwc(want))


# ---------------------------------------------------------------------------
# Pad


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize(
    "pads_nchw",
    [
        (0, 0, 1, 2, 0, 0, 3, 1),
        (0, 1, 0, 2, 1, 0, 2, 0),
        (0, 0, 2, 2, 0, 2, 2, 2),
    ],
)
def test_pad(mode: str, pads_nchw: tuple[int, ...]) -> None:
    x = randn(rng(21), 2, 3, 5, 6)
    consts: dict[str, Array] = {"p": np.array(pads_nchw, dtype=np.int64)}
    if mode == "constant":
        consts["v"] = np.array(1.5, dtype=np.float32)
    want = run_onnx("Pad", {"x": x}, consts, mode=mode, opset=19 if mode == "wrap" else 13)
    order = [0, 2, 3, 1]
    pads = [pads_nchw[i] for i in order] + [pads_nchw[4 + i] for i in order]
    got = K.pad(nhwc(x), pads=pads, mode=mode, value=1.5)
    np.testing.assert_array_equal(got, nhwc(want))


def test_pad_negative_crops() -> None:
    x = randn(rng(22), 1, 2, 6, 6)
    pads = np.array([0, 0, -1, 2, 0, 0, 1, -2], dtype=np.int64)
    want = run_onnx("Pad", {"x": x}, {"p": pads}, mode="constant")
    got = K.pad(x, pads=pads.tolist(), mode="constant")
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# Matrix products


@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product([0, 1], [0, 1])))
@pytest.mark.parametrize("c_shape", [None, (6,), (1, 6), (4, 6), ()])
def test_gemm(trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None) -> None:
    r = rng(trans_a * 2 + trans_b)
    a = randn(r, 7, 4) if trans_a else randn(r, 4, 7)
    b = randn(r, 6, 7) if trans_b else randn(r, 7, 6)
    inputs = {"a": a, "b": b}
    c = None
    if c_shape is not None:
        c = randn(r, *c_shape)
        inputs["c"] = c
    want = run_onnx("Gemm", inputs, alpha=0.7, beta=1.3, transA=trans_a, transB=trans_b)
    got = K.gemm(
        a, b, c, alpha=0.7, beta=1.3, trans_a=bool(trans_a), trans_b=bool(trans_b)
    )
    close("gemm", got, want)


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((4, 5), (5, 6)),
        ((2, 3, 4, 5), (5, 6)),
        ((3, 1, 4, 5), (2, 5, 6)),
        ((2, 4, 5), (2, 5, 3)),
        ((5,), (5, 6)),
        ((4, 5), (5,)),
        ((2, 4, 5), (5,)),
        ((5,), (3, 5, 2)),
    ],
)
def test_matmul(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    r = rng(len(sa) * 10 + len(sb))
    a, b = randn(r, *sa), randn(r, *sb)
    want = run_onnx("MatMul", {"a": a, "b": b})
    close("matmul", K.matmul(a, b), want)


# ---------------------------------------------------------------------------
# Softmax, elementwise, reductions


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis_nchw,axis_nhwc", [(1, -1), (3, 2), (2, 1)])
def test_softmax(op: str, axis_nchw: int, axis_nhwc: int) -> None:
    x = randn(rng(31), 2, 5, 4, 6) * 40.0  # wide range: the max must be subtracted
    want = run_onnx(op, {"x": x}, axis=axis_nchw)
    fn = K.softmax if op == "Softmax" else K.log_softmax
    close(op.lower(), fn(nhwc(x), axis=axis_nhwc), nhwc(want))


UNARY: list[tuple[str, str, dict[str, Any], int, Any]] = [
    # (ONNX op, kernel name, attrs, opset, input transform)
    ("Relu", "relu", {}, 13, None),
    ("Sigmoid", "sigmoid", {}, 13, None),
    ("Tanh", "tanh", {}, 13, None),
    ("HardSwish", "hard_swish", {}, 14, None),
    ("HardSigmoid", "hard_sigmoid", {"alpha": 0.3, "beta": 0.4}, 13, None),
    ("LeakyRelu", "leaky_relu", {"alpha": 0.07}, 13, None),
    ("Elu", "elu", {"alpha": 1.3}, 13, None),
    ("Gelu", "gelu", {"approximate": "none"}, 20, None),
    ("Gelu", "gelu", {"approximate": "tanh"}, 20, None),
    ("Erf", "erf", {}, 13, None),
    ("Exp", "exp", {}, 13, None),
    ("Log", "log", {}, 13, np.abs),
    ("Sqrt", "sqrt", {}, 13, np.abs),
    ("Abs", "abs", {}, 13, None),
    ("Floor", "floor", {}, 13, None),
]


@pytest.mark.parametrize(
    "op,name,attrs,opset,prep", UNARY, ids=[f"{u[0]}-{u[2]}" for u in UNARY]
)
def test_unary(
    op: str, name: str, attrs: dict[str, Any], opset: int, prep: Any
) -> None:
    x = randn(rng(41), 2, 3, 8, 9) * 3.0
    x = np.concatenate([x.reshape(-1), np.linspace(-9, 9, 181, dtype=np.float32)])
    if prep is not None:
        x = prep(x) + np.float32(1e-3)
    want = run_onnx(op, {"x": x}, opset=opset, **attrs)
    kw = {"alpha" if k == "alpha" else k: v for k, v in attrs.items()}
    got = getattr(K, name)(x, **kw)
    close(name, got, want)


def test_erf_against_math_erf() -> None:
    z = np.concatenate([np.linspace(-7, 7, 2801), [0.0, 4.999999, 5.0, 5.000001, 40.0]])
    want = np.array([math.erf(v) for v in z])
    assert np.max(np.abs(K._erf64(z) - want)) < 1e-12


@pytest.mark.parametrize("lo,hi", [(-0.5, 1.25), (None, 0.3), (-1.0, None)])
def test_clip(lo: float | None, hi: float | None) -> None:
    x = randn(rng(51), 2, 3, 4, 5)
    consts: dict[str, Array] = {}
    names: dict[str, Array] = {"x": x}
    if lo is not None:
        consts["lo"] = np.array(lo, dtype=np.float32)
    if hi is not None:
        if lo is None:
            consts["lo"] = np.array(-np.inf, dtype=np.float32)
        consts["hi"] = np.array(hi, dtype=np.float32)
    want = run_onnx("Clip", names, consts)
    np.testing.assert_array_equal(K.clip(x, lo=lo, hi=hi), want)


@pytest.mark.parametrize("slope_shape_nchw", [(3, 1, 1), (1,), (3, 4, 5)])
def test_prelu(slope_shape_nchw: tuple[int, ...]) -> None:
    r = rng(61)
    x, slope = randn(r, 2, 3, 4, 5), randn(r, *slope_shape_nchw)
    want = run_onnx("PRelu", {"x": x, "s": slope})
    s_nhwc = np.moveaxis(slope, 0, -1) if slope.ndim == 3 else slope
    close("prelu", K.prelu(nhwc(x), s_nhwc), nhwc(want))


@pytest.mark.parametrize("kind", ["mean", "max", "sum"])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize(
    "axes_nchw,axes_nhwc",
    [((2, 3), (1, 2)), ((1,), (3,)), ((0, 2), (0, 1)), (None, None)],
)
def test_reduce(
    kind: str,
    keepdims: int,
    axes_nchw: tuple[int, ...] | None,
    axes_nhwc: tuple[int, ...] | None,
) -> None:
    x = randn(rng(71), 2, 3, 4, 5) + 0.5
    op = {"mean": "ReduceMean", "max": "ReduceMax", "sum": "ReduceSum"}[kind]
    consts: dict[str, Array] = {}
    attrs: dict[str, Any] = {"keepdims": keepdims}
    if axes_nchw is not None:
        if kind == "sum":
            consts["axes"] = np.array(axes_nchw, dtype=np.int64)
        else:
            attrs["axes"] = list(axes_nchw)
    want = run_onnx(op, {"x": x}, consts, **attrs)
    got = K.reduce(nhwc(x), kind=kind, axes=axes_nhwc, keepdims=bool(keepdims))
    if keepdims:
        want = nhwc(want)
    elif axes_nchw is not None:
        kept_nchw = [a for a in range(4) if a not in axes_nchw]
        kept_nhwc = [a for a in (0, 2, 3, 1) if a not in axes_nchw]
        want = want.transpose([kept_nchw.index(a) for a in kept_nhwc])
    close(f"reduce_{kind}", got, want)
