"""The Cortex-M int8 GEBP kernels: the instruction selection of `smlad` and `vmladava`.

`lower-gebp` gives an int8 matrix-product band of a Cortex-M target an
`rtile.kernel` whose `dot` is the target's instruction (`Target.int8_dot`):

* `smlad` (the DSP extension of the M4 and M7, ARMv7E-M): A's rows are packed
  once per row block as int16 (x - zero point), in natural k order, so one
  32-bit word holds the pair of k steps one SMLAD takes; B stays int8 in its
  panels, each column's group of four k steps in one word ordered k0 k2 k1 k3
  (`pack_order`), so that SXTB16 of the word is the pair (k0, k1) and SXTB16
  of it rotated by 8 the pair (k2, k3): two SMLADs per word of B and row. The
  micro-tile's accumulators are general registers (rm x rn * lanes of them);
  per group of four k steps it sweeps the even pairs, then the odd ones, so
  that only one widened word of B per column is live at a time;
* `vmladava` (Helium, the M55's MVE, ARMv8.1-M): A's rows are packed as
  signed bytes (x, or x - 128 for uint8 inputs) and B as groups of sixteen k
  steps per column, so that one VMLADAVA.S8 adds sixteen products of a Q
  register of A and one of B to a general-register accumulator; the bias
  is less the packed rows' offset (`rtile.pack_a` offset, which `lower-gebp`
  states) times B's column sums (`conv.bias_cols`).

Both end in one requantization per output (`tg_rqf`: the float32 rule of
`tigris_requant` without a library call -- VCVTR on an FPU, else the round
half to even by adding and subtracting 1.5 * 2**23 -- then SSAT / USAT). Each kernel sits under the
preprocessor condition of its extension (`TG_DSP`, `TG_MVE`); a compiler
that targets neither builds the portable loops over the same panels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tigris_ir.backend.c.band import CLoweringError, CUnit, fixed_helpers, short_form, short_params

if TYPE_CHECKING:
    from tigris_ir.backend.c.conv import _Q, _Panels, _Sweep

ARM_DOTS = ("smlad", "vmladava")
"""The int8 instructions whose kernels this module prints."""

GUARD = {"smlad": "TG_DSP", "vmladava": "TG_MVE"}
"""The macro defined where the compiler targets each kernel's extension."""

PACKED_TYPE = {"smlad": "int16_t", "vmladava": "int8_t"}
"""The element type of A's packed rows."""


def pack_order(group: int) -> np.ndarray:
    """The k order of one packed group of B's column for `smlad`: k0 k2 k1 k3
    (SXTB16 takes bytes 0 and 2 of a word)."""
    assert group == 4
    return np.array([0, 2, 1, 3])


def b_index(k: str) -> str:
    """C for the position of k step `k` inside its packed group of four (the
    inverse of `pack_order`, which is its own inverse)."""
    return f"((({k}) & 1) << 1 | (({k}) & 3) >> 1)"


def packed_value(q: _Q, v: str) -> str:
    """C for one input value as a `vmladava` kernel's packed row holds it."""
    return f"(int8_t)({v} ^ 0x80)" if q.xt == "uint8_t" else f"(int8_t){v}"


def short_requant(
    q: _Q, w: np.ndarray, bias: np.ndarray | None, mult: np.ndarray
) -> bool:
    """Whether the short fixed-point form (`band.short_form`) is exact for
    every column of a layer: `w` (n, k) its int8 weights per output column,
    `bias` its int32 bias, `mult` the packed multipliers. The accumulator's
    bound per column is |bias| + sum |w| * max|x - zp| over the input type."""
    if not q.fixed:
        return False
    packed = np.asarray(mult, np.int64).reshape(-1)
    wa = np.abs(np.asarray(w, np.int64)).reshape(packed.size, -1)
    if q.xt == "uint8_t":
        dmax = max(255 - q.xzp, q.xzp)
    else:
        dmax = max(127 - q.xzp, q.xzp + 128)
    b = np.zeros(packed.size, np.int64) if bias is None else np.asarray(bias, np.int64)
    acc = np.abs(b.reshape(-1)[: packed.size]) + wa.sum(axis=1) * dmax
    return short_form(packed, acc, q.yzp)


def with_short_requant(
    q: _Q, w: np.ndarray, bias: np.ndarray | None, mult: np.ndarray
) -> _Q:
    """`q` marked for the short fixed-point form where `short_requant` holds."""
    from dataclasses import replace

    return replace(q, short=short_requant(q, w, bias, mult))


def prelude(unit: CUnit) -> None:
    """The helpers of the Cortex-M kernels, each under its extension's macro."""
    code = """#if defined(TIGRIS_VECTOR) && defined(__ARM_FEATURE_DSP)
#define TG_DSP 1
#endif
#if defined(TIGRIS_VECTOR) && defined(__ARM_FEATURE_MVE)
#define TG_MVE 1
#include <arm_mve.h>
/* ends an accumulation step: gcc would reassociate a chain of vector adds
   into a tree whose products all stay live (spilled Q registers) */
#define TG_KEEP(v) __asm__("" : "+w"(v))
#endif
#if defined(TG_DSP) || defined(TG_MVE)
#include <arm_acle.h>
#if defined(__GNUC__) && !defined(__clang__)
/* gcc's first scheduling pass lengthens the accumulators' live ranges past
   the fourteen general registers: the kernels are kept in source order */
#define TG_INORDER __attribute__((optimize("no-schedule-insns")))
#else
#define TG_INORDER
#endif
static inline __attribute__((always_inline, unused)) int32_t tg_ldw(const void *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline, unused)) void tg_stw(void *p, int32_t v) {
  memcpy(p, &v, sizeof v);
}
/* tigris_requant's float32 rule before the clamp: float32(acc) * m rounded
   half to even, plus the zero point, saturated to int32 (the clamp to int8
   follows). With a single-precision FPU one VCVTR (the FPSCR's rounding
   mode, to nearest even by default; saturating); without, the round by
   adding and subtracting 1.5 * 2**23 (exact for |v| < 2**22; anything larger
   saturates either way). */
#if defined(__ARM_FP) && (__ARM_FP & 4)
static inline __attribute__((always_inline, unused)) int32_t tg_rqf(int32_t acc, float m,
                                                                   int32_t zp) {
  float v = (float)acc * m, r;
  int32_t i;
  __asm__("vcvtr.s32.f32 %0, %1" : "=t"(r) : "t"(v));
  memcpy(&i, &r, sizeof i);
#ifdef __ARM_FEATURE_DSP
  return __qadd(i, zp);
#else
  return i > INT32_MAX - 255 ? INT32_MAX - 255 : (i < INT32_MIN + 255 ? INT32_MIN + 255 : i) + zp;
#endif
}
#else
static inline __attribute__((always_inline, unused)) int32_t tg_rqf(int32_t acc, float m,
                                                                   int32_t zp) {
  float v = (float)acc * m;
  v = v < -4194304.0f ? -4194304.0f : v;
  v = v > 4194304.0f ? 4194304.0f : v;
  v = (v + 12582912.0f) - 12582912.0f;
  return (int32_t)v + zp;
}
#endif
#endif
#if defined(TG_DSP) || defined(TG_MVE)
/* kernels.multiply_fixed of one int32 for a multiplier split into its Q31
   mantissa m, left shift l and right shift k (tg_fx_* of the packed value):
   the saturated left shift, the rounding doubling high multiply ((x m +
   2^30) >> 31 is its ties-toward-infinity rounding), then the right shift
   rounding half away from zero (the sum taken unsigned where it may pass
   INT32_MAX: exact). */
static inline __attribute__((always_inline, unused)) int32_t tg_mulx(int32_t x, int32_t m,
                                                                    int l, int k, int32_t half) {
  if (l) {
    const int32_t y = (int32_t)((uint32_t)x << l);
    x = (y >> l) != x ? (x < 0 ? INT32_MIN : INT32_MAX) : y;
  }
  int32_t h, t;
  /* (x m + 2^30) >> 31 of the 64-bit product (gcc widens the operands to a
     64 x 64 multiply where its value ranges merge) */
  __asm__("smull %0, %1, %2, %3\\n\\t"
          "adds %0, %0, #0x40000000\\n\\t"
          "adc %1, %1, #0\\n\\t"
          "lsrs %0, %0, #31\\n\\t"
          "orr %0, %0, %1, lsl #1"
          : "=&r"(h), "=&r"(t) : "r"(x), "r"(m) : "cc");
  if (k) {
    const uint32_t u = (uint32_t)h + (uint32_t)(half + (h >> 31));
    h = h >= 0 ? (int32_t)(u >> k) : (int32_t)u >> k;
  }
  return h;
}
/* a packed multiplier's short-form M, k - 1 and c (zero point zp) */
#define TG_FS_M(p) ((int32_t)(((uint32_t)(p) >> 6) | ((uint32_t)((uint64_t)(p) >> 32) << 26)))
#define TG_FS_K1(p) (31 - (int)((uint32_t)(p) & 63u))
#define TG_FS_C(zp, k1) ((int32_t)((uint32_t)(2 * (zp) + 1) << (k1)))
#define TG_FX_M(p) ((int32_t)((p) >> 6))
#define TG_FX_L(p) ((int)((p) & 63) - 32 > 0 ? (int)((p) & 63) - 32 : 0)
#define TG_FX_K(p) ((int)((p) & 63) - 32 < 0 ? 32 - (int)((p) & 63) : 0)
#define TG_FX_HALF(k) ((k) ? (int32_t)1 << ((k) - 1) : 0)
/* tg_mulx + zp, saturated to int32 (the clamp to int8 / uint8 follows) */
static inline __attribute__((always_inline, unused)) int32_t tg_rqx(int32_t acc, int32_t m,
                                                                   int l, int k, int32_t half,
                                                                   int32_t zp) {
#ifdef __ARM_FEATURE_DSP
  return __qadd(tg_mulx(acc, m, l, k, half), zp);
#else
  const int64_t v = (int64_t)tg_mulx(acc, m, l, k, half) + zp;
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
#endif
}
#endif
#ifndef TG_INORDER
#define TG_INORDER
#endif
#if defined(TG_MVE) && defined(__GNUC__) && !defined(__clang__)
/* the Helium GEBP: in source order, and each operand's loads at offsets from
   its one pointer (gcc's auto-increment pass copies a pointer to
   post-increment it, a move per load in the k loop) */
#define TG_HELIUM __attribute__((optimize("no-schedule-insns", "no-auto-inc-dec")))
#else
#define TG_HELIUM TG_INORDER
#endif
#ifdef TG_DSP
/* a compiler barrier: the odd pairs' words of B are loaded again, not kept */
#define TG_MEMBAR() __asm__ volatile("" ::: "memory")
/* SXTB16 (UXTB16) of x rotated right by 8: bytes 1 and 3 as an int16 pair. */
static inline __attribute__((always_inline, unused)) int32_t tg_sxtb16r8(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
static inline __attribute__((always_inline, unused)) int32_t tg_uxtb16r8(int32_t x) {
  int32_t r;
  __asm__("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
/* SXTAB16 (UXTAB16) of x rotated right by 8: a + bytes 1 and 3 of x, in
   16-bit halves. */
static inline __attribute__((always_inline, unused)) int32_t tg_sxtab16r8(int32_t a, int32_t x) {
  int32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
  return r;
}
static inline __attribute__((always_inline, unused)) int32_t tg_uxtab16r8(int32_t a, int32_t x) {
  int32_t r;
  __asm__("uxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
  return r;
}
#endif"""
    unit.helper("c_conv.arm_m", code)


