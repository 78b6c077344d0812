"""Plans built for the Cortex-M targets and run under QEMU on their boards:
small zoo models (float32 and int8) on each CPU against the untiled reference,
the instruction count against loops of known length, the image's sizes
against the ELF, and the refusals (RAM, tools, a hang).

Skipped, with the reason, where arm-none-eabi-gcc, newlib or qemu-system-arm
is not installed (Debian: gcc-arm-none-eabi, libnewlib-arm-none-eabi,
qemu-system-arm)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import zoo
from ops_oracle import boundary_reference
from xdsl.context import Context

from tigris_ir.backend.c import cortex
from tigris_ir.backend.c.build import CRunError
from tigris_ir.backend.c.network import CSource, print_network
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.rtile import targets as tg

CPUS = ("cortex-m4", "cortex-m7", "cortex-m55")
MISSING = cortex.tools_available()
needs_tools = pytest.mark.skipif(
    MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}"
)


@dataclasses.dataclass
class Case:
    source: CSource
    inputs: list[np.ndarray]
    reference: list[np.ndarray]


_CASES: dict[tuple[str, bool, str], Case] = {}


def case(name: str, int8: bool, cpu: str, budget: int = 8192) -> Case:
    """A small zoo model planned under `budget`, its kernels chosen for `cpu`,
    printed; a seeded input and the untiled reference's output."""
    key = (name, int8, cpu)
    if key not in _CASES:
        imported = import_model(zoo.build(name, size="small", int8=int8))
        module = imported.module
        LowerToLoopsPass(budget=budget).apply(Context(), module)
        tile_and_lower(module, target=cpu)
        PlanArenaPass(budget=budget).apply(Context(), module)
        source = print_network(module, weights=imported.weights)
        rng = np.random.default_rng(7)
        x = [rng.standard_normal(p.shape).astype(p.dtype) for p in source.inputs]
        ref = boundary_reference(module, imported.weights, x)
        _CASES[key] = Case(source, x, ref)
    return _CASES[key]


# -- on the boards -------------------------------------------------------------


MODELS = [("ds_cnn", False), ("ds_cnn", True), ("audio_1d", True)]
"""2D and 1D, float32 and int8: a few KiB of weights each, small inputs."""


@needs_tools
@pytest.mark.parametrize("cpu", CPUS)
@pytest.mark.parametrize(
    ("name", "int8"), MODELS, ids=[f"{n}-{'int8' if q else 'float32'}" for n, q in MODELS]
)
def test_zoo_model_on_the_board_equals_the_untiled_reference(cpu: str, name: str, int8: bool):
    c = case(name, int8, cpu)
    run = cortex.run_on_target(c.source, tg.get_target(cpu), c.inputs)
    for y, r in zip(run.outputs, c.reference):
        assert y.dtype == r.dtype and y.shape == r.shape
        if int8:  # integer arithmetic: bit-exact (the float boundary included)
            assert y.tobytes() == r.tobytes()
        else:
            scale = max(float(np.abs(r).max()), 1e-30)
            assert float(np.abs(y - r).max()) / scale <= 1e-5
    f = run.figures
    assert f["instructions"] > 0
    assert f["instructions resolution"] == 1e9 / tg.get_target(cpu).mcu.board.cpu_hz  # type: ignore[union-attr]
    assert 0 < f["stack high"] <= run.sizes.stack
    # the image holds the planned arenas and the boundary buffers in RAM
    assert run.sizes.bss >= c.source.fast_arena + c.source.slow_arena + cortex.io_bytes(c.source)


@needs_tools
def test_stats_build_reports_the_planned_peak():
    c = case("ds_cnn", True, "cortex-m4")
    run = cortex.run_on_target(c.source, tg.get_target("cortex-m4"), c.inputs, stats=True)
    assert run.stats is not None
    assert run.stats.fast_peak <= c.source.fast_arena and run.stats.fast_peak > 0


