"""C source for register-tiled GEBP micro-kernels, and a gcc/ctypes loader.

`render` prints one C function computing C = A x B (+ bias) (+ C) for a fixed
problem (M, N, K) and a `register_tile.Geometry`, decomposed exactly as
`register_tile.cover` says: full rm x (rn * lanes) passes, a column tail of
narrower vector columns whose last one may be partial (zeros past its width on
load, only its width stored), and a row band of the leftover rows. Nothing is
peeled to scalar code, so every output element is the same serial k-chain.

float32 uses GCC vector extensions, so one rendering serves every ISA; int8 x int8
-> int32 uses x86 intrinsics: AVX512-VNNI `vpdpbusd` (A offset to u8, corrected
by the column sums of B) where the target has it, `pmaddwd` on int16 pairs
otherwise. Both are exact. `mode="portable"` prints plain C loops instead.

Practices the measurements behind the spec call for: named accumulators (arrays
of vectors spill the C tile), an empty asm barrier after each B load and A splat
(else gcc folds them into every FMA as memory operands), and the operand order
of `register_tile.resident_floor` (hold the smaller operand set, stream one
register of the other).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tigris_ir.rtile import model as rt
from tigris_ir.rtile.targets import Target, host_target

Dtype = Literal["float32", "int8"]
Mode = Literal["vector", "portable"]


@dataclass(frozen=True)
class Problem:
    """C[m, n] = A[m, k] @ B[k, n] (+ bias[n]) (+ C[m, n] when accumulating).

    A and B are row-major. float32 stays float32; int8 operands accumulate into
    int32 (bias too).
    """

    m: int
    n: int
    k: int
    dtype: Dtype = "float32"
    bias: bool = False
    accumulate: bool = False

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) < 1:
            raise ValueError(f"GEBP extents must be positive, got {self}")
        if self.dtype not in ("float32", "int8"):
            raise ValueError(f"GEBP dtype must be float32 or int8, got {self.dtype}")

    @property
    def in_ctype(self) -> str:
        return "float" if self.dtype == "float32" else "int8_t"

    @property
    def acc_ctype(self) -> str:
        return "float" if self.dtype == "float32" else "int32_t"


@dataclass(frozen=True)
class Blocking:
    """Cache blocking around the micro-kernel: K blocks, row blocks, B packing."""

    kc: int
    mc: int
    pack_b: bool
    unroll: int = 1
    """k steps per trip of the micro-kernel loop (a `#pragma GCC unroll`)."""


def default_blocking(g: rt.Geometry, p: Problem) -> Blocking:
    """Cache blocks measured on Zen 3 (AVX2): K blocks of a ~48 KiB B micro-panel,
    64-row A blocks, the k loop unrolled by 4 (2 when B is read in place).

    B is packed (zero-padded panels) unless the site has at most two row passes,
    where packing would double the traffic of a memory-bound product; B is then
    read in place in short K blocks so that a block of B rows stays in L2 while
    the panels walk across it.
    """
    pack_b = p.m > 2 * g.rm or p.dtype == "int8"
    if pack_b:
        kc = max(128, min(512, (48 * 1024 // (rt.columns(g) * 4)) // 16 * 16))
        if p.k <= kc + kc // 2:
            kc = p.k
    else:
        kc = min(32, p.k)
    if p.dtype == "int8":
        kc = -(-kc // 4) * 4
    mc = max(g.rm, 64 // g.rm * g.rm)
    return Blocking(kc=kc, mc=mc, pack_b=pack_b, unroll=4 if pack_b else 2)


@dataclass
class _Tile:
    """One micro-tile body: rows x vecs vectors, the last of valid width `last`."""

    rows: int
    vecs: int
    last: int
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"tile_{self.rows}x{self.vecs}_{self.last}"


class _Kind(ABC):
    """The C snippets of one element kind at one vector width."""

    vt: str  # vector type
    acc: str  # accumulator element type
    group: int  # k values per packed step (1 for f32, 4 VNNI, 2 pmaddwd)
    bt: str  # packed B element type
    at: str  # packed/broadcast A type
    vnni: bool = False  # A offset to u8: needs the column-sum correction

    @abstractmethod
    def prelude(self) -> str: ...

    @abstractmethod
    def zero(self) -> str: ...

    @abstractmethod
    def load(self, ptr: str) -> str: ...

    @abstractmethod
    def store(self, ptr: str, v: str) -> str: ...

    @abstractmethod
    def add(self, x: str, y: str) -> str: ...

    @abstractmethod
    def splat(self, x: str) -> str: ...

    @abstractmethod
    def mac(self, acc: str, a: str, b: str) -> str: ...

    def keep(self, v: str) -> str:
        return f"KEEP({v});"


class _F32(_Kind):
    def __init__(self, lanes: int, target: Target):
        self.lanes, self.target = lanes, target
        self.vt, self.acc, self.group, self.bt, self.at = (
            "vf",
            "float",
            1,
            "float",
            "float",
        )

    def prelude(self) -> str:
        size = 4 * self.lanes
        return (
            f"typedef float vf __attribute__((vector_size({size})));\n"
            f"typedef float vfu __attribute__((vector_size({size}), aligned(4), "
            "may_alias));\n"
        )

    def zero(self) -> str:
        return "(vf){0}"

    def load(self, ptr: str) -> str:
        return f"(*(const vfu *)({ptr}))"

    def store(self, ptr: str, v: str) -> str:
        return f"*(vfu *)({ptr}) = {v};"

    def add(self, x: str, y: str) -> str:
        return f"({x} + {y})"

    def splat(self, x: str) -> str:
        # A brace list of one value is a broadcast load; `(vf){0} + x` costs a
        # zero register and a scalar add.
        return "((vf){" + ", ".join([x] * self.lanes) + "})"

    def mac(self, acc: str, a: str, b: str) -> str:
        return f"{acc} += {a} * {b};"


class _I8(_Kind):
    """int8 x int8 -> int32 on x86: VNNI dot products or int16 pair products."""

    def __init__(self, lanes: int, target: Target):
        if target.arch != "x86_64":
            raise NotImplementedError(
                f"int8 GEBP is rendered for x86 targets only, not {target.name}; "
                "use mode='portable'"
            )
        self.lanes, self.target = lanes, target
        self.bytes = 4 * lanes
        self.vnni = target.vnni
        if self.bytes == 64 and target.isa != "avx512":
            raise ValueError(f"{lanes} int32 lanes need AVX-512, {target.name} lacks it")
        self.group = 4 if self.vnni else 2
        self.bt = "int8_t" if self.vnni else "int16_t"
        self.acc, self.at = "int32_t", "int32_t"
        self.vt = {64: "__m512i", 32: "__m256i"}.get(self.bytes, "__m128i")
        self.p = {64: "_mm512", 32: "_mm256"}.get(self.bytes, "_mm")
        self.si = {64: "si512", 32: "si256"}.get(self.bytes, "si128")

    def prelude(self) -> str:
        return "#include <immintrin.h>\n"

    def zero(self) -> str:
        return f"{self.p}_setzero_{self.si}()"

    def load(self, ptr: str) -> str:
        if self.bytes == 8:
            return f"_mm_loadl_epi64((const __m128i *)({ptr}))"
        return f"{self.p}_loadu_{self.si}((const void *)({ptr}))"

    def store(self, ptr: str, v: str) -> str:
        if self.bytes == 8:
            return f"_mm_storel_epi64((__m128i *)({ptr}), {v});"
        return f"{self.p}_storeu_{self.si}((void *)({ptr}), {v});"

    def add(self, x: str, y: str) -> str:
        return f"{self.p}_add_epi32({x}, {y})"

    def splat(self, x: str) -> str:
        return f"{self.p}_set1_epi32({x})"

    def mac(self, acc: str, a: str, b: str) -> str:
        if self.vnni:
            return f"{acc} = {self.p}_dpbusd_epi32({acc}, {a}, {b});"
        return f"{acc} = {self.p}_add_epi32({acc}, {self.p}_madd_epi16({a}, {b}));"


def _kind(p: Problem, lanes: int, target: Target) -> _Kind:
    return _F32(lanes, target) if p.dtype == "float32" else _I8(lanes, target)


def _barrier(vector_bytes: int) -> str:
    """KEEP(x): an empty asm that pins x in a vector register.

    Only where the compiler has registers of that width: elsewhere gcc lowers the
    vector type to narrower ones and the constraint could not be met, so the
    same source still compiles (and stays correct) on a narrower machine.
    """
    x86_isa = {8: "__SSE__", 16: "__SSE__", 32: "__AVX__", 64: "__AVX512F__"}
    x86 = x86_isa.get(vector_bytes, "__TIGRIS_NO_SUCH_ISA__")
    arm = "1" if vector_bytes <= 16 else "0"
    return f"""#if (defined(__x86_64__) || defined(__i386__)) && defined({x86})
