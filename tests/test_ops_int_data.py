"""Integer and boolean tensors as data: Cast, comparisons, logic, Where,
ArgMax / ArgMin, TopK, Gather with run-time indices, integer and bool model inputs
and scalars. Each model against onnxruntime, then tiled in the interpreter
and as C against the untiled reference (`ops_oracle.check_model`)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from ops_oracle import check_model, make_model, rand

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime

RNG = np.random.default_rng(7)


def _ints(shape: tuple[int, ...], lo: int, hi: int, dtype: type) -> np.ndarray:
    return RNG.integers(lo, hi, shape).astype(dtype)


def test_int32_input_cast_to_float() -> None:
    """The exporters' pattern: an int32 input cast to float feeds a Conv."""
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["xf", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    w = rand((4, 3, 3, 3), 1, 0.3)
    m = make_model(nodes, {"x": (1, 3, 12, 12)}, ["y"], {"w": w}, types={"x": np.int32})
    check_model(m, {"x": _ints((1, 3, 12, 12), -50, 50, np.int32)})


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (np.float32, np.int32),
        (np.float32, np.int8),
        (np.float32, np.uint8),
        (np.float32, np.int64),
        (np.float32, np.bool_),
        (np.int64, np.float32),
        (np.int32, np.int8),
        (np.bool_, np.float32),
        (np.uint8, np.int32),
    ],
)
def test_cast(src: type, dst: type) -> None:
    """Cast between the element types, on values ONNX defines (in range)."""
    from ops_oracle import _ELEM  # noqa: PLC0415

    nodes = [helper.make_node("Cast", ["x"], ["y"], to=_ELEM[np.dtype(dst)])]
    shape = (1, 4, 6, 6)
    m = make_model(nodes, {"x": shape}, ["y"], types={"x": src, "y": dst})
    if src == np.float32:
        lo = 0 if dst in (np.uint8, np.bool_) else -100
        x = RNG.uniform(lo, 100, shape).astype(np.float32)
        x.reshape(-1)[:5] = 0.0  # zeros for bool
    elif src == np.bool_:
        x = RNG.integers(0, 2, shape).astype(np.bool_)
    else:
        x = _ints(shape, 0, 200, src)
    check_model(m, {"x": x})


_CAST_TYPES = (np.float32, np.int8, np.uint8, np.int32, np.int64, np.bool_)


@pytest.mark.parametrize("src", _CAST_TYPES, ids=lambda t: np.dtype(t).name)
def test_cast_to_every_type(src: type) -> None:
    """One source type cast to each of the six types (itself too), on values
    every destination holds: 0 to 100 (fractions from float32, 0 and 1 from
    bool)."""
    from ops_oracle import _ELEM  # noqa: PLC0415

    shape = (1, 3, 6, 6)
    outs = [f"y_{np.dtype(d).name}" for d in _CAST_TYPES]
    nodes = [
        helper.make_node("Cast", ["x"], [o], to=_ELEM[np.dtype(d)])
        for o, d in zip(outs, _CAST_TYPES, strict=True)
    ]
    types = {"x": src} | {o: d for o, d in zip(outs, _CAST_TYPES, strict=True)}
    m = make_model(nodes, {"x": shape}, outs, types=types)
    if src == np.float32:
        x = RNG.uniform(0, 100, shape).astype(np.float32)
        x.reshape(-1)[:4] = [0.0, 0.5, 1.0, 99.75]
    elif src == np.bool_:
        x = RNG.integers(0, 2, shape).astype(np.bool_)
    else:
        x = _ints(shape, 0, 101, src)
    check_model(m, {"x": x})


def test_cast_saturates_where_onnx_is_open() -> None:
    """Out of range and NaN: the reference's defined answer, tiled and in C."""
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT8)]
    m = make_model(nodes, {"x": (1, 2, 4, 4)}, ["y"], types={"y": np.int8})
    x = np.linspace(-300, 300, 32).astype(np.float32).reshape(1, 2, 4, 4)
    x[0, 0, 0, 0] = np.nan
    got = check_model(m, {"x": x}, ort=False, min_tiles=1)
    from tigris_ir.reference.executor import run_reference  # noqa: PLC0415

    (y,) = run_reference(got.module, got.weights, [x])
    assert y[0, 0, 0, 0] == 0 and y.min() == -128 and y.max() == 127


