"""Integer-only int8 requantization (`requant{mode=fixed}`).

The fixed-point rule of `kernels` against worked numbers and an independent
integer implementation; the pass's decision in the IR; every int8 op the zoo
uses within 1 LSB of onnxruntime when it requantizes in fixed point; and the
untiled reference, the loop-level interpreter and the host C bit-exact.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import zoo
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from ops_oracle import check_model, make_model, rand
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.passes.requant import module_requant, set_requant
from tigris_ir.reference import kernels as K
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime, per_op_lsb

pytest.importorskip("onnxruntime")


# ---------------------------------------------------------------------------
# the rule


def test_quantize_multiplier_worked_numbers() -> None:
    m, e = K.quantize_multiplier(0.0072474273)
    assert (int(m), int(e)) == (1992157647, -7)  # 0.0072474273 * 2^38, rounded
    m, e = K.quantize_multiplier(0.5)
    assert (int(m), int(e)) == (2**30, 0)
    m, e = K.quantize_multiplier(1.0)
    assert (int(m), int(e)) == (2**30, 1)
    m, e = K.quantize_multiplier(np.nextafter(1.0, 0.0))  # the mantissa rounds up to 2^31
    assert (int(m), int(e)) == (2**30, 1)
    m, e = K.quantize_multiplier(2.0**-40)
    assert (int(m), int(e)) == (0, 0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        K.quantize_multiplier(-0.25)


def test_multiply_fixed_worked_numbers() -> None:
    m, e = K.quantize_multiplier(0.0072474273)
    # x2 = round(1000 M / 2^31) = round(927.67) = 928; x3 = round(928 / 128) = round(7.25)
    assert int(K.multiply_fixed(1000, m, e)) == 7
    assert int(K.multiply_fixed(-1000, m, e)) == -7
    # ties of the right shift round away from zero: 12 / 8 = 1.5, -12 / 8 = -1.5
    half = K.quantize_multiplier(2.0**-4)  # M = 2^30, e = -3: x2 = x / 2 exactly
    assert K.multiply_fixed(np.array([24, -24, 20, -20]), *half).tolist() == [2, -2, 1, -1]
    # the doubling high multiply rounds ties toward +infinity: 3 * 2^30 / 2^31 = 1.5
    assert K.multiply_fixed(np.array([3, -3, 5, -5]), 2**30, 0).tolist() == [2, -1, 3, -2]
    assert K.requantize_fixed(
        np.array([1000, -1000, 10**6]), real=0.0072474273, zero_point=-128, dtype=np.int8
    ).tolist() == [-121, -128, 127]


def _by_integers(x: int, real: float) -> int:
    """The rule of the kernels module docstring, written again with Python ints."""
    f = Fraction(real)
    m, e = K.quantize_multiplier(real)
    m, e = int(m), int(e)
    assert m == 0 or 2**30 <= m < 2**31
    if m:
        assert abs(Fraction(m, 2**31) * Fraction(2) ** e - f) <= Fraction(2) ** (e - 32)
    x1 = max(-(2**31), min(2**31 - 1, x * 2 ** max(e, 0)))
    x2 = (x1 * m + 2**30) // 2**31  # floor: ties toward +infinity
    k = max(-e, 0)
    if k == 0:
        return x2
    q = abs(x2) // 2**k
    rem = abs(x2) - q * 2**k
    q += 1 if 2 * rem >= 2**k else 0
    return q if x2 >= 0 else -q


@settings(max_examples=300, deadline=None)
@given(
    x=st.integers(-(2**31), 2**31 - 1),
    real=st.floats(2.0**-30, 0.99, allow_nan=False, allow_infinity=False),
)
def test_multiply_fixed_is_the_integer_formula_and_within_one_of_the_product(
    x: int, real: float
) -> None:
    got = int(K.multiply_fixed(np.int64(x), *K.quantize_multiplier(real)))
    assert got == _by_integers(x, real)
    assert abs(Fraction(got) - Fraction(x) * Fraction(real)) <= 1


# ---------------------------------------------------------------------------
# the pass


def test_the_pass_marks_every_int8_op_and_the_module() -> None:
    model = zoo.build("resnet", size="small", int8=True)
    module = import_model(model, origin="resnet").module
    set_requant(module, "fixed")
    assert module_requant(module) == "fixed"
    quantized = [op for op in module.walk() if isinstance(op, nn.NNOp) and op.is_quantized()]
    boundary = (nn.QuantizeOp, nn.DequantizeOp)  # float32 at the model's edges
    assert all(nn.requant_fixed(op) != isinstance(op, boundary) for op in quantized)
    assert any(isinstance(op, boundary) for op in quantized)
    assert 'nn.requant = "fixed"' in str(module)
    set_requant(module, "float")
    assert not any(nn.requant_fixed(op) for op in module.walk())
    assert module_requant(module) == "float"


def test_the_pass_refuses_an_int8_op_without_an_integer_only_form() -> None:
    model = zoo.build("unet", size="small", int8=True)  # a linear int8 Resize
    module = import_model(model, origin="unet").module
    with pytest.raises(PassFailedException, match=r"requant=fixed: nn\.resize .*Resize"):
        set_requant(module, "fixed")
    with pytest.raises(PassFailedException, match="mode must be one of float, fixed"):
        set_requant(module, "fast")


# ---------------------------------------------------------------------------
# every int8 op of the zoo, within 1 LSB of onnxruntime

FIXED_ZOO = ["mobilenet_v2_035", "resnet", "ds_cnn", "vgg", "audio_1d", "dilated"]


@pytest.mark.parametrize("name", FIXED_ZOO)
def test_every_quantized_op_within_one_step_in_fixed_point(name: str) -> None:
    model = zoo.build(name, size="small", int8=True)
    imported = import_model(model, origin=name)
    set_requant(imported.module, "fixed")
    x = np.random.default_rng(3).standard_normal(zoo.input_shape(model)).astype(np.float32)
    diffs = per_op_lsb(model.SerializeToString(), imported, {"input": x})
    assert len(diffs) >= 5
    worst = max(diffs, key=lambda d: d.worst_lsb)
    assert worst.worst_lsb <= 1, worst
    # one rounding per requantization, two where they disagree: rare
    assert sum(d.differing for d in diffs) <= 0.01 * sum(d.size for d in diffs)


def test_fixed_point_differs_from_float_somewhere() -> None:
    """The mode changes the arithmetic (so the bit-exact tests below can fail)."""
    model = zoo.build("mobilenet_v2_035", size="small", int8=True)
    imported = import_model(model, origin="m")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape(model)).astype(np.float32)
    flt = run_reference(imported.module, imported.weights, [x])[0]
    set_requant(imported.module, "fixed")
    fx = run_reference(imported.module, imported.weights, [x])[0]
    assert not np.array_equal(flt, fx)
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, [fx], ["output"])
    assert report.diffs[0].quantized


# ---------------------------------------------------------------------------
# single int8 ops: onnxruntime within 1 LSB, plan and C bit-exact


def _q(name: str, src: str, scale: float, zp: int) -> tuple[list, dict]:
    inits = {f"{name}_s": np.array(scale, np.float32), f"{name}_z": np.array(zp, np.int8)}
    nodes = [
        helper.make_node("QuantizeLinear", [src, f"{name}_s", f"{name}_z"], [f"{name}_q"]),
        helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name]),
    ]
    return nodes, inits


def _binary(op: str, sa: float, sb: float, sy: float) -> tuple:
    na, ia = _q("a", "x", sa, 3)
    nb, ib = _q("b", "z", sb, -7)
    node = helper.make_node(op, ["a", "b"], ["y0"])
    ny, iy = _q("out", "y0", sy, -2)
    shape = (1, 8, 6, 5)
    model = make_model([*na, *nb, node, *ny], {"x": shape, "z": shape}, ["out"], ia | ib | iy)
    return model, {"x": rand(shape, 1), "z": rand(shape, 2, 1.0)}


@pytest.mark.parametrize(
    ("op", "scales"),
    [
        ("Add", (0.02, 0.05, 0.04)),
        ("Add", (0.05, 0.011, 0.03)),
        ("Sub", (0.03, 0.02, 0.05)),
        ("Mul", (0.03, 0.02, 0.05)),
    ],
)
def test_int8_binary_ops_with_two_scales(op: str, scales: tuple[float, float, float]) -> None:
    model, feeds = _binary(op, *scales)
    check_model(model, feeds, requant="fixed", min_tiles=1)


def test_max_and_min_of_two_scales_are_refused_in_fixed_point() -> None:
    """Max/Min of operands quantized differently from the result would print
    float rescaling in an integer-only plan: refused by name; with one
    quantization everywhere they compare stored values and pass."""
    for op in ("Max", "Min"):
        model, _ = _binary(op, 0.02, 0.05, 0.04)
        module = import_model(model, origin="m").module
        with pytest.raises(PassFailedException, match=rf"nn\.{op.lower()} .*integer-only"):
            set_requant(module, "fixed")
    na, ia = _q("a", "x", 0.02, 3)
    nb, ib = _q("b", "z", 0.02, 3)
    ny, iy = _q("out", "y0", 0.02, 3)
    shape = (1, 4, 3, 3)
    node = helper.make_node("Max", ["a", "b"], ["y0"])
    model = make_model([*na, *nb, node, *ny], {"x": shape, "z": shape}, ["out"], ia | ib | iy)
    module = import_model(model, origin="m").module
    set_requant(module, "fixed")
    assert module_requant(module) == "fixed"


@pytest.mark.parametrize("include", [0, 1])
def test_int8_average_pool_with_pads(include: int) -> None:
    nx, ix = _q("a", "x", 0.03, 4)
    node = helper.make_node(
        "AveragePool",
        ["a"],
        ["y0"],
        kernel_shape=[3, 3],
        strides=[2, 1],
        pads=[1, 1, 1, 1],
        count_include_pad=include,
    )
    ny, iy = _q("out", "y0", 0.02, -3)
    shape = (1, 4, 11, 7)
    model = make_model([*nx, node, *ny], {"x": shape}, ["out"], ix | iy)
    check_model(model, {"x": rand(shape, 4)}, requant="fixed", min_tiles=1)


def test_int8_global_average_pool_and_concat_of_two_scales() -> None:
    na, ia = _q("a", "x", 0.03, 4)
    nb, ib = _q("b", "z", 0.05, -9)
    cat = helper.make_node("Concat", ["a", "b"], ["c0"], axis=1)
    nc, ic = _q("c", "c0", 0.04, 1)
    gap = helper.make_node("GlobalAveragePool", ["c"], ["g0"])
    ng, ig = _q("out", "g0", 0.01, -1)
    shape = (1, 3, 9, 8)
    model = make_model(
        [*na, *nb, cat, *nc, gap, *ng],
        {"x": shape, "z": shape},
        ["out"],
        ia | ib | ic | ig,
    )
    check_model(model, {"x": rand(shape, 5), "z": rand(shape, 6)}, requant="fixed", min_tiles=1)


# ---------------------------------------------------------------------------
# zoo plans: reference, interpreter and C bit-exact


@pytest.mark.parametrize("name", ["ds_cnn", "resnet", "mobilenet_v2_035"])
def test_zoo_plans_bit_exact_in_fixed_point(name: str) -> None:
    """At the smallest budget (most tiles): the plan in the interpreter and
    as host C equals the untiled fixed-point reference."""
    model = zoo.build(name, size="small", int8=True)
    x = np.random.default_rng(7).standard_normal(zoo.input_shape(model)).astype(np.float32)
    check_model(model, {"input": x}, requant="fixed", ort=False)


def test_an_accumulated_global_average_pool_sums_integers() -> None:
    """Under fixed point the pool's partial sums are int64 (the same 8 bytes as
    the float64 ones), in the IR, the interpreter and the C."""
    from ops_oracle import lowered, same  # noqa: PLC0415

    from tigris_ir.backend.c.build import run_c
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.reference.executor import to_internal

    model = zoo.build("resnet", size="small", int8=True)
    imported = import_model(model, origin="resnet")
    set_requant(imported.module, "fixed")
    x = np.random.default_rng(2).standard_normal(zoo.input_shape(model)).astype(np.float32)
    ref = run_reference(imported.module, imported.weights, [x])[0]
    low = lowered(imported.module, 2048)
    text = str(low)
    acc = [ln for ln in text.splitlines() if "loop.accumulate" in ln]
    assert acc and all("xi64" in ln and "xf64" not in ln for ln in acc)
    got = run_loop_module(low, imported.weights, [to_internal(x, "nchw")]).outputs[0]
    same(got, ref, "interpreter")
    (c_out,), _ = run_c(low, imported.weights, [x], strict=True)
    same(c_out, ref, "C")


def test_the_cortex_m_targets_default_to_fixed_point() -> None:
    from tigris_ir.passes.requant import RequantPass, default_requant
    from tigris_ir.rtile import targets as tg

    assert [default_requant(t) for t in ("", "host", "avx2", "avx512")] == ["float"] * 4
    for cpu in ("cortex-m4", "cortex-m7", "cortex-m55"):
        assert tg.get_target(cpu).integer_only and default_requant(cpu) == "fixed"
    with pytest.raises(PassFailedException, match="unknown target 'z80'"):
        default_requant("z80")
    from xdsl.context import Context

    module = import_model(zoo.build("ds_cnn", size="small", int8=True), origin="d").module
    RequantPass(target="cortex-m7").apply(Context(), module)
    assert module_requant(module) == "fixed"
    RequantPass(target="host").apply(Context(), module)
    assert module_requant(module) == "float"


def _rq_short(acc: np.ndarray, p: int, zp: int) -> np.ndarray:
    """tigris_rq_short in numpy (int64): SMMLAR(2 acc, M, c), + (acc >> 31), >> k."""
    from tigris_ir.backend.c.band import short_params

    m, c, k = (int(v[0]) for v in short_params(np.array([p]), zp))
    a = np.asarray(acc, np.int64)
    h = (2 * a * m + c * 2**32 + 2**31) >> 32
    return (h + (a >> 31)) >> k


@settings(max_examples=60, deadline=None)
@given(
    real=st.floats(2.0**-22, 0.4999, allow_nan=False),
    zp=st.integers(-128, 127),
    seed=st.integers(0, 2**31),
)
def test_short_form_equals_the_fixed_point_rule(real: float, zp: int, seed: int) -> None:
    """band.short_form accepts every multiplier in [2^-22, 0.5) with any int8
    zero point for accumulators up to 2^29 (below 2^-22 the rounding constant
    2^(k-1) (2 |zp| + 1) can pass int32: refused, see the next test), and its
    few-instruction form is multiply_fixed + zp for every such accumulator:
    ties of both roundings, zero, -1 and the bound itself."""
    from tigris_ir.backend.c.band import pack_fixed, short_form

    p = int(pack_fixed(np.float32(real)).reshape(-1)[0])
    bound = 2**29
    assert short_form(np.array([p]), np.array([bound]), zp)
    m, e = (int(v) for v in K.quantize_multiplier(np.float32(real)))
    k = -e
    rng = np.random.default_rng(seed)
    acc = rng.integers(-bound, bound + 1, 4000)
    # accumulators whose product lands on a tie of the first or the second rounding
    ties = [(j * 2**31 + 2**30) // m for j in range(-40, 40)]
    ties += [((j * 2**k + 2 ** (k - 1)) * 2**31) // m for j in range(-40, 40)]
    acc = np.concatenate([acc, ties, [t + d for t in ties for d in (-1, 1)],
                          [0, -1, 1, bound, -bound]])
    acc = acc[np.abs(acc) <= bound]
    want = K.multiply_fixed(acc, m, e) + zp
    np.testing.assert_array_equal(_rq_short(acc, p, zp), want)


def test_short_form_refuses_what_it_cannot_compute() -> None:
    """A left shift (multiplier >= 0.5), a zero multiplier, an accumulator of
    2^30 or more, or a zero point whose rounding constant overflows: the
    general rule."""
    from tigris_ir.backend.c.band import pack_fixed, short_form

    ok = pack_fixed(np.float32(0.01))
    assert short_form(ok, np.array([2**30 - 1]), 5)
    assert not short_form(ok, np.array([2**30]), 5)
    assert not short_form(pack_fixed(np.float32(0.75)), np.array([100]), 0)
    assert not short_form(pack_fixed(np.float32(3.0)), np.array([100]), 0)
    assert not short_form(pack_fixed(np.float32(2.0**-40)), np.array([100]), 0)
    # k = 25: c = 2^24 * (2 * 127 + 1) passes 2^31
    tiny = pack_fixed(np.float32(2.0**-25 * 0.75))
    assert short_form(tiny, np.array([100]), 0)
    assert not short_form(tiny, np.array([100]), 127)
    # k = 29 (2^-30): with zero point 3 and accumulators to 2^29, h + c = 2^31 + 1
    assert not short_form(pack_fixed(np.float32(2.0**-30)), np.array([2**29]), 3)
