"""The targets as data: one description per machine a register tile is fitted to.

The register-tile model (`rtile.model`) reads two numbers of a machine: how wide
its vector registers are and how many it has. Everything else target-specific
lives here too, so that a pass, the C kernels, the autotuner and the benchmark
read one description: the vector units the C kernels may use (each with the
preprocessor condition that says a compiler targets it and its fused
multiply-add built-in), the int8 dot-product instruction, the compiler flags
that enable exactly that ISA, and the stack scratch a kernel may take. A new
target is one more entry here plus its instruction selection in the kernels.
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



def unit_of(arch: str, nbytes: int) -> VectorUnit | None:
    """The vector unit of `nbytes` of an architecture's ISA family, if any."""
    for u in NEON_UNITS if arch == "aarch64" else X86_UNITS:
        if u.bytes == nbytes:
            return u
    return None


Int8Dot = Literal["vpdpbusd", "pmaddwd", "none"]
"""How the int8 kernels multiply-accumulate: AVX512-VNNI's u8 x s8 groups of four
into int32 (`vpdpbusd`), AVX2's int16 pairs into int32 (`pmaddwd`, exact), or
plain C loops (`none`)."""

INT8_DOT_GROUP: dict[Int8Dot, int] = {"vpdpbusd": 4, "pmaddwd": 2, "none": 1}
"""The k steps one dot-product instruction consumes per lane."""

INT8_DOT_BYTES: dict[Int8Dot, int] = {"vpdpbusd": 64, "pmaddwd": 32, "none": 32}
"""The accumulator register width (bytes) the int8 kernels use with each
instruction: zmm for VNNI, ymm for AVX2 (the plain loops count in AVX2's)."""


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

    @property
    def units(self) -> tuple[VectorUnit, ...]:
        """The vector units the C kernels may use, widest first (the file's own
        width and every narrower one it contains)."""
        units = NEON_UNITS if self.isa == "neon" else X86_UNITS
        return tuple(u for u in units if u.bytes <= self.vector_bytes)

    def unit(self, lanes: int, elt_bytes: int = 4) -> VectorUnit | None:
        """The unit holding `lanes` elements of `elt_bytes`, if the target has it."""
        for u in self.units:
            if u.bytes == lanes * elt_bytes:
                return u
        return None

    @property
    def int8_dot(self) -> Int8Dot:
        """The int8 multiply-accumulate of this target's kernels."""
        if self.isa == "avx512" and self.vnni:
            return "vpdpbusd"
        if self.isa in ("avx2", "avx512"):
            return "pmaddwd"
        return "none"

    def int8_file(self) -> Target:
        """The register file the int8 kernels tile: int32 accumulators in the
        width their dot-product instruction works on (`INT8_DOT_BYTES`)."""
        width = min(self.vector_bytes, INT8_DOT_BYTES[self.int8_dot])
        return replace(self, vector_bytes=width, elt_bytes=4)

    @property
    def arch(self) -> str:
        """The machine architecture the target's code runs on."""
        return "aarch64" if self.isa == "neon" else "x86_64"

    def with_elt_bytes(self, elt_bytes: int) -> Target:
        """The same file counted in elements of another width."""
        return replace(self, elt_bytes=elt_bytes)

    def cflags(self) -> tuple[str, ...]:
        """gcc flags enabling exactly the ISA the renderer uses for this target."""
        if self.isa == "avx512":
            flags = ("-mavx2", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl")
            return flags + (("-mavx512vnni",) if self.vnni else ())
        if self.isa == "avx2":
            return ("-mavx2", "-mfma")
        if self.isa == "sse":
            return ("-msse4.2",)
        return ()


avx512 = Target("avx512", vector_bytes=64, vector_registers=32, isa="avx512")
avx512_vnni = Target(
    "avx512-vnni", vector_bytes=64, vector_registers=32, isa="avx512", vnni=True
)
avx2 = Target("avx2", vector_bytes=32, vector_registers=16, isa="avx2")
sse = Target("sse", vector_bytes=16, vector_registers=16, isa="sse", fma=False)
neon = Target("neon", vector_bytes=16, vector_registers=32, isa="neon")

PRESETS: dict[str, Target] = {t.name: t for t in (avx512, avx512_vnni, avx2, sse, neon)}


def detect_target(cpuinfo: str, machine: str) -> Target:
    """The preset matching a CPU, from /proc/cpuinfo text and `platform.machine()`.

    Pure so that tests can feed it any CPU; `host_target` feeds it this one.
    """
    if machine.lower() in ("aarch64", "arm64"):
        return replace(neon, name="host")
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            break
    if "avx512f" in flags:
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


def can_run(target: Target) -> str | None:
    """None if code for `target` runs on this CPU, else the reason it does not."""
    host = host_target()
    if target.arch != host.arch:
        return f"target {target.name} is {target.arch}, this CPU is {host.arch}"
    order = {"sse": 0, "avx2": 1, "avx512": 2, "neon": 0}
    if order[target.isa] > order[host.isa]:
        return f"target {target.name} needs {target.isa}, this CPU has {host.isa}"
    if target.vnni and not host.vnni:
        return f"target {target.name} needs AVX512-VNNI, this CPU lacks it"
    return None