def test_compare_logic_where() -> None:
    """A clamp written as comparisons, And, Not and Where."""
    nodes = [
        helper.make_node("Less", ["x", "hi"], ["lt"]),
        helper.make_node("Greater", ["x", "lo"], ["gt"]),
        helper.make_node("And", ["lt", "gt"], ["inside"]),
        helper.make_node("Not", ["inside"], ["outside"]),
        helper.make_node("Mul", ["x", "k"], ["small"]),
        helper.make_node("Where", ["outside", "small", "x"], ["y"]),
        helper.make_node("Equal", ["x", "x"], ["same"]),
        helper.make_node("Or", ["same", "inside"], ["any"]),
    ]
    inits = {
        "hi": np.array(1.0, np.float32),
        "lo": np.array([-1.0, -0.5, 0.0, -2.0], np.float32).reshape(1, 4, 1, 1),
        "k": np.array(0.1, np.float32),
    }
    m = make_model(nodes, {"x": (1, 4, 8, 8)}, ["y", "any"], inits, types={"any": np.bool_})
    check_model(m, {"x": rand((1, 4, 8, 8), 3)})


def test_bool_mask_input() -> None:
    nodes = [helper.make_node("Where", ["mask", "x", "zero"], ["y"])]
    m = make_model(
        nodes,
        {"mask": (1, 1, 8, 8), "x": (1, 3, 8, 8)},
        ["y"],
        {"zero": np.zeros((1,), np.float32)},
        types={"mask": np.bool_},
    )
    feeds = {"mask": RNG.integers(0, 2, (1, 1, 8, 8)).astype(np.bool_), "x": rand((1, 3, 8, 8))}
    check_model(m, feeds)


def test_int64_scalar_input() -> None:
    """A model that takes an int64 scalar: cast and used as a factor."""
    nodes = [
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "nf"], ["y"]),
    ]
    m = make_model(nodes, {"x": (1, 3, 8, 8), "n": ()}, ["y"], types={"n": np.int64})
    check_model(m, {"x": rand((1, 3, 8, 8)), "n": np.array(3, np.int64)})


def test_scalar_constant_keeps_rank_0() -> None:
    """A scalar input plus a scalar constant is a scalar, as onnxruntime gives
    it (a scalar weight once became shape (1,), and so did the output)."""
    nodes = [
        helper.make_node("Add", ["n", "one"], ["m"]),
        helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "mf"], ["y"]),
    ]
    inits = {"one": np.array(1, np.int64)}
    m = make_model(
        nodes, {"x": (1, 3, 8, 8), "n": ()}, ["m", "y"], inits, types={"n": np.int64, "m": np.int64}
    )
    got = check_model(m, {"x": rand((1, 3, 8, 8)), "n": np.array(3, np.int64)})
    (ref_m, _) = run_reference(got.module, got.weights, [rand((1, 3, 8, 8)), np.array(3, np.int64)])
    assert ref_m.shape == () and int(ref_m) == 4


def test_size_output_is_a_scalar() -> None:
    """Size folds to a constant; as a graph output it keeps onnxruntime's shape ()."""
    nodes = [helper.make_node("Size", ["x"], ["s"])]
    m = make_model(nodes, {"x": (2, 3, 5)}, ["s"], types={"s": np.int64})
    imp = import_model(m, origin="test")
    (got,) = run_reference(imp.module, imp.weights, [rand((2, 3, 5))])
    report = compare_with_onnxruntime(m.SerializeToString(), {"x": rand((2, 3, 5))}, [got], ["s"])
    assert report.ok and got.shape == () and int(got) == 30, report.text


