"""The register-tile passes end to end: gebp-tile, autotune, lower-gebp, the C target.

gebp-tile is held against the model (`register_tile.default` / `check`) site by
site; lowered kernels run in the numpy loop interpreter and, printed as C,
compiled with gcc and called through ctypes, against numpy: float32 to 1e-5
relative to sum |a||b|, int8 exactly. Shapes cover every part of a cover.
Timings are never asserted; autotune's timer is replaced where a test only
needs to know whether it ran.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func, get_all_dialects, memref, scf, vector
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.backend.c import gebp as gebp_c
from tigris_ir.backend.c.target import CEmitError, print_c
from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import CoverAttr, DotAccOp, GeomAttr
from tigris_ir.interp.loop_ir import LoopIRError, run_kernel
from tigris_ir.passes.gebp_tile import GebpTilePass, gemm_site
from tigris_ir.passes.lower_gebp import KernelSpec, LowerGebpPass, build_kernel
from tigris_ir.rtile import autotune as tune
from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.model import Geometry as G
from tigris_ir.tools.tigris_opt import main as tigris_opt
from tigris_ir.universe import TIGRIS

HAS_GCC = shutil.which("gcc") is not None


def context() -> Context:
    ctx = Context()
    for name, factory in {**get_all_dialects(), **TIGRIS.all_dialects}.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def tile(text: str, **options: object) -> ModuleOp:
    module = parse(text)
    GebpTilePass(**options).apply(context(), module)  # type: ignore[arg-type]
    module.verify()
    return module


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def tensor(shape: tuple[int, ...], elt: str = "f32") -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elt}>"


def gemm_text(
    m: int, n: int, k: int, attrs: str = "", c_shape: tuple[int, ...] | None = None
) -> str:
    cs = (n,) if c_shape is None else c_shape
    a, b, c, y = tensor((m, k)), tensor((k, n)), tensor(cs), tensor((m, n))
    extra = f" {{{attrs}}}" if attrs else ""
    return (
        f"func.func @f(%a: {a}, %b: {b}, %c: {c}) -> {y} {{\n"
        f"  %y = nn.gemm %a, %b, %c{extra} : ({a}, {b}, {c}) -> {y}\n"
        f"  func.return %y : {y}\n}}\n"
    )


def conv_text(x: tuple[int, ...], w: tuple[int, ...], props: str) -> str:
    ks = w[1:-1]
    out = (x[0], x[1] - ks[0] + 1, x[2] - ks[1] + 1, w[0])
    bias = tensor((w[0],))
    xt, wt, yt = tensor(x), tensor(w), tensor(out)
    return (
        f"func.func @f(%x: {xt}, %w: {wt}, %b: {bias}) -> {yt} {{\n"
        f"  %y = nn.conv %x, %w, %b {{kernel = array<i64: {ks[0]}, {ks[1]}>{props}}} : "
        f"({xt}, {wt}, {bias}) -> {yt}\n"
        f"  func.return %y : {yt}\n}}\n"
    )


MATMUL = (
    "func.func @f(%a: tensor<40x30xf32>, %b: tensor<30x70xf32>) -> tensor<40x70xf32> {\n"
    "  %y = nn.matmul %a, %b : (tensor<40x30xf32>, tensor<30x70xf32>) -> tensor<40x70xf32>\n"
    "  func.return %y : tensor<40x70xf32>\n}\n"
)

# (text, site kind, m, n, k): every kind of matrix product the pass tiles
SITES = [
    (gemm_text(97, 83, 61), "gemm", 97, 83, 61),
    (MATMUL, "matmul", 40, 70, 30),
    (conv_text((1, 14, 14, 24), (144, 1, 1, 24), ""), "1x1 conv", 196, 144, 24),
    (conv_text((2, 10, 10, 16), (40, 3, 3, 16), ""), "conv", 128, 40, 144),
    (conv_text((1, 9, 9, 32), (64, 3, 3, 16), ", group = 2 : i64"), "conv", 49, 32, 144),
]


# ------------------------------------------------------------------ gebp-tile


@pytest.mark.parametrize("target", ["avx2", "avx512", "sse", "neon"])
@pytest.mark.parametrize(("text", "kind", "m", "n", "k"), SITES)
def test_sites_get_the_model_default(text: str, kind: str, m: int, n: int, k: int, target: str):
    module = tile(text, target=target)
    (op,) = [o for o in module.walk() if o.name in ("nn.gemm", "nn.matmul", "nn.conv")]
    site = gemm_site(op)
    assert site is not None and (site.kind, site.m, site.n, site.k) == (kind, m, n, k)
    g = rt.default(tg.PRESETS[target], m, n)
    assert g is not None
    assert op.attributes["rtile.geom"] == GeomAttr.from_geometry(g)
    assert op.attributes["rtile.cover"] == CoverAttr.from_cover(rt.cover(g, m, n))
    assert op.attributes["rtile.target"].data == target


def test_depthwise_and_batched_products_are_left_alone():
    dw = conv_text((1, 8, 8, 16), (16, 3, 3, 1), ", group = 16 : i64")
    batched = (
        "func.func @f(%a: tensor<2x8x16xf32>, %b: tensor<2x16x24xf32>) -> tensor<2x8x24xf32> {\n"
        "  %y = nn.matmul %a, %b : (tensor<2x8x16xf32>, tensor<2x16x24xf32>)"
        " -> tensor<2x8x24xf32>\n"
        "  func.return %y : tensor<2x8x24xf32>\n}\n"
    )
    for text in (dw, batched):
        module = tile(text, target="avx2")
        assert not any("rtile.geom" in op.attributes for op in module.walk())


def test_a_matmul_of_leading_axes_on_one_matrix_is_one_site_of_all_its_rows():
    """A [2, 8, 16] x B [16, 24]: the C runs the rows of every leading index
    through one GEBP, so the site has m = 2 * 8 rows."""
    text = (
        "func.func @f(%a: tensor<2x8x16xf32>, %b: tensor<16x24xf32>) -> tensor<2x8x24xf32> {\n"
        "  %y = nn.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x24xf32>) -> tensor<2x8x24xf32>\n"
        "  func.return %y : tensor<2x8x24xf32>\n}\n"
    )
    module = tile(text, target="avx2")
    (op,) = [o for o in module.walk() if isinstance(o, nn.MatMulOp)]
    site = gemm_site(op)
    assert site is not None and (site.m, site.n, site.k) == (16, 24, 16)
    g = rt.default(tg.avx2, 16, 24)
    assert g is not None and op.attributes["rtile.geom"] == GeomAttr.from_geometry(g)


def test_a_site_narrower_than_any_vector_keeps_no_tile():
    # n = 6 < 8 lanes on avx2; a stale geometry from an earlier run is removed too
    stale = 'rtile.geom = #rtile.geom<rm4 rn1 lanes8>, rtile.target = "avx2"'
    module = tile(gemm_text(16, 6, 8, stale), target="avx2")
    (op,) = ops_named(module, "nn.gemm")
    assert "rtile.geom" not in op.attributes and "rtile.target" not in op.attributes


def test_the_pass_is_idempotent():
    once = tile(gemm_text(97, 83, 61), target="avx512")
    twice = tile(str(once), target="avx512")
    assert str(once) == str(twice)


def test_an_accepted_request_is_honoured(capsys: pytest.CaptureFixture[str]):
    g = G(2, 5, 8)
    assert rt.check(tg.avx2, 97, 83, g) is None and g != rt.default(tg.avx2, 97, 83)
    module = tile(
        gemm_text(97, 83, 61, "rtile.request = #rtile.geom<rm2 rn5 lanes8>"), target="avx2"
    )
    (op,) = ops_named(module, "nn.gemm")
    assert op.attributes["rtile.geom"] == GeomAttr.from_geometry(g)
    assert capsys.readouterr().err == ""


# (m, n, request, rule) on avx2: one per check rule a request can reach
DECLINES = [
    (97, 83, G(4, 1, 16), "renderable-lanes"),
    (40, 6, G(4, 1, 8), "n-fills-lanes"),
    (3, 83, G(4, 2, 8), "rows-fit"),
    (97, 20, G(4, 3, 8), "columns-fit"),
    (97, 83, G(4, 4, 8), "register-budget"),
]


@pytest.mark.parametrize(("m", "n", "g", "rule"), DECLINES)
def test_a_declined_request_warns_and_falls_back(
    m: int, n: int, g: G, rule: str, capsys: pytest.CaptureFixture[str]
):
    request = f"rtile.request = #rtile.geom<{rt.show(g)}>"
    text = gemm_text(m, n, 9, request).replace(
        ") -> " + tensor((m, n)) + "\n", f') -> {tensor((m, n))} loc("net.mlir":7:3)\n', 1
    )
    module = tile(text, target="avx2")
    err = capsys.readouterr().err
    message = rt.check(tg.avx2, m, n, g)
    assert message is not None and message.startswith(rule)
    assert "warning: gebp-tile: 'nn.gemm' %y in @f" in err
    assert "at net.mlir:7:3" in err
    assert message in err
    (op,) = ops_named(module, "nn.gemm")
    dflt = rt.default(tg.avx2, m, n)
    if dflt is None:
        assert "no default tile fits" in err and "rtile.geom" not in op.attributes
    else:
        assert f"falls back to the default {rt.show(dflt)}" in err
        assert op.attributes["rtile.geom"] == GeomAttr.from_geometry(dflt)


def test_unknown_target_and_too_few_registers_fail():
    with pytest.raises(PassFailedException, match="unknown target 'z80'"):
        tile(gemm_text(8, 8, 8), target="z80")
    with pytest.raises(PassFailedException, match="target 'sse' has 5 vector registers"):
        tile(gemm_text(8, 8, 8), target="sse", registers=5)
    # six registers hold the rm4 rn1 tile: no error
    tile(gemm_text(8, 8, 8), target="sse", registers=6)


def test_driver_exit_status_and_help(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    src = tmp_path / "g.mlir"
    src.write_text(gemm_text(8, 16, 4))
    assert tigris_opt([str(src), "--gebp-tile=target=z80"]) == 1
    assert "unknown target 'z80'" in capsys.readouterr().err
    assert tigris_opt([str(src), "--gebp-tile=target=avx2,registers=4"]) == 1
    assert "too few for any register tile" in capsys.readouterr().err
    assert tigris_opt(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--gebp-tile" in out and "Attach register-tile geometries" in out
    assert "--lower-gebp" in out


# ------------------------------------------------------------------ autotune


def fake_timer(calls: list[int]):
    """Deterministic 'seconds' (the last candidate is fastest), counting calls."""

    def timer(geoms, problem, target):
        calls.append(len(geoms))
        return {g: 1.0 / (i + 1) for i, g in enumerate(geoms)}

    return timer


def test_autotune_times_once_then_reads_the_cache(tmp_path: Path):
    cache = tune.TuneCache(tmp_path / "c.json")
    calls: list[int] = []
    seeds = rt.seeds(tg.avx2, 64, 64)
    assert len(seeds) == 2
    first = tune.autotune(tg.avx2, 64, 64, 32, "float32", cache=cache, timer=fake_timer(calls))
    assert first is not None and first.source == "timed" and first.geometry == seeds[-1]
    data = json.loads((tmp_path / "c.json").read_text())
    entry = data["targets"][tune.target_key(tg.avx2)]["64x64x32:float32"]
    assert entry["geom"] == rt.show(seeds[-1])
    again = tune.autotune(
        tg.avx2, 64, 64, 32, "float32", cache=tune.TuneCache(tmp_path / "c.json"),
        timer=fake_timer(calls),
    )  # fmt: skip
    assert again is not None and again.source == "cache" and again.geometry == seeds[-1]
    assert calls == [2]
    # another dtype or k is another site
    tune.autotune(tg.avx2, 64, 64, 32, "int8", cache=cache, timer=fake_timer(calls))
    assert calls == [2, 2]


def test_autotune_single_candidate_and_twin(tmp_path: Path):
    calls: list[int] = []
    cache = tune.TuneCache(tmp_path / "c.json")
    only = tune.autotune(tg.avx2, 16, 40, 8, "float32", cache=cache, timer=fake_timer(calls))
    assert only is not None and only.source == "single" and calls == []
    twin = rt.TileConfig(autotune_register_tile_rm_twin=True)
    both = tune.autotune(
        tg.avx2, 16, 40, 8, "float32", cache=cache, config=twin, timer=fake_timer(calls)
    )
    assert both is not None and both.geometry == rt.rm_twin(tg.avx2, 16, 40, twin)
    assert calls == [2]


def test_autotune_keeps_the_default_where_it_cannot_time(tmp_path: Path):
    foreign = next(t for t in tg.PRESETS.values() if tg.can_run(t) is not None)
    m = 64
    n = next(n for n in range(8, 400) if len(rt.seeds(foreign, m, n)) > 1)
    seeds = rt.seeds(foreign, m, n)
    calls: list[int] = []
    cache = tune.TuneCache(tmp_path / "c.json")
    got = tune.autotune(foreign, m, n, 16, "float32", cache=cache, timer=fake_timer(calls))
    assert got is not None and got.source == "untimed" and got.geometry == seeds[0]
    assert calls == [] and not (tmp_path / "c.json").exists()


def test_default_cache_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tune.default_cache_path() == tmp_path / "tigris-ir" / "gebp-autotune.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert tune.default_cache_path().parts[-3:] == (".cache", "tigris-ir", "gebp-autotune.json")


@pytest.mark.skipif(not HAS_GCC or tg.host_target().arch != "x86_64", reason="x86 + gcc")
def test_autotune_pass_times_on_this_machine_then_uses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    cache = tmp_path / "tune.json"
    text = gemm_text(16, 40, 8)
    options = dict(target="avx2", autotune=True, cache=str(cache), rm_twin=True)
    module = tile(text, **options)
    (op,) = ops_named(module, "nn.gemm")
    chosen = op.attributes["rtile.geom"].geometry
    twin = rt.TileConfig(autotune_register_tile_rm_twin=True)
    assert chosen in rt.seeds(tg.avx2, 16, 40, twin)
    entry = json.loads(cache.read_text())["targets"][tune.target_key(tg.avx2)]["16x40x8:float32"]
    assert entry["geom"] == rt.show(chosen) and len(entry["seconds"]) == 2

    def no_timing(*args: object, **kwargs: object):
        raise AssertionError("a cached site was timed again")

    monkeypatch.setattr(tune, "time_candidates", no_timing)
    again = tile(text, **options)
    assert ops_named(again, "nn.gemm")[0].attributes["rtile.geom"].geometry == chosen


def test_a_corrupt_cache_is_a_pass_failure(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PassFailedException, match="cannot read the autotune cache"):
        tile(gemm_text(64, 64, 8), target="avx2", autotune=True, cache=str(bad))


# ------------------------------------------------------------------ lowering


def category(g: G, m: int, n: int) -> str:
    c = rt.cover(g, m, n)
    tail = (
        "no tail"
        if not c.tail_widths
        else "partial tail"
        if c.tail_widths == (c.tail_widths[-1],) and c.tail_widths[-1] < g.lanes
        else "full+partial tail"
        if c.tail_widths[-1] < g.lanes
        else "full tail"
    )
    return f"{tail}, {'band' if c.band_rows else 'no band'}"


# (m, n, k, geometry): with random ones below, every tail case with and without a band
COVER_CASES = [
    (8, 16, 5, G(4, 2, 8)),
    (10, 24, 5, G(4, 3, 8)),
    (8, 40, 6, G(4, 3, 8)),
    (14, 45, 7, G(4, 3, 8)),
    (13, 19, 9, G(4, 2, 8)),
    (12, 37, 7, G(4, 3, 8)),
    (9, 40, 3, G(4, 3, 8)),
    (4, 24, 1, G(4, 1, 8)),
    (6, 30, 4, G(3, 2, 4)),
    (5, 9, 2, G(2, 2, 2)),
    (3, 21, 6, G(3, 1, 16)),
    (2, 33, 8, G(1, 2, 8)),
]


def random_cases(count: int, seed: int) -> list[tuple[int, int, int, G]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        m, n, k = (int(x) for x in (rng.integers(1, 14), rng.integers(8, 60), rng.integers(1, 12)))
        g = rt.default(tg.avx2, m, n)
        assert g is not None
        out.append((m, n, k, g))
    return out


ALL_CASES = COVER_CASES + random_cases(6, 7)


def test_the_cases_cover_every_tail_and_band():
    seen = {category(g, m, n) for m, n, _, g in ALL_CASES}
    tails = ("no tail", "partial tail", "full tail", "full+partial tail")
    assert {f"{t}, {b}" for t in tails for b in ("band", "no band")} <= seen


def operands(m: int, n: int, k: int, dtype: str, seed: int):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return (
            rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32),
        )
    return (
        rng.integers(-128, 128, (m, k), dtype=np.int8),
        rng.integers(-128, 128, (k, n), dtype=np.int8),
    )


def assert_close(got: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray | float = 0.0):
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + np.abs(c)
    assert got.dtype == np.float32
    assert np.all(np.abs(got - ref) <= 1e-5 * scale + 1e-30), np.abs(got - ref).max()


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize(("m", "n", "k", "g"), ALL_CASES)
def test_lowered_kernel_interpreted(m: int, n: int, k: int, g: G, dtype: str):
    spec = KernelSpec(m, n, k, dtype, g)  # type: ignore[arg-type]
    kernel = build_kernel(spec)
    module = ModuleOp([kernel])
    module.verify()
    a, b = operands(m, n, k, dtype, seed=m * n + k)
    acc = np.float32 if dtype == "float32" else np.int32
    y = np.full((m, n), np.nan if dtype == "float32" else -7, dtype=acc)
    run_kernel(module, kernel.sym_name.data, [a, b, y])
    if dtype == "float32":
        assert_close(y, a, b)
    else:
        np.testing.assert_array_equal(y, a.astype(np.int32) @ b.astype(np.int32))


def test_nothing_is_peeled_to_scalar_code():
    kernel = build_kernel(KernelSpec(13, 37, 9, "float32", G(4, 3, 8), (37,)))
    module = ModuleOp([kernel])
    a_arg = kernel.body.block.args[0]
    for op in module.walk():
        assert not isinstance(op, memref.StoreOp)  # every store is a vector store
        if isinstance(op, memref.LoadOp):
            assert op.memref is a_arg  # the only scalar loads are the A splats' sources
    stores = ops_named(module, "vector.store") + ops_named(module, "vector.maskedstore")
    # one store per accumulator: passes 3x(4x3) + tail 3x(4x2) + band 1x3 + band tail 1x2
    assert len(stores) == 4 * 3 + 4 * 2 + 3 + 2


@pytest.mark.parametrize(
    ("c_shape", "beta"),
    [((37,), 1.0), ((1, 37), 1.0), ((13, 37), 0.5), ((13, 1), 1.0), ((), 2.0), ((1,), 1.0)],
)
def test_gemm_addend_shapes_interpreted(c_shape: tuple[int, ...], beta: float):
    attrs = f"beta = {beta} : f32" if beta != 1.0 else ""
    module = tile(gemm_text(13, 37, 9, attrs, c_shape), target="avx2")
    LowerGebpPass().apply(context(), module)
    module.verify()
    a, b = operands(13, 37, 9, "float32", seed=3)
    c = np.random.default_rng(4).standard_normal(c_shape).astype(np.float32)
    y = np.full((13, 37), np.nan, np.float32)
    run_kernel(module, "f", [a, b, c, y])
    assert_close(y, a, b, beta * c.astype(np.float64))


CHAIN = """
func.func @chain(%x: tensor<10x12xf32>, %w1: tensor<12x20xf32>, %w2: tensor<20x9xf32>,
                 %c2: tensor<9xf32>) -> (tensor<10x20xf32>, tensor<10x9xf32>) {
  %h = nn.matmul %x, %w1 : (tensor<10x12xf32>, tensor<12x20xf32>) -> tensor<10x20xf32>
  %y = nn.gemm %h, %w2, %c2 : (tensor<10x20xf32>, tensor<20x9xf32>, tensor<9xf32>) -> tensor<10x9xf32>
  func.return %h, %y : tensor<10x20xf32>, tensor<10x9xf32>
}
"""  # noqa: E501


def test_a_graph_of_products_becomes_a_memref_function():
    module = tile(CHAIN, target="avx2")
    LowerGebpPass().apply(context(), module)
    module.verify()
    fn = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "chain")
    assert [str(t) for t in fn.function_type.inputs.data][-2:] == [
        "memref<10x20xf32>",
        "memref<10x9xf32>",
    ]
    assert not fn.function_type.outputs.data
    rng = np.random.default_rng(5)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((10, 12), (12, 20), (20, 9)))
    c2 = rng.standard_normal(9).astype(np.float32)
    h, y = np.full((10, 20), np.nan, np.float32), np.full((10, 9), np.nan, np.float32)
    run_kernel(module, "chain", [x, w1, w2, c2, h, y])
    assert_close(h, x, w1)
    assert_close(y, h, w2, c2.astype(np.float64))


def test_a_mixed_graph_is_bridged_and_uncovered_sites_warn(capsys: pytest.CaptureFixture[str]):
    text = """