#define KEEP(x) __asm__("" : "+v"(x))
#elif defined(__aarch64__) && {arm}
#define KEEP(x) __asm__("" : "+w"(x))
#else
#define KEEP(x) ((void)0)
#endif
"""


def _render_tile(t: _Tile, k: _Kind, lanes: int, n: int, lda: int, unroll: int = 1) -> str:
    """One micro-tile: init accumulators, the k loop, store (partial last vector)."""
    acc, vt, w = k.acc, k.vt, lanes
    rows, vecs = range(t.rows), range(t.vecs)
    out: list[str] = []
    emit = out.append
    emit(
        f"static inline __attribute__((always_inline)) void {t.name}(\n"
        f"    const {k.at} *restrict a, const {k.bt} *restrict b, size_t ldb,\n"
        f"    {acc} *restrict c, int kc, int load_c, const {acc} *restrict row)\n{{"
    )
    names = {(r, v): f"c{r}_{v}" for r in rows for v in vecs}
    emit("  " + vt + " " + ", ".join(names.values()) + ";")

    def load_c(r: int, v: int) -> str:
        ptr = f"c + {r * n + v * w}"
        if v == t.vecs - 1 and t.last < w:
            return (
                f"{{ {acc} t_[{w}] __attribute__((aligned(64))) = {{0}}; "
                f"memcpy(t_, {ptr}, {t.last * 4}); {names[r, v]} = {k.load('t_')}; }}"
            )
        return f"{names[r, v]} = {k.load(ptr)};"

    emit("  if (load_c) {")
    out.extend("    " + load_c(r, v) for r in rows for v in vecs)
    emit("  } else {")
    out.extend(f"    {names[r, v]} = {k.zero()};" for r in rows for v in vecs)
    emit("  }")
    emit("  if (row) {")
    for v in vecs:
        emit(f"    {vt} r{v} = {k.load(f'row + {v * w}')};")
        out.extend(f"    {names[r, v]} = {k.add(names[r, v], f'r{v}')};" for r in rows)
    emit("  }")
    if unroll > 1:
        emit(f"  #pragma GCC unroll {unroll}")
    emit("  for (int s = 0; s < kc; ++s) {")
    emit(f"    const {k.bt} *bs = b + (size_t)s * ldb;")
    bw = w * k.group

    def b_load(v: int) -> list[str]:
        return [f"    {vt} b{v} = {k.load(f'bs + {v * bw}')}; {k.keep(f'b{v}')}"]

    def a_splat(r: int) -> list[str]:
        return [f"    {vt} a{r} = {k.splat(f'a[{r * lda} + s]')}; {k.keep(f'a{r}')}"]

    if t.vecs <= t.rows:
        # Hold the B vectors, stream one A splat per row.
        for v in vecs:
            out.extend(b_load(v))
        for r in rows:
            out.extend(a_splat(r))
            out.extend("    " + k.mac(names[r, v], f"a{r}", f"b{v}") for v in vecs)
    else:
        # Hold the A splats, stream one B vector per column.
        for r in rows:
            out.extend(a_splat(r))
        for v in vecs:
            out.extend(b_load(v))
            out.extend("    " + k.mac(names[r, v], f"a{r}", f"b{v}") for r in rows)
    emit("  }")
    for r in rows:
        for v in vecs:
            ptr = f"c + {r * n + v * w}"
            if v == t.vecs - 1 and t.last < w:
                emit(
                    f"  {{ {acc} t_[{w}] __attribute__((aligned(64))); "
                    f"{k.store('t_', names[r, v])} memcpy({ptr}, t_, {t.last * 4}); }}"
                )
            else:
                emit("  " + k.store(ptr, names[r, v]))
    emit("}")
    return "\n".join(out)


def _render_unpacked_tile(t: _Tile, k: _F32, lanes: int, n: int, lda: int, unroll: int = 1) -> str:
    """A float32 tile reading B in place: the partial last vector loads via a copy."""
    text = _render_tile(t, k, lanes, n, lda, unroll)
    if t.last == lanes:
        return text
    v = t.vecs - 1
    old = f"vf b{v} = {k.load(f'bs + {v * lanes}')};"
    new = (
        f"vf b{v}; {{ float t_[{lanes}] __attribute__((aligned(64))) = {{0}}; "
        f"memcpy(t_, bs + {v * lanes}, {t.last * 4}); b{v} = {k.load('t_')}; }}"
    )
    assert old in text
    return text.replace(old, new)


def check_geometry(g: rt.Geometry, p: Problem, target: Target) -> None:
    """Raise ValueError with the model's decline message if g cannot be rendered."""
    error = rt.check(target.with_elt_bytes(4), p.m, p.n, g)
    if error is not None:
        raise ValueError(f"cannot render GEBP {p.m}x{p.n}x{p.k}: {error}")