@needs_tools
@pytest.mark.parametrize("cpu", ["cortex-m4", "cortex-m55"])
def test_image_sizes_agree_with_arm_none_eabi_size(cpu: str):
    size = shutil.which("arm-none-eabi-size")
    if size is None:
        pytest.skip("arm-none-eabi-size not installed")
    c = case("ds_cnn", True, cpu)
    elf = cortex.build_elf(c.source, tg.get_target(cpu))
    s = cortex.image_sizes(elf)
    sections = subprocess.run([size, "-A", str(elf)], capture_output=True, text=True).stdout
    rows = [ln.split() for ln in sections.splitlines()]
    by_name = {w[0]: int(w[1]) for w in rows if len(w) == 3 and w[1].isdigit()}
    assert s.stack == by_name[".stack"]
    assert s.bss == by_name[".bss"]
    assert s.rodata == by_name.get(".rodata", 0)
    assert s.text == by_name[".text"] + by_name[".vectors"] + by_name.get(".ARM.exidx", 0)


def _image(cpu: str, main_c: str, tmp: Path, defines: tuple[str, ...] = ()) -> Path:
    """An image of the startup and a given main (no network)."""
    t = tg.get_target(cpu)
    assert t.mcu is not None
    (tmp / "startup.c").write_text(cortex.STARTUP)
    (tmp / "tg_semi.h").write_text(cortex.SEMI_H.format(paint=cortex.PAINT))
    (tmp / "link.ld").write_text(cortex.linker_script(t.mcu.board, 4096))
    (tmp / "main.c").write_text(main_c)
    cmd = [
        cortex.CC, *cortex.cflags(t), *defines, "-nostartfiles", "-T", "link.ld",
        "-o", "image.elf", "main.c", "startup.c", "-lc", "-lgcc",
    ]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return tmp / "image.elf"


LOOP_MAIN = (
    '#include <stdint.h>\n#include <string.h>\n#include "tg_semi.h"\n'
    + cortex.TICKS
    + r"""
static char line[32];
int main(void)
{
    static const uint32_t iters[3] = {1000u, 100000u, 3000000u};
    uint32_t i;
    for (i = 0; i < 3u; ++i) {
        unsigned long long t0, t1, v;
        uint32_t n = iters[i];
        int k = 0, j = 0;
        char d[24];
        ticks_start();
        t0 = ticks_now();
        __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) :: "cc");
        t1 = ticks_now();
        ticks_stop();
        v = t1 - t0;
        do { d[k++] = (char)('0' + (int)(v % 10u)); v /= 10u; } while (v != 0u);
        while (k > 0) line[j++] = d[--k];
        line[j++] = '\n';
        line[j] = 0;
        tg_puts(line);
    }
    return 0;
}
"""
)


