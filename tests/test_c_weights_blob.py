"""The blob form of a unit's weights (`print_network(weights_form=...)`).

A unit whose weights are in a blob must compute exactly what the unit with
the weights printed as C computes, which must equal the untiled reference
(int8 bit-exact, float32 to a relative 1e-5); the blob holds exactly the
weights the C form prints as bytes, each at a multiple of 64 bytes; "auto"
below its threshold prints the C form byte for byte; the tools write the blob
beside the C (`tigris-opt -t 'c{weights=blob}' -o NAME.c`), refuse it on
standard output, and build it (`tigris-run --c-weights blob`), for the host
and under QEMU for a Cortex-M.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import zoo
from ops_oracle import boundary_reference
from xdsl.context import Context

from tigris_ir.backend.c import cortex
from tigris_ir.backend.c.build import build, execute, find_clang, run_c
from tigris_ir.backend.c.network import (
    ARENA_ALIGN,
    BYTES_MIN,
    CSource,
    NetworkError,
    print_network,
)
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.rtile import targets as tg

BUDGET = 8192
FLAGS = "-O1 -march=native"
"""Quicker builds than -O3; the forms differ in where the weights are, not in code."""
MODELS = [("ds_cnn", True), ("vgg", False)]
"""int8 and float32, a few KiB and about 300 KB of weights (small sizes)."""

_PLANS: dict[tuple[str, bool, str], tuple] = {}


def plan(name: str, int8: bool, cpu: str = "host"):
    """The lowered plan of a small zoo model, its weights, a seeded input and
    the untiled reference's outputs (boundary layouts)."""
    key = (name, int8, cpu)
    if key not in _PLANS:
        imported = import_model(zoo.build(name, size="small", int8=int8))
        module = imported.module
        LowerToLoopsPass(budget=BUDGET).apply(Context(), module)
        tile_and_lower(module, target=cpu)
        PlanArenaPass(budget=BUDGET).apply(Context(), module)
        source = print_network(module, weights=imported.weights)
        rng = np.random.default_rng(5)
        x = [rng.standard_normal(p.shape).astype(p.dtype) for p in source.inputs]
        ref = boundary_reference(module, imported.weights, x)
        _PLANS[key] = (module, imported.weights, x, ref)
    return _PLANS[key]


def assert_reference(got: list[np.ndarray], ref: list[np.ndarray], int8: bool) -> None:
    for y, r in zip(got, ref, strict=True):
        assert y.dtype == r.dtype and y.shape == r.shape
        if int8:
            assert y.tobytes() == r.tobytes()
        else:
            scale = max(float(np.abs(r).max()), 1e-30)
            assert float(np.abs(y - r).max()) / scale <= 1e-5


_BYTES_UNION = re.compile(r"static const union \{ [^;]+; (\w+) v\[(\d+)\]; \} (\w+)_bytes ")
_BLOB_POINTER = re.compile(
    r"static const (\w+) \*const (\w+) = \(const \1 \*\)\((\w+)_weights \+ (\d+)\);"
)


def byte_weights(c: str) -> dict[str, tuple[str, int]]:
    """The weights a C-form unit prints as bytes: name -> (C type, elements)."""
    return {m[3]: (m[1], int(m[2])) for m in _BYTES_UNION.finditer(c)}


SIZES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "int64_t": 8, "float": 4}


