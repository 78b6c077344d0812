"""Winograd's F(4, 3) along the width (`rtile.pack_a "winograd"`).

The transforms against the direct sum, the rule that picks the kernel, the
interpreter's run of it against the direct product, and the C (vector and
portable builds) of plans whose bands cut the width into partial tiles,
against the untiled reference and onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import kernel_of
from tigris_ir.interp import rtile_exec
from tigris_ir.reference import kernels as K
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg


def test_the_transforms_are_f43():
    """A^T ((G g) * (B^T d)) is the correlation of six inputs with three taps
    (four outputs), to float64 rounding."""
    rng = np.random.default_rng(0)
    bt, g, at = (np.asarray(t, np.float64) for t in (rk.WINOGRAD_BT, rk.WINOGRAD_G,
                                                      rk.WINOGRAD_AT))
    for _ in range(20):
        d, w = rng.standard_normal(6), rng.standard_normal(3)
        want = np.array([d[i : i + 3] @ w for i in range(4)])
        np.testing.assert_allclose(at @ ((g @ w) * (bt @ d)), want, rtol=0, atol=1e-12)


def test_the_rule_that_picks_it():
    """float32, one group, three taps wide at stride and dilation 1 along the
    width, at least WINOGRAD_MIN_CHANNELS input channels, a target with a
    float vector unit and no M-profile CPU; its plan holds whole kernel rows
    per product and a stack buffer for a row block's six rows and results."""
    zen4 = tg.get_target("zen4")
    assert rk.winograd_taps(zen4, "float32", 1, 3, 1, 1, 16) == 16
    assert rk.winograd_taps(tg.get_target("avx2"), "float32", 1, 3, 1, 1, 8) == 8
    assert rk.winograd_taps(zen4, "float32", 1, 3, 1, 1, 3) is None  # too few channels
    assert rk.winograd_taps(zen4, "int8", 1, 3, 1, 1, 16) is None
    assert rk.winograd_taps(zen4, "float32", 2, 3, 1, 1, 16) is None
    assert rk.winograd_taps(zen4, "float32", 1, 5, 1, 1, 16) is None
    assert rk.winograd_taps(zen4, "float32", 1, 3, 2, 1, 16) is None
    assert rk.winograd_taps(zen4, "float32", 1, 3, 1, 2, 16) is None
    assert rk.winograd_taps(tg.get_target("cortex-m7"), "float32", 1, 3, 1, 1, 16) is None
    g = rt.Geometry(4, 2, 8)
    p = rk.plan(zen4.float_file(), g, 48, False, "winograd", 9216, 16, 16)
    assert (p.kp, p.kc) == (48, 48)
    assert p.scratch == p.mc * 4 * rk.WINOGRAD_POINTS * (48 + 16)
    with pytest.raises(ValueError, match="whole kernel"):
        rk.plan(zen4, g, 48, False, "winograd", 9216, 20, 16)
    with pytest.raises(ValueError, match="float32"):
        rk.plan(zen4, g, 48, True, "winograd", 9216, 16, 16)


def _grouped(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 7),
    w=st.integers(1, 14),
    kh=st.integers(1, 3),
    sh=st.integers(1, 2),
    dh=st.integers(1, 2),
    c=st.integers(1, 5),
    co=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_the_interpreter_runs_it_as_the_direct_product(h, w, kh, sh, dh, c, co, seed):
    """`rtile_exec.winograd` (tiles of four, the last one partial) equals the
    im2col product of the reference kernels on any padded input, stride and
    dilation along the height (float64, to rounding)."""
    rng = np.random.default_rng(seed)
    xp = rng.standard_normal((1, h + (kh - 1) * dh, w + 2, c))
    wt = rng.standard_normal((co, kh, 3, c))
    out = ((h - 1) // sh + 1, w)
    want = K._im2col(xp, wt, (sh, 1), (dh, 1), out, 1)  # noqa: SLF001
    got = rtile_exec.winograd(xp, wt, sh, dh, out, _grouped)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * max(1.0, np.abs(want).max()))


