"""The reference executor against onnxruntime on every zoo model (small sizes).

float32 within a relative 1e-4; int8 QDQ within 1 quantization step of the
output against onnxruntime's execution of the QDQ graph (see tigris_ir.reference.oracle).
"""

from __future__ import annotations

import numpy as np
import pytest
import zoo

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime, output_scales, per_op_lsb

pytest.importorskip("onnxruntime")

CASES = [(name, int8) for name in zoo.ZOO for int8 in (False, True)]


@pytest.mark.parametrize(
    ("name", "int8"), CASES, ids=[f"{n}-{'int8' if q else 'f32'}" for n, q in CASES]
)
def test_reference_matches_onnxruntime(name: str, int8: bool) -> None:
    model = zoo.build(name, size="small", int8=int8)
    imported = import_model(model, origin=name)
    rng = np.random.default_rng(11)
    x = rng.standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, ours, ["output"])
    assert report.diffs[0].quantized == int8
    assert report.ok, report.text


def test_report_flags_a_real_mismatch() -> None:
    """The oracle itself can fail: a perturbed output is reported as a mismatch."""
    model = zoo.build("vgg", size="small")
    imported = import_model(model, origin="vgg")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])[0]
    bad = ours.copy()
    bad.flat[3] += np.abs(ours).max() * 1e-2
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, [bad], ["output"])
    assert not report.ok
    assert report.diffs[0].where == tuple(int(i) for i in np.unravel_index(3, bad.shape))
    assert "MISMATCH" in report.text


def test_int8_mismatch_counts_quantization_steps() -> None:
    model = zoo.build("ds_cnn", size="small", int8=True)
    imported = import_model(model, origin="ds_cnn")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])[0]
    step = next(iter(output_scales(model).values()))
    bad = ours + np.float32(2 * step)
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, [bad], ["output"])
    assert report.diffs[0].worst == 2.0
    assert not report.ok


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_every_quantized_op_within_one_step(name: str) -> None:
    """Fed onnxruntime's own inputs, every quantized op lands within 1 LSB."""
    model = zoo.build(name, size="small", int8=True)
    imported = import_model(model, origin=name)
    x = np.random.default_rng(3).standard_normal(zoo.input_shape(model)).astype(np.float32)
    diffs = per_op_lsb(model.SerializeToString(), imported, {"input": x})
    assert len(diffs) >= 5  # the check saw the network's quantized ops
    worst = max(diffs, key=lambda d: d.worst_lsb)
    assert worst.worst_lsb <= 1, worst
    # rounding ties only (linear resize makes exact .5 ties), not a systematic error
    assert sum(d.differing for d in diffs) <= 1e-3 * sum(d.size for d in diffs) + 2
