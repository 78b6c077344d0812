"""The pipeline a user types, on every zoo network (small sizes), float32 and int8:

    tigris-opt model.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights
      --lower-to-loops --gebp-tile=target=host --lower-gebp --plan-arena -t c -o model.c

Every matrix-product band of the plan carries its register tile and kernel
decisions in the IR, and the printed C, built with the network's flags, computes
what the untiled reference computes (float32 to a relative 1e-5, int8 bit for bit).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tigris_ir.backend.c.build import build, execute
from tigris_ir.backend.c.network import CSource, print_network
from tigris_ir.dialects.rtile import GEOM, GeomAttr, KernelOp, MicroOp, kernel_of
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.rtile import decide
from tigris_ir.tools.tigris_opt import main as tigris_opt
from tigris_ir.universe import TIGRIS

sys.path.insert(0, str(Path(__file__).parent))
import zoo  # noqa: E402

PIPELINE = [
    "--tile-stages=budget=64K",
    "--fuse-chains",
    "--backprop-heights",
    "--lower-to-loops",
    "--gebp-tile=target=host",
    "--lower-gebp",
    "--plan-arena",
]
CASES = [(name, int8) for name in zoo.ZOO for int8 in (False, True)]


def _context() -> Context:
    ctx = Context()
    for name, factory in {**get_all_dialects(), **TIGRIS.all_dialects}.items():
        ctx.register_dialect(name, factory)
    return ctx


@dataclass
class Case:
    module: ModuleOp
    model: onnx.ModelProto
    source: CSource
    exe: Path | None = None


def _case(tmp: Path, name: str, int8: bool) -> Case:
    model = zoo.build(name, size="small", int8=int8)
    onnx_path = tmp / f"{name}{'_i8' if int8 else ''}.onnx"
    onnx.save(model, onnx_path)
    ir = onnx_path.with_suffix(".mlir")
    assert tigris_opt([str(onnx_path), *PIPELINE, "-o", str(ir)]) == 0
    module = Parser(_context(), ir.read_text()).parse_module()
    return Case(module, model, print_network(module, base=tmp))


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Case]:
    tmp = tmp_path_factory.mktemp("pipeline")
    got = {(n, q): _case(tmp, n, q) for n, q in CASES}

    def compile_one(case: Case) -> None:
        case.exe = build(case.source, strict=True)

    with ThreadPoolExecutor(max_workers=min(4, max(2, os.cpu_count() or 2))) as pool:
        list(pool.map(compile_one, got.values()))
    return got


def _input(model: onnx.ModelProto, seed: int) -> np.ndarray:
    shape = zoo.input_shape(model)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    return x


@pytest.mark.parametrize(
    ("name", "int8"), CASES, ids=[f"{n}-{'int8' if q else 'f32'}" for n, q in CASES]
)
def test_the_typed_pipeline_prints_c_equal_to_the_untiled_reference(cases, name, int8):
    case = cases[(name, int8)]
    assert case.exe is not None
    sites = list(decide.sites(case.module))
    assert sites, "every zoo network has a matrix product"
    for op, _ in sites:
        if GEOM in op.attributes:  # a site no tile fits runs the generic loops
            assert isinstance(op.attributes[GEOM], GeomAttr)
            kern = kernel_of(op)
            assert isinstance(kern, KernelOp)
            g, micro = op.attributes[GEOM].geometry, kern.walk_of(MicroOp)[0].geom.geometry
            # the micro-tile runs the tile's row passes, one or several at once
            assert (micro.rn, micro.lanes) == (g.rn, g.lanes) and micro.rm % g.rm == 0
        else:
            assert kernel_of(op) is None
    imported = import_model(case.model)
    x = _input(case.model, seed=11)
    want = run_reference(imported.module, imported.weights, [x])
    got, _ = execute(case.source, case.exe, [x])
    assert len(got) == len(want)
    for y, r in zip(got, want):
        assert y.shape == r.shape and y.dtype == r.dtype
        if r.dtype == np.float32 and not int8:
            scale = max(float(np.max(np.abs(r))), 1e-30)
            err = float(np.max(np.abs(y.astype(np.float64) - r))) / scale
            assert err <= 1e-5, f"relative error {err:.2e}"
        else:
            np.testing.assert_array_equal(y, r)


def test_the_c_target_prints_what_the_ir_prints(tmp_path: Path):
    """`-t c -o model.c` at the end of the pipeline writes the unit that
    `print_network` makes of the pipeline's IR."""
    model = zoo.build("ds_cnn", size="small", int8=True)
    path = tmp_path / "ds.onnx"
    onnx.save(model, path)
    assert tigris_opt([str(path), *PIPELINE, "-o", str(tmp_path / "ds.mlir")]) == 0
    assert tigris_opt([str(path), *PIPELINE, "-t", "c", "-o", str(tmp_path / "ds.c")]) == 0
    module = Parser(_context(), (tmp_path / "ds.mlir").read_text()).parse_module()
    assert print_network(module, base=tmp_path).c == (tmp_path / "ds.c").read_text()


