"""The Cortex-M target descriptions: their facts against the compiler and QEMU
they name (when installed), their memories, and the x86 presets left as they were."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tigris_ir.rtile import model as rt
from tigris_ir.rtile import targets as tg

CORTEX = ("cortex-m4", "cortex-m7", "cortex-m55")
GCC = shutil.which("arm-none-eabi-gcc")
QEMU = shutil.which("qemu-system-arm")

# What each CPU is, as its documentation states: (DSP, FPU, MVE, -mfpu, board).
FACTS = {
    "cortex-m4": (True, "single", "none", "fpv4-sp-d16", "mps2-an386"),
    "cortex-m7": (True, "double", "none", "fpv5-d16", "mps2-an500"),
    "cortex-m55": (True, "double", "float", "", "mps3-an547"),
}


@pytest.mark.parametrize("name", CORTEX)
def test_cortex_description(name: str):
    t = tg.get_target(name)
    assert t.mcu is not None and t.name == name and t.mcu.cpu == name
    m = t.mcu
    assert (m.dsp, m.fpu, m.mve, m.mfpu, m.board.machine) == FACTS[name]
    assert t.arch == "arm"
    assert t.units == ()  # no float vector unit: the float kernels are plain C
    assert t.int8_dot == ("vmladava" if m.mve != "none" else "smlad")
    reason = tg.can_run(t)
    assert reason is not None and "qemu-system-arm" in reason and m.board.machine in reason


def test_cortex_register_files():
    """DSP SIMD: a vector is one 32-bit general register; Helium: eight Q registers."""
    m4, m7, m55 = (tg.get_target(n) for n in CORTEX)
    for t in (m4, m7):
        assert t.mcu is not None
        assert (t.vector_bytes, t.vector_registers) == (4, t.mcu.general_registers)
    assert (m55.vector_bytes, m55.vector_registers) == (16, 8)
    # eight Q registers hold a 4 x 1 pass by resident_floor (6), not a 4 x 2 (11)
    assert rt.rn_cap(m55) == 1
    assert rt.rn_cap(m4) == 1


def test_cortex_gcc_flags():
    assert tg.get_target("cortex-m4").cflags() == (
        "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"
    )
    assert tg.get_target("cortex-m7").cflags() == (
        "-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"
    )
    assert tg.get_target("cortex-m55").cflags() == (
        "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"
    )


@pytest.mark.parametrize("name", CORTEX)
def test_cortex_boards_memories(name: str):
    """Vector table at the reset VTOR (0), code and data in distinct memories
    that do not overlap, each big enough for a small network."""
    mcu = tg.get_target(name).mcu
    assert mcu is not None
    b = mcu.board
    assert b.vectors.origin == 0
    assert b.flash.end <= b.ram.origin or b.ram.end <= b.flash.origin
    assert b.flash.length >= 2 * tg.MiB and b.ram.length >= 4 * tg.MiB


def test_x86_presets_unchanged():
    assert tg.avx2.cflags() == ("-mavx2", "-mfma")
    assert tg.sse.cflags() == ("-msse4.2",)
    assert tg.avx512_vnni.cflags()[-1] == "-mavx512vnni"
    assert tg.avx2.arch == "x86_64" and tg.neon.arch == "aarch64"
    assert [u.bytes for u in tg.avx512.units] == [64, 32, 16]
    assert tg.unit_of("arm", 16) is None and tg.unit_of("x86_64", 16) is not None


def _macros(flags: tuple[str, ...]) -> dict[str, str]:
    assert GCC is not None
    out = subprocess.run(
        [GCC, *flags, "-dM", "-E", "-"], input="", capture_output=True, text=True, check=True
    ).stdout
    macros: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] == "#define":
            macros[parts[1]] = parts[2] if len(parts) == 3 else ""
    return macros


@pytest.mark.skipif(GCC is None, reason="arm-none-eabi-gcc not installed (gcc-arm-none-eabi)")
@pytest.mark.parametrize("name", CORTEX)
def test_cortex_flags_enable_the_described_isa(name: str):
    """gcc's predefined macros under the description's flags say the same
    features: ACLE's __ARM_FEATURE_DSP, __ARM_FP (bit 2: single, bit 3: double),
    __ARM_FEATURE_MVE (bit 0: integer, bit 1: float), the hard-float ABI."""
    t = tg.get_target(name)
    assert t.mcu is not None
    m = _macros(t.cflags())
    assert ("__ARM_FEATURE_DSP" in m) == t.mcu.dsp
    fp = int(m.get("__ARM_FP", "0"), 0)
    assert {"none": 0, "single": 4, "double": 12}[t.mcu.fpu] == fp & 12
    mve = int(m.get("__ARM_FEATURE_MVE", "0"), 0)
    assert {"none": 0, "integer": 1, "float": 3}[t.mcu.mve] == mve
    assert ("__ARM_PCS_VFP" in m) == (t.mcu.fpu != "none")


@pytest.mark.skipif(QEMU is None, reason="qemu-system-arm not installed (qemu-system-arm)")
@pytest.mark.parametrize("name", CORTEX)
def test_cortex_board_is_a_qemu_machine(name: str):
    mcu = tg.get_target(name).mcu
    assert mcu is not None and QEMU is not None
    machines = subprocess.run([QEMU, "-M", "help"], capture_output=True, text=True).stdout
    assert any(line.split()[:1] == [mcu.board.machine] for line in machines.splitlines())


@pytest.mark.parametrize(("name", "rows"), [("cortex-m4", 4), ("cortex-m7", 4), ("cortex-m55", 3)])
def test_int8_tile_rows(name: str, rows: int):
    """Helium's VMLADAVA adds into an even general register only, and lr
    counts the k loop: seven accumulators, so gebp-tile gives its int8 sites
    three rows of a pair (six); the DSP's SMLAD tiles keep the model's four.
    The model's own default is the spec's on every file; float32 sites and
    sites of fewer rows are not capped."""
    t = tg.get_target(name)
    file = t.int8_file()
    assert rt.default(file, 64, 64) == rt.Geometry(4, 1, 2)
    assert t.int8_rows == (3 if name == "cortex-m55" else None)
    assert rt.target_default(file, 64, 64, True) == rt.Geometry(rows, 1, 2)
    assert rt.target_default(file, 2, 64, True) == rt.Geometry(2, 1, 2)
    assert rt.target_default(file, 64, 64, False) == rt.default(file, 64, 64)
    # a four-row request stays honourable: the cap is the default's, not a rule of check
    assert rt.check(file, 64, 64, rt.Geometry(4, 1, 2)) is None


def test_x86_int8_tiles_uncapped():
    for t in (tg.avx512_vnni, tg.avx512, tg.avx2, tg.sse, tg.neon):
        assert t.int8_rows is None