func.func @m(%a: tensor<13x9xf32>, %b: tensor<9x19xf32>, %bt: tensor<19x9xf32>,
             %c: tensor<19xf32>) -> tensor<13x19xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<13x9xf32>, tensor<9x19xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  %t = nn.gemm %a, %bt, %c {trans_b = 1 : i64} : (tensor<13x9xf32>, tensor<19x9xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  %s = nn.add %y, %t : (tensor<13x19xf32>, tensor<13x19xf32>) -> tensor<13x19xf32>
  func.return %s : tensor<13x19xf32>
}
"""  # noqa: E501
    module = tile(text, target="avx2")
    LowerGebpPass().apply(context(), module)
    module.verify()
    err = capsys.readouterr().err
    assert "warning: lower-gebp: 'nn.gemm' %t in @m" in err and "transposed gemm" in err
    assert len(ops_named(module, "nn.gemm")) == 1  # the transposed one stays
    names = [op.name for op in next(iter(module.ops)).walk()]
    for name in ("bufferization.to_buffer", "memref.alloc", "func.call", "bufferization.to_tensor"):
        assert name in names
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data != "m")
    a, b = operands(13, 19, 9, "float32", 1)
    c = np.random.default_rng(2).standard_normal(19).astype(np.float32)
    y = np.full((13, 19), np.nan, np.float32)
    run_kernel(module, kernel.sym_name.data, [a, b, c, y])
    assert_close(y, a, b, c.astype(np.float64))


def test_lowered_structure():
    kernel = build_kernel(KernelSpec(13, 19, 9, "int8", G(4, 2, 8)))
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    carried = [op for op in loops if op.iter_args]
    # full passes (j0, i0, k), column tail (i0, k), band (j0, k), band tail (k)
    assert len(loops) == 8 and len(carried) == 4
    dots = [op for op in kernel.walk() if isinstance(op, DotAccOp)]
    # k = 9: four pairs in the loop and the odd last step after it, per tile
    assert {len(op.b) for op in dots} == {1, 2}
    assert any(isinstance(op, vector.MaskedLoadOp) for op in kernel.walk())


def test_the_interpreter_names_an_op_it_does_not_run():
    module = parse(
        "func.func @f(%x: f32) -> f32 {\n  %y = arith.addf %x, %x : f32\n"
        "  func.return %y : f32\n}\n"
    )
    with pytest.raises(LoopIRError, match="'arith.addf'"):
        run_kernel(module, "f", [np.float32(1)])


# ------------------------------------------------------------------ C target


def c_module(cases: list[tuple[int, int, int, G]], dtype: str, target: str) -> str:
    """One function per case: nn.gemm (f32, with a row addend) or rtile.gebp (i8)."""
    funcs = []
    for idx, (m, n, k, g) in enumerate(cases):
        req = f"rtile.request = #rtile.geom<{rt.show(g)}>"
        if dtype == "float32":
            funcs.append(gemm_text(m, n, k, req).replace("@f(", f"@f{idx}("))
        else:
            a, b, y = tensor((m, k), "i8"), tensor((k, n), "i8"), tensor((m, n), "i32")
            cover = str(CoverAttr.from_cover(rt.cover(g, m, n))).removeprefix("#rtile.cover")
            funcs.append(
                f"func.func @f{idx}(%a: {a}, %b: {b}) -> {y} {{\n"
                f"  %y = rtile.gebp %a, %b geom <{rt.show(g)}> cover {cover}"
                f' {{rtile.target = "{target}"}} : {a}, {b} -> {y}\n'
                f"  func.return %y : {y}\n}}\n"
            )
    return "\n".join(funcs)


def compile_and_run(
    src: Path, cases, dtype: str, target: tg.Target, run: bool, names: list[str] | None = None
) -> None:
    """Compile k.c for the target; run each case's function (@f<i>) where it runs."""
    lib = gebp_c.load(src.read_text(), ("-O3", "-march=native", *target.cflags()))
    if not run:
        return
    for idx, (m, n, k, _) in enumerate(cases):
        fn = getattr(lib, names[idx] if names else f"f{idx}")
        fn.restype = None
        a, b = operands(m, n, k, dtype, seed=idx)
        if dtype == "float32":
            c = np.random.default_rng(idx).standard_normal(n).astype(np.float32)
            y = np.full((m, n), np.nan, np.float32)
            fn(*(x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, c, y)))
            assert_close(y, a, b, c.astype(np.float64))
        else:
            y = np.full((m, n), -7, np.int32)
            fn(*(x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, y)))
            np.testing.assert_array_equal(y, a.astype(np.int32) @ b.astype(np.int32))


