"""Whole networks printed as C (`c_net`), compiled and run (`c_build`).

The C of a plan must compute what the loop-level interpreter computes
(int8 bit-exact, float32 to a relative 1e-5) and count what it counts, in
static arenas of exactly the planned sizes, clean under -Wall -Wextra
-Werror, the address and undefined-behaviour sanitizers and the
bounds-checking build.

Two kinds of tests. The printer's own (loops, copies, line buffers, grids,
accumulation, arenas, statistics, errors, the command lines) run with naive
float kernels registered here for the duration of a test, so they do not
depend on the real band kernels. The zoo tests run the real kernels of
`c_conv` / `c_ops`; while an op has no emitter yet they skip naming it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import zoo
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Builtin, FloatAttr, IntegerAttr, MemRefType, ModuleOp, f32, i64
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from tigris_ir.backend.c import band as c_band
from tigris_ir.backend.c.band import CTensor, CUnit
from tigris_ir.backend.c.build import (
    CRunError,
    build,
    execute,
    find_clang,
    profile_of,
    run_c,
    stats_of,
)
from tigris_ir.backend.c.network import (
    CSource,
    NetworkError,
    c_bytes_array,
    c_double,
    c_float,
    print_network,
)
from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.rtile import clamp_of
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.interp.run_stats import RunResult
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func
from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

INPUTS = Path(__file__).parent / "lit" / "Inputs"

# ---------------------------------------------------------------------------
# naive float kernels, registered only inside the `toy` fixture


def _toy_elementwise(fn: str):
    def emit(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
        y = outs[0]
        loops = [f"for (ptrdiff_t i{a} = 0; i{a} < {y.extent[a]}; ++i{a})" for a in range(y.rank)]

        def at(t: CTensor) -> str:
            terms = [
                f"(i{a} + {y.origin[a]} - {t.origin[a]}) * {t.strides[a]}" for a in range(t.rank)
            ]
            return f"{t.name}[{' + '.join(terms)}]"

        args = ", ".join(at(x) for x in ins)
        out = " + ".join(f"i{a} * {y.strides[a]}" for a in range(y.rank))
        clamp = clamp_of(op)  # a Relu lower-gebp fused into an Add (rtile.clamp)
        assert clamp in (None, (0.0, None)), "the toy kernels fuse only Relu"
        val = f"{fn}({args})" if clamp is None else f"TOY_RELU({fn}({args}))"
        return "\n".join([*loops, f"    {y.name}[{out}] = {val};"])

    return emit


def _toy_conv(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    assert isinstance(op, nn.ConvOp) and ins[0].ctype == "float" and ins[0].rank == 4
    x, w, b = ins[0], ins[1], ins[2]
    y = outs[0]
    assert w.value is not None and b.value is not None
    kh, kw = op.kernel()
    sh, sw = op.strides()
    dh, dw = op.dilations() or (1, 1)
    ph, pw = op.pads()[0], op.pads()[1]
    _, hgt, wid, cin = x.shape
    cout, cg = y.shape[3], w.shape[3]
    og = cout // op.groups()
    wn, bn = unit.const("toy_w", w.value), unit.const("toy_b", b.value)
    clamp = clamp_of(op)  # a Relu lower-gebp fused into the epilogue or rtile.clamp
    assert clamp in (None, (0.0, None)), "the toy kernels fuse only Relu"
    act = "acc" if clamp is None else "TOY_RELU(acc)"
    fn = unit.fresh("toy_conv")
    unit.helper(
        fn,
        f"""\
