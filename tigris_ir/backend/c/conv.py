"""C emitters for convolutions and matrix products (see `c_band`).

Every band op becomes one call of a function specialised on the op's static
facts (shapes, kernel, strides, pads, groups, zero points, memref strides);
the band's origins and extents are its only runtime arguments, so every band
of an op, and every op of the same geometry, shares the function. Weights are
repacked at print time and passed as arguments.

Three fast paths, each with a plain-C `#else` branch over the same packed
weights (the portable build):

* pointwise (1x1, stride 1, no pads, one group) convolutions and matrix
  products with constant weights: a register-blocked GEBP whose rm x rn
  vector accumulators of `lanes` lanes, instruction, packing, K blocks, row
  blocks, panel sweeps and row edge tiles are the ops of the site's
  `rtile.kernel` (the `lower-gebp` pass), printed one to one (`panels_of`
  reads them); weights in the zero-padded column panels those ops state, a
  dynamic row count with a row tail; int8 runs, by the
  kernel's instruction, int16 pair products (`pmaddwd`, exact) with the zero
  point subtracted while the rows are packed, or on AVX512-VNNI u8 x s8 groups
  of four (`vpdpbusd`) on rows packed as unsigned bytes (int8 inputs + 128),
  the offset those rows hold over x - zp (`rtile.pack_a` offset, as
  `lower-gebp` states it) taken off the bias (`bias_cols`); then one
  requantization; a pointwise band of whole dense image rows runs as one
  call where its row blocks say so (`merge W`);
* depthwise convolutions: per output pixel one pointer per tap (a pad row of
  zeros, or of the input zero point, where the tap leaves the image), vectors
  over channels, the kernel, lanes, vectors and pixels a step its
  `rtile.depthwise` states; a float32 block of that many pixels of a row,
  channels in whole vectors, loads each input vector once per kernel row and
  multiplies it into every pixel whose window holds it (skipping the
  padding's columns at an edge), the same sums in the same order;
* every other convolution (strides, dilations, groups, channel multipliers):
  per output row, blocks of pixels gathered into a small stack buffer (im2col
  rows, tap-major, zeros for padding), then the same GEBP per group.

Anything else (weights that are not constants, channel cuts, channels or
pixels that are not dense, transposed convolutions, matrix products whose B
is an activation, a cut C or a transposed A; the bands `lower-gebp` states
`rtile.direct` on) runs a generic loop nest that
maps every global index through the operands' origins, with the bounds checks
on every row it reads. Float kernels use GCC vector extensions (any target);
int8 vector kernels need AVX2 and run the plain loops elsewhere.

Numerics: float32 sums in any order; int8 int32 sums, exact, then
`tigris_requant` (or the same float32 operations in AVX2 lanes:
convert, multiply, round to nearest even, add the zero point, clamp).
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from tigris_ir.backend.c import arm_m
from tigris_ir.backend.c.band import (
    CLoweringError,
    CTensor,
    CUnit,
    c_type,
    fixed_helpers,
    pack_fixed,
    register,
)
from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import (
    DEPTHWISE,
    DIRECT,
    GEOM,
    TARGET,
    KBlocksOp,
    KernelOp,
    PackOp,
    PanelsOp,
    clamp_of,
    depthwise_of,
    direct_of,
    kernel_of,
)
from tigris_ir.rtile import direct as rd
from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import targets as tg
from tigris_ir.rtile.sites import gemm_site
from tigris_ir.rtile.targets import host_target

_NP = {"int8_t": np.int8, "uint8_t": np.uint8}

# ---------------------------------------------------------------------------
# units, names and literals

_MEMO: weakref.WeakKeyDictionary[object, dict[str, str]] = weakref.WeakKeyDictionary()
_MEMO_BY_ID: dict[int, tuple[object, dict[str, str]]] = {}


def _memo(unit: CUnit) -> dict[str, str]:
    try:
        return _MEMO.setdefault(unit, {})
    except TypeError:  # a unit that takes no weak reference
        hit = _MEMO_BY_ID.get(id(unit))
        if hit is None or hit[0] is not unit:
            hit = (unit, {})
            _MEMO_BY_ID[id(unit)] = hit
        return hit[1]


def _helper(unit: CUnit, key: str, hint: str, build: Callable[[str], str]) -> str:
    """The name of the helper under `key`, printed once per unit.

    `build` may add helpers of its own; they land before this one."""
    memo = _memo(unit)
    name = memo.get(key)
    if name is None:
        name = unit.fresh(hint)
        code = build(name)
        unit.helper(f"c_conv.{key}", code)
        memo[key] = name
    return name


def _flt(v: float | np.floating) -> str:
    """A float32 C literal, exact."""
    return f"{float(np.float32(v)).hex()}f"


def _lit(v: int) -> str:
    return f"({v})" if v < 0 else str(v)


LANES = max(4, host_target().vector_bytes // 4)
"""float32 lanes of the host's vectors, the width of the float kernels."""

_FMA = {
    4: ("defined(__FMA__)", "__builtin_ia32_vfmaddps({a}, {b}, {c})", "__SSE__"),
    8: (
        "defined(__FMA__) && defined(__AVX__)",
        "__builtin_ia32_vfmaddps256({a}, {b}, {c})",
        "__AVX__",
    ),
    16: (
        "defined(__AVX512F__)",
        "__builtin_ia32_vfmaddps512_mask({a}, {b}, {c}, (unsigned short)-1, 4)",
        "__AVX512F__",
    ),
}
"""The x86 FMA built-ins by lane count, which GCC documents (no intrinsics
header: it costs more to parse than a whole band kernel to compile); clang
takes its generic `__builtin_elementwise_fma` where it has it."""


def _vec_prelude(unit: CUnit) -> None:
    """Vector types and macros of the float kernels."""
    lanes = LANES
    cond, fma, isa = _FMA.get(lanes, ("0", "", "__TIGRIS_NO_ISA__"))
    fma = fma.format(a="(a)", b="(b)", c="(c)")
    zeros = ", ".join(["0"] * lanes)
    code = f"""#if defined(TIGRIS_VECTOR) && defined({isa})
#define TG_VECTOR 1
#endif
#ifdef TG_VECTOR
typedef float tg_vf __attribute__((vector_size({4 * lanes})));
typedef float tg_vfu __attribute__((vector_size({4 * lanes}), aligned(4), may_alias));
#define TG_LD(p) (*(const tg_vfu *)(const void *)(p))
#define TG_ST(p, v) (*(tg_vfu *)(void *)(p) = (v))
#if defined(__clang__) && defined(__has_builtin)
#if __has_builtin(__builtin_elementwise_fma)
#define TG_FMA(c, a, b) ((c) = __builtin_elementwise_fma((a), (b), (c)))
#endif
#endif
#ifndef TG_FMA
#if {cond}
#define TG_FMA(c, a, b) ((c) = {fma})
#else
#define TG_FMA(c, a, b) ((c) += (a) * (b))
#endif
#endif
#if (defined(__x86_64__) || defined(__i386__)) && defined({isa})
#define TG_KEEP(x) __asm__("" : "+v"(x))
#else
#define TG_KEEP(x) ((void)0)
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define TG_UNROLL4 _Pragma("GCC unroll 4")
#else
#define TG_UNROLL4
#endif
/* a vector from / to the first n floats at p (no vector passes by value:
   a unit printed for wider vectors than its target has must still build) */
#define TG_LDP(dst, p, n) \\
  do {{ float t_[{lanes}] = {{{zeros}}}; memcpy(t_, (p), (size_t)(n) * sizeof(float)); \\
       (dst) = TG_LD(t_); }} while (0)
#define TG_STP(p, v, n) \\
  do {{ float t_[{lanes}]; TG_ST(t_, (v)); \\
       memcpy((p), t_, (size_t)(n) * sizeof(float)); }} while (0)
#endif"""
    unit.helper("c_conv.vec", code)


def _gebp_prelude(unit: CUnit, unit_: tg.VectorUnit) -> str:
    """Vector types and macros of the float GEBP kernels of one vector unit;
    returns the guard macro defined where the compiler targets that unit."""
    lanes = unit_.bytes // 4
    fma = unit_.fma.format(a="(a)", b="(b)", c="(c)") if unit_.fma else ""
    cond = unit_.fma_enabled if fma else "0"
    zeros = ", ".join(["0"] * lanes)
    guard = f"TG_V{lanes}"
    code = f"""#if defined(TIGRIS_VECTOR) && ({unit_.enabled})
#define {guard} 1
typedef float tg_v{lanes} __attribute__((vector_size({unit_.bytes})));
typedef float tg_v{lanes}u __attribute__((vector_size({unit_.bytes}), aligned(4), may_alias));
#define TG_LD{lanes}(p) (*(const tg_v{lanes}u *)(const void *)(p))
#define TG_ST{lanes}(p, v) (*(tg_v{lanes}u *)(void *)(p) = (v))
#if defined(__clang__) && defined(__has_builtin)
#if __has_builtin(__builtin_elementwise_fma)
#define TG_FMA{lanes}(c, a, b) ((c) = __builtin_elementwise_fma((a), (b), (c)))
#endif
#endif
#ifndef TG_FMA{lanes}
#if {cond}
#define TG_FMA{lanes}(c, a, b) ((c) = {fma})
#else
#define TG_FMA{lanes}(c, a, b) ((c) += (a) * (b))
#endif
#endif
#ifndef TG_KEEPV
#if defined(__x86_64__) || defined(__i386__)
#define TG_KEEPV(x) __asm__("" : "+v"(x))
#elif defined(__aarch64__)
#define TG_KEEPV(x) __asm__("" : "+w"(x))
#else
#define TG_KEEPV(x) ((void)0)
#endif
#endif
#ifndef TG_UNROLLV4
#if defined(__GNUC__) && !defined(__clang__)
#define TG_UNROLLV4 _Pragma("GCC unroll 4")
#else
#define TG_UNROLLV4
#endif
#endif
/* a vector from / to the first n floats at p */
#define TG_LDP{lanes}(dst, p, n) \\
  do {{ float t_[{lanes}] = {{{zeros}}}; memcpy(t_, (p), (size_t)(n) * sizeof(float)); \\
       (dst) = TG_LD{lanes}(t_); }} while (0)
#define TG_STP{lanes}(p, v, n) \\
  do {{ float t_[{lanes}]; TG_ST{lanes}(t_, (v)); \\
       memcpy((p), t_, (size_t)(n) * sizeof(float)); }} while (0)
#endif"""
    unit.helper(f"c_conv.gebp{lanes}", code)
    return guard


def _i8_prelude(unit: CUnit, fixed: bool = False) -> None:
    """AVX2 helpers of the int8 kernels, defined (with TG_AVX2) where they
    exist; under fixed-point requantization none (the kernels run their
    plain loops, whose requantization is `tigris_requant_fx`)."""
    if fixed:
        fixed_helpers(unit)
        return
    code = """#if defined(TIGRIS_VECTOR) && defined(__AVX2__)
#define TG_AVX2 1
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#define TG_UNROLL4I _Pragma("GCC unroll 4")
#else
#define TG_UNROLL4I
#endif
#define TG_KEEPI(x) __asm__("" : "+v"(x))
static inline __attribute__((unused)) int32_t tg_ld32(const int16_t *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
/* tigris_requant on eight lanes: the same float32 operations in order
   (round: to nearest even, the default mode nearbyintf uses). */
static inline __attribute__((unused)) __m256i tg_rq(
    __m256i acc, __m256 m, __m256 zp, __m256 lo, __m256 hi) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), m);
  v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_add_ps(v, zp);
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_cvttps_epi32(v);
}
/* Eight int32 lanes already in range, stored as n bytes. */
static inline __attribute__((unused)) void tg_st8s(int8_t *p, __m256i v, int n) {
  __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  h = _mm_packs_epi16(h, h);
  if (n == 8) { _mm_storel_epi64((__m128i *)(void *)p, h); return; }
  unsigned char t[16];
  _mm_storeu_si128((__m128i *)(void *)t, h);
  memcpy(p, t, (size_t)n);
}
static inline __attribute__((unused)) void tg_st8u(uint8_t *p, __m256i v, int n) {
  __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  h = _mm_packus_epi16(h, h);
  if (n == 8) { _mm_storel_epi64((__m128i *)(void *)p, h); return; }
  unsigned char t[16];
  _mm_storeu_si128((__m128i *)(void *)t, h);
  memcpy(p, t, (size_t)n);
}
static inline __attribute__((unused)) __m256i tg_ld8u(const uint8_t *p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
static inline __attribute__((unused)) __m256i tg_ld8s(const int8_t *p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
static inline __attribute__((unused)) __m256i tg_ldi(const int32_t *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
#endif"""
    unit.helper("c_conv.i8", code)


def _i8_512_prelude(unit: CUnit, fixed: bool = False) -> None:
    """AVX-512 (F, BW, VL) helpers of the int8 depthwise kernel, defined (with
    TG_AVX512I) where they exist: int16 pair products (`vpdpwssd` with
    VNNI, `vpmaddwd` + add without) and `tigris_requant` on sixteen lanes."""
    _i8_prelude(unit, fixed)
    if fixed:
        return
    code = """#if defined(TG_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && \\
    defined(__AVX512VL__)
#define TG_AVX512I 1
#ifdef __AVX512VNNI__
#define TG_DPWSSD(acc, a, b) ((acc) = _mm512_dpwssd_epi32((acc), (a), (b)))
#else
#define TG_DPWSSD(acc, a, b) ((acc) = _mm512_add_epi32((acc), _mm512_madd_epi16((a), (b))))
#endif
/* tigris_requant on sixteen lanes: the same float32 operations in order. */
static inline __attribute__((unused)) __m512i tg_rq16(
    __m512i acc, __m512 m, __m512 zp, __m512 lo, __m512 hi) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), m);
  v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm512_add_ps(v, zp);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_cvttps_epi32(v);
}
#endif"""
    unit.helper("c_conv.i8_512", code)


def _vnni_prelude(unit: CUnit, fixed: bool = False) -> None:
    """AVX512-VNNI helpers of the int8 GEBP kernels, defined (with TG_VNNI)
    where the compiler targets VNNI: u8 x s8 groups of four k steps
    (`vpdpbusd`) into sixteen int32 lanes, and their requantized stores."""
    _i8_512_prelude(unit, fixed)
    if fixed:
        return
    code = """#if defined(TG_AVX512I) && defined(__AVX512VNNI__)
#define TG_VNNI 1
static inline __attribute__((unused)) int32_t tg_ld32b(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
/* Sixteen int32 lanes already in range, stored as their first n bytes
   (saturating narrows, exact in range; no masked stores: gcc 12 fails on them). */
static inline __attribute__((unused)) void tg_st16s(int8_t *p, __m512i v, int n) {
  __m128i h = _mm512_cvtsepi32_epi8(v);
  if (n == 16) { _mm_storeu_si128((__m128i *)(void *)p, h); return; }
  unsigned char t[16];
  _mm_storeu_si128((__m128i *)(void *)t, h);
  memcpy(p, t, (size_t)n);
}
static inline __attribute__((unused)) void tg_st16u(uint8_t *p, __m512i v, int n) {
  __m128i h = _mm512_cvtusepi32_epi8(v);
  if (n == 16) { _mm_storeu_si128((__m128i *)(void *)p, h); return; }
  unsigned char t[16];
  _mm_storeu_si128((__m128i *)(void *)t, h);
  memcpy(p, t, (size_t)n);
}
#endif"""
    unit.helper("c_conv.vnni", code)


# ---------------------------------------------------------------------------
# operands as the kernels index them


@dataclass(frozen=True)
class _View:
    """An operand's static strides and its bounds (origin, extent) per axis."""

    strides: tuple[int, ...]
    origin: tuple[str, ...]
    extent: tuple[str, ...]

    def bounds(self) -> str:
        items = [v for pair in zip(self.origin, self.extent) for v in pair]
        return f"(const int[{len(items)}]){{{', '.join(items)}}}"


def _view(t: CTensor, rank: int | None = None) -> _View:
    """The operand's view; a rank-3 feature map gains an H axis of one row.

    The stride of an axis of size one is never used (its index is always 0)
    and reads 0, so that bands of every height share one kernel."""
    strides = tuple(0 if d == 1 else s for d, s in zip(t.shape, t.strides))
    origin, extent = t.origin, t.extent
    if rank == 4 and t.rank == 3:
        strides = (strides[0], 0, *strides[1:])
        origin = (origin[0], "0", *origin[1:])
        extent = (extent[0], "1", *extent[1:])
    return _View(tuple(strides), tuple(origin), tuple(extent))


def _st(t: CTensor) -> tuple[int, ...]:
    """The strides `_view` gives the operand."""
    return _view(t).strides


def _unpack(var: str, stem: str, rank: int) -> list[str]:
    """`const int <stem>l<a> = var[..], <stem>n<a> = ..` for every axis."""
    out = []
    for a in range(rank):
        out.append(
            f"  const int {stem}l{a} = {var}[{2 * a}], {stem}n{a} = {var}[{2 * a + 1}];"
            f" (void){stem}l{a}; (void){stem}n{a};"
        )
    return out


def _voids(*names: str) -> str:
    return "  " + " ".join(f"(void){n};" for n in names)


def _const_or_ptr(unit: CUnit, t: CTensor, hint: str) -> str:
    """A constant operand as a unit constant, anything else as its pointer."""
    if t.value is not None:
        return unit.const(hint, np.ascontiguousarray(t.value))
    return t.name


def _whole(op: nn.NNOp, t: CTensor, what: str) -> None:
    if t.cut:
        raise CLoweringError(f"{op.name}: the {what} is cut along axes {list(t.cut)}")
    if not t.contiguous():
        raise CLoweringError(f"{op.name}: the {what} is not a dense row-major array")


# ---------------------------------------------------------------------------
# int8 facts


@dataclass(frozen=True)
class _Q:
    """Zero points, ranges and types of an op on the integer path."""

    xt: str
    yt: str
    xzp: int
    yzp: int
    lo: int
    hi: int
    sx: np.float32
    sy: np.float32
    fixed: bool = False
    """`nn.requant = "fixed"`: packed Q31 multipliers (`band.pack_fixed`) and
    `tigris_requant_fx`, the int8 vector kernels (float32 requantization in
    lanes) left out."""
    short: bool = False
    """The Cortex-M kernels' short fixed-point form applies to every column
    (`arm_m.short_requant`: the same packed multipliers, fewer instructions)."""

    @property
    def mt(self) -> str:
        """The C type of the multipliers."""
        return "int64_t" if self.fixed else "float"


def _qkey(q: _Q | None, scales: bool = False) -> str:
    """What a kernel specialises on: types and zero points, the scales only
    where it forms multipliers from runtime weight scales."""
    if q is None:
        return "f32"
    tail = f".{float(q.sx).hex()}.{float(q.sy).hex()}" if scales else ""
    return (f"{q.xt}.{q.xzp}.{q.yt}.{q.yzp}{tail}" + (".fx" if q.fixed else "")
            + (".fs" if q.short else ""))


def _quant(op: nn.NNOp, x: SSAValue, y: SSAValue) -> _Q | None:
    """int8 facts, None for a float op; CLoweringError off the integer path."""
    if not op.is_quantized():
        return None
    if op.quant_kind() is not nn.QuantKind.INTEGER:
        raise CLoweringError(f"{op.name}: a quantized op off the integer path has no C lowering")
    qx, qy = nn.quant_of(x), nn.quant_of(y)
    if qx is None or qy is None:
        raise CLoweringError(f"{op.name}: a quantized op needs quantized input and result")
    ydt = nn.dtype_of(y)
    info = np.iinfo(ydt)
    return _Q(
        xt=c_type(nn.dtype_of(x)),
        yt=c_type(ydt),
        xzp=int(qx.zp_value),
        yzp=int(qy.zp_value),
        lo=int(info.min),
        hi=int(info.max),
        sx=np.float32(qx.scale_value),
        sy=np.float32(qy.scale_value),
        fixed=nn.requant_fixed(op),
    )