@needs_tools
@pytest.mark.parametrize("cpu", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("reload", ["", "-DTG_RELOAD=0xFFFu"], ids=["reload24", "reload12"])
def test_instruction_count_is_exact_to_one_tick(cpu: str, reload: str, tmp_path: Path):
    """A loop of 2n instructions (SUBS, BNE) counts 2n within one tick plus the
    reads' own few instructions; with a 4096-tick period the wraps are counted
    too (each handler's few instructions besides)."""
    elf = _image(cpu, LOOP_MAIN, tmp_path, (reload,) if reload else ())
    said = cortex.run_qemu(tg.get_target(cpu), elf, tmp_path, timeout=120)
    mcu = tg.get_target(cpu).mcu
    assert mcu is not None
    per_tick = 1e9 / mcu.board.cpu_hz
    counts = [int(v) * per_tick for v in said.split()]
    for n, got in zip((1000, 100000, 3000000), counts):
        wraps = 2 * n / per_tick / 4096 if reload else 0
        assert 2 * n - per_tick <= got <= 2 * n + 2 * per_tick + 12 * wraps


@needs_tools
def test_a_hanging_image_is_stopped(tmp_path: Path):
    main = '#include "tg_semi.h"\nint main(void)\n{\n    for (;;) {\n    }\n}\n'
    elf = _image("cortex-m7", main, tmp_path)
    with pytest.raises(CRunError, match=r"ran more than 2 s and was stopped"):
        cortex.run_qemu(tg.get_target("cortex-m7"), elf, tmp_path, timeout=2)


@needs_tools
def test_a_fault_fails_the_run(tmp_path: Path):
    main = (
        '#include <stdint.h>\n#include "tg_semi.h"\nint main(void)\n{\n'
        "    return *(volatile uint32_t *)0xF0000000u == 0u;\n}\n"
    )
    elf = _image("cortex-m4", main, tmp_path)
    with pytest.raises(CRunError, match="fault"):
        cortex.run_qemu(tg.get_target("cortex-m4"), elf, tmp_path, timeout=60)


# -- without the boards ------------------------------------------------------------


def test_a_plan_above_the_boards_ram_is_refused_with_the_figures():
    c = case("ds_cnn", True, "cortex-m7")
    t = tg.get_target("cortex-m7")
    assert t.mcu is not None
    need = (
        c.source.fast_arena + c.source.slow_arena + cortex.io_bytes(c.source)
        + cortex.stack_bytes(c.source)
    )

    def with_ram(nbytes: int) -> tg.Target:
        assert t.mcu is not None
        board = dataclasses.replace(t.mcu.board, ram=tg.Memory("SRAM", 0x2000_0000, nbytes))
        return dataclasses.replace(t, mcu=dataclasses.replace(t.mcu, board=board))

    cortex.check_fit(c.source, t)  # 4 MiB
    cortex.check_fit(c.source, with_ram(need))  # exactly
    with pytest.raises(cortex.CortexFitError) as e:
        cortex.check_fit(c.source, with_ram(need - 1))
    msg = str(e.value)
    assert f"needs {need} bytes of RAM" in msg and f"fast arena {c.source.fast_arena}" in msg
    assert f"stack {cortex.stack_bytes(c.source)}" in msg and f"holds {need - 1} bytes" in msg


@needs_tools
def test_an_image_above_the_boards_flash_is_refused():
    c = case("ds_cnn", True, "cortex-m4")
    t = tg.get_target("cortex-m4")
    assert t.mcu is not None
    tiny = tg.Memory("SSRAM1", 0, 4 * tg.KiB)
    board = dataclasses.replace(t.mcu.board, vectors=tiny, flash=tiny)
    small = dataclasses.replace(t, mcu=dataclasses.replace(t.mcu, board=board))
    lacks = r"needs \d+ bytes more than the board's SSRAM1 \(4096 bytes\)"
    with pytest.raises(cortex.CortexFitError, match=lacks):
        cortex.build_elf(c.source, small)


def test_missing_tools_name_the_debian_packages():
    with pytest.raises(cortex.CortexToolsMissing) as e:
        cortex.check_tools(cc="no-such-arm-gcc", qemu="no-such-qemu")
    msg = str(e.value)
    assert "no-such-arm-gcc and no-such-qemu not found" in msg
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm" in msg


@pytest.mark.parametrize("cpu", CPUS)
def test_linker_script_is_the_boards_memory_map(cpu: str):
    mcu = tg.get_target(cpu).mcu
    assert mcu is not None
    b = mcu.board
    script = cortex.linker_script(b, 12345)
    assert f"ORIGIN = 0x{b.flash.origin:08x}, LENGTH = 0x{b.flash.length:x}" in script
    assert f"ORIGIN = 0x{b.ram.origin:08x}, LENGTH = 0x{b.ram.length:x}" in script
    assert (f"ORIGIN = 0x{b.vectors.origin:08x}" in script) and ". += 12345;" in script


def test_cortex_flags_are_the_targets():
    t = tg.get_target("cortex-m7")
    flags = cortex.cflags(t)
    assert flags[:2] == ["-std=c99", "-ffp-contract=off"] and "-Werror" in flags
    assert "-O2" in flags and all(f in flags for f in t.cflags())
    assert "-DTIGRIS_PORTABLE" not in flags
    with pytest.raises(cortex.CBuildError, match="the target's own"):
        cortex.cflags(t, opt=["-O3", "-mcpu=cortex-m3"])


# -- the command line ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ds_cnn_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cortex") / "ds_cnn_int8.onnx"
    zoo.write("ds_cnn", path, int8=True)
    return path


@needs_tools
def test_tigris_run_on_the_board_checks_and_counts(
    ds_cnn_int8: Path, capsys: pytest.CaptureFixture[str]
):
    from tigris_ir.tools.tigris_run import main

    args = [str(ds_cnn_int8), "-m", "8K", "--backend", "c", "--mcpu", "cortex-m7"]
    assert main([*args, "--check", "--stats", "--random-input", "0"]) == 0
    out = capsys.readouterr().out
    assert "equals the untiled reference" in out
    assert "qemu-system-arm -M mps2-an500 -icount shift=0" in out
    for key in ("instructions: ", "stack high: ", "flash: ", "RAM: ", "planned arenas: fast "):
        assert key in out
    assert "fast peak: " in out


@needs_tools
@pytest.mark.parametrize("boundary", ["int8", "float"])
def test_streamed_input_and_output_on_the_board(
    ds_cnn_int8: Path, capsys: pytest.CaptureFixture[str], boundary: str
):
    """The board's harness feeds a streamed input row by row from its frame
    and takes a streamed output's rows into its buffer: the plan in one SRAM
    runs bit-exact, each input row asked once, each output row sent once."""
    from tigris_ir.tools.tigris_run import main

    args = [str(ds_cnn_int8), "-m", "3K", "--slow-budget", "0", "--boundary", boundary]
    args += ["--stream-input", "--stream-output", "--backend", "c", "--mcpu", "cortex-m4"]
    assert main([*args, "--check", "--stats", "--random-input", "0"]) == 0
    out = capsys.readouterr().out
    exact = "(0 LSB at most)" if boundary == "int8" else "(0.00e+00 relative at most"
    assert f"equals the untiled reference {exact}" in out
    assert "slow peak: 0" in out and " 0 tiles" not in out
    streamed = [line for line in out.splitlines() if "rows streamed: " in line]
    assert streamed[0].startswith("input rows streamed: ") and len(streamed) == 2
    assert streamed[1].startswith("output rows streamed: ")


def test_tigris_run_names_the_packages_of_a_missing_cross_compiler(
    ds_cnn_int8: Path, capsys: pytest.CaptureFixture[str]
):
    from tigris_ir.tools.tigris_run import main

    args = [str(ds_cnn_int8), "-m", "8K", "--backend", "c", "--mcpu", "cortex-m4"]
    assert main([*args, "--random-input", "0", "--cc", "no-such-arm-gcc"]) == 1
    err = capsys.readouterr().err
    assert "no-such-arm-gcc" in err and "gcc-arm-none-eabi libnewlib-arm-none-eabi" in err
    assert "Traceback" not in err


def test_tigris_run_refuses_a_plan_above_the_boards_ram(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    import onnx
    from onnx import TensorProto, helper

    from tigris_ir.tools.tigris_run import main

    shape = [1, 8, 400, 400]  # 5 MB in and 5 MB out: beyond the boards' 4 MiB
    graph = helper.make_graph(
        [helper.make_node("Relu", ["input"], ["output"])],
        "big",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = tmp_path / "big.onnx"
    onnx.save(model, str(path))
    args = [str(path), "-m", "64K", "--backend", "c", "--mcpu", "cortex-m55", "--random-input", "0"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "bytes of RAM on cortex-m55 (mps3-an547)" in err and "input and output buffers" in err
    assert "SRAM 2 holds 4194304 bytes" in err and "Traceback" not in err
