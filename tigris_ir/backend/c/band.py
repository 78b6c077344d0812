"""Band ops as C: the contract between the network printer and the op emitters.

The network printer (`c_net`) walks a loop-level plan and, at every
`loop.band` / `loop.accumulate` / `loop.finish`, asks the emitter registered
for the body's `nn` op class for C. The emitter sees each operand as a
`CTensor`: a pointer variable to the memref's first element, the whole
tensor's shape, the memref's static element strides and, per axis, the global
index of the memref's first element and its size there, as C expressions
(plain integers where they are static). The output memrefs hold exactly the
band to compute; the inputs hold the rows the plan loaded or computed, and
rows outside the image are the op's own padding (as `band_exec` defines).

An emitter returns C statements (a call, usually) and adds the functions it
calls to the unit once, through `CUnit.helper`, specialised on everything
static (channels, kernel, strides, quantization): the kernels are printed per
op from the IR, not taken from a runtime. Numerics:

* float32: float32 arithmetic in any order (the tests allow a relative 1e-5
  against the interpreter, which rounds once from float64);
* int8: bit-identical to the interpreter: int32 accumulators,
  `requantize` as `nearbyintf((float)acc * m) + zp` saturated, with floating
  point contraction off (the build passes `-ffp-contract=off`); an op the
  reference runs in float on dequantized values is either a 256-entry table
  computed here by the reference itself, or the same float32 operations in
  the same order.

Vector code sits under `#ifndef TIGRIS_PORTABLE` with a plain C loop in the
`#else` branch; `TIGRIS_BOUND(cond)` asserts an access in the bounds-checking
build and is empty otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from tigris_ir.dialects import nn

Kind = Literal["band", "accumulate", "finish"]


class CLoweringError(Exception):
    """An op (named in the message) that has no C lowering for this band."""


@dataclass(frozen=True)
class CTensor:
    """One operand of a band op, as C sees it."""

    name: str
    """A C pointer variable (`T *` or `const T *`) to the memref's first element."""
    ctype: str
    """Element type: "float", "int8_t", "uint8_t", "int32_t", "int64_t" or "_Bool"."""
    shape: tuple[int, ...]
    """The whole tensor's shape (the band body's tensor type)."""
    strides: tuple[int, ...]
    """The memref's element strides (static)."""
    origin: tuple[str, ...]
    """Per axis, the global index of the memref's element 0 ("0" where uncut)."""
    extent: tuple[str, ...]
    """Per axis, the memref's size ("<shape[a]>" where uncut)."""
    cut: tuple[int, ...]
    """The axes this operand is a band of."""
    value: np.ndarray | None = None
    """A constant operand's value (weights and tables), in the IR's layout."""

    @property
    def rank(self) -> int:
        return len(self.shape)

    def static_origin(self, axis: int) -> int | None:
        """The origin along `axis` when it is a compile-time integer."""
        return _int(self.origin[axis])

    def static_extent(self, axis: int) -> int | None:
        """The extent along `axis` when it is a compile-time integer."""
        return _int(self.extent[axis])

    def contiguous(self) -> bool:
        """Whether the memref's elements are row-major and dense."""
        want = 1
        for d, s in zip(reversed(self.shape), reversed(self.strides)):
            if s != want:
                return False
            want *= d
        return True


def _int(expr: str) -> int | None:
    try:
        return int(expr)
    except ValueError:
        return None


class CUnit(Protocol):
    """What an emitter may add to the translation unit."""

    def helper(self, key: str, code: str) -> None:
        """Add a definition (a static function, a type) once, under `key`."""
        ...

    def const(self, hint: str, value: np.ndarray) -> str:
        """A `static const` array holding `value` (in flash, 64-byte aligned);
        returns its C name. Equal arrays are stored once."""
        ...

    def fresh(self, hint: str) -> str:
        """A new C identifier starting with `hint`."""
        ...

    def scratch(self, nbytes: int) -> None:
        """Declare that a kernel keeps `nbytes` of scratch on the stack (outside
        the arenas); the unit publishes the largest as a bound."""
        ...


Emitter = Callable[[nn.NNOp, Sequence[CTensor], Sequence[CTensor], CUnit], str]

_REGISTRY: dict[tuple[Kind, type[nn.NNOp]], Emitter] = {}


def register(kind: Kind, *ops: type[nn.NNOp]) -> Callable[[Emitter], Emitter]:
    """Register an emitter for band ops of `kind` whose body is one of `ops`
    (subclasses included, the nearest registration wins)."""

    def deco(fn: Emitter) -> Emitter:
        for cls in ops:
            _REGISTRY[(kind, cls)] = fn
        return fn

    return deco


