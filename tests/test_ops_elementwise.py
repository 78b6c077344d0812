"""Elementwise and reduction operators of the extended set, end to end.

Each model is built with `onnx.helper`, its reference checked against
onnxruntime, then planned at its minimum budget (so that it tiles) and run by
the interpreter and as C, both equal to the untiled reference
(`ops_oracle.check_model`). Several ops share one model (one output each), so
that one plan and one C build cover them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from ops_oracle import check_model, make_model, qdq, rand

from tigris_ir.reference.executor import run_reference

pytest.importorskip("onnxruntime")

X = (1, 3, 12, 10)

UNARY = [
    ("Neg", {}),
    ("Reciprocal", {}),
    ("Softplus", {}),
    ("Softsign", {}),
    ("Sign", {}),
    ("Erf", {}),
    ("Mish", {}),
    ("Selu", {}),
    ("Selu", {"alpha": 1.5, "gamma": 0.7}),
    ("Shrink", {"bias": 0.25, "lambd": 0.75}),
    ("Shrink", {}),
]


def test_unary_ops_float32():
    nodes = [
        helper.make_node(op, ["x"], [f"y{i}"], name=f"n{i}", **attrs)
        for i, (op, attrs) in enumerate(UNARY)
    ]
    outs = [f"y{i}" for i in range(len(UNARY))]
    model = make_model(nodes, {"x": X}, outs, opset=18)
    x = rand(X, seed=1)
    x.flat[:2] = [0.75, -0.75]  # Shrink's edges
    got = check_model(model, {"x": x})
    assert all(w <= 1e-6 for w in got.worst), got.worst


def test_unary_ops_int8_qdq():
    nodes, inits = [], {}
    for i, (op, attrs) in enumerate(UNARY[:8]):
        node = helper.make_node(op, ["x"], [f"y{i}"], name=f"n{i}", **attrs)
        more, more_inits = qdq(node, 0.04, 0.03, zp=-5)
        nodes += more
        inits |= more_inits
    model = make_model(nodes, {"x": X}, [f"y{i}" for i in range(8)], inits, opset=18)
    got = check_model(model, {"x": rand(X, seed=2)})
    assert got.worst and max(got.worst) <= 1


def test_gelu_both_approximations():
    """Gelu (opset 20), exact and tanh, against onnxruntime, tiled and as C."""
    nodes = [
        helper.make_node("Gelu", ["x"], ["exact"]),
        helper.make_node("Gelu", ["x"], ["tanh"], approximate="tanh"),
    ]
    model = make_model(nodes, {"x": X}, ["exact", "tanh"], opset=20)
    got = check_model(model, {"x": rand(X, seed=11)})
    assert all(w <= 1e-6 for w in got.worst), got.worst


def test_pow_and_the_erf_form_of_gelu():
    """Pow with a tensor and a constant exponent; Gelu written out with Erf,
    as exporters emit it: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    nodes = [
        helper.make_node("Abs", ["x"], ["ax"]),
        helper.make_node("Pow", ["ax", "e"], ["p0"]),
        helper.make_node("Pow", ["ax", "x"], ["p1"]),
        helper.make_node("Div", ["x", "sqrt2"], ["g0"]),
        helper.make_node("Erf", ["g0"], ["g1"]),
        helper.make_node("Add", ["g1", "one"], ["g2"]),
        helper.make_node("Mul", ["x", "g2"], ["g3"]),
        helper.make_node("Mul", ["g3", "half"], ["gelu"]),
    ]
    inits = {
        "e": np.array(1.5, np.float32),
        "sqrt2": np.array(np.sqrt(2.0), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    model = make_model(nodes, {"x": X}, ["p0", "p1", "gelu"], inits)
    check_model(model, {"x": rand(X, seed=3, scale=1.0)})


def test_variadic_sum_mean_max_min():
    """Three inputs, one of them broadcast (a per-channel constant)."""
    c = rand((3, 1, 1), seed=4)
    nodes = [
        helper.make_node(op, ["a", "b", "c"], [op.lower()])
        for op in ("Sum", "Mean", "Max", "Min")
    ]
    nodes.append(helper.make_node("Sum", ["a"], ["one"]))
    nodes.append(helper.make_node("Mean", ["a", "b"], ["two"]))
    model = make_model(
        [helper.make_node("Identity", ["a0"], ["a"]), *nodes],
        {"a0": X, "b": X},
        ["sum", "mean", "max", "min", "one", "two"],
        {"c": c},
    )
    check_model(model, {"a0": rand(X, seed=5), "b": rand(X, seed=6)})


def test_int8_sum_is_one_rounding():
    """A QDQ Sum of three int8 activations: dequantize, add, quantize once."""
    nodes, inits = [], {}
    for n in ("a", "b", "c"):
        inits[f"s_{n}"] = np.array(0.05, np.float32)
        inits["z"] = np.array(0, np.int8)
        nodes += [
            helper.make_node("QuantizeLinear", [n, f"s_{n}", "z"], [f"{n}q"]),
            helper.make_node("DequantizeLinear", [f"{n}q", f"s_{n}", "z"], [f"{n}d"]),
        ]
    inits["s_y"] = np.array(0.1, np.float32)
    nodes += [
        helper.make_node("Sum", ["ad", "bd", "cd"], ["s"]),
        helper.make_node("QuantizeLinear", ["s", "s_y", "z"], ["sq"]),
        helper.make_node("DequantizeLinear", ["sq", "s_y", "z"], ["y"]),
    ]
    model = make_model(nodes, {"a": X, "b": X, "c": X}, ["y"], inits)
    feeds = {n: rand(X, seed=7 + i) for i, n in enumerate("abc")}
    got = check_model(model, feeds)
    assert got.worst == [0.0]


def test_reductions_and_global_max_pool():
    nodes = [
        helper.make_node("GlobalMaxPool", ["x"], ["gmp"]),
        helper.make_node("ReduceMin", ["x"], ["rmin"], axes=[1], keepdims=1),
        helper.make_node("ReduceL2", ["x"], ["rl2"], axes=[1], keepdims=1),
        helper.make_node("ReduceProd", ["x"], ["rprod"], axes=[1], keepdims=1),
        helper.make_node("ReduceMin", ["x"], ["rmin3"], axes=[3], keepdims=0),
    ]
    model = make_model(nodes, {"x": X}, ["gmp", "rmin", "rl2", "rprod", "rmin3"], opset=13)
    check_model(model, {"x": rand(X, seed=9, scale=1.0)})


def test_int8_global_max_pool_and_reduce_min_run_on_the_stored_integers():
    nodes, inits = [], {}
    for i, node in enumerate(
        [
            helper.make_node("GlobalMaxPool", ["x"], ["y0"], name="g"),
            helper.make_node("ReduceMin", ["x"], ["y1"], name="r", axes=[1], keepdims=1),
        ]
    ):
        more, more_inits = qdq(node, 0.05, 0.05, zp=i)
        nodes += more
        inits |= more_inits
    model = make_model(nodes, {"x": X}, ["y0", "y1"], inits, opset=13)
    got = check_model(model, {"x": rand(X, seed=10)}, min_tiles=1)
    assert got.worst == [0.0, 0.0]


def test_prelu_with_a_per_channel_slope_before_opset_7():
    """Opset 6 PRelu: a slope of shape (C,) is per channel. onnxruntime has no
    PRelu(6) kernel: the oracle is the converted PyTorch test's expected output."""
    case = Path(onnx.__file__).parent / "backend/test/data/pytorch-converted"
    case = case / "test_PReLU_2d_multiparam"
    model = onnx.load(str(case / "model.onnx"))
    x = numpy_helper.to_array(onnx.load_tensor(str(case / "test_data_set_0/input_0.pb")))
    want = numpy_helper.to_array(onnx.load_tensor(str(case / "test_data_set_0/output_0.pb")))
    name = model.graph.input[0].name
    got = check_model(model, {name: x}, ort=False)
    ours = run_reference(got.module, got.weights, [x])[0]
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-7)


def test_prelu_slope_that_is_not_per_channel_is_named():
    from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model

    node = helper.make_node("PRelu", ["x", "s"], ["y"], name="act")
    model = make_model([node], {"x": X}, ["y"], {"s": np.ones(4, np.float32)}, opset=6)
    with pytest.raises(ImportDiagnostic, match=r"node 0 'act' \(PRelu\).*4 values.*3 channels"):
        import_model(model)


def _wrapped(specs, scales):
    """Each (node, q_inputs) of `specs` inside QDQ (input scale 0.05, output
    scale from `scales`, zero points 0, 1, ...): the nodes and initializers."""
    nodes, inits = [], {}
    for i, ((node, q_inputs), so) in enumerate(zip(specs, scales, strict=True)):
        more, more_inits = qdq(node, 0.05, so, zp=i % 7, q_inputs=q_inputs)
        nodes += more
        inits |= more_inits
    return nodes, inits


def test_int8_qdq_around_float_bodies():
    """Ops an int8 QDQ model wraps but that have no integer form (Shrink,
    Pow, Gelu, Mean, the variadic Max / Min, Where, ReduceL2, ReduceProd):
    dequantize, the float op, quantize, within one step of onnxruntime, tiled
    and as C equal to the reference. ReduceL2 and ReduceProd were imported
    as int8 ops, which the C does not lower."""
    n = helper.make_node
    specs = [
        (n("Shrink", ["x"], ["y0"], name="shrink", bias=0.25, lambd=0.75), (0,)),
        (n("Pow", ["x", "e"], ["y1"], name="pow"), (0,)),
        (n("Gelu", ["x"], ["y2"], name="gelu"), (0,)),
        (n("Mean", ["x", "x2", "x3"], ["y3"], name="mean"), (0, 1, 2)),
        (n("Max", ["x", "x2", "x3"], ["y4"], name="max"), (0, 1, 2)),
        (n("Min", ["x", "x2", "x3"], ["y5"], name="min"), (0, 1, 2)),
        (n("Where", ["c", "x", "x2"], ["y6"], name="where"), (1, 2)),
        (n("ReduceL2", ["x", "ax"], ["y7"], name="l2"), (0,)),
        (n("ReduceProd", ["x", "ax"], ["y8"], name="prod"), (0,)),
    ]
    scales = [0.04, 0.2, 0.04, 0.03, 0.04, 0.04, 0.05, 0.05, 0.1]
    nodes, inits = _wrapped(specs, scales)
    nodes.insert(0, helper.make_node("Greater", ["x", "x2"], ["c"]))
    inits["e"] = np.array(2.0, np.float32)
    inits["ax"] = np.array([1], np.int64)
    outs = [f"y{i}" for i in range(len(specs))]
    model = make_model(nodes, {"x": X, "x2": X, "x3": X}, outs, inits, opset=20)
    feeds = {k: rand(X, seed=20 + i, scale=1.5) for i, k in enumerate(("x", "x2", "x3"))}
    got = check_model(model, feeds)
    assert max(got.worst) <= 1, got.worst
