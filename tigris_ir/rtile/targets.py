"""The vector hardware a register tile is fitted to.

The register-tile model (`register_tile`) reads only two numbers of a machine: how
wide its vector registers are and how many it has. They are kept here, with the
ISA facts the C renderer needs (FMA, AVX512-VNNI, compiler flags), so that a pass,
the renderer and the benchmark all name a machine the same way.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass, replace
from pathlib import Path


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
