"""Build a printed network for a Cortex-M target and run it under QEMU.

Everything target-specific comes from the target's description
(`tigris_ir.rtile.targets.Mcu`: the CPU, its gcc flags, its QEMU board and the
board's memories). `build_elf` writes, beside the network's unit, a startup
file (vector table, reset handler, fault and SysTick handlers), a harness and a
linker script generated from the board's memory map, and links them with
arm-none-eabi-gcc (newlib's libc and libm, no start files, no syscalls: the
harness does its input and output through semihosting calls of its own).
`run_elf` runs the image under

    qemu-system-arm -M BOARD -cpu CPU -nographic -semihosting-config
        enable=on,target=native -icount shift=0 -kernel image.elf

in a folder holding the inputs (`in0.bin`, ...); the harness reads them, runs
the network once, writes `out0.bin`, ... and `figures.txt`, and exits through
SYS_EXIT.

What `figures.txt` measures:

* "instructions": instructions executed from the harness's first read of
  SysTick's current value to its second one, the call of `NAME_run_n` between
  them (and a SysTick handler per 2^24 ticks). Under `-icount shift=0` QEMU
  advances its virtual clock 1 ns per instruction; SysTick counts the
  processor clock of the board (`Board.cpu_hz`), so one tick is
  1e9 / cpu_hz instructions: 40 on the MPS2 boards (25 MHz), 31.25 on the
  MPS3 AN547 (32 MHz). The count is ticks x that, exact to one tick (its
  resolution: "instructions resolution"); wraps of the 24-bit counter are
  counted by the SysTick handler. QEMU models no DWT cycle counter, and
  these are instructions, not cycles.
* "stack high": the stack's high-water mark in bytes: the reset handler
  paints the stack region with a pattern, the harness scans it after the run.
* the `-DTIGRIS_STATS` figures of the network (fast peak, slow reads, ...),
  when built with that variant.

A unit whose weights are in the blob form has the blob written beside it,
where its `.incbin` finds it; the blob lands in `.rodata` (flash) like the
weights printed as C.

`image_sizes` reads flash (text + rodata + the load image of data) and RAM
(data + bss + stack) from the ELF's section headers. `check_fit` refuses a
plan whose arenas, boundary buffers and stack exceed the board's RAM, with the
figures, before anything is built; an image the linker cannot fit in the
board's flash is refused naming the bytes it lacks; `check_tools` names the
Debian packages of a missing cross-compiler, C library or QEMU.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tigris_ir.backend.c.build import (
    REQUIRED_FLAGS,
    STREAM_ROWS,
    WARNING_FLAGS,
    CBuildError,
    CRunError,
    blob_digest,
    cache_dir,
    row_callback,
)
from tigris_ir.backend.c.network import CSource
from tigris_ir.interp.run_stats import RunStats
from tigris_ir.reference.executor import to_boundary, to_internal
from tigris_ir.rtile.targets import Board, Mcu, Target

CC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"
PACKAGES = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "qemu-system-arm")
"""The Debian packages of the cross tools (compiler, C library, emulator)."""

OPT_FLAGS = ("-O2",)
STACK_BASE = 8192
"""The stack the harness and the network's own frames take besides the
kernels' declared scratch (the header's `NAME_STACK_SCRATCH_BYTES`)."""
PAINT = 0xA5A5A5A5
VARIANTS = {"default": (), "stats": ("-DTIGRIS_STATS",)}


class CortexToolsMissing(CBuildError):
    """The cross-compiler, its C library or QEMU is not installed."""


class CortexFitError(CBuildError):
    """The plan does not fit the board's memories."""


def mcu_of(target: Target) -> Mcu:
    if target.mcu is None:
        raise CBuildError(f"target '{target.name}' is not a Cortex-M (it runs natively)")
    return target.mcu