def _qtag(q: _Q) -> str:
    """What a kernel's key says of its requantization rule."""
    return (".fx" if q.fixed else "") + (".fs" if q.short else "")


def _saturate(yt: str, v: str) -> str:
    return f"({yt})__usat({v}, 8)" if yt == "uint8_t" else f"({yt})__ssat({v}, 8)"


def _epilogue(r: int, nc: int, valid: int, q: _Q) -> list[str]:
    """Requantize and store the r x valid accumulators (the padded columns
    past `valid` are computed, never stored)."""
    cols = range(min(nc, valid))
    if q.short:  # the short fixed-point form, per column M, c and k
        out = [f"  const int64_t p{j} = mult[{j}];" for j in cols]
        out += [f"  const int32_t m{j} = TG_FS_M(p{j}); const int k{j} = TG_FS_K1(p{j}) + 1;"
                f" const int32_t r{j} = TG_FS_C({q.yzp}, k{j} - 1);" for j in cols]
        out += [f"  y[{i} * ldy + {j}] = "
                f"{_saturate(q.yt, f'tigris_rq_short(c{i}_{j}, m{j}, r{j}, k{j})')};"
                for i in range(r) for j in cols]
        return out
    if q.fixed:  # integer-only: kernels.requantize_fixed, the column's multiplier split once
        out = [f"  const int64_t p{j} = mult[{j}];" for j in cols]
        out += [f"  const int32_t m{j} = TG_FX_M(p{j}); const int l{j} = TG_FX_L(p{j}),"
                f" k{j} = TG_FX_K(p{j}); const int32_t h{j} = TG_FX_HALF(k{j});" for j in cols]
    else:
        out = [f"  const float m{j} = mult[{j}];" for j in cols]
    for i in range(r):
        for j in cols:
            if q.fixed:
                rq = f"tg_rqx(c{i}_{j}, m{j}, l{j}, k{j}, h{j}, {q.yzp})"
                st = _saturate(q.yt, rq)
            else:
                st = _saturate(q.yt, f"tg_rqf(c{i}_{j}, m{j}, {q.yzp})")
            out.append(f"  y[{i} * ldy + {j}] = {st};")
    return out


def whole_words(r: int, nc: int) -> bool:
    """Whether an `smlad` tile of r x nc accumulators keeps both widened
    halves of its words of B live through a group of four k steps (few
    accumulators: r * nc + 2 * nc <= 8 of the eleven free registers), or
    sweeps the even pairs, then the odd ones, loading each word twice."""
    return r * nc + 2 * nc <= 8


MVE_PARAMS = 3
"""int32 values per column the Helium tiles' fixed-point epilogue reads
(`mve_params`): the short form's M, c and -k, or the general rule's Q31
mantissa, left shift and right shift."""


def mve_params(q: _Q, j: str, valid: str | int, indent: str) -> list[str]:
    """C filling `rq` with the `MVE_PARAMS` values of the columns j .. j +
    valid - 1 of `mult` (`rq[3 * c]`, ...: column c of the panel), split from
    the packed multipliers once per panel rather than once per tile."""
    if q.short:
        body = [
            "const int k1_ = TG_FS_K1(p_);",
            "rq[3 * c] = TG_FS_M(p_);",
            f"rq[3 * c + 1] = TG_FS_C({q.yzp}, k1_);",
            "rq[3 * c + 2] = -(k1_ + 1);",
        ]
    else:
        body = ["rq[3 * c] = TG_FX_M(p_);", "rq[3 * c + 1] = TG_FX_L(p_);",
                "rq[3 * c + 2] = TG_FX_K(p_);"]
    return [
        f"{indent}for (int c = 0; c < {valid}; ++c) {{",
        f"{indent}  const int64_t p_ = mult[{j} + c];",
        *(f"{indent}  {line}" for line in body),
        f"{indent}}}",
    ]


