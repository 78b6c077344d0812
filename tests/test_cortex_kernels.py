"""The Cortex-M int8 kernels (`smlad` on the DSP extension, `vmladava` on Helium).

On this machine: their portable branch (what a compiler targeting neither
extension builds, over the same packed panels and corrected bias) against
numpy, and the printed C of a network cross-compiled with arm-none-eabi-gcc at
the target's flags, warnings as errors, the instruction present in the object.
Under QEMU (when installed): a small MobileNetV2 (pointwise and im2col GEBP,
depthwise of strides 1 and 2, the classifier) on each CPU, bit-exact against
the untiled reference, requantized in fixed point (the Cortex-M default;
test_cortex_run runs the float32 rule).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tigris_ir.backend.c import cortex, gebp
from tigris_ir.rtile import autotune
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.targets import get_target

GCC = shutil.which("arm-none-eabi-gcc")
MISSING = cortex.tools_available()
CORTEX = ("cortex-m4", "cortex-m7", "cortex-m55")
INSTRUCTION = {"smlad": "smlad", "vmladava": "vmladava.s8"}


@pytest.mark.parametrize("name", CORTEX)
@pytest.mark.parametrize(("m", "n", "k"), [(13, 10, 27), (4, 2, 4), (1, 7, 40), (9, 16, 33)])
def test_portable_branch_is_bit_exact(name: str, m: int, n: int, k: int):
    """Without the extension the kernel's plain loops read B in the order
    the instruction's packing left it (k0 k2 k1 k3 for smlad; groups of
    sixteen for vmladava, whose bias took the rows' offset off)."""
    target = get_target(name)
    g = rt.default(target.int8_file(), m, n)
    assert g is not None
    p = gebp.Problem(m, n, k, "int8")
    kernel = gebp.build(g, p, target)
    assert kernel.plan.dot == target.int8_dot
    a, b, bias, mult = autotune.operands(p, seed=k)
    assert mult is not None
    call, y = autotune.call_of(kernel, a, b, bias, mult)
    call()
    acc = a.astype(np.int32) @ b.astype(np.int32) + bias
    want = np.clip(np.rint(acc.astype(np.float32) * mult), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(y, want)


def _plan(name: str, model: str, tmp: Path, requant: str = "float"):
    from xdsl.context import Context

    from tests import zoo
    from tigris_ir.frontend.onnx_import import import_file
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.passes.requant import set_requant

    path = tmp / f"{model}.onnx"
    zoo.write(model, path, int8=True)
    imp = import_file(path)
    set_requant(imp.module, requant)
    budget = 64 * 1024
    LowerToLoopsPass(budget=budget).apply(Context(), imp.module)
    tile_and_lower(imp.module, name)
    PlanArenaPass(budget=budget).apply(Context(), imp.module)
    return imp


def _network_c(name: str, model: str, tmp: Path) -> str:
    from tigris_ir.backend.c.network import print_network

    imp = _plan(name, model, tmp)
    return print_network(imp.module, weights=imp.weights, verify=False).c


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
@pytest.mark.parametrize("requant", ["fixed"])  # float32 requantization: test_cortex_run
@pytest.mark.parametrize("short", [True, False])
@pytest.mark.parametrize("name", CORTEX)
def test_mobilenet_on_the_board_is_bit_exact(
    name: str, requant: str, short: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Every layer of this model passes `band.short_form` (the kernels'
    short fixed-point form); with it refused everywhere, the general rule
    (saturating left shift, 64-bit rounding, sign-dependent divide) runs."""
    from tigris_ir.backend.c import arm_m, ops
    from tigris_ir.backend.c.network import print_network

    if not short:
        monkeypatch.setattr(arm_m, "short_form", lambda *a: False)
        monkeypatch.setattr(ops, "short_form", lambda *a: False)
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    imp = _plan(name, "mobilenet_v2_035", tmp_path, requant)
    source = print_network(imp.module, weights=imp.weights, verify=False)
    assert ("__smlad" if name != "cortex-m55" else "vmladavaq_s8") in source.c
    assert "tg_adw_3x3s2x2" in source.c  # the CPU's depthwise kernel, stride 2
    assert ("tigris_rq_short(c0_0" in source.c or "TG_FS_M(p_)" in source.c) == short
    assert ("tg_rqx(c0_0" in source.c or "rq[3 * c + 1] = TG_FX_L(p_)" in source.c) != short
    ins, outs = module_layouts(main_func(imp.module))
    rng = np.random.default_rng(3)
    x = [rng.standard_normal(p.shape).astype(p.dtype) for p in source.inputs]
    ref_fn = untiled_func(imp.module)
    assert ref_fn is not None
    internal = [to_internal(a, lay) for a, lay in zip(x, ins)]
    ref = untiled_reference(ref_fn, imp.weights, internal)
    run = cortex.run_on_target(source, get_target(name), x)
    for y, r, lay in zip(run.outputs, ref, outs):
        assert y.tobytes() == to_boundary(r, lay).tobytes()


@pytest.mark.skipif(GCC is None, reason="arm-none-eabi-gcc not installed (gcc-arm-none-eabi)")
@pytest.mark.parametrize("name", CORTEX)
def test_network_cross_compiles_with_the_instruction(name: str, tmp_path: Path):
    """The int8 DS-CNN's C for a Cortex-M target builds with exactly the
    target's flags, -Wall -Wextra -Werror, and its object multiplies with
    the target's instruction (in gcc's assembly: this binutils' objdump
    does not decode MVE)."""
    assert GCC is not None
    target = get_target(name)
    src = tmp_path / "net.c"
    src.write_text(_network_c(name, "ds_cnn", tmp_path))
    asm = tmp_path / "net.s"
    flags = ["-std=c99", "-O2", "-ffp-contract=off", *target.cflags()]
    cmd = [GCC, *flags, "-Wall", "-Wextra", "-Werror", "-S", str(src), "-o", str(asm)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    text = asm.read_text()
    assert f"\t{INSTRUCTION[target.int8_dot]}\t" in text
    # the depthwise convolutions: SMLABB on the DSP extension, VMULLB.S16 on Helium
    assert ("\tvmullb.s16\t" if target.int8_dot == "vmladava" else "\tsmlabb\t") in text


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
@pytest.mark.parametrize("short", [True, False])
@pytest.mark.parametrize("name", ["cortex-m55", "cortex-m7"])
def test_int8_add_lanes_on_the_board(name: str, short: bool, monkeypatch: pytest.MonkeyPatch):
    """gebp-tile marks a Cortex-M plan's int8 Add with its rtile.target; on
    Helium the C adds four elements per step (the operands' tables gathered
    by their bytes, the sum requantized in lanes: the short form, or with it
    refused the general rule), the scalar loop finishing the 486 % 4 left;
    bit-exact against the untiled reference under QEMU. Without MVE the
    scalar loop runs alone."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import StringAttr

    from tests import zoo
    from tigris_ir.backend.c import ops
    from tigris_ir.backend.c.network import print_network
    from tigris_ir.dialects import nn
    from tigris_ir.dialects.rtile import TARGET
    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass, untiled_func
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.passes.requant import set_requant
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    if not short:
        monkeypatch.setattr(ops, "short_form", lambda *a: False)
    g = zoo._Graph(0)
    out = g.add("input", g.conv("input", 6, 6, (1, 1)))
    imp = import_model(zoo.quantize(g.model("add", (1, 6, 9, 9), out), seed=0))
    set_requant(imp.module, "fixed")
    LowerToLoopsPass(budget=64 * 1024).apply(Context(), imp.module)
    tile_and_lower(imp.module, name)
    PlanArenaPass(budget=64 * 1024).apply(Context(), imp.module)
    adds = [op for op in main_func(imp.module).walk() if isinstance(op, nn.AddOp)]
    assert adds and all(op.attributes.get(TARGET) == StringAttr(name) for op in adds)
    source = print_network(imp.module, weights=imp.weights, verify=False)
    lanes = "vldrwq_gather_shifted_offset_s32" in source.c
    assert lanes == (name == "cortex-m55")
    short_lanes = re.search(r"vshlq_r_s32\(vaddq_s32\(v_, s_\), -\d+\)", source.c)
    assert (short_lanes is not None) == (lanes and short)
    ins, outs = module_layouts(main_func(imp.module))
    x = [np.random.default_rng(5).standard_normal(p.shape).astype(p.dtype) for p in source.inputs]
    ref_fn = untiled_func(imp.module)
    assert ref_fn is not None
    ref = untiled_reference(ref_fn, imp.weights, [to_internal(a, s) for a, s in zip(x, ins)])
    run = cortex.run_on_target(source, get_target(name), x)
    for y, r, lay in zip(run.outputs, ref, outs):
        assert y.tobytes() == to_boundary(r, lay).tobytes()