def target_cases(target: tg.Target) -> list[tuple[int, int, int, G]]:
    """ALL_CASES whose geometry the target renders, plus its own defaults on them."""
    cases = [c for c in ALL_CASES if rt.check(target, c[0], c[1], c[3]) is None]
    for m, n, k, _ in ALL_CASES:
        g = rt.default(target, m, n)
        if g is not None:
            cases.append((m, n, k, g))
    return cases


@pytest.mark.skipif(not HAS_GCC, reason="needs gcc")
@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("name", ["avx2", "avx512", "avx512-vnni"])
def test_printed_c_compiles_and_matches_numpy(
    name: str, dtype: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    target = tg.PRESETS[name]
    if tg.host_target().arch != target.arch:
        pytest.skip(f"gcc here does not compile {target.arch}")
    if dtype == "float32" and name == "avx512-vnni":
        pytest.skip("float32 code does not depend on VNNI")
    cases = target_cases(target)
    if dtype == "float32":
        cats = {category(g, m, n) for m, n, _, g in cases}
        assert len(cats) == 8, cats
    src, out = tmp_path / "x.mlir", tmp_path / "k.c"
    src.write_text(c_module(cases, dtype, name))
    args = [str(src), f"--gebp-tile=target={name}", "--lower-gebp", "-t", "c", "-o", str(out)]
    assert tigris_opt(args) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "KEEP" in text
    if dtype == "int8":
        vnni = "_dpwssd_epi32" in text
        assert vnni == target.vnni and ("_madd_epi16" in text) != target.vnni
    compile_and_run(out, cases, dtype, target, run=tg.can_run(target) is None)


@pytest.mark.skipif(not HAS_GCC, reason="needs gcc")
def test_the_command_line_of_the_issue(tmp_path: Path):
    src, out = tmp_path / "x.mlir", tmp_path / "k.c"
    src.write_text(gemm_text(13, 19, 9))
    exe = Path(sys.executable).parent / "tigris-opt"
    cmd = [str(exe), str(src), "--gebp-tile=target=avx2", "--lower-gebp", "-t", "c", "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    host_runs = tg.can_run(tg.avx2) is None and tg.host_target().arch == "x86_64"
    if tg.host_target().arch == "x86_64":
        case = (13, 19, 9, G(4, 2, 8))
        compile_and_run(out, [case], "float32", tg.avx2, run=host_runs, names=["f"])


def test_the_c_target_names_the_first_op_it_cannot_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    conv = conv_text((1, 6, 6, 8), (16, 1, 1, 8), "")
    src = tmp_path / "c.mlir"
    src.write_text(conv)
    assert tigris_opt([str(src), "--gebp-tile=target=avx2", "--lower-gebp", "-t", "c"]) == 1
    err = capsys.readouterr().err
    assert "the C target prints loop-level IR; 'nn.conv' %y in @f" in err
    assert "is not lowered (lower-gebp does not cover it: convolution sites" in err
    assert "Traceback" not in err
    with pytest.raises(CEmitError, match="'nn.gemm' %y in @f .* is not lowered .*--gebp-tile"):
        print_c(parse(gemm_text(8, 8, 8)))
    with pytest.raises(CEmitError, match="'rtile.gebp'.*run --lower-gebp first"):
        print_c(
            parse(
                "func.func @g(%a: tensor<4x2xi8>, %b: tensor<2x8xi8>) -> tensor<4x8xi32> {\n"
                "  %c = rtile.gebp %a, %b geom <rm4 rn1 lanes8> cover <m_full 4 n_full 8 "
                "tail [] band 0> : tensor<4x2xi8>, tensor<2x8xi8> -> tensor<4x8xi32>\n"
                "  func.return %c : tensor<4x8xi32>\n}\n"
            )
        )


def test_autotune_also_times_narrower_vectors() -> None:
    """The tuner can find the 8-lane tile the 16-lane default misses (ANCHORS.md)."""
    from tigris_ir.rtile import model as rt
    from tigris_ir.rtile.autotune import candidates
    from tigris_ir.rtile.targets import get_target

    avx512 = get_target("avx512")
    found = candidates(avx512, 3136, 24)
    assert found[0] == rt.default(avx512, 3136, 24)
    assert rt.Geometry(4, 3, 8) in found
    assert all(rt.check(avx512, 3136, 24, g) is None for g in found)
    assert len(set(found)) == len(found)