def _mve_epilogue(r: int, nc: int, valid: int, q: _Q) -> list[str]:
    """Requantize per column in lanes: the r rows' accumulators of column j
    moved into one vector (a row per lane: a VDUP and r - 1 lane moves), VCVT,
    VMUL by the column's multiplier, VCVTN (round to nearest even,
    saturating), VQADD of the zero point, the clamp, and one scatter store of
    r bytes down the column (lanes past r predicated off). The fixed-point
    rule in lanes, its parameters split per panel (`mve_params`): VQSHL by the
    left shift, VQRDMULH by the Q31 mantissa (its rounding is
    kernels.multiply_fixed's), then VRSHL by minus the right shift after
    subtracting one from the negative lanes (VRSHL rounds ties up; the rule
    rounds them away from zero); the short form VQRDMULH, the constant c and
    one shift."""
    out = [
        "  const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)ldy);",
        f"  const int32x4_t lo = vdupq_n_s32({q.lo}), hi = vdupq_n_s32({q.hi});",
    ]
    pred = "" if r == 4 else "_p"
    tail = "" if r == 4 else f", vctp32q({r})"
    for j in range(min(nc, valid)):
        m, a, b = (f"rq[{MVE_PARAMS * j + i}]" for i in range(MVE_PARAMS))
        out += [
            f"  {{ int32x4_t v_ = vdupq_n_s32(c0_{j});",
            *(f"    v_ = vsetq_lane_s32(c{i}_{j}, v_, {i});" for i in range(1, r)),
            *(
                [
                    "    const int32x4_t s_ = vshrq_n_s32(v_, 31);",
                    f"    v_ = vaddq_n_s32(vqrdmulhq_n_s32(v_, {m}), {a});",
                    f"    v_ = vshlq_r_s32(vaddq_s32(v_, s_), {b});",
                ]
                if q.short
                else [
                    f"    const int l_ = {a}, k_ = {b};",
                    "    if (l_) v_ = vqshlq_s32(v_, vdupq_n_s32(l_));",
                    f"    v_ = vqrdmulhq_n_s32(v_, {m});",
                    "    if (k_) v_ = vrshlq_s32(vqaddq_s32(v_, vshrq_n_s32(v_, 31)),"
                    " vdupq_n_s32(-k_));",
                    f"    v_ = vqaddq_n_s32(v_, {q.yzp});",
                ]
                if q.fixed
                else [
                    f"    const float32x4_t f_ = vmulq_n_f32(vcvtq_f32_s32(v_), mult[{j}]);",
                    f"    v_ = vqaddq_n_s32(vcvtnq_s32_f32(f_), {q.yzp});",
                ]
            ),
            "    v_ = vminq_s32(vmaxq_s32(v_, lo), hi);",
            f"    vstrbq_scatter_offset{pred}_s32((int8_t *)(void *)(y + {j}), rows, v_{tail}); }}",
        ]
    return out


def _tile_head(dot: str, name: str, r: int, nc: int, kp: int, q: _Q) -> list[str]:
    """A micro-tile's signature, its accumulators started from the bias and
    the head of its k loop (groups of four k steps for `smlad`, sixteen for
    `vmladava`)."""
    group = 4 if dot == "smlad" else 16
    out = [
        f"#ifdef {GUARD[dot]}",
        f"static inline __attribute__((always_inline)) TG_INORDER void {name}(",
        f"    const {PACKED_TYPE[dot]} *restrict a, const int8_t *restrict b,"
        f" {q.yt} *restrict y,",
        f"    long ldy, const int32_t *restrict bias, const {q.mt} *restrict mult)",
        "{",
    ]
    out += [f"  int32_t c{i}_{j} = bias[{j}];" for i in range(r) for j in range(nc)]
    return [*out, f"  const int8_t *const be = b + {kp // group * group * nc};", "  do {"]


def _dsp_tile(unit: CUnit, p: _Panels, r: int, s: _Sweep, q: _Q) -> str:
    """One `smlad` micro-tile: r rows by the sweep's columns of accumulators."""
    from tigris_ir.backend.c.conv import _helper

    nc = s.vectors * p.lanes
    valid = (s.vectors - 1) * p.lanes + s.last
    kp = p.kp

    def build(name: str) -> str:
        out = _tile_head("smlad", name, r, nc, kp, q)
        if whole_words(r, nc):
            out += [f"    const int32_t v{j} = tg_ldw(b + {4 * j});" for j in range(nc)]
            out += [f"    const int32_t w{j} = __sxtb16(v{j}), u{j} = tg_sxtb16r8(v{j});"
                    for j in range(nc)]
            for i in range(r):
                out.append(f"    const int32_t e{i} = tg_ldw(a + {i * kp}),"
                           f" o{i} = tg_ldw(a + {i * kp + 2});")
                out += [f"    c{i}_{j} = __smlad(e{i}, w{j}, __smlad(o{i}, u{j}, c{i}_{j}));"
                        for j in range(nc)]
        for half, (widen, off) in enumerate(
            (("__sxtb16", 0), ("tg_sxtb16r8", 2)) if not whole_words(r, nc) else ()
        ):
            if half:
                out.append("    TG_MEMBAR();")
            out.append("    {")
            out += [f"      const int32_t w{j} = {widen}(tg_ldw(b + {4 * j}));" for j in range(nc)]
            out.append("      int32_t e;")
            for i in range(r):
                out.append(f"      e = tg_ldw(a + {i * kp + off});")
                out += [f"      c{i}_{j} = __smlad(e, w{j}, c{i}_{j});" for j in range(nc)]
            out.append("    }")
        out += [f"    b += {4 * nc};", "    a += 4;", "  } while (b < be);"]
        out += _epilogue(r, nc, valid, q)
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"dmk.{r}.{nc}.{valid}.{kp}.{q.yt}.{q.yzp}" + _qtag(q)
    return _helper(unit, key, f"tg_dmk_{r}x{nc}_{valid}", build)


def _mve_tile(unit: CUnit, p: _Panels, r: int, s: _Sweep, q: _Q) -> str:
    """One `vmladava` micro-tile: r rows by the sweep's columns, sixteen k
    steps per VMLADAVA, the k loop counted (DLS / LE with the count known),
    the fixed-point rule's parameters of its columns in `rq` (`mve_params`)."""
    from tigris_ir.backend.c.conv import _helper

    nc = s.vectors * p.lanes
    valid = (s.vectors - 1) * p.lanes + s.last
    kp = p.kp
    rq = "const int32_t *restrict rq" if q.fixed else f"const {q.mt} *restrict mult"

    def build(name: str) -> str:
        out = [
            "#ifdef TG_MVE",
            f"static inline __attribute__((always_inline)) TG_HELIUM void {name}(",
            f"    const int8_t *restrict a, const int8_t *restrict b, {q.yt} *restrict y,",
            f"    long ldy, const int32_t *restrict bias, {rq})",
            "{",
        ]
        out += [f"  int32_t c{i}_{j} = bias[{j}];" for i in range(r) for j in range(nc)]
        out.append(f"  for (int t_ = 0; t_ < {kp // 16}; ++t_) {{")
        out += [f"    const int8x16_t b{j} = vldrbq_s8(b + {16 * j});" for j in range(nc)]
        for i in range(r):
            out.append(f"    const int8x16_t a{i} = vldrbq_s8(a + {i * kp});")
            out += [f"    c{i}_{j} = vmladavaq_s8(c{i}_{j}, a{i}, b{j});" for j in range(nc)]
        out += [f"    b += {16 * nc};", "    a += 16;", "  }"]
        out += _mve_epilogue(r, nc, valid, q)
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"vmk.{r}.{nc}.{valid}.{kp}.{q.yt}.{q.yzp}" + _qtag(q)
    return _helper(unit, key, f"tg_mmk_{r}x{nc}_{valid}", build)


def block(unit: CUnit, p: _Panels, q: _Q) -> str:
    """The panel sweep of an `smlad` or `vmladava` kernel over m packed rows,
    called as the x86 int8 blocks are: (a, m, bp, bias, mult, y, ldy)."""
    from tigris_ir.backend.c.conv import _helper, _row_tail

    if q.fixed:
        fixed_helpers(unit)
    prelude(unit)
    dot = p.plan.dot
    guard, at = GUARD[dot], PACKED_TYPE[dot]
    if any(s.unroll != 1 for s in p.sweeps):
        raise CLoweringError(f"the {dot} kernels run their k loop unrolled once, not by "
                             f"{max(s.unroll for s in p.sweeps)}")
    tile: Callable[[CUnit, _Panels, int, _Sweep, _Q], str] = (
        _dsp_tile if dot == "smlad" else _mve_tile
    )

    def build(name: str) -> str:
        tiles = {(r, id(s)): tile(unit, p, r, s, q) for s in p.sweeps for r in s.tile_rows()}
        split = dot == "vmladava" and q.fixed  # the Helium tiles read mve_params
        out = [
            f"#ifdef {guard}",
            f"static {'TG_HELIUM' if dot == 'vmladava' else 'TG_INORDER'} void {name}("
            f"const {at} *restrict a, int m,"
            " const int8_t *restrict bp,",
            f"    const int32_t *restrict bias, const {q.mt} *restrict mult, {q.yt} *restrict y,"
            " long ldy)",
            "{",
        ]
        for s in p.sweeps:

            def call(r: int, s: _Sweep = s) -> str:
                return (
                    f"{tiles[r, id(s)]}(a + (long)i * {p.kp}, b, y + (long)i * ldy + j0, ldy,"
                    f" bias + j0, {'rq' if split else 'mult + j0'});"
                )

            if s.hi <= p.nfull:  # the full panels
                out.append(f"  for (int j0 = {s.lo}; j0 < {s.hi}; j0 += {s.width}) {{")
            else:
                out.append(f"  {{ const int j0 = {s.lo};")
            out.append(f"    const int8_t *b = bp + (long)j0 * {p.kp};")
            if split:
                valid = (s.vectors - 1) * p.lanes + s.last
                out.append(f"    int32_t rq[{MVE_PARAMS * s.width}];")
                out += mve_params(q, "j0", valid, "    ")
            out += _row_tail(s, call, "    ")
            out.append("  }")
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"ablk.{p.key()}.{q.xt}.{q.xzp}.{q.yt}.{q.yzp}" + _qtag(q)
    return _helper(unit, key, f"tg_agebp_{p.k}x{p.n}", build)