def _model() -> onnx.ModelProto:
    """Three 3x3 convolutions the kernel takes (8 -> 16 'same' + Relu; 16 -> 8
    dilated 2 along the height, padded 0 left and 2 right; 8 -> 12 stride 2
    along the height), on an 11-pixel-wide map: every row ends in a partial
    tile."""
    rng = np.random.default_rng(7)

    def init(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    inits = [
        init("w0", (16, 8, 3, 3)), init("b0", (16,)),
        init("w1", (8, 16, 3, 3)), init("b1", (8,)),
        init("w2", (12, 8, 3, 3)), init("b2", (12,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[2, 0, 2, 2],
                         dilations=[2, 1]),
        helper.make_node("Conv", ["c1", "w2", "b2"], ["y"], pads=[1, 1, 1, 1], strides=[2, 1]),
    ]
    graph = helper.make_graph(
        nodes, "winograd",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 13, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 7, 11])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _plan(budget: int, winograd: bool):
    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass

    imp = import_model(_model())
    module = imp.module
    LowerToLoopsPass(budget=budget).apply(Context(), module)
    tile_and_lower(module, "zen4", winograd=winograd)
    PlanArenaPass().apply(Context(), module)
    return module, imp.weights


BUDGETS = (1536, 65536)


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_c_and_the_interpreter_equal_the_references(budget: int):
    """At a budget that cuts the map into bands and at one that does not,
    every convolution's kernel is the Winograd one (and the window one with
    `winograd=false`); the interpreter and the C (vector and portable builds
    of the Winograd kernels, and at the smaller budget the build with the
    sanitizers and the bounds checks) equal the untiled reference and
    onnxruntime (float32, 1e-5 of the largest value)."""
    import onnxruntime as ort

    from tigris_ir.backend.c.build import run_c
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary

    x = np.random.default_rng(3).standard_normal((1, 13, 11, 8)).astype(np.float32)
    sess = ort.InferenceSession(_model().SerializeToString(), providers=["CPUExecutionProvider"])
    onnx_y = np.asarray(sess.run(None, {"x": x.transpose(0, 3, 1, 2)})[0])
    for winograd in (True, False):
        module, weights = _plan(budget, winograd)
        fn = main_func(module)
        kinds = {kern.packing for o in fn.walk() if isinstance(o, nn.ConvOp)
                 if (kern := kernel_of(o)) is not None}
        assert kinds == ({"winograd"} if winograd else {"window"})
        ref_fn = untiled_func(module)
        assert ref_fn is not None
        (want,) = untiled_reference(ref_fn, weights, [x])
        tol = 1e-5 * float(np.abs(want).max())
        np.testing.assert_allclose(to_boundary(want, "nchw"), onnx_y, rtol=0, atol=tol)
        (got,) = run_loop_module(module, weights, [x]).outputs
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)
        if not winograd:
            continue
        ins, outs = module_layouts(fn)
        xb = [to_boundary(x, ins[0])]
        variants: list[str | tuple[str, ...]] = ["default", "portable"]
        if budget == min(BUDGETS):  # the grid's partial tiles, under the sanitizers
            variants.append(("sanitize", "bounds"))
        for variant in variants:
            (c_y,), _ = run_c(module, weights, xb, variant=variant, strict=True)
            np.testing.assert_allclose(c_y, to_boundary(want, outs[0]), rtol=0, atol=tol)


def test_autotune_times_the_products_winograd_runs(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """gebp-tile's autotune times a convolution lower-gebp runs as F(4, 3) by
    one of its products (a quarter of the band's pixels, tiles of four; the
    kernel rows' channels), and every other site by its own product; the
    geometry it returns lands on the site."""
    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.passes.gebp_tile import GebpTilePass
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.rtile import autotune as tune
    from tigris_ir.rtile import decide

    module = import_model(_model()).module
    LowerToLoopsPass(budget=65536).apply(Context(), module)
    timed: list[tuple[int, int, int]] = []

    def record(target, m, n, k, dtype, *, cache=None, config=rt.DEFAULT_CONFIG, timer=None):
        timed.append((m, n, k))
        return tune.Choice(rt.Geometry(1, 1, 8), "single")

    monkeypatch.setattr(tune, "autotune", record)
    GebpTilePass(target="zen4", autotune=True, cache=str(tmp_path / "t.json")).apply(
        Context(), module
    )
    sites = list(decide.sites(module))
    convs = [(op, s) for op, s in sites if isinstance(op, nn.ConvOp)]
    assert len(convs) == 3 and len(timed) == len(sites)
    want = []
    for op, s in sites:
        if isinstance(op, nn.ConvOp):  # all three qualify: 8 or 16 channels, kw 3, sw 1
            c = nn.shape_of(op.input)[-1]
            want.append((-(-s.m // 4), s.n, 3 * c))
            assert s.k == 9 * c
        else:
            want.append((s.m, s.n, s.k))
    assert timed == want
    assert all(decide.geometry_of(op) == rt.Geometry(1, 1, 8) for op, _ in convs)