def _target_label(op: nn.NNOp) -> str | None:
    """The op's `rtile.target` (gebp-tile's), if any."""
    label = op.attributes.get(TARGET)
    return label.data if isinstance(label, StringAttr) else None


def _multipliers(q: _Q, ws: np.ndarray, n: int) -> np.ndarray:
    """`requantize_acc`'s float32(s_x * s_w) / s_y, per output channel."""
    m = (q.sx * np.asarray(ws, np.float32).reshape(-1)) / q.sy
    m = np.asarray(m, np.float32)
    m = np.ascontiguousarray(np.broadcast_to(m, (n,)) if m.size == 1 else m)
    return pack_fixed(m) if q.fixed else m


def _mult_expr(q: _Q, ws: CTensor | None, idx: str) -> str:
    """C for the multiplier of channel `idx` read from the runtime scales `ws`."""
    if ws is None:
        raise CLoweringError("no weight scales")
    if q.fixed:
        raise CLoweringError(
            "fixed-point requantization needs constant weight scales (run-time scales given)"
        )
    i = idx if math.prod(ws.shape) > 1 else "0"
    return f"((({_flt(q.sx)}) * ws[{i}]) / ({_flt(q.sy)}))"


def _store(q: _Q | None, acc: str, mult: str) -> str:
    if q is None:
        return acc
    if q.fixed:
        return f"({q.yt})tigris_requant_fx({acc}, {mult}, {q.yzp}, {q.lo}, {q.hi})"
    return f"({q.yt})tigris_requant({acc}, {mult}, {q.yzp}, {q.lo}, {q.hi})"


# ---------------------------------------------------------------------------
# GEBP panels