# ---------------------------------------------------------------------------
# depthwise convolutions


def depthwise_isa(target_name: str | None) -> str | None:
    """The extension an int8 depthwise convolution (or Add, Sub) of a
    Cortex-M target runs on ("mve", "dsp"), from the op's `rtile.target`
    (gebp-tile's); None for any other target (the x86 and portable kernels)."""
    from tigris_ir.rtile import targets as tg

    if target_name is None or target_name not in tg.PRESETS:
        return None
    mcu = tg.PRESETS[target_name].mcu
    if mcu is None:
        return None
    if mcu.mve != "none":
        return "mve"
    return "dsp" if mcu.dsp else None


def depthwise_consts(
    w: np.ndarray, bias: np.ndarray, xzp: int, c: int, cp: int, isa: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The weights (taps, cp) as int16 -- for the DSP kernel in its pair
    order (per four channels: c0 c2 c1 c3, the halves SMLABB / SMLATT take),
    for the MVE kernel in channel order -- and as int32 (the plain loop's),
    and the bias less zp * the taps' weight sums (the kernels multiply x
    itself; a pad tap holds the zero point)."""
    taps = w.shape[0]
    wq = np.zeros((taps, cp), np.int64)
    wq[:, :c] = w
    order = np.arange(cp).reshape(-1, 4)[:, [0, 2, 1, 3]].reshape(-1)
    w16 = (wq if isa == "mve" else wq[:, order]).astype(np.int16)
    b = np.zeros(cp, np.int64)
    b[:c] = np.asarray(bias, np.int64)[:c] - xzp * wq[:, :c].sum(axis=0)
    return w16, wq.astype(np.int32), b.astype(np.int32)


def emit_depthwise(unit: CUnit, isa: str, g, q: _Q, ins, y, xv, yv) -> str:
    """An int8 depthwise convolution on a Cortex-M extension: per output pixel
    one pointer per tap (the pad row of zero points where a tap leaves the
    image); with the DSP extension four channels per word, SXTB16 (UXTB16)
    splitting them into the even and the odd pair and SMLABB / SMLATT taking
    each half; with Helium eight channels widened to int16 lanes, their
    products widened to int32 (VMULLB, VMULLT), requantized in lanes (VCVT,
    VMUL, VCVTN round to nearest even, VQADD of the zero point, clamp). The channels left
    over, and every channel where the compiler targets neither extension, run
    the plain loop with `tigris_requant`."""
    from tigris_ir.backend.c import conv as cv

    prelude(unit)
    x = ins[0]
    xt, yt = x.ctype, y.ctype
    c, taps = g.c, g.taps
    cp = -(-c // 8) * 8
    guard = "TG_MVE" if isa == "mve" else "TG_DSP"
    mid = [
        "const int16_t *restrict w16",
        "const int32_t *restrict w32",
        "const int32_t *restrict bias",
        f"const {q.mt} *restrict mult",
        "const int32_t *restrict fx",
        f"const {xt} *restrict pad",
    ]
    if q.fixed:
        cv.fixed_helpers(unit)
    key = f"adw.{isa}.{g.key()}.{xv.strides}.{yv.strides}.{xt}.{yt}.{cv._qkey(q)}"
    sat = "__usat" if yt == "uint8_t" else "__ssat"
    ext, extr = (
        ("__uxtb16", "tg_uxtb16r8") if xt == "uint8_t" else ("__sxtb16", "tg_sxtb16r8")
    )

    def rq(j: int) -> str:
        if q.short:
            return (f"tigris_rq_short(a{j}, fx[c0 + {j}], fx[{cp} + c0 + {j}],"
                    f" fx[{2 * cp} + c0 + {j}])")
        if q.fixed:
            return (f"tg_rqx(a{j}, fx[c0 + {j}], fx[{cp} + c0 + {j}], fx[{2 * cp} + c0 + {j}],"
                    f" fx[{3 * cp} + c0 + {j}], {q.yzp})")
        return f"tg_rqf(a{j}, mult[c0 + {j}], {q.yzp})"

    def over_taps(body: Callable[[str, str], list[str]], tap: Callable[[int], str] | str,
                  ) -> list[str]:
        """The tap loop of a channel step over the tap pointers `tap` (C of
        `t`: `tp[t]` for any pixel), or unrolled over an interior pixel's tap
        pointers `tap(t)`."""
        if isinstance(tap, str):
            loop = f"          for (int t = 0; t < {taps}; ++t) {{"
            return [loop, *body(tap, "t"), "          }"]
        return [line for t in range(taps) for line in ("          {", *body(tap(t), str(t)),
                                                         "          }")]

    def dsp_channels(tap: Callable[[int], str] | str) -> list[str]:
        def body(ptr: str, t: str) -> list[str]:
            return [
                f"            const int32_t xv = tg_ldw({ptr} + c0);",
                f"            const int32_t xe = {ext}(xv), xo = {extr}(xv);",
                f"            const int32_t we = tg_ldw(wt + {t} * {cp}),"
                f" wo = tg_ldw(wt + {t} * {cp} + 2);",
                "            a0 = __smlabb(xe, we, a0); a2 = __smlatt(xe, we, a2);",
                "            a1 = __smlabb(xo, wo, a1); a3 = __smlatt(xo, wo, a3);",
            ]

        out = [
            f"        for (; c0 + 4 <= {c}; c0 += 4) {{",
            "          int32_t a0 = bias[c0], a1 = bias[c0 + 1], a2 = bias[c0 + 2],"
            " a3 = bias[c0 + 3];",
            "          const int16_t *wt = w16 + c0;",
            *over_taps(body, tap),
        ]
        out += [
            f"          yp[c0 + {j}] = ({yt}){sat}({rq(j)}, 8);"
            for j in range(4)
        ]
        return [*out, "        }"]

    def mve_channels(tap: Callable[[int], str] | str) -> list[str]:
        """Eight channels per step: x widened to int16 lanes, the products of
        the even and of the odd lanes widened to int32 (VMULLB / VMULLT) and
        summed in two accumulators, requantized in lanes and interleaved back
        (VMOVNB / VMOVNT) into one store of eight bytes."""

        def body(ptr: str, t: str) -> list[str]:
            if xt == "uint8_t":
                ld = f"vreinterpretq_s16_u16(vldrbq_u16({ptr} + c0))"
            else:
                ld = f"vldrbq_s16({ptr} + c0)"
            return [
                f"            const int16x8_t x_ = {ld};",
                f"            const int16x8_t w_ = vldrhq_s16(w16 + {t} * {cp} + c0);",
                "            ae = vaddq_s32(ae, vmullbq_int_s16(x_, w_));",
                "            ao = vaddq_s32(ao, vmulltq_int_s16(x_, w_));",
                "            TG_KEEP(ae); TG_KEEP(ao);",
            ]

        half = cp // 2
        out = [
            f"        for (; c0 + 8 <= {c}; c0 += 8) {{",
            f"          int32x4_t ae = vldrwq_s32(bias + {cp} + c0 / 2);",
            f"          int32x4_t ao = vldrwq_s32(bias + {cp + half} + c0 / 2);",
            *over_taps(body, tap),
        ]
        for h, (acc, off) in enumerate((("ae", cp), ("ao", cp + half))):
            if q.short:  # per lane: fx holds M, c, -k, even then odd
                f_ = [f"vldrwq_s32(fx + {(2 * i + h) * half} + c0 / 2)" for i in range(3)]
                out += [
                    f"          {{ int32x4_t r_ = vaddq_s32(vqrdmulhq_s32({acc}, {f_[0]}),"
                    f" {f_[1]});",
                    f"            r_ = vshlq_s32(vaddq_s32(r_, vshrq_n_s32({acc}, 31)), {f_[2]});",
                ]
            elif q.fixed:  # per lane: fx holds M, L, -K, the negative lanes' fix, even then odd
                f_ = [f"vldrwq_s32(fx + {(2 * i + h) * half} + c0 / 2)" for i in range(4)]
                out += [
                    f"          {{ int32x4_t r_ = vqrdmulhq_s32(vqshlq_s32({acc}, {f_[1]}),"
                    f" {f_[0]});",
                    f"            r_ = vrshlq_s32(vqaddq_s32(r_, vandq_s32(vshrq_n_s32(r_, 31),"
                    f" {f_[3]})), {f_[2]});",
                    f"            r_ = vqaddq_n_s32(r_, {q.yzp});",
                ]
            else:
                out += [
                    f"          {{ float32x4_t v_ = vmulq_f32(vcvtq_f32_s32({acc}),"
                    f" vldrwq_f32(mult + {off} + c0 / 2));",
                    f"            int32x4_t r_ = vqaddq_n_s32(vcvtnq_s32_f32(v_), {q.yzp});",
                ]
            out += [
                f"            {acc} = vminq_s32(vmaxq_s32(r_, vdupq_n_s32({q.lo})),"
                f" vdupq_n_s32({q.hi})); }}",
            ]
        out += [
            "          int16x8_t r_ = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), ae), ao);",
            "          vstrbq_s16((int8_t *)(void *)(yp + c0), r_);",
        ]
        return [*out, "        }"]

    def build(name: str) -> str:
        out = cv._header(name, cv._conv_params(xt, yt, mid))
        out[0] = out[0].replace("static TIGRIS_BAND void", "static TIGRIS_BAND TG_INORDER void", 1)
        out.append("  (void)w16; (void)w32; (void)fx;")
        out += cv._unpack("xb", "x", 4) + cv._unpack("yb", "y", 4)
        out += cv._batch_loop(xv, yv, xt, yt)
        out.append("    for (int oy = yl1; oy < yl1 + yn1; ++oy) {")
        out += cv._row_offsets(g, xv)
        out.append(f"      {yt} *yr = yn + (long)(oy - yl1) * {yv.strides[1]};")
        rows = " && ".join(f"rok[{ky}]" for ky in range(g.kh))
        out.append(f"      const int rall = {rows};")
        head = cv._tap_pointers(g, xt, xv, yt, yv)
        at = next(i for i, line in enumerate(head) if "const int ix0" in line) + 1
        span = (g.kw - 1) * g.dw
        s2 = xv.strides[2]

        def tap(t: int) -> str:
            return f"xr{t // g.kw} + {t % g.kw * g.dw * s2}"

        def channels(tap: Callable[[int], str] | str) -> list[str]:
            out = [f"#ifdef {guard}"]
            out += mve_channels(tap) if isa == "mve" else dsp_channels(tap)
            out += ["#endif", f"        for (int c = c0; c < {c}; ++c) {{",
                    "          int32_t s = bias[c];"]
            if isinstance(tap, str):
                out.append(f"          for (int t = 0; t < {taps}; ++t)"
                           f" s += (int32_t)({tap})[c] * w32[t * {cp} + c];")
            else:
                out += [f"          s += (int32_t)({tap(t)})[c] * w32[{t * cp} + c];"
                        for t in range(taps)]
            out += [f"          yp[c] = {cv._store(q, 's', 'mult[c]')};", "        }"]
            return out

        # a pixel whose window lies inside the image: its taps at constant
        # offsets from one pointer per kernel row, unrolled, no pointer table
        # (in source order: gcc's first scheduling pass hoists the unrolled
        # taps' loads and spills Q registers)
        inner = [
            f"        if (rall && ix0 >= 0 && ix0 + {span} < {g.w}) {{",
            f"          TIGRIS_BOUND(ix0 >= xl2 && ix0 + {span} < xl2 + xn2);",
            *(f"          const {xt} *const xr{ky} = xn + roff[{ky}] + (long)(ix0 - xl2) * {s2};"
              for ky in range(g.kh)),
            f"          {yt} *yp = yr + (long)(ox - yl2) * {yv.strides[2]};",
            "          int c0 = 0;",
            *channels(tap),
            "          continue;",
            "        }",
        ]
        out += head[:at] + inner + head[at:]
        out += channels("tp[t]")
        out += ["      }", "    }", "  }", "}"]
        return "\n".join(out)

    name = cv._helper(unit, key, f"tg_adw_{g.kh}x{g.kw}s{g.sh}x{g.sw}_{c}", build)
    w = np.asarray(ins[1].value).reshape(c, taps).T  # (taps, C)
    w16, w32, bias = depthwise_consts(w, np.asarray(ins[2].value), q.xzp, c, cp, isa)
    m = np.zeros(cp, np.int64 if q.fixed else np.float32)
    m[:c] = cv._multipliers(q, np.asarray(ins[3].value), c)

    def halves(v: np.ndarray) -> list[np.ndarray]:
        """The even and the odd lanes of every eight channels."""
        return [v.reshape(-1, 8)[:, h::2].reshape(-1) for h in (0, 1)]

    fx = np.zeros(1, np.int32)
    if q.short:
        sm, sc, sk = short_params(m, q.yzp)
        if isa == "mve":
            fx = np.concatenate([*halves(sm), *halves(sc), *halves(-sk)]).astype(np.int32)
        else:
            fx = np.concatenate([sm, sc, sk]).astype(np.int32)
    elif q.fixed:
        packed = np.asarray(m, np.int64)
        mm = (packed >> 6).astype(np.int32)
        e = (packed & 63).astype(np.int32) - 32
        left, right = np.maximum(e, 0), np.maximum(-e, 0)
        if isa == "mve":
            fix = np.where(right > 0, -1, 0).astype(np.int32)
            fx = np.concatenate([*halves(mm), *halves(left), *halves(-right), *halves(fix)])
        else:
            half = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
            fx = np.concatenate([mm, left, right, half]).astype(np.int32)
    if isa == "mve":
        bias = np.concatenate([bias, *halves(bias)])
        if not q.fixed:
            m = np.concatenate([m, *halves(m)])
    padv = np.full(cp, q.xzp, cv._NP[xt])
    args = [unit.const(h, v) for h, v in (
        ("aw16", w16), ("aw32", w32), ("ab", bias), ("am", m), ("afx", fx), ("apad", padv)
    )]
    return f"  {name}({x.name}, {xv.bounds()}, {', '.join(args)}, {y.name}, {yv.bounds()});"


# ---------------------------------------------------------------------------
# elementwise Add / Sub


def mve_add_lanes(
    unit: CUnit,
    tables: tuple[str, str],
    sign: str,
    rule: tuple[str, tuple[int, int, int]],
    zy: int,
    lo: int,
    hi: int,
) -> Callable[[list[str], str, str], list[str]]:
    """The Helium lanes of an int8 Add (sign "+") or Sub ("-") under fixed
    point, four elements per step ahead of the scalar loop: each operand's
    rescaled value gathered from its 256-entry table by its byte
    (VLDRB.U32, VLDRW gather: the scalar loop's own tables), the two summed,
    requantized in lanes -- the short form (`rule` ("short", (M, c, k)):
    VQRDMULH, + c, the sign, >> k) or the general one (("fixed", (M, l,
    k)): VQSHL, VQRDMULH, VRSHL with the negative lanes' fix, VQADD of the
    zero point) -- clamped and stored as bytes (VSTRB.32). Returns the lines
    given the operands' and the result's pointers and the element count; the
    loop advances `k`."""
    prelude(unit)
    kind, (m, a, b) = rule
    if kind == "short":
        rq = [
            "    const int32x4_t s_ = vshrq_n_s32(v_, 31);",
            f"    v_ = vaddq_n_s32(vqrdmulhq_n_s32(v_, {m}), {a});",
            f"    v_ = vshlq_r_s32(vaddq_s32(v_, s_), {-b});",
        ]
    else:
        rq = [
            *([f"    v_ = vqshlq_s32(v_, vdupq_n_s32({a}));"] if a else []),
            f"    v_ = vqrdmulhq_n_s32(v_, {m});",
            *(
                [f"    v_ = vrshlq_s32(vqaddq_s32(v_, vshrq_n_s32(v_, 31)), vdupq_n_s32({-b}));"]
                if b
                else []
            ),
            f"    v_ = vqaddq_n_s32(v_, {zy});",
        ]
    op = "vaddq_s32" if sign == "+" else "vsubq_s32"

    def lanes(xs: list[str], y: str, n: str) -> list[str]:
        got = [
            f"vldrwq_gather_shifted_offset_s32({t},"
            f" vldrbq_u32((const uint8_t *)(const void *)({x} + k)))"
            for t, x in zip(tables, xs)
        ]
        return [
            "#ifdef TG_MVE",
            f"for (; k + 4 <= {n}; k += 4) {{",
            f"    int32x4_t v_ = {op}({got[0]},",
            f"        {got[1]});",
            *rq,
            f"    v_ = vminq_s32(vmaxq_s32(v_, vdupq_n_s32({lo})), vdupq_n_s32({hi}));",
            f"    vstrbq_s32((int8_t *)(void *)({y} + k), v_);",
            "}",
            "#endif",
        ]

    return lanes


def dsp_add_lanes(
    unit: CUnit,
    tables: tuple[str, str],
    sign: str,
    rule: tuple[str, tuple[int, int, int]],
    zy: int,
    yt: str,
) -> Callable[[list[str], str, str], list[str]]:
    """The DSP-extension steps of an int8 Add (sign "+") or Sub ("-") under
    fixed point, four elements per step ahead of the scalar loop: each
    operand's rescaled value read from its 256-entry table by its byte (the
    scalar loop's rule), doubled in the table itself for the short form
    (`rule` ("short", (M, c, k)): `tigris_rq_short` without its own
    doubling, one SMMLAR of the doubled sum and the sign's correction added,
    the shift by k done by SSAT (USAT) as its operand's shift), or the
    general rule (("fixed", (M, l, k)): `tg_rqx`, then SSAT). Returns the
    lines given the operands' and the result's pointers and the element
    count; the loop advances `k`."""
    prelude(unit)
    kind, (m, a, b) = rule
    sat = "__usat" if yt == "uint8_t" else "__ssat"

    def rq(v: str) -> str:
        if kind == "short":
            return f"tg_rq2({v}, {m}, {a}, {b})"
        half = 1 << (b - 1) if b else 0
        return f"tg_rqx({v}, {m}, {a}, {b}, {half}, {zy})"

    unit.helper("c_conv.arm_m.rq2", """#ifdef TG_DSP
/* tigris_rq_short of acc given 2 acc (the tables hold the doubled values):
   SMMLAR, the sign of acc (that of 2 acc: no overflow, |acc| < 2^30), >> k */
static inline __attribute__((always_inline, unused)) int32_t tg_rq2(int32_t a2, int32_t m,
                                                                   int32_t c, int k) {
  int32_t h;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(h) : "r"(a2), "r"(m), "r"(c));
  return (h + (a2 >> 31)) >> k;
}
#endif""")

    def store(i: int, y: str) -> list[str]:
        """The short form's last shift inside the saturation (SSAT's
        operand shift, asr #1 to #31), else `rq` then SSAT."""
        if kind == "short" and 1 <= b <= 31:
            return [
                "    { int32_t h_, r_;",
                f'      __asm__("smmlar %0, %1, %2, %3" : "=r"(h_) : "r"(s{i}), "r"({m}),'
                f' "r"({a}));',
                f"      h_ += s{i} >> 31;",
                f'      __asm__("{sat[2:]} %0, #8, %1, asr #{b}" : "=r"(r_) : "r"(h_));',
                f"      {y}[k + {i}] = ({yt})r_; }}",
            ]
        return [f"    {y}[k + {i}] = ({yt}){sat}({rq(f's{i}')}, 8);"]

    def lanes(xs: list[str], y: str, n: str) -> list[str]:
        # the tables' addresses opaque to gcc: else it reaches the second
        # from the first (one more ADD per lookup, no scaled-index load)
        out = [
            "#ifdef TG_DSP",
            "{",
            f"  const int32_t *ta_ = {tables[0]}, *tb_ = {tables[1]};",
            '  __asm__("" : "+r"(ta_), "+r"(tb_));',
            f"  for (; k + 4 <= {n}; k += 4) {{",
        ]
        for i in range(4):
            got = [f"{t}[(uint8_t){x}[k + {i}]]" for t, x in zip(("ta_", "tb_"), xs)]
            out.append(f"    const int32_t s{i} = {got[0]} {sign} {got[1]};")
        for i in range(4):
            out += store(i, y)
        return [*out, "  }", "}", "#endif"]

    return lanes


# ---------------------------------------------------------------------------
# pools


@dataclass(frozen=True)
class PoolAxis:
    """One spatial axis of a pool as `ops.emit_pool` opened its loops: the
    output index's window start g<a>, its inside taps [ta<a>, tb<a>), the
    dilation, the input's element stride and first held row (C)."""

    axis: int
    dil: int
    stride: int
    first: str


@dataclass(frozen=True)
class PoolLanes:
    """What the SIMD channel loops of one output pixel of a pool need."""

    isa: str
    """"dsp" or "mve" (`rtile.lanes`)."""
    kind: str
    """"max" or "avg" (fixed point)."""
    xt: str
    yt: str
    axes: tuple[PoolAxis, ...]
    base: str
    """C: the input's channel 0 of this batch, before the taps' offsets."""
    out: str
    """C: the output pixel's channel 0."""
    cn: str
    """C: the channels."""
    xzp: int = 0
    yzp: int = 0
    rule: str = ""
    """Average: "short" (`tigris_rq_short`, tables M, c, k by count) or
    "fixed" (`tg_rqx`, the packed multiplier by count)."""
    tables: tuple[str, ...] = ()
    """Average: the per-count tables (short: M, c, k and the packed one the
    portable loops read; fixed: packed)."""
    count: str = ""
    """Average: C of the window's count (the divisor)."""
    channels: int | None = None
    """The channels where they are known when printing."""


MVE_STEP = 4
"""Q registers of accumulators a Helium pool step holds over its window
(sixty-four channels of a max pool, thirty-two of an average): four of the
eight, the loads and the requantization take the others."""


def _mve_ld(fn: str, ptr: str, i: int, pred: bool) -> str:
    """A Helium load of vector i of a step (zeroing the lanes off in a tail)."""
    return f"{fn.replace('q_', 'q_z_', 1)}({ptr}, p{i}_)" if pred else f"{fn}({ptr})"


def _mve_st(fn: str, ptr: str, v: str, i: int, pred: bool) -> str:
    """A Helium store of vector i of a step (only the lanes on in a tail)."""
    return f"{fn.replace('q_', 'q_p_', 1)}({ptr}, {v}, p{i}_)" if pred else f"{fn}({ptr}, {v})"


def _mve_head(cn: str, nq: int, lanes: int, pred: bool) -> list[str]:
    """The loop head of a Helium step over channels from c: `nq` whole
    vectors of `lanes` channels, or (`pred`) one predicated vector of the
    channels left (VCTP)."""
    if not pred:
        return [f"  for (; c + {lanes * nq} <= {cn}; c += {lanes * nq}) {{"]
    ctp = {16: "vctp8q", 8: "vctp16q", 4: "vctp32q"}[lanes]
    return [f"  for (; c < {cn}; c += {lanes}) {{",
            f"    const mve_pred16_t p0_ = {ctp}((uint32_t)({cn} - c));"]


def _mve_steps(
    channels: int | None, lanes: int, step: Callable[[int, bool], list[str]]
) -> list[str]:
    """A Helium kernel's steps from channel c = 0: whole vectors, up to
    `MVE_STEP` per step (as many as the known channels fill), one step of
    the whole vectors those leave, then one predicated vector at a time for
    the channels left (none where the known channels fill whole vectors)."""
    if channels is None:
        return [*step(MVE_STEP, False), *step(1, True)]
    whole = channels // lanes
    out: list[str] = []
    if whole:
        nq = min(MVE_STEP, whole)
        out += step(nq, False)
        if whole % nq:  # the whole vectors left: one step of them
            out += step(whole % nq, False)
    return out + (step(1, True) if channels % lanes else [])


def _taps(p: PoolLanes, body: list[str], indent: str) -> list[str]:
    """The window's taps around `body` (which reads `xp`, the tap's channel c)."""
    out: list[str] = []
    ptr = "xq + c"
    for i, ax in enumerate(p.axes):
        a = ax.axis
        pad = indent + "  " * i
        out += [
            f"{pad}for (int t{a} = ta{a}; t{a} < tb{a}; t{a}++) {{",
            f"{pad}  const int r{a} = g{a} + t{a} * {ax.dil} - {ax.first};",
            f"{pad}  const {p.xt} *const xp{i} = {ptr} + (long)r{a} * {ax.stride};",
        ]
        ptr = f"xp{i}"
    pad = indent + "  " * len(p.axes)
    out.append(f"{pad}const {p.xt} *const xp = {ptr};")
    out += [pad + line for line in body]
    out += [indent + "  " * i + "}" for i in reversed(range(len(p.axes)))]
    return out


def _sat(yt: str) -> str:
    return "__usat" if yt == "uint8_t" else "__ssat"


def pool_lanes(unit: CUnit, p: PoolLanes) -> list[str]:
    """The channel loops of one output pixel of an int8 max or average pool
    on the DSP extension or Helium, all `p.cn` channels, opening the `#ifdef`
    of its extension (the caller writes the portable loops under `#else`).

    Max, DSP: four words (sixteen channels) per step held in registers over
    the window, a per-byte maximum by SSUB8 (USUB8) setting the GE flags and
    SEL taking the larger bytes, then one word, then the channels left one by
    one. Max, Helium: sixteen channels per Q register, VMAX over the window,
    the last step predicated (VCTP8). Average, DSP: the bytes of one word
    summed in 16-bit halves (SXTAB16 of the word and of it rotated by 8:
    channels 0 and 2, 1 and 3; at most `decide.LANE_TAPS` terms), less the
    inside taps' zero points, requantized per channel by the window count's
    multiplier (`tigris_rq_short`, or `tg_rqx`) and SSAT; Helium: eight
    channels widened to int16 lanes (VLDRB.S16) summed, widened to int32
    (VMOVLB, VMOVLT), the rule in lanes (VQSHL, VQRDMULH, VRSHL with the
    negative lanes' fix, VQADD of the zero point), narrowed back (VMOVNB,
    VMOVNT), the last step predicated (VCTP16)."""
    prelude(unit)
    guard = GUARD["vmladava" if p.isa == "mve" else "smlad"]
    u = p.xt == "uint8_t"
    out = [f"#ifdef {guard}", "{", f"  const {p.xt} *const xq = {p.base};"]
    if p.kind == "max":
        if p.isa == "dsp":
            low = "0" if u else "(int32_t)0x80808080u"
            sub = "__usub8" if u else "__ssub8"

            def step(nw: int) -> list[str]:
                body: list[str] = []
                for i in range(nw):
                    body += [f"const int32_t v{i} = tg_ldw(xp + {4 * i});",
                             f"(void){sub}(v{i}, m{i}); m{i} = __sel(v{i}, m{i});"]
                return [
                    f"  for (; c + {4 * nw} <= {p.cn}; c += {4 * nw}) {{",
                    "    " + " ".join(f"int32_t m{i} = {low};" for i in range(nw)),
                    *_taps(p, body, "    "),
                    *(f"    tg_stw({p.out} + c + {4 * i}, m{i});" for i in range(nw)),
                    "  }",
                ]

            out += ["  int c = 0;", *step(4), *step(1)]
            body = ["if (xp[0] > m0) m0 = xp[0];"]
            out += [
                f"  for (; c < {p.cn}; c++) {{",
                f"    {p.xt} m0 = {'0' if u else '-128'};",
                *_taps(p, body, "    "),
                f"    {p.out}[c] = ({p.yt})m0;",
                "  }",
            ]
        else:
            s = "u8" if u else "s8"
            ty = "uint8x16_t" if u else "int8x16_t"

            def mstep(nq: int, pred: bool) -> list[str]:
                body = [
                    f"m{i}_ = vmaxq_{s}(m{i}_, "
                    f"{_mve_ld(f'vldrbq_{s}', f'xp + {16 * i}', i, pred)});"
                    for i in range(nq)
                ]
                stores = [
                    _mve_st(f"vstrbq_{s}", f"({p.yt} *)({p.out} + c + {16 * i})", f"m{i}_", i,
                            pred)
                    for i in range(nq)
                ]
                return [
                    *_mve_head(p.cn, nq, 16, pred),
                    "    " + " ".join(f"{ty} m{i}_ = vdupq_n_{s}({'0' if u else '-128'});"
                                  for i in range(nq)),
                    *_taps(p, body, "    "),
                    *(f"    {st};" for st in stores),
                    "  }",
                ]

            out += ["  int c = 0;", *_mve_steps(p.channels, 16, mstep)]
        return [*out, "}"]
    # the average pool, fixed point
    nin = " * ".join(f"(tb{ax.axis} - ta{ax.axis})" for ax in p.axes)
    out.append(f"  const int32_t zs_ = {nin} * {p.xzp};")
    out.append(f"  const int n_ = {p.count};")
    if p.rule == "short":
        tm, tc, tk, packed = p.tables
        out.append(f"  const int32_t M_ = {tm}[n_], C_ = {tc}[n_]; const int K_ = {tk}[n_];")
        out.append(f"  (void){packed};")
    else:
        out += [
            f"  const int64_t P_ = {p.tables[0]}[n_];",
            "  const int32_t M_ = TG_FX_M(P_); const int L_ = TG_FX_L(P_), K_ = TG_FX_K(P_);",
        ]
    if p.isa == "dsp":
        if p.rule == "short":
            def rq(v: str) -> str:
                return f"tigris_rq_short({v}, M_, C_, K_)"
        else:
            out.append("  const int32_t H_ = TG_FX_HALF(K_);")

            def rq(v: str) -> str:
                return f"tg_rqx({v}, M_, L_, K_, H_, {p.yzp})"
        ext, extr = ("__uxtab16", "tg_uxtab16r8") if u else ("__sxtab16", "tg_sxtab16r8")
        lo, hi = ("(int32_t)(uint16_t)", "(int32_t)((uint32_t)") if u else ("(int16_t)", "(")

        def sums(nw: int) -> list[str]:
            body: list[str] = []
            for i in range(nw):
                body += [f"const int32_t v{i} = tg_ldw(xp + {4 * i});",
                         f"e{i} = {ext}(e{i}, v{i}); o{i} = {extr}(o{i}, v{i});"]
            out = [
                f"  for (; c + {4 * nw} <= {p.cn}; c += {4 * nw}) {{",
                "    " + " ".join(f"int32_t e{i} = 0, o{i} = 0;" for i in range(nw)),
                *_taps(p, body, "    "),
            ]
            for i in range(nw):
                out += [
                    f"    const int32_t s{4 * i} = {lo}e{i} - zs_, s{4 * i + 1} = {lo}o{i} - zs_;",
                    f"    const int32_t s{4 * i + 2} = {hi}e{i} >> 16) - zs_,"
                    f" s{4 * i + 3} = {hi}o{i} >> 16) - zs_;",
                ]
            out += [f"    {p.out}[c + {j}] = ({p.yt}){_sat(p.yt)}({rq(f's{j}')}, 8);"
                    for j in range(4 * nw)]
            return [*out, "  }"]

        out += [
            "  int c = 0;",
            *sums(2),
            *sums(1),
            f"  for (; c < {p.cn}; c++) {{",
            "    int32_t s = 0;",
            *_taps(p, ["s += xp[0];"], "    "),
            f"    {p.out}[c] = ({p.yt}){_sat(p.yt)}({rq('s - zs_')}, 8);",
            "  }",
        ]
        return [*out, "}"]
    def ld(i: int, pred: bool) -> str:
        if u:
            return f"vreinterpretq_s16_u16({_mve_ld('vldrbq_u16', f'xp + {8 * i}', i, pred)})"
        return _mve_ld("vldrbq_s16", f"xp + {8 * i}", i, pred)

    def wide(i: int) -> list[str]:
        if u:
            return [f"vreinterpretq_s32_u32(vmovl{h}q_u16(vreinterpretq_u16_s16(s{i}_)))"
                    for h in "bt"]
        return [f"vmovlbq_s16(s{i}_)", f"vmovltq_s16(s{i}_)"]

    if p.rule == "short":
        rql = [
            "      const int32x4_t n_ = vshrq_n_s32(v_, 31);",
            "      v_ = vaddq_n_s32(vqrdmulhq_n_s32(v_, M_), C_);",
            "      v_ = vshlq_r_s32(vaddq_s32(v_, n_), -K_);",
        ]
    else:
        rql = [
            "      v_ = vqrdmulhq_n_s32(vqshlq_s32(v_, vdupq_n_s32(L_)), M_);",
            "      v_ = vrshlq_s32(vqaddq_s32(v_, vandq_s32(vshrq_n_s32(v_, 31), F_)),"
            " vdupq_n_s32(-K_));",
            f"      v_ = vqaddq_n_s32(v_, {p.yzp});",
        ]
    lo_, hi_ = (0, 255) if p.yt == "uint8_t" else (-128, 127)
    store = "vstrbq_u16" if p.yt == "uint8_t" else "vstrbq_s16"
    res = "vreinterpretq_u16_s16(r_)" if p.yt == "uint8_t" else "r_"

    def astep(nq: int, pred: bool) -> list[str]:
        out = [
            *_mve_head(p.cn, nq, 8, pred),
            "    " + " ".join(f"int16x8_t s{i}_ = vdupq_n_s16(0);" for i in range(nq)),
            *_taps(p, [f"s{i}_ = vaddq_s16(s{i}_, {ld(i, pred)});" for i in range(nq)], "    "),
        ]
        for q in range(nq):
            st = _mve_st(store, f"({p.yt} *)({p.out} + c + {8 * q})", res, q, pred)
            out += [
                "    {",
                *(line for i in range(2) for line in (
                    f"    int32x4_t h{i}_;",
                    f"    {{ int32x4_t v_ = vsubq_s32({wide(q)[i]}, vdupq_n_s32(zs_));",
                    *rql,
                    f"      h{i}_ = vminq_s32(vmaxq_s32(v_, vdupq_n_s32({lo_})),"
                    f" vdupq_n_s32({hi_})); }}",
                )),
                "    { const int16x8_t r_ = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), h0_), h1_);",
                f"      {st}; }}",
                "    }",
            ]
        return [*out, "  }"]

    out += [
        *(["  const int32x4_t F_ = vdupq_n_s32(K_ ? -1 : 0);"] if p.rule != "short" else []),
        "  int c = 0;",
        *_mve_steps(p.channels, 8, astep),
    ]
    return [*out, "}"]


def _static(expr: str) -> int | None:
    try:
        return int(expr)
    except ValueError:
        return None


def gap_lanes(
    unit: CUnit, isa: str, xt: str, base: str, axes: tuple[tuple[str, int], ...], cn: str,
    xzp: int, channels: int | None,
) -> list[str]:
    """The integer sums over every position of a global average pool's band,
    `part[c]` = sum of (x - zp) for the channels c < cn, opening the
    `#ifdef` of the extension (the caller writes the portable loops under
    `#else`). `axes`: each spatial axis's extent (C) and element stride.
    DSP: two words (eight channels) per step, their bytes summed in 16-bit
    halves (SXTAB16 of each word and of it rotated by 8) along one row of
    positions (at most `decide.LANE_TAPS` of them), the halves added to
    int32 sums after each row (the whole band at once where its rows are
    dense and hold at most 255 positions); then one word, then the channels
    left one by one. Helium: four channels per Q register widened to int32
    lanes (VLDRB.S32) and summed, up to `MVE_STEP` whole registers per step,
    then one predicated register (VCTP32) at a time (`_mve_steps`)."""
    prelude(unit)
    u = xt == "uint8_t"
    (e1, s1), (e2, s2) = axes
    npos = f"({e1}) * ({e2})"
    n1, n2 = _static(e1), _static(e2)
    if n1 is not None and n2 is not None and s1 == n2 * s2 and (
        isa == "mve" or n1 * n2 <= 255
    ):  # dense rows: one run of positions
        e1, e2, s1 = "1", str(n1 * n2), 0
    if isa == "mve":
        ld = "vldrbq_u32" if u else "vldrbq_s32"
        cast = "vreinterpretq_s32_u32" if u else ""

        def sub(i: int) -> str:
            return f"vsubq_s32(a{i}_, vdupq_n_s32({npos} * {xzp}))"

        def gstep(nq: int, pred: bool) -> list[str]:
            adds = [f"a{i}_ = vaddq_s32(a{i}_, {cast}({_mve_ld(ld, f'xr + {4 * i}', i, pred)}));"
                    for i in range(nq)]
            return [
                *_mve_head(cn, nq, 4, pred),
                "    " + " ".join(f"int32x4_t a{i}_ = vdupq_n_s32(0);" for i in range(nq)),
                f"    for (int j1 = 0; j1 < {e1}; j1++) {{",
                f"      const {xt} *xr = {base} + c + (long)j1 * {s1};",
                f"      for (int j2 = 0; j2 < {e2}; j2++, xr += {s2}) {{",
                *(f"        {a}" for a in adds),
                "      }",
                "    }",
                *(f"    {_mve_st('vstrwq_s32', f'part + c + {4 * i}', sub(i), i, pred)};"
                  for i in range(nq)),
                "  }",
            ]

        return ["#ifdef TG_MVE", "{", "  int c = 0;", *_mve_steps(channels, 4, gstep), "}"]
    ext, extr = ("__uxtab16", "tg_uxtab16r8") if u else ("__sxtab16", "tg_sxtab16r8")
    lo, hi = ("(int32_t)(uint16_t)", "(int32_t)((uint32_t)") if u else ("(int16_t)", "(")

    def step(nw: int) -> list[str]:
        out = [
            f"for (; c + {4 * nw} <= {cn}; c += {4 * nw}) {{",
            "  " + " ".join(f"int32_t t{j} = 0;" for j in range(4 * nw)),
            f"  for (int j1 = 0; j1 < {e1}; j1++) {{",
            f"    const {xt} *xr = {base} + c + (long)j1 * {s1};",
            "    " + " ".join(f"int32_t e{i} = 0, o{i} = 0;" for i in range(nw)),
            f"    for (int j2 = 0; j2 < {e2}; j2++, xr += {s2}) {{",
        ]
        for i in range(nw):
            out += [f"      const int32_t v{i} = tg_ldw(xr + {4 * i});",
                    f"      e{i} = {ext}(e{i}, v{i}); o{i} = {extr}(o{i}, v{i});"]
        out.append("    }")
        for i in range(nw):
            out += [
                f"    t{4 * i} += {lo}e{i}; t{4 * i + 1} += {lo}o{i};",
                f"    t{4 * i + 2} += {hi}e{i} >> 16); t{4 * i + 3} += {hi}o{i} >> 16);",
            ]
        out.append("  }")
        out += [f"  part[c + {j}] = t{j} - {npos} * {xzp};" for j in range(4 * nw)]
        return [*out, "}"]

    return [
        "#ifdef TG_DSP",
        "int c = 0;",
        *step(2),
        *step(1),
        f"for (; c < {cn}; c++) {{",
        "  int32_t t = 0;",
        f"  for (int j1 = 0; j1 < {e1}; j1++)",
        f"    for (int j2 = 0; j2 < {e2}; j2++)",
        f"      t += ({base})[c + (long)j1 * {s1} + (long)j2 * {s2}];",
        f"  part[c] = t - {npos} * {xzp};",
        "}",
    ]
