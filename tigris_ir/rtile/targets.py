"""The targets as data: one description per machine a register tile is fitted to.

The register-tile model (`rtile.model`) reads two numbers of a machine: how wide
its vector registers are and how many it has. Everything else target-specific
lives here too, so that a pass, the C kernels, the autotuner and the benchmark
read one description: the vector units the C kernels may use (each with the
preprocessor condition that says a compiler targets it and its fused
multiply-add built-in), the int8 dot-product instruction, the compiler flags
that enable exactly that ISA, and the stack scratch a kernel may take. A new
target is one more entry here plus its instruction selection in the kernels.

The Cortex-M targets (`cortex-m4`, `cortex-m7`, `cortex-m55`) carry an `Mcu`
besides: the CPU's ISA features (DSP extension, FPU, MVE), its exact gcc
flags, and the QEMU board its code runs on with the board's memory map (what a
linker script places and what a fit check measures against). Their code never
runs natively: `can_run` says so, and the C backend runs it under QEMU.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class VectorUnit:
    """One vector register width of an ISA as the C kernels use it."""

    bytes: int
    """The width in bytes (16: xmm / NEON Q, 32: ymm, 64: zmm)."""
    enabled: str
    """The C preprocessor condition under which the compiler targets this unit."""
    fma_enabled: str
    """The condition under which `fma` is available ("0": never)."""
    fma: str
    """A fused multiply-add built-in of {a} * {b} + {c} on float32 lanes ("" if none);
    the x86 ones are GCC's documented built-ins (no intrinsics header to parse)."""


X86_UNITS = (
    VectorUnit(
        64,
        "defined(__AVX512F__)",
        "defined(__AVX512F__)",
        "__builtin_ia32_vfmaddps512_mask({a}, {b}, {c}, (unsigned short)-1, 4)",
    ),
    VectorUnit(
        32,
        "defined(__AVX__)",
        "defined(__FMA__) && defined(__AVX__)",
        "__builtin_ia32_vfmaddps256({a}, {b}, {c})",
    ),
    VectorUnit(
        16, "defined(__SSE2__)", "defined(__FMA__)", "__builtin_ia32_vfmaddps({a}, {b}, {c})"
    ),
)
NEON_UNITS = (VectorUnit(16, "defined(__ARM_NEON)", "0", ""),)


FpuKind = Literal["none", "single", "double"]
"""A Cortex-M FPU: none, single precision only (FPv4-SP) or double (FPv5-D16, M55's)."""

MveKind = Literal["none", "integer", "float"]
"""Helium (M-profile Vector Extension): none, integer lanes only, or integer and float."""


@dataclass(frozen=True)
class Memory:
    """One memory of a board, as the linker script and the fit checks see it."""

    name: str
    """What the board's documentation and QEMU's model call it."""
    origin: int
    """Its base address."""
    length: int
    """Its size in bytes."""

    @property
    def end(self) -> int:
        return self.origin + self.length


@dataclass(frozen=True)
class Board:
    """A QEMU machine an M-profile CPU runs on, and the memories an image uses.

    The numbers are the board's memories as QEMU 7.2 models them (hw/arm/mps2.c,
    hw/arm/mps2-tz.c), not a production part's: `flash` holds the code and
    read-only data (text + rodata, the weights), `ram` the data, bss, the arenas
    and the stack. `vectors` is where the reset sequence reads the vector table
    (VTOR's reset value); on the MPS2 boards it is the start of `flash`.
    """

    machine: str
    """The `qemu-system-arm -M` name."""
    vectors: Memory
    flash: Memory
    ram: Memory
    cpu_hz: int
    """The processor clock SysTick counts (CLKSOURCE = 1) as QEMU models it."""


KiB = 1024
MiB = 1024 * KiB