def check_tools(cc: str = CC, qemu: str = QEMU) -> None:
    """One diagnostic naming what is missing and the Debian packages to install."""
    missing = [t for t in (cc, qemu) if shutil.which(t) is None]
    if not missing and not _has_newlib(cc):
        missing = ["newlib (libc.a of arm-none-eabi)"]
    if missing:
        raise CortexToolsMissing(
            f"{' and '.join(missing)} not found: running on a Cortex-M target needs "
            f"the cross-compiler, newlib and QEMU (Debian: apt-get install {' '.join(PACKAGES)})"
        )


def _has_newlib(cc: str) -> bool:
    try:
        out = subprocess.run(
            [cc, "-mthumb", "-mcpu=cortex-m4", "-print-file-name=libc.a"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return Path(out).is_absolute() and Path(out).is_file()


def tools_available() -> str | None:
    """None if the cross tools are installed, else the diagnostic saying what is missing."""
    try:
        check_tools()
    except CortexToolsMissing as e:
        return str(e)
    return None


# -- memory ----------------------------------------------------------------


def scratch_bytes(source: CSource) -> int:
    """The stack scratch the unit's kernels declare (`NAME_STACK_SCRATCH_BYTES`)."""
    m = re.search(rf"#define {source.name.upper()}_STACK_SCRATCH_BYTES (\d+)", source.h)
    if m is None:
        raise CBuildError(f"the header of '{source.name}' declares no STACK_SCRATCH_BYTES")
    return int(m.group(1))


def stack_bytes(source: CSource) -> int:
    """The stack the image reserves: the kernels' scratch and a base for frames."""
    return -(-(STACK_BASE + scratch_bytes(source)) // 8) * 8


def io_bytes(source: CSource) -> int:
    """The harness's static buffers of the inputs and outputs."""
    return sum(p.nbytes for p in (*source.inputs, *source.outputs))


def check_fit(source: CSource, target: Target) -> None:
    """Refuse a plan whose fast and slow arenas, boundary buffers and stack
    exceed the board's RAM (its data memory), naming every figure."""
    mcu = mcu_of(target)
    ram = mcu.board.ram
    stack = stack_bytes(source)
    need = source.fast_arena + source.slow_arena + io_bytes(source) + stack
    if need > ram.length:
        raise CortexFitError(
            f"the plan needs {need} bytes of RAM on {target.name} ({mcu.board.machine}): "
            f"fast arena {source.fast_arena} + slow arena {source.slow_arena} + input and "
            f"output buffers {io_bytes(source)} + stack {stack}; the board's {ram.name} "
            f"holds {ram.length} bytes"
        )


def linker_script(board: Board, stack: int) -> str:
    """The image's layout on the board: the vector table where reset reads it,
    code and read-only data in `flash`, data (loaded from flash), bss and the
    stack in `ram`."""
    v, f, r = board.vectors, board.flash, board.ram
    separate = v != f
    memories = [f"  FLASH (rx) : ORIGIN = 0x{f.origin:08x}, LENGTH = 0x{f.length:x}"]
    if separate:
        memories.insert(0, f"  VECTORS (rx) : ORIGIN = 0x{v.origin:08x}, LENGTH = 0x{v.length:x}")
    memories.append(f"  RAM (rwx) : ORIGIN = 0x{r.origin:08x}, LENGTH = 0x{r.length:x}")
    vectors_in = "VECTORS" if separate else "FLASH"
    return f"""\
/* {board.machine}: {v.name}{"" if not separate else f" (vectors), {f.name}"} (code), \
{r.name} (data) */
MEMORY
{{
{chr(10).join(memories)}
}}
ENTRY(tg_reset)
SECTIONS
{{
  .vectors : {{ KEEP(*(.vectors)) }} > {vectors_in}
  .text : {{ *(.text .text.*) *(.glue_7) *(.glue_7t) }} > FLASH
  .rodata : {{ *(.rodata .rodata.*) }} > FLASH
  .ARM.exidx : {{ *(.ARM.exidx .ARM.exidx.* .gnu.linkonce.armexidx.*) }} > FLASH
  .data : ALIGN(8)
  {{
    __data_start = .; *(.data .data.*) . = ALIGN(8); __data_end = .;
  }} > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : ALIGN(8)
  {{
    __bss_start = .; *(.bss .bss.*) *(COMMON) . = ALIGN(8); __bss_end = .;
  }} > RAM
  .stack (NOLOAD) : ALIGN(8) {{ __stack_bottom = .; . += {stack}; __stack_top = .; }} > RAM
  /DISCARD/ : {{ *(.ARM.attributes) *(.comment) }}
}}
"""


STARTUP = r"""/* Startup of the QEMU image: the vector table, the reset handler (FPU
 * access, .data copied from flash, .bss zeroed, the stack painted), the fault
 * handlers (a message, then SYS_EXIT with a failure), the SysTick handler
 * (counts wraps of the 24-bit counter) and the semihosting calls. */
#include <stdint.h>
#include <string.h>
#include "tg_semi.h"

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[], __stack_bottom[], __stack_top[];
int main(void);
void tg_reset(void);
void tg_fault(void);
void tg_systick(void);

volatile uint32_t tg_systick_wraps;

__attribute__((section(".vectors"), used)) void (*const tg_vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top, /* initial SP */
    tg_reset,
    tg_fault, /* NMI */
    tg_fault, /* HardFault */
    tg_fault, /* MemManage */
    tg_fault, /* BusFault */
    tg_fault, /* UsageFault */
    tg_fault, /* SecureFault (ARMv8-M) */
    0, 0, 0,
    tg_fault, /* SVCall */
    tg_fault, /* DebugMonitor */
    0,
    tg_fault, /* PendSV */
    tg_systick,
};

int tg_semi(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void tg_exit(int ok)
{
    /* SYS_EXIT: ADP_Stopped_ApplicationExit exits QEMU with 0, RunTimeErrorUnknown with 1 */
    tg_semi(0x18, (void *)(uintptr_t)(ok ? 0x20026u : 0x20023u));
    for (;;) {
    }
}

void tg_puts(const char *s)
{
    tg_semi(0x04, (void *)(uintptr_t)s); /* SYS_WRITE0 */
}

void tg_fault(void)
{
    tg_puts("tigris: fault (exception taken)\n");
    tg_exit(0);
}

void tg_systick(void)
{
    ++tg_systick_wraps;
}

void tg_reset(void)
{
    uint32_t *p;
    const uint32_t *q;
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20; /* CP10 and CP11: the FPU (and MVE) */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    for (p = __data_start, q = __data_load; p < __data_end;)
        *p++ = *q++;
    for (p = __bss_start; p < __bss_end;)
        *p++ = 0;
    /* paint the stack below this frame */
    for (p = __stack_bottom; p < (uint32_t *)__builtin_frame_address(0) - 64;)
        *p++ = TG_PAINT;
    tg_exit(main() == 0);
}

uint32_t tg_stack_high(void)
{
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == TG_PAINT)
        ++p;
    return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}
"""


SEMI_H = """/* Semihosting calls of the image (ARM's semihosting: BKPT 0xAB, r0 the
 * operation, r1 its argument block) and what the startup provides. */
#ifndef TG_SEMI_H_
#define TG_SEMI_H_
#include <stdint.h>
#define TG_PAINT 0x{paint:08X}u
int tg_semi(int op, void *arg);
void tg_exit(int ok);
void tg_puts(const char *s);
uint32_t tg_stack_high(void);
extern volatile uint32_t tg_systick_wraps;
#endif
"""


TICKS = r"""#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)

#ifndef TG_RELOAD
#define TG_RELOAD 0xFFFFFFu /* the period less one: 2^24 - 1, SysTick's widest */
#endif

/* SysTick from 0, counting the processor clock down from TG_RELOAD with its
 * interrupt on: the first tick reloads TG_RELOAD, the (TG_RELOAD + 1)-th
 * reaches 0 and takes the exception (tg_systick_wraps). */
static void ticks_start(void)
{
    SYST_CSR = 0u;
    SYST_RVR = TG_RELOAD;
    SYST_CVR = 0u;
    tg_systick_wraps = 0u;
    SYST_CSR = 7u; /* processor clock, interrupt, enable */
}

static void ticks_stop(void)
{
    SYST_CSR = 0u;
}

/* The ticks since ticks_start: wraps x period + the ticks into this one,
 * read with interrupts masked; a wrap whose exception is pending counts. */
static unsigned long long ticks_now(void)
{
    uint32_t cvr, wraps;
    __asm__ volatile("cpsid i" ::: "memory");
    cvr = SYST_CVR;
    wraps = tg_systick_wraps;
    if ((SCB_ICSR & (1u << 26)) != 0u) ++wraps;
    __asm__ volatile("cpsie i" ::: "memory");
    return (unsigned long long)wraps * (TG_RELOAD + 1ull) +
           (cvr != 0u ? TG_RELOAD + 1u - cvr : 0u);
}
"""


def harness(source: CSource) -> str:
    """`main`: the inputs read from in<i>.bin, one run between two reads of
    SysTick, the outputs written to out<i>.bin, the figures to figures.txt.
    A streamed input stays in the harness (a camera's frame buffer): the
    network asks `<name>_input_rows` for its rows (channels-last), which
    copies and counts them; a streamed output's rows arrive through
    `<name>_output_rows`, which places them in the output's buffer, counts
    them and fails the run on a row sent twice."""
    n = source.name
    ni, no = len(source.inputs), len(source.outputs)
    bufs = "\n".join(
        [
            *(
                f"static uint64_t in{i}[{max(-(-p.nbytes // 8), 1)}];"
                for i, p in enumerate(source.inputs)
            ),
            *(
                f"static uint64_t out{i}[{max(-(-p.nbytes // 8), 1)}];"
                for i, p in enumerate(source.outputs)
            ),
        ]
    )
    reads = "\n".join(
        f'    if (read_file("in{i}.bin", in{i}, {p.nbytes}u)) return 1;'
        for i, p in enumerate(source.inputs)
    )
    writes = "\n".join(
        f'    if (write_file("out{i}.bin", out{i}, {p.nbytes}u)) return 1;'
        for i, p in enumerate(source.outputs)
    )
    ins = ", ".join("0" if p.streamed else f"in{i}" for i, p in enumerate(source.inputs)) or "0"
    outs = ", ".join("0" if p.streamed else f"out{i}" for i, p in enumerate(source.outputs))
    outs = outs or "0"
    streams = row_callback(source, "input", [f"in{i}" for i in range(ni)])
    streams += row_callback(source, "output", [f"out{i}" for i in range(no)])
    figures = []
    for kind, ports, label in (
        ("input", source.inputs, "stream rows"),
        ("output", source.outputs, "output rows"),
    ):
        if any(p.streamed for p in ports):
            rows = STREAM_ROWS[kind]
            figures.append(f'        figure("{label}", {rows}_total);')
            if kind == "input":
                figures.append(f'        figure("stream bytes", {rows}_bytes);')
            figures += [
                f'        figure("{label} {i}", {rows}[{i}]);'
                for i, p in enumerate(ports)
                if p.streamed
            ]
    rows_figure = "\n".join(figures)
    return f"""\
/* The QEMU harness of '{n}': inputs and outputs through semihosting files,
 * instructions counted by SysTick, the stack's high-water mark. */
#include <stdint.h>
#include <string.h>
#include "tg_semi.h"
#include "{n}.h"

{bufs}
{streams}
static char figures[1024];
static unsigned figures_len;

static int open_file(const char *name, int mode)
{{
    uint32_t block[3];
    block[0] = (uint32_t)(uintptr_t)name;
    block[1] = (uint32_t)mode;
    block[2] = (uint32_t)strlen(name);
    return tg_semi(0x01, block); /* SYS_OPEN */
}}

static int transfer(int op, int handle, void *data, uint32_t n)
{{
    uint32_t block[3];
    int rest;
    block[0] = (uint32_t)handle;
    block[1] = (uint32_t)(uintptr_t)data;
    block[2] = n;
    rest = tg_semi(op, block); /* SYS_READ / SYS_WRITE: the bytes not transferred */
    block[0] = (uint32_t)handle;
    tg_semi(0x02, block); /* SYS_CLOSE */
    return rest != 0;
}}

static int read_file(const char *name, void *data, uint32_t n)
{{
    int h = open_file(name, 1); /* "rb" */
    if (h < 0 || transfer(0x06, h, data, n)) {{
        tg_puts("tigris: cannot read an input file\\n");
        return 1;
    }}
    return 0;
}}

static int write_file(const char *name, const void *data, uint32_t n)
{{
    int h = open_file(name, 5); /* "wb" */
    if (h < 0 || transfer(0x05, h, (void *)(uintptr_t)data, n)) {{
        tg_puts("tigris: cannot write an output file\\n");
        return 1;
    }}
    return 0;
}}

static void figure(const char *key, unsigned long long v)
{{
    char digits[24];
    int k = 0;
    size_t len = strlen(key);
    if (figures_len + len + 26 > sizeof figures) return;
    memcpy(figures + figures_len, key, len);
    figures_len += (unsigned)len;
    figures[figures_len++] = ':';
    figures[figures_len++] = ' ';
    do {{
        digits[k++] = (char)('0' + (int)(v % 10u));
        v /= 10u;
    }} while (v != 0u);
    while (k > 0)
        figures[figures_len++] = digits[--k];
    figures[figures_len++] = '\\n';
}}

{TICKS}
int main(void)
{{
    const void *ins[{max(ni, 1)}] = {{{ins}}};
    void *outs[{max(no, 1)}] = {{{outs}}};
    unsigned long long t0, t1;
    int rc;
{reads}
    ticks_start();
    t0 = ticks_now();
    rc = {n}_run_n(ins, outs);
    t1 = ticks_now();
    ticks_stop();
    if (rc != 0) {{
        tg_puts("tigris: the network returned an error\\n");
        return 1;
    }}
{writes}
    figure("ticks", t1 - t0);
    figure("stack high", tg_stack_high());
#ifdef TIGRIS_STATS
    {{
        {n}_stats_t st;
        if ({n}_stats(&st) != 0) return 1;
        figure("fast peak", st.fast_peak);
        figure("fast high", st.fast_high);
        figure("slow peak", st.slow_peak);
        figure("slow reads", st.slow_reads);
        figure("slow writes", st.slow_writes);
        figure("tiles", st.tiles);
{rows_figure}
    }}
#endif
    return write_file("figures.txt", figures, figures_len);
}}
"""


def cflags(
    target: Target, variant: str = "default", opt: Sequence[str] = OPT_FLAGS
) -> list[str]:
    """Every flag of a Cortex-M build: the required ones, warnings as errors,
    the optimisation flags (-O2) and exactly the target's CPU flags."""
    if variant not in VARIANTS:
        known = ", ".join(VARIANTS)
        raise CBuildError(f"unknown Cortex-M build variant '{variant}' (known: {known})")
    bad = [f for f in opt if f.startswith(("-mcpu", "-march", "-mfpu", "-mfloat-abi", "-mthumb"))]
    if bad:
        raise CBuildError(
            f"the flags {' '.join(bad)} are the target's own: the CPU flags of a Cortex-M "
            f"build are those of its description ({' '.join(target.cflags())})"
        )
    return [
        *REQUIRED_FLAGS,
        *WARNING_FLAGS,
        "-Werror",
        *opt,
        *target.cflags(),
        "-ffunction-sections",
        "-fdata-sections",
        *VARIANTS[variant],
    ]


def build_elf(
    source: CSource,
    target: Target,
    *,
    variant: str = "default",
    cc: str = CC,
    opt: Sequence[str] = OPT_FLAGS,
    timeout: float = 600.0,
) -> Path:
    """The linked image of `source` for `target`'s board, built once per
    sources and flags (cached like the host builds)."""
    mcu = mcu_of(target)
    check_fit(source, target)
    flags = cflags(target, variant, opt)
    check_tools(cc)
    files = {
        f"{source.name}.c": source.c,
        f"{source.name}.h": source.h,
        "main.c": harness(source),
        "startup.c": STARTUP,
        "tg_semi.h": SEMI_H.format(paint=PAINT),
        "link.ld": linker_script(mcu.board, stack_bytes(source)),
    }
    link = ["-nostartfiles", "-T", "link.ld", "-Wl,--gc-sections"]
    parts = [*files.values(), cc, *flags, *link, mcu.board.machine]
    if source.blob is not None:
        parts.append(blob_digest(source))
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
    root = cache_dir()
    out = root / f"cortex-{key}"
    elf = out / "image.elf"
    if elf.is_file():
        return elf
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".cortex-{key}-", dir=root))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text)
        if source.blob is not None:  # .incbin in .rodata: flash, by the linker script
            (tmp / source.blob_file).write_bytes(source.blob)
        cmd = [
            cc, *flags, *link, "-o", "image.elf",
            f"{source.name}.c", "main.c", "startup.c", "-lm", "-lc", "-lgcc",
        ]  # fmt: skip
        try:
            res = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CBuildError(f"'{cc}' took more than {timeout:.0f} s") from None
        (tmp / "build.log").write_text(shlex.join(cmd) + "\n" + res.stdout + res.stderr)
        if res.returncode != 0:
            over = re.search(r"region `(FLASH|RAM|VECTORS)' overflowed by (\d+) bytes", res.stderr)
            if over is not None:
                memory = {"FLASH": mcu.board.flash, "RAM": mcu.board.ram}.get(
                    over.group(1), mcu.board.vectors
                )
                raise CortexFitError(
                    f"the image for {target.name} ({mcu.board.machine}) does not fit: it "
                    f"needs {over.group(2)} bytes more than the board's {memory.name} "
                    f"({memory.length} bytes) holds"
                )
            lines = (res.stderr or res.stdout).strip().splitlines()
            if len(lines) > 40:
                lines = [*lines[:40], f"... ({len(lines) - 40} more lines)"]
            raise CBuildError(f"{shlex.join(cmd)} failed in {tmp}:\n" + "\n".join(lines))
        try:
            tmp.rename(out)
        except OSError:  # built meanwhile by another process
            shutil.rmtree(tmp, ignore_errors=True)
        return elf
    except BaseException:
        if tmp.exists() and not (tmp / "build.log").exists():
            shutil.rmtree(tmp, ignore_errors=True)
        raise


