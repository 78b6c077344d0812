"""The SIMD int8 pools and Add / Sub of the Cortex-M targets (`rtile.lanes`).

`lower-gebp` gives a Cortex-M plan's int8 max and average pools and Add / Sub
the target's SIMD unit (the DSP extension on M4 and M7, Helium on M55) as the
`rtile.lanes` attribute; the C prints that unit's kernel beside the portable
loop. Each case is a one-layer model in QDQ form, channel counts that are no
multiple of 4 or 16, with pads and strides, int8 and uint8, both values of
count_include_pad and both fixed-point rules; it runs under QEMU on each CPU's
board and must equal the untiled reference bit for bit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris_ir.backend.c import cortex
from tigris_ir.rtile.targets import get_target

MISSING = cortex.tools_available()
GCC = shutil.which("arm-none-eabi-gcc")
CORTEX = ("cortex-m4", "cortex-m7", "cortex-m55")
LANES = {"cortex-m4": "dsp", "cortex-m7": "dsp", "cortex-m55": "mve"}


def _model(
    op: str,
    shape: Sequence[int],
    attrs: dict[str, Any],
    *,
    dt: int = TensorProto.INT8,
    zx: int = 3,
    zy: int = -5,
    sy: float = 0.03,
    second: bool = False,
) -> onnx.ModelProto:
    """`op` between QuantizeLinear / DequantizeLinear pairs: the input by
    scale 0.05 and zero point zx, the output by sy and zy; with `second`, a
    second input (scale 0.08, zero point 1) as its second operand."""
    npdt = np.int8 if dt == TensorProto.INT8 else np.uint8
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "sx"),
        numpy_helper.from_array(np.array(zx, npdt), "zx"),
        numpy_helper.from_array(np.array(sy, np.float32), "sy"),
        numpy_helper.from_array(np.array(zy, npdt), "zy"),
        numpy_helper.from_array(np.array(0.08, np.float32), "sb"),
        numpy_helper.from_array(np.array(1, npdt), "zb"),
    ]
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(shape))]
    nodes = [
        helper.make_node("QuantizeLinear", ["input", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
    ]
    operands = ["xd"]
    if second:
        inputs.append(helper.make_tensor_value_info("input2", TensorProto.FLOAT, list(shape)))
        nodes += [
            helper.make_node("QuantizeLinear", ["input2", "sb", "zb"], ["bq"]),
            helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["bd"]),
        ]
        operands.append("bd")
    nodes += [
        helper.make_node(op, operands, ["yf"], **attrs),
        helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, op.lower(), inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def _pool(k: int, s: int, p: Sequence[int], **kw: int) -> dict[str, Any]:
    return dict(kernel_shape=[k, k], strides=[s, s], pads=list(p), **kw)


U8 = TensorProto.UINT8
CASES: dict[str, tuple[str, Sequence[int], dict[str, Any], dict[str, Any]]] = {
    # a max pool keeps its input's quantization (the ONNX QDQ rule)
    "max-3x3s2p1-c23": ("MaxPool", (1, 23, 11, 11), _pool(3, 2, [1, 1, 1, 1]),
                        dict(zy=3, sy=0.05)),
    "max-2x2s2-c37-u8": ("MaxPool", (1, 37, 8, 10), _pool(2, 2, [0, 0, 0, 0]),
                         dict(dt=U8, zx=130, zy=130, sy=0.05)),
    "max-3x3s1p-asym-c5": ("MaxPool", (1, 5, 7, 9), _pool(3, 1, [1, 0, 2, 1]),
                           dict(zy=3, sy=0.05)),
    # more whole Helium vectors than one step holds (4), no channel left
    "max-3x3s2p1-c80": ("MaxPool", (1, 80, 5, 5), _pool(3, 2, [1, 1, 1, 1]),
                        dict(zy=3, sy=0.05)),
    "avg-3x3s1p1-c48": ("AveragePool", (1, 48, 6, 6), _pool(3, 1, [1, 1, 1, 1]), {}),
    "avg-3x3s2p1-exclude-c23": ("AveragePool", (1, 23, 11, 11),
                                _pool(3, 2, [1, 1, 1, 1], count_include_pad=0), {}),
    "avg-3x3s2p1-include-c21": ("AveragePool", (1, 21, 11, 11),
                                _pool(3, 2, [1, 1, 1, 1], count_include_pad=1), {}),
    "avg-2x2s1-c37-u8": ("AveragePool", (1, 37, 6, 7), _pool(2, 1, [0, 1, 1, 0]),
                         dict(dt=U8, zx=120, zy=135)),
    "avg-5x5s2p2-c19": ("AveragePool", (1, 19, 12, 12),
                        _pool(5, 2, [2, 2, 2, 2], count_include_pad=0), dict(sy=0.01)),
    "gap-9x9-c23": ("GlobalAveragePool", (1, 23, 9, 9), {}, dict(sy=0.01)),
    "gap-5x7-c37-u8": ("GlobalAveragePool", (1, 37, 5, 7), {}, dict(dt=U8, zx=120, zy=125)),
    # a band of rows at a time: the sums accumulated across bands
    "gap-48x48-c19": ("GlobalAveragePool", (1, 19, 48, 48), {}, dict(sy=0.002)),
    "add-c23": ("Add", (1, 23, 7, 5), {}, dict(second=True, sy=0.1)),
    "sub-c21": ("Sub", (1, 21, 5, 7), {}, dict(second=True, sy=0.1)),
    "add-c37-u8": ("Add", (1, 37, 3, 5), {}, dict(second=True, dt=U8, zx=120, zy=128, sy=0.1)),
}


def _plan(cpu: str, case: str):
    from xdsl.context import Context

    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.passes.requant import set_requant

    op, shape, attrs, kw = CASES[case]
    imp = import_model(_model(op, shape, attrs, **kw))
    set_requant(imp.module, "fixed")
    LowerToLoopsPass(budget=64 * 1024).apply(Context(), imp.module)
    tile_and_lower(imp.module, cpu)
    PlanArenaPass(budget=64 * 1024).apply(Context(), imp.module)
    return imp


def _lane_ops(imp) -> list[tuple[str, str | None]]:
    from xdsl.dialects.builtin import StringAttr

    from tigris_ir.dialects import nn
    from tigris_ir.dialects.rtile import LANES
    from tigris_ir.plan.ir import main_func

    kinds = nn.MaxPoolOp | nn.AveragePoolOp | nn.GlobalAveragePoolOp | nn.AddOp | nn.SubOp
    out = []
    for op in main_func(imp.module).walk():
        if isinstance(op, kinds):
            attr = op.attributes.get(LANES)
            out.append((op.name, attr.data if isinstance(attr, StringAttr) else None))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cpu", CORTEX)
def test_lower_gebp_states_the_lanes(cpu: str, case: str):
    """The pass writes the CPU's unit on every int8 pool and Add / Sub of the
    plan; the x86 targets and the host get none (their loops stay plain)."""
    ops = _lane_ops(_plan(cpu, case))
    assert ops and all(lanes == LANES[cpu] for _, lanes in ops)
    assert all(lanes is None for _, lanes in _lane_ops(_plan("avx2", case)))


def test_a_cpu_without_the_dsp_extension_keeps_the_portable_loops(monkeypatch):
    """A Cortex-M description without DSP nor MVE selects no lanes: the
    portable fallback, never an instruction the CPU lacks."""
    from dataclasses import replace

    from tigris_ir.rtile import targets as tg

    assert tg.cortex_m4.mcu is not None
    bare = replace(tg.cortex_m4, mcu=replace(tg.cortex_m4.mcu, dsp=False))
    monkeypatch.setitem(tg.PRESETS, "cortex-m4", bare)
    assert bare.int8_lanes is None
    for case in ("max-3x3s2p1-c23", "avg-3x3s2p1-exclude-c23", "add-c23"):
        assert all(lanes is None for _, lanes in _lane_ops(_plan("cortex-m4", case)))


@pytest.mark.skipif(GCC is None, reason="arm-none-eabi-gcc not installed (gcc-arm-none-eabi)")
@pytest.mark.parametrize("cpu", CORTEX)
def test_the_kernels_cross_compile_with_their_instructions(cpu: str, tmp_path: Path):
    """Each case's C builds with exactly the target's flags, -Wall -Wextra
    -Werror, and gcc's assembly holds the unit's instructions (SEL after
    SSUB8 for the DSP max, SXTAB16 for its sums, SMMLAR for the Add's
    requantization; VMAX.S8, VADD.I16 and VQRDMULH on Helium)."""
    from tigris_ir.backend.c.network import print_network

    assert GCC is not None
    target = get_target(cpu)
    want = {
        "dsp": {"max-3x3s2p1-c23": "sel", "avg-3x3s2p1-exclude-c23": "sxtab16",
                "add-c23": "smmlar"},
        "mve": {"max-3x3s2p1-c23": "vmax.s8", "avg-3x3s2p1-exclude-c23": "vadd.i16",
                "add-c23": "vqrdmulh.s32"},
    }[LANES[cpu]]
    for case, insn in want.items():
        imp = _plan(cpu, case)
        src = tmp_path / f"{case}.c"
        src.write_text(print_network(imp.module, weights=imp.weights, verify=False).c)
        asm = tmp_path / f"{case}.s"
        flags = ["-std=c99", "-O2", "-ffp-contract=off", *target.cflags()]
        cmd = [GCC, *flags, "-Wall", "-Wextra", "-Werror", "-S", str(src), "-o", str(asm)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        # gcc writes "\tinsn\t", an asm statement's template "\tinsn "
        assert re.search(rf"\t{re.escape(insn)}\s", asm.read_text()), (case, insn)


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
@pytest.mark.parametrize(
    ("case", "short"),
    # a max pool requantizes nothing: it has no general-rule variant
    [(c, sh) for c in sorted(CASES) for sh in (True, False) if sh or not c.startswith("max")],
)
@pytest.mark.parametrize("cpu", CORTEX)
def test_lanes_on_the_board_are_bit_exact(
    cpu: str, case: str, short: bool, monkeypatch: pytest.MonkeyPatch
):
    """Under QEMU on the CPU's board, against the untiled reference: with
    the short fixed-point form where it holds, and with it refused (the
    general rule) for the average pools and Add / Sub."""
    from tigris_ir.backend.c import ops
    from tigris_ir.backend.c.network import print_network
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    if not short:
        monkeypatch.setattr(ops, "short_form", lambda *a: False)
    imp = _plan(cpu, case)
    source = print_network(imp.module, weights=imp.weights, verify=False)
    guard = "#ifdef TG_MVE" if LANES[cpu] == "mve" else "#ifdef TG_DSP"
    assert guard in source.c
    ins, outs = module_layouts(main_func(imp.module))
    rng = np.random.default_rng(len(case))
    # wide enough to saturate at both ends of the int8 range
    x = [(rng.standard_normal(p.shape) * 4).astype(p.dtype) for p in source.inputs]
    ref_fn = untiled_func(imp.module)
    assert ref_fn is not None
    ref = untiled_reference(ref_fn, imp.weights, [to_internal(a, s) for a, s in zip(x, ins)])
    run = cortex.run_on_target(source, get_target(cpu), x)
    for y, r, lay in zip(run.outputs, ref, outs):
        assert y.tobytes() == to_boundary(r, lay).tobytes()