@pytest.mark.parametrize(("op", "last"), [("ArgMax", 0), ("ArgMin", 0), ("ArgMax", 1)])
def test_arg_reduce_channels(op: str, last: int) -> None:
    """ArgMax / ArgMin over the channels of a conv output (ties: a coarse
    Floor makes them frequent, so first and last index differ)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Floor", ["c"], ["f"]),
        helper.make_node(op, ["f"], ["y"], axis=1, keepdims=0, select_last_index=last),
    ]
    w = rand((6, 3, 3, 3), 2, 0.5)
    m = make_model(nodes, {"x": (1, 3, 10, 10)}, ["y"], {"w": w}, types={"y": np.int64})
    check_model(m, {"x": rand((1, 3, 10, 10), 4)})


def test_arg_max_keepdims_last_axis() -> None:
    nodes = [helper.make_node("ArgMax", ["x"], ["y"], axis=-1, keepdims=1)]
    m = make_model(nodes, {"x": (2, 5, 7)}, ["y"], types={"y": np.int64})
    check_model(m, {"x": rand((2, 5, 7), 5)}, min_tiles=1)


@pytest.mark.parametrize(
    ("opset", "axis", "shape"),
    [
        (13, None, (2, 5, 7)),  # opset 13: the last axis
        (13, 1, (1, 6, 5, 5)),  # the channels of a feature map
        (11, None, (2, 3, 4)),  # before 13: rows of prod(shape[1:]) as a whole
        (11, 2, (2, 3, 4, 2)),  # back from rows of a batch of 2: whole, not banded
        (11, 2, (2, 3, 4)),  # the last axis: one axis either way
    ],
)
def test_hardmax_as_onnxruntime(opset: int, axis: int | None, shape: tuple[int, ...]) -> None:
    """Hardmax with each opset's axis rule; ties (a coarse Floor) take the first."""
    kw = {} if axis is None else {"axis": axis}
    nodes = [
        helper.make_node("Floor", ["x"], ["f"]),
        helper.make_node("Hardmax", ["f"], ["y"], **kw),
    ]
    m = make_model(nodes, {"x": shape}, ["y"], opset=opset)
    flattened = opset < 13 and math.prod(shape[(1 if axis is None else axis) + 1 :]) != 1
    # a flattened Hardmax runs on whole matrices: no tile loop to count
    got = check_model(m, {"x": rand(shape, 11, 3.0)}, min_tiles=0 if flattened else 1)
    assert got.worst == [0.0]


def test_hardmax_of_integers_is_refused_by_name() -> None:
    nodes = [helper.make_node("Hardmax", ["x"], ["y"])]
    m = make_model(nodes, {"x": (2, 5)}, ["y"], types={"x": np.int32, "y": np.int32})
    with pytest.raises(ImportDiagnostic, match="Hardmax of .*i32.* is not supported"):
        import_model(m)


def _top_k_model(
    opset: int, shape: tuple[int, ...], axis: int, k: int, largest: int | None, x_type: type
) -> onnx.ModelProto:
    """Floor (ties) then TopK, both outputs; K an attribute before opset 10."""
    kw: dict[str, int] = {"axis": axis}
    if largest is not None:
        kw["largest"] = largest
    inits: dict[str, np.ndarray] = {}
    ins = ["f", "K"]
    if opset < 10:
        kw["k"], ins = k, ["f"]
    else:
        inits["K"] = np.array([k], np.int64)
    first = (
        helper.make_node("Floor", ["x"], ["f"])
        if x_type == np.float32
        else helper.make_node("Identity", ["x"], ["f"])
    )
    nodes = [first, helper.make_node("TopK", ins, ["v", "i"], **kw)]
    types = {"x": x_type, "v": x_type, "i": np.int64}
    return make_model(nodes, {"x": shape}, ["v", "i"], inits, opset=opset, types=types)


@pytest.mark.parametrize(
    ("opset", "shape", "axis", "k", "largest"),
    [
        (9, (1, 1000), 1, 5, None),  # a classifier's top-5, k an attribute
        (10, (2, 3, 10), -1, 4, None),  # K an input, the last axis of a batch
        (11, (1, 8, 6, 6), 1, 3, 0),  # the 3 smallest channels of a feature map
        (11, (1, 4, 9, 5), 2, 9, 1),  # K = the whole axis: a stable sort
        (13, (7,), 0, 3, 1),  # rank 1
    ],
)
def test_top_k_as_onnxruntime(
    opset: int, shape: tuple[int, ...], axis: int, k: int, largest: int | None
) -> None:
    """TopK's values and indices, ties (a coarse Floor) taking the lower index."""
    m = _top_k_model(opset, shape, axis, k, largest, np.float32)
    tiles = 1 if len(shape) > 1 and math.prod(shape) // shape[axis] > 1 else 0
    got = check_model(m, {"x": rand(shape, 12, 5.0)}, min_tiles=tiles)
    assert got.worst == [0.0, 0.0]


