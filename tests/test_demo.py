"""The README's first command, `bash scripts/demo.sh`, on the bundled example
model: it plans, runs the plan in the interpreter and as C, checks both
against the untiled reference and the model against onnxruntime, and exits 0
only if every check holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the demo compiles C: no gcc here")
def test_the_demo_runs_and_every_check_holds(tmp_path: Path) -> None:
    env = dict(os.environ, OUT=str(tmp_path / "out"), TIGRIS_VENV=sys.prefix)
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = r.stdout
    assert "IR file and model give identical outputs" in out
    # the interpreter's and the C's runs are each checked and report their figures
    assert out.count("fast peak") >= 2, out[-3000:]
    for f in ("model.mlir", "model.weights.npz", "model.tiled.mlir", "model.c", "model.h"):
        assert (tmp_path / "out" / f).stat().st_size > 0, f