# MPS2 AN386 (Cortex-M4) and AN500 (Cortex-M7): ZBT SSRAM1 4 MiB at 0 (code),
# ZBT SSRAM2&3 4 MiB at 0x20000000 (data).
_SSRAM1 = Memory("ZBT SSRAM1", 0x0000_0000, 4 * MiB)
_SSRAM23 = Memory("ZBT SSRAM2&3", 0x2000_0000, 4 * MiB)
MPS2_AN386 = Board("mps2-an386", _SSRAM1, _SSRAM1, _SSRAM23, 25_000_000)
MPS2_AN500 = Board("mps2-an500", _SSRAM1, _SSRAM1, _SSRAM23, 25_000_000)
# MPS3 AN547 (Cortex-M55 in the SSE-300): ITCM 512 KiB at 0 (the reset vector
# table, VTOR = 0), SRAM 2 MiB at 0x01000000 (code), DTCM 512 KiB at
# 0x20000000, SRAM 2 4 MiB at 0x21000000 (data), QSPI 8 MiB at 0x28000000.
MPS3_AN547 = Board(
    "mps3-an547",
    Memory("ITCM", 0x0000_0000, 512 * KiB),
    Memory("SRAM", 0x0100_0000, 2 * MiB),
    Memory("SRAM 2", 0x2100_0000, 4 * MiB),
    32_000_000,
)


@dataclass(frozen=True)
class Mcu:
    """The facts of one M-profile CPU: ISA features, gcc flags, its QEMU board."""

    cpu: str
    """gcc's `-mcpu=` and QEMU's CPU model name."""
    dsp: bool
    """The DSP extension (SIMD within 32-bit registers: SMLAD, SXTB16, QADD8)."""
    fpu: FpuKind
    mve: MveKind
    mfpu: str
    """gcc's `-mfpu=` value ("": the CPU's default, which `-mcpu` implies)."""
    general_registers: int
    """The 32-bit general registers a micro-kernel may hold accumulators and
    operands in: r0-r12 and lr (14) less the A, B and C pointers and the k
    counter a GEBP loop keeps live."""
    fp_registers: int
    """Single-precision FPU registers (s0-s31), 0 without an FPU."""
    board: Board
    integer_only: bool = True
    """int8 plans for this CPU requantize in fixed point by default (the
    `requant` pass's mode=fixed: no floating point in the int8 body)."""

    def cflags(self) -> tuple[str, ...]:
        """The gcc flags that target exactly this CPU (hard-float ABI with an FPU)."""
        flags = (f"-mcpu={self.cpu}", "-mthumb")
        if self.fpu == "none":
            return (*flags, "-mfloat-abi=soft")
        return (*flags, "-mfloat-abi=hard", *((f"-mfpu={self.mfpu}",) if self.mfpu else ()))



def unit_of(arch: str, nbytes: int) -> VectorUnit | None:
    """The vector unit of `nbytes` of an architecture's ISA family, if any."""
    if arch not in ("aarch64", "x86_64"):
        return None
    for u in NEON_UNITS if arch == "aarch64" else X86_UNITS:
        if u.bytes == nbytes:
            return u
    return None


Int8Dot = Literal["vpdpbusd", "pmaddwd", "smlad", "vmladava", "none"]
"""How the int8 kernels multiply-accumulate: AVX512-VNNI's u8 x s8 groups of four
into int32 (`vpdpbusd`), AVX2's int16 pairs into int32 (`pmaddwd`, exact), the
Cortex-M DSP extension's dual 16-bit multiply-accumulate into one 32-bit
general register (`smlad`: A widened to int16 pairs when packed, B's int8
groups of four widened in the loop by SXTB16), Helium's sum of sixteen int8
products into a general register (`vmladava`: VMLADAVA.S8 over Q registers),
or plain C loops (`none`)."""

INT8_DOT_GROUP: dict[Int8Dot, int] = {
    "vpdpbusd": 4, "pmaddwd": 2, "smlad": 4, "vmladava": 16, "none": 1
}
"""The k steps one dot-product instruction consumes per lane (for `smlad`, the
k steps one 32-bit word of packed B holds: two SMLADs of two)."""

INT8_DOT_BYTES: dict[Int8Dot, int] = {
    "vpdpbusd": 64, "pmaddwd": 32, "smlad": 8, "vmladava": 8, "none": 32
}
"""The accumulator register width (bytes) the int8 kernels use with each
instruction: zmm for VNNI, ymm for AVX2 (the plain loops count in AVX2's); the
Cortex-M kernels keep one int32 accumulator per general register and count
them in pairs (8 bytes: a "vector" of two columns, `GPR_PAIRS` of them)."""

