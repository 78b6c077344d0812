"""The register-tile passes: gebp-tile, autotune, lower-gebp.

gebp-tile is held against the model (`register_tile.default` / `check`) site by
site; lower-gebp's kernel ops against the cover they state, on shapes that
cover every part of a cover (the C they print is run in test_gebp_c.py and
test_gebp_pipeline.py). Timings are never asserted; autotune's timer is
replaced where a test only needs to know whether it ran.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects, memref
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, TensorType, f32, i32, i64
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.backend.c import conv as c_conv
from tigris_ir.backend.c.band import CLoweringError
from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.rtile import (
    DIRECT,
    CoverAttr,
    GeomAttr,
    KBlocksOp,
    KernelOp,
    MicroOp,
    PackOp,
    PanelsOp,
)
from tigris_ir.loops.machine import LoopIRError
from tigris_ir.passes.gebp_tile import GebpTilePass, gemm_site
from tigris_ir.passes.lower_gebp import LowerGebpPass
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.rtile import autotune as tune
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import lower as rtile_lower
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
    # the decision is visible: the pass saw the site for avx2 and gave it no tile
    assert "rtile.geom" not in op.attributes and "rtile.cover" not in op.attributes
    assert op.attributes["rtile.target"] == StringAttr("avx2")


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


# ------------------------------------------------------------------ lower-gebp


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


# (m, n, k, geometry): every tail case with and without a band
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


def test_the_cases_cover_every_tail_and_band():
    seen = {category(g, m, n) for m, n, _, g in COVER_CASES}
    tails = ("no tail", "partial tail", "full tail", "full+partial tail")
    assert {f"{t}, {b}" for t in tails for b in ("band", "no band")} <= seen


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize(("m", "n", "k", "g"), COVER_CASES, ids=str)
def test_the_kernel_ops_are_the_cover(m: int, n: int, k: int, g: G, int8: bool):
    """The sweeps of `rtile.kernel` are the geometry's cover: the full panels,
    one panel of the column tail whose last vector is the partial one, row
    edge tiles for the leftover rows; the panels are what the weights are
    packed in."""
    plan = rk.plan(tg.avx2, g, k, int8, "rows")
    site = Block(arg_types=[TensorType(i32 if int8 else f32, [m, n])]).args[0]
    kern = rtile_lower.kernel(site, g, plan, k, n, "rows")
    kern.verify()
    cv = rt.cover(g, m, n)
    sweeps = kern.walk_of(PanelsOp)
    assert (sweeps[0].lo.value.data, sweeps[0].hi.value.data) == (0, cv.n_full)
    rows = plan.rows
    assert rows == (g.rm if int8 else rk.micro_rows(tg.avx2, g))
    assert sweeps[0].micro.geom.geometry == G(rows, g.rn, g.lanes)
    assert sweeps[0].micro.edge_rows == tuple(range(1, rows))
    if cv.tail_widths:
        tail = sweeps[1].micro
        assert tail.geom.geometry == G(rows, len(cv.tail_widths), g.lanes)
        assert tail.last.value.data == cv.tail_widths[-1]
        assert sweeps[1].hi.value.data == n
    assert len(sweeps) == 1 + bool(cv.tail_widths)
    assert bool(kern.walk_of(KBlocksOp)) != int8
    assert bool(kern.walk_of(PackOp)) == int8
    if g.lanes != 8 and (int8 or g.lanes < 4):  # no C kernel of that width: said so
        with pytest.raises(CLoweringError, match="lanes|vector unit"):
            c_conv.panels_of(kern, tg.avx2)
        return
    p = c_conv.panels_of(kern, tg.avx2)
    packed = c_conv.pack_b(p, np.arange(k * n, dtype=np.float32).reshape(k, n))
    assert packed.size == p.kp * (cv.n_full + len(cv.tail_widths) * g.lanes)


@pytest.mark.parametrize(
    ("target", "g", "m", "rows"),
    [
        (tg.avx512, G(4, 1, 16), None, 8),  # 4 accumulators of 8 in flight: two passes
        (tg.avx512, G(4, 2, 16), None, 4),  # 8: the pipeline is full
        (tg.avx512, G(4, 1, 16), 6, 4),  # the site has no 8 rows
        (tg.avx512, G(2, 1, 16), None, 2),  # rows asked for are kept
        (tg.avx2, G(4, 1, 8), None, 8),  # resident floor 10 of 16 registers
        (replace(tg.avx2, vector_registers=9), G(4, 1, 8), None, 4),  # 10 > 9
        (replace(tg.avx512, fma_chains=1), G(4, 1, 16), None, 4),
        (replace(tg.avx512, fma_chains=12), G(4, 1, 16), None, 12),
    ],
)
def test_micro_rows_fill_the_fma_pipeline(target: tg.Target, g: G, m: int | None, rows: int):
    assert rk.micro_rows(target, g, m) == rows
    plan = rk.plan(target, g, 64, False, "im2col", m)
    assert plan.rows == rows and plan.mc % rows == 0
    assert rk.plan(target, g, 64, True, "rows", m).rows == g.rm  # int8: the geometry's rows


@pytest.mark.parametrize(
    ("m", "blocked"),
    [(1, False), (4, False), (5, True), (None, True)],  # one row tile of rm4 rn6: 4 rows
)
def test_one_row_tile_sweeps_the_whole_contraction(m: int | None, blocked: bool):
    """A float site of no more rows than one micro-tile (a fully connected
    layer's one row) takes no K blocks: no later tile would reuse a block."""
    g, k = G(min(4, m or 4), 6, 16), 1280
    plan = rk.plan(tg.avx512, g, k, False, "rows", m)
    assert plan.kc == (rk._k_block(g, k) if blocked else k)
    assert rk._k_block(g, k) < k


def plan_module(text: str, target: str) -> ModuleOp:
    """A gemm of `text` planned (lower-to-loops), register-tiled and lowered."""
    module = parse(text)
    ctx = context()
    LowerToLoopsPass(budget=1 << 20).apply(ctx, module)
    GebpTilePass(target=target).apply(ctx, module)
    LowerGebpPass().apply(ctx, module)
    module.verify()
    return module


def const_gemm_text(m: int, n: int, k: int) -> str:
    """A gemm whose B and C are weights (constants of the plan)."""
    a, b, c, y = tensor((m, k)), tensor((k, n)), tensor((n,)), tensor((m, n))
    return (
        f"func.func @f(%a: {a}) -> {y} {{\n"
        f'  %b = nn.weight "b" : {b}\n'
        f'  %c = nn.weight "c" : {c}\n'
        f"  %y = nn.gemm %a, %b, %c : ({a}, {b}, {c}) -> {y}\n"
        f"  func.return %y : {y}\n}}\n"
    )


def test_lower_gebp_states_the_direct_loops_of_a_gemm_of_activations():
    """A gemm whose B is an activation (a function argument) has a geometry
    but its band runs the direct loops: lower-gebp states it and places no
    kernel."""
    module = plan_module(gemm_text(13, 19, 9), "avx2")
    assert not ops_named(module, "rtile.kernel")
    (site,) = [o for o in module.walk() if isinstance(o, nn.GemmOp) and DIRECT in o.attributes]
    assert site.attributes[DIRECT] == StringAttr("B not a constant held whole")


def test_lower_gebp_places_a_kernel_beside_each_tiled_site():
    module = plan_module(const_gemm_text(13, 19, 9), "avx2")
    (kern,) = ops_named(module, "rtile.kernel")
    site = kern.site.owner
    assert isinstance(site, nn.GemmOp) and isinstance(site.parent_op(), loop.BandOp)
    assert (kern.dot.data, kern.k.value.data, kern.n.value.data) == ("fma", 9, 19)
    (micro, tail) = kern.walk_of(MicroOp)
    assert micro.geom.geometry == G(4, 2, 8) and tail.last.value.data == 3
    LowerGebpPass().apply(context(), module)  # again: the kernel is replaced, not doubled
    assert len(ops_named(module, "rtile.kernel")) == 1
    GebpTilePass(target="avx512").apply(context(), module)  # a new geometry drops it
    assert not ops_named(module, "rtile.kernel")


def test_a_tensor_level_module_is_refused():
    module = tile(gemm_text(13, 19, 9), target="avx2")
    with pytest.raises(PassFailedException, match="no loop-level plan.*--lower-to-loops"):
        LowerGebpPass().apply(context(), module)


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


# ------------------------------------------------------------------ the kernels interpreted


def _ds_cnn_plan(int8: bool):
    """DS-CNN (small) planned at 8K, register-tiled for avx2 and lowered."""
    sys.path.insert(0, str(Path(__file__).parent))
    import zoo

    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.plan.ir import main_func

    imp = import_model(zoo.build("ds_cnn", size="small", int8=int8))
    module = imp.module
    ctx = context()
    LowerToLoopsPass(budget=8192).apply(ctx, module)
    GebpTilePass(target="avx2").apply(ctx, module)
    LowerGebpPass().apply(ctx, module)
    PlanArenaPass().apply(ctx, module)
    fn = main_func(module)
    rng = np.random.default_rng(5)
    args = fn.body.block.args
    x = [rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32) for a in args]
    return module, imp.weights, x