def _load() -> None:
    # the emitter modules register themselves on import
    from tigris_ir.backend.c import conv, ops  # noqa: F401  # pyright: ignore[reportUnusedImport]


def emitter(kind: Kind, op: nn.NNOp) -> Emitter:
    """The emitter for a band op of `kind` over `op`, or CLoweringError."""
    _load()
    for cls in type(op).__mro__:
        fn = _REGISTRY.get((kind, cls))  # type: ignore[arg-type]
        if fn is not None:
            return fn
    what = {"band": "loop.band", "accumulate": "loop.accumulate", "finish": "loop.finish"}[kind]
    raise CLoweringError(f"{op.name}: no C lowering for {what} of this op")


def emit(
    kind: Kind, op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """C statements computing the band op."""
    return emitter(kind, op)(op, ins, outs, unit)


def supported(kind: Kind, op: nn.NNOp) -> bool:
    try:
        emitter(kind, op)
    except CLoweringError:
        return False
    return True


C_TYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int8): "int8_t",
    np.dtype(np.uint8): "uint8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
    np.dtype(np.int64): "int64_t",
    np.dtype(np.bool_): "_Bool",
}


def c_type(dtype: np.dtype) -> str:
    """The C element type of a numpy dtype the loop level uses."""
    try:
        return C_TYPES[np.dtype(dtype)]
    except KeyError:
        raise CLoweringError(f"no C element type for {dtype}") from None


PRELUDE = r"""#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#ifdef TIGRIS_BOUNDS_CHECK
void tigris_bound_fail(const char *what, int line);
#define TIGRIS_BOUND(cond) \
  do { if (!(cond)) tigris_bound_fail(#cond, __LINE__); } while (0)
#else
#define TIGRIS_BOUND(cond) ((void)0)
#endif

#if !defined(TIGRIS_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#define TIGRIS_VECTOR 1
#endif

/* GCC vectorises loops 256 bits wide on AVX-512 hosts unless told otherwise:
   the elementwise, requantization and gather loops take the full width. */
#if !defined(TIGRIS_PORTABLE) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=512")
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TIGRIS_UNUSED __attribute__((unused))
#else
#define TIGRIS_UNUSED
#endif
#ifndef TIGRIS_BAND /* a band's kernel function (a network unit keeps it apart) */
#define TIGRIS_BAND
#endif

/* The one rounding rule of int8 plans: saturate(rint(float(acc) * m) + zp),
   the product in float32, ties to even (the default rounding mode). */
static inline TIGRIS_UNUSED int32_t
tigris_requant(int32_t acc, float m, int32_t zp, int32_t lo, int32_t hi) {
  float v = nearbyintf((float)acc * m) + (float)zp;
  if (v < (float)lo) return lo;
  if (v > (float)hi) return hi;
  return (int32_t)v;
}

/* QuantizeLinear: saturate(rint(x / scale) + zp), the division in float32. */
static inline TIGRIS_UNUSED int32_t
tigris_quant(float x, float scale, int32_t zp, int32_t lo, int32_t hi) {
  float v = nearbyintf(x / scale);
  if (!(v == v)) return 0; /* as numpy's cast of NaN on the hosts we test */
  v += (float)zp;
  if (v < (float)lo) return lo;
  if (v > (float)hi) return hi;
  return (int32_t)v;
}
"""
"""Included once at the top of every translation unit of band kernels.

`tigris_requant` adds the zero point in float32: exact, since |rint(..)| below
2**24 makes every value an integer float32 holds, and anything larger
saturates either way."""


# ---------------------------------------------------------------------------
# fixed-point requantization (`nn.requant = "fixed"`)

FIXED_SHIFT_BITS = 6
"""A packed multiplier is M * 2^6 + (e + 32): M the Q31 mantissa, e the
exponent of `kernels.quantize_multiplier` (-32 <= e < 32)."""

FIXED_HELPERS = r"""/* Integer-only requantization (kernels.multiply_fixed): x * M * 2^(e - 31)
   with the multiplier packed as p = M * 64 + (e + 32); a saturated left
   shift by max(e, 0), the rounding doubling high multiply (ties toward
   +infinity), then a rounding right shift by max(-e, 0) (ties away from
   zero). */
static inline TIGRIS_UNUSED int32_t tigris_mul_fx(int32_t x, int64_t p) {
  const int64_t m = p >> 6;
  const int e = (int)(p & 63) - 32;
  int64_t v = x;
  if (e > 0) {
    v *= (int64_t)1 << e;
    v = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v;
  }
  int64_t ab = v * m;
  ab += ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  int32_t h = (int32_t)(ab >= 0 ? ab >> 31 : -((-ab) >> 31));
  if (e < 0) {
    const int k = -e;
    const int32_t mask = (int32_t)(((int64_t)1 << k) - 1);
    const int32_t rem = h & mask;
    const int32_t thr = (mask >> 1) + (h < 0 ? 1 : 0);
    h = (h >> k) + (rem > thr ? 1 : 0);
  }
  return h;
}

/* requantize_fixed: saturate(tigris_mul_fx(acc, p) + zp) to [lo, hi]. */
static inline TIGRIS_UNUSED int32_t
tigris_requant_fx(int32_t acc, int64_t p, int32_t zp, int32_t lo, int32_t hi) {
  const int64_t v = (int64_t)tigris_mul_fx(acc, p) + zp;
  return (int32_t)(v < lo ? lo : v > hi ? hi : v);
}"""
"""Added to a unit by `fixed_helpers` when an op requantizes in fixed point."""