@pytest.mark.parametrize(("name", "int8"), MODELS, ids=[n for n, _ in MODELS])
def test_blob_unit_equals_the_c_unit_and_the_untiled_reference(name: str, int8: bool):
    module, weights, x, ref = plan(name, int8)
    text = print_network(module, weights=weights, weights_form="c")
    blob = print_network(module, weights=weights, weights_form="blob")
    assert text.blob is None and blob.blob is not None
    assert blob.blob_file == "tigris.weights.bin"
    assert '.incbin " TIGRIS_STR(TIGRIS_WEIGHTS_FILE)' in blob.c
    assert '#define TIGRIS_WEIGHTS_FILE "tigris.weights.bin"' in blob.c
    assert "tigris.weights.bin" in blob.h  # the header says where the weights are
    assert len(blob.c) < len(text.c)
    got_text, _ = run_c(text, None, x, strict=True, flags=FLAGS)
    got_blob, _ = run_c(blob, None, x, strict=True, flags=FLAGS)
    assert_reference(got_text, ref, int8)
    assert_reference(got_blob, ref, int8)
    for a, b in zip(got_text, got_blob, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("name", "int8"), MODELS, ids=[n for n, _ in MODELS])
def test_blob_holds_the_byte_weights_at_aligned_offsets(name: str, int8: bool):
    module, weights, _, _ = plan(name, int8)
    text = print_network(module, weights=weights, weights_form="c")
    blob = print_network(module, weights=weights, weights_form="blob")
    assert blob.blob is not None
    printed = byte_weights(text.c)
    assert printed  # the model has weights of at least BYTES_MIN bytes
    placed = {m[2]: (m[1], int(m[4])) for m in _BLOB_POINTER.finditer(blob.c)}
    assert not byte_weights(blob.c)
    # the same weights, of the same types; the same small constants as C text
    assert {k: t for k, (t, _) in printed.items()} == {k: t for k, (t, _) in placed.items()}
    nbytes = {k: SIZES[t] * n for k, (t, n) in printed.items()}
    assert min(nbytes.values()) >= BYTES_MIN
    padded = {k: -(-n // ARENA_ALIGN) * ARENA_ALIGN for k, n in nbytes.items()}
    assert len(blob.blob) == sum(padded.values())
    # one after another in the unit's order, each at a multiple of the alignment
    order = sorted(placed, key=lambda k: placed[k][1])
    at = 0
    for k in order:
        assert placed[k][1] == at and at % ARENA_ALIGN == 0
        assert blob.blob[at + nbytes[k] : at + padded[k]] == bytes(padded[k] - nbytes[k])
        at += padded[k]
    assert [k for k in byte_weights(text.c) if k in placed] == order


def test_auto_below_its_threshold_prints_the_c_unit_byte_for_byte():
    module, weights, _, _ = plan("vgg", False)
    text = print_network(module, weights=weights)
    blob = print_network(module, weights=weights, weights_form="blob")
    assert blob.blob is not None
    total = sum(SIZES[t] * n for t, n in byte_weights(text.c).values())
    below = print_network(module, weights=weights, weights_form="auto", blob_min=total + 1)
    assert below.blob is None and below.c == text.c and below.h == text.h
    at = print_network(module, weights=weights, weights_form="auto", blob_min=total)
    assert at.blob == blob.blob and at.c == blob.c


def test_a_bad_form_or_file_name_is_refused():
    module, weights, _, _ = plan("ds_cnn", True)
    with pytest.raises(NetworkError, match="unknown weights form 'bin'"):
        print_network(module, weights=weights, weights_form="bin")
    with pytest.raises(NetworkError, match="without a folder"):
        print_network(module, weights=weights, weights_form="blob", blob_file="a/b.bin")


def test_blob_builds_from_another_folder_with_the_documented_flags(tmp_path: Path):
    """The unit written elsewhere, compiled from another folder: found through
    -Wa,-I<dir> or -DTIGRIS_WEIGHTS_FILE; placed by TIGRIS_WEIGHTS_SECTION."""
    module, weights, _, _ = plan("ds_cnn", True)
    src = print_network(module, weights=weights, weights_form="blob", blob_file="kws.weights.bin")
    assert src.blob is not None
    out, other = tmp_path / "out", tmp_path / "other"
    out.mkdir()
    other.mkdir()
    (out / "kws.c").write_text(src.c)
    (out / "kws.weights.bin").write_bytes(src.blob)
    base = ["gcc", "-std=c99", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror", "-O1", "-c"]
    unit = str(out / "kws.c")
    missing = subprocess.run([*base, unit, "-o", "a.o"], cwd=other, capture_output=True, text=True)
    assert missing.returncode != 0 and "kws.weights.bin" in missing.stderr
    subprocess.run([*base, unit, "-o", "b.o", f"-Wa,-I{out}"], cwd=other, check=True)
    path = f'-DTIGRIS_WEIGHTS_FILE="{out / "kws.weights.bin"}"'
    section = "-DTIGRIS_WEIGHTS_SECTION=.rodata.weights"
    subprocess.run([*base, unit, "-o", "c.o", path, section], cwd=other, check=True)
    heads = subprocess.run(
        ["objdump", "-h", str(other / "c.o")], capture_output=True, text=True, check=True
    ).stdout
    (line,) = [ln for ln in heads.splitlines() if " .rodata.weights " in ln]
    assert int(line.split()[2], 16) == len(src.blob)


def test_clang_builds_the_blob_unit():
    clang = find_clang()
    if clang is None:
        pytest.skip("no clang on the PATH nor from ziglang")
    module, weights, x, ref = plan("ds_cnn", True)
    src = print_network(module, weights=weights, weights_form="blob")
    exe = build(src, cc=clang, strict=True, flags="-O1")
    got, _ = execute(src, exe, x)
    assert_reference(got, ref, True)


def test_tigris_opt_refuses_the_blob_on_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from tigris_ir.tools.tigris_opt import main

    model = tmp_path / "kws.onnx"
    zoo.write("ds_cnn", model, int8=True)
    passes = ["--lower-to-loops=budget=8K", "--gebp-tile", "--lower-gebp", "--plan-arena"]
    assert main([str(model), *passes, "-t", "c{weights=blob}"]) == 1
    err = capsys.readouterr().err
    assert "-o NAME.c" in err and "c{weights=c}" in err and "Traceback" not in err
    assert main([str(model), *passes, "-t", "c{weight=blob}", "-o", str(tmp_path / "m.c")]) == 1
    err = capsys.readouterr().err
    assert "bad target 'c{weight=blob}'" in err and "internal error" not in err
    # the default (auto) keeps a small model's weights in the C
    assert main([str(model), *passes, "-t", "c", "-o", str(tmp_path / "m.c")]) == 0
    assert not (tmp_path / "m.weights.bin").exists()
    assert "incbin" not in (tmp_path / "m.c").read_text()


@pytest.mark.parametrize("form", ["c", "blob"])
def test_tigris_run_builds_either_form(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from tigris_ir.tools.tigris_run import main

    model = tmp_path / "kws.onnx"
    zoo.write("ds_cnn", model)
    monkeypatch.setenv("TIGRIS_C_CACHE", str(tmp_path / "cache"))
    args = [str(model), "-m", "8K", "--backend", "c", "--c-weights", form, "--cflags=-O1"]
    assert main([*args, "--random-input", "0", "--check"]) == 0
    assert "equals the untiled reference" in capsys.readouterr().out
    (unit,) = (tmp_path / "cache").glob("*/tigris.c")
    blobs = list(unit.parent.glob("*.weights.bin"))
    assert len(blobs) == (form == "blob") and ("incbin" in unit.read_text()) == (form == "blob")


@pytest.mark.skipif(
    cortex.tools_available() is not None,
    reason=f"no Cortex-M cross tools here: {cortex.tools_available()}",
)
def test_blob_unit_on_a_cortex_m_equals_the_untiled_reference():
    module, weights, x, ref = plan("ds_cnn", True, "cortex-m7")
    src = print_network(module, weights=weights, weights_form="blob")
    assert isinstance(src, CSource) and src.blob is not None
    target = tg.get_target("cortex-m7")
    run = cortex.run_on_target(src, target, x)
    assert_reference(run.outputs, ref, True)
    assert run.sizes.flash >= len(src.blob)  # the blob is in flash (.rodata)
