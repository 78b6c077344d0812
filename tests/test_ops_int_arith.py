"""Integer Div and Pow, and MatMulInteger with a zero point per row of A.

Div and Pow of integer data follow onnxruntime (`kernels.divide_integers`,
`kernels.power`): each model against onnxruntime, then tiled in the
interpreter and as C against the untiled reference (`ops_oracle.check_model`).
Where onnxruntime has no answer (a zero divisor, the minimum over -1: it
traps; a per-row a_zero_point: it refuses), the definition is checked
against exact arithmetic instead.
"""

from __future__ import annotations

import fractions

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from ops_oracle import check_model, make_model, rand

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.reference import kernels as K
from tigris_ir.reference.executor import run_reference

RNG = np.random.default_rng(11)
SHAPE = (1, 3, 10, 10)


def _ints(shape: tuple[int, ...], lo: int, hi: int, dtype: type) -> np.ndarray:
    return RNG.integers(lo, hi, shape, endpoint=True).astype(dtype)


def _cast_conv(src: str) -> list[onnx.NodeProto]:
    """A float Conv after the integer part, so that the plans tile."""
    return [
        helper.make_node("Cast", [src], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["f", "w"], ["y"]),
    ]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_integer_division_truncates_as_onnxruntime(dtype: type) -> None:
    """Div of integer data by a run-time and a constant per-channel divisor,
    signs mixed, the quotient truncated toward zero (numpy's // floors)."""
    info = np.iinfo(dtype)
    lo = max(int(info.min) + 1, -(2**40))  # not the minimum: -min / -1 traps onnxruntime
    hi = min(int(info.max), 2**40)
    x = _ints(SHAPE, lo, hi, dtype)
    d = _ints(SHAPE, 1 if info.min == 0 else -9, 9, dtype)
    d[d == 0] = 7
    k = np.array([3, 7, 2] if info.min == 0 else [-3, 7, -2], dtype).reshape(1, 3, 1, 1)
    nodes = [
        helper.make_node("Div", ["x", "d"], ["q"]),
        helper.make_node("Div", ["q", "k"], ["yi"]),
        *_cast_conv("yi"),
    ]
    inits = {"k": k, "w": rand((2, 3, 1, 1), 3, 1e-3)}
    m = make_model(nodes, {"x": SHAPE, "d": SHAPE}, ["y", "yi", "q"], inits,
                   types={"x": dtype, "d": dtype, "yi": dtype, "q": dtype})
    got = check_model(m, {"x": x, "d": d})
    assert got.worst[1:] == [0.0, 0.0]
    if info.min < 0:  # the case that tells truncation from numpy's floor
        assert np.any((x < 0) & (x % d != 0))


def test_division_where_onnxruntime_traps_is_defined() -> None:
    """A zero divisor gives 0 and the minimum over -1 the minimum, in the
    reference, the tiled interpreter and the C alike; elsewhere the quotient
    is the exact one truncated toward zero."""
    for dt in (np.int8, np.uint8, np.int32, np.int64):
        info = np.iinfo(dt)
        a = _ints((4000,), int(info.min), int(info.max), dt)
        b = _ints((4000,), int(info.min), int(info.max), dt)
        b[:200] = _ints((200,), max(int(info.min), -2), 2, dt)
        a[:50] = info.min
        got = K.divide_integers(a, b)
        want = [
            0 if y == 0 else int(info.min) if (x == info.min and y == -1)
            else int(fractions.Fraction(int(x), int(y)))
            for x, y in zip(a, b)
        ]
        assert got.dtype == dt and got.astype(object).tolist() == want, dt
    nodes = [helper.make_node("Div", ["x", "d"], ["yi"]), *_cast_conv("yi")]
    x = _ints(SHAPE, -(2**31), 2**31 - 1, np.int32)
    d = _ints(SHAPE, -2, 2, np.int32)
    x.reshape(-1)[:20] = -(2**31)
    d.reshape(-1)[:10] = -1
    inits = {"w": rand((2, 3, 1, 1), 3, 1e-9)}
    m = make_model(nodes, {"x": SHAPE, "d": SHAPE}, ["y", "yi"], inits,
                   types={"x": np.int32, "d": np.int32, "yi": np.int32})
    got = check_model(m, {"x": x, "d": d}, ort=False)
    (yi,) = run_reference(got.module, got.weights, [x, d])[1:]
    np.testing.assert_array_equal(yi, K.divide_integers(x, d))
    assert np.any(d == 0) and np.any((x == -(2**31)) & (d == -1))


def test_integer_division_by_a_constant_zero_is_refused_by_name() -> None:
    nodes = [helper.make_node("Div", ["x", "k"], ["y"])]
    k = np.array([[2, 0, 5]], np.int32)
    m = make_model(nodes, {"x": (2, 3)}, ["y"], {"k": k},
                   types={"x": np.int32, "y": np.int32})
    with pytest.raises(ImportDiagnostic, match=r"divisor 'k' holds 0 at index \[0, 1\]"):
        import_model(m, origin="test")