SHORT_HELPER = r"""/* The short form of tigris_mul_fx + zp (`band.short_form` proved it exact
   for the values it gets: e < 0, M != 0, |acc| < 2^30, no overflow):
   ((2 acc M + c 2^32 + 2^31) >> 32, + (acc >> 31)) >> k, c = 2^(k-1) + zp 2^k.
   One SMMLAR with the DSP extension. */
static inline TIGRIS_UNUSED int32_t tigris_rq_short(int32_t acc, int32_t m, int32_t c, int k) {
  const int32_t a2 = (int32_t)((uint32_t)acc << 1);
#if defined(TIGRIS_VECTOR) && defined(__ARM_FEATURE_DSP)
  int32_t h;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(h) : "r"(a2), "r"(m), "r"(c));
#else
  const int32_t h = (int32_t)(((int64_t)a2 * m + (int64_t)c * 4294967296LL + 2147483648LL) >> 32);
#endif
  return (h + (acc >> 31)) >> k;
}"""


def fixed_helpers(unit: CUnit) -> None:
    """Define `tigris_mul_fx`, `tigris_requant_fx` and `tigris_rq_short` in the unit (once)."""
    unit.helper("c.requant_fx", FIXED_HELPERS + "\n\n" + SHORT_HELPER)


def short_form(packed: np.ndarray, acc_bound: np.ndarray, zp: int) -> bool:
    """Whether `tigris_rq_short` computes tigris_mul_fx(acc, p) + zp exactly
    for every |acc| <= acc_bound (per column) and packed multiplier p.

    The rule rounds twice: h = SRDHM(acc, M) = floor((acc M + 2^30) / 2^31),
    then h / 2^k rounded half away from zero. Where no column shifts left
    (e < 0, so k = -e >= 1), M != 0 and |acc| < 2^30, h is the high word of
    2 acc M + 2^31 exactly, and the rounding divide is (h + 2^(k-1) - [acc <
    0]) >> k (for k >= 1 the sign of acc may stand for the sign of h: they
    differ only where h = 0, whose result is 0 either way); the zero point
    joins the rounding constant, c = 2^(k-1) + zp 2^k, where |h| + |c| + 1 <
    2^31 (no int32 overflow)."""
    p = np.asarray(packed, np.int64).reshape(-1)
    bound = np.broadcast_to(np.asarray(acc_bound, np.int64).reshape(-1), p.shape)
    m, e = p >> FIXED_SHIFT_BITS, (p & 63) - 32
    if p.size == 0 or np.any(m == 0) or np.any(e >= 0) or np.any(bound >= 2**30):
        return False
    h = (bound * m >> 31) + 1
    c = (np.int64(1) << -e) // 2 * (2 * abs(zp) + 1)
    return bool(np.all(h + c + 1 < 2**31))


def short_params(packed: np.ndarray, zp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`tigris_rq_short`'s (M, c, k) per packed multiplier (a zero, the
    padding, gives k = 1)."""
    p = np.asarray(packed, np.int64).reshape(-1)
    m = (p >> FIXED_SHIFT_BITS).astype(np.int32)
    k = np.where(p == 0, 1, 32 - (p & 63))
    c = ((np.int64(1) << (k - 1)) * (2 * zp + 1)).astype(np.int32)
    return m, c, k.astype(np.int32)


def pack_fixed(real: np.ndarray | float) -> np.ndarray:
    """Real multipliers as the packed int64 values `tigris_mul_fx` reads."""
    from tigris_ir.reference import kernels as K

    m, e = K.quantize_multiplier(real)
    if np.any(e < -32) or np.any(e >= 32):
        raise CLoweringError(f"a fixed-point exponent outside [-32, 32): {e}")
    return np.asarray(m * (1 << FIXED_SHIFT_BITS) + (e + 32), dtype=np.int64)


def fixed_literal(real: float) -> str:
    """One packed multiplier as a C int64 literal."""
    return f"INT64_C({int(pack_fixed(real).reshape(-1)[0])})"
