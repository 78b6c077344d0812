"""The fuzz targets of tests/fuzz, for a bounded time: `TIGRIS_FUZZ_SECONDS=300`
fuzzes the ONNX importer and then the IR parser that long each (skipped
without it, or without the optional extra `fuzz`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SECONDS = int(os.environ.get("TIGRIS_FUZZ_SECONDS", "0"))
SCRIPT = Path(__file__).parent / "fuzz" / "fuzz_tigris.py"


@pytest.mark.skipif(SECONDS <= 0, reason="set TIGRIS_FUZZ_SECONDS to fuzz")
@pytest.mark.parametrize("target", ["onnx", "ir"])
def test_fuzz_finds_nothing(target, tmp_path):
    pytest.importorskip("atheris")
    res = subprocess.run(
        [sys.executable, str(SCRIPT), target, "--seconds", str(SECONDS)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SECONDS + 600,
    )
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert res.returncode == 0 and not crashes, (crashes, res.stderr[-3000:])
