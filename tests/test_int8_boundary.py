"""The int8 boundary (`boundary{kind=int8}`, `--boundary int8`).

A plan takes the model's quantized input as it is (int8 or uint8,
channels-last) and gives the quantized output: the QuantizeLinear at the
input and the DequantizeLinear at the output are absorbed, no float and no
transpose are left at the boundary. Checked against onnxruntime on the
original float-boundary model fed the dequantized input, the plan against
the untiled reference bit for bit, the memory the planner counts, the C
without floating point (cross-compiled for a Cortex-M0, which has no FPU),
and the diagnostics of models that break the rule.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import zoo
from ops_oracle import lowered, same
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.backend.c.build import run_c
from tigris_ir.backend.c.network import print_network
from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model, module_io
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.boundary import is_int8_boundary, set_int8_boundary
from tigris_ir.passes.requant import set_requant
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_budget, min_fast_budget, plan
from tigris_ir.reference import kernels as K
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime

pytest.importorskip("onnxruntime")


def _int8(name: str, requant: str = "float"):
    model = zoo.build(name, size="small", int8=True)
    imported = import_model(model, origin=name)
    set_requant(imported.module, requant)
    set_int8_boundary(imported.module)
    return model, imported


def _quantized_input(module, seed: int) -> np.ndarray:
    fn = main_func(module)
    arg = fn.body.block.args[0]
    dt = nn.dtype_of(arg)
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max + 1, nn.shape_of(arg)).astype(dt)


def test_the_boundary_is_the_quantized_tensors_channels_last() -> None:
    model, imported = _int8("mobilenet_v2_035")
    module = imported.module
    fn, _, in_lay, _, out_lay = module_io(module)
    assert is_int8_boundary(module)
    assert in_lay == ["nhwc"] and out_lay == ["plain"]
    (arg,) = fn.body.block.args
    assert nn.dtype_of(arg) == np.int8 and nn.quant_of(arg) is not None
    assert nn.shape_of(arg) == (1, 32, 32, 3)
    (out,) = fn.function_type.outputs.data
    assert nn.dtype_of(out) == np.int8 and nn.quant_of(out) is not None
    assert not any(isinstance(op, nn.QuantizeOp | nn.DequantizeOp) for op in module.walk())
    module.verify()
    text = str(module)
    assert "tensor<1x32x32x3xi8, #nn.q<" in text and 'nn.boundary = "int8"' in text


@pytest.mark.parametrize(("name", "requant"), [("mobilenet_v2_035", "float"), ("ds_cnn", "float")])
def test_against_onnxruntime_on_the_dequantized_input(name: str, requant: str) -> None:
    """onnxruntime runs the original model on the dequantized int8 input; our
    int8 output, dequantized, is within 1 LSB."""
    model, imported = _int8(name, requant)
    fn = main_func(imported.module)
    (arg,) = fn.body.block.args
    qx, qy = nn.quant_of(arg), nn.quant_of(fn.function_type.outputs.data[0])
    assert qx is not None and qy is not None
    xq = _quantized_input(imported.module, 3)
    (yq,) = run_reference(imported.module, imported.weights, [xq])
    assert yq.dtype == np.int8
    xf = K.dequantize(xq, scale=qx.scale_value, zero_point=qx.zp_value)
    feeds = {"input": np.ascontiguousarray(np.moveaxis(xf, -1, 1))}
    yf = K.dequantize(yq, scale=qy.scale_value, zero_point=qy.zp_value)
    report = compare_with_onnxruntime(model.SerializeToString(), feeds, [yf], ["output"])
    assert report.diffs[0].quantized and report.ok, report.text


@pytest.mark.parametrize("requant", ["float", "fixed"])
def test_plans_bit_exact_in_the_interpreter_and_the_c(requant: str) -> None:
    _, imported = _int8("ds_cnn", requant)
    module, weights = imported.module, imported.weights
    xq = _quantized_input(module, 5)
    (ref,) = run_reference(module, weights, [xq])
    b = min_budget(build_view(main_func(module)).graph)
    low = lowered(module, b)
    res = run_loop_module(low, weights, [xq])
    same(res.outputs[0], ref, "interpreter")
    (got,), _ = run_c(low, weights, [xq], strict=True)
    same(got, ref, "C")


def test_the_input_counts_one_byte_per_element() -> None:
    """MobileNetV2-0.35 at 32x32: the input is 3 KiB as int8, 12 KiB as float32."""
    model = zoo.build("mobilenet_v2_035", size="small", int8=True)
    flt = import_model(model, origin="m").module
    i8 = import_model(model, origin="m").module
    set_int8_boundary(i8)
    g_f = build_view(main_func(flt)).graph
    g_i = build_view(main_func(i8)).graph
    in_f = g_f.tensors[g_f.inputs[0]].nbytes
    in_i = g_i.tensors[g_i.inputs[0]].nbytes
    assert (in_f, in_i) == (4 * 32 * 32 * 3, 32 * 32 * 3)
    # one SRAM (no slow memory), the input resident: the float input and its
    # quantized copy against the int8 input alone
    single_f = min_fast_budget(g_f, 0, False, False)
    single_i = min_fast_budget(g_i, 0, False, False)
    assert single_i < single_f
    assert plan(g_i, single_i, slow_budget=0).fits


def test_no_float_and_no_transpose_in_the_c() -> None:
    """Fixed-point requantization and the int8 boundary: the C cross-compiles
    for a Cortex-M0 (no FPU, soft-float ABI) without one floating-point call."""
    cc = shutil.which("arm-none-eabi-gcc")
    if cc is None:
        pytest.skip("arm-none-eabi-gcc is not installed (Debian: gcc-arm-none-eabi)")
    _, imported = _int8("mobilenet_v2_035", "fixed")
    module = imported.module
    low = lowered(module, min_budget(build_view(main_func(module)).graph))
    src = print_network(low, weights=imported.weights)
    assert "/* input 'input': int8_t 1x32x32x3, nhwc */" in src.c
    assert "memcpy(" in src.c
    obj = _cross_compile(src, "-mcpu=cortex-m0", "-mfloat-abi=soft")
    undefined = subprocess.run(
        ["arm-none-eabi-nm", "-u", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    floats = [s for s in undefined.split() if s.startswith(("__aeabi_f", "__aeabi_d", "__aeabi_i2f",
                                                               "__aeabi_ui2f", "__aeabi_l2f"))]
    floats += [s for s in undefined.split() if s in ("nearbyintf", "rintf", "roundf", "expf")]
    assert floats == [], floats
    # the float boundary and float requantization need them: the check can fail
    flt = import_model(zoo.build("mobilenet_v2_035", size="small", int8=True), origin="m")
    low_f = lowered(flt.module, min_budget(build_view(main_func(flt.module)).graph))
    obj_f = _cross_compile(print_network(low_f, weights=flt.weights), "-mcpu=cortex-m0",
                           "-mfloat-abi=soft")
    und_f = subprocess.run(
        ["arm-none-eabi-nm", "-u", str(obj_f)], capture_output=True, text=True, check=True
    ).stdout
    assert "__aeabi_fmul" in und_f.split() or "nearbyintf" in und_f.split()


def _cross_compile(src, *flags: str):
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp(prefix="tigris_m0_"))
    (d / "net.c").write_text(src.c)
    (d / f"{src.name}.h").write_text(src.h)
    subprocess.run(
        ["arm-none-eabi-gcc", "-std=c99", "-O2", "-ffp-contract=off", "-mthumb", *flags,
         "-Wall", "-Wextra", "-c", "net.c", "-o", "net.o"],
        cwd=d, check=True, capture_output=True, text=True,
    )
    return d / "net.o"


# ---------------------------------------------------------------------------
# bad input


def test_a_float_model_is_refused_naming_the_input() -> None:
    module = import_model(zoo.build("ds_cnn", size="small"), origin="ds_cnn").module
    with pytest.raises(PassFailedException, match=r"input 'input' \(a float32 input\) is read by "
                       r"nn\.conv; an int8 boundary needs every input read by exactly one "
                       r"per-tensor QuantizeLinear"):
        set_int8_boundary(module)


# ---------------------------------------------------------------------------
# the tools


def test_tigris_run_checks_an_int8_boundary_plan(tmp_path, capsys) -> None:
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "ds_cnn_int8.onnx"
    zoo.write("ds_cnn", path, size="small", int8=True)
    rc = main([str(path), "--boundary", "int8", "--random-input", "1", "--check"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "input 'input': int8 1x49x10x1 nhwc, scale" in out
    assert "ok: worst" in out  # onnxruntime on the dequantized input, within 1 LSB
    rc = main(
        [str(path), "--boundary", "int8", "--requant", "fixed", "-m", "8K", "--random-input",
         "1", "--check"]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "equals the untiled reference (0 LSB at most)" in out
    assert "requant fixed: ok: each of" in out


def test_tigris_run_refuses_a_float_model_in_one_line(tmp_path, capsys) -> None:
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "ds_cnn.onnx"
    zoo.write("ds_cnn", path, size="small")
    assert main([str(path), "--boundary", "int8", "--random-input", "0"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "input 'input' (a float32 input) is read by nn.conv" in err
    assert "exactly one per-tensor QuantizeLinear" in err


def test_tigris_analyze_shows_the_smaller_input(tmp_path, capsys) -> None:
    import json

    from tigris_ir.tools.tigris_analyze import main

    path = tmp_path / "m.onnx"
    zoo.write("mobilenet_v2_035", path, size="small", int8=True)
    figures = {}
    for b in ("float", "int8"):
        assert main([str(path), "-m", "64K", "--json", "--boundary", b]) == 0
        figures[b] = json.loads(capsys.readouterr().out)
    assert figures["float"]["inputs"][0]["bytes"] == 4 * figures["int8"]["inputs"][0]["bytes"]
    assert figures["int8"]["inputs"][0]["dtype"] == "int8"
    assert figures["int8"]["boundary"] == "int8"
    assert main([str(path), "-m", "64K", "--boundary", "int8"]) == 0
    assert "inputs (int8 boundary)" in capsys.readouterr().out


def test_the_bundled_example_checks_with_an_int8_boundary(capsys) -> None:
    """Random int8 inputs: the output is 2 LSB from onnxruntime's unfused
    session (float32 sums) on one class, 0 from its fused integer kernels;
    each quantized op, fed onnxruntime's own inputs, is within 1 LSB."""
    from pathlib import Path

    from tigris_ir.tools.tigris_run import main

    example = Path(__file__).resolve().parents[1] / "examples" / "mobilenet_v2_035_int8.onnx"
    rc = main([str(example), "--boundary", "int8", "--random-input", "0", "--check"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "from its fused kernels (whole model, rounding ties of the int32 sums" in out
    assert "requant float: ok: each of 66 quantized ops fed onnxruntime's inputs within" in out


def test_an_int8_output_off_the_fused_kernels_fails_the_check(
    tmp_path, capsys, monkeypatch
) -> None:
    """An output 3 LSB off everywhere is a mismatch, though every op of the
    model is within 1 LSB when fed onnxruntime's inputs."""
    from tigris_ir.reference import executor
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "ds_cnn_int8.onnx"
    zoo.write("ds_cnn", path, size="small", int8=True)
    honest = executor.run_reference

    def off_by_three(*args, **kwargs):
        outs = honest(*args, **kwargs)
        return [np.clip(y.astype(np.int32) + 3, -128, 127).astype(y.dtype) for y in outs]

    monkeypatch.setattr(executor, "run_reference", off_by_three)
    rc = main([str(path), "--boundary", "int8", "--random-input", "1", "--check"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "MISMATCH: worst 3 LSB (limit 1)" in out


def test_an_int8_output_as_far_as_onnxruntime_from_itself_passes(tmp_path, capsys) -> None:
    """MobileNetV2-1.0-224 int8 on one random input: onnxruntime's unfused
    and fused sessions are 2 LSB apart on its output, and ours is 2 LSB from
    each; every op, fed onnxruntime's inputs, is within 1 LSB. The whole
    output is held to that distance from the fused kernels, not to 1 LSB."""
    from tigris_ir.reference import oracle
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "mobilenet_v2_int8.onnx"
    zoo.write("mobilenet_v2", path, size="full", int8=True)
    seen: list[oracle.Report] = []
    honest = oracle.compare_with_onnxruntime

    def spy(*args, **kwargs):
        seen.append(honest(*args, **kwargs))
        return seen[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(oracle, "compare_with_onnxruntime", spy)
        rc = main([str(path), "--boundary", "int8", "--random-input", "4", "--check"])
    out = capsys.readouterr().out
    assert rc == 0, out
    (d,) = seen[0].diffs
    assert d.quantized and d.worst == d.worst_fused == d.sessions_apart == 2
    assert "limit 2 from the fused kernels, as far as onnxruntime's own two sessions" in out
    assert "requant float: ok: each of 66 quantized ops" in out