def test_folded_integer_division_truncates() -> None:
    """A Div of constants (a shape computation) folds with the same rule."""
    nodes = [
        helper.make_node("Div", ["a", "b"], ["q"]),
        helper.make_node("Add", ["x", "q"], ["y"]),
    ]
    inits = {"a": np.array([-7, 7, -9], np.int64), "b": np.array([2, -2, 4], np.int64)}
    m = make_model(nodes, {"x": (3,)}, ["y"], inits, types={"x": np.int64, "y": np.int64})
    imp = import_model(m, origin="test")
    x = np.zeros(3, np.int64)
    np.testing.assert_array_equal(run_reference(imp.module, imp.weights, [x])[0], [-3, -3, -2])


_POW_SHAPES = [
    ((6,), ()), ((6,), (1,)), ((2, 3), (2, 1)), ((2, 3), (1, 3)), ((2, 3), (2, 3)),
    ((3, 1), (1, 1)), ((3, 1), ()), ((1,), (1,)), ((1, 3), (2, 1)), ((2, 1), (1, 3)),
    ((2, 3, 1), (2, 1, 1)), ((), ()), ((2, 1), (2, 1)), ((1, 1), (1,)), ((1,), ()),
    ((), (1,)), ((2, 3), (3,)), ((4, 1, 3), (1, 5, 1)), ((4, 5, 3), (4, 1, 1)),
    ((3,), (1, 1, 1)), ((6, 1), (1,)), ((1, 6, 1), (1, 1, 1)),
]