@pytest.mark.parametrize("x_type", [np.int32, np.int64, np.int8])
def test_top_k_of_integers(x_type: type) -> None:
    """Integers at the ends of their range order without overflow."""
    info = np.iinfo(x_type)
    x = _ints((3, 12), -100, 100, x_type)
    x[0, :3] = [info.min, info.max, info.min]
    m = _top_k_model(11, (3, 12), 1, 4, 1, x_type)
    got = check_model(m, {"x": x}, min_tiles=1)
    assert got.worst == [0.0, 0.0]


def test_top_k_refusals_name_k() -> None:
    too_many = _top_k_model(11, (2, 6), 1, 7, 1, np.float32)
    with pytest.raises(ImportDiagnostic, match=r"K = 7 must be in \[1, 6\]"):
        import_model(too_many)
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)]
    runtime = make_model(
        nodes, {"x": (2, 6), "k": (1,)}, ["v", "i"], types={"k": np.int64, "i": np.int64}
    )
    with pytest.raises(ImportDiagnostic, match=r"K \('k'\) must be a constant at import"):
        import_model(runtime)


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap"])
def test_pad_of_integers(mode: str) -> None:
    """Pad moves integer data as it does float32 (onnx's own edge and wrap
    cases are int32), the constant a value of the data's type."""
    inits = {"p": np.array([0, 0, 2, 1, 0, 0, 1, 2], np.int64)}
    ins = ["x", "p"]
    if mode == "constant":
        inits["v"], ins = np.array(-7, np.int32), ["x", "p", "v"]
    nodes = [helper.make_node("Pad", ins, ["y"], mode=mode)]
    types = {"x": np.int32, "y": np.int32}
    m = make_model(nodes, {"x": (3, 4, 5, 3)}, ["y"], inits, opset=19, types=types)
    got = check_model(m, {"x": _ints((3, 4, 5, 3), -1000, 1000, np.int32)}, min_tiles=1)
    assert got.worst == [0.0]


@pytest.mark.parametrize("idx_type", [np.int64, np.int32])
def test_gather_runtime_indices(idx_type: type) -> None:
    """An embedding lookup: token ids (negative ones from the end) into a table."""
    table = rand((20, 16), 6)
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
        helper.make_node("Relu", ["e"], ["y"]),
    ]
    m = make_model(nodes, {"ids": (1, 12)}, ["y"], {"table": table}, types={"ids": idx_type})
    ids = _ints((1, 12), -20, 20, idx_type)
    check_model(m, {"ids": ids})


def test_gather_runtime_indices_inner_axis() -> None:
    """Gather along a middle axis of activations, the indices an input."""
    nodes = [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)]
    m = make_model(nodes, {"x": (3, 5, 6), "i": (2,)}, ["y"], types={"i": np.int64})
    check_model(m, {"x": rand((3, 5, 6), 8), "i": np.array([4, -5], np.int64)}, min_tiles=1)


def test_gather_index_out_of_range_is_an_error() -> None:
    table = rand((4, 3))
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)]
    m = make_model(nodes, {"ids": (2,)}, ["y"], {"table": table}, types={"ids": np.int64})
    from tigris_ir.reference.executor import run_reference  # noqa: PLC0415

    imp = import_model(m, origin="test")
    with pytest.raises(ValueError, match="index 4 is outside"):
        run_reference(imp.module, imp.weights, [np.array([0, 4], np.int64)])


def test_range_of_runtime_values_is_refused() -> None:
    nodes = [
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
    ]
    inits = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)}
    m = make_model(nodes, {"n": ()}, ["y"], inits, types={"n": np.int64})
    with pytest.raises(ImportDiagnostic, match="Range's output length depends on 'n'"):
        import_model(m, origin="test")