@dataclass(frozen=True)
class _Sweep:
    """One `rtile.panels` sweep and its `rtile.micro`: panels of `width` packed
    columns from column `lo` to `hi`, swept by tiles of `rows` x `vectors`
    vectors whose last is `last` lanes wide, then the `edges` row tiles."""

    lo: int
    hi: int
    width: int
    rows: int
    vectors: int
    last: int
    edges: tuple[int, ...]
    unroll: int

    @property
    def panels(self) -> int:
        return -(-(self.hi - self.lo) // self.width)

    def tile_rows(self) -> tuple[int, ...]:
        return (self.rows, *self.edges)


@dataclass(frozen=True)
class _Panels:
    """Weights B[k, n] as zero-padded column panels and the kernel that sweeps
    them, as the site's `rtile.kernel` op states them (`lower-gebp`)."""

    k: int
    n: int
    int8: bool
    rm: int
    rn: int
    lanes: int
    nfull: int
    tv: int
    last: int
    plan: rk.KernelPlan
    unit: tg.VectorUnit
    """The vector unit of the float kernels (the int8 ones name theirs by `plan.dot`)."""
    sweeps: tuple[_Sweep, ...] = ()
    groups: int = 1
    packing: str = ""
    """How A reaches the sweeps: "" read in place, "rows" packed, "im2col" gathered."""
    clamp: tuple[float | None, float | None] | None = None
    """(lo, hi) of an activation fused into the epilogue (`bias_clamp`), else None."""
    offset: int = 0
    """What the packed rows hold over x - zp (`rtile.pack_a` offset; `offset_rows`)."""

    @property
    def nr(self) -> int:
        return self.rn * self.lanes

    @property
    def ntp(self) -> int:
        return self.tv * self.lanes

    @property
    def npad(self) -> int:
        return sum(s.panels * s.width for s in self.sweeps)

    @property
    def kp(self) -> int:
        """Packed rows: K rounded up to the dot's group of k steps."""
        return self.plan.kp

    @property
    def group(self) -> int:
        """The k steps one multiply-accumulate takes (the packing's interleave)."""
        return rk.dot_group(self.plan.dot)

    @property
    def vnni(self) -> bool:
        """Whether the kernel runs u8 x s8 groups of four (`vpdpbusd`)."""
        return self.plan.dot == "vpdpbusd"

    @property
    def offset_rows(self) -> bool:
        """Whether the packed rows hold x - zp plus the `offset` the bias takes
        off (`vpdpbusd`: unsigned bytes; `vmladava`: signed bytes)."""
        return self.plan.dot in rk.OFFSET_DOTS

    @property
    def size(self) -> int:
        return self.kp * self.npad

    def key(self) -> str:
        p = self.plan
        return (
            f"{self.k}x{self.n}{'i' if self.int8 else 'f'}r{self.rm}n{self.rn}l{self.lanes}"
            f".{p.dot}.{p.kp}.{p.kc}.{p.mc}"
            + "".join(f".{s.lo}-{s.hi}:{s.width}/{s.tile_rows()}u{s.unroll}" for s in self.sweeps)
            + (f".clamp{self.clamp}" if self.clamp is not None else "")
        )


INT8_LANES: dict[str, tuple[int, ...]] = {
    "vpdpbusd": (16, 8), "pmaddwd": (8,), "smlad": (2,), "vmladava": (2,), "none": (8,)
}
"""The int32 lanes the int8 kernels of each instruction are written for."""


def _tiled(op: nn.NNOp) -> bool:
    """Whether the op's band runs its register-tiled kernel (`rtile.kernel`);
    False where it runs the direct loops (`rtile.direct`) or is no site, a
    diagnostic where the passes have not run."""
    if kernel_of(op) is not None:
        if DIRECT in op.attributes:
            raise CLoweringError(
                f"{op.name}: it states both its direct loops (rtile.direct) and a kernel "
                "(rtile.kernel)"
            )
        return True
    if DIRECT in op.attributes or gemm_site(op) is None:
        return False
    if GEOM in op.attributes:
        raise CLoweringError(
            f"{op.name}: this matrix product has a register tile (#rtile.geom) but no "
            "kernel (rtile.kernel): run --lower-gebp"
        )
    if TARGET not in op.attributes:
        raise CLoweringError(
            f"{op.name}: this matrix product has no register-tile decision "
            "(rtile.target, #rtile.geom, rtile.kernel): run --gebp-tile and --lower-gebp"
        )
    return False


def _operand(t: CTensor) -> rd.Operand:
    return rd.Operand(t.shape, t.strides, t.cut, t.value is not None)


def _direct(op: nn.NNOp, ins: Sequence[CTensor], y: CTensor, int8: bool) -> bool:
    """Whether the op's band runs the direct loops, as `lower-gebp` states
    it (`rtile.direct`); a diagnostic naming the op where the band cannot run
    a kernel (`tigris_ir.rtile.direct`) and the IR does not say so."""
    try:
        stated = direct_of(op)
    except VerifyException as e:
        raise CLoweringError(f"{op.name}: {e}") from None
    tiled = _tiled(op)
    xs, yo = [_operand(t) for t in ins], _operand(y)
    if isinstance(op, nn.ConvOp):
        forced = rd.conv_reason(op, xs, yo, int8, tiled)
    else:
        forced = rd.matmul_reason(op, xs, yo, int8, tiled)
    if stated is None and forced is not None:
        raise CLoweringError(
            f"{op.name}: its band runs no kernel ({forced}), but the IR does not state its "
            f"direct loops ({DIRECT}): run --lower-gebp"
        )
    return stated is not None


def _dw_plan(op: nn.NNOp, int8: bool) -> rk.DepthwisePlan:
    """The depthwise kernel the op's `rtile.depthwise` states; a diagnostic
    naming the op where it has none, or one this printer and the op's target
    do not run (the C's float vectors are `C_FLOAT_LANES` wide)."""
    try:
        plan = depthwise_of(op)
    except VerifyException as e:
        raise CLoweringError(f"{op.name}: {e}") from None
    if plan is None:
        raise CLoweringError(
            f"{op.name}: this depthwise convolution states no kernel ({DEPTHWISE}): "
            "run --lower-gebp"
        )
    isa = arm_m.depthwise_isa(_target_label(op)) if int8 else None
    want = isa or "vector"
    lanes = (
        rk.DW_LANES[cast(rk.DwKernel, isa)] if isa else rk.DW_INT8_LANES if int8 else LANES
    )
    said = f"{op.name}: its {DEPTHWISE} states"
    if plan.kernel != want:
        raise CLoweringError(
            f"{said} the {plan.kernel} kernel; a{'n int8' if int8 else ' float32'} depthwise "
            f"convolution of target '{_target_label(op) or 'host'}' runs the {want} one"
        )
    if plan.lanes != lanes:
        raise CLoweringError(
            f"{said} {plan.lanes} lanes; the {want} kernel of "
            f"{'int8' if int8 else 'float32'} runs {lanes}"
        )
    if (int8 or isa) and plan.pixels != 1:
        raise CLoweringError(f"{said} blocks of {plan.pixels} pixels; the int8 kernels run one")
    if isa and plan.vectors != 1:
        raise CLoweringError(f"{said} {plan.vectors} vectors a step; the {isa} kernel runs one")
    return plan


def _panels(op: nn.NNOp, k: int, n: int, int8: bool, merge: bool = False) -> _Panels:
    """The op's kernel as the printer needs it; a diagnostic naming the op
    when a pass has not made it, or states a row merge (`merge W`) where the
    band's driver has none to follow (`merge`: it has, a pointwise one)."""
    kern = kernel_of(op)
    if kern is None:
        raise CLoweringError(f"{op.name}: no rtile.kernel: run --gebp-tile and --lower-gebp")
    if not merge and kern.row_blocks.merge is not None:
        raise CLoweringError(
            f"{op.name}: its rtile.row_blocks state merge {kern.row_blocks.merge_width}, which "
            "only a pointwise convolution's kernel runs"
        )
    label = op.attributes.get(TARGET)
    name = label.data if isinstance(label, StringAttr) else "host"
    try:
        target = tg.get_target(name)
    except ValueError as e:
        raise CLoweringError(f"{op.name}: rtile.target: {e}") from None
    try:
        p = panels_of(kern, target)
    except CLoweringError as e:
        raise CLoweringError(f"{op.name}: {e}") from None
    if (p.k, p.n, p.int8) != (k, n, int8):
        raise CLoweringError(
            f"{op.name}: its rtile.kernel is a{'n int8' if p.int8 else ' float'} {p.k} x {p.n} "
            f"product, the op a{'n int8' if int8 else ' float'} {k} x {n} one"
        )
    return p


def _expect(
    op: nn.NNOp, p: _Panels, packing: str, groups: int = 1, q: _Q | None = None
) -> None:
    """The band's driver reaches A as `packing` says, for `groups` groups, and
    packs int8 inputs of q's type and zero point as the kernel's instruction
    takes them: its kernel must state the same (the offset of its packed rows)."""
    if (p.packing, p.groups) != (packing, groups):
        said = {
            "": "reads A in place",
            "rows": "packs A's rows",
            "im2col": "gathers im2col rows",
            "window": "reads its pixels' windows in place",
            "winograd": "runs Winograd's F(4, 3)",
        }
        raise CLoweringError(
            f"{op.name}: its rtile.kernel {said[p.packing]} for {p.groups} group(s); the band "
            f"{said[packing]} for {groups}"
        )
    if q is not None and p.offset_rows:
        want = rk.row_offset(p.plan.dot, q.xt == "uint8_t", q.xzp)
        if p.offset != want:
            raise CLoweringError(
                f"{op.name}: its rtile.pack_a states offset {p.offset}, but {p.plan.dot} rows "
                f"packed from {q.xt} inputs of zero point {q.xzp} hold x - zp + {want}"
            )


def _sweep(op: PanelsOp) -> _Sweep:
    m = op.micro
    g = m.geom.geometry
    return _Sweep(
        op.lo.value.data,
        op.hi.value.data,
        op.width.value.data,
        g.rm,
        g.rn,
        m.last.value.data,
        m.edge_rows,
        m.unroll.value.data,
    )


def panels_of(kern: KernelOp, target: tg.Target) -> _Panels:
    """The panels and kernel an `rtile.kernel` op states, on `target`."""
    dot = kern.dot.data
    int8 = dot != "fma"
    k, n = kern.k.value.data, kern.n.value.data
    blocks = kern.row_blocks
    body = list(blocks.body.block.ops)
    pack = body[0] if body and isinstance(body[0], PackOp) else None
    rest = body[1:] if pack is not None else body
    kblocks = rest[0] if len(rest) == 1 and isinstance(rest[0], KBlocksOp) else None
    if int8 and (pack is None or kblocks is not None):
        raise CLoweringError(
            f"{kern.name}: an int8 kernel packs its rows (rtile.pack_a) and sweeps the "
            "whole contraction (no rtile.k_blocks)"
        )
    if not int8 and kblocks is None:
        raise CLoweringError(f"{kern.name}: a float kernel sweeps its panels in rtile.k_blocks")
    sweep_ops = list(kblocks.body.block.ops) if kblocks is not None else rest
    if not sweep_ops or not all(isinstance(o, PanelsOp) for o in sweep_ops):
        raise CLoweringError(f"{kern.name}: the sweeps are rtile.panels ops")
    sweeps: list[_Sweep] = [_sweep(cast(PanelsOp, o)) for o in sweep_ops]
    first = sweeps[0]
    lanes = first.width // first.vectors
    if len(sweeps) > 2 or any(s.width // s.vectors != lanes for s in sweeps):
        raise CLoweringError(f"{kern.name}: at most two sweeps of one vector width")
    whole = first.last == lanes and (first.hi - first.lo) % first.width == 0
    full = first if whole else None
    tail = sweeps[-1] if len(sweeps) == 2 or full is None else None
    if (
        first.lo != 0
        or (full is None and len(sweeps) == 2)
        or (tail is not None and (tail.lo != (full.hi if full else 0) or tail.panels != 1))
        or sweeps[-1].hi != n
    ):
        raise CLoweringError(
            f"{kern.name}: the full panels from column 0, then one panel of the column "
            f"tail, up to column {n}"
        )
    if any(s.rows != first.rows or s.edges != tuple(range(1, s.rows)) for s in sweeps):
        raise CLoweringError(
            f"{kern.name}: every sweep takes tiles of {first.rows} rows and edge tiles "
            f"of {list(range(1, first.rows))} rows"
        )
    if any(s.unroll not in (1, 4) for s in sweeps):
        raise CLoweringError(f"{kern.name}: the C unrolls a micro-tile's k loop by 1 or 4")
    nfull = full.hi if full is not None else 0
    tv = tail.vectors if tail is not None else 0
    last = tail.last if tail is not None else lanes
    kp = pack.kp.value.data if pack is not None else k
    kc = kblocks.step.value.data if kblocks is not None else kp
    if kblocks is not None and kblocks.k.value.data != k:
        raise CLoweringError(f"{kern.name}: rtile.k_blocks spans {kblocks.k.value.data}, not {k}")
    scratch = pack.scratch.value.data if pack is not None else 0
    offset = pack.row_offset if pack is not None else None
    if (offset is None) != (dot not in rk.OFFSET_DOTS):
        raise CLoweringError(
            f"{kern.name}: a {dot} kernel's rtile.pack_a "
            + ("must state the offset its packed rows hold over x - zp (run --lower-gebp)"
               if dot in rk.OFFSET_DOTS else "states no offset: its rows hold x - zp")
        )
    plan = rk.KernelPlan(cast(rk.Dot, dot), kp, kc, blocks.rows.value.data, scratch, first.rows)
    if plan.kp < k or plan.kp % rk.dot_group(plan.dot):
        raise CLoweringError(f"{kern.name}: kp {plan.kp} does not pack a contraction of {k}")
    if int8 and lanes not in INT8_LANES.get(dot, ()):
        widths = " or ".join(str(w) for w in INT8_LANES.get(dot, ()))
        raise CLoweringError(
            f"the {dot} kernels run {widths} int32 lanes, not the {lanes} of this rtile.kernel"
        )
    vu = target.unit(lanes) or tg.unit_of(target.arch, 4 * lanes)
    if vu is None and dot in arm_m.ARM_DOTS:  # general registers, no vector unit
        vu = tg.VectorUnit(4 * lanes, f"defined({arm_m.GUARD[dot]})", "0", "")
    if vu is None:
        raise CLoweringError(f"no vector unit of {4 * lanes} bytes on {target.arch}")
    return _Panels(
        k,
        n,
        int8,
        first.rows,
        first.vectors,
        lanes,
        nfull,
        tv,
        last,
        plan,
        vu,
        tuple(sweeps),
        kern.groups.value.data,
        pack.kind.data if pack is not None else "",
        kern.epilogue.clamp,
        offset or 0,
    )


def pack_b(p: _Panels, b: np.ndarray) -> np.ndarray:
    """B[k, n] in the kernel's panels (what the network stores as its weights)."""
    return _pack_b(p, b)


def pad_cols(p: _Panels, v: np.ndarray) -> np.ndarray:
    """A per-column vector (bias, multipliers) padded to the panels' columns."""
    return _pad_cols(p, v)


def float_rows(unit: CUnit, p: _Panels) -> str:
    """The name of the float32 row driver `f(a, lda, m, bp, bias, y, ldy)`: the
    GEBP the network's pointwise convolutions and matrix products call."""
    return _matrix_rows(unit, p, None, "float")


def int8_rows(unit: CUnit, p: _Panels, xzp: int, yzp: int) -> str:
    """The int8 row driver `f(a, lda, m, bp, bias, mult, y, ldy)` of int8_t
    operands and results with these zero points (requantized by `mult`)."""
    one = np.float32(1.0)
    return _matrix_rows(unit, p, _Q("int8_t", "int8_t", xzp, yzp, -128, 127, one, one), "int8_t")


def _pack_b(p: _Panels, b: np.ndarray) -> np.ndarray:
    """B[k, n] in panels: per panel of w columns, K rows of w values (float32)
    or K / group rows of w groups of `group` consecutive k (int8)."""
    parts = []
    spans = [(j, s.width) for s in p.sweeps for j in range(s.lo, s.hi, s.width)]
    for j0, w in spans:
        blk = np.zeros((p.kp, w), b.dtype)
        cols = min(w, p.n - j0)
        blk[: p.k, :cols] = b[:, j0 : j0 + cols]
        if p.group > 1:
            blk = blk.reshape(p.kp // p.group, p.group, w).transpose(0, 2, 1)
            if p.plan.dot == "smlad":
                blk = blk[:, :, arm_m.pack_order(p.group)]
        parts.append(blk.reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0, b.dtype)


def bias_cols(p: _Panels, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The int32 bias the int8 kernels start their sums from, padded to the
    panels' columns: the bias itself, or for the kernels whose packed rows
    hold x - zp + offset (`rtile.pack_a` offset), the bias less offset * B's
    column sums."""
    out = np.asarray(bias, np.int64).reshape(-1)
    if p.offset_rows:
        out = out - p.offset * np.asarray(b, np.int64).sum(axis=0)
    return _pad_cols(p, out.astype(np.int32))


def _pad_cols(p: _Panels, v: np.ndarray) -> np.ndarray:
    out = np.zeros(p.npad, v.dtype)
    out[: p.n] = v
    return out


def _f32_tile(
    unit: CUnit, p: _Panels, r: int, v: int, last: int, unroll: int, window: bool = False
) -> str:
    """One float32 micro-tile (`rtile.micro`): r rows by v vectors, the last
    `last` lanes wide, its k loop unrolled `unroll` times.

    It runs one K block of `kc`, row i of A at `a + i * lda` and of y at `y +
    i * ldy` (a `window` tile: at `a[i]` and `y[i] + yo`, rows anywhere); its
    accumulators start from `init` (the bias, `first`) or from y (a later K
    block), and the fused activation applies after the last one (`fin`)."""
    lanes = p.lanes
    guard = _gebp_prelude(unit, p.unit)
    vt, ld, st, fma = f"tg_v{lanes}", f"TG_LD{lanes}", f"TG_ST{lanes}", f"TG_FMA{lanes}"
    clamp = p.clamp
    if clamp is not None:
        _clamp_prelude(unit, lanes)

    def build(name: str) -> str:
        w = v * lanes
        acc = {(i, j): f"c{i}_{j}" for i in range(r) for j in range(v)}
        rows = (
            "const float *const *restrict a, const float *restrict b, float *const *restrict y,"
            "\n    long yo"
            if window
            else "const float *restrict a, long lda, const float *restrict b, float *restrict y,"
            "\n    long ldy"
        )
        params = [
            f"    {rows}, int kc, const float *restrict init, int first"
            + (", int fin)" if clamp is not None else ")")
        ]
        out = [
            f"#ifdef {guard}",
            f"static inline __attribute__((always_inline)) void {name}(",
            *params,
            "{",
            f"  {vt} " + ", ".join(acc.values()) + ";",
        ]

        def yrow(i: int, j: int) -> str:
            return f"y[{i}] + yo + {j * lanes}" if window else f"y + {i} * ldy + {j * lanes}"

        out += [f"  const float *a{i} = {f'a[{i}]' if window else f'a + {i} * lda'};"
                for i in range(r)]
        out.append("  if (first) {")
        out += [f"    {acc[i, j]} = {ld}(init + {j * lanes});" for i in range(r) for j in range(v)]
        out.append("  } else {")
        for i in range(r):
            for j in range(v):
                if j == v - 1 and last < lanes:
                    out.append(f"    TG_LDP{lanes}({acc[i, j]}, {yrow(i, j)}, {last});")
                else:
                    out.append(f"    {acc[i, j]} = {ld}({yrow(i, j)});")
        out.append("  }")
        if unroll > 1:
            out.append("  TG_UNROLLV4")
        out.append("  for (int k = 0; k < kc; ++k) {")
        out.append(f"    const float *bk = b + (long)k * {w};")

        def splat(i: int) -> str:
            return f"    {vt} s{i} = ({vt}){{{', '.join([f'a{i}[k]'] * lanes)}}}; TG_KEEPV(s{i});"

        loads = [f"    {vt} b{j} = {ld}(bk + {j * lanes}); TG_KEEPV(b{j});" for j in range(v)]
        if v <= r:
            out += loads
            for i in range(r):
                out.append(splat(i))
                out += [f"    {fma}({acc[i, j]}, s{i}, b{j});" for j in range(v)]
        else:
            out += [splat(i) for i in range(r)]
            for j in range(v):
                out.append(loads[j])
                out += [f"    {fma}({acc[i, j]}, s{i}, b{j});" for i in range(r)]
        out.append("  }")
        if clamp is not None:  # the fused activation, after the last K block
            out.append("  if (fin) {")
            for bound, macro in zip(clamp, ("TG_LO", "TG_HI")):
                if bound is None:
                    continue
                c = _flt(bound)
                out.append(f"    const {vt} {macro.lower()}_ = {{{', '.join([c] * lanes)}}};")
                out += [f"    {macro}{lanes}({a}, {macro.lower()}_);" for a in acc.values()]
            out.append("  }")
        for i in range(r):
            for j in range(v):
                if j == v - 1 and last < lanes:
                    out.append(f"  TG_STP{lanes}({yrow(i, j)}, {acc[i, j]}, {last});")
                else:
                    out.append(f"  {st}({yrow(i, j)}, {acc[i, j]});")
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"fmk.{lanes}.{r}.{v}.{last}.{unroll}" + (f".{clamp}" if clamp is not None else "")
    key += ".window" if window else ""
    hint = f"tg_fmk{lanes}{'w' if window else ''}_{r}x{v}_{last}" + (
        "_clamp" if clamp is not None else ""
    )
    return _helper(unit, key, hint, build)


def _clamp_prelude(unit: CUnit, lanes: int) -> None:
    """Lane-wise `v < c ? c : v` and `v > c ? c : v` of float vectors (the
    scalar Relu and Clip's comparisons, so a NaN stays a NaN), as selects
    through the comparison's mask."""
    vt, vi = f"tg_v{lanes}", f"tg_v{lanes}i"
    code = f"""#ifdef TG_V{lanes}
typedef int {vi} __attribute__((vector_size({4 * lanes})));
#define TG_LO{lanes}(v, c) \\
  do {{ const {vi} m_ = (v) < (c); \\
       (v) = ({vt})((m_ & ({vi})(c)) | (~m_ & ({vi})(v))); }} while (0)
#define TG_HI{lanes}(v, c) \\
  do {{ const {vi} m_ = (v) > (c); \\
       (v) = ({vt})((m_ & ({vi})(c)) | (~m_ & ({vi})(v))); }} while (0)
#endif"""
    unit.helper(f"c_conv.clamp{lanes}", code)


def _vclamp_prelude(unit: CUnit, lanes: int) -> None:
    """`TG_VLO(v, c)` and `TG_VHI(v, c)` on the `tg_vf` vectors of the
    depthwise kernels: `v < c ? c : v` and `v > c ? c : v` lane-wise, as selects
    through the comparison's mask (a NaN stays a NaN, as in the scalar op)."""
    code = f"""#ifdef TG_VECTOR
typedef int tg_vfi __attribute__((vector_size({4 * lanes})));
#define TG_VLO(v, c) \\
  do {{ const tg_vfi m_ = (v) < (c); \\
       (v) = (tg_vf)((m_ & (tg_vfi)(c)) | (~m_ & (tg_vfi)(v))); }} while (0)
#define TG_VHI(v, c) \\
  do {{ const tg_vfi m_ = (v) > (c); \\
       (v) = (tg_vf)((m_ & (tg_vfi)(c)) | (~m_ & (tg_vfi)(v))); }} while (0)
#endif"""
    unit.helper("c_conv.vclamp", code)


def _fclamp(p: _Panels, x: str) -> str:
    """C of the fused activation of a float32 kernel's value x (x itself without one)."""
    return _clamp_expr(p.clamp, x)


def _clamp_expr(clamp: tuple[float | None, float | None] | None, x: str) -> str:
    """C of `x < lo ? lo : x`, then `> hi ? hi :`, as Relu and Clip compute them."""
    if clamp is None:
        return x
    lo, hi = clamp
    if lo is None:
        return f"({x} > {_flt(hi)} ? {_flt(hi)} : {x})" if hi is not None else x
    if hi is None:
        return f"({x} < {_flt(lo)} ? {_flt(lo)} : {x})"
    return f"({x} < {_flt(lo)} ? {_flt(lo)} : ({x} > {_flt(hi)} ? {_flt(hi)} : {x}))"


clamp_expr = _clamp_expr
"""`_clamp_expr` for the other emitters (an Add's fused activation)."""


def _i8_tile(unit: CUnit, r: int, v: int, last: int, unroll: int, yt: str) -> str:
    """One int8 micro-tile (`rtile.micro`): int16 pair products into int32,
    then requantized (`rtile.epilogue "bias_requant"`)."""
    store = "tg_st8u" if yt == "uint8_t" else "tg_st8s"

    def build(name: str) -> str:
        acc = {(i, j): f"c{i}_{j}" for i in range(r) for j in range(v)}
        out = [
            "#ifdef TG_AVX2",
            f"static inline __attribute__((always_inline)) void {name}(",
            "    const int16_t *restrict a, long lda, const int8_t *restrict b,",
            f"    {yt} *restrict y, long ldy, int kq, const int32_t *restrict bias,",
            "    const float *restrict mult, __m256 zp, __m256 lo, __m256 hi)",
            "{",
        ]
        out += [f"  const __m256i i{j} = tg_ldi(bias + {8 * j});" for j in range(v)]
        out += [f"  __m256i {acc[i, j]} = i{j};" for i in range(r) for j in range(v)]
        out += [f"  const int16_t *a{i} = a + {i} * lda;" for i in range(r)]
        if unroll > 1:
            out.append("  TG_UNROLL4I")
        out.append("  for (int q = 0; q < kq; ++q) {")
        out.append(f"    const int8_t *bq = b + (long)q * {16 * v};")

        def bload(j: int) -> str:
            return (
                f"    __m256i b{j} = _mm256_cvtepi8_epi16(_mm_loadu_si128("
                f"(const __m128i *)(const void *)(bq + {16 * j}))); TG_KEEPI(b{j});"
            )

        def splat(i: int) -> str:
            return f"    __m256i s{i} = _mm256_set1_epi32(tg_ld32(a{i} + 2 * q)); TG_KEEPI(s{i});"

        def mac(i: int, j: int) -> str:
            return (
                f"    {acc[i, j]} = _mm256_add_epi32({acc[i, j]}, _mm256_madd_epi16(s{i}, b{j}));"
            )

        if v <= r:
            out += [bload(j) for j in range(v)]
            for i in range(r):
                out.append(splat(i))
                out += [mac(i, j) for j in range(v)]
        else:
            out += [splat(i) for i in range(r)]
            for j in range(v):
                out.append(bload(j))
                out += [mac(i, j) for i in range(r)]
        out.append("  }")
        out += [f"  const __m256 m{j} = _mm256_loadu_ps(mult + {8 * j});" for j in range(v)]
        for i in range(r):
            for j in range(v):
                width = last if j == v - 1 else 8
                out.append(
                    f"  {store}(y + {i} * ldy + {8 * j},"
                    f" tg_rq({acc[i, j]}, m{j}, zp, lo, hi), {width});"
                )
        out += ["}", "#endif"]
        return "\n".join(out)

    return _helper(unit, f"imk.{r}.{v}.{last}.{unroll}.{yt}", f"tg_imk_{r}x{v}_{last}", build)


@dataclass(frozen=True)
class _VnniIsa:
    """The intrinsics of the `vpdpbusd` kernels at one width of int32 lanes."""

    vec: str
    fvec: str
    load: str
    set1: str
    dot: str
    loadps: str
    set1ps: str
    requant: str
    store: str


_VNNI: dict[int, _VnniIsa] = {
    16: _VnniIsa(
        "__m512i", "__m512", "_mm512_loadu_si512({p})", "_mm512_set1_epi32",
        "_mm512_dpbusd_epi32", "_mm512_loadu_ps", "_mm512_set1_ps", "tg_rq16", "tg_st16",
    ),
    8: _VnniIsa(
        "__m256i", "__m256", "_mm256_loadu_si256((const __m256i *)(const void *)({p}))",
        "_mm256_set1_epi32", "_mm256_dpbusd_epi32", "_mm256_loadu_ps", "_mm256_set1_ps",
        "tg_rq", "tg_st8",
    ),
}
"""The lane widths the `vpdpbusd` kernels are written for: zmm, and ymm
(AVX512VL) for sites too narrow to fill sixteen columns."""


def _vnni_tile(
    unit: CUnit, lanes: int, r: int, v: int, last: int, unroll: int, yt: str
) -> str:
    """One int8 micro-tile (`rtile.micro`) on AVX512-VNNI: u8 x s8 groups of
    four k steps into `lanes` int32 lanes (`vpdpbusd`), then requantized."""
    x = _VNNI[lanes]
    store = x.store + ("u" if yt == "uint8_t" else "s")

    def build(name: str) -> str:
        acc = {(i, j): f"c{i}_{j}" for i in range(r) for j in range(v)}
        out = [
            "#ifdef TG_VNNI",
            f"static inline __attribute__((always_inline)) void {name}(",
            "    const uint8_t *restrict a, long lda, const int8_t *restrict b,",
            f"    {yt} *restrict y, long ldy, int kq, const int32_t *restrict bias,",
            f"    const float *restrict mult, {x.fvec} zp, {x.fvec} lo, {x.fvec} hi)",
            "{",
        ]
        out += [
            f"  const {x.vec} i{j} = {x.load.format(p=f'bias + {lanes * j}')};" for j in range(v)
        ]
        out += [f"  {x.vec} {acc[i, j]} = i{j};" for i in range(r) for j in range(v)]
        out += [f"  const uint8_t *a{i} = a + {i} * lda;" for i in range(r)]
        if unroll > 1:
            out.append("  TG_UNROLL4I")
        out.append("  for (int q = 0; q < kq; ++q) {")
        out.append(f"    const int8_t *bq = b + (long)q * {4 * lanes * v};")

        def bload(j: int) -> str:
            ld = x.load.format(p=f"bq + {4 * lanes * j}")
            return f"    {x.vec} b{j} = {ld}; TG_KEEPI(b{j});"

        def splat(i: int) -> str:
            return f"    {x.vec} s{i} = {x.set1}(tg_ld32b(a{i} + 4 * q)); TG_KEEPI(s{i});"

        def mac(i: int, j: int) -> str:
            return f"    {acc[i, j]} = {x.dot}({acc[i, j]}, s{i}, b{j});"

        if v <= r:
            out += [bload(j) for j in range(v)]
            for i in range(r):
                out.append(splat(i))
                out += [mac(i, j) for j in range(v)]
        else:
            out += [splat(i) for i in range(r)]
            for j in range(v):
                out.append(bload(j))
                out += [mac(i, j) for i in range(r)]
        out.append("  }")
        out += [f"  const {x.fvec} m{j} = {x.loadps}(mult + {lanes * j});" for j in range(v)]
        for i in range(r):
            for j in range(v):
                width = last if j == v - 1 else lanes
                out.append(
                    f"  {store}(y + {i} * ldy + {lanes * j},"
                    f" {x.requant}({acc[i, j]}, m{j}, zp, lo, hi), {width});"
                )
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"vmk.{lanes}.{r}.{v}.{last}.{unroll}.{yt}"
    return _helper(unit, key, f"tg_vmk{lanes}_{r}x{v}_{last}", build)


def _to_u8(q: _Q, v: str) -> str:
    """C for an input value as the unsigned byte the `vpdpbusd` kernels pack."""
    return f"(uint8_t)({v} ^ 0x80)" if q.xt == "int8_t" else f"(uint8_t){v}"


def _vnni_block(unit: CUnit, p: _Panels, q: _Q) -> str:
    """The int8 panel sweep over m packed rows of unsigned bytes (AVX512-VNNI
    only); the bias it starts from is `bias_cols`'s, which corrects the packed
    rows' offset, so that the sums are exactly those of (x - zp) * w."""
    _vnni_prelude(unit, q.fixed)
    x = _VNNI[p.lanes]

    def build(name: str) -> str:
        tiles = {
            (r, s.vectors, s.last): _vnni_tile(
                unit, p.lanes, r, s.vectors, s.last, s.unroll if r == s.rows else 1, q.yt
            )
            for s in p.sweeps
            for r in sorted(s.tile_rows())
        }
        out = [
            "#ifdef TG_VNNI",
            f"static void {name}(const uint8_t *restrict a, int m, const int8_t *restrict bp,",
            f"    const int32_t *restrict bias, const float *restrict mult, {q.yt} *restrict y,"
            " long ldy)",
            "{",
            f"  const {x.fvec} zp = {x.set1ps}({_flt(q.yzp)});",
            f"  const {x.fvec} lo = {x.set1ps}({_flt(q.lo)}), hi = {x.set1ps}({_flt(q.hi)});",
        ]
        for s in p.sweeps:

            def call(r: int, v: int = s.vectors, last: int = s.last) -> str:
                return (
                    f"{tiles[r, v, last]}(a + (long)i * {p.kp}, {p.kp}, b, y + (long)i * ldy + j0,"
                    f" ldy, {p.kp // 4}, bias + j0, mult + j0, zp, lo, hi);"
                )

            if s.hi <= p.nfull:  # the full panels
                out.append(f"  for (int j0 = {s.lo}; j0 < {s.hi}; j0 += {s.width}) {{")
            else:
                out.append(f"  {{ const int j0 = {s.lo};")
            out.append(f"    const int8_t *b = bp + (long)j0 * {p.kp};")
            out += _row_tail(s, call, "    ")
            out.append("  }")
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"vblk.{p.key()}.{q.xt}.{q.xzp}.{q.yt}.{q.yzp}.{q.lo}"
    return _helper(unit, key, f"tg_vgebp_{p.k}x{p.n}", build)


def _row_tail(s: _Sweep, call: Callable[[int], str], indent: str) -> list[str]:
    """The full row tiles of a sweep, then a switch over the leftover rows
    (one case per edge tile of `rtile.micro`)."""
    out = [f"{indent}int i = 0;", f"{indent}for (; i + {s.rows} <= m; i += {s.rows})"]
    out.append(f"{indent}  {call(s.rows)}")
    if s.edges:
        out.append(f"{indent}switch (m - i) {{")
        for r in s.edges:
            out.append(f"{indent}case {r}: {call(r)} break;")
        out.append(f"{indent}default: break;")
        out.append(f"{indent}}}")
    return out


def _f32_tiles(
    unit: CUnit, p: _Panels, window: bool = False
) -> dict[tuple[int, int, int], str]:
    """The micro-tile functions a float32 panel sweep calls, by (rows,
    vectors, last lanes)."""
    return {
        (r, s.vectors, s.last): _f32_tile(
            unit, p, r, s.vectors, s.last, s.unroll if r == s.rows else 1, window
        )
        for s in p.sweeps
        for r in sorted(s.tile_rows())
    }


def _f32_sweeps(
    p: _Panels, tiles: dict[tuple[int, int, int], str], a_at: str, window: bool = False
) -> list[str]:
    """One K block's sweep over the panels of B: per sweep, its full panels in
    a loop (or its last one), the micro tiles over the rows then the edge
    tile; pixel i's A starts at `a_at` (a `window` sweep: the pointers to the
    rows from i on are at `a_at`, to their results at `y + i`)."""
    fin = ", fin" if p.clamp is not None else ""
    out: list[str] = []
    for s in p.sweeps:

        def call(r: int, v: int = s.vectors, last: int = s.last) -> str:
            rows = "b, y + i, j0" if window else "lda, b, y + (long)i * ldy + j0, ldy"
            return f"{tiles[r, v, last]}({a_at}, {rows}, kc, bias + j0, first{fin});"

        if s.hi <= p.nfull:  # the full panels
            out.append(f"    for (int j0 = {s.lo}; j0 < {s.hi}; j0 += {s.width}) {{")
        else:
            out.append(f"    {{ const int j0 = {s.lo};")
        out.append(f"      const float *b = bp + (long)j0 * {p.k} + (long)k0 * {s.width};")
        out += _row_tail(s, call, "      ")
        out.append("    }")
    return out


def _f32_block(unit: CUnit, p: _Panels) -> str:
    """y[m, n] = a[m, k] . B + bias for m rows of A read in place (row stride
    lda), sweeping the panels per K block of `plan.kc` (vector builds only)."""
    kc = p.plan.kc
    guard = _gebp_prelude(unit, p.unit)

    def build(name: str) -> str:
        tiles = _f32_tiles(unit, p)
        out = [
            f"#ifdef {guard}",
            f"static void {name}(const float *restrict a, long lda, int m,",
            "    const float *restrict bp, const float *restrict bias,",
            "    float *restrict y, long ldy)",
            "{",
            f"  for (int k0 = 0; k0 < {p.k}; k0 += {kc}) {{",
            f"    const int kc = {p.k} - k0 < {kc} ? {p.k} - k0 : {kc};",
            "    const int first = k0 == 0;",
        ]
        if p.clamp is not None:
            out.append(f"    const int fin = k0 + kc >= {p.k};")
        out += _f32_sweeps(p, tiles, "a + (long)i * lda + k0")
        out += ["  }", "}", "#endif"]
        return "\n".join(out)

    return _helper(unit, f"fblk.{p.key()}", f"tg_fgebp_{p.k}x{p.n}", build)


def _f32_window(unit: CUnit, p: _Panels) -> str:
    """y = A . B + bias for m pixels of a `window` kernel (`rtile.pack_a
    "window"`) that share the kernel rows inside the image: per kernel row s
    of the `ns`, one K block of `plan.kc` taps (kw * c) at B's row rk[s],
    pixel i's run at pa[s * ps + i] (in place, or gathered where its window
    leaves the image), its result at y[i]; the first block starts from the
    bias, the last one clamps. The pixels may come from several output rows,
    so the micro tiles stay whole across rows (vector builds only)."""
    guard = _gebp_prelude(unit, p.unit)

    def build(name: str) -> str:
        tiles = _f32_tiles(unit, p, window=True)
        out = [
            f"#ifdef {guard}",
            f"static void {name}(const float *const *pa, long ps, const int *rk, int ns, int m,",
            "    const float *restrict bp, const float *restrict bias, float *const *y)",
            "{",
            "  for (int s = 0; s < ns; ++s) {",
            "    const float *const *a = pa + s * ps;",
            "    const int k0 = rk[s];",
            f"    const int kc = {p.plan.kc};",
            "    const int first = s == 0;",
        ]
        if p.clamp is not None:
            out.append("    const int fin = s == ns - 1;")
        out += _f32_sweeps(p, tiles, "a + i", window=True)
        out += ["  }", "}", "#endif"]
        return "\n".join(out)

    return _helper(unit, f"fwin.{p.key()}", f"tg_fwin_{p.k}x{p.n}", build)


def _i8_block(unit: CUnit, p: _Panels, q: _Q) -> str:
    """The int8 panel sweep over m packed rows of int16 (x - zp) (AVX2 only)."""

    def build(name: str) -> str:
        tiles = {
            (r, s.vectors, s.last): _i8_tile(
                unit, r, s.vectors, s.last, s.unroll if r == s.rows else 1, q.yt
            )
            for s in p.sweeps
            for r in sorted(s.tile_rows())
        }
        out = [
            "#ifdef TG_AVX2",
            f"static void {name}(const int16_t *restrict a, int m, const int8_t *restrict bp,",
            f"    const int32_t *restrict bias, const float *restrict mult, {q.yt} *restrict y,"
            " long ldy)",
            "{",
            f"  const __m256 zp = _mm256_set1_ps({_flt(q.yzp)});",
            f"  const __m256 lo = _mm256_set1_ps({_flt(q.lo)}), hi = _mm256_set1_ps({_flt(q.hi)});",
        ]
        for s in p.sweeps:

            def call(r: int, v: int = s.vectors, last: int = s.last) -> str:
                return (
                    f"{tiles[r, v, last]}(a + (long)i * {p.kp}, {p.kp}, b, y + (long)i * ldy + j0,"
                    f" ldy, {p.kp // 2}, bias + j0, mult + j0, zp, lo, hi);"
                )

            if s.hi <= p.nfull:  # the full panels
                out.append(f"  for (int j0 = {s.lo}; j0 < {s.hi}; j0 += {s.width}) {{")
            else:
                out.append(f"  {{ const int j0 = {s.lo};")
            out.append(f"    const int8_t *b = bp + (long)j0 * {p.kp};")
            out += _row_tail(s, call, "    ")
            out.append("  }")
        out += ["}", "#endif"]
        return "\n".join(out)

    return _helper(unit, f"iblk.{p.key()}.{q.yt}.{q.yzp}.{q.lo}", f"tg_igebp_{p.k}x{p.n}", build)


def _port_accum(p: _Panels, acc: str, bp: str, k: str, av: str, indent: str) -> list[str]:
    """Plain C: acc[j] += av * B[k, j] for every column, B in panels."""
    out = []
    g = p.group
    if g > 1:
        within = arm_m.b_index(k) if p.plan.dot == "smlad" else f"(({k}) % {g})"
        row_f = f"(long)(({k}) / {g}) * {g * p.nr} + {within}"
        row_t = f"(long)(({k}) / {g}) * {g * p.ntp} + {within}"
    else:
        row_f = f"(long)({k}) * {p.nr}"
        row_t = f"(long)({k}) * {p.ntp}"
    bt = "int8_t" if p.int8 else "float"
    if p.nfull:
        out += [
            f"{indent}for (int j0 = 0; j0 < {p.nfull}; j0 += {p.nr}) {{",
            f"{indent}  const {bt} *b_ = {bp} + (long)j0 * {p.kp} + {row_f};",
            f"{indent}  for (int jj = 0; jj < {p.nr}; ++jj)",
            f"{indent}    {acc}[j0 + jj] += {av} * b_[{g} * jj];",
            f"{indent}}}",
        ]
    if p.tv:
        out += [
            f"{indent}{{ const {bt} *b_ = {bp} + {p.nfull * p.kp} + {row_t};",
            f"{indent}  for (int jj = 0; jj < {p.n - p.nfull}; ++jj)"
            f" {acc}[{p.nfull} + jj] += {av} * b_[{g} * jj]; }}",
        ]
    return out


def _port_bias(p: _Panels, q: _Q, groups: int, gs: int) -> list[str]:
    """Plain C: `b0`, the bias the plain loops start from. For `vpdpbusd`
    kernels it is the stored bias plus the offset times B's column sums
    (what `bias_cols` took off), rebuilt from the panels once per call."""
    if not p.offset_rows:
        return ["  const int32_t *b0 = bias;"]
    npad = groups * p.npad
    out = [f"  int32_t b0[{npad}];", f"  for (int j = 0; j < {npad}; ++j) b0[j] = bias[j];"]
    out += [f"  for (int gi = 0; gi < {groups}; ++gi)", f"  for (int k = 0; k < {p.k}; ++k) {{"]
    out += _port_accum(
        p, f"(b0 + gi * {p.npad})", f"(bp + (long)gi * {gs})", "k", _lit(p.offset),
        "    ",
    )
    return out + ["  }"]


def _matrix_rows(unit: CUnit, p: _Panels, q: _Q | None, at: str) -> str:
    """y[i, :] = epilogue(a[i, :] . B + bias) for m rows at row strides
    lda / ldy: the driver of pointwise convolutions and matrix products."""
    mc = p.plan.mc
    if q is None:
        guard = _gebp_prelude(unit, p.unit)

        def build(name: str) -> str:
            blk = _f32_block(unit, p)
            out = [
                f"static void {name}(const float *restrict a, long lda, int m,",
                "    const float *restrict bp, const float *restrict bias,",
                "    float *restrict y, long ldy)",
                "{",
                f"#ifdef {guard}",
                f"  for (int i0 = 0; i0 < m; i0 += {mc})",
                f"    {blk}(a + (long)i0 * lda, lda, m - i0 < {mc} ? m - i0 : {mc}, bp, bias,"
                " y + (long)i0 * ldy, ldy);",
                "#else",
                "  for (int i = 0; i < m; ++i) {",
                "    const float *ar = a + (long)i * lda;",
                "    float *yr = y + (long)i * ldy;",
                f"    float acc[{p.npad}];",
                f"    for (int j = 0; j < {p.n}; ++j) acc[j] = bias[j];",
                f"    for (int k = 0; k < {p.k}; ++k) {{",
                "      const float av = ar[k];",
                *_port_accum(p, "acc", "bp", "k", "av", "      "),
                "    }",
                f"    for (int j = 0; j < {p.n}; ++j) yr[j] = {_fclamp(p, 'acc[j]')};",
                "  }",
                "#endif",
                "}",
            ]
            return "\n".join(out)

        return _helper(unit, f"fmat.{p.key()}", f"tg_fmat_{p.k}x{p.n}", build)

    if p.plan.dot not in arm_m.ARM_DOTS:
        _i8_prelude(unit, q.fixed)
    elif q.fixed:
        fixed_helpers(unit)
    unit.scratch(p.plan.scratch)

    def build_i(name: str) -> str:
        if p.plan.dot in arm_m.ARM_DOTS:
            dot = p.plan.dot
            blk, guard, buft = arm_m.block(unit, p, q), arm_m.GUARD[dot], arm_m.PACKED_TYPE[dot]
            if dot == "vmladava":
                value = arm_m.packed_value(q, "s[k]")
            else:
                value = f"(int16_t)(s[k] - {_lit(q.xzp)})"
            pad = [f"      for (int k = {p.k}; k < {p.kp}; ++k) d[k] = 0;"] if p.kp > p.k else []
        elif p.vnni:
            blk, guard, buft = _vnni_block(unit, p, q), "TG_VNNI", "uint8_t"
            value = _to_u8(q, "s[k]")
            pad = [f"      for (int k = {p.k}; k < {p.kp}; ++k) d[k] = 0;"] if p.kp > p.k else []
        else:
            blk, guard, buft = _i8_block(unit, p, q), "TG_AVX2", "int16_t"
            value = f"(int16_t)(s[k] - {_lit(q.xzp)})"
            pad = [f"      d[{p.k}] = 0;"] if p.kp > p.k else []
        out = [
            f"static void {name}(const {at} *restrict a, long lda, int m,",
            "    const int8_t *restrict bp, const int32_t *restrict bias,",
            f"    const {q.mt} *restrict mult,",
            f"    {q.yt} *restrict y, long ldy)",
            "{",
            f"#ifdef {guard}",
            f"  {buft} buf[{mc * p.kp}] __attribute__((aligned(64)));",
            f"  for (int i0 = 0; i0 < m; i0 += {mc}) {{",
            f"    const int mb = m - i0 < {mc} ? m - i0 : {mc};",
            "    for (int r = 0; r < mb; ++r) {",
            f"      const {at} *s = a + (long)(i0 + r) * lda;",
            f"      {buft} *d = buf + r * {p.kp};",
            f"      for (int k = 0; k < {p.k}; ++k) d[k] = {value};",
            *pad,
            "    }",
            f"    {blk}(buf, mb, bp, bias, mult, y + (long)i0 * ldy, ldy);",
            "  }",
            "#else",
            *_port_bias(p, q, 1, p.size),
            "  for (int i = 0; i < m; ++i) {",
            f"    const {at} *ar = a + (long)i * lda;",
            f"    {q.yt} *yr = y + (long)i * ldy;",
            f"    int32_t acc[{p.npad}];",
            f"    for (int j = 0; j < {p.n}; ++j) acc[j] = b0[j];",
            f"    for (int k = 0; k < {p.k}; ++k) {{",
            f"      const int32_t av = (int32_t)ar[k] - {_lit(q.xzp)};",
            *_port_accum(p, "acc", "bp", "k", "av", "      "),
            "    }",
            f"    for (int j = 0; j < {p.n}; ++j) yr[j] = {_store(q, 'acc[j]', 'mult[j]')};",
            "  }",
            "#endif",
            "}",
        ]
        return "\n".join(out)

    key = f"imat.{p.key()}.{at}.{q.xzp}.{q.yt}.{q.yzp}" + (".fx" if q.fixed else "")
    return _helper(unit, key, f"tg_imat_{p.k}x{p.n}", build_i)

# ---------------------------------------------------------------------------
# convolutions


@dataclass(frozen=True)
class _Conv:
    """A convolution's geometry as 2D NHWC (a 1D one has one row)."""

    h: int
    w: int
    c: int
    co: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    groups: int

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def cog(self) -> int:
        return self.co // self.groups

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    def key(self) -> str:
        return "_".join(str(v) for v in self.__dict__.values())


def _conv_geometry(op: nn.ConvLikeOp) -> _Conv:
    xs = nn.shape_of(op.input)
    n = len(xs) - 2
    k, s, p = op.kernel(), op.strides(), op.pads()
    d = op.dilations()
    d = d if len(d) == n else (1,) * n
    co = nn.shape_of(op.output)[-1]
    if n == 1:
        return _Conv(1, xs[1], xs[2], co, 1, k[0], 1, s[0], 1, d[0], 0, p[0], op.groups())
    return _Conv(
        xs[1], xs[2], xs[3], co, k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], op.groups()
    )


def _header(name: str, params: Sequence[str]) -> list[str]:
    return [f"static TIGRIS_BAND void {name}({', '.join(params)})", "{"]


def _conv_params(xt: str, yt: str, mid: Sequence[str]) -> list[str]:
    return [
        f"const {xt} *restrict x",
        "const int *restrict xb",
        *mid,
        f"{yt} *restrict y",
        "const int *restrict yb",
    ]


def _direct_head(
    name: str,
    xv: _View,
    yv: _View,
    types: tuple[str, str, str, str],
    acc: str,
    co: int,
    mt: str = "float",
) -> list[str]:
    """The head of a plain-C direct convolution: its signature, the band
    bounds, the batch loop and the loop over output pixels, opened with the
    pixel's accumulators `acc[co]` and its output pointer `yp`. `types`:
    the C types of x, y, the weights and the bias."""
    xt, yt, wt, bt = types
    params = _conv_params(
        xt,
        yt,
        [f"const {wt} *restrict w", f"const {bt} *restrict bias", f"const {mt} *restrict ws"],
    )
    out = _header(name, params)
    out.append(_voids("x", "xb", "w", "bias", "ws", "y", "yb"))
    out += _unpack("xb", "x", 4) + _unpack("yb", "y", 4)
    out += _batch_loop(xv, yv, xt, yt)
    return out + [
        "    for (int oy = yl1; oy < yl1 + yn1; ++oy)",
        "    for (int ox = yl2; ox < yl2 + yn2; ++ox) {",
        f"      {acc} acc[{co}];",
        f"      {yt} *yp = {_pixel(yv)};",
    ]


def _direct_call(
    unit: CUnit,
    name: str,
    operands: tuple[CTensor, CTensor, CTensor, CTensor | None, CTensor],
    views: tuple[_View, _View],
    q: _Q | None,
    mult_const: bool,
    co: int,
) -> str:
    """The call of a plain-C direct convolution printed by `_direct_head`:
    weights, bias and (int8) multipliers as constants where they are."""
    x, w, b, ws, y = operands
    xv, yv = views
    wn = _const_or_ptr(unit, w, "w")
    bn = _const_or_ptr(unit, b, "b")
    if q is None:
        wsn = "(const float *)0"
    elif mult_const:
        assert ws is not None and ws.value is not None
        wsn = unit.const("m", _multipliers(q, ws.value, co))
    else:
        assert ws is not None
        wsn = ws.name
    return f"  {name}({x.name}, {xv.bounds()}, {wn}, {bn}, {wsn}, {y.name}, {yv.bounds()});"


def _tap_loops(g: _Conv, xv: _View, xt: str) -> list[str]:
    """Open the loops over a window's taps (ky, kx) of output pixel (oy, ox),
    skipping taps in the image padding, with `xp` at the tapped input pixel."""
    return [
        f"      for (int ky = 0; ky < {g.kh}; ++ky) {{",
        f"        const int iy = oy * {g.sh} - {g.pt} + ky * {g.dh};",
        f"        if (iy < 0 || iy >= {g.h}) continue;",
        "        TIGRIS_BOUND(iy >= xl1 && iy < xl1 + xn1);",
        f"        for (int kx = 0; kx < {g.kw}; ++kx) {{",
        f"          const int ix = ox * {g.sw} - {g.pl} + kx * {g.dw};",
        f"          if (ix < 0 || ix >= {g.w}) continue;",
        "          TIGRIS_BOUND(ix >= xl2 && ix < xl2 + xn2);",
        f"          const {xt} *xp = xn + (long)(iy - xl1) * {xv.strides[1]}"
        f" + (long)(ix - xl2) * {xv.strides[2]};",
    ]


def _batch_loop(xv: _View, yv: _View, xt: str, yt: str) -> list[str]:
    return [
        "  for (int n = yl0; n < yl0 + yn0; ++n) {",
        "    TIGRIS_BOUND(n >= xl0 && n < xl0 + xn0);",
        f"    const {xt} *xn = x + (long)(n - xl0) * {xv.strides[0]};",
        f"    {yt} *yn = y + (long)(n - yl0) * {yv.strides[0]};",
    ]


def _pixel(yv: _View) -> str:
    """C: the result pixel (oy, ox) of batch row `yn`."""
    return f"yn + (long)(oy - yl1) * {yv.strides[1]} + (long)(ox - yl2) * {yv.strides[2]}"


def _tap_pointers(g: _Conv, xt: str, xv: _View, yt: str, yv: _View) -> list[str]:
    """The head of a depthwise kernel's pixel loop: per output pixel, a
    pointer to each tap's input channels (the padding row where the tap
    falls outside the image), the output pointer, and `c0 = 0`."""
    return [
        "      for (int ox = yl2; ox < yl2 + yn2; ++ox) {",
        f"        const {xt} *tp[{g.taps}];",
        f"        const int ix0 = ox * {g.sw} - {g.pl};",
        f"        for (int ky = 0; ky < {g.kh}; ++ky)",
        f"        for (int kx = 0; kx < {g.kw}; ++kx) {{",
        f"          const int ix = ix0 + kx * {g.dw};",
        f"          if (rok[ky] && ix >= 0 && ix < {g.w}) {{",
        "            TIGRIS_BOUND(ix >= xl2 && ix < xl2 + xn2);",
        f"            tp[ky * {g.kw} + kx] = xn + roff[ky] + (long)(ix - xl2) * {xv.strides[2]};",
        "          } else {",
        f"            tp[ky * {g.kw} + kx] = pad;",
        "          }",
        "        }",
        f"        {yt} *yp = yr + (long)(ox - yl2) * {yv.strides[2]};",
        "        int c0 = 0;",
    ]


def _row_offsets(g: _Conv, xv: _View) -> list[str]:
    """Per kernel row: inside the image, and the held row's offset."""
    return [
        f"      int rok[{g.kh}]; long roff[{g.kh}];",
        f"      for (int ky = 0; ky < {g.kh}; ++ky) {{",
        f"        const int iy = oy * {g.sh} - {g.pt} + ky * {g.dh};",
        f"        rok[ky] = iy >= 0 && iy < {g.h};",
        f"        roff[ky] = rok[ky] ? (long)(iy - xl1) * {xv.strides[1]} : 0;",
        "        if (rok[ky]) TIGRIS_BOUND(iy >= xl1 && iy < xl1 + xn1);",
        "      }",
    ]


def _emit_generic_conv(
    unit: CUnit, op: nn.ConvOp, g: _Conv, q: _Q | None, ins: Sequence[CTensor], y: CTensor
) -> str:
    """Every convolution band: direct loops over global indices (plain C); a
    register-tiled site's band the GEBP cannot run (strided channels, run-time
    weights) applies its kernel's fused activation (`rtile.epilogue`) too."""
    clamp = clamp_of(op)
    x, w, b = ins[0], ins[1], ins[2]
    ws = ins[3] if len(ins) > 3 else None
    for t, what in ((w, "weight"), (b, "bias")):
        _whole(op, t, what)
    xv, yv = _view(x, 4), _view(y, 4)
    xt, yt = x.ctype, y.ctype
    acc = "float" if q is None else "int32_t"
    mult_const = q is not None and ws is not None and ws.value is not None
    if q is not None:
        if ws is None:
            raise CLoweringError(f"{op.name}: a quantized conv needs weight scales")
        _whole(op, ws, "weight scales")
    mult = "ws[co]" if mult_const else (_mult_expr(q, ws, "co") if q is not None else "")
    xval = "xp[(long)(c0 + ci - xl3) * " + str(xv.strides[3]) + "]"
    term = f"{xval} * wp[ci]" if q is None else f"((int32_t){xval} - {_lit(q.xzp)}) * wp[ci]"
    key = f"gconv.{g.key()}.{xv.strides}.{yv.strides}.{xt}.{yt}.{_qkey(q, not mult_const)}"
    key += f".{w.ctype}" + (f".clamp{clamp}" if clamp is not None else "")

    def build(name: str) -> str:
        out = _direct_head(
            name, xv, yv, (xt, yt, w.ctype, b.ctype), acc, g.co, q.mt if q else "float"
        )
        out += [
            "      for (int co = yl3; co < yl3 + yn3; ++co) acc[co - yl3] = bias[co];",
            *_tap_loops(g, xv, xt),
            "          for (int co = yl3; co < yl3 + yn3; ++co) {",
            f"            const int c0 = (co / {g.cog}) * {g.cg};",
            f"            const {w.ctype} *wp = w"
            f" + ((long)(co * {g.kh} + ky) * {g.kw} + kx) * {g.cg};",
            f"            {acc} s = 0;",
            f"            TIGRIS_BOUND(c0 >= xl3 && c0 + {g.cg} <= xl3 + xn3);",
            f"            for (int ci = 0; ci < {g.cg}; ++ci) s += {term};",
            "            acc[co - yl3] += s;",
            "          }",
            "        }",
            "      }",
            "      for (int co = yl3; co < yl3 + yn3; ++co)",
            f"        yp[(long)(co - yl3) * {yv.strides[3]}] = "
            + _clamp_expr(clamp, _store(q, "acc[co - yl3]", mult))
            + ";",
            "    }",
            "  }",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_conv_{g.kh}x{g.kw}_{g.c}_{g.co}", build)
    return _direct_call(unit, name, (x, w, b, ws, y), (xv, yv), q, mult_const, g.co)


def _consts_ready(ins: Sequence[CTensor], q: _Q | None) -> bool:
    need = ins[1:4] if q is not None else ins[1:3]
    return all(t.value is not None and not t.cut for t in need)


def _use_all(call: str, ins: Sequence[CTensor]) -> str:
    """The call, and every operand pointer it does not pass marked as used."""
    unused = [t.name for t in ins if not re.search(rf"\b{re.escape(t.name)}\b", call)]
    return call + "".join(f" (void){n};" for n in unused)


@register("band", nn.ConvOp)
def emit_conv(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """A band of a convolution (float32, or int8 on the integer path)."""
    return _use_all(_conv(op, ins, outs, unit), ins)


def _conv(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    conv = cast(nn.ConvOp, op)
    g = _conv_geometry(conv)
    q = _quant(conv, conv.input, conv.output)
    if q is not None and q.fixed:
        fixed_helpers(unit)
    x, y = ins[0], outs[0]
    if q is None and (x.ctype != "float" or y.ctype != "float"):
        raise CLoweringError(f"{op.name}: a float conv on {x.ctype} -> {y.ctype}")
    xv, yv = _view(x, 4), _view(y, 4)
    if _direct(conv, ins, y, q is not None):
        return _emit_generic_conv(unit, conv, g, q, ins, y)
    ready = _consts_ready(ins, q)
    group = rd.channel_group(conv, _operand(x), _operand(y)) if q is None and ready else 0
    if group:
        plan = _dw_plan(conv, False)
        return _emit_depthwise(unit, g, q, ins, y, xv, yv, plan, group, clamp_of(conv))
    w = ins[1].value
    assert w is not None
    if q is not None and q.fixed and arm_m.depthwise_isa(_target_label(conv)) is not None:
        q = arm_m.with_short_requant(q, np.asarray(w).reshape(g.co, -1), ins[2].value,
                                     _multipliers(q, np.asarray(ins[3].value), g.co))
    if g.groups == g.c == g.co and g.cg == 1:
        plan = _dw_plan(conv, q is not None)
        if q is not None and plan.kernel != "vector":
            return arm_m.emit_depthwise(unit, plan.kernel, g, q, ins, y, xv, yv)
        return _emit_depthwise(unit, g, q, ins, y, xv, yv, plan, clamp=clamp_of(conv))
    pointwise = (g.kh, g.kw, g.sh, g.sw) == (1, 1, 1, 1) and not any(conv.pads())
    if pointwise and g.groups == 1:
        return _emit_pointwise(unit, conv, g, q, ins, y, xv, yv)
    kern = kernel_of(conv)
    if q is None and kern is not None and kern.packing == "winograd":
        return _emit_winograd(unit, conv, g, ins, y, xv, yv)
    return _emit_im2col(unit, conv, g, q, ins, y, xv, yv)


def _conv_consts(
    unit: CUnit, g: _Conv, q: _Q | None, ins: Sequence[CTensor], p: _Panels
) -> list[str]:
    """Packed weights per group, padded bias (and multipliers) per group."""
    w = np.asarray(ins[1].value)
    b = np.asarray(ins[2].value)
    k = g.taps * g.cg
    packs, biases, mults = [], [], []
    m = _multipliers(q, np.asarray(ins[3].value), g.co) if q is not None else None
    for gi in range(g.groups):
        wg = w[gi * g.cog : (gi + 1) * g.cog].reshape(g.cog, k).T
        packs.append(_pack_b(p, np.ascontiguousarray(wg)))
        bg = b[gi * g.cog : (gi + 1) * g.cog]
        biases.append(_pad_cols(p, bg) if q is None else bias_cols(p, wg, bg))
        if m is not None:
            mults.append(_pad_cols(p, m[gi * g.cog : (gi + 1) * g.cog]))
    names = [unit.const("wp", np.concatenate(packs)), unit.const("bp", np.concatenate(biases))]
    if mults:
        names.append(unit.const("mp", np.concatenate(mults)))
    return names


def _merge_width(op: nn.NNOp, g: _Conv, x: CTensor, y: CTensor) -> int:
    """W of the `merge W` the op's kernel states (0: none), checked against
    the band's memrefs: a diagnostic naming the op where they do not hold
    whole dense rows of W pixels."""
    kern = kernel_of(op)
    assert kern is not None  # `_panels` has found it
    wb = kern.row_blocks.merge_width
    if wb is None:
        return 0
    if x.rank != 4 or y.rank != 4 or x.strides[1] != wb * g.c or y.strides[1] != wb * g.co:
        raise CLoweringError(
            f"{op.name}: its rtile.row_blocks merge {wb} runs the band's rows as one, but "
            f"its memrefs' row strides ({x.strides[1] if x.rank == 4 else '-'} and "
            f"{y.strides[1] if y.rank == 4 else '-'} elements) are not whole rows of {wb} "
            f"pixels of {g.c} and {g.co} channels (run --lower-gebp on this plan)"
        )
    return wb


def _emit_pointwise(
    unit: CUnit,
    op: nn.NNOp,
    g: _Conv, q: _Q | None, ins: Sequence[CTensor], y: CTensor, xv: _View, yv: _View
) -> str:
    """A 1x1 convolution: rows of pixels through the GEBP driver, one call per
    output row, or all the band's rows in one call where its kernel's row
    blocks say `merge W` (`lower-gebp`: both memrefs hold whole dense rows of
    W pixels, which the call's bounds check)."""
    x = ins[0]
    p = _panels(op, g.c, g.co, q is not None, merge=True)
    _expect(op, p, "rows" if q is not None else "", 1, q)
    mat = _matrix_rows(unit, p, q, x.ctype)
    xt, yt = x.ctype, y.ctype
    wb = _merge_width(op, g, x, y)
    merge = wb > 0
    bt, it = ("float", "float") if q is None else ("int8_t", "int32_t")
    mid = [f"const {bt} *restrict bp", f"const {it} *restrict bias"]
    extra = "" if q is None else " mult,"
    if q is not None:
        mid.append(f"const {q.mt} *restrict mult")
    key = f"pw.{g.key()}.{xv.strides}.{yv.strides}.{merge}.{mat}"

    def build(name: str) -> str:
        out = _header(name, _conv_params(xt, yt, mid))
        out += _unpack("xb", "x", 4) + _unpack("yb", "y", 4)
        out += _batch_loop(xv, yv, xt, yt)
        body = []
        if merge:
            body += [
                f"    if (yl2 == xl2 && yn2 == {wb} && xn2 == {wb}) {{",
                "      TIGRIS_BOUND(yl1 >= xl1 && yl1 + yn1 <= xl1 + xn1);",
                f"      {mat}(xn + (long)(yl1 - xl1) * {xv.strides[1]}, {g.c},"
                f" yn1 * {wb}, bp, bias,{extra} yn, {g.co});",
                "      continue;",
                "    }",
            ]
        body += [
            "    for (int oy = yl1; oy < yl1 + yn1; ++oy) {",
            "      TIGRIS_BOUND(oy >= xl1 && oy < xl1 + xn1);",
            "      TIGRIS_BOUND(yl2 >= xl2 && yl2 + yn2 <= xl2 + xn2);",
            f"      {mat}(xn + (long)(oy - xl1) * {xv.strides[1]} + (long)(yl2 - xl2) * {g.c},"
            f" {g.c}, yn2, bp, bias,{extra} yn + (long)(oy - yl1) * {yv.strides[1]}, {g.co});",
            "    }",
        ]
        out += body + ["  }", "}"]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_pw_{g.c}_{g.co}", build)
    consts = _conv_consts(unit, g, q, ins, p)
    return f"  {name}({x.name}, {xv.bounds()}, {', '.join(consts)}, {y.name}, {yv.bounds()});"


def _emit_im2col(
    unit: CUnit,
    op: nn.NNOp,
    g: _Conv, q: _Q | None, ins: Sequence[CTensor], y: CTensor, xv: _View, yv: _View
) -> str:
    """Any other convolution: per output row, blocks of pixels gathered into
    a stack buffer (tap-major rows, zeros for padding), then the GEBP block of
    each group; the portable build runs direct loops over the same panels."""
    x = ins[0]
    k = g.taps * g.cg
    p = _panels(op, k, g.cog, q is not None)
    window = p.packing == "window" and q is None and g.groups == 1 and g.dw == 1
    _expect(op, p, "window" if window else "im2col", g.groups, q)
    xt, yt = x.ctype, y.ctype
    gs = p.size
    mc = p.plan.mc
    if q is None:
        guard = _gebp_prelude(unit, p.unit)
        bt, it, buft = "float", "float", "float"
    elif p.plan.dot in arm_m.ARM_DOTS:
        arm_m.prelude(unit)
        guard, bt, it = arm_m.GUARD[p.plan.dot], "int8_t", "int32_t"
        buft = arm_m.PACKED_TYPE[p.plan.dot]
    elif p.vnni:
        _vnni_prelude(unit, q.fixed)
        guard, bt, it, buft = "TG_VNNI", "int8_t", "int32_t", "uint8_t"
    else:
        _i8_prelude(unit, q.fixed)
        guard, bt, it, buft = "TG_AVX2", "int8_t", "int32_t", "int16_t"
    unit.scratch(p.plan.scratch)
    mid = [f"const {bt} *restrict bp", f"const {it} *restrict bias"]
    if q is not None:
        mid.append(f"const {q.mt} *restrict mult")
    acc = "float" if q is None else "int32_t"
    key = (
        f"{'window' if window else 'im2col'}.{g.key()}.{xv.strides}.{yv.strides}.{xt}.{yt}."
        f"{_qkey(q)}.{p.key()}"
    )
    # what a tap outside the image holds: zero, or the zero point's byte
    pad_byte = p.offset & 0xFF if q is not None and p.offset_rows else 0

    def build(name: str) -> str:
        out = _header(name, _conv_params(xt, yt, mid))
        out += _unpack("xb", "x", 4) + _unpack("yb", "y", 4)
        out.append(f"#ifdef {guard}")
        out.append(f"  {buft} buf[{mc * p.kp}] __attribute__((aligned(64)));")
        if window:
            out += _window_body(unit, g, p, xv, yv)
        else:
            if q is None:
                blk = _f32_block(unit, p)
            elif p.plan.dot in arm_m.ARM_DOTS:
                blk = arm_m.block(unit, p, q)
            else:
                blk = _vnni_block(unit, p, q) if p.vnni else _i8_block(unit, p, q)
            out += _im2col_body(g, p, q, xv, yv, xt, yt, buft, pad_byte, blk)
        out.append("#else")
        # plain loops over the same packed panels
        if q is None:
            out.append("  const float *b0 = bias;")
        else:
            out += _port_bias(p, q, g.groups, gs)
        out += _batch_loop(xv, yv, xt, yt)
        out += [
            "    for (int oy = yl1; oy < yl1 + yn1; ++oy)",
            "    for (int ox = yl2; ox < yl2 + yn2; ++ox) {",
            f"      {acc} acc[{g.groups * p.npad}];",
            f"      {yt} *yp = {_pixel(yv)};",
            f"      for (int j = 0; j < {g.groups * p.npad}; ++j) acc[j] = b0[j];",
            *_tap_loops(g, xv, xt),
            f"          for (int gi = 0; gi < {g.groups}; ++gi)",
            f"          for (int ci = 0; ci < {g.cg}; ++ci) {{",
            f"            const int k = (ky * {g.kw} + kx) * {g.cg} + ci;",
        ]
        if q is None:
            out.append(f"            const float av = xp[gi * {g.cg} + ci];")
        else:
            out.append(
                f"            const int32_t av = (int32_t)xp[gi * {g.cg} + ci] - {_lit(q.xzp)};"
            )
        out += _port_accum(
            p, f"(acc + gi * {p.npad})", f"(bp + (long)gi * {gs})", "k", "av", "            "
        )
        out += [
            "          }",
            "        }",
            "      }",
            f"      for (int gi = 0; gi < {g.groups}; ++gi)",
            f"      for (int j = 0; j < {g.cog}; ++j)",
            f"        yp[gi * {g.cog} + j] = "
            + _fclamp(p, _store(q, f"acc[gi * {p.npad} + j]", f"mult[gi * {p.npad} + j]"))
            + ";",
            "    }",
            "  }",
            "#endif",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_conv_{g.kh}x{g.kw}s{g.sh}x{g.sw}_{g.c}_{g.co}", build)
    consts = _conv_consts(unit, g, q, ins, p)
    return f"  {name}({x.name}, {xv.bounds()}, {', '.join(consts)}, {y.name}, {yv.bounds()});"


def _winograd_weights(p: _Panels, g: _Conv, w: np.ndarray) -> np.ndarray:
    """The six transformed weight matrices of a Winograd kernel (`G` times
    each kernel row's three taps, float64 then float32), each [kh * c, co]
    in the kernel's panels, one after the other."""
    w4 = np.asarray(w, np.float64).reshape(g.co, g.kh, g.kw, g.c)
    u = np.einsum("jx,oyxc->jyco", np.asarray(rk.WINOGRAD_G, np.float64), w4)
    u = u.reshape(rk.WINOGRAD_POINTS, g.kh * g.c, g.co).astype(np.float32)
    return np.concatenate([_pack_b(p, u[j]) for j in range(rk.WINOGRAD_POINTS)])


def _wino_input(indent: str, v: str, d: str, stride: str) -> list[str]:
    """C: the six transformed values of one channel (`BT` times the tile's
    six input pixels d0..d5), stored at v[j * stride]."""
    bt = rk.WINOGRAD_BT
    out = [f"{indent}const float {', '.join(f'd{i} = {d}[{i}][ci]' for i in range(6))};"]
    for j, row in enumerate(bt):
        terms = []
        for i, coef in enumerate(row):
            if coef == 0:
                continue
            mag = abs(coef)
            term = f"d{i}" if mag == 1 else f"{_flt(mag)} * d{i}"
            terms.append(("- " if coef < 0 else "+ ") + term)
        expr = " ".join(terms).removeprefix("+ ")
        if expr.startswith("- "):
            expr = "-" + expr[2:]
        out.append(f"{indent}{v}[{j} * {stride} + ci] = {expr};")
    return out


def _wino_output(indent: str, m: str, stride: str) -> list[str]:
    """C: the four output values o0..o3 of one column (`AT` times the six
    products m[j * stride + co])."""
    out = []
    for q, row in enumerate(rk.WINOGRAD_AT):
        terms = []
        for j, coef in enumerate(row):
            if coef == 0:
                continue
            term = f"{m}[{j} * {stride} + co]"
            mag = abs(coef)
            scaled = term if mag == 1 else f"{_flt(mag)} * {term}"
            terms.append(("- " if coef < 0 else "+ ") + scaled)
        out.append(f"{indent}float o{q} = {' '.join(terms).removeprefix('+ ')};")
    return out


def _emit_winograd(
    unit: CUnit, op: nn.NNOp, g: _Conv, ins: Sequence[CTensor], y: CTensor, xv: _View, yv: _View
) -> str:
    """A float32 convolution three taps wide at stride 1 along the width as
    its `winograd` kernel states it: per output row, the kernel rows inside
    the image (consecutive), and per row block of `plan.mc` tiles of four
    pixels, each tile's six input pixels of each such kernel row (zeros
    outside the image or the band) transformed into the rows of A of the six
    products (the stack buffer), the six products by the GEBP sweep of the
    kernel's panels over B's rows of those kernel rows (from zero), then per
    tile the output transform, the bias and the activation, storing the
    tile's pixels inside the band. The portable build runs the same
    transforms with the products in plain loops over the same panels."""
    k = g.kh * g.c
    if g.groups != 1 or (g.kw, g.sw, g.dw) != (3, 1, 1):
        raise CLoweringError(
            f"{op.name}: its rtile.kernel runs Winograd's F(4, 3) along the width, which "
            f"takes one group and 3 taps at stride and dilation 1 (got {g.groups} group(s), "
            f"{g.kw} taps, stride {g.sw}, dilation {g.dw})"
        )
    p = _panels(op, k, g.co, False)
    _expect(op, p, "winograd")
    if xv.strides[3] != 1 or xv.strides[2] != g.c or yv.strides[3] != 1:
        raise CLoweringError(
            f"{op.name}: a Winograd kernel reads pixels of {g.c} dense channels and stores "
            f"whole pixels; its memrefs' strides are {xv.strides} and {yv.strides}"
        )
    guard = _gebp_prelude(unit, p.unit)
    gp = replace(p, clamp=None)  # the products: from zero, no activation
    mc, npad, pts = p.plan.mc, p.npad, rk.WINOGRAD_POINTS
    ak = mc * k  # one product's rows of A in the buffer
    am = mc * npad  # one product's results
    if 4 * pts * (ak + am) > p.plan.scratch:
        raise CLoweringError(
            f"{op.name}: its rtile.pack_a states {p.plan.scratch} bytes of scratch, but "
            f"{mc} tiles' transformed rows and products take {4 * pts * (ak + am)}"
        )
    unit.scratch(p.plan.scratch)
    consts = [
        unit.const("wp", _winograd_weights(p, g, np.asarray(ins[1].value))),
        unit.const("bp", _pad_cols(p, np.asarray(ins[2].value, np.float32))),
        unit.const("zc", np.zeros(max(npad, g.c), np.float32)),
    ]
    key = f"winograd.{g.key()}.{xv.strides}.{yv.strides}.{p.key()}"

    def sweep_fn() -> str:
        def build(name: str) -> str:
            tiles = _f32_tiles(unit, gp)
            out = [
                f"#ifdef {guard}",
                f"static void {name}(const float *restrict a, long lda, int m,",
                "    const float *restrict bp, const float *restrict bias,",
                "    float *restrict y, long ldy, int k0, int kc)",
                "{",
                "  const int first = 1;",
            ]
            out += _f32_sweeps(gp, tiles, "a + (long)i * lda")
            out += ["}", "#endif"]
            return "\n".join(out)

        return _helper(unit, f"fwgebp.{gp.key()}", f"tg_fwgebp_{k}x{g.co}", build)

    def row_head() -> list[str]:
        """An output row's kernel rows inside the image (ky0, ns), its output
        pointer, and a row no kernel row reaches (the bias, activated)."""
        return [
            *_row_offsets(g, xv),
            "      int ky0 = -1, ns = 0;",
            f"      for (int ky = 0; ky < {g.kh}; ++ky)",
            "        if (rok[ky]) { if (ky0 < 0) ky0 = ky; ++ns; }",
            f"      float *yr = yn + (long)(oy - yl1) * {yv.strides[1]};",
            "      if (ns == 0) {",
            "        for (int ox = yl2; ox < yl2 + yn2; ++ox)",
            f"        for (int co = 0; co < {g.co}; ++co)",
            f"          yr[(long)(ox - yl2) * {yv.strides[2]} + co] = "
            f"{_fclamp(p, 'bias[co]')};",
            "        continue;",
            "      }",
        ]

    def transform(indent: str, v_at: str, stride: str) -> list[str]:
        """The tile at ix0: per kernel row s, its six pixels' transforms."""
        return [
            f"{indent}for (int s = 0; s < ns; ++s) {{",
            f"{indent}  const float *row = xn + roff[ky0 + s];",
            f"{indent}  const float *dp[6];",
            f"{indent}  for (int q = 0; q < 6; ++q) {{",
            f"{indent}    const int ix = ix0 + q;",
            f"{indent}    dp[q] = ix >= 0 && ix < {g.w} && ix >= xl2 && ix < xl2 + xn2",
            f"{indent}        ? row + (long)(ix - xl2) * {g.c} : zc;",
            f"{indent}  }}",
            f"{indent}  float *v = {v_at} + s * {g.c};",
            f"{indent}  for (int ci = 0; ci < {g.c}; ++ci) {{",
            *_wino_input(indent + "    ", "v", "dp", stride),
            f"{indent}  }}",
            f"{indent}}}",
        ]

    def store(indent: str, m: str, stride: str) -> list[str]:
        """Output transform, bias, activation and the stores of tile t at ox."""
        out = [
            f"{indent}float *yp = yr + (long)(ox - yl2) * {yv.strides[2]};",
            f"{indent}const float *mp = {m};",
            f"{indent}const int nq = yl2 + yn2 - ox < 4 ? yl2 + yn2 - ox : 4;",
            f"{indent}for (int co = 0; co < {g.co}; ++co) {{",
            *_wino_output(indent + "  ", "mp", stride),
        ]
        for q in range(rk.WINOGRAD_TILE):
            val = _fclamp(p, f"(o{q} + bias[co])")
            cond = "" if q == 0 else f"if (nq > {q}) "
            out.append(f"{indent}  {cond}yp[{q} * {yv.strides[2]} + co] = {val};")
        return out + [f"{indent}}}"]

    def build(name: str) -> str:
        gebp = sweep_fn()
        out = _header(name, _conv_params(
            "float", "float",
            ["const float *restrict bp", "const float *restrict bias",
             "const float *restrict zc"],
        ))
        out += _unpack("xb", "x", 4) + _unpack("yb", "y", 4)
        out.append(f"#ifdef {guard}")
        out.append(f"  float buf[{pts * (ak + am)}] __attribute__((aligned(64)));")
        out.append(f"  float *mb = buf + {pts * ak};")
        out += _batch_loop(xv, yv, "float", "float")
        out.append("    for (int oy = yl1; oy < yl1 + yn1; ++oy) {")
        out += row_head()
        out += [
            f"      for (int ox0 = yl2; ox0 < yl2 + yn2; ox0 += {4 * mc}) {{",
            "        const int left = yl2 + yn2 - ox0;",
            f"        const int nt = left >= {4 * mc} ? {mc} : (left + 3) / 4;",
            "        for (int t = 0; t < nt; ++t) {",
            f"          const int ix0 = ox0 + 4 * t - {g.pl};",
            *transform("          ", f"(buf + (long)t * {k})", str(ak)),
            "        }",
            f"        for (int j = 0; j < {pts}; ++j)",
            f"          {gebp}(buf + (long)j * {ak}, {k}, nt, bp + (long)j * {p.size},"
            f" zc, mb + (long)j * {am}, {npad}, ky0 * {g.c}, ns * {g.c});",
            "        for (int t = 0; t < nt; ++t) {",
            "          const int ox = ox0 + 4 * t;",
            *store("          ", f"(mb + (long)t * {npad})", str(am)),
            "        }",
            "      }",
            "    }",
            "  }",
            "#else",
        ]
        # the portable build: the same transforms, the products in plain loops
        out += [
            f"  float vt[{pts * k}], mt[{pts * npad}];",
            *_batch_loop(xv, yv, "float", "float"),
            "    for (int oy = yl1; oy < yl1 + yn1; ++oy) {",
            *row_head(),
            "      for (int ox = yl2; ox < yl2 + yn2; ox += 4) {",
            f"        const int ix0 = ox - {g.pl};",
            *transform("        ", "vt", str(k)),
            f"        for (int j = 0; j < {pts}; ++j) {{",
            f"          float *mj = mt + j * {npad};",
            f"          const float *bj = bp + (long)j * {p.size};",
            f"          for (int co = 0; co < {npad}; ++co) mj[co] = 0;",
            f"          for (int kk = 0; kk < ns * {g.c}; ++kk) {{",
            f"            const int k = ky0 * {g.c} + kk;",
            *_port_accum(p, "mj", "bj", "k", f"vt[j * {k} + kk]", "            "),
            "          }",
            "        }",
            *store("        ", "mt", str(npad)),
            "      }",
            "    }",
            "  }",
            "#endif",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_wconv_{g.kh}x{g.kw}_{g.c}_{g.co}", build)
    return f"  {name}({ins[0].name}, {xv.bounds()}, {', '.join(consts)}, {y.name}, {yv.bounds()});"


def _im2col_body(
    g: _Conv,
    p: _Panels,
    q: _Q | None,
    xv: _View,
    yv: _View,
    xt: str,
    yt: str,
    buft: str,
    pad_byte: int,
    blk: str,
) -> list[str]:
    """The vector build of an im2col kernel: per output row, blocks of
    `plan.mc` pixels gathered into `buf` (tap-major rows, `pad_byte` where a
    tap leaves the image), then the GEBP block `blk` of each group."""
    k = g.taps * g.cg
    mc = p.plan.mc
    out = _batch_loop(xv, yv, xt, yt)
    out.append("    for (int oy = yl1; oy < yl1 + yn1; ++oy) {")
    out += _row_offsets(g, xv)
    out += [
        f"      {yt} *yr = yn + (long)(oy - yl1) * {yv.strides[1]};",
        f"      for (int lo = yl2; lo < yl2 + yn2; lo += {mc}) {{",
        f"        const int nb = yl2 + yn2 - lo < {mc} ? yl2 + yn2 - lo : {mc};",
        f"        for (int gi = 0; gi < {g.groups}; ++gi) {{",
        "          for (int r = 0; r < nb; ++r) {",
        f"            const int ix0 = (lo + r) * {g.sw} - {g.pl};",
        f"            {buft} *d = buf + r * {p.kp};",
    ]
    if p.kp > k:
        out.append(f"            for (int kk = {k}; kk < {p.kp}; ++kk) d[kk] = 0;")
    span = g.kw * g.cg
    if _whole_tap_rows(g, xv):
        # a pixel whose window lies inside the image's width: per kernel row,
        # its kw taps are one run of kw * c input values
        out += [
            f"            if (ix0 >= 0 && ix0 + {g.kw - 1} < {g.w}) {{",
            f"              TIGRIS_BOUND(ix0 >= xl2 && ix0 + {g.kw - 1} < xl2 + xn2);",
            f"              for (int ky = 0; ky < {g.kh}; ++ky) {{",
            f"                {buft} *dt = d + ky * {span};",
            "                if (!rok[ky]) {",
            f"                  memset(dt, {pad_byte}, {span} * sizeof(*dt));",
            "                  continue;",
            "                }",
            f"                const {xt} *s = xn + roff[ky] + (long)(ix0 - xl2) * {g.c};",
            f"                {_gather(q, p, span)}",
            "              }",
            "              continue;",
            "            }",
        ]
    out += [
        f"            for (int ky = 0; ky < {g.kh}; ++ky)",
        f"            for (int kx = 0; kx < {g.kw}; ++kx) {{",
        f"              const int ix = ix0 + kx * {g.dw};",
        f"              {buft} *dt = d + (ky * {g.kw} + kx) * {g.cg};",
        f"              if (!rok[ky] || ix < 0 || ix >= {g.w}) {{",
        f"                memset(dt, {pad_byte}, {g.cg} * sizeof(*dt));",
        "                continue;",
        "              }",
        "              TIGRIS_BOUND(ix >= xl2 && ix < xl2 + xn2);",
        f"              const {xt} *s = xn + roff[ky] + (long)(ix - xl2) * {xv.strides[2]}"
        f" + gi * {g.cg};",
        f"              {_gather(q, p, g.cg)}",
        "            }",
        "          }",
    ]
    yarg = f"yr + (long)(lo - yl2) * {yv.strides[2]} + gi * {g.cog}"
    if q is None:
        out.append(
            f"          {blk}(buf, {p.kp}, nb, bp + (long)gi * {p.size}, bias + gi * {p.npad},"
            f" {yarg}, {g.co});"
        )
    else:
        out.append(
            f"          {blk}(buf, nb, bp + (long)gi * {p.size}, bias + gi * {p.npad},"
            f" mult + gi * {p.npad}, {yarg}, {g.co});"
        )
    return out + ["        }", "      }", "    }", "  }"]


def _window_body(unit: CUnit, g: _Conv, p: _Panels, xv: _View, yv: _View) -> list[str]:
    """The vector build of a `window` kernel: the band's pixels queued in
    order, each as one pointer per kernel row inside the image (its run of kw
    * c inputs read in place, or gathered into a slot of `buf` where its window
    leaves the image's width) and its result's pointer, `plan.mc` at a time;
    the queue is run by the window sweep when full, before a row whose kernel
    rows inside the image differ, and at the end, so micro tiles stay whole
    across output rows. A row with no kernel row inside holds the bias."""
    win = _f32_window(unit, p)
    mc, run = p.plan.mc, p.plan.kc
    # ox * sw - pl >= 0 and ox * sw - pl + kw - 1 < w: the window inside the width
    first = -(-g.pl // g.sw)
    last = (g.w - g.kw + g.pl) // g.sw
    flush = f"{win}(pa, {mc}, prk, pns, np, bp, bias, py);"
    out = [
        f"  const float *pa[{g.kh * mc}]; float *py[{mc}];",
        f"  int prk[{g.kh}], pns = 0, np = 0;",
        *_batch_loop(xv, yv, "float", "float"),
        "    for (int oy = yl1; oy < yl1 + yn1; ++oy) {",
        *_row_offsets(g, xv),
        f"      float *yr = yn + (long)(oy - yl1) * {yv.strides[1]};",
        f"      const float *ra[{g.kh}]; int rk[{g.kh}]; int ns = 0;",
        f"      for (int ky = 0; ky < {g.kh}; ++ky)",
        f"        if (rok[ky]) {{ ra[ns] = xn + roff[ky]; rk[ns] = ky * {run}; ++ns; }}",
        "      if (np && (ns != pns || memcmp(rk, prk, sizeof(int) * ns) != 0)) {",
        f"        {flush}",
        "        np = 0;",
        "      }",
        "      pns = ns;",
        "      memcpy(prk, rk, sizeof(int) * ns);",
        "      if (ns == 0) {",
        "        for (int ox = yl2; ox < yl2 + yn2; ++ox)",
        f"        for (int j = 0; j < {g.co}; ++j)",
        f"          yr[(long)(ox - yl2) * {yv.strides[2]} + j] = {_fclamp(p, 'bias[j]')};",
        "        continue;",
        "      }",
        "      for (int ox = yl2; ox < yl2 + yn2; ++ox) {",
        f"        const int ix0 = ox * {g.sw} - {g.pl};",
        f"        py[np] = yr + (long)(ox - yl2) * {yv.strides[2]};",
        f"        if (ox >= {first} && ox <= {last}) {{",
        f"          TIGRIS_BOUND(ix0 >= xl2 && ix0 + {g.kw - 1} < xl2 + xn2);",
        "          for (int s = 0; s < ns; ++s)",
        f"            pa[s * {mc} + np] = ra[s] + (long)(ix0 - xl2) * {g.c};",
        "        } else {",
        f"          float *d = buf + (long)np * {p.kp};",
        f"          for (int ky = 0; ky < {g.kh}; ++ky)",
        f"          for (int kx = 0; kx < {g.kw}; ++kx) {{",
        "            const int ix = ix0 + kx;",
        f"            float *dt = d + (ky * {g.kw} + kx) * {g.c};",
        "            if (!rok[ky]) continue;",
        f"            if (ix < 0 || ix >= {g.w}) {{",
        f"              memset(dt, 0, {g.c} * sizeof(*dt));",
        "              continue;",
        "            }",
        "            TIGRIS_BOUND(ix >= xl2 && ix < xl2 + xn2);",
        f"            memcpy(dt, xn + roff[ky] + (long)(ix - xl2) * {xv.strides[2]},"
        f" {g.c} * sizeof(float));",
        "          }",
        f"          for (int s = 0; s < ns; ++s) pa[s * {mc} + np] = d + rk[s];",
        "        }",
        f"        if (++np == {mc}) {{",
        f"          {flush}",
        "          np = 0;",
        "        }",
        "      }",
        "    }",
        "  }",
        f"  if (np) {flush}",
    ]
    return out


def _whole_tap_rows(g: _Conv, xv: _View) -> bool:
    """Whether a kernel row's kw taps read one run of kw * c input values
    (undilated, one group, pixels dense along the width)."""
    return g.dw == 1 and g.groups == 1 and xv.strides[2] == g.c and g.kw > 1


def _gather(q: _Q | None, p: _Panels, n: str | int) -> str:
    """C copying n input values at `s` into the gathered row at `dt`, as the
    kernel's rows hold them: float32, x - zp in int16 pairs, or unsigned bytes."""
    if q is None:
        return f"memcpy(dt, s, {n} * sizeof(float));"
    if p.vnni:
        return f"for (int ci = 0; ci < {n}; ++ci) dt[ci] = {_to_u8(q, 's[ci]')};"
    if p.plan.dot == "vmladava":
        return f"for (int ci = 0; ci < {n}; ++ci) dt[ci] = {arm_m.packed_value(q, 's[ci]')};"
    return f"for (int ci = 0; ci < {n}; ++ci) dt[ci] = (int16_t)(s[ci] - {_lit(q.xzp)});"


def _emit_depthwise(
    unit: CUnit,
    g: _Conv,
    q: _Q | None,
    ins: Sequence[CTensor],
    y: CTensor,
    xv: _View,
    yv: _View,
    plan: rk.DepthwisePlan,
    group: int = 0,
    clamp: tuple[float | None, float | None] | None = None,
) -> str:
    """A depthwise convolution: per output pixel one pointer per tap (the pad
    row where the tap leaves the image), vectors over channels, as `plan`
    (`rtile.depthwise`) states them: `plan.lanes` channels a vector,
    `plan.vectors` of them a step, float32 blocks of `plan.pixels` pixels;
    `clamp` (float32) the activation `lower-gebp` fused into it
    (`rtile.clamp`), applied to every value stored.

    `group` > 0 (float32): a band of a channel group, its buffers holding
    `group` channels per pixel from the band's first channel (`yl3`); the
    filters and biases are read from that channel on, and every pixel
    computes `group` channels (a shorter last group fills the rest of its
    pixel's slots, which no band reads; the constants are padded for it)."""
    x = ins[0]
    lanes = plan.lanes
    cp = -(-g.c // lanes) * lanes
    nc = group or g.c
    cv = nc // lanes
    xt, yt = x.ctype, y.ctype
    if q is None:
        _vec_prelude(unit)
        guard = "TG_VECTOR"
        if clamp is not None:
            _vclamp_prelude(unit, lanes)
    else:
        if clamp is not None:
            raise CLoweringError("an int8 depthwise convolution takes no fused activation")
        _i8_512_prelude(unit, q.fixed)
        guard = "TG_AVX2"

    def vclamp(accs: Sequence[str], indent: str) -> list[str]:
        """The fused activation on vector accumulators (nothing without one)."""
        if clamp is None:
            return []
        out = []
        for bound, macro in zip(clamp, ("TG_VLO", "TG_VHI")):
            if bound is not None:
                c = _flt(bound)
                out.append(f"{indent}{{ const tg_vf c_ = {{{', '.join([c] * lanes)}}};")
                out += [f"{indent}  {macro}({a}, c_);" for a in accs]
                out.append(f"{indent}}}")
        return out

    wt, it = ("float", "float") if q is None else ("int32_t", "int32_t")
    mid = [f"const {wt} *restrict w", f"const {it} *restrict bias"]
    if q is not None:
        mid.append(f"const {q.mt} *restrict mult")
        mid += [
            "const int16_t *restrict we",
            "const int16_t *restrict wo",
            "const int32_t *restrict be",
            "const int32_t *restrict bo",
            "const float *restrict ml",
            "const float *restrict mh",
        ]
    mid.append(f"const {xt} *restrict pad")
    c32 = -(-g.c // 32) * 32
    key = f"dw.{g.key()}.{xv.strides}.{yv.strides}.{xt}.{yt}.{_qkey(q)}.{group}.{clamp}.{plan}"

    def block(nv: int, c: str) -> list[str]:
        if q is None:
            out = [f"        tg_vf a{j} = TG_LD(bias + {c} + {j * lanes});" for j in range(nv)]
            out += [
                f"        for (int t = 0; t < {g.taps}; ++t) {{",
                f"          const float *p_ = tp[t] + {c}; const float *w_ = w + t * {cp} + {c};",
            ]
            out += [
                f"          TG_FMA(a{j}, TG_LD(p_ + {j * lanes}), TG_LD(w_ + {j * lanes}));"
                for j in range(nv)
            ]
            out.append("        }")
            out += vclamp([f"a{j}" for j in range(nv)], "        ")
            out += [f"        TG_ST(yp + {c} + {j * lanes}, a{j});" for j in range(nv)]
            return ["        {", *out, "        }"]
        load = "tg_ld8u" if xt == "uint8_t" else "tg_ld8s"
        store = "tg_st8u" if yt == "uint8_t" else "tg_st8s"
        out = [f"        __m256i a{j} = tg_ldi(bias + {c} + {8 * j});" for j in range(nv)]
        out += [
            f"        for (int t = 0; t < {g.taps}; ++t) {{",
            f"          const {xt} *p_ = tp[t] + {c}; const int32_t *w_ = w + t * {cp} + {c};",
        ]
        out += [
            f"          a{j} = _mm256_add_epi32(a{j}, _mm256_mullo_epi32("
            f"_mm256_sub_epi32({load}(p_ + {8 * j}), zx), tg_ldi(w_ + {8 * j})));"
            for j in range(nv)
        ]
        out.append("        }")
        out += [
            f"        {store}(yp + {c} + {8 * j},"
            f" tg_rq(a{j}, _mm256_loadu_ps(mult + {c} + {8 * j}),"
            " zy, lo, hi), 8);"
            for j in range(nv)
        ]
        return ["        {", *out, "        }"]

    def block512(c: str, rem: int) -> list[str]:
        """32 int8 channels from `c` (the first `rem` of them when rem): per tap
        the inputs widened to int16 less the zero point, pair products with the
        weights of the even and of the odd channels into two accumulators
        (the other channel's weight is zero), interleaved back per 128-bit
        lane (the multipliers are packed to match) and requantized."""
        cvt = "_mm512_cvtepu8_epi16" if xt == "uint8_t" else "_mm512_cvtepi8_epi16"
        if rem:
            load = f"_mm256_maskz_loadu_epi8(km, p_ + {c})"
            out = [f"        const __mmask32 km = (__mmask32){(1 << rem) - 1}u;"]
        else:
            load = f"_mm256_loadu_si256((const __m256i *)(const void *)(p_ + {c}))"
            out = []
        h = f"({c}) / 2"
        out += [
            f"        __m512i ae = _mm512_loadu_si512(be + {h});",
            f"        __m512i ao = _mm512_loadu_si512(bo + {h});",
            f"        for (int t = 0; t < {g.taps}; ++t) {{",
            f"          const {xt} *p_ = tp[t];",
            f"          const __m512i xv = _mm512_sub_epi16({cvt}({load}), zx16);",
            f"          TG_DPWSSD(ae, xv, _mm512_loadu_si512(we + t * {c32} + {c}));",
            f"          TG_DPWSSD(ao, xv, _mm512_loadu_si512(wo + t * {c32} + {c}));",
            "        }",
            "        const __m512i lo_ = tg_rq16(_mm512_unpacklo_epi32(ae, ao),"
            f" _mm512_loadu_ps(ml + {h}), zy16, lo16, hi16);",
            "        const __m512i hi_ = tg_rq16(_mm512_unpackhi_epi32(ae, ao),"
            f" _mm512_loadu_ps(mh + {h}), zy16, lo16, hi16);",
            "        const __m256i v_ = _mm512_cvtepi16_epi8(_mm512_packs_epi32(lo_, hi_));",
        ]
        if rem:
            out.append(f"        _mm256_mask_storeu_epi8(yp + {c}, km, v_);")
        else:
            out.append(f"        _mm256_storeu_si256((__m256i *)(void *)(yp + {c}), v_);")
        return ["        {", *out, "        }"]

    def f32_chunks() -> list[str]:
        """float32, vectors: blocks of `plan.pixels` output pixels of a row, their
        tap pointers first, then per block of channels the taps' weight
        vectors held in registers across the block's pixels (one load per
        multiply-add instead of two)."""
        pix, t = plan.pixels, g.taps
        nv = plan.vectors
        out = [
            f"      for (int ox0 = yl2; ox0 < yl2 + yn2; ox0 += {pix}) {{",
            f"        int pn = yl2 + yn2 - ox0 < {pix} ? yl2 + yn2 - ox0 : {pix};",
            f"        const float *tq[{pix * t}];",
            "        for (int p = 0; p < pn; ++p) {",
            f"          const int ix0 = (ox0 + p) * {g.sw} - {g.pl};",
            f"          for (int ky = 0; ky < {g.kh}; ++ky)",
            f"          for (int kx = 0; kx < {g.kw}; ++kx) {{",
            f"            const int ix = ix0 + kx * {g.dw};",
            f"            if (rok[ky] && ix >= 0 && ix < {g.w}) {{",
            "              TIGRIS_BOUND(ix >= xl2 && ix < xl2 + xn2);",
            f"              tq[p * {t} + ky * {g.kw} + kx] = xn + roff[ky]"
            f" + (long)(ix - xl2) * {xv.strides[2]};",
            "            } else {",
            f"              tq[p * {t} + ky * {g.kw} + kx] = pad;",
            "            }",
            "          }",
            "        }",
        ]

        def chunk_block(n: int, c: str) -> list[str]:
            v = [j * lanes for j in range(n)]
            body = ["        {"]
            for k in range(t):
                loads = [f"w{k}_{j} = TG_LD(w + {k * cp} + {c} + {o})" for j, o in enumerate(v)]
                body.append(f"          const tg_vf {', '.join(loads)};")
            body += [
                "          for (int p = 0; p < pn; ++p) {",
                f"            const float *const *t_ = tq + p * {t};",
                "            tg_vf "
                + ", ".join(f"a{j} = TG_LD(bias + {c} + {o})" for j, o in enumerate(v))
                + ";",
            ]
            for k in range(t):
                body += [
                    f"            TG_FMA(a{j}, TG_LD(t_[{k}] + {c} + {o}), w{k}_{j});"
                    for j, o in enumerate(v)
                ]
            body.append(f"            float *yp = yr + (long)(ox0 + p - yl2) * {yv.strides[2]};")
            body += vclamp([f"a{j}" for j in range(len(v))], "            ")
            body += [f"            TG_ST(yp + {c} + {o}, a{j});" for j, o in enumerate(v)]
            return [*body, "          }", "        }"]

        def row_block(n: int, c: str, edge: bool = False, npix: int = pix) -> list[str]:
            """A whole block of `npix` pixels: per channel vector and kernel
            row, each input vector loaded once and multiplied into every pixel
            whose window holds it, in the taps' order per pixel (the same sums
            as the tap pointers give). `edge`: some taps fall in the padding,
            their columns are skipped (they add zeros)."""
            cs = xv.strides[2]
            span = (npix - 1) * g.sw + (g.kw - 1) * g.dw + 1
            body = ["        {"]
            for k in range(t):
                loads = [f"w{k}_{j} = TG_LD(w + {k * cp} + {c} + {j * lanes})" for j in range(n)]
                body.append(f"          const tg_vf {', '.join(loads)};")
            for j in range(n):
                o = j * lanes
                accs = [f"a{p}" for p in range(npix)]
                body += [
                    "          {",
                    f"            const tg_vf b_ = TG_LD(bias + {c} + {o});",
                    f"            tg_vf {', '.join(f'{a} = b_' for a in accs)};",
                ]
                for ky in range(g.kh):
                    # at an edge the base is the row's first held pixel: no
                    # pointer is formed outside the buffer
                    at = "" if edge else f" + (long)(ix_a - xl2) * {cs}"
                    body += [
                        f"            if (rok[{ky}]) {{",
                        f"              const float *r_ = xn + roff[{ky}]{at} + {c} + {o};",
                    ]
                    for i in range(span):
                        uses = [
                            (p, kx)
                            for p in range(npix)
                            for kx in range(g.kw)
                            if p * g.sw + kx * g.dw == i
                        ]
                        if not uses:
                            continue
                        at = f"(long)(ix_a + {i} - xl2) * {cs}" if edge else str(i * cs)
                        inside = f"if ((unsigned)(ix_a + {i}) < {g.w}u) " if edge else ""
                        body.append(f"              {inside}{{ const tg_vf v_ = TG_LD(r_ + {at});")
                        body += [
                            f"                TG_FMA(a{p}, v_, w{ky * g.kw + kx}_{j});"
                            for p, kx in uses
                        ]
                        body.append("              }")
                    body.append("            }")
                body += vclamp(accs, "            ")
                body += [
                    f"            TG_ST(yr + (long)(ox0 + {p} - yl2) * {yv.strides[2]} + {c} + {o},"
                    f" a{p});"
                    for p in range(npix)
                ]
                body.append("          }")
            return [*body, "        }"]

        def chunks(block: Callable[[int, str], list[str]]) -> list[str]:
            got = []
            full, rest = divmod(cv, nv)
            if full:
                step = nv * lanes
                got.append(f"        for (int c0 = 0; c0 < {full * step}; c0 += {step})")
                got += block(nv, "c0")
            if rest:
                got += block(rest, str(full * nv * lanes))
            return got

        if nc == cv * lanes:  # whole vectors: the row kernel on whole blocks
            last = f"ix_a + {(pix - 1) * g.sw + (g.kw - 1) * g.dw}"
            half = pix // 2
            last_half = f"ix_a + {(half - 1) * g.sw + (g.kw - 1) * g.dw}"
            # a row's last partial block, where the row holds a whole one, is
            # the whole block ending with the row: it recomputes some pixels of
            # the block before, to the same sums; of at most half a block, the
            # half block ending with the row (a narrow column band's rest)
            halves = half >= 2 and pix % 2 == 0
            out[2:2] = [
                f"        if (pn < {pix} && {f'pn > {half} && ' if halves else ''}yn2 >= {pix}) "
                f"{{ ox0 = yl2 + yn2 - {pix}; pn = {pix}; }}",
                *(
                    [
                        f"        if (pn < {half} && yn2 >= {half}) "
                        f"{{ ox0 = yl2 + yn2 - {half}; pn = {half}; }}"
                    ]
                    if halves
                    else []
                ),
                f"        const int ix_a = ox0 * {g.sw} - {g.pl};",
                f"        if (pn == {pix} && ix_a >= 0 && {last} < {g.w}) {{",
                f"          TIGRIS_BOUND(ix_a >= xl2 && {last} < xl2 + xn2);",
                *chunks(row_block),
                "          continue;",
                "        }",
                f"        if (pn == {pix}) {{",
                f"          TIGRIS_BOUND((ix_a < 0 ? 0 : ix_a) >= xl2"
                f" && ({last} >= {g.w} ? {g.w - 1} : {last}) < xl2 + xn2);",
                *chunks(lambda n, c: row_block(n, c, edge=True)),
                "          continue;",
                "        }",
            ]
            if halves:
                at = out.index("          continue;", 2) + 1  # after the interior whole block
                at = out.index("        }", at) + 1
                out[at:at] = [
                    f"        if (pn == {half} && ix_a >= 0 && {last_half} < {g.w}) {{",
                    f"          TIGRIS_BOUND(ix_a >= xl2 && {last_half} < xl2 + xn2);",
                    *chunks(lambda n, c: row_block(n, c, npix=half)),
                    "          continue;",
                    "        }",
                ]
        out += chunks(chunk_block)
        if nc > cv * lanes:
            out += [
                "        for (int p = 0; p < pn; ++p) {",
                f"          const float *const *t_ = tq + p * {t};",
                f"          float *yp = yr + (long)(ox0 + p - yl2) * {yv.strides[2]};",
                f"          for (int c = {cv * lanes}; c < {nc}; ++c) {{",
                "            float s = bias[c];",
                f"            for (int k = 0; k < {t}; ++k) s += t_[k][c] * w[k * {cp} + c];",
                f"            yp[c] = {_clamp_expr(clamp, 's')};",
                "          }",
                "        }",
            ]
        return [*out, "      }"]

    def build(name: str) -> str:
        out = _header(name, _conv_params(xt, yt, mid))
        out += _unpack("xb", "x", 4) + _unpack("yb", "y", 4)
        if group:  # the group's filters and biases
            out += [
                "  TIGRIS_BOUND(xl3 == yl3 && yn3 <= xn3);",
                "  w += yl3; bias += yl3;",
            ]
        if q is not None:
            out += [
                "#ifdef TG_AVX512I",
                f"  const __m512i zx16 = _mm512_set1_epi16({_lit(q.xzp)});",
                f"  const __m512 zy16 = _mm512_set1_ps({_flt(q.yzp)});",
                f"  const __m512 lo16 = _mm512_set1_ps({_flt(q.lo)});",
                f"  const __m512 hi16 = _mm512_set1_ps({_flt(q.hi)});",
                "#else",
                "  (void)we; (void)wo; (void)be; (void)bo; (void)ml; (void)mh;",
                "#endif",
                "#ifdef TG_AVX2",
                f"  const __m256i zx = _mm256_set1_epi32({_lit(q.xzp)});",
                f"  const __m256 zy = _mm256_set1_ps({_flt(q.yzp)});",
                f"  const __m256 lo = _mm256_set1_ps({_flt(q.lo)});",
                f"  const __m256 hi = _mm256_set1_ps({_flt(q.hi)});",
                "  (void)zx; (void)zy; (void)lo; (void)hi;",
                "#endif",
            ]
        out += _batch_loop(xv, yv, xt, yt)
        out.append("    for (int oy = yl1; oy < yl1 + yn1; ++oy) {")
        out += _row_offsets(g, xv)
        out.append(f"      {yt} *yr = yn + (long)(oy - yl1) * {yv.strides[1]};")
        if q is None:
            out += ["#ifdef TG_VECTOR", *f32_chunks(), "#else"]
        out += _tap_pointers(g, xt, xv, yt, yv)
        if q is not None:
            n32, r32 = divmod(g.c, 32)
            out.append("#ifdef TG_AVX512I")
            if n32:
                out.append(f"        for (; c0 < {n32 * 32}; c0 += 32)")
                out += block512("c0", 0)
            if r32:
                out += block512(str(n32 * 32), r32)
            out += [f"        c0 = {g.c};", "#elif defined(TG_AVX2)"]
        else:
            out.append(f"#ifdef {guard}")
        step = plan.vectors if q is not None else 4  # float32: the unused #else of TG_VECTOR
        full4, rem = divmod(cv, step)
        if full4:
            out.append(f"        for (; c0 < {full4 * step * lanes}; c0 += {step * lanes})")
            out += block(step, "c0")
        if rem:
            out += block(rem, "c0")
            out.append(f"        c0 += {rem * lanes};")
        out += [
            "#endif",
            f"        for (int c = c0; c < {nc}; ++c) {{",
            f"          {'float' if q is None else 'int32_t'} s = bias[c];",
        ]
        if q is None:
            out.append(
                f"          for (int t = 0; t < {g.taps}; ++t) s += tp[t][c] * w[t * {cp} + c];"
            )
        else:
            out.append(
                f"          for (int t = 0; t < {g.taps}; ++t)"
                f" s += ((int32_t)tp[t][c] - {_lit(q.xzp)}) * w[t * {cp} + c];"
            )
        out += [
            f"          yp[c] = {_clamp_expr(clamp, _store(q, 's', 'mult[c]'))};",
            "        }",
            "      }",
        ]
        if q is None:
            out.append("#endif")
        out += [
            "    }",
            "  }",
            "}",
        ]
        return "\n".join(out)

    hint = f"tg_dw_{g.kh}x{g.kw}s{g.sh}x{g.sw}_{g.c}" + (f"g{group}" if group else "")
    name = _helper(unit, key, hint, build)
    w = np.asarray(ins[1].value).reshape(g.c, g.taps).T  # (taps, C)
    wpack = np.zeros((g.taps, cp), np.float32 if q is None else np.int32)
    wpack[:, : g.c] = w
    bias = np.zeros(cp, np.float32 if q is None else np.int32)
    bias[: g.c] = np.asarray(ins[2].value)
    if group:  # a last group reads up to `group` channels past its first
        wpack = np.concatenate([wpack.reshape(-1), np.zeros(group, wpack.dtype)])
        bias = np.concatenate([bias, np.zeros(group, bias.dtype)])
    args = [unit.const("dw", wpack), unit.const("db", bias)]
    if q is not None and q.fixed:  # the AVX-512 constants are never read: no vector kernel
        m = np.zeros(cp, np.int64)
        m[: g.c] = _multipliers(q, np.asarray(ins[3].value), g.c)
        args.append(unit.const("dm", m))
        args += ["(const int16_t *)0"] * 2 + ["(const int32_t *)0"] * 2 + ["(const float *)0"] * 2
    elif q is not None:
        m = np.zeros(cp, np.float32)
        m[: g.c] = _multipliers(q, np.asarray(ins[3].value), g.c)
        args.append(unit.const("dm", m))
        hints = ("dwe", "dwo", "dbe", "dbo", "dml", "dmh")
        consts = _dw512_consts(w, bias, m, g.c, c32)
        args += [unit.const(h, v) for h, v in zip(hints, consts)]
    padv = np.zeros(cp, np.float32) if q is None else np.full(cp, q.xzp, _NP[xt])
    args.append(unit.const("pad", padv))
    return f"  {name}({x.name}, {xv.bounds()}, {', '.join(args)}, {y.name}, {yv.bounds()});"


def _dw512_consts(
    w: np.ndarray, bias: np.ndarray, m: np.ndarray, c: int, c32: int
) -> list[np.ndarray]:
    """The AVX-512 int8 depthwise kernel's constants over channels padded to
    `c32`: weights (taps, c32) as int16 with the odd channels zeroed (even
    accumulator) and with the even ones zeroed (odd accumulator), the bias
    of the even and of the odd channels, and the multipliers in the order
    `unpacklo/hi_epi32` leaves the channels of a 32-channel block: per 128-bit
    lane k, channels 8k..8k+3 (lo) and 8k+4..8k+7 (hi)."""
    wq = np.zeros((w.shape[0], c32), np.int16)
    wq[:, :c] = w
    we, wo = wq.copy(), wq.copy()
    we[:, 1::2] = 0
    wo[:, 0::2] = 0
    b = np.zeros(c32, np.int32)
    b[:c] = bias[:c]
    mm = np.zeros(c32, np.float32)
    mm[:c] = m[:c]
    blocks = mm.reshape(-1, 4, 2, 4)  # (block, lane k, lo / hi, 4 channels)
    ml = np.ascontiguousarray(blocks[:, :, 0, :]).reshape(-1)
    mh = np.ascontiguousarray(blocks[:, :, 1, :]).reshape(-1)
    return [we, wo, b[0::2].copy(), b[1::2].copy(), ml, mh]


# ---------------------------------------------------------------------------
# transposed convolutions


@register("band", nn.ConvTransposeOp)
def emit_conv_transpose(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """A band of rows of a transposed convolution: every output pixel gathers
    the input pixels whose taps land on it (plain C; the innermost loop runs
    over the output channels of a group, contiguous in the weights)."""
    return _use_all(_conv_transpose(op, ins, outs, unit), ins)


def _conv_transpose(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    ct = cast(nn.ConvTransposeOp, op)
    g = _conv_geometry(ct)
    q = _quant(ct, ct.input, ct.output)
    if q is not None and q.fixed:
        fixed_helpers(unit)
    x, w, b = ins[0], ins[1], ins[2]
    ws = ins[3] if len(ins) > 3 else None
    y = outs[0]
    for t in (x, y):
        if any(ax != 1 for ax in t.cut):
            raise CLoweringError(
                f"{op.name}: only bands of rows are supported (no 2D tiles or channel cuts), "
                f"got cuts {list(t.cut)}"
            )
    _whole(op, w, "weight")
    _whole(op, b, "bias")
    if q is not None:
        if ws is None:
            raise CLoweringError(f"{op.name}: a quantized transposed conv needs weight scales")
        _whole(op, ws, "weight scales")
    xv, yv = _view(x, 4), _view(y, 4)
    xt, yt = x.ctype, y.ctype
    acc = "float" if q is None else "int32_t"
    mult_const = q is not None and ws is not None and ws.value is not None
    mult = "ws[co]" if mult_const else (_mult_expr(q, ws, "co") if q is not None else "")
    xval = f"xp[(long)ci * {xv.strides[3]}]"
    av = xval if q is None else f"(int32_t){xval} - {_lit(q.xzp)}"
    key = f"convT.{g.key()}.{xv.strides}.{yv.strides}.{xt}.{yt}.{_qkey(q, not mult_const)}"

    def taps(var: str, o: str, p: int, k: int, d: int, s: int, size: int, lo: str) -> list[str]:
        return [
            f"for (int k{var} = 0; k{var} < {k}; ++k{var}) {{",
            f"  const int t{var} = {o} + {p} - k{var} * {d};",
            f"  if (t{var} < 0 || t{var} % {s}) continue;",
            f"  const int i{var} = t{var} / {s};",
            f"  if (i{var} >= {size}) continue;",
            f"  TIGRIS_BOUND(i{var} >= {lo} && i{var} < {lo} + {lo.replace('l', 'n')});",
        ]

    def build(name: str) -> str:
        out = _direct_head(
            name, xv, yv, (xt, yt, w.ctype, b.ctype), acc, g.co, q.mt if q else "float"
        )
        out += [
            f"      for (int co = 0; co < {g.co}; ++co) acc[co] = bias[co];",
        ]
        out += ["      " + s for s in taps("y", "oy", g.pt, g.kh, g.dh, g.sh, g.h, "xl1")]
        out += ["        " + s for s in taps("x", "ox", g.pl, g.kw, g.dw, g.sw, g.w, "xl2")]
        out += [
            f"          const {xt} *xp = xn + (long)(iy - xl1) * {xv.strides[1]}"
            f" + (long)(ix - xl2) * {xv.strides[2]};",
            f"          for (int ci = 0; ci < {g.c}; ++ci) {{",
            f"            const {acc} av = {av};",
            f"            const {w.ctype} *wp = w"
            f" + ((long)(ci * {g.kh} + ky) * {g.kw} + kx) * {g.cog};",
            f"            {acc} *ap = acc + (ci / {g.cg}) * {g.cog};",
            f"            for (int j = 0; j < {g.cog}; ++j) ap[j] += av * wp[j];",
            "          }",
            "        }",
            "      }",
            "      for (int co = yl3; co < yl3 + yn3; ++co)",
            f"        yp[(long)(co - yl3) * {yv.strides[3]}] = {_store(q, 'acc[co]', mult)};",
            "    }",
            "  }",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_convT_{g.kh}x{g.kw}s{g.sh}x{g.sw}_{g.c}_{g.co}", build)
    return _direct_call(unit, name, (x, w, b, ws, y), (xv, yv), q, mult_const, g.co)


# ---------------------------------------------------------------------------
# matrix products


@dataclass(frozen=True)
class _Mat:
    """A matrix product's operands mapped onto the result's axes."""

    a_pairs: tuple[tuple[int, int], ...]
    """(A axis, result axis) of every A axis but K that indexes the result."""
    ak: int
    b_pairs: tuple[tuple[int, int], ...]
    bk: int
    j: int | None
    """The result's column axis (None for a vector B)."""
    k: int
    c_pairs: tuple[tuple[int, int], ...] = ()


def _drop_broadcast(
    pairs: Sequence[tuple[int, int]], shape: Sequence[int], out: Sequence[int]
) -> tuple[tuple[int, int], ...]:
    return tuple((a, d) for a, d in pairs if not (shape[a] == 1 and out[d] != 1))


def _mat_layout(op: nn.NNOp, ins: Sequence[CTensor], y: CTensor) -> _Mat:
    out = y.shape
    a, b = ins[0], ins[1]
    if isinstance(op, nn.GemmOp):
        ta, tb = bool(op.int_("trans_a")), bool(op.int_("trans_b"))
        ga, ak = ((1, 0),) if ta else ((0, 0),), 0 if ta else 1
        gb, bk = ((0, 1),) if tb else ((1, 1),), 1 if tb else 0
        c = ins[2]
        c_pairs = tuple((i, 2 - c.rank + i) for i in range(c.rank))
        return _Mat(
            _drop_broadcast(ga, a.shape, out),
            ak,
            _drop_broadcast(gb, b.shape, out),
            bk,
            1,
            a.shape[ak],
            _drop_broadcast(c_pairs, c.shape, out),
        )
    ra, rb, r = a.rank, b.rank, y.rank
    nb = r - (ra >= 2) - (rb >= 2)
    if ra == 1:
        a_pairs: list[tuple[int, int]] = []
        ak = 0
    else:
        a_pairs = [(i, nb - (ra - 2) + i) for i in range(ra - 2)] + [(ra - 2, nb)]
        ak = ra - 1
    if rb == 1:
        b_pairs: list[tuple[int, int]] = []
        bk = 0
        j = None
    else:
        b_pairs = [(i, nb - (rb - 2) + i) for i in range(rb - 2)] + [(rb - 1, r - 1)]
        bk = rb - 2
        j = r - 1
    return _Mat(
        _drop_broadcast(a_pairs, a.shape, out),
        ak,
        _drop_broadcast(b_pairs, b.shape, out),
        bk,
        j,
        a.shape[ak],
    )


def _offset(
    base: str, stem: str, pairs: Sequence[tuple[int, int]], strides: Sequence[int], skip: int | None
) -> str:
    terms = [
        f"(long)(g{d} - {stem}l{a}) * {strides[a]}" for a, d in pairs if d != skip and strides[a]
    ]
    return base + "".join(" + " + t for t in terms)


def _bounds_checks(
    stem: str, pairs: Sequence[tuple[int, int]], cut: Sequence[int], skip: int | None
) -> list[str]:
    return [
        f"    TIGRIS_BOUND(g{d} >= {stem}l{a} && g{d} < {stem}l{a} + {stem}n{a});"
        for a, d in pairs
        if a in cut and d != skip
    ]


def _emit_generic_mat(
    unit: CUnit,
    op: nn.NNOp,
    q: _Q | None,
    ins: Sequence[CTensor],
    y: CTensor,
    *,
    c: CTensor | None,
    mult: np.ndarray | None,
    ws: CTensor | None,
    bzp: int,
    alpha: float,
    beta: float,
) -> str:
    """Any band of a matrix product: loops over the result's global indices,
    every operand read through its own origin (broadcast axes at index 0)."""
    a, b = ins[0], ins[1]
    lay = _mat_layout(op, ins, y)
    if lay.ak in a.cut or lay.bk in b.cut:
        raise CLoweringError(f"{op.name}: a band that cuts the contracted axis has no C lowering")
    r = y.rank
    acc = "float" if q is None else "int32_t"
    jl, jn = (f"yl{lay.j}", f"yn{lay.j}") if lay.j is not None else ("0", "1")
    jw = y.shape[lay.j] if lay.j is not None else 1
    yjs = _st(y)[lay.j] if lay.j is not None else 0
    bj = [(ax, d) for ax, d in lay.b_pairs if d == lay.j]
    bjs = _st(b)[bj[0][0]] if bj else 0
    bjl = f"bl{bj[0][0]}" if bj else "0"
    cj = [(ax, d) for ax, d in lay.c_pairs if d == lay.j]
    azp = f" - {_lit(q.xzp)}" if q is not None and q.xzp else ""
    bzs = f" - {_lit(bzp)}" if bzp else ""
    aval = f"ap[(long)k * {_st(a)[lay.ak]}]"
    bval = f"bk[(long)(j - {bjl}) * {bjs}]"
    if q is not None:
        aval, bval = f"((int32_t){aval}{azp})", f"((int32_t){bval}{bzs})"
    cval = ""
    if c is not None:
        cjt = f" + (long)(j - cl{cj[0][0]}) * {_st(c)[cj[0][0]]}" if cj else ""
        cval = f"cp[0{cjt}]"
    if q is None:
        res = "acc[j - jl]"
        if alpha != 1.0:
            res = f"{_flt(alpha)} * {res}"
        if c is not None:
            res += f" + {_flt(beta)} * {cval}" if beta != 1.0 else f" + {cval}"
    else:
        res = "acc[j - jl]" + (f" + {cval}" if c is not None else "")
        m = "ws[j]" if mult is not None else _mult_expr(q, ws, "j")
        res = _store(q, res, m)
    clamp = clamp_of(op)  # an activation fused by lower-gebp (rtile.clamp beside rtile.direct)
    if clamp is not None:
        if q is not None:
            raise CLoweringError(f"{op.name}: an int8 matrix product takes no fused activation")
        res = _clamp_expr(clamp, f"({res})")
    key = (
        f"gmat.{op.name}.{lay}.{a.shape}{_st(a)}{a.cut}.{b.shape}{_st(b)}{b.cut}"
        f".{y.shape}{_st(y)}.{c.shape if c else ''}{_st(c) if c else ''}"
        f".{_qkey(q, mult is None)}.{bzp}.{alpha}.{beta}.{a.ctype}{b.ctype}{y.ctype}"
    ) + (f".clamp{clamp}" if clamp is not None else "")

    def build(name: str) -> str:
        params = [
            f"const {a.ctype} *restrict a",
            "const int *restrict ab",
            f"const {b.ctype} *restrict b",
            "const int *restrict bb",
        ]
        if c is not None:
            params += [f"const {c.ctype} *restrict c", "const int *restrict cb"]
        mt = q.mt if q is not None else "float"
        params += [f"const {mt} *restrict ws", f"{y.ctype} *restrict y", "const int *restrict yb"]
        out = _header(name, params)
        out.append(
            _voids("a", "ab", "b", "bb", "ws", "y", "yb") + (" (void)c; (void)cb;" if c else "")
        )
        out += _unpack("ab", "a", a.rank) + _unpack("bb", "b", b.rank)
        if c is not None:
            out += _unpack("cb", "c", c.rank)
        out += _unpack("yb", "y", r)
        depth = 0
        for d in range(r):
            if d == lay.j:
                continue
            out.append(f"  for (int g{d} = yl{d}; g{d} < yl{d} + yn{d}; ++g{d})")
            depth += 1
        out.append("  {")
        out += _bounds_checks("a", lay.a_pairs, a.cut, lay.j)
        out += _bounds_checks("b", lay.b_pairs, b.cut, lay.j)
        if bj and bj[0][0] in b.cut:
            out.append(f"    TIGRIS_BOUND({jl} >= {bjl} && {jl} + {jn} <= {bjl} + bn{bj[0][0]});")
        if c is not None:
            out += _bounds_checks("c", lay.c_pairs, c.cut, lay.j)
            if cj and cj[0][0] in c.cut:
                ca = cj[0][0]
                out.append(f"    TIGRIS_BOUND({jl} >= cl{ca} && {jl} + {jn} <= cl{ca} + cn{ca});")
        ypairs = [(d, d) for d in range(r)]
        out += [
            f"    const {a.ctype} *ap = {_offset('a', 'a', lay.a_pairs, _st(a), lay.j)};",
            f"    const {b.ctype} *bq = {_offset('b', 'b', lay.b_pairs, _st(b), lay.j)};",
            f"    {y.ctype} *yp = {_offset('y', 'y', ypairs, _st(y), lay.j)};",
        ]
        if c is not None:
            out.append(
                f"    const {c.ctype} *cp = {_offset('c', 'c', lay.c_pairs, _st(c), lay.j)};"
            )
        out += [
            f"    const int jl = {jl}, jn = {jn};",
            f"    {acc} acc[{jw}];",
            "    for (int j = jl; j < jl + jn; ++j) acc[j - jl] = 0;",
            f"    for (int k = 0; k < {lay.k}; ++k) {{",
            f"      const {acc} av = {aval};",
            f"      const {b.ctype} *bk = bq + (long)k * {_st(b)[lay.bk]};",
            f"      for (int j = jl; j < jl + jn; ++j) acc[j - jl] += av * {bval};",
            "    }",
            f"    for (int j = jl; j < jl + jn; ++j) yp[(long)(j - jl) * {yjs}] = {res};",
            "  }",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_mat_{lay.k}", build)
    args = [a.name, _view(a).bounds(), _const_or_ptr(unit, b, "b"), _view(b).bounds()]
    if c is not None:
        args += [_const_or_ptr(unit, c, "c"), _view(c).bounds()]
    if mult is not None:
        args.append(unit.const("m", mult))
    elif q is not None and ws is not None:
        args.append(ws.name)
    else:
        args.append("(const float *)0")
    args += [y.name, _view(y).bounds()]
    return f"  {name}({', '.join(args)});"


def _emit_fast_mat(
    unit: CUnit,
    op: nn.NNOp,
    q: _Q | None,
    a: CTensor,
    y: CTensor,
    bmat: np.ndarray,
    bias: np.ndarray,
    mult: np.ndarray | None,
) -> str:
    """Rows of A against constant weights through the GEBP driver: one run of
    rows along the result's row axis per index of its leading axes."""
    k, n = bmat.shape
    p = _panels(op, k, n, q is not None)
    _expect(op, p, "rows" if q is not None else "", 1, q)
    if q is not None and mult is not None and p.plan.dot in arm_m.ARM_DOTS:
        q = arm_m.with_short_requant(q, bmat.T, bias, mult)
    mat = _matrix_rows(unit, p, q, a.ctype)
    r = y.rank
    ra = r - 2
    lead = [(d, d) for d in range(ra)]
    extra = "" if q is None else " mult,"
    bt, it = ("float", "float") if q is None else ("int8_t", "int32_t")
    key = f"fmat.{a.shape}{_st(a)}{a.cut}.{y.shape}{_st(y)}.{mat}"

    def build(name: str) -> str:
        params = [f"const {a.ctype} *restrict a", "const int *restrict ab"]
        params += [f"const {bt} *restrict bp", f"const {it} *restrict bias"]
        if q is not None:
            params.append(f"const {q.mt} *restrict mult")
        params += [f"{y.ctype} *restrict y", "const int *restrict yb"]
        out = _header(name, params)
        out += _unpack("ab", "a", r) + _unpack("yb", "y", r)
        for d in range(ra):
            out.append(f"  for (int g{d} = yl{d}; g{d} < yl{d} + yn{d}; ++g{d})")
        out.append("  {")
        out += _bounds_checks("a", lead, a.cut, None)
        out += [
            f"    TIGRIS_BOUND(yl{ra} >= al{ra} && yl{ra} + yn{ra} <= al{ra} + an{ra});",
            f"    {mat}({_offset('a', 'a', lead, _st(a), None)}"
            f" + (long)(yl{ra} - al{ra}) * {_st(a)[ra]},"
            f" {_st(a)[ra]}, yn{ra}, bp, bias,{extra} {_offset('y', 'y', lead, _st(y), None)},"
            f" {_st(y)[ra]});",
            "  }",
            "}",
        ]
        return "\n".join(out)

    name = _helper(unit, key, f"tg_gemm_{k}x{n}", build)
    args = [
        a.name,
        _view(a).bounds(),
        unit.const("wp", _pack_b(p, bmat)),
        unit.const(
            "bp", _pad_cols(p, bias) if q is None else bias_cols(p, bmat, bias)
        ),
    ]
    if mult is not None:
        args.append(unit.const("mp", _pad_cols(p, mult)))
    args += [y.name, _view(y).bounds()]
    return f"  {name}({', '.join(args)});"


def _row_bias(c: CTensor, n: int) -> np.ndarray | None:
    """A constant C that broadcasts along the rows, as one row of n values."""
    if c.value is None or c.cut:
        return None
    v = np.asarray(c.value)
    if v.ndim == 2 and v.shape[0] != 1:
        return None
    return np.ascontiguousarray(
        np.broadcast_to(v.reshape(-1) if v.size > 1 else v.reshape(()), (n,))
    )


def _fast_rows_ok(a: CTensor, y: CTensor) -> bool:
    """A's and the result's last axes whole and unit-strided, no broadcast
    between A and the result's leading axes."""
    r = y.rank
    return (
        r >= 2
        and a.rank == r
        and a.shape[:-2] == y.shape[:-2]
        and r - 1 not in a.cut
        and r - 1 not in y.cut
        and a.strides[-1] == 1
        and y.strides[-1] == 1
    )


@register("band", nn.GemmOp, nn.MatMulOp)
def emit_matmul(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """A band of rows of a Gemm or MatMul, float32 or int8."""
    return _use_all(_matmul(op, ins, outs, unit), ins)


def _matmul(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    y = outs[0]
    if isinstance(op, nn.GemmOp):
        q = _quant(op, op.a, op.y)
        tiled = not _direct(op, ins, y, q is not None)  # the site runs its rtile.kernel
        if q is not None and q.fixed:
            fixed_helpers(unit)
        a, b, c = ins[0], ins[1], ins[2]
        ws = ins[3] if len(ins) > 3 else None
        ta, tb = bool(op.int_("trans_a")), bool(op.int_("trans_b"))
        alpha, beta = op.float_("alpha", 1.0), op.float_("beta", 1.0)
        n = y.shape[1]
        bias = _row_bias(c, n)
        const_b = b.value is not None and not b.cut
        if q is None and tiled and not ta and const_b and bias is not None and _fast_rows_ok(a, y):
            if alpha == 1.0:  # the weights as they are (float64 and back: 6 s for VGG19's fc6)
                bm = np.asarray(b.value, np.float32)
                bmat = np.ascontiguousarray(bm.T if tb else bm)
            else:
                bm = np.asarray(b.value, np.float64)
                bm = bm.T if tb else bm
                bmat = np.ascontiguousarray((alpha * bm).astype(np.float32))
            rb = (beta * bias.astype(np.float64)).astype(np.float32)
            return _emit_fast_mat(unit, op, q, a, y, bmat, rb, None)
        mult = None
        if q is not None:
            if ws is None:
                raise CLoweringError(f"{op.name}: a quantized gemm needs weight scales")
            if ws.value is not None:
                mult = _multipliers(q, ws.value, n)
            if tiled and const_b and bias is not None and mult is not None and _fast_rows_ok(a, y):
                bm = np.asarray(b.value)
                bmat = np.ascontiguousarray(bm.T if tb else bm)
                return _emit_fast_mat(unit, op, q, a, y, bmat, bias.astype(np.int32), mult)
        return _emit_generic_mat(
            unit, op, q, ins, y, c=c, mult=mult, ws=ws, bzp=0, alpha=alpha, beta=beta
        )
    mm = cast(nn.MatMulOp, op)
    q = _quant(mm, mm.a, mm.y)
    tiled = not _direct(op, ins, y, q is not None)
    if q is not None and q.fixed:
        fixed_helpers(unit)
    a, b = ins[0], ins[1]
    qb = nn.quant_of(mm.b)
    ws = ins[2] if len(ins) > 2 else None
    bzp = int(qb.zp_value) if (q is not None and qb is not None) else 0
    n = y.shape[-1] if b.rank >= 2 else 1
    mult = None
    if q is not None:
        if qb is not None:
            mult = _multipliers(q, np.array([qb.scale_value], np.float32), n)
        elif ws is not None and ws.value is not None:
            mult = _multipliers(q, ws.value, n)
        elif ws is None:
            raise CLoweringError(
                f"{op.name}: a quantized matmul needs a quantized B or weight scales"
            )
    fast = tiled and b.value is not None and b.rank == 2 and not b.cut and _fast_rows_ok(a, y)
    if fast and q is None:
        bmat = np.ascontiguousarray(np.asarray(b.value, np.float32))
        return _emit_fast_mat(unit, op, q, a, y, bmat, np.zeros(n, np.float32), None)
    if fast and q is not None and mult is not None and b.ctype == "int8_t" and bzp == 0:
        bmat = np.ascontiguousarray(np.asarray(b.value, np.int8))
        return _emit_fast_mat(unit, op, q, a, y, bmat, np.zeros(n, np.int32), mult)
    return _emit_generic_mat(
        unit, op, q, ins, y, c=None, mult=mult, ws=ws, bzp=bzp, alpha=1.0, beta=1.0
    )