def _ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_pow_multiplies_where_onnxruntime_does() -> None:
    """`pow_multiplies` against onnxruntime for each broadcast form: 100000^2
    in int32 is 1410065408 when multiplied (wrapping), the minimum through
    double (out of range)."""
    for sx, sy in _POW_SHAPES:
        g = helper.make_graph(
            [helper.make_node("Pow", ["a", "b"], ["y"])], "g",
            [helper.make_tensor_value_info("a", TensorProto.INT32, sx),
             helper.make_tensor_value_info("b", TensorProto.INT32, sy)],
            [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        )
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
        a, b = np.full(sx, 100000, np.int32), np.full(sy, 2, np.int32)
        (y,) = _ort_run(m, {"a": a, "b": b})
        assert set(np.asarray(y).reshape(-1).tolist()) <= {1410065408, -(2**31)}
        ort_multiplies = bool(np.asarray(y).reshape(-1)[0] == 1410065408)
        assert K.pow_multiplies(sx, sy) == ort_multiplies, (sx, sy)
        np.testing.assert_array_equal(K.power(a, b, multiply=ort_multiplies), y)


@pytest.mark.parametrize(
    ("base", "exp"),
    [
        (np.int32, np.int32),
        (np.int32, np.int64),
        (np.int64, np.int64),
        (np.int64, np.int32),
        (np.int32, np.float32),
        (np.int64, np.float32),
    ],
)
def test_integer_power_as_onnxruntime(base: type, exp: type) -> None:
    """Pow of an integer base: a run-time exponent (through double: results
    past 2^53 rounded, out of range the minimum), a constant scalar 3 and a
    per-channel constant [2, 3, 22] (onnxruntime multiplies for 2 and 3,
    wrapping), against onnxruntime, tiled and in C."""
    x = _ints(SHAPE, -12, 12, base)
    x.reshape(-1)[:6] = [100000, -100000, 46341, 7, 3037000500 % 2**31, -3]
    if exp == np.float32:
        e = RNG.choice(np.array([0.5, 1.5, -1.0, 2.0, 3.0, 2.5, 0.0, 9.0, 22.0], exp), SHAPE)
    else:
        e = _ints(SHAPE, -2, 40, exp)
    nodes = [
        helper.make_node("Pow", ["x", "e"], ["p0"]),
        helper.make_node("Pow", ["x", "three"], ["p1"]),
        helper.make_node("Pow", ["x", "k"], ["p2"]),
        helper.make_node("Add", ["p0", "p1"], ["s"]),
        helper.make_node("Add", ["s", "p2"], ["yi"]),
        *_cast_conv("yi"),
    ]
    inits = {
        "three": np.array(3, exp),
        "k": np.array([2, 3, 22], exp).reshape(1, 3, 1, 1),
        "w": rand((2, 3, 1, 1), 3, 1e-12),
    }
    types = {"x": base, "e": exp, "yi": base, "p0": base, "p1": base, "p2": base}
    m = make_model(nodes, {"x": SHAPE, "e": SHAPE}, ["y", "yi", "p0", "p1", "p2"], inits,
                   types=types)
    got = check_model(m, {"x": x, "e": e})
    assert got.worst[1:] == [0.0] * 4
    p1 = run_reference(got.module, got.weights, [x, e])[3]
    assert np.any(p1 != (x.astype(np.float64) ** 3).clip(-(2.0**63), 2.0**63))  # wrapped


def test_float_power_with_an_integer_exponent_and_the_cube_bit_exact() -> None:
    """A float base with an int64 run-time exponent (double, rounded once)
    and a scalar exponent 3.0 (onnxruntime's float32 x * x * x): both equal
    onnxruntime bit for bit, tiled and in C."""
    nodes = [
        helper.make_node("Pow", ["x", "e"], ["p0"]),
        helper.make_node("Pow", ["x", "three"], ["p1"]),
        helper.make_node("Add", ["p0", "p1"], ["y"]),
    ]
    inits = {"three": np.array(3.0, np.float32)}
    x = rand(SHAPE, 5, 1.5)
    e = _ints(SHAPE, -3, 5, np.int64)
    m = make_model(nodes, {"x": SHAPE, "e": SHAPE}, ["y", "p0", "p1"], inits,
                   types={"e": np.int64})
    got = check_model(m, {"x": x, "e": e})
    assert got.worst[1:] == [0.0, 0.0]


def test_pow_types_onnxruntime_lacks_are_refused_by_name() -> None:
    nodes = [helper.make_node("Pow", ["x", "e"], ["y"])]
    m = make_model(nodes, {"x": (2, 3), "e": (2, 3)}, ["y"], types={"e": np.uint8})
    with pytest.raises(ImportDiagnostic, match="an integer exponent must be i32 or i64"):
        import_model(m, origin="test")


@pytest.mark.parametrize("form", ["vector", "rows"])
def test_matmul_integer_with_a_zero_point_per_row(form: str) -> None:
    """MatMulInteger with one a_zero_point per row of A: M values for an
    (M, K) A, or the shape (D, M, 1) for a (D, M, K) A. onnxruntime refuses
    both, so the int32 result is checked against the definition (A - zp) @
    (B - b_zp) and, for the (D, M, 1) form, against onnx's reference
    evaluator (which broadcasts a vector along K instead); then tiled and in
    C against the reference."""
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    m_rows, k, n = 12, 20, 8
    shape = (m_rows, k) if form == "vector" else (2, m_rows, k)
    zshape = (m_rows,) if form == "vector" else (2, m_rows, 1)
    a = _ints(shape, 0, 255, np.uint8)
    inits = {
        "b": _ints((k, n), -128, 127, np.int8),
        "az": _ints(zshape, 0, 255, np.uint8),
        "bz": _ints((n,), -4, 4, np.int8),
        "ws": np.array(0.01, np.float32),
    }
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["yi"]),
        helper.make_node("Cast", ["yi"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["f", "ws"], ["y"]),
    ]
    m = make_model(nodes, {"a": shape}, ["y", "yi"], inits, types={"a": np.uint8, "yi": np.int32})
    got = check_model(m, {"a": a}, ort=False, min_tiles=1)
    (yi,) = run_reference(got.module, got.weights, [a])[1:]
    az = inits["az"].astype(np.int64).reshape(*zshape[:-1], -1) if form == "rows" else None
    rows = inits["az"].astype(np.int64).reshape(-1, 1) if form == "vector" else az
    want = (a.astype(np.int64) - rows) @ (inits["b"].astype(np.int64) - inits["bz"])
    np.testing.assert_array_equal(yi, want.astype(np.int32))
    if form == "rows":
        np.testing.assert_array_equal(yi, ReferenceEvaluator(m).run(None, {"a": a})[1])


def test_matmul_integer_zero_point_of_another_shape_is_refused() -> None:
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])]
    inits = {"b": _ints((5, 4), -128, 127, np.int8), "az": _ints((3,), 0, 255, np.uint8)}
    m = make_model(nodes, {"a": (6, 5)}, ["y"], inits, types={"a": np.uint8, "y": np.int32})
    with pytest.raises(ImportDiagnostic, match=r"a_zero_point of shape \[3\] fits neither"):
        import_model(m, origin="test")


def test_folded_matmul_integer_with_row_zero_points() -> None:
    """All-constant MatMulInteger with M zero points folds by the definition."""
    a = _ints((3, 4), 0, 255, np.uint8)
    b = _ints((4, 2), -128, 127, np.int8)
    az = np.array([1, 2, 3], np.uint8)
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "az"], ["p"]),
        helper.make_node("Add", ["x", "p"], ["y"]),
    ]
    m = make_model(nodes, {"x": (3, 2)}, ["y"], {"a": a, "b": b, "az": az},
                   types={"x": np.int32, "y": np.int32})
    imp = import_model(m, origin="test")
    x = np.zeros((3, 2), np.int32)
    want = (a.astype(np.int64) - az.reshape(-1, 1)) @ b.astype(np.int64)
    np.testing.assert_array_equal(run_reference(imp.module, imp.weights, [x])[0], want)