INT8_DOT_ROWS: dict[Int8Dot, int] = {"vmladava": 3}
"""Row ceilings of the int8 micro-tile below the model's `rm_cap`, where an
instruction's accumulators are fewer than four rows of a pair need:
VMLADAVA adds into an even general register only (r0, r2, ..., r12, lr)
and lr holds the k loop's count (DLS / LE), so seven accumulators at most,
three rows of a pair of columns (rm3 rn1 lanes2: six; at eight gcc moves
accumulators through the odd registers or the stack every k step)."""

GPR_PAIRS = 6
"""The pairs of general registers the Cortex-M int8 micro-kernels (`smlad`,
`vmladava`) tile accumulators in: r0-r12 and lr less the A, B and loop-end
pointers the k loop keeps live leave 11, which hold a 4 x 2 tile's eight
accumulators, one B pair and one streaming A word -- resident_floor of
rm4 rn1 lanes2, counted in pairs (6, the A word rounded up to a pair).
VMLADAVA's accumulators take even registers only: `INT8_DOT_ROWS` caps its
tile at three rows."""


@dataclass(frozen=True)
class Target:
    """One vector register file and the instruction set around it."""

    name: str
    vector_bytes: int
    """Width of one vector register in bytes (64 for AVX-512, 16 for SSE and NEON)."""
    vector_registers: int
    """How many architectural vector registers the file has."""
    elt_bytes: int = 4
    """Width of the accumulator element a geometry counts lanes in (f32 and i32: 4)."""
    isa: str = "avx2"
    """The instruction family the renderer writes for: avx512, avx2, sse or neon."""
    fma: bool = True
    """Whether a fused multiply-add exists (plain SSE has none)."""
    vnni: bool = False
    """Whether AVX512-VNNI's u8 x s8 dot products (vpdpbusd) exist."""
    scratch_bytes: int = 16384
    """What one kernel's gathered block of pixel rows may take on the stack."""
    fma_chains: int = 1
    """Independent float accumulators the multiply-accumulate pipeline needs to
    issue one per cycle on every port (its latency times its ports: 4 x 2 on
    the x86 and NEON cores seen so far); a register tile of fewer runs that
    much below the unit's rate, and `lower-gebp` interleaves its row passes
    (`rtile.kernel.micro_rows`). 1: no such constraint is known."""
    mcu: Mcu | None = None
    """The M-profile CPU and its board, for the Cortex-M targets (None: an
    application processor whose code may run on this machine)."""
    fma_bytes: int = 0
    """The width one float32 multiply-accumulate issue works on, where it is
    narrower than a register (0: the register's width). Zen 4 executes a
    512-bit FMA as two 256-bit halves, so a zmm tile does no more float work
    per cycle than a ymm one while its column tail wastes twice the lanes
    (3136x24x144 single-thread on Zen 4: rm4 rn1 lanes16 77 GFLOP/s, rm4 rn3
    lanes8 108): its float32 register tiles are fitted to a file of this
    width (`float_file`: the same registers), its int8 ones keep the
    register's."""
    tiled: tuple[str, ...] = ("float32", "int8")
    """The element types whose matrix products the C prints as register-tiled
    kernels for this target; `gebp-tile` fits geometries only to those, the
    others keep the direct loops (the Cortex-M targets: int8 only, their
    float32 matrix products run the direct loops)."""

    @property
    def units(self) -> tuple[VectorUnit, ...]:
        """The vector units the C kernels may use, widest first (the file's own
        width and every narrower one it contains); none on a Cortex-M yet (its
        kernels are the portable C loops)."""
        if self.mcu is not None:
            return ()
        units = NEON_UNITS if self.isa == "neon" else X86_UNITS
        return tuple(u for u in units if u.bytes <= self.vector_bytes)

    def unit(self, lanes: int, elt_bytes: int = 4) -> VectorUnit | None:
        """The unit holding `lanes` elements of `elt_bytes`, if the target has it."""
        for u in self.units:
            if u.bytes == lanes * elt_bytes:
                return u
        return None

    @property
    def integer_only(self) -> bool:
        """Whether int8 plans for this target default to fixed-point
        requantization (the Cortex-M CPUs whose `Mcu` says so; x86 and the
        host keep float32 multipliers, bit-exact with onnxruntime)."""
        return self.mcu is not None and self.mcu.integer_only

    @property
    def int8_dot(self) -> Int8Dot:
        """The int8 multiply-accumulate of this target's kernels (on a
        Cortex-M: Helium's where the CPU has MVE, else the DSP extension's)."""
        if self.mcu is not None:
            if self.mcu.mve != "none":
                return "vmladava"
            return "smlad" if self.mcu.dsp else "none"
        if self.isa == "avx512" and self.vnni:
            return "vpdpbusd"
        if self.isa in ("avx2", "avx512"):
            return "pmaddwd"
        return "none"

    @property
    def int8_lanes(self) -> Literal["dsp", "mve"] | None:
        """The SIMD unit the int8 elementwise ops and pools of this target's
        C run on (`rtile.lanes`): Helium where the CPU has MVE, else the DSP
        extension's four bytes per general register, else none (their
        portable loops; the x86 targets' are the compiler's)."""
        if self.mcu is None:
            return None
        if self.mcu.mve != "none":
            return "mve"
        return "dsp" if self.mcu.dsp else None

    def float_file(self) -> Target:
        """The register file the float32 kernels tile: the registers at the
        width of one FMA issue (`fma_bytes`), where that is narrower."""
        if 0 < self.fma_bytes < self.vector_bytes:
            return replace(self, vector_bytes=self.fma_bytes)
        return self

    @property
    def int8_rows(self) -> int | None:
        """The rows an int8 micro-tile of this target may take where its
        instruction caps them (`INT8_DOT_ROWS`: Helium's VMLADAVA), else None."""
        return INT8_DOT_ROWS.get(self.int8_dot)

    def int8_file(self) -> Target:
        """The register file the int8 kernels tile: int32 accumulators in the
        width their dot-product instruction works on (`INT8_DOT_BYTES`)."""
        dot = self.int8_dot
        if dot in ("smlad", "vmladava"):
            return replace(self, vector_bytes=INT8_DOT_BYTES[dot], vector_registers=GPR_PAIRS,
                           elt_bytes=4)
        width = min(self.vector_bytes, INT8_DOT_BYTES[dot])
        return replace(self, vector_bytes=width, elt_bytes=4)

    @property
    def arch(self) -> str:
        """The machine architecture the target's code runs on."""
        if self.mcu is not None:
            return "arm"
        return "aarch64" if self.isa == "neon" else "x86_64"

    def with_elt_bytes(self, elt_bytes: int) -> Target:
        """The same file counted in elements of another width."""
        return replace(self, elt_bytes=elt_bytes)

    def cflags(self) -> tuple[str, ...]:
        """gcc flags enabling exactly the ISA the renderer uses for this target."""
        if self.mcu is not None:
            return self.mcu.cflags()
        if self.isa == "avx512":
            flags = ("-mavx2", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl")
            return flags + (("-mavx512vnni",) if self.vnni else ())
        if self.isa == "avx2":
            return ("-mavx2", "-mfma")
        if self.isa == "sse":
            return ("-msse4.2",)
        return ()


avx512 = Target("avx512", vector_bytes=64, vector_registers=32, isa="avx512", fma_chains=8)
avx512_vnni = Target(
    "avx512-vnni", vector_bytes=64, vector_registers=32, isa="avx512", vnni=True, fma_chains=8
)
zen4 = Target(
    "zen4", vector_bytes=64, vector_registers=32, isa="avx512", vnni=True, fma_chains=8,
    fma_bytes=32,
)
avx2 = Target("avx2", vector_bytes=32, vector_registers=16, isa="avx2", fma_chains=8)
sse = Target("sse", vector_bytes=16, vector_registers=16, isa="sse", fma=False, fma_chains=8)
neon = Target("neon", vector_bytes=16, vector_registers=32, isa="neon", fma_chains=8)

# The Cortex-M files the register-tile model sees: with the DSP extension a
# "vector" is one 32-bit general register (four int8 or two int16 lanes) and
# the count is `Mcu.general_registers`; with Helium, the eight 128-bit Q
# registers (Q0-Q7, which alias the FPU's s0-s31). `fma` is the FPU's VFMA.
# `isa` names the instruction family: "dsp" (ARMv7E-M) or "mve" (ARMv8.1-M).


def _cortex(mcu: Mcu, vector_bytes: int, vector_registers: int, isa: str) -> Target:
    """A Cortex-M target: int8 tiled only, a 2 KiB stack scratch."""
    return Target(mcu.cpu, tiled=("int8",), vector_bytes=vector_bytes,
                  vector_registers=vector_registers, isa=isa, scratch_bytes=2048, mcu=mcu)


cortex_m4 = _cortex(
    Mcu("cortex-m4", True, "single", "none", "fpv4-sp-d16", 10, 32, MPS2_AN386), 4, 10, "dsp"
)
cortex_m7 = _cortex(
    Mcu("cortex-m7", True, "double", "none", "fpv5-d16", 10, 32, MPS2_AN500), 4, 10, "dsp"
)
cortex_m55 = _cortex(
    Mcu("cortex-m55", True, "double", "float", "", 10, 32, MPS3_AN547), 16, 8, "mve"
)

PRESETS: dict[str, Target] = {
    t.name: t
    for t in (avx512, avx512_vnni, zen4, avx2, sse, neon, cortex_m4, cortex_m7, cortex_m55)
}


def detect_target(cpuinfo: str, machine: str) -> Target:
    """The preset matching a CPU, from /proc/cpuinfo text and `platform.machine()`.

    Pure so that tests can feed it any CPU; `host_target` feeds it this one.
    """
    if machine.lower() in ("aarch64", "arm64"):
        return replace(neon, name="host")
    flags: set[str] = set()
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
        if key.strip() == "flags":
            flags = set(value.split())
            break
    # AMD family 19h with AVX-512 is Zen 4 (Zen 3, the same family, has none)
    zen4_cpu = fields.get("vendor_id") == "AuthenticAMD" and fields.get("cpu family") == "25"
    if "avx512f" in flags and "avx512_vnni" in flags and zen4_cpu:
        base = zen4
    elif "avx512f" in flags:
        base = avx512_vnni if "avx512_vnni" in flags else avx512
    elif "avx2" in flags:
        base = replace(avx2, fma="fma" in flags)
    else:
        base = sse
    return replace(base, name="host")


@functools.cache
def host_target() -> Target:
    """The target of the running CPU."""
    path = Path("/proc/cpuinfo")
    text = path.read_text() if path.exists() else ""
    return detect_target(text, platform.machine())


def cpu_model_name(cpuinfo: str) -> str:
    """The CPU's model name in /proc/cpuinfo text ('' when it has none)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return ""


def host_cpu_name() -> str:
    """The running CPU's model name, for the tables the benchmarks print."""
    path = Path("/proc/cpuinfo")
    try:
        text = path.read_text() if path.exists() else ""
    except OSError:
        text = ""
    return cpu_model_name(text) or platform.processor() or "an unknown CPU"


def host_has_vnni() -> bool:
    """Whether the running CPU has AVX512-VNNI."""
    return host_target().vnni


def known_targets() -> tuple[str, ...]:
    """Every name `get_target` accepts."""
    return (*PRESETS, "host")


def get_target(name: str) -> Target:
    """The preset named `name`, or the running CPU for "host"."""
    if name == "host":
        return host_target()
    if name in PRESETS:
        return PRESETS[name]
    raise ValueError(
        f"unknown target '{name}'; known targets: {', '.join(known_targets())}"
    )


def label(target: Target) -> str:
    """The preset a resolved target is (its own name for "host"): the
    `rtile.target` label gebp-tile writes."""
    if target.name == "host":
        for preset in PRESETS.values():
            if preset == replace(target, name=preset.name):
                return preset.name
    return target.name


def can_run(target: Target) -> str | None:
    """None if code for `target` runs on this CPU, else the reason it does not
    (a Cortex-M target's code runs under QEMU on its board, never natively)."""
    if target.mcu is not None:
        return (
            f"target {target.name} is an M-profile CPU ({target.mcu.cpu}): its code "
            f"runs under qemu-system-arm -M {target.mcu.board.machine}, not natively"
        )
    host = host_target()
    if target.arch != host.arch:
        return f"target {target.name} is {target.arch}, this CPU is {host.arch}"
    order = {"sse": 0, "avx2": 1, "avx512": 2, "neon": 0}
    if order[target.isa] > order[host.isa]:
        return f"target {target.name} needs {target.isa}, this CPU has {host.isa}"
    if target.vnni and not host.vnni:
        return f"target {target.name} needs AVX512-VNNI, this CPU lacks it"
    return None