def test_cast_to_double_is_refused() -> None:
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE)]
    m = make_model(nodes, {"x": (2, 3)}, ["y"])
    with pytest.raises(ImportDiagnostic, match="Cast to DOUBLE is not supported"):
        import_model(m, origin="test")


def test_tigris_run_takes_integer_and_scalar_inputs(tmp_path, capsys) -> None:
    """tigris-run: random int32 and int64-scalar inputs, the reference against
    onnxruntime, the plan in the interpreter and as C against the untiled one."""
    import onnx  # noqa: PLC0415

    from tigris_ir.tools.tigris_run import run  # noqa: PLC0415

    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["xf", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["c", "nf"], ["p"]),
        helper.make_node("ArgMax", ["p"], ["y"], axis=1, keepdims=0),
    ]
    types = {"x": np.int32, "n": np.int64, "y": np.int64}
    inits = {"w": rand((4, 3, 3, 3), 1, 0.3)}
    m = make_model(nodes, {"x": (1, 3, 16, 16), "n": ()}, ["y"], inits, types=types)
    path = tmp_path / "int.onnx"
    onnx.save(m, path)
    assert run([str(path), "--random-input", "1", "--check", "-q"]) == 0
    for backend in ("interp", "c"):
        args = [str(path), "-m", "1K", "--random-input", "1", "--backend", backend, "--check"]
        assert run(args) == 0
        assert "equals the untiled reference" in capsys.readouterr().out


def _qdq_axis(axis: int, c: int, dtype: type = np.int8) -> tuple[list, dict[str, np.ndarray]]:
    zps = [1, -3, 5, 0] if dtype == np.int8 else [0, 3, 128, 7]
    zp = np.array(zps[:c], dtype)
    inits = {"s": np.array([0.02, 0.1, 0.5, 0.05][:c], np.float32), "z": zp}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=axis),
    ]
    return nodes, inits


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_per_axis_quantize_dequantize_of_an_activation(dtype: type) -> None:
    """Per-channel QuantizeLinear / DequantizeLinear around a Conv's output:
    bit-exact against onnxruntime (the QDQ as ONNX defines it), tiled and in C."""
    qd, inits = _qdq_axis(1, 4, dtype)
    nodes = [
        helper.make_node("Conv", ["xi", "w"], ["x"], pads=[1, 1, 1, 1]),
        *qd,
        helper.make_node("Relu", ["d"], ["y"]),
    ]
    inits["w"] = rand((4, 3, 3, 3), 1, 0.3)
    m = make_model(nodes, {"xi": (1, 3, 12, 12)}, ["y"], inits)
    got = check_model(m, {"xi": rand((1, 3, 12, 12), 2)})
    assert got.worst == [0.0]


def test_per_axis_quantized_output_and_raw_integer_input() -> None:
    """A per-axis QuantizeLinear as the model's int8 output; a uint8 image
    input read by DequantizeLinear (an integer tensor without a quantization
    of its own)."""
    q = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)]
    inits = {
        "s": np.linspace(0.02, 0.5, 16, dtype=np.float32),
        "z": np.arange(-8, 8, dtype=np.int8),
    }
    m = make_model(q, {"x": (1, 16, 16, 16)}, ["y"], inits, types={"y": np.int8})
    x = rand((1, 16, 16, 16), 3, 4.0)
    check_model(m, {"x": x})
    dq = [
        helper.make_node("DequantizeLinear", ["img", "s", "z"], ["f"]),
        helper.make_node("Relu", ["f"], ["y"]),
    ]
    inits = {"s": np.array(1 / 255, np.float32), "z": np.array(128, np.uint8)}
    m = make_model(dq, {"img": (1, 3, 8, 8)}, ["y"], inits, types={"img": np.uint8})
    img = _ints((1, 3, 8, 8), 0, 256, np.uint8)
    assert check_model(m, {"img": img}).worst == [0.0]


