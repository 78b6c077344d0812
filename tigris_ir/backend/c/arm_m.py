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
  is corrected at print time for the packed rows' offset (`conv.bias_cols`).

Both end in one requantization per output (`tg_rqf`: the float32 rule of
`tigris_requant` with the round-half-even done by adding and subtracting
1.5 * 2**23, no library call, then SSAT / USAT). Each kernel sits under the
preprocessor condition of its extension (`TG_DSP`, `TG_MVE`); a compiler
that targets neither builds the portable loops over the same panels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tigris_ir.backend.c.band import CLoweringError, CUnit

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


def row_offset(q: _Q) -> int:
    """What the `vmladava` kernels' packed rows hold less than x - zp: the
    rows hold x (int8) or x - 128 (uint8), i.e. (x - zp) + offset."""
    return q.xzp - 128 if q.xt == "uint8_t" else q.xzp


def packed_value(q: _Q, v: str) -> str:
    """C for one input value as a `vmladava` kernel's packed row holds it."""
    return f"(int8_t)({v} ^ 0x80)" if q.xt == "uint8_t" else f"(int8_t){v}"


def prelude(unit: CUnit) -> None:
    """The helpers of the Cortex-M kernels, each under its extension's macro."""
    code = """#if defined(TIGRIS_VECTOR) && defined(__ARM_FEATURE_DSP)
#define TG_DSP 1
#include <arm_acle.h>
#endif
#if defined(TIGRIS_VECTOR) && defined(__ARM_FEATURE_MVE)
#define TG_MVE 1
#include <arm_mve.h>
#endif
#if defined(TG_DSP) || defined(TG_MVE)
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
/* tigris_requant's float32 rule before the zero point and the clamp, with the
   round half to even of the default mode done by adding and subtracting
   1.5 * 2**23 (exact for |v| < 2**22; anything larger saturates either way). */
static inline __attribute__((always_inline, unused)) int32_t tg_rqf(int32_t acc, float m,
                                                                   int32_t zp) {
  float v = (float)acc * m;
  v = v < -4194304.0f ? -4194304.0f : v;
  v = v > 4194304.0f ? 4194304.0f : v;
  v = (v + 12582912.0f) - 12582912.0f;
  return (int32_t)v + zp;
}
#endif
#ifdef TG_DSP
/* a compiler barrier: the odd pairs' words of B are loaded again, not kept */
#define TG_MEMBAR() __asm__ volatile("" ::: "memory")
/* SXTB16 of x rotated right by 8: bytes 1 and 3 as an int16 pair. */
static inline __attribute__((always_inline, unused)) int32_t tg_sxtb16r8(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
#endif"""
    unit.helper("c_conv.arm_m", code)


def _saturate(yt: str, v: str) -> str:
    return f"({yt})__usat({v}, 8)" if yt == "uint8_t" else f"({yt})__ssat({v}, 8)"


def _epilogue(r: int, nc: int, valid: int, q: _Q) -> list[str]:
    """Requantize and store the r x valid accumulators (the padded columns
    past `valid` are computed, never stored)."""
    out = [f"  const float m{j} = mult[{j}];" for j in range(min(nc, valid))]
    for i in range(r):
        for j in range(min(nc, valid)):
            rq = f"tg_rqf(c{i}_{j}, m{j}, {q.yzp})"
            out.append(f"  y[{i} * ldy + {j}] = {_saturate(q.yt, rq)};")
    return out


def _dsp_tile(unit: CUnit, p: _Panels, r: int, s: _Sweep, q: _Q) -> str:
    """One `smlad` micro-tile: r rows by the sweep's columns of accumulators."""
    from tigris_ir.backend.c.conv import _helper

    nc = s.vectors * p.lanes
    valid = (s.vectors - 1) * p.lanes + s.last
    kp = p.kp

    def build(name: str) -> str:
        out = [
            "#ifdef TG_DSP",
            f"static inline __attribute__((always_inline)) TG_INORDER void {name}(",
            f"    const int16_t *restrict a, const int8_t *restrict b, {q.yt} *restrict y,",
            "    long ldy, const int32_t *restrict bias, const float *restrict mult)",
            "{",
        ]
        out += [f"  int32_t c{i}_{j} = bias[{j}];" for i in range(r) for j in range(nc)]
        out += [
            f"  const int8_t *const be = b + {kp // 4 * 4 * nc};",
            "  do {",
        ]
        for half, (widen, off) in enumerate((("__sxtb16", 0), ("tg_sxtb16r8", 2))):
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

    key = f"dmk.{r}.{nc}.{valid}.{kp}.{q.yt}.{q.yzp}"
    return _helper(unit, key, f"tg_dmk_{r}x{nc}_{valid}", build)


def _mve_tile(unit: CUnit, p: _Panels, r: int, s: _Sweep, q: _Q) -> str:
    """One `vmladava` micro-tile: r rows by the sweep's columns, sixteen k
    steps per VMLADAVA."""
    from tigris_ir.backend.c.conv import _helper

    nc = s.vectors * p.lanes
    valid = (s.vectors - 1) * p.lanes + s.last
    kp = p.kp

    def build(name: str) -> str:
        out = [
            "#ifdef TG_MVE",
            f"static inline __attribute__((always_inline)) TG_INORDER void {name}(",
            f"    const int8_t *restrict a, const int8_t *restrict b, {q.yt} *restrict y,",
            "    long ldy, const int32_t *restrict bias, const float *restrict mult)",
            "{",
        ]
        out += [f"  int32_t c{i}_{j} = bias[{j}];" for i in range(r) for j in range(nc)]
        out += [
            f"  const int8_t *const be = b + {kp // 16 * 16 * nc};",
            "  do {",
        ]
        out += [f"    const int8x16_t b{j} = vldrbq_s8(b + {16 * j});" for j in range(nc)]
        for i in range(r):
            out.append(f"    const int8x16_t a{i} = vldrbq_s8(a + {i * kp});")
            out += [f"    c{i}_{j} = vmladavaq_s8(c{i}_{j}, a{i}, b{j});" for j in range(nc)]
        out += [f"    b += {16 * nc};", "    a += 16;", "  } while (b < be);"]
        out += _epilogue(r, nc, valid, q)
        out += ["}", "#endif"]
        return "\n".join(out)

    key = f"vmk.{r}.{nc}.{valid}.{kp}.{q.yt}.{q.yzp}"
    return _helper(unit, key, f"tg_mmk_{r}x{nc}_{valid}", build)


def block(unit: CUnit, p: _Panels, q: _Q) -> str:
    """The panel sweep of an `smlad` or `vmladava` kernel over m packed rows,
    called as the x86 int8 blocks are: (a, m, bp, bias, mult, y, ldy)."""
    from tigris_ir.backend.c.conv import _helper, _row_tail

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
        out = [
            f"#ifdef {guard}",
            f"static TG_INORDER void {name}(const {at} *restrict a, int m,"
            " const int8_t *restrict bp,",
            f"    const int32_t *restrict bias, const float *restrict mult, {q.yt} *restrict y,"
            " long ldy)",
            "{",
        ]
        for s in p.sweeps:

            def call(r: int, s: _Sweep = s) -> str:
                return (
                    f"{tiles[r, id(s)]}(a + (long)i * {p.kp}, b, y + (long)i * ldy + j0, ldy,"
                    " bias + j0, mult + j0);"
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

    key = f"ablk.{p.key()}.{q.xt}.{q.xzp}.{q.yt}.{q.yzp}"
    return _helper(unit, key, f"tg_agebp_{p.k}x{p.n}", build)