static void {fn}(const float *x, ptrdiff_t xs1, ptrdiff_t xs2, ptrdiff_t x1, ptrdiff_t x2,
                 float *y, ptrdiff_t ys1, ptrdiff_t ys2, ptrdiff_t y1, ptrdiff_t n1,
                 ptrdiff_t y2, ptrdiff_t n2)
{{
    for (ptrdiff_t r = 0; r < n1; ++r)
        for (ptrdiff_t c = 0; c < n2; ++c)
            for (ptrdiff_t o = 0; o < {cout}; ++o) {{
                float acc = {bn}[o];
                for (ptrdiff_t i = 0; i < {kh}; ++i)
                    for (ptrdiff_t j = 0; j < {kw}; ++j) {{
                        ptrdiff_t gy = (y1 + r) * {sh} - {ph} + i * {dh};
                        ptrdiff_t gx = (y2 + c) * {sw} - {pw} + j * {dw};
                        if (gy < 0 || gy >= {hgt} || gx < 0 || gx >= {wid}) continue;
                        for (ptrdiff_t k = 0; k < {cg}; ++k)
                            acc += x[(gy - x1) * xs1 + (gx - x2) * xs2 + (o / {og}) * {cg} + k]
                                   * {wn}[((o * {kh} + i) * {kw} + j) * {cg} + k];
                    }}
                y[r * ys1 + c * ys2 + o] = {act};
            }}
}}""",
    )
    del cin
    return (
        f"{fn}({x.name}, {x.strides[1]}, {x.strides[2]}, {x.origin[1]}, {x.origin[2]}, "
        f"{y.name}, {y.strides[1]}, {y.strides[2]}, {y.origin[1]}, {y.extent[1]}, "
        f"{y.origin[2]}, {y.extent[2]});"
    )


def _toy_sum(kind: str):
    """A GlobalAveragePool: whole ("band"), partial sums ("accumulate") or the
    mean of the sums ("finish")."""

    def emit(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
        x, y = ins[0], outs[0]
        count = int(np.prod(nn.shape_of(op.operands[0])[1:-1]))
        c = x.rank - 1
        if kind == "finish":
            return (
                f"for (ptrdiff_t k = 0; k < {y.extent[c]}; ++k) "
                f"{y.name}[k * {y.strides[c]}] = {x.name}[k * {x.strides[c]}] / {count}.0f;"
            )
        head = (
            ""
            if kind == "accumulate"
            else (
                f"for (ptrdiff_t k = 0; k < {y.extent[c]}; ++k) {y.name}[k * {y.strides[c]}] = 0;\n"
            )
        )
        loops = [f"for (ptrdiff_t i{a} = 0; i{a} < {x.extent[a]}; ++i{a})" for a in range(c + 1)]
        src = " + ".join(f"i{a} * {x.strides[a]}" for a in range(c + 1))
        tail = (
            ""
            if kind == "accumulate"
            else (
                f"\nfor (ptrdiff_t k = 0; k < {y.extent[c]}; ++k) {y.name}[k * {y.strides[c]}] /= "
                f"{count}.0f;"
            )
        )
        return (
            head
            + "\n".join([*loops, f"    {y.name}[i{c} * {y.strides[c]}] += {x.name}[{src}];"])
            + tail
        )

    return emit


TOY = {
    ("band", nn.ReluOp): _toy_elementwise("TOY_RELU"),
    ("band", nn.AddOp): _toy_elementwise("TOY_ADD"),
    ("band", nn.ConvOp): _toy_conv,
    ("band", nn.GlobalAveragePoolOp): _toy_sum("band"),
    ("accumulate", nn.GlobalAveragePoolOp): _toy_sum("accumulate"),
    ("finish", nn.GlobalAveragePoolOp): _toy_sum("finish"),
}
_TOY_MACROS = (
    "#define TOY_RELU(a) ((a) > 0.0f ? (a) : 0.0f)",
    "#define TOY_ADD(a, b) ((a) + (b))",
)


@pytest.fixture
def toy() -> Iterator[None]:
    """The naive kernels instead of the real ones, restored afterwards."""
    c_band._load()  # pyright: ignore[reportPrivateUsage]
    saved = dict(c_band._REGISTRY)  # pyright: ignore[reportPrivateUsage]
    c_band._REGISTRY.clear()  # pyright: ignore[reportPrivateUsage]
    for (kind, cls), fn in TOY.items():
        c_band.register(kind, cls)(_with_macros(fn))  # type: ignore[arg-type]
    try:
        yield
    finally:
        c_band._REGISTRY.clear()  # pyright: ignore[reportPrivateUsage]
        c_band._REGISTRY.update(saved)  # pyright: ignore[reportPrivateUsage]


def _with_macros(fn):
    def emit(op, ins, outs, unit):
        unit.helper("toy_macros", "\n".join(_TOY_MACROS))
        return fn(op, ins, outs, unit)

    return emit


# ---------------------------------------------------------------------------
# plans


GRAPH = """
func.func @main(%x: tensor<1x16x12x4xf32>) -> tensor<1x1x1x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x4xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %w2 = nn.weight "w2" : tensor<8x3x3x8xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
     : (tensor<1x16x12x4xf32>, tensor<8x3x3x4xf32>, tensor<8xf32>) -> tensor<1x16x12x8xf32>
  %r = nn.relu %a : (tensor<1x16x12x8xf32>) -> tensor<1x16x12x8xf32>
  %c = nn.conv %r, %w2, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
     : (tensor<1x16x12x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x16x12x8xf32>
  %s = nn.add %c, %r : (tensor<1x16x12x8xf32>, tensor<1x16x12x8xf32>) -> tensor<1x16x12x8xf32>
  %t = nn.relu %s : (tensor<1x16x12x8xf32>) -> tensor<1x16x12x8xf32>
  %g = nn.global_average_pool %t : (tensor<1x16x12x8xf32>) -> tensor<1x1x1x8xf32>
  func.return %g : tensor<1x1x1x8xf32>
}
"""
"""Small budgets give grids, line-buffered chains and accumulations, 16K a
chain and a normal stage, 32K one stage in place (test_the_kinds_...)."""

_GRAPH_WEIGHTS = {
    "w": np.random.default_rng(1).standard_normal((8, 3, 3, 4)).astype(np.float32),
    "b": np.random.default_rng(2).standard_normal(8).astype(np.float32),
    "w2": np.random.default_rng(3).standard_normal((8, 3, 3, 8)).astype(np.float32),
}


def lowered(module: ModuleOp, budget: int) -> ModuleOp:
    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def graph_plan(budget: int) -> ModuleOp:
    ctx = Context()
    for d in (Builtin, Func, nn.NN):
        ctx.load_dialect(d)
    return lowered(Parser(ctx, GRAPH).parse_module(), budget)


def boundary_input(module: ModuleOp, seed: int = 0) -> np.ndarray:
    fn = main_func(module)
    t = fn.body.block.args[0].type
    assert isinstance(t, MemRefType)
    shape = tuple(t.get_shape())
    if module_layouts(fn)[0][0] in ("nchw", "ncw"):
        shape = (shape[0], shape[-1], *shape[1:-1])
    dt = nn.element_dtype(t.element_type)
    rng = np.random.default_rng(seed)
    if dt == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(-128, 128, shape).astype(dt)


def interpret(module: ModuleOp, weights, x: np.ndarray) -> tuple[list[np.ndarray], RunResult]:
    fn = main_func(module)
    il, ol = module_layouts(fn)
    res = run_loop_module(module, weights, [to_internal(x, il[0])])
    return [to_boundary(y, lay) for y, lay in zip(res.outputs, ol)], res


def assert_same(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    assert len(got) == len(want)
    for y, r in zip(got, want):
        assert y.shape == r.shape and y.dtype == r.dtype
        if r.dtype == np.float32:
            scale = max(float(np.max(np.abs(r))), 1e-30)
            err = float(np.max(np.abs(y.astype(np.float64) - r))) / scale
            assert err <= 1e-5, f"relative error {err:.2e}"
        else:
            np.testing.assert_array_equal(y, r)


# ---------------------------------------------------------------------------
# the printer, with the naive kernels


@pytest.mark.parametrize("budget", [512, 2048, 16384, 32768])
def test_plans_compute_and_count_as_the_interpreter(toy, budget: int):
    module = graph_plan(budget)
    x = boundary_input(module)
    want, res = interpret(module, _GRAPH_WEIGHTS, x)
    src = print_network(module, weights=_GRAPH_WEIGHTS)
    got, stats = run_c(src, None, [x], variant=("bounds", "stats"), strict=True)
    assert_same(got, want)
    assert stats == res.stats
    fn = main_func(module)
    assert f"TIGRIS_FAST_ARENA_BYTES {fn.attributes['loop.arena'].value.data}" in src.h  # type: ignore[union-attr]
    assert f"TIGRIS_SLOW_ARENA_BYTES {fn.attributes['loop.slow_arena'].value.data}" in src.h  # type: ignore[union-attr]
    assert "malloc" not in src.c and "free(" not in src.c


def test_the_kinds_of_units_are_all_printed(toy):
    text = "".join(
        print_network(graph_plan(b), weights=_GRAPH_WEIGHTS).c
        for b in (384, 512, 2048, 16384, 32768)
    )
    kinds = ("grid", "chain, line-buffered", "chain, line-buffered, column bands", "accumulate")
    for kind in kinds:
        assert f": {kind}, tiles */" in text
    assert "loop.finish nn.global_average_pool" in text
    assert "#define tigris_slow_arena ((unsigned char *)NULL)" in text  # 32K: in place


@pytest.mark.parametrize("budget", ["1K", "2K"])
def test_a_model_in_nchw_is_transposed_at_the_boundary(toy, budget: str):
    from tigris_ir.reference.executor import load_weights

    module = _onnx_plan(INPUTS / "conv_relu.onnx", budget)
    weights = load_weights(module)
    x = boundary_input(module)
    want, res = interpret(module, weights, x)
    got, stats = run_c(module, weights, [x], variant="stats", strict=True)
    assert_same(got, want)
    assert stats == res.stats


def _onnx_plan(path: Path, budget: str) -> ModuleOp:
    from tigris_ir.frontend.onnx_import import import_file
    from tigris_ir.plan.memory import parse_budget

    imported = import_file(path)
    m = lowered(imported.module, parse_budget(budget))
    return m


@pytest.mark.parametrize(
    "variant",
    [("sanitize", "bounds"), "portable", ("extern", "bounds")],
    ids=["sanitize", "portable", "extern"],
)
def test_the_build_variants_run_clean(toy, variant):
    module = graph_plan(2048)
    x = boundary_input(module)
    want, _ = interpret(module, _GRAPH_WEIGHTS, x)
    flags = "-O1 -march=native" if "sanitize" in variant else None  # quicker, as thorough
    got, _ = run_c(module, _GRAPH_WEIGHTS, [x], variant=variant, flags=flags, strict=True)
    assert_same(got, want)


def test_the_profile_build_times_every_kind_and_computes_the_same(toy):
    module = graph_plan(2048)
    x = boundary_input(module)
    want, _ = interpret(module, _GRAPH_WEIGHTS, x)
    src = print_network(module, weights=_GRAPH_WEIGHTS)
    exe = build(src, variant="profile", strict=True)
    got, figures = execute(src, exe, [x], repeat=3)
    assert_same(got, want)
    prof = profile_of(figures)
    bands = {
        op.nn_op.name
        for op in main_func(module).walk()
        if isinstance(op, loop.BandOp)
    }
    assert bands and bands <= {label.split(" ")[0] for label in prof}
    assert "input nchw" in prof or "input plain" in prof
    assert prof["total"][1] == 4  # one run, then three timed ones
    assert sum(t for label, (t, _) in prof.items() if label != "total") <= prof["total"][0]
    with pytest.raises(CRunError, match="no profile"):
        profile_of(execute(src, build(src), [x])[1])


def test_clang_compiles_it_warning_free(toy):
    clang = find_clang()
    if clang is None:
        pytest.skip("no clang: neither on the PATH nor the ziglang package of the test extra")
    module = graph_plan(2048)
    x = boundary_input(module)
    want, _ = interpret(module, _GRAPH_WEIGHTS, x)
    got, _ = run_c(module, _GRAPH_WEIGHTS, [x], variant="bounds", strict=True, cc=clang)
    assert_same(got, want)


def test_the_bounds_check_stops_a_buffer_outside_its_arena(toy):
    """A buffer moved past the arena (what plan-arena would reject) is
    printed unverified: the bounds-checking build aborts on it, naming the check."""
    module = graph_plan(2048)
    fn = main_func(module)
    alloc = next(op for op in fn.walk() if op.name == "memref.alloc" and '"fast"' in str(op))
    size = int(fn.attributes["loop.arena"].value.data)  # type: ignore[union-attr]
    alloc.attributes["loop.offset"] = IntegerAttr(size, i64)
    src = print_network(module, weights=_GRAPH_WEIGHTS, verify=False)
    exe = build(src, variant="bounds", strict=True)
    with pytest.raises(CRunError, match="bounds check failed"):
        execute(src, exe, [boundary_input(module)])


def test_a_named_network_prefixes_its_symbols(toy):
    module = graph_plan(32768)
    src = print_network(module, weights=_GRAPH_WEIGHTS, name="kws")
    assert "int kws_run(const void *input, void *output);" in src.h
    arena = main_func(module).attributes["loop.arena"].value.data  # type: ignore[union-attr]
    assert f"#define KWS_FAST_ARENA_BYTES {arena}" in src.h and "tigris_run" not in src.c
    x = boundary_input(module)
    got, stats = run_c(src, None, [x], variant=("stats", "extern"), strict=True)
    want, res = interpret(module, _GRAPH_WEIGHTS, x)
    assert_same(got, want)
    assert stats == res.stats
    with pytest.raises(NetworkError, match="not a C identifier"):
        print_network(module, weights=_GRAPH_WEIGHTS, name="2net")


def test_stats_of_a_build_without_stats_are_refused(toy):
    module = graph_plan(32768)
    src = print_network(module, weights=_GRAPH_WEIGHTS)
    exe = build(src, strict=True)
    _, figures = execute(src, exe, [boundary_input(module)])
    with pytest.raises(CRunError, match="printed no 'fast peak'"):
        stats_of(src, figures)


OVERLAP = """
func.func @main(%x: memref<1x6x5x2xf32, "slow"> {loop.offset = 0 : i64})
    -> memref<1x6x5x2xf32, "slow"> attributes {loop.plan = {peak = 240 : i64},
    loop.arena = 240 : i64, loop.slow_arena = 480 : i64} {
  %b = memref.alloc() {loop.tensor = "b", loop.offset = 0 : i64} : memref<1x6x5x2xf32, "fast">
  "memref.copy"(%x, %b) : (memref<1x6x5x2xf32, "slow">, memref<1x6x5x2xf32, "fast">) -> ()
  %s = memref.subview %b[0, 0, 0, 0] [1, 4, 3, 2] [1, 1, 1, 1] : memref<1x6x5x2xf32, "fast">
       to memref<1x4x3x2xf32, strided<[60, 10, 2, 1]>, "fast">
  %d = memref.subview %b[0, 1, 1, 0] [1, 4, 3, 2] [1, 1, 1, 1] : memref<1x6x5x2xf32, "fast">
       to memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 12>, "fast">
  "memref.copy"(%s, %d) : (memref<1x4x3x2xf32, strided<[60, 10, 2, 1]>, "fast">,
                           memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 12>, "fast">) -> ()
  %s2 = memref.subview %b[0, 2, 2, 0] [1, 4, 3, 2] [1, 1, 1, 1] : memref<1x6x5x2xf32, "fast">
       to memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 24>, "fast">
  %d2 = memref.subview %b[0, 1, 0, 0] [1, 4, 3, 2] [1, 1, 1, 1] : memref<1x6x5x2xf32, "fast">
       to memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 10>, "fast">
  "memref.copy"(%s2, %d2) : (memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 24>, "fast">,
                             memref<1x4x3x2xf32, strided<[60, 10, 2, 1], offset: 10>, "fast">) -> ()
  %y = memref.alloc() {loop.tensor = "y", loop.offset = 240 : i64} : memref<1x6x5x2xf32, "slow">
  "memref.copy"(%b, %y) : (memref<1x6x5x2xf32, "fast">, memref<1x6x5x2xf32, "slow">) -> ()
  func.return %y : memref<1x6x5x2xf32, "slow">
}
"""


def test_overlapping_copies_within_a_buffer_move_as_numpy_does():
    """Sub-rectangles of one buffer moved onto themselves shifted forward, then
    backward: row by row, in the order that reads every row before it is
    overwritten (numpy's assignment semantics, which the interpreter uses)."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.memref import MemRef

    from tigris_ir.dialects.loop import Loop

    ctx = Context()
    for d in (Builtin, Func, MemRef, Arith, Loop):
        ctx.load_dialect(d)
    module = Parser(ctx, OVERLAP).parse_module()
    x = np.arange(60, dtype=np.float32).reshape(1, 6, 5, 2)
    want = run_loop_module(module, {}, [x]).outputs
    src = print_network(module, weights={}, verify=False)
    assert src.c.count("if (") >= 2  # both copies choose their direction
    got, _ = run_c(src, None, [x], variant=("bounds", "sanitize"), flags="-O1", strict=True)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize(("dtype", "literal"), [(np.float32, c_float), (np.float64, c_double)])
def test_float_literals_are_exact(tmp_path: Path, dtype, literal):
    """Every float (subnormals, the extremes, -0) prints as the literal of
    exactly itself: weights and scales reach the C bit for bit."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    bits = rng.integers(0, 2**63, 2000, dtype=np.uint64)
    raw = bits.astype(np.uint32).view(np.float32) if dtype == np.float32 else bits.view(np.float64)
    special = np.array([0.0, -0.0, info.smallest_subnormal, info.tiny, info.max, 0.1, 1.0], dtype)
    values = np.concatenate([raw, special, -special])
    values = values[np.isfinite(values)]
    ctype, utype, fmt = (
        ("float", "uint32_t", "%lu") if dtype == np.float32 else ("double", "uint64_t", "%llu")
    )
    cast = "unsigned long" if dtype == np.float32 else "unsigned long long"
    lits = ", ".join(literal(float(v)) for v in values)
    (tmp_path / "f.c").write_text(
        "#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n"
        f"static const {ctype} v[] = {{{lits}}};\n"
        "int main(void) { size_t i; for (i = 0; i < sizeof v / sizeof v[0]; ++i) {"
        f' {utype} b; memcpy(&b, &v[i], sizeof b); printf("{fmt}\\n", ({cast})b); }}'
        " return 0; }\n"
    )
    exe = tmp_path / "f"
    subprocess.run(["gcc", "-std=c99", "-o", str(exe), str(tmp_path / "f.c")], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    as_int = values.view(np.uint32 if dtype == np.float32 else np.uint64)
    assert [int(x) for x in out.split()] == as_int.tolist()


def test_the_section_macros_place_weights_and_arenas(tmp_path: Path):
    """TIGRIS_FLASH, TIGRIS_FAST_SECTION and TIGRIS_SLOW_SECTION put the
    weights and the two arenas in the sections a linker script names."""
    src = print_network(graph_plan(2048), weights=_GRAPH_WEIGHTS)
    (tmp_path / "n.c").write_text(src.c)
    (tmp_path / "n.h").write_text(src.h)
    obj = tmp_path / "n.o"
    sections = {"FLASH": ".w_flash", "FAST_SECTION": ".dtcm", "SLOW_SECTION": ".ext_ram"}
    subprocess.run(
        ["gcc", "-std=c99", "-O2", "-c", "-o", str(obj), str(tmp_path / "n.c")]
        + [f"-DTIGRIS_{k}=__attribute__((section(\"{v}\")))" for k, v in sections.items()],
        check=True,
    )
    symbols = subprocess.run(
        ["objdump", "-t", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    where = {ln.split()[-1]: ln.split()[-3] for ln in symbols.splitlines() if len(ln.split()) >= 5}
    assert where[f"{src.name}_fast_arena"] == ".dtcm"
    assert where[f"{src.name}_slow_arena"] == ".ext_ram"
    weights = [sym for sym in where if sym.endswith("_bytes")]
    assert weights and all(where[w] == ".w_flash" for w in weights)


@pytest.mark.parametrize(
    "name",
    ["every_byte", "float_specials", "small_int8", "int32", "odd_length"],
)
def test_weights_printed_as_bytes_compile_to_the_same_bytes(tmp_path: Path, name: str):
    """The compact weight form (a byte string, or words where escapes would
    make it longer) holds the array's exact bytes, in at most ~3 characters
    of source per byte: gcc compiles it and the program writes them back."""
    rng = np.random.default_rng(7)
    arrays = {
        "every_byte": np.arange(256 * 3, dtype=np.int64).astype(np.uint8),
        "float_specials": np.concatenate(
            [
                np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], np.float32),
                (rng.standard_normal(500) * 0.05).astype(np.float32),
            ]
        ),
        "small_int8": np.clip(np.round(rng.standard_normal(999) * 20), -127, 127).astype(np.int8),
        "int32": rng.integers(-(2**31), 2**31 - 1, 300).astype(np.int32),
        "odd_length": rng.integers(0, 256, 1001).astype(np.uint8),
    }
    value = arrays[name]
    ctype = c_band.c_type(value.dtype)
    text = c_bytes_array("w", ctype, value)
    assert len(text) <= 3 * value.nbytes + 200
    (tmp_path / "f.c").write_text(
        "#include <stdio.h>\n#include <stdint.h>\n#define TIGRIS_FLASH\n"
        "#define TIGRIS_ALIGNED __attribute__((aligned(64)))\n"
        + text
        + "int main(void) { fwrite(w, sizeof(*w), "
        + f"{value.size}, stdout); return ((uintptr_t)w % 64) != 0; }}\n"
    )
    exe = tmp_path / "f"
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(tmp_path / "f.c")],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, check=True).stdout
    assert out == value.tobytes()


# ---------------------------------------------------------------------------
# what is refused


def test_a_plan_that_does_not_verify_is_not_printed(toy):
    module = graph_plan(2048)
    fn = main_func(module)
    allocs = [op for op in fn.walk() if op.name == "memref.alloc" and '"fast"' in str(op)]
    allocs[1].attributes["loop.offset"] = allocs[0].attributes["loop.offset"]
    with pytest.raises(NetworkError, match="(?s)does not verify.*overlap while both are live"):
        print_network(module, weights=_GRAPH_WEIGHTS)


def test_an_arena_above_the_budget_is_not_printed(toy):
    module = graph_plan(2048)
    with pytest.raises(NetworkError, match="exceeds the budget of 1024"):
        print_network(module, weights=_GRAPH_WEIGHTS, budget=1024)


def test_an_op_without_a_c_lowering_is_named(toy):
    del c_band._REGISTRY[("band", nn.AddOp)]  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(NetworkError, match=r"nn.add: no C lowering for loop.band .*'s'"):
        print_network(graph_plan(2048), weights=_GRAPH_WEIGHTS)


def test_an_op_the_printer_does_not_know_is_named(toy):
    module = graph_plan(32768)
    fn = main_func(module)
    one = arith.ConstantOp(FloatAttr(1.0, f32))
    fn.body.block.insert_ops_before([one, arith.AddfOp(one, one)], fn.body.block.first_op)  # type: ignore[arg-type]
    with pytest.raises(NetworkError, match="'arith.addf': the C printer has no lowering"):
        print_network(module, weights=_GRAPH_WEIGHTS, verify=False)


def test_a_module_without_a_plan_is_refused():
    ctx = Context()
    for d in (Builtin, Func, nn.NN):
        ctx.load_dialect(d)
    with pytest.raises(NetworkError, match="no loop-level plan"):
        print_network(Parser(ctx, GRAPH).parse_module())


# ---------------------------------------------------------------------------
# the command lines


def test_tigris_opt_writes_the_unit_and_its_header(toy, tmp_path: Path):
    from tigris_ir.tools.tigris_opt import main

    out = tmp_path / "model.c"
    rc = main(
        [
            str(INPUTS / "conv_relu.onnx"),
            "--lower-to-loops=budget=1K",
            "--plan-arena",
            "-t",
            "c",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    c, h = out.read_text(), (tmp_path / "model.h").read_text()
    assert "int tigris_run(const void *input, void *output);" in h
    assert "#define TIGRIS_FAST_ARENA_BYTES" in h and h in c
    assert "static unsigned char tigris_fast_arena[TIGRIS_FAST_ARENA_BYTES]" in c


def test_tigris_run_backend_c_checks_and_counts(toy, tmp_path: Path, capsys):
    from tigris_ir.tools.tigris_run import run

    args = [str(INPUTS / "conv_relu.onnx"), "-m", "1K", "--random-input", "3", "--stats", "-q"]
    assert run([*args, "--backend", "interp"]) == 0
    interp = capsys.readouterr().out
    assert run([*args, "--backend", "c", "--check", "--cflags=-O1"]) == 0
    c = capsys.readouterr().out
    assert c == interp and "slow reads: " in c
    y = tmp_path / "y.npy"
    assert run([*args[:-2], "--backend", "c", "-o", str(y), "-q"]) == 0
    assert np.load(y).shape == (1, 4, 8, 8)


def test_tigris_run_rtol_sets_the_float_limits(toy, capsys):
    """--rtol is the float32 limit of both checks: a difference from
    onnxruntime (the untiled reference) or from the untiled reference (a
    plan's C) within the defaults fails below it, and each report names its
    limit; a value that is no positive number is a usage error."""
    from tigris_ir.tools.tigris_run import main, run

    model = [str(INPUTS / "conv_relu.onnx"), "--random-input", "3", "--check"]
    assert run(model) == 0
    assert "(limit 1.00e-04)" in capsys.readouterr().out
    assert run([*model, "--rtol", "1e-12"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "(limit 1.00e-12)" in out
    plan = [*model, "-m", "1K", "--backend", "c", "--cflags=-O1"]
    assert run(plan) == 0
    assert "limit 1.00e-05" in capsys.readouterr().out
    assert run([*plan, "--rtol", "1e-12"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH with the untiled reference" in out and "limit 1.00e-12" in out
    for bad in ("0", "-1e-3", "inf", "tight"):
        assert main([*model, f"--rtol={bad}"]) == 1
        err = capsys.readouterr().err
        assert f"--rtol: '{bad}' is not a positive number" in err and "Traceback" not in err


def test_the_host_memory_bound_counts_no_view_of_a_dynamic_size():
    """tigris-run's bound on the tensors a run holds counts static types only: a
    band's view of a dynamic size (into an arena of a loop-level plan, counted
    itself) is no tensor of its own, so a plan of large dynamic views runs,
    while a static tensor above the machine's memory is still refused."""
    from tigris_ir.tools.cli import Diagnostic
    from tigris_ir.tools.tigris_run import check_host_memory, host_memory_bytes

    ctx = Context()
    for d in (Builtin, Func):
        ctx.load_dialect(d)

    def module(t: str) -> ModuleOp:
        return Parser(ctx, f"func.func @f(%a: {t}) {{ func.return }}").parse_module()

    check_host_memory(module("memref<?x?x8x16xf32>"), "plan.mlir")
    if not host_memory_bytes():
        pytest.skip("the machine's memory is not known here")
    with pytest.raises(Diagnostic, match="would hold up to"):
        check_host_memory(module("tensor<1000000x1000000x1000xf32>"), "plan.mlir")


def test_tigris_run_backend_c_reports_errors_in_one_line(toy, capsys):
    import sys

    from tigris_ir.tools.tigris_run import main

    argv = sys.argv
    try:
        sys.argv = [
            "tigris-run",
            str(INPUTS / "conv_relu.onnx"),
            "--random-input",
            "0",
            "--backend",
            "c",
        ]
        assert main() == 1
        assert "--backend c runs a plan" in capsys.readouterr().err
        del c_band._REGISTRY[("band", nn.ReluOp)]  # pyright: ignore[reportPrivateUsage]
        sys.argv = [*sys.argv, "-m", "1K"]
        assert main() == 1
        err = capsys.readouterr().err
        assert "nn.relu: no C lowering for loop.band" in err and "Traceback" not in err
        sys.argv = [*sys.argv[:-2], "-m", "1K", "--cc", "no-such-cc"]
        c_band.register("band", nn.ReluOp)(_with_macros(TOY[("band", nn.ReluOp)]))
        assert main() == 1
        assert "'no-such-cc' not found" in capsys.readouterr().err
    finally:
        sys.argv = argv


# ---------------------------------------------------------------------------
# the zoo, with the real kernels

ZOO_CASES = [
    ("ds_cnn", False, 4096),
    ("ds_cnn", True, 2048),
    ("resnet", False, 2048),
    ("resnet", True, 16384),
    ("mobilenet_v2_035", True, 4096),
    ("unet", False, 4096),
    ("audio_1d", True, 2048),
    ("dilated", False, 16384),
    ("dilated", True, 2048),
    ("vgg", True, 4096),
]
"""Every model once or twice, float32 and int8, strips, grids, chains and
accumulations among them. TIGRIS_C_FULL=1 runs every model, float32 and int8,
at three budgets (minutes)."""
if os.environ.get("TIGRIS_C_FULL"):
    ZOO_CASES = [(n, q, b) for n in zoo.ZOO for q in (False, True) for b in (2048, 8192, 65536)]


_ZOO: dict[tuple[str, bool], tuple[ModuleOp, dict[str, np.ndarray]]] = {}


def zoo_plan(name: str, int8: bool, budget: int) -> tuple[ModuleOp, dict[str, np.ndarray]] | None:
    """The lowered plan (None when the model does not fit the budget)."""
    from tigris_ir.plan.nn_graph import build_view
    from tigris_ir.plan.planner import plan

    if (name, int8) not in _ZOO:
        imported = import_model(zoo.build(name, size="small", int8=int8))
        _ZOO[(name, int8)] = (imported.module, imported.weights)
    module, weights = _ZOO[(name, int8)]
    if not plan(build_view(main_func(module)).graph, budget).fits:
        return None
    return lowered(module, budget), weights


@dataclass
class ZooCase:
    module: ModuleOp | None = None
    weights: dict[str, np.ndarray] | None = None
    source: CSource | None = None
    exe: Path | None = None
    skip: str = ""


def _zoo_case(name: str, int8: bool, budget: int) -> ZooCase:
    got = zoo_plan(name, int8, budget)
    if got is None:
        return ZooCase(skip=f"{name} does not fit {budget} bytes")
    module, weights = got
    return ZooCase(module, weights, print_network(module, weights=weights))


SANITIZED = ("ds_cnn", True, 2048)
"""The case also built with the sanitizers and the bounds checks, and portable."""


@pytest.fixture(scope="module")
def zoo_builds() -> dict[tuple[str, bool, int, str], ZooCase]:
    """Every zoo case printed, then compiled in parallel (the builds dominate)."""
    cases = {(n, q, b, "stats"): _zoo_case(n, q, b) for n, q, b in ZOO_CASES}
    base = cases.get((*SANITIZED, "stats")) or _zoo_case(*SANITIZED)
    for variant in ("sanitize", "portable", "clang"):
        cases[(*SANITIZED, variant)] = replace(base)
    clang = find_clang()
    if clang is None:
        cases[(*SANITIZED, "clang")].skip = "no clang on the PATH nor from ziglang"
    options: dict[str, tuple[str | tuple[str, ...], str | None]] = {
        "stats": ("stats", None),
        "sanitize": (("sanitize", "bounds"), "-O1 -march=native"),  # quicker, as thorough
        "portable": ("portable", None),
        "clang": ("default", None),
    }

    def compile_one(item: tuple[tuple[str, bool, int, str], ZooCase]) -> None:
        key, case = item
        variant, flags = options[key[3]]
        cc = clang if key[3] == "clang" else None
        if case.source is not None and not case.skip:
            case.exe = build(case.source, variant=variant, flags=flags, strict=True, cc=cc)

    with ThreadPoolExecutor(max_workers=min(4, max(2, os.cpu_count() or 2))) as pool:
        list(pool.map(compile_one, cases.items()))
    return cases


def _ready(case: ZooCase) -> tuple[ModuleOp, dict[str, np.ndarray], CSource, Path]:
    if case.skip:
        pytest.skip(case.skip)
    assert case.module is not None and case.weights is not None
    assert case.source is not None and case.exe is not None
    return case.module, case.weights, case.source, case.exe


@pytest.mark.parametrize(
    ("name", "int8", "budget"),
    ZOO_CASES,
    ids=[f"{n}-{'int8' if q else 'f32'}-{b}" for n, q, b in ZOO_CASES],
)
def test_zoo_plans_compute_and_count_as_the_interpreter(zoo_builds, name, int8, budget):
    module, weights, src, exe = _ready(zoo_builds[(name, int8, budget, "stats")])
    assert "malloc(" not in src.c and "free(" not in src.c
    x = boundary_input(module, seed=5)
    want, res = interpret(module, weights, x)
    got, figures = execute(src, exe, [x])
    assert_same(got, want)
    assert stats_of(src, figures) == res.stats


@pytest.mark.parametrize("variant", ["sanitize", "portable", "clang"])
def test_zoo_builds_run_clean(zoo_builds, variant: str):
    module, weights, src, exe = _ready(zoo_builds[(*SANITIZED, variant)])
    x = boundary_input(module, seed=6)
    want, _ = interpret(module, weights, x)
    got, _ = execute(src, exe, [x])
    assert_same(got, want)


def test_the_header_bounds_the_kernels_stack_scratch():
    """The gathered pixel blocks of the vectorised convolutions live on the
    stack, outside the arenas: the header publishes their bound, which the
    kernels keep within 16 KiB."""
    got = zoo_plan("resnet", False, 2048)
    assert got is not None
    module, weights = got
    src = print_network(module, weights=weights)
    m = re.search(r"#define TIGRIS_STACK_SCRATCH_BYTES (\d+)", src.h)
    assert m is not None
    sizes = [
        int(n) * (4 if t == "float" else 2)
        for t, n in re.findall(r"(float|int16_t) buf\[(\d+)\] __attribute__", src.c)
    ]
    assert sizes and int(m.group(1)) == max(sizes) <= 16384


def test_band_kernels_stay_functions_of_their_own():
    """Every band kernel of a network unit is TIGRIS_BAND (noinline under
    GNU C): the run calls each once, and inlined there they made the run
    one function so big that MobileNetV2-1.0 took twice as long to compile.
    The compiled object keeps each one as a function."""
    module = import_model(zoo.build("mobilenet_v2", size="small"))
    m = lowered(module.module, 64 * 1024)
    src = print_network(m, weights=module.weights)
    assert "#define TIGRIS_BAND __attribute__((noinline))" in src.c
    called = set(re.findall(r"^\s+((?:tg|tigris)_\w+)\(", src.c, re.M))
    bands = set(re.findall(r"^static TIGRIS_BAND (?:\w+ )*void (\w+)\(", src.c, re.M))
    assert bands and bands <= called
    exe = build(src)
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    defined = {s.split(".")[0] for s in re.findall(r" [tT] (\S+)", syms)}
    assert bands <= defined