# -- the ELF -----------------------------------------------------------------


@dataclass(frozen=True)
class ImageSizes:
    """What the image takes of the board's memories, from its section headers."""

    text: int
    """Code (and the vector table, the unwind index)."""
    rodata: int
    """Read-only data: the weights and tables."""
    data: int
    """Initialised data: in RAM, its load image in flash."""
    bss: int
    """Zeroed data: the arenas and the boundary buffers."""
    stack: int

    @property
    def flash(self) -> int:
        """text + rodata (+ the load image of data, so that it boots from flash)."""
        return self.text + self.rodata + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss + self.stack


SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHT_NOBITS = 8


def image_sizes(elf: Path) -> ImageSizes:
    """The sizes of a 32-bit little-endian ELF's allocated sections by kind."""
    raw = elf.read_bytes()
    if raw[:4] != b"\x7fELF" or raw[4] != 1 or raw[5] != 1:
        raise CBuildError(f"'{elf}' is not a 32-bit little-endian ELF file")
    shoff, = struct.unpack_from("<I", raw, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", raw, 0x2E)
    headers = [struct.unpack_from("<IIIIIIIIII", raw, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = raw[strtab[4] : strtab[4] + strtab[5]]

    def name(off: int) -> str:
        return names[off : names.index(b"\0", off)].decode()

    sizes = {"text": 0, "rodata": 0, "data": 0, "bss": 0, "stack": 0}
    for h in headers:
        sh_name, sh_type, flags, size = h[0], h[1], h[2], h[5]
        if not flags & SHF_ALLOC or size == 0:
            continue
        if name(sh_name) == ".stack":
            sizes["stack"] += size
        elif sh_type == SHT_NOBITS:
            sizes["bss"] += size
        elif flags & SHF_EXECINSTR or name(sh_name) in (".vectors", ".ARM.exidx"):
            sizes["text"] += size
        elif flags & SHF_WRITE:
            sizes["data"] += size
        else:
            sizes["rodata"] += size
    return ImageSizes(**sizes)


# -- running -----------------------------------------------------------------


def qemu_command(target: Target, elf: Path) -> list[str]:
    mcu = mcu_of(target)
    return [
        QEMU,
        "-M", mcu.board.machine,
        "-cpu", mcu.cpu,
        "-nographic",
        "-monitor", "none",
        "-serial", "none",
        "-semihosting-config", "enable=on,target=native",
        "-icount", "shift=0",
        "-kernel", str(elf),
    ]  # fmt: skip


def run_qemu(target: Target, elf: Path, cwd: Path, timeout: float) -> str:
    """Run an image under QEMU in `cwd` (its semihosting files' folder): what it
    said on the semihosting console; a failure, or a run longer than `timeout`
    seconds (stopped), is a CRunError."""
    mcu = mcu_of(target)
    try:
        res = subprocess.run(
            qemu_command(target, elf),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise CRunError(
            f"qemu-system-arm -M {mcu.board.machine} ran more than {timeout:g} s and was "
            "stopped: the image hangs, or it needs more time than the limit"
        ) from None
    said = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        raise CRunError(
            f"the image failed under qemu-system-arm -M {mcu.board.machine} (exit status "
            f"{res.returncode})" + (f":\n{said}" if said else "")
        )
    return said


def run_elf(
    source: CSource,
    target: Target,
    elf: Path,
    inputs: Sequence[np.ndarray],
    *,
    timeout: float = 300.0,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """Run the image under QEMU on inputs in the model's boundary layout: its
    outputs and figures ("instructions", "instructions resolution",
    "stack high", and the stats build's figures)."""
    mcu = mcu_of(target)
    check_tools(qemu=QEMU)
    if len(inputs) != len(source.inputs):
        raise CRunError(f"the model takes {len(source.inputs)} input(s), got {len(inputs)}")
    for x, p in zip(inputs, source.inputs):
        shape = tuple(x.shape) if not p.streamed else tuple(to_internal(x, p.layout).shape)
        if shape != p.shape or x.dtype != p.dtype:
            raise CRunError(
                f"input '{p.name}' must be {p.dtype} of shape {'x'.join(map(str, p.shape))}, "
                f"got {x.dtype} of shape {'x'.join(map(str, x.shape))}"
            )
    with tempfile.TemporaryDirectory(prefix="tigris-qemu-") as d:
        for i, (x, p) in enumerate(zip(inputs, source.inputs)):
            if p.streamed:  # the stream delivers channels-last rows
                x = to_internal(x, p.layout)
            (Path(d) / f"in{i}.bin").write_bytes(np.ascontiguousarray(x).tobytes())
        said = run_qemu(target, elf, Path(d), timeout)
        paths = [Path(d) / f"out{i}.bin" for i in range(len(source.outputs))]
        fig = Path(d) / "figures.txt"
        if not fig.is_file() or not all(p.is_file() for p in paths):
            raise CRunError(f"the image wrote no outputs under QEMU{': ' + said if said else ''}")
        outputs = [
            np.frombuffer(path.read_bytes(), dtype=p.dtype).reshape(p.shape).copy()
            for path, p in zip(paths, source.outputs)
        ]
        outputs = [  # a streamed output arrived channels-last
            to_boundary(y, p.layout) if p.streamed else y
            for y, p in zip(outputs, source.outputs)
        ]
        figures: dict[str, float] = {}
        for line in fig.read_text().splitlines():
            key, sep, val = line.partition(":")
            if sep:
                figures[key.strip()] = float(val)
    per_tick = 1e9 / mcu.board.cpu_hz
    figures["instructions"] = figures.pop("ticks") * per_tick
    figures["instructions resolution"] = per_tick
    return outputs, figures


@dataclass(frozen=True)
class TargetRun:
    """One run of a plan on its Cortex-M board: outputs, figures, image sizes."""

    outputs: list[np.ndarray]
    figures: dict[str, float]
    """The default build's ("instructions", "stack high", ...), and with a
    stats build its figures under the same names as the host's."""
    sizes: ImageSizes
    stats: RunStats | None
    build_seconds: float = 0.0
    """Printing aside: compiling and linking (0 for cached images)."""
    run_seconds: float = 0.0
    """QEMU's runs, start to exit."""

    def lines(self, source: CSource, target: Target) -> list[str]:
        """The --stats lines of the board: instructions, stack, flash, RAM."""
        mcu = mcu_of(target)
        f, s = self.figures, self.sizes
        res = f["instructions resolution"]
        return [
            f"instructions: {f['instructions']:.0f} (executed by {source.name}_run_n under "
            f"qemu-system-arm -M {mcu.board.machine} -icount shift=0, counted by SysTick at "
            f"{mcu.board.cpu_hz / 1e6:g} MHz: exact to one tick, {res:g} instructions)",
            f"stack high: {f['stack high']:.0f} of {s.stack} bytes reserved",
            f"flash: {s.flash} bytes (text {s.text} + rodata {s.rodata} + data {s.data}) of "
            f"{mcu.board.flash.name} {mcu.board.flash.length}",
            f"RAM: {s.ram} bytes (data {s.data} + bss {s.bss} + stack {s.stack}) of "
            f"{mcu.board.ram.name} {mcu.board.ram.length}; planned arenas: fast "
            f"{source.fast_arena} + slow {source.slow_arena}",
        ]


def run_on_target(
    source: CSource,
    target: Target,
    inputs: Sequence[np.ndarray],
    *,
    stats: bool = False,
    cc: str = CC,
    opt: Sequence[str] = OPT_FLAGS,
    timeout: float = 300.0,
) -> TargetRun:
    """Build and run `source` on `target`'s board; with `stats` also the
    -DTIGRIS_STATS build, whose outputs must be the same."""
    import time

    from tigris_ir.backend.c.build import stats_of

    t0 = time.perf_counter()
    elf = build_elf(source, target, cc=cc, opt=opt)
    selem = build_elf(source, target, variant="stats", cc=cc, opt=opt) if stats else None
    t1 = time.perf_counter()
    outputs, figures = run_elf(source, target, elf, inputs, timeout=timeout)
    run_stats = None
    if selem is not None:
        souts, sfig = run_elf(source, target, selem, inputs, timeout=timeout)
        for a, b in zip(outputs, souts):
            if a.tobytes() != b.tobytes():
                raise CRunError("the stats build computes other outputs than the build")
        run_stats = stats_of(source, sfig)
    t2 = time.perf_counter()
    return TargetRun(outputs, figures, image_sizes(elf), run_stats, t1 - t0, t2 - t1)


__all__ = [
    "TargetRun",
    "run_on_target",
    "PACKAGES",
    "CortexFitError",
    "CortexToolsMissing",
    "ImageSizes",
    "build_elf",
    "check_fit",
    "check_tools",
    "image_sizes",
    "linker_script",
    "run_elf",
    "tools_available",
]
