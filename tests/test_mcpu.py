"""`--mcpu` on tigris-opt and tigris-run: it names the target of every
target-dependent pass and of the C; an unknown name lists the known ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris_ir.tools.tigris_opt import main as tigris_opt
from tigris_ir.tools.tigris_run import main as tigris_run

PIPE = ["--tile-stages=budget=64K", "--lower-to-loops", "--gebp-tile", "--lower-gebp"]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1x1 convolution (a GEBP site) on a 1x8x6x6 float32 input."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 1, 1)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["output"])],
        "pw",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 6, 6])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 16, 6, 6])],
        [w],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = tmp_path_factory.mktemp("mcpu") / "pw.onnx"
    onnx.save(m, str(path))
    return path


def _targets(text: str) -> set[str]:
    import re

    return set(re.findall(r'rtile.target = "([^"]*)"', text))


def test_mcpu_sets_gebp_tiles_target(model: Path, tmp_path: Path):
    out = tmp_path / "p.mlir"
    for cpu in ("cortex-m7", "cortex-m55"):
        assert tigris_opt([str(model), "--mcpu", cpu, *PIPE, "-o", str(out)]) == 0
        text = out.read_text()
        assert _targets(text) == {cpu}
        assert "rtile.geom" not in text  # no float32 Cortex-M GEBP: direct loops
    assert tigris_opt([str(model), "--mcpu", "sse", *PIPE, "-o", str(out)]) == 0
    assert _targets(out.read_text()) == {"sse"} and "rtile.geom" in out.read_text()


def test_explicit_target_option_wins(model: Path, tmp_path: Path):
    out = tmp_path / "p.mlir"
    pipe = [p if p != "--gebp-tile" else "--gebp-tile=target=avx2" for p in PIPE]
    assert tigris_opt([str(model), "--mcpu", "cortex-m4", *pipe, "-o", str(out)]) == 0
    assert _targets(out.read_text()) == {"avx2"}


def test_unknown_mcpu_lists_the_known(model: Path, capsys: pytest.CaptureFixture[str]):
    assert tigris_opt([str(model), "--mcpu", "z80", *PIPE]) == 1
    err = capsys.readouterr().err
    assert "--mcpu 'z80': unknown CPU; known:" in err and "cortex-m55" in err
    assert "Traceback" not in err
    assert tigris_run([str(model), "-m", "64K", "--mcpu", "z80", "--random-input", "0"]) == 1
    err = capsys.readouterr().err
    assert "--mcpu 'z80': unknown CPU" in err and "cortex-m4" in err


def test_run_plans_for_mcpu_and_refuses_a_foreign_plan(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    args = [str(model), "-m", "64K", "--random-input", "0", "--check"]
    assert tigris_run([*args, "--mcpu", "cortex-m55"]) == 0  # the interpreter runs it
    assert "equals the untiled reference" in capsys.readouterr().out
    plan = tmp_path / "p.mlir"
    opt = [str(model), "--mcpu", "cortex-m4", *PIPE, "--plan-arena", "-o", str(plan)]
    assert tigris_opt(opt) == 0
    assert tigris_run([str(plan), "--random-input", "0", "--mcpu", "avx2"]) == 1
    err = capsys.readouterr().err
    assert "kernels are for target 'cortex-m4'" in err and "--mcpu avx2" in err


def test_help_names_mcpu(capsys: pytest.CaptureFixture[str]):
    assert tigris_opt(["--help"]) == 0
    assert "--mcpu NAME" in capsys.readouterr().out
    assert tigris_run(["--help"]) == 0
    assert "--mcpu NAME" in capsys.readouterr().out