def test_per_axis_parameters_must_match_the_axis() -> None:
    qd, inits = _qdq_axis(1, 2)
    m = make_model([*qd, helper.make_node("Relu", ["d"], ["y"])], {"x": (1, 3, 4, 4)}, ["y"], inits)
    with pytest.raises(ImportDiagnostic):
        import_model(m, origin="test")


@pytest.mark.parametrize("a_type", [np.uint8, np.int8])
def test_matmul_integer(a_type: type) -> None:
    """onnxruntime's dynamic-quantization pattern: a quantized activation
    times int8 weights with a per-column zero point, cast to float and scaled."""
    k, n = 24, 10
    inits = {
        "s": np.array(0.05, np.float32),
        "z": np.array(7 if a_type == np.uint8 else -3, a_type),
        "b": _ints((k, n), -128, 128, np.int8),
        "bz": _ints((n,), -5, 5, np.int8),
        "ws": np.array(0.01, np.float32),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("MatMulInteger", ["q", "b", "z", "bz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["accf", "ws"], ["y"]),
        helper.make_node("Identity", ["acc"], ["yi"]),
    ]
    m = make_model(nodes, {"x": (16, k)}, ["y", "yi"], inits, types={"yi": np.int32})
    got = check_model(m, {"x": rand((16, k), 9, 3.0)})
    assert got.worst[1] == 0  # the int32 accumulators equal onnxruntime's


@pytest.mark.parametrize(
    ("group", "pads", "strides", "per_channel"),
    [
        (1, [1, 1, 1, 1], [1, 1], False),
        (2, [0, 1, 2, 0], [2, 1], False),
        (1, [1, 1, 1, 1], [1, 1], True),
    ],
)
def test_conv_integer(group: int, pads: list[int], strides: list[int], per_channel: bool) -> None:
    """ConvInteger of a quantized activation with uint8 weights: the int32
    accumulators equal onnxruntime's (a per-channel weight zero point, which
    onnxruntime does not take, against onnx's reference evaluator), tiled
    with a halo and in C."""
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    cin, cout = 4, 6
    inits = {
        "s": np.array(0.05, np.float32),
        "z": np.array(9, np.uint8),
        "w": _ints((cout, cin // group, 3, 3), 0, 256, np.uint8),
        "wz": _ints((cout,), 120, 136, np.uint8) if per_channel else np.array(128, np.uint8),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node(
            "ConvInteger", ["q", "w", "z", "wz"], ["y"], pads=pads, strides=strides, group=group
        ),
    ]
    m = make_model(nodes, {"x": (1, cin, 14, 14)}, ["y"], inits, types={"y": np.int32})
    x = rand((1, cin, 14, 14), 10, 3.0)
    got = check_model(m, {"x": x}, ort=not per_channel)
    assert got.worst == ([] if per_channel else [0.0])
    if per_channel:
        from tigris_ir.reference.executor import run_reference  # noqa: PLC0415

        (want,) = ReferenceEvaluator(m).run(None, {"x": x})
        np.testing.assert_array_equal(run_reference(got.module, got.weights, [x])[0], want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_arithmetic(dtype: type) -> None:
    """Add, Sub, Mul, Max, Min of integer data (wrapping as numpy and
    onnxruntime do), then cast to float for a Conv."""
    nodes = [
        helper.make_node("Mul", ["x", "k"], ["m"]),
        helper.make_node("Add", ["m", "c"], ["a"]),
        helper.make_node("Sub", ["a", "x"], ["s"]),
        helper.make_node("Max", ["s", "lo"], ["hi"]),
        helper.make_node("Min", ["hi", "top"], ["yi"]),
        helper.make_node("Cast", ["yi"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Conv", ["f", "w"], ["y"]),
    ]
    inits = {
        "k": np.array([3, -2, 5], dtype).reshape(1, 3, 1, 1),
        "c": np.array(7, dtype),
        "lo": np.array(-40, dtype),
        "top": np.array(90, dtype),
        "w": rand((2, 3, 1, 1), 11, 0.1),
    }
    types = {"x": dtype, "yi": dtype}
    m = make_model(nodes, {"x": (1, 3, 10, 10)}, ["y", "yi"], inits, types=types)
    check_model(m, {"x": _ints((1, 3, 10, 10), -30, 30, dtype)})