def test_a_requested_geometry_on_a_band_is_honoured_or_declined(tmp_path: Path, capsys):
    """`rtile.request` on the op of a band: a geometry `check` accepts is the
    band's tile and its micro-kernel is in the C; one it refuses is declined
    with the rule, and the band keeps the model's default."""
    from tigris_ir.dialects.rtile import REQUEST
    from tigris_ir.passes.gebp_tile import GebpTilePass
    from tigris_ir.passes.lower_gebp import LowerGebpPass
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass

    model = zoo.build("ds_cnn", size="small")
    imported = import_model(model)
    module = imported.module
    LowerToLoopsPass(budget=65536).apply(Context(), module)
    convs = [op for op, s in decide.sites(module) if s.kind == "1x1 conv"]
    assert len(convs) >= 2
    convs[0].attributes[REQUEST] = GeomAttr(2, 2, 8)  # n = 16: fits
    convs[1].attributes[REQUEST] = GeomAttr(4, 3, 8)  # 24 columns > 16: declined
    GebpTilePass(target="avx2").apply(Context(), module)
    LowerGebpPass().apply(Context(), module)
    PlanArenaPass().apply(Context(), module)
    err = capsys.readouterr().err
    assert "declined the requested geometry rm4 rn3 lanes8" in err
    assert "falls back to the default rm4 rn2 lanes8" in err
    assert convs[0].attributes[GEOM] == GeomAttr(2, 2, 8)
    assert convs[1].attributes[GEOM] == GeomAttr(4, 2, 8)
    src = print_network(module, weights=imported.weights)
    assert "for (; i + 2 <= m; i += 2)" in src.c  # two-row passes: the request's
    assert "for (; i + 4 <= m; i += 4)" in src.c  # four-row ones: the default's


@pytest.mark.parametrize("budget", ["16K", "64K"])
def test_bands_of_varying_rows_keep_their_register_tile(budget: str) -> None:
    """A band whose rows vary has a dynamic extent on its memref; its site's m is
    the rows the buffer holds, so every matrix product still gets a register tile
    (a negative m would leave it without one and print the scalar direct loop)."""
    from xdsl.dialects.builtin import MemRefType

    from tigris_ir.dialects import loop
    from tigris_ir.passes.gebp_tile import GebpTilePass
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.plan.memory import parse_budget

    module = import_model(zoo.build("mobilenet_v2", size="small"), origin="mnv2").module
    LowerToLoopsPass(budget=parse_budget(budget)).apply(Context(), module)
    GebpTilePass().apply(Context(), module)
    PlanArenaPass().apply(Context(), module)
    found = list(decide.sites(module))
    dynamic = 0
    for op, site in found:
        parent = op.parent_op()
        if isinstance(parent, loop.BandOp):
            ty = parent.outputs[0].type
            assert isinstance(ty, MemRefType)
            dynamic += any(d < 0 for d in ty.get_shape())
        assert 0 < site.m <= 1 << 20, (op.name, site)
        assert isinstance(op.attributes.get(GEOM), GeomAttr), (op.name, site)
    assert found and dynamic, "the plan should hold bands of varying rows"