@pytest.mark.parametrize("int8", [False, True])
def test_the_interpreter_runs_the_kernels_loops(int8: bool, monkeypatch: pytest.MonkeyPatch):
    """Every register-tiled convolution of the plan is computed by the loops
    of its rtile.kernel (row blocks, K blocks, panels, micro and edge tiles),
    equal to the untiled reference (float32 to 1e-5, int8 exactly)."""
    from tigris_ir.interp import rtile_exec
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func

    module, weights, x = _ds_cnn_plan(int8)
    ran: list[int] = []
    one = rtile_exec._one  # noqa: SLF001

    def counted(kern, a, b):
        ran.append(kern.k.value.data)
        return one(kern, a, b)

    monkeypatch.setattr(rtile_exec, "_one", counted)
    got = run_loop_module(module, weights, x).outputs
    fn = untiled_func(module)
    assert fn is not None
    want = untiled_reference(fn, weights, x)
    for g_, w_ in zip(got, want, strict=True):
        if int8:
            np.testing.assert_array_equal(g_, w_)
        else:
            np.testing.assert_allclose(g_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
    assert 40 in ran and 16 in ran  # the im2col and the pointwise kernels ran


def test_the_interpreter_calls_a_pointwise_kernel_as_its_row_merge_says(
    monkeypatch: pytest.MonkeyPatch,
):
    """lower-gebp states `merge 5` on DS-CNN's pointwise kernels (their bands
    hold whole rows of 5 pixels); the interpreter then calls each kernel once
    per band with all its rows, and without the merge once per output row of
    5 pixels, as the C does: every call's m is what the IR says, and both equal
    the untiled reference."""
    from tigris_ir.interp import rtile_exec
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func

    module, weights, x = _ds_cnn_plan(False)
    pointwise = [
        k for k in ops_named(module, "rtile.kernel")
        if isinstance(k, KernelOp) and (k.k.value.data, k.n.value.data) == (16, 16)
    ]
    assert pointwise and all(k.row_blocks.merge_width == 5 for k in pointwise)
    fn = untiled_func(module)
    assert fn is not None
    want = untiled_reference(fn, weights, x)
    calls: list[int] = []
    one = rtile_exec._one  # noqa: SLF001

    def counted(kern, a, b):
        if kern in pointwise:
            calls.append(a.shape[0])
        return one(kern, a, b)

    monkeypatch.setattr(rtile_exec, "_one", counted)
    for merged in (True, False):
        if not merged:
            for k in pointwise:
                del k.row_blocks.properties["merge"]
        calls.clear()
        got = run_loop_module(module, weights, x).outputs
        for g_, w_ in zip(got, want, strict=True):
            np.testing.assert_allclose(g_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
        # two pointwise convolutions of 25 x 5 pixels each
        assert sum(calls) == 2 * 25 * 5
        if merged:
            assert all(m % 5 == 0 for m in calls) and max(calls) > 5
        else:
            assert calls == [5] * (2 * 25)


def test_a_kernel_whose_loops_miss_rows_is_an_error():
    """A micro-tile without the edge tile a row block needs leaves rows of the
    product uncomputed: the interpreter names the kernel and the rows."""
    from tigris_ir.interp.loop_ir import run_loop_module

    module, weights, x = _ds_cnn_plan(False)
    micro = ops_named(module, "rtile.micro")[0]
    micro.properties["edges"] = DenseArrayBase.from_list(i64, [])
    with pytest.raises(LoopIRError, match=r"rows are left in a row block .* edge tiles of \[\]"):
        run_loop_module(module, weights, x)


# ------------------------------------------------------------------ activations fused


def _fused_plan(name: str, budget: int, model: object = None):
    """A zoo model (small, float32; or `model`, an ONNX model) planned,
    register-tiled for the host, lowered and placed."""
    sys.path.insert(0, str(Path(__file__).parent))
    import zoo

    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.plan.ir import main_func

    imp = import_model(model if model is not None else zoo.build(name, size="small"))
    module = imp.module
    ctx = context()
    LowerToLoopsPass(budget=budget).apply(ctx, module)
    GebpTilePass(target="host").apply(ctx, module)
    LowerGebpPass().apply(ctx, module)
    PlanArenaPass().apply(ctx, module)
    fn = main_func(module)
    x = [
        np.random.default_rng(3).standard_normal(tuple(a.type.get_shape())).astype(np.float32)
        for a in fn.body.block.args
    ]
    return module, imp.weights, x


def test_an_in_place_activation_is_fused_into_the_epilogue():
    """lower-gebp takes the in-place Clip band after a pointwise convolution's
    band into its epilogue (bias_clamp lo 0 hi 6), and after a depthwise
    convolution's band into its `rtile.clamp`, and removes it: the plan has
    fewer Clip bands than the graph has Clips, a second run keeps the fusion,
    and the interpreter and the C (vector and portable) equal the reference."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.dialects.rtile import CLAMP, EpilogueOp, clamp_of
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_gebp import fusable_activation
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary

    module, weights, x = _fused_plan("mobilenet_v2", 64 * 1024)
    fn, ref_fn = main_func(module), untiled_func(module)
    assert ref_fn is not None

    def clamps() -> list[EpilogueOp]:
        return [e for e in fn.walk() if isinstance(e, EpilogueOp) and e.clamp is not None]

    def dw_clamps() -> list[nn.ConvOp]:
        return [o for o in fn.walk() if isinstance(o, nn.ConvOp) and CLAMP in o.attributes]

    fused, dw_fused = clamps(), dw_clamps()
    assert fused and all(e.clamp == (0.0, 6.0) for e in fused)
    # the depthwise convolutions' Clips too, as rtile.clamp
    assert dw_fused and all(o.is_depthwise() and clamp_of(o) == (0.0, 6.0) for o in dw_fused)
    assert all(fusable_activation(o) is None for o in dw_fused)
    clips = sum(isinstance(o, nn.ClipOp) for o in fn.walk())
    assert clips + len(fused) + len(dw_fused) == sum(
        isinstance(o, nn.ClipOp) for o in ref_fn.walk()
    )
    across = 0
    for e in fused:  # the Clip band after the site is gone
        kern = e.parent_op()
        site = kern.site.owner if isinstance(kern, KernelOp) else None
        assert isinstance(site, nn.ConvOp) and fusable_activation(site) is None
        nxt = site.parent_op().next_op if site.parent_op() is not None else None
        while nxt is not None and not isinstance(nxt, loop.BandOp):
            across += isinstance(nxt, memref.DeallocOp)
            nxt = nxt.next_op
    # some of them across the dealloc of another buffer between the two bands
    assert across > 0
    GebpTilePass(target="host").apply(context(), module)  # the same tiles: kept
    LowerGebpPass().apply(context(), module)
    assert len(clamps()) == len(fused) and len(dw_clamps()) == len(dw_fused)
    want = untiled_reference(ref_fn, weights, x)
    got = run_loop_module(module, weights, x).outputs
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
    ins, outs = module_layouts(fn)
    xb = [to_boundary(a, lay) for a, lay in zip(x, ins, strict=True)]
    for variant in ("default", "portable"):
        c_out, _ = run_c(module, weights, xb, variant=variant, strict=True)
        for c_, w_, lay in zip(c_out, want, outs, strict=True):
            w_ = to_boundary(w_, lay)
            np.testing.assert_allclose(c_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
    # another tile would need the removed band back: refused
    other = "avx2" if tg.host_target().isa == "avx512" else "avx512"
    with pytest.raises(PassFailedException, match="fused activation"):
        GebpTilePass(target=other).apply(context(), module)


def _matmul_relu():
    """A float32 network of matrix products over rows followed by
    activations: A [1, 32, 16], MatMul 16 -> 24, Relu, MatMul 24 -> 16,
    Clip(0, 6), MatMul 16 -> 8 (seeded weights). At a 2 KiB budget its rows
    are tiled and the activations run in place."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("MatMul", ["input", "w1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["r1"]),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"]),
        helper.make_node("Clip", ["h2", "lo", "hi"], ["r2"]),
        helper.make_node("MatMul", ["r2", "w3"], ["output"]),
    ]
    inits = [
        w("w1", 16, 24), w("w2", 24, 16), w("w3", 16, 8),
        numpy_helper.from_array(np.array(0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes,
        "matmul_relu",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 32, 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 32, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("case", ["resnet", "matmul"])
def test_an_activation_after_an_add_or_a_matrix_product_is_fused(case: str):
    """lower-gebp takes the in-place Relu band after a float32 Add's band into
    the Add (`rtile.clamp`) and after a Gemm's or MatMul's band into its
    kernel's epilogue (bias_clamp), and removes it: the plan has that many
    fewer Relu bands than the graph has Relus, a second run keeps the fusion,
    and the interpreter and the C (vector and portable) equal the untiled
    reference (onnxruntime's graph, float32 within 1e-5)."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.dialects.rtile import CLAMP, EpilogueOp, clamp_of
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary

    model = _matmul_relu() if case == "matmul" else None
    budget = 2 * 1024 if case == "matmul" else 64 * 1024
    module, weights, x = _fused_plan("resnet", budget, model)
    fn, ref_fn = main_func(module), untiled_func(module)
    assert ref_fn is not None

    def adds() -> list[nn.AddOp]:
        return [o for o in fn.walk() if isinstance(o, nn.AddOp) and CLAMP in o.attributes]

    def products() -> list[EpilogueOp]:
        return [
            e
            for e in fn.walk()
            if isinstance(e, EpilogueOp)
            and e.clamp is not None
            and isinstance(e.parent_op(), KernelOp)
            and isinstance(e.parent_op().site.owner, nn.GemmOp | nn.MatMulOp)  # type: ignore[union-attr]
        ]

    fused = adds() if case == "resnet" else products()
    bounds = {clamp_of(o) if isinstance(o, nn.AddOp) else o.clamp for o in fused}
    assert fused and bounds == ({(0.0, None)} if case == "resnet" else {(0.0, None), (0.0, 6.0)})
    relus = sum(isinstance(o, nn.ReluOp | nn.ClipOp) for o in fn.walk())
    ref_relus = sum(isinstance(o, nn.ReluOp | nn.ClipOp) for o in ref_fn.walk())
    fused_sites = [e for e in fn.walk() if isinstance(e, EpilogueOp) and e.clamp is not None]
    dw = [o for o in fn.walk() if isinstance(o, nn.ConvOp) and CLAMP in o.attributes]
    assert relus + len(adds()) + len(fused_sites) + len(dw) == ref_relus
    LowerGebpPass().apply(context(), module)  # a second run keeps the fusion
    assert len(adds() if case == "resnet" else products()) == len(fused)
    want = untiled_reference(ref_fn, weights, x)
    got = run_loop_module(module, weights, x).outputs
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
    ins, outs = module_layouts(fn)
    xb = [to_boundary(a, lay) for a, lay in zip(x, ins, strict=True)]
    for variant in ("default", "portable"):
        c_out, _ = run_c(module, weights, xb, variant=variant, strict=True)
        for c_, w_, lay in zip(c_out, want, outs, strict=True):
            w_ = to_boundary(w_, lay)
            np.testing.assert_allclose(c_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))


def test_window_run_rule() -> None:
    """A convolution reads its pixels' windows in place (`window`) where it is
    float32, of one group, undilated along the width and its kernel rows are
    runs of at least WINDOW_MIN_RUN values; its K blocks are then those rows."""
    assert rk.window_run("float32", 1, 1, 3, 16) == 48
    assert rk.window_run("float32", 1, 1, 1, 16) == 16
    assert rk.window_run("float32", 1, 1, 3, 3) is None  # 9 < 16: gathered
    assert rk.window_run("int8", 1, 1, 3, 16) is None
    assert rk.window_run("float32", 2, 1, 3, 16) is None
    assert rk.window_run("float32", 1, 2, 3, 16) is None
    target = tg.get_target("zen4").float_file()
    g = rt.Geometry(4, 2, 8)
    p = rk.plan(target, g, 144, False, "window", 9216, 48)
    assert (p.kc, p.kp) == (48, 144)
    assert p.scratch == rk.plan(target, g, 144, False, "im2col", 9216).scratch
    with pytest.raises(ValueError, match="whole kernel rows"):
        rk.plan(target, g, 144, False, "window", 9216, 40)
    with pytest.raises(ValueError, match="whole kernel rows"):
        rk.plan(target, g, 144, True, "window", 9216, 48)


def test_depthwise_blocks_are_as_wide_as_the_band_tiles():
    """A float32 depthwise convolution's pixel blocks (rtile.depthwise pixels)
    are DW_PIXELS, or the band buffer's width where a 2D grid cuts the width
    narrower (or the output's where it is narrower), so a whole tile's row is
    one whole block; MobileNetV2 (small) at 10 KiB has such a grid, and its C
    equals the untiled reference."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.dialects.rtile import depthwise_of
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary

    module, weights, x = _fused_plan("mobilenet_v2", 10240)
    fn = main_func(module)
    seen = set()
    for o in fn.walk():
        plan = depthwise_of(o)
        if plan is None:
            continue
        band = o.parent_op()
        assert isinstance(band, loop.BandComputeOp)
        out = band.outputs[0]
        held = out.owner.source if isinstance(out.owner, memref.SubviewOp) else out
        cols = held.type.get_shape()[-2]
        width = nn.shape_of(o.results[0])[-2]
        narrowest = min(w for w in (cols, width) if w > 0)
        pixels = plan.pixels
        assert pixels == min(rk.DW_PIXELS, narrowest), (cols, width, pixels)
        seen.add((0 < cols < width, pixels < rk.DW_PIXELS))
    assert (True, True) in seen, "a grid tile narrower than a block"
    ref_fn = untiled_func(module)
    assert ref_fn is not None
    want = untiled_reference(ref_fn, weights, x)
    ins, outs = module_layouts(fn)
    got, _ = run_c(module, weights, [to_boundary(a, lay) for a, lay in zip(x, ins)], strict=True)
    for g_, w_, lay in zip(got, want, outs, strict=True):
        w_ = to_boundary(w_, lay)
        np.testing.assert_allclose(g_, w_, rtol=0, atol=1e-5 * float(np.abs(w_).max()))