def render(
    g: rt.Geometry | None,
    p: Problem,
    target: Target,
    *,
    mode: Mode = "vector",
    name: str = "gebp",
    blocking: Blocking | None = None,
) -> str:
    """C source of `void name(const T *A, const T *B, const ACC *bias, ACC *C)`.

    `bias` is read only when the problem has one; C is read first only when it
    accumulates. g defaults to `register_tile.default` for the target.
    """
    if mode == "portable":
        return render_portable(p, name=name)
    if g is None:
        g = rt.default(target.with_elt_bytes(4), p.m, p.n)
        if g is None:
            raise ValueError(
                f"no register tile fits a {p.m}x{p.n} site on {target.name}; use mode='portable'"
            )
    check_geometry(g, p, target)
    bl = blocking or default_blocking(g, p)
    if p.dtype == "int8" and not bl.pack_b:
        bl = replace(bl, pack_b=True)  # int8 B is always regrouped by k
    if p.dtype == "int8" and bl.kc % 4:
        raise ValueError(f"int8 K blocks must be a multiple of 4, got kc={bl.kc}")
    kind = _kind(p, g.lanes, target)
    return _render_vector(g, p, kind, bl, name)


def _render_vector(g: rt.Geometry, p: Problem, k: _Kind, bl: Blocking, name: str) -> str:
    cv = rt.cover(g, p.m, p.n)
    lanes, nr = g.lanes, rt.columns(g)
    tv = len(cv.tail_widths)
    last = cv.tail_widths[-1] if tv else lanes
    nt = tv * lanes  # padded width of the tail panel
    npad = cv.n_full + nt
    grp = k.group
    is_f32 = isinstance(k, _F32)
    packed = bl.pack_b or not is_f32
    kg = -(-p.k // grp)  # packed A columns (k groups)
    lda = p.k if is_f32 else kg

    tiles: dict[tuple[int, int, int], _Tile] = {}

    def tile(rows: int, vecs: int, lst: int) -> _Tile:
        return tiles.setdefault((rows, vecs, lst), _Tile(rows, vecs, lst))

    body = tile(g.rm, g.rn, lanes) if cv.n_full and cv.m_full else None
    tail = tile(g.rm, tv, last) if tv and cv.m_full else None
    band = tile(cv.band_rows, g.rn, lanes) if cv.band_rows and cv.n_full else None
    band_tail = tile(cv.band_rows, tv, last) if cv.band_rows and tv else None

    src: list[str] = []
    emit = src.append
    emit(f"/* GEBP {p.m}x{p.n}x{p.k} {p.dtype}, {rt.show(g)}, cover {cv} */")
    emit("#include <stddef.h>\n#include <stdint.h>")
    emit("#include <stdlib.h>\n#include <string.h>")
    emit(k.prelude() + _barrier(4 * lanes))
    for t in tiles.values():
        if is_f32 and not packed:
            assert isinstance(k, _F32)
            emit(_render_unpacked_tile(t, k, lanes, p.n, lda, bl.unroll))
        else:
            emit(_render_tile(t, k, lanes, p.n, lda, bl.unroll))
    emit(_render_pack_b(p, k, cv, nr, nt, lanes) if packed else "")
    if not is_f32:
        emit(_render_pack_a(p, k, kg))

    it, at = p.in_ctype, p.acc_ctype
    emit(f"void {name}(const {it} *A, const {it} *B, const {at} *bias, {at} *C)\n{{")
    emit(f"  enum {{ M = {p.m}, N = {p.n}, K = {p.k}, KC = {bl.kc}, MC = {bl.mc} }};")
    needs_row = p.bias or (not is_f32 and k.vnni)
    if needs_row:
        emit(f"  {at} *rowv = aligned_alloc(64, {-(-npad * 4 // 64) * 64});")
        emit(f"  for (int j = 0; j < {npad}; ++j) rowv[j] = 0;")
        if p.bias:
            emit("  for (int j = 0; j < N; ++j) rowv[j] = bias[j];")
        if not is_f32 and k.vnni:
            emit("  /* vpdpbusd multiplies u8 by s8: A is offset by 128, so subtract")
            emit("     128 times the column sums of B once. */")
            emit("  for (int kk = 0; kk < K; ++kk)")
            emit("    for (int j = 0; j < N; ++j)")
            emit("      rowv[j] -= 128 * (int32_t)B[kk * N + j];")
    else:
        emit("  (void)bias;")
    row_expr = "rowv" if needs_row else "NULL"
    if not is_f32:
        emit(f"  int32_t *ap = aligned_alloc(64, {-(-p.m * kg * 4 // 64) * 64});")
        emit("  pack_a(A, ap);")
        a_base = "ap"
    else:
        a_base = "A"
    if packed:
        bytes_b = bl.kc * npad * (4 if is_f32 else (1 if grp == 4 else 2))
        emit(f"  {k.bt} *bp = aligned_alloc(64, {-(-bytes_b // 64) * 64});")
    emit("  for (int k0 = 0; k0 < K; k0 += KC) {")
    emit("    int kc = K - k0 < KC ? K - k0 : KC;")
    if not is_f32:
        emit(f"    int kq = (kc + {grp - 1}) / {grp};")
        emit(f"    int g0 = k0 / {grp};")
    else:
        emit("    int kq = kc, g0 = k0;")
    first_load = "1" if p.accumulate else "0"
    emit(f"    int load_c = k0 > 0 || {first_load};")
    emit(f"    const {at} *row = k0 == 0 ? {row_expr} : NULL;")
    if packed:
        emit("    pack_b(B, bp, k0, kc);")

    def call(t: _Tile, i: str, j0: str, width: str) -> str:
        if packed:
            bptr, ldb = f"bp + (size_t)kq * {grp} * ({j0})", f"{width} * {grp}"
        else:
            bptr, ldb = f"B + (size_t)k0 * N + ({j0})", "N"
        return (
            f"{t.name}({a_base} + (size_t)({i}) * {lda} + g0, {bptr}, {ldb}, "
            f"C + (size_t)({i}) * N + ({j0}), kq, load_c, row ? row + ({j0}) : NULL);"
        )

    emit(f"    for (int i0 = 0; i0 < {cv.m_full}; i0 += MC) {{")
    emit(f"      int i1 = i0 + MC < {cv.m_full} ? i0 + MC : {cv.m_full};")
    if body is not None:
        emit(f"      for (int j0 = 0; j0 < {cv.n_full}; j0 += {nr})")
        emit(f"        for (int i = i0; i < i1; i += {g.rm})")
        emit("          " + call(body, "i", "j0", str(nr)))
    if tail is not None:
        emit(f"      for (int i = i0; i < i1; i += {g.rm})")
        emit("        " + call(tail, "i", str(cv.n_full), str(nt)))
    emit("    }")
    if band is not None:
        emit(f"    for (int j0 = 0; j0 < {cv.n_full}; j0 += {nr})")
        emit("      " + call(band, str(cv.m_full), "j0", str(nr)))
    if band_tail is not None:
        emit("    " + call(band_tail, str(cv.m_full), str(cv.n_full), str(nt)))
    emit("  }")
    if packed:
        emit("  free(bp);")
    if not is_f32:
        emit("  free(ap);")
    if needs_row:
        emit("  free(rowv);")
    emit("}")
    return "\n".join(src) + "\n"


def _render_pack_b(p: Problem, k: _Kind, cv: rt.Cover, nr: int, nt: int, lanes: int) -> str:
    """Copy a K block of B into zero-padded panels, k-grouped for int8.

    Panel j0 (width w, padded) holds kq groups of w columns of `group` k values,
    at offset kq * group * j0, so a pass reads one contiguous stream.
    """
    grp = k.group
    it = p.in_ctype
    lines = [
        f"static void pack_b(const {it} *restrict B, {k.bt} *restrict bp,",
        "                   int k0, int kc)",
        "{",
        f"  int kq = (kc + {grp - 1}) / {grp};",
    ]
    if grp == 1:
        if cv.n_full:
            lines += [
                "  for (int s = 0; s < kc; ++s)",
                f"    for (int j0 = 0; j0 < {cv.n_full}; j0 += {nr})",
                f"      memcpy(bp + (size_t)kc * j0 + (size_t)s * {nr}, "
                f"B + (size_t)(k0 + s) * {p.n} + j0, {nr * 4});",
            ]
        if nt:
            n_tail = p.n - cv.n_full
            lines += [
                "  for (int s = 0; s < kc; ++s) {",
                f"    float *d = bp + (size_t)kc * {cv.n_full} + (size_t)s * {nt};",
                f"    memcpy(d, B + (size_t)(k0 + s) * {p.n} + {cv.n_full},",
                f"           {n_tail * 4});",
                f"    memset(d + {n_tail}, 0, {(nt - n_tail) * 4});",
                "  }",
            ]
        lines.append("  (void)kq;")
    else:
        lines += [
            "  for (int q = 0; q < kq; ++q)",
            f"    for (int j = 0; j < {cv.n_full + nt}; ++j) {{",
            f"      int j0 = j < {cv.n_full} ? j - j % {nr} : {cv.n_full};",
            f"      int w = j < {cv.n_full} ? {nr} : {nt};",
            f"      {k.bt} *d = bp + (size_t)kq * {grp} * j0 + ((size_t)q * w + (j - j0)) * {grp};",
            f"      for (int e = 0; e < {grp}; ++e) {{",
            f"        int kk = k0 + q * {grp} + e;",
            f"        d[e] = (j < {p.n} && kk < k0 + kc)",
            f"            ? ({k.bt})B[(size_t)kk * {p.n} + j] : 0;",
            "      }",
            "    }",
        ]
    lines.append("}")
    return "\n".join(lines)


def _render_pack_a(p: Problem, k: _Kind, kg: int) -> str:
    """Group each A row's k values into 32-bit words a splat broadcasts.

    VNNI: four bytes offset to u8 (a + 128); pmaddwd: two int16. Padding past K
    meets zero-padded B, so it adds nothing.
    """
    grp = k.group
    lines = [
        "static void pack_a(const int8_t *restrict A, int32_t *restrict ap)",
        "{",
        f"  for (int i = 0; i < {p.m}; ++i)",
        f"    for (int q = 0; q < {kg}; ++q) {{",
        "      uint32_t w = 0;",
        f"      for (int e = 0; e < {grp}; ++e) {{",
        f"        int kk = q * {grp} + e;",
        f"        int v = kk < {p.k} ? A[(size_t)i * {p.k} + kk] : 0;",
    ]
    if grp == 4:
        lines.append("        w |= (uint32_t)(uint8_t)(v + 128) << (8 * e);")
    else:
        lines.append("        w |= (uint32_t)(uint16_t)(int16_t)v << (16 * e);")
    lines += [
        "      }",
        f"      ap[(size_t)i * {kg} + q] = (int32_t)w;",
        "    }",
        "}",
    ]
    return "\n".join(lines)


def render_portable(p: Problem, *, name: str = "gebp") -> str:
    """Plain C loops with the same signature and the same serial k-chain."""
    it, at = p.in_ctype, p.acc_ctype
    init = "C[(size_t)i * N + j]" if p.accumulate else "0"
    bias = " + bias[j]" if p.bias else ""
    cast = "" if p.dtype == "float32" else "(int32_t)"
    return f"""/* GEBP {p.m}x{p.n}x{p.k} {p.dtype}, portable loops */
#include <stddef.h>
#include <stdint.h>
void {name}(const {it} *A, const {it} *B, const {at} *bias, {at} *C)
{{
  enum {{ M = {p.m}, N = {p.n}, K = {p.k} }};
  (void)bias;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {{
      {at} acc = {init}{bias};
      for (int k = 0; k < K; ++k)
        acc += {cast}A[(size_t)i * K + k] * {cast}B[(size_t)k * N + j];
      C[(size_t)i * N + j] = acc;
    }}
}}
"""


# ---------------------------------------------------------------- compiling

_BUILD_DIR: Path | None = None
_LIBS: dict[str, ctypes.CDLL] = {}


def _build_dir() -> Path:
    global _BUILD_DIR
    if _BUILD_DIR is None:
        _BUILD_DIR = Path(tempfile.mkdtemp(prefix="tigris-gebp-"))
        # Loaded objects stay mapped after their files go, so the directory
        # can be removed at exit whatever is still loaded.
        atexit.register(shutil.rmtree, _BUILD_DIR, True)
    return _BUILD_DIR


def compile_flags(target: Target | None) -> tuple[str, ...]:
    """-O3 -march=native for this CPU, plus the ISA flags the target's code uses."""
    flags = ("-O3", "-march=native", "-std=gnu11", "-ffp-contract=fast")
    return flags + (target.cflags() if target is not None else ())


def compile_shared(source: str, target: Target | None = None) -> Path:
    """Compile C source into a shared object in a per-process temp dir (cached)."""
    flags = compile_flags(target)
    key = hashlib.sha256((source + "\0" + " ".join(flags)).encode()).hexdigest()[:20]
    out = _build_dir() / f"gebp_{key}.so"
    if not out.exists():
        src = out.with_suffix(".c")
        src.write_text(source)
        cmd = ["gcc", *flags, "-shared", "-fPIC", str(src), "-o", str(out) + ".tmp"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"gcc failed ({' '.join(cmd)}):\n{res.stderr}")
        os.replace(str(out) + ".tmp", out)
    return out


def load_shared(source: str, target: Target | None = None) -> ctypes.CDLL:
    """Compile (cached) and dlopen C source."""
    path = compile_shared(source, target)
    key = str(path)
    if key not in _LIBS:
        _LIBS[key] = ctypes.CDLL(key)
    return _LIBS[key]


class GebpKernel:
    """A compiled GEBP function callable on numpy arrays."""

    def __init__(self, lib: ctypes.CDLL, name: str, problem: Problem, source: str):
        self.problem, self.source = problem, source
        self._fn: Any = getattr(lib, name)
        self._fn.restype = None
        self._fn.argtypes = [ctypes.c_void_p] * 4
        self.in_dtype = np.float32 if problem.dtype == "float32" else np.int8
        self.acc_dtype = np.float32 if problem.dtype == "float32" else np.int32

    def __call__(
        self,
        a: np.ndarray,
        b: np.ndarray,
        bias: np.ndarray | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        p = self.problem
        a = np.ascontiguousarray(a, dtype=self.in_dtype)
        b = np.ascontiguousarray(b, dtype=self.in_dtype)
        if a.shape != (p.m, p.k) or b.shape != (p.k, p.n):
            raise ValueError(f"expected {p.m}x{p.k} @ {p.k}x{p.n}, got {a.shape} @ {b.shape}")
        if p.bias:
            if bias is None:
                raise ValueError("this kernel adds a bias; pass one")
            bias = np.ascontiguousarray(bias, dtype=self.acc_dtype).reshape(p.n)
        if out is None:
            if p.accumulate:
                raise ValueError("this kernel accumulates into `out`; pass it")
            out = np.empty((p.m, p.n), dtype=self.acc_dtype)
        if out.dtype != self.acc_dtype or not out.flags.c_contiguous:
            raise ValueError("out must be a C-contiguous array of the accumulator type")
        self._fn(
            a.ctypes.data,
            b.ctypes.data,
            bias.ctypes.data if bias is not None else None,
            out.ctypes.data,
        )
        return out


def build(
    g: rt.Geometry | None,
    p: Problem,
    target: Target | None = None,
    *,
    mode: Mode = "vector",
    blocking: Blocking | None = None,
    name: str = "gebp",
) -> GebpKernel:
    """Render, compile and load one kernel (compiled once per process per source)."""
    target = target or host_target()
    source = render(g, p, target, mode=mode, name=name, blocking=blocking)
    lib = load_shared(source, target)
    return GebpKernel(lib, name, p, source)
