"""C emitters for every band op but convolutions and matrix products (see `c_band`).

Each emitter prints one `static void` helper per specialisation (element
types, quantization, static extents and strides, window geometry, tables)
and returns a call to it; what is dynamic (band origins and extents) becomes
its `int` parameters. Operands are addressed in global coordinates: element
j of the output band along an axis is global index origin + j, read from an
operand at that index minus the operand's own origin. So every cut a plan
may choose (rows, 2D tiles, channel groups, other independent axes) runs
through the same code, and in the common dense case the loops collapse into
one flat loop the compiler vectorises.

Numerics are those of `band_exec`, bit for bit wherever the reference can be
matched exactly:

* int8 unary ops on dequantized values: a 256-entry table computed here by
  the op's own reference;
* int8 binary ops, BatchNorm, Quantize and Dequantize: the same float32
  operations, in the same order, as numpy;
* sums of dequantized int8 values (AveragePool, GlobalAveragePool,
  ReduceMean/ReduceSum, linear Resize) in double, which is exact in any order
  below 2**21 terms, then the reference's one division and roundings;
* moves and selections (Concat, Split, Transpose, Pad, Reshape, nearest
  Resize, MaxPool, ReduceMax, Max/Min) on the stored integers, through a
  requantization table when the scales differ.

Float transcendental ops run in double and round once, like the reference
(so they may differ from it by an ulp). int8 Softmax and LogSoftmax run the
integer definition of `kernels.softmax_quantized` with its tables. Where an
int8 result would depend on a float transcendental operation (a
transcendental op or a softmax from float to int8) the emitter raises
`CLoweringError` instead of approximating.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute

from tigris_ir.backend.c import arm_m
from tigris_ir.backend.c.band import (
    FIXED_SHIFT_BITS,
    CLoweringError,
    CTensor,
    CUnit,
    c_type,
    fixed_helpers,
    fixed_literal,
    pack_fixed,
    register,
    short_form,
    short_params,
)
from tigris_ir.backend.c.conv import clamp_expr
from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import CLAMP, LANES, clamp_of
from tigris_ir.reference import kernels as K

# ---------------------------------------------------------------------------
# C expressions


def _int(expr: str) -> int | None:
    try:
        return int(expr)
    except ValueError:
        return None


def _par(expr: str) -> str:
    """`expr` safe to use as an operand."""
    if expr.isidentifier() or _int(expr) is not None or _wrapped(expr):
        return expr
    return f"({expr})"


def _wrapped(expr: str) -> bool:
    """Whether `expr` is one parenthesised whole."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(expr):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(expr) - 1
    return False


def _sub(a: str, b: str) -> str:
    ia, ib = _int(a), _int(b)
    if ia is not None and ib is not None:
        return str(ia - ib)
    if ib == 0:
        return a
    if a == b:
        return "0"
    return f"{_par(a)} - {_par(b)}"


def _mul(k: int, expr: str) -> str:
    v = _int(expr)
    if k == 0 or v == 0:
        return "0"
    if v is not None:
        return str(k * v)
    return expr if k == 1 else f"{k} * {_par(expr)}"


def _add(*terms: str) -> str:
    live = [t for t in terms if t != "0"]
    static = sum(_int(t) or 0 for t in live if _int(t) is not None)
    dyn = [_par(t) for t in live if _int(t) is None]
    if static:
        dyn.append(str(static))
    return " + ".join(dyn) if dyn else "0"


def _f32(v: float | np.floating) -> str:
    """An exact float32 literal."""
    f = np.float32(v)
    if np.isnan(f):
        return "NAN"
    if np.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    text = f"{float(f).hex()}f"
    return f"({text})" if text.startswith("-") else text


def _f64(v: float) -> str:
    """An exact double literal."""
    if math.isnan(v):
        return "((double)NAN)"
    if math.isinf(v):
        return "((double)INFINITY)" if v > 0 else "(-(double)INFINITY)"
    text = float(v).hex()
    return f"({text})" if text.startswith("-") else text


def _ptr(name: str, offset: str) -> str:
    return name if offset == "0" else f"{_par(name)} + {_par(offset)}"


# ---------------------------------------------------------------------------
# helpers in the unit, once per specialisation

_NAMES: weakref.WeakKeyDictionary[object, dict[str, str]] = weakref.WeakKeyDictionary()
_NAMES_BY_ID: dict[int, tuple[object, dict[str, str]]] = {}


def _names(unit: CUnit) -> dict[str, str]:
    """Helper names already printed into `unit`, by key."""
    try:
        got = _NAMES.get(unit)
        if got is None:
            got = _NAMES[unit] = {}
        return got
    except TypeError:  # a unit that takes no weak reference
        hit = _NAMES_BY_ID.get(id(unit))
        if hit is None or hit[0] is not unit:
            hit = _NAMES_BY_ID[id(unit)] = (unit, {})
        return hit[1]


class _Code:
    """Indented C lines."""

    def __init__(self, indent: int = 1) -> None:
        self.lines: list[str] = []
        self.indent = indent

    def __call__(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def open(self, head: str) -> None:
        self(head + " {")
        self.indent += 1

    def close(self, n: int = 1) -> None:
        for _ in range(n):
            self.indent -= 1
            self("}")


class _Fn:
    """A helper under construction: static facts are written into its text,
    dynamic values become its parameters, in order of first use."""

    def __init__(self, hint: str) -> None:
        self.hint = hint
        self.params: list[str] = []
        self.args: list[str] = []
        self.ints: dict[str, str] = {}
        self.checks: list[str] = []
        self.code = _Code()

    def ptr(self, ctype: str, expr: str, *, out: bool = False, restrict: bool = True) -> str:
        name = f"{'y' if out else 'x'}{len(self.params)}"
        qual = "" if out else "const "
        self.params.append(f"{qual}{ctype} *{' restrict' if restrict else ''} {name}")
        self.args.append(expr)
        return name

    def int_(self, expr: str) -> str:
        """`expr` as a literal when static, else as a parameter."""
        if _int(expr) is not None:
            return str(_int(expr))
        if expr not in self.ints:
            name = f"n{len(self.params)}"
            self.params.append(f"int {name}")
            self.args.append(expr)
            self.ints[expr] = name
        return self.ints[expr]

    def check(self, cond: str | None) -> None:
        """A bounds assertion at the call site."""
        if cond is not None and cond not in self.checks:
            self.checks.append(cond)

    def call(self, unit: CUnit) -> str:
        voids = [f"  (void){n};" for n in self.ints.values()]
        sig = ", ".join(self.params) or "void"
        head = f"static TIGRIS_BAND void @NAME@({sig}) {{"
        text = "\n".join([head, *voids, *self.code.lines, "}"])
        name = _define(unit, self.hint, text)
        lines = [f"TIGRIS_BOUND({c});" for c in self.checks]
        lines.append(f"{name}({', '.join(self.args)});")
        return "\n".join(lines)


def _define(unit: CUnit, hint: str, text: str) -> str:
    """Print a definition (its name written @NAME@) once per unit; its name."""
    key = "c_ops:" + hashlib.sha256(text.encode()).hexdigest()[:24]
    names = _names(unit)
    name = names.get(key)
    if name is None:
        name = names[key] = unit.fresh(hint)
        unit.helper(key, text.replace("@NAME@", name))
    return name


def _inside(lo: str, n: str, a: str, m: str, what: str) -> str | None:
    """The condition that [a, a + m) lies inside [lo, lo + n), or None when
    it holds statically (and CLoweringError when it fails statically)."""
    vals = [_int(v) for v in (lo, n, a, m)]
    if all(v is not None for v in vals):
        ilo, in_, ia, im = (v or 0 for v in vals)
        if ia < ilo or ia + im > ilo + in_:
            raise CLoweringError(f"{what}: reads [{ia}, {ia + im}) outside [{ilo}, {ilo + in_})")
        return None
    return f"{_par(lo)} <= {_par(a)} && {_add(a, m)} <= {_add(lo, n)}"


# ---------------------------------------------------------------------------
# element types and quantization


@dataclass(frozen=True)
class _Elem:
    """The element type of an operand: C type, numpy dtype, quantization."""

    ctype: str
    dtype: np.dtype
    quant: nn.QuantAttr | None

    def same(self, other: _Elem) -> bool:
        return self.dtype == other.dtype and self.quant == other.quant

    @property
    def lo(self) -> int:
        return int(np.iinfo(self.dtype).min)

    @property
    def hi(self) -> int:
        return int(np.iinfo(self.dtype).max)


_FLOAT = _Elem("float", np.dtype(np.float32), None)


def _elem(t: Attribute) -> _Elem:
    dt = nn.dtype_of(t)
    return _Elem(c_type(dt), dt, nn.quant_of(t))


def _path(op: nn.NNOp) -> str:
    """How `NNOp.reference` runs the op: "real", "integer", "exact", "fixed"
    (an integer-only definition under `nn.requant = "fixed"`), "dequantize"."""
    if not op.is_quantized():
        return "real"
    if op.quant_kind() is nn.QuantKind.INTEGER:
        return "integer"
    if op.quant_kind() is nn.QuantKind.EXACT and op._same_quantization():
        return "exact"
    if op.FIXED and nn.requant_fixed(op):
        return "fixed"
    return "dequantize"


def _zp(e: _Elem) -> int:
    assert e.quant is not None
    return int(e.quant.zp_value)


def _scale(e: _Elem) -> float:
    assert e.quant is not None
    return float(e.quant.scale_value)


Lanes = Callable[[list[str], str, str], list[str]]
"""Vector steps ahead of an elementwise loop (`_elementwise`'s `lanes`)."""


def _fixed_binary(
    unit: CUnit, op: nn.NNOp, ea: _Elem, eb: _Elem, ey: _Elem
) -> tuple[Body, Lanes | None]:
    """The integer-only Add, Sub (`kernels.add_fixed`) or Mul
    (`kernels.mul_fixed`) of stored int8 elements; with the Add or Sub of a
    Cortex-M target, the lanes of its `rtile.lanes` (`arm_m.mve_add_lanes`,
    `arm_m.dsp_add_lanes`)."""
    fixed_helpers(unit)
    za, zb, zy = _zp(ea), _zp(eb), _zp(ey)
    sa, sb, sy = _scale(ea), _scale(eb), _scale(ey)
    tail = f"{zy}, {ey.lo}, {ey.hi}"
    if isinstance(op, nn.MulOp):
        pm = fixed_literal(K.mul_fixed_real(sa, sb, sy))

        def mul(a: list[str]) -> tuple[list[str], list[str]]:
            acc = f"((int32_t){_par(a[0])} - {za}) * ((int32_t){_par(a[1])} - {zb})"
            return [], [f"({ey.ctype})tigris_requant_fx({acc}, {pm}, {tail})"]

        return mul, None
    if not isinstance(op, nn.AddOp | nn.SubOp):
        raise CLoweringError(f"{op.name}: no integer-only C lowering")
    r = K.add_fixed_params(sa, sb, sy)
    sign = "+" if isinstance(op, nn.AddOp) else "-"
    # each operand's rescaled value is a function of its stored byte: one
    # 256-entry int32 table per operand (multiply_fixed of (q - zp) << shift)
    ta, tb = (
        K.multiply_fixed(
            (_byte_values(e).astype(np.int64) - z) << K.FIXED_ADD_SHIFT,
            *K.quantize_multiplier(r[key]),
        ).astype(np.int32)
        for e, z, key in ((ea, za, "a"), (eb, zb, "b"))
    )
    py = pack_fixed(r["y"])
    bound = int(np.abs(ta.astype(np.int64)).max() + np.abs(tb.astype(np.int64)).max())
    lo, hi = ey.lo, ey.hi
    if short_form(py, np.array([bound]), zy):
        m, c, k = (int(v[0]) for v in short_params(py, zy))
        last = [f"const int32_t R_ = tigris_rq_short(A_ {sign} B_, {m}, {c}, {k});"]
        res = f"({ey.ctype})(R_ < {lo} ? {lo} : R_ > {hi} ? {hi} : R_)"
        rule = ("short", (m, c, k))
    else:
        last = []
        res = f"({ey.ctype})tigris_requant_fx(A_ {sign} B_, {fixed_literal(r['y'])}, {tail})"
        p = int(py.reshape(-1)[0])
        e = (p & 63) - 32
        rule = ("fixed", (p >> FIXED_SHIFT_BITS, max(e, 0), max(-e, 0)))
    lanes = None
    unit_ = _lanes(op)
    if unit_ == "mve":
        tables = (unit.const("addfx", ta), unit.const("addfx", tb))
        lanes = arm_m.mve_add_lanes(unit, tables, sign, rule, zy, lo, hi)
    elif unit_ == "dsp":  # the short form's tables hold the values doubled
        two = 2 if rule[0] == "short" else 1
        tables = (unit.const("addfx", ta * two), unit.const("addfx", tb * two))
        lanes = arm_m.dsp_add_lanes(unit, tables, sign, rule, zy, ey.ctype)

    def add(a: list[str]) -> tuple[list[str], list[str]]:
        stmts = [
            f"const int32_t A_ = {_table(unit, 'addfx', ta, a[0])};",
            f"const int32_t B_ = {_table(unit, 'addfx', tb, a[1])};",
            *last,
        ]
        return stmts, [res]

    return add, lanes


def _deq(e: _Elem, x: str) -> str:
    """The float32 value of a stored element (DequantizeLinear)."""
    if e.quant is None:
        return x if e.ctype == "float" else f"(float){_par(x)}"
    return f"((float)((int32_t){_par(x)} - {e.quant.zp_value}) * {_f32(e.quant.scale_value)})"


def _quant(unit: CUnit, e: _Elem, v: str) -> str:
    """A float32 value stored as `e`: QuantizeLinear as `tigris_quant`
    computes it (rint of the float32 quotient, plus the zero point in
    float32, saturated), written without branches so that loops vectorise;
    a NaN becomes what the reference's cast makes of it."""
    if e.quant is None:
        return v
    q = e.quant
    with np.errstate(invalid="ignore"):
        nan = nn.quantize_array(np.array([np.nan], np.float32), nn.tensor_type((1,), e.dtype, q))
    lo, hi = _f32(e.lo), _f32(e.hi)
    text = "\n".join(
        [
            f"static inline {e.ctype} @NAME@(float v) {{",
            f"  float r = nearbyintf(v / {_f32(q.scale_value)}) + {_f32(q.zp_value)};",
            f"  r = r < {lo} ? {lo} : r;",
            f"  r = r > {hi} ? {hi} : r;",
            f"  return ({e.ctype})(r == r ? r : {_f32(int(nan[0]))});",
            "}",
        ]
    )
    return f"{_define(unit, 'tigris_q', text)}({v})"


def _byte_values(e: _Elem) -> np.ndarray:
    """Every value of an 8-bit type, indexed by its byte."""
    if e.dtype.itemsize != 1:
        raise CLoweringError(f"no table for {e.dtype} values")
    return np.arange(256, dtype=np.uint8).view(e.dtype)


def _table(unit: CUnit, hint: str, values: np.ndarray, x: str) -> str:
    """A lookup of `x` (an 8-bit element) in a 256-entry constant table."""
    name = unit.const(hint, np.ascontiguousarray(values))
    return f"{name}[(uint8_t){_par(x)}]"


def _requant_table(src: _Elem, dst: _Elem) -> np.ndarray:
    vals = nn.dequantize_array(_byte_values(src), src.quant)
    return nn.quantize_array(vals, nn.tensor_type((256,), dst.dtype, dst.quant))


def _move(unit: CUnit, src: _Elem, dst: _Elem, x: str) -> str:
    """A value moved from `src` to `dst`: quantize(dequantize(x)) as the
    reference's dequantize path computes it (a copy when the types agree)."""
    if src.same(dst):
        return x
    if src.quant is not None and dst.quant is not None:
        return _table(unit, "requant", _requant_table(src, dst), x)
    if src.quant is not None:
        return _deq(src, x) if dst.ctype == "float" else f"({dst.ctype}){_deq(src, x)}"
    return _quant(unit, dst, _deq(src, x))


def _low(ctype: str) -> str:
    """The padding of a max pool: the lowest value of the type."""
    return {"float": "(-INFINITY)", "int8_t": "(-128)", "uint8_t": "0", "int32_t": "INT32_MIN"}[
        ctype
    ]


def _high(ctype: str) -> str:
    """The start of a min reduction: the highest value of the type."""
    return {"float": "INFINITY", "int8_t": "127", "uint8_t": "255", "int32_t": "INT32_MAX"}[ctype]


def _min_expr(ctype: str, a: str, b: str) -> str:
    """numpy's minimum(a, b): a NaN in either wins."""
    if ctype == "float":
        return f"(({a} <= {b} || {a} != {a}) ? {a} : {b})"
    return f"({b} < {a} ? {b} : {a})"


def _max_expr(ctype: str, a: str, b: str) -> str:
    """numpy's maximum(a, b): a NaN in either wins."""
    if ctype == "float":
        return f"(({a} >= {b} || {a} != {a}) ? {a} : {b})"
    return f"({b} > {a} ? {b} : {a})"


# ---------------------------------------------------------------------------
# the elementwise engine


@dataclass(frozen=True)
class _Read:
    """An input of an elementwise loop: which of its axes each output axis
    reads (None: broadcast)."""

    t: CTensor
    axes: tuple[int | None, ...]


def _aligned(t: CTensor, rank: int) -> _Read:
    """numpy broadcasting: axes aligned on the right."""
    lead = rank - t.rank
    return _Read(t, tuple(None if a < lead else a - lead for a in range(rank)))


def _map(r: _Read, out: CTensor, fn: _Fn, what: str) -> tuple[list[int], str]:
    """Per output axis the element stride of `r` (0 where it broadcasts), and
    the offset of the element under the output band's first one."""
    strides: list[int] = []
    terms: list[str] = []
    for a, ia in enumerate(r.axes):
        if ia is None or (r.t.shape[ia] == 1 and out.shape[a] != 1):
            strides.append(0)
            continue
        s = r.t.strides[ia]
        strides.append(s)
        terms.append(_mul(s, _sub(out.origin[a], r.t.origin[ia])))
        fn.check(_inside(r.t.origin[ia], r.t.extent[ia], out.origin[a], out.extent[a], what))
    return strides, _add(*terms)


Body = Callable[[list[str]], tuple[list[str], list[str]]]
"""Element names of the inputs -> (statements, one expression per output)."""


def _elementwise(
    unit: CUnit,
    hint: str,
    what: str,
    outs: Sequence[CTensor],
    reads: Sequence[_Read],
    body: Body,
    lanes: Callable[[list[str], str, str], list[str]] | None = None,
) -> str:
    """A loop nest over the output band computing `body` per element;
    adjacent axes that are dense in every operand merge into one loop.
    `lanes` (the reads' and the output's pointers, the count) gives the
    vector steps that run ahead of the innermost loop where it is dense in
    every operand; that loop finishes the elements they leave."""
    out0 = outs[0]
    rank = out0.rank
    fn = _Fn(hint)
    all_strides: list[list[int]] = [list(o.strides) for o in outs]
    ptrs: list[tuple[str, str, bool]] = [(o.ctype, o.name, True) for o in outs]
    for r in reads:
        st, off = _map(r, out0, fn, what)
        all_strides.append(st)
        ptrs.append((r.t.ctype, _ptr(r.t.name, off), False))
    groups: list[tuple[str, list[int]]] = []
    for a in reversed(range(rank)):
        ext = out0.extent[a]
        if _int(ext) == 1:
            continue
        st = [s[a] for s in all_strides]
        if groups:
            inner_e = _int(groups[-1][0])
            inner_s = groups[-1][1]
            if inner_e is not None and all(x == y * inner_e for x, y in zip(st, inner_s)):
                merged = str(int(ext) * inner_e) if _int(ext) is not None else _mul(inner_e, ext)
                groups[-1] = (merged, inner_s)
                continue
        groups.append((ext, st))
    groups.reverse()
    names = [fn.ptr(ct, expr, out=o, restrict=False) for ct, expr, o in ptrs]
    w = fn.code
    cur = list(names)
    for lvl, (ext, st) in enumerate(groups[:-1]):
        w.open(f"for (int k{lvl} = 0; k{lvl} < {fn.int_(ext)}; k{lvl}++)")
        nxt: list[str] = []
        for i, (p, s) in enumerate(zip(cur, st)):
            if s == 0:
                nxt.append(p)
                continue
            ct, _, o = ptrs[i]
            nm = f"{names[i]}_{lvl}"
            w(f"{'' if o else 'const '}{ct} *{nm} = {p} + k{lvl} * {s};")
            nxt.append(nm)
        cur = nxt
    inner_st = groups[-1][1] if groups else [0] * len(names)
    if groups and lanes is not None and all(s == 1 for s in inner_st):
        n = fn.int_(groups[-1][0])
        w("int k = 0;")
        for line in lanes(cur[len(outs):], cur[0], n):
            w(line)
        w.open(f"for (; k < {n}; k++)")
    elif groups:
        w.open(f"for (int k = 0; k < {fn.int_(groups[-1][0])}; k++)")

    def at(p: str, s: int) -> str:
        if not groups or s == 0:
            return f"{p}[0]"
        return f"{p}[k]" if s == 1 else f"{p}[k * {s}]"

    els: list[str] = []
    for i in range(len(outs), len(names)):
        w(f"const {ptrs[i][0]} a{i - len(outs)} = {at(cur[i], inner_st[i])};")
        els.append(f"a{i - len(outs)}")
    stmts, exprs = body(els)
    for s in stmts:
        w(s)
    for j, e in enumerate(exprs):
        w(f"{at(cur[j], inner_st[j])} = {e};")
    if groups:
        w.close(len(groups))
    return fn.call(unit)


# ---------------------------------------------------------------------------
# unary ops

UnaryC = Callable[[nn.NNOp, str], tuple[list[str], str, bool]]
"""(op, float element) -> (statements, float32 expression, bit-identical to
the reference)."""


def _via_double(fn: str) -> UnaryC:
    return lambda op, x: ([], f"(float){fn}((double){x})", False)


def _clip(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    lo, hi = _f32(op.float_("min")), _f32(op.float_("max"))
    return [f"float t_ = {x} < {lo} ? {lo} : {x};", f"t_ = t_ > {hi} ? {hi} : t_;"], "t_", True


def _sigmoid(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    stmts = [f"const double d_ = (double){x};", "const double e_ = exp(-fabs(d_));"]
    return stmts, "(float)(d_ >= 0.0 ? 1.0 / (1.0 + e_) : e_ / (1.0 + e_))", False


def _hard_sigmoid(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    a, b = _f64(op.float_("alpha")), _f64(op.float_("beta"))
    stmts = [
        f"double t_ = {a} * (double){x} + {b};",
        "t_ = t_ < 0.0 ? 0.0 : t_;",
        "t_ = t_ > 1.0 ? 1.0 : t_;",
    ]
    return stmts, "(float)t_", True


def _hard_swish(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    stmts = [
        f"const double d_ = (double){x};",
        "double t_ = d_ / 6.0 + 0.5;",
        "t_ = t_ < 0.0 ? 0.0 : t_;",
        "t_ = t_ > 1.0 ? 1.0 : t_;",
    ]
    return stmts, "(float)(d_ * t_)", True


def _leaky_relu(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    a = _f64(op.float_("alpha"))
    return [], f"({x} >= 0.0f ? {x} : (float)({a} * (double){x}))", True


def _elu(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    a = _f64(op.float_("alpha"))
    return [], f"({x} > 0.0f ? {x} : (float)({a} * expm1((double){x})))", False


def _gelu(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    d = [f"const double d_ = (double){x};"]
    if op.str_("approximate", "none") == "tanh":
        c = _f64(math.sqrt(2.0 / math.pi))
        inner = f"{c} * (d_ + 0.044715 * (d_ * d_ * d_))"
        return d, f"(float)(0.5 * d_ * (1.0 + tanh({inner})))", False
    return d, f"(float)(0.5 * d_ * (1.0 + erf(d_ / {_f64(math.sqrt(2.0))})))", False


def _softplus_d(d: str) -> str:
    """log(1 + exp(d)) of a double, as `kernels.softplus` writes it."""
    return f"(({d} > 0.0 ? {d} : 0.0) + log1p(exp(-fabs({d}))))"


def _softplus(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    return [f"const double d_ = (double){x};"], f"(float){_softplus_d('d_')}", False


def _mish(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    stmts = [f"const double d_ = (double){x};", f"const double s_ = {_softplus_d('d_')};"]
    return stmts, "(float)(d_ * tanh(s_))", False


def _selu(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    a, g = _f64(op.float_("alpha")), _f64(op.float_("gamma"))
    stmts = [f"const double d_ = (double){x};"]
    return stmts, f"(float)(d_ > 0.0 ? {g} * d_ : {g} * ({a} * expm1(d_)))", False


def _sign(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    return [], f"({x} > 0.0f ? 1.0f : ({x} < 0.0f ? -1.0f : {x}))", True


def _shrink(op: nn.NNOp, x: str) -> tuple[list[str], str, bool]:
    b, lam = _f32(op.float_("bias")), _f32(op.float_("lambd"))
    stmt = f"const float t_ = {x} < -{lam} ? {x} + {b} : ({x} > {lam} ? {x} - {b} : 0.0f);"
    return [stmt], "t_", True


_UNARY: dict[type[nn.NNOp], UnaryC] = {
    nn.NegOp: lambda op, x: ([], f"(-{_par(x)})", True),
    nn.ReciprocalOp: lambda op, x: ([], f"(1.0f / {_par(x)})", True),
    nn.SoftsignOp: lambda op, x: ([], f"({_par(x)} / (1.0f + fabsf({x})))", True),
    nn.SoftplusOp: _softplus,
    nn.MishOp: _mish,
    nn.SeluOp: _selu,
    nn.SignOp: _sign,
    nn.ShrinkOp: _shrink,
    nn.ErfOp: _via_double("erf"),
    nn.ReluOp: lambda op, x: ([], f"({x} < 0.0f ? 0.0f : {x})", True),
    nn.IdentityOp: lambda op, x: ([], x, True),
    nn.AbsOp: lambda op, x: ([], f"fabsf({x})", True),
    nn.FloorOp: lambda op, x: ([], f"floorf({x})", True),
    nn.SqrtOp: lambda op, x: ([], f"sqrtf({x})", True),
    nn.ClipOp: _clip,
    nn.LeakyReluOp: _leaky_relu,
    nn.HardSigmoidOp: _hard_sigmoid,
    nn.HardSwishOp: _hard_swish,
    nn.SigmoidOp: _sigmoid,
    nn.TanhOp: _via_double("tanh"),
    nn.ExpOp: _via_double("exp"),
    nn.LogOp: _via_double("log"),
    nn.EluOp: _elu,
    nn.GeluOp: _gelu,
}


def _short(op: nn.NNOp) -> str:
    return "tigris_" + op.name.split(".")[-1]


@register("band", nn.UnaryOp)
def emit_unary(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """A unary op: its float expression, a copy on one int8 scale, or a table
    of its reference on every int8 value."""
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    make = _UNARY.get(type(op))
    if make is None:
        raise CLoweringError(f"{op.name}: no C lowering for this unary op")
    table: np.ndarray | None = None
    if _path(op) == "exact":
        make = _UNARY[nn.IdentityOp]
    elif ex.quant is not None:
        table = op.reference([_byte_values(ex)])[0]
    elif ey.quant is not None and not make(op, "x")[2]:
        raise CLoweringError(
            f"{op.name}: a float32 input with an int8 result would need the reference's "
            "float64 transcendental bit for bit; not lowered"
        )

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        if table is not None:
            return [], [_table(unit, op.name.split(".")[-1], table, a[0])]
        stmts, expr, _ = make(op, _deq(ex, a[0]))
        return stmts, [_quant(unit, ey, expr)]

    reads = [_Read(ins[0], tuple(range(ins[0].rank)))]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


# ---------------------------------------------------------------------------
# binary ops

_BINARY: dict[type[nn.NNOp], str] = {
    nn.AddOp: "{a} + {b}",
    nn.SubOp: "{a} - {b}",
    nn.MulOp: "{a} * {b}",
    nn.DivOp: "{a} / {b}",
    nn.MaxOp: "(({a} >= {b} || {a} != {a}) ? {a} : {b})",
    nn.MinOp: "(({a} <= {b} || {a} != {a}) ? {a} : {b})",
    nn.PReluOp: "({a} >= 0.0f ? {a} : {b} * {a})",
    nn.PowOp: "(float)pow((double){a}, (double){b})",
}
"""float32 expressions: numpy's float32 operations (PRelu's float64 product of
two float32 values is exact, so its one rounding is the float32 product)."""


def _int_binary(unit: CUnit, op: nn.NNOp, ct: str, a: str, b: str) -> str:
    """Add, Sub, Mul, Max, Min of integer data with numpy's results: sums and
    products modulo 2^n (computed unsigned, so never undefined in C); Div and
    Pow as `kernels.divide_integers` and `kernels.power` define them."""
    if isinstance(op, nn.MaxOp):
        return f"({b} > {a} ? {b} : {a})"
    if isinstance(op, nn.MinOp):
        return f"({b} < {a} ? {b} : {a})"
    u = {"int32_t": "uint32_t", "int64_t": "uint64_t"}.get(ct, "uint32_t")
    if isinstance(op, nn.DivOp):
        return f"{_int_divide(unit, ct, u)}({a}, {b})"
    if isinstance(op, nn.PowOp):
        return _int_power(unit, op, ct, u, a, b)
    sym = {nn.AddOp: "+", nn.SubOp: "-", nn.MulOp: "*"}[type(op)]
    return f"({ct})(({u}){a} {sym} ({u}){b})"


def _int_divide(unit: CUnit, ct: str, u: str) -> str:
    """The truncated quotient, 0 for a zero divisor, the minimum over -1
    wrapping (negated unsigned): no division C leaves undefined."""
    signed = not ct.startswith("u")
    text = "\n".join(
        [
            f"static inline {ct} @NAME@({ct} a, {ct} b) {{",
            "  if (b == 0) return 0;",
            *([f"  if (b == -1) return ({ct})(0u - ({u})a);"] if signed else []),
            f"  return ({ct})(a / b);",
            "}",
        ]
    )
    return _define(unit, "tigris_idiv", text)


def _int_power(unit: CUnit, op: nn.NNOp, ct: str, u: str, a: str, b: str) -> str:
    """pow in double truncated to the base's type, its minimum for NaN and
    values outside the type (as x86 converts); with `multiply`, exponents 2
    and 3 as unsigned (wrapping) products."""
    bits = 64 if ct == "int64_t" else 32
    half = repr(2.0 ** (bits - 1))  # the bounds are exact doubles
    text = "\n".join(
        [
            f"static inline {ct} @NAME@({ct} a, double e) {{",
            "  const double d = pow((double)a, e);",
            f"  return (d >= -{half} && d < {half}) ? ({ct})d : INT{bits}_MIN;",
            "}",
        ]
    )
    name = _define(unit, f"tigris_ipow{bits}", text)
    a, b = _par(a), _par(b)
    expr = f"{name}({a}, (double){b})"
    if not op.int_("multiply"):
        return expr
    sq = f"(({u}){a} * ({u}){a})"
    return f"({b} == 2 ? ({ct}){sq} : {b} == 3 ? ({ct})({sq} * ({u}){a}) : {expr})"


@register("band", nn.BinaryOp)
def emit_binary(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """An elementwise binary op with numpy broadcasting."""
    tmpl = _BINARY.get(type(op))
    if tmpl is None:
        raise CLoweringError(f"{op.name}: no C lowering for this binary op")
    ea, eb = (_elem(v.type) for v in op.operands)
    ey = _elem(op.results[0].type)
    path = _path(op)
    raw = isinstance(op, nn.BinaryOp) and op.integer_data()
    fixed, lanes = _fixed_binary(unit, op, ea, eb, ey) if path == "fixed" else (None, None)
    clamp = clamp_of(op)  # the activation lower-gebp fused into a float32 Add (rtile.clamp)
    if clamp is not None and (path != "real" or raw or not isinstance(op, nn.AddOp)):
        raise CLoweringError(f"{op.name}: only a float32 Add takes a fused activation ({CLAMP})")

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        if raw:  # integer data: numpy's wrap-around, through unsigned arithmetic
            return [], [_int_binary(unit, op, ey.ctype, a[0], a[1])]
        if isinstance(op, nn.PowOp):  # the exponent in double: it may be an integer
            return [
                f"const float A_ = {_deq(ea, a[0])};",
                f"const double B_ = {_deq_f64(eb, a[1])};",
            ], [_quant(unit, ey, _float_power(op))]
        if fixed is not None:
            return fixed(a)
        if path == "exact":  # Max / Min on the stored integers
            return [], [
                _max_expr(ey.ctype, a[0], a[1])
                if isinstance(op, nn.MaxOp)
                else f"({a[1]} < {a[0]} ? {a[1]} : {a[0]})"
            ]
        stmts = [f"const float A_ = {_deq(ea, a[0])};", f"const float B_ = {_deq(eb, a[1])};"]
        res = "(" + tmpl.format(a="A_", b="B_") + ")"
        return stmts, [_quant(unit, ey, clamp_expr(clamp, res) if clamp else res)]

    rank = outs[0].rank
    reads = [_aligned(ins[0], rank), _aligned(ins[1], rank)]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body, lanes)


def _deq_f64(e: _Elem, x: str) -> str:
    """A stored element as a double: integers exactly, floats widened."""
    if e.quant is None:
        return f"(double){_par(x)}"
    return f"(double){_deq(e, x)}"


def _float_power(op: nn.NNOp) -> str:
    """`kernels.power` of the float32 A_ and the double B_."""
    expr = "(float)pow((double)A_, B_)"
    if not op.int_("multiply"):
        return expr
    return f"(B_ == 2.0 ? A_ * A_ : B_ == 3.0 ? A_ * A_ * A_ : {expr})"


# ---------------------------------------------------------------------------
# quantization, batch norm


@register("band", nn.QuantizeOp, nn.DequantizeOp)
def emit_quantize(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """QuantizeLinear / DequantizeLinear, elementwise."""
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [_quant(unit, ey, _deq(ex, a[0]))]

    reads = [_Read(ins[0], tuple(range(ins[0].rank)))]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


def _const_tensor(unit: CUnit, hint: str, value: np.ndarray) -> CTensor:
    arr = np.ascontiguousarray(value)
    name = unit.const(hint, arr)
    strides = tuple(s // arr.itemsize for s in arr.strides)
    return CTensor(
        name=name,
        ctype=c_type(arr.dtype),
        shape=tuple(arr.shape),
        strides=strides,
        origin=("0",) * arr.ndim,
        extent=tuple(str(d) for d in arr.shape),
        cut=(),
        value=arr,
    )


@register("band", nn.BatchNormOp)
def emit_batch_norm(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """(x - mean) * (scale / sqrt(var + eps)) + bias in float32, as the
    reference; the per-channel factor is folded here when the parameters are
    constants."""
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    eps = np.float32(op.float_("epsilon"))
    rank = outs[0].rank
    g, b, m, v = ins[1:5]
    vals = [t.value for t in (g, b, m, v)]
    if all(x is not None for x in vals):
        gv, bv, mv, vv = (np.asarray(x, dtype=np.float32) for x in vals if x is not None)
        inv = (gv / np.sqrt(vv + eps)).astype(np.float32)
        params = [_const_tensor(unit, "bn_" + n, a) for n, a in (("mean", mv), ("inv", inv))]
        params.append(_const_tensor(unit, "bn_bias", bv))
        reads = [_aligned(ins[0], rank), *(_aligned(p, rank) for p in params)]

        def body(a: list[str]) -> tuple[list[str], list[str]]:
            x = _deq(ex, a[0])
            return [], [_quant(unit, ey, f"(({x} - {a[1]}) * {a[2]} + {a[3]})")]

    else:
        reads = [_aligned(t, rank) for t in (ins[0], m, g, v, b)]

        def body(a: list[str]) -> tuple[list[str], list[str]]:
            x = _deq(ex, a[0])
            stmts = [f"const float inv_ = {a[2]} / sqrtf({a[3]} + {_f32(eps)});"]
            return stmts, [_quant(unit, ey, f"(({x} - {a[1]}) * inv_ + {a[4]})")]

    return _elementwise(unit, "tigris_batch_norm", op.name, outs[:1], reads, body)


# ---------------------------------------------------------------------------
# moves: concat, split, transpose


def _view(t: CTensor, axis: int, offset: int, size: int) -> CTensor:
    """`t` restricted to [offset, offset + size) along an axis it holds whole."""
    if axis in t.cut:
        raise CLoweringError(f"a band along axis {axis}, which the op splits or joins")
    shape = list(t.shape)
    extent = list(t.extent)
    shape[axis] = size
    extent[axis] = str(size)
    return replace(
        t,
        name=_ptr(t.name, str(offset * t.strides[axis])),
        shape=tuple(shape),
        extent=tuple(extent),
    )


def _copy(
    unit: CUnit, op: nn.NNOp, out: CTensor, src: _Read, es: _Elem, ey: _Elem, hint: str
) -> str:
    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [_move(unit, es, ey, a[0])]

    return _elementwise(unit, hint, op.name, [out], [src], body)


@register("band", nn.ConcatOp)
def emit_concat(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """One copy per input into its slice of the output band."""
    out = outs[0]
    ax = op.int_("axis") % out.rank
    ey = _elem(op.results[0].type)
    calls: list[str] = []
    off = 0
    try:
        for t, v in zip(ins, op.operands):
            n = nn.shape_of(v)[ax]
            view = _view(out, ax, off, n)
            src = _Read(t, tuple(range(t.rank)))
            calls.append(_copy(unit, op, view, src, _elem(v.type), ey, "tigris_concat"))
            off += n
    except CLoweringError as e:
        raise CLoweringError(f"{op.name}: {e}") from None
    return "\n".join(calls)


@register("band", nn.SplitOp)
def emit_split(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """One copy per output from its slice of the input band."""
    x = ins[0]
    ax = op.int_("axis") % x.rank
    ex = _elem(op.operands[0].type)
    calls: list[str] = []
    off = 0
    try:
        for t, r in zip(outs, op.results):
            n = nn.shape_of(r)[ax]
            src = _Read(_view(x, ax, off, n), tuple(range(x.rank)))
            if n:
                calls.append(_copy(unit, op, t, src, ex, _elem(r.type), "tigris_split"))
            off += n
    except CLoweringError as e:
        raise CLoweringError(f"{op.name}: {e}") from None
    return "\n".join(calls)


@register("band", nn.TransposeOp)
def emit_transpose(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """Output axis a reads input axis perm[a]."""
    src = _Read(ins[0], tuple(op.ints("perm")))
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    return _copy(unit, op, outs[0], src, ex, ey, "tigris_transpose")


# ---------------------------------------------------------------------------
# reshapes


def _dense_from(t: CTensor, axis: int) -> bool:
    """Whether the axes from `axis` inwards are row-major and dense."""
    want = 1
    for a in reversed(range(axis, t.rank)):
        if t.shape[a] != 1 and t.strides[a] != want:
            return False
        want *= t.shape[a]
    return True


def _unravel(flat: str, t: CTensor, axis: int, w: _Code, stem: str) -> str:
    """The element offset in `t` of flat index `flat` of its band, whose
    axes before `axis` have size 1 (C statements into `w`)."""
    w(f"int {stem}r = {flat};")
    terms: list[str] = []
    for a in reversed(range(axis + 1, t.rank)):
        d = t.shape[a]
        if d == 1:
            continue
        w(f"const int {stem}{a} = {stem}r % {d}; {stem}r /= {d};")
        terms.append(f"{stem}{a} * {t.strides[a]}")
    terms.append(f"{stem}r * {t.strides[axis]}")
    return " + ".join(terms)


@register("band", nn.ReshapeLikeOp)
def emit_reshape(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """A band of a reshape is one contiguous span of elements (`_reshape`)."""
    x, y = ins[0], outs[0]
    if x.rank == 0 or y.rank == 0:  # one element (a scalar to or from shape 1)
        fn = _Fn("tigris_reshape1")
        xs = fn.ptr(x.ctype, x.name)
        ys = fn.ptr(y.ctype, y.name, out=True)
        fn.code(f"{ys}[0] = {xs}[0];")
        return fn.call(unit)
    if len(x.cut) > 1 or len(y.cut) > 1:
        raise CLoweringError(f"{op.name}: a reshape band cuts one axis")
    ai = x.cut[0] if x.cut else 0
    ao = y.cut[0] if y.cut else 0
    if math.prod(x.shape[:ai]) != 1 or math.prod(y.shape[:ao]) != 1:
        raise CLoweringError(f"{op.name}: a reshape band must be one contiguous span")
    ire = math.prod(x.shape[ai + 1 :])
    ore = math.prod(y.shape[ao + 1 :])
    start = _sub(_mul(ore, y.origin[ao]), _mul(ire, x.origin[ai]))
    count = _mul(ore, y.extent[ao])
    fn = _Fn("tigris_reshape")
    fn.check(_inside("0", _mul(ire, x.extent[ai]), start, count, op.name))
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    s, n = fn.int_(start), fn.int_(count)
    w = fn.code
    if _dense_from(x, ai) and _dense_from(y, ao):
        w(f"memcpy({ys}, {xs} + {s}, (size_t){_par(n)} * sizeof({y.ctype}));")
    else:
        w.open(f"for (int e = 0; e < {n}; e++)")
        oi = _unravel(f"{_par(s)} + e", x, ai, w, "i")
        oo = _unravel("e", y, ao, w, "o")
        w(f"{ys}[{oo}] = {xs}[{oi}];")
        w.close()
    return fn.call(unit)


# ---------------------------------------------------------------------------
# pad


@register("band", nn.PadOp)
def emit_pad(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Every output element reads the source index of its global position
    along each axis (a table printed from `kernels.pad` where the axis is
    padded), or takes the pad value."""
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    mode = op.str_("mode")
    value = op.float_("value")
    path = _path(op)
    if path == "exact":
        assert ex.quant is not None
        pad_value = str(ex.quant.zp_value)
    elif path == "real":
        pad_value = _f32(value)
    else:
        pv = np.array([value], dtype=np.float32)
        if ey.quant is not None:
            pv = nn.quantize_array(pv, nn.tensor_type((1,), ey.dtype, ey.quant))
            pad_value = str(int(pv[0]))
        else:
            pad_value = _f32(float(pv[0]))
    pads = op.ints("pads")
    rank = x.rank
    fn = _Fn("tigris_pad")
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    cur_x, cur_y, valid = xs, ys, "1"
    for a in range(rank):
        size = x.shape[a]
        pb, pe = pads[a], pads[rank + a]
        e = fn.int_(y.extent[a])
        o = fn.int_(y.origin[a])
        i0 = fn.int_(x.origin[a])
        ni = fn.int_(x.extent[a])
        w.open(f"for (int k{a} = 0; k{a} < {e}; k{a}++)")
        if pb == 0 and pe == 0:
            w(f"const int s{a} = {_add(o, f'k{a}')};")
            ok = valid
        else:
            src = K.pad(np.arange(size), pads=(pb, pe), mode=mode, value=-1).astype(np.int32)
            tab = unit.const("pad_index", src)
            w(f"const int s{a} = {tab}[{_add(o, f'k{a}')}];")
            ok = f"s{a} >= 0" if valid == "1" else f"v{a - 1} && s{a} >= 0"
        w(f"const int v{a} = {ok};")
        w(f"TIGRIS_BOUND(!v{a} || (s{a} - {i0} >= 0 && s{a} - {i0} < {ni}));")
        w(f"const {x.ctype} *x_{a} = v{a} ? {cur_x} + (s{a} - {i0}) * {x.strides[a]} : {xs};")
        w(f"{y.ctype} *y_{a} = {cur_y} + k{a} * {y.strides[a]};")
        cur_x, cur_y, valid = f"x_{a}", f"y_{a}", f"v{a}"
    conv = _move(unit, ex, ey, f"{cur_x}[0]")
    w(f"{cur_y}[0] = {valid} ? {conv} : ({y.ctype}){pad_value};")
    w.close(rank)
    return fn.call(unit)


# ---------------------------------------------------------------------------
# window ops: pools

_BLOCK = 64
"""Channels per block of a local accumulator array (bounded stack)."""


@dataclass
class _Spatial:
    """One spatial axis of a window op, as C names or literals."""

    axis: int
    o: str  # first output position (global)
    e: str  # output positions
    i: str  # first held input row (global)
    n: str  # held input rows


def _open_window_axis(
    w: _Code, ax: _Spatial, size: int, stride: int, pad: int, dil: int, taps: int
) -> None:
    """Open the loop over output index j<a> of a window op's spatial axis `a`
    (of `size` input rows) and bound its taps: g<a> is the window's first
    input index, taps [ta<a>, tb<a>) fall inside the input."""
    a = ax.axis
    w.open(f"for (int j{a} = 0; j{a} < {ax.e}; j{a}++)")
    w(f"const int g{a} = ({ax.o} + j{a}) * {stride} - {pad};")
    w(f"const int ta{a} = g{a} < 0 ? ({dil - 1} - g{a}) / {dil} : 0;")
    w(f"int tb{a} = ({size} - g{a} + {dil - 1}) / {dil};")
    w(f"if (tb{a} > {taps}) tb{a} = {taps};")


def _spatial(fn: _Fn, x: CTensor, y: CTensor) -> list[_Spatial]:
    return [
        _Spatial(
            a,
            fn.int_(y.origin[a]),
            fn.int_(y.extent[a]),
            fn.int_(x.origin[a]),
            fn.int_(x.extent[a]),
        )
        for a in range(1, x.rank - 1)
    ]


def _channel_blocks(fn: _Fn, x: CTensor, y: CTensor, what: str) -> tuple[str, str, str, int | None]:
    """(batch offset, channel offset, channel count, static count) of a
    channels-last op: the input's batch and channel element under the
    output band's first one."""
    r = y.rank - 1
    fn.check(_inside(x.origin[0], x.extent[0], y.origin[0], y.extent[0], what))
    fn.check(_inside(x.origin[r], x.extent[r], y.origin[r], y.extent[r], what))
    ob = fn.int_(_sub(y.origin[0], x.origin[0]))
    oc = fn.int_(_sub(y.origin[r], x.origin[r]))
    cn = fn.int_(y.extent[r])
    return ob, oc, cn, _int(y.extent[r])


def _open_blocks(w: _Code, cn: str, static: int | None) -> tuple[str, str, int]:
    """Open the channel-block loop; (first channel, channels, array size)."""
    if static is not None and static <= _BLOCK:
        w.open("")
        return "0", str(static), max(static, 1)
    w.open(f"for (int c0 = 0; c0 < {cn}; c0 += {_BLOCK})")
    w(f"const int cb = {cn} - c0 < {_BLOCK} ? {cn} - c0 : {_BLOCK};")
    return "c0", "cb", _BLOCK


def _cidx(c: str, stride: int) -> str:
    return c if stride == 1 else f"({c}) * {stride}"


@register("band", nn.MaxPoolOp, nn.AveragePoolOp)
def emit_pool(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """A max or average pool over a band: taps at global positions, those
    outside the image are the op's padding (`band_exec._window_geometry`).
    The average sums in double in tap order and divides by the count of
    taps inside the image (or its explicit pads), as `_avg_pool`."""
    assert isinstance(op, nn.PoolOp)
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    is_max = isinstance(op, nn.MaxPoolOp)
    nsp = x.rank - 2
    k, s, p = op.kernel(), op.strides(), op.pads()
    d = op.dilations() if is_max else (1,) * nsp
    include = bool(op.int_("count_include_pad"))
    fn = _Fn("tigris_max_pool" if is_max else "tigris_avg_pool")
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    ob, oc, cn, cstatic = _channel_blocks(fn, x, y, op.name)
    sp = _spatial(fn, x, y)
    w = fn.code
    w.open(f"for (int b = 0; b < {fn.int_(y.extent[0])}; b++)")
    w(f"const {x.ctype} *xb = {xs} + (b + {ob}) * {x.strides[0]};")
    w(f"{y.ctype} *yb = {ys} + b * {y.strides[0]};")
    for i, ax in enumerate(sp):
        a = ax.axis
        size = x.shape[a]
        _open_window_axis(w, ax, size, s[i], p[i], d[i], k[i])
        if not is_max:
            vlo, vhi = (-p[i], size + p[nsp + i]) if include else (0, size)
            w(f"const int ca{a} = {vlo} - g{a} > 0 ? {vlo} - g{a} : 0;")
            w(f"const int cz{a} = {vhi} - g{a} < {k[i]} ? {vhi} - g{a} : {k[i]};")
            w(f"const int cnt{a} = cz{a} > ca{a} ? cz{a} - ca{a} : 0;")
    pix = " + ".join(f"j{ax.axis} * {y.strides[ax.axis]}" for ax in sp)
    w(f"{y.ctype} *yo = yb + {pix};")
    fixed = not is_max and _path(op) == "fixed"
    lanes = _lanes(op)
    if lanes is not None and x.strides[-1] == 1 and y.strides[-1] == 1:
        axes = tuple(arm_m.PoolAxis(ax.axis, d[i], x.strides[ax.axis], ax.i)
                     for i, ax in enumerate(sp))
        pl = arm_m.PoolLanes(lanes, "max" if is_max else "avg", x.ctype, y.ctype, axes,
                             f"xb + {oc}", "yo", cn, channels=cstatic)
        if not is_max:
            pl = _avg_lanes(unit, op, pl, ex, ey, math.prod(k), sp)
        for line in arm_m.pool_lanes(unit, pl):
            w(line)
        w("#else")
    c0, cb, size_arr = _open_blocks(w, cn, cstatic)
    acc_t = x.ctype if is_max else "int32_t" if fixed else "double"
    w(f"{acc_t} acc[{size_arr}];")
    init = _low(x.ctype) if is_max else "0" if fixed else "0.0"
    w(f"for (int c = 0; c < {cb}; c++) acc[c] = {init};")
    for i, ax in enumerate(sp):
        a = ax.axis
        w.open(f"for (int t{a} = ta{a}; t{a} < tb{a}; t{a}++)")
        w(f"const int r{a} = g{a} + t{a} * {d[i]} - {ax.i};")
        w(f"TIGRIS_BOUND(r{a} >= 0 && r{a} < {ax.n});")
    cst = x.strides[-1]
    tap = " + ".join(f"r{ax.axis} * {x.strides[ax.axis]}" for ax in sp)
    w(f"const {x.ctype} *xp = xb + {tap} + {_cidx(_add(oc, c0), cst)};")
    el = f"xp[{_cidx('c', cst)}]"
    if is_max:
        stmt = f"acc[c] = {_max_expr(x.ctype, 'acc[c]', el)};"
    elif fixed:
        stmt = f"acc[c] += (int32_t){el} - {_zp(ex)};"
    else:
        stmt = f"acc[c] += (double){_deq(ex, el)};"
    w(f"for (int c = 0; c < {cb}; c++) {stmt}")
    w.close(len(sp))
    if is_max:
        res = _move(unit, ex, ey, "acc[c]")
    elif fixed:  # kernels.mean_fixed, the multiplier of each count from a table
        fixed_helpers(unit)
        cnt = " * ".join(f"cnt{ax.axis}" for ax in sp)
        counts = np.arange(1, math.prod(k) + 1)
        mults = np.concatenate([[0], pack_fixed(K.mean_fixed_real(_scale(ex), _scale(ey), counts))])
        tbl = unit.const("avgm", mults.astype(np.int64))
        res = (
            f"({ey.ctype})tigris_requant_fx(acc[c], {tbl}[{cnt}], {_zp(ey)}, {ey.lo}, {ey.hi})"
        )
    else:
        cnt = " * ".join(f"cnt{ax.axis}" for ax in sp)
        res = _quant(unit, ey, f"(float)(acc[c] / (double)({cnt}))")
    w(f"for (int c = 0; c < {cb}; c++) yo[{_cidx(_add(c0, 'c'), y.strides[-1])}] = {res};")
    w.close()  # channel blocks
    if lanes is not None and x.strides[-1] == 1 and y.strides[-1] == 1:
        w("#endif")
    w.close(len(sp) + 1)
    return fn.call(unit)


def _lanes(op: nn.NNOp) -> str | None:
    """The op's SIMD unit (`rtile.lanes`, lower-gebp's), if any."""
    attr = op.attributes.get(LANES)
    return attr.data if isinstance(attr, StringAttr) else None


def _window_counts(op: nn.NNOp) -> set[int]:
    """The divisors an average pool's windows have over its whole output:
    per spatial axis the taps inside the image (or its explicit pads with
    count_include_pad), as `emit_pool`'s cnt<a> counts them, multiplied."""
    import itertools

    assert isinstance(op, nn.PoolOp)
    xs, ys = nn.shape_of(op.operands[0]), nn.shape_of(op.results[0])
    nsp = len(xs) - 2
    k, s, p = op.kernel(), op.strides(), op.pads()
    include = bool(op.int_("count_include_pad"))
    per_axis = []
    for i in range(nsp):
        size = xs[1 + i]
        lo, hi = (-p[i], size + p[nsp + i]) if include else (0, size)
        per_axis.append({
            max(0, min(hi - g, k[i]) - max(lo - g, 0))
            for g in (j * s[i] - p[i] for j in range(ys[1 + i]))
        })
    return {math.prod(c) for c in itertools.product(*per_axis)}


def _avg_lanes(
    unit: CUnit, op: nn.NNOp, pl: arm_m.PoolLanes, ex: _Elem, ey: _Elem, taps: int,
    sp: list[_Spatial],
) -> arm_m.PoolLanes:
    """An average pool's lanes with its requantization: the multipliers of
    every window count (`kernels.mean_fixed`) by count, as the short form's
    tables where `band.short_form` holds for the counts the op's windows
    have (`_window_counts`; sums of at most `taps` 8-bit terms), else
    packed."""
    from dataclasses import replace

    fixed_helpers(unit)
    counts = np.arange(1, taps + 1)
    packed = pack_fixed(K.mean_fixed_real(_scale(ex), _scale(ey), counts))
    zy = _zp(ey)
    count = " * ".join(f"cnt{ax.axis}" for ax in sp)
    seen = np.array(sorted(n - 1 for n in _window_counts(op) if n > 0), np.int64)
    bound = np.full(seen.shape, taps * 255, np.int64)
    # the portable loops' table (under #else: named here so that the lanes
    # mention it, else unused where they are built)
    portable = unit.const("avgm", np.concatenate([[0], packed]).astype(np.int64))
    if seen.size and short_form(packed[seen], bound, zy):
        m, c, kk = short_params(np.concatenate([[0], packed]), zy)
        tables = tuple(unit.const(h, v.astype(np.int32))
                       for h, v in (("avgm", m), ("avgc", c), ("avgk", kk)))
        tables += (portable,)
        rule = "short"
    else:
        tables = (portable,)
        rule = "fixed"
    return replace(pl, xzp=_zp(ex), yzp=zy, rule=rule, tables=tables, count=count)


# ---------------------------------------------------------------------------
# global average pool: whole, accumulated, finished


def _sum_positions(
    fn: _Fn, x: CTensor, y: CTensor, ex: _Elem, what: str, fixed: bool = False,
    lanes: str | None = None, unit: CUnit | None = None,
) -> tuple[str, str]:
    """Open batch and channel-block loops and sum every position of the band
    `x` into `double part[]` (in any order: exact for dequantized int8), or
    `fixed`, the integers q - zp into `int32_t part[]`, with the SIMD unit
    `lanes` (`arm_m.gap_lanes`, the portable loops under `#else`) where the
    channels are dense; returns (first channel, channels) of the block,
    loops left open."""
    xs = fn.ptr(x.ctype, x.name)
    ob, oc, cn, cstatic = _channel_blocks(fn, x, y, what)
    w = fn.code
    w.open(f"for (int b = 0; b < {fn.int_(y.extent[0])}; b++)")
    w(f"const {x.ctype} *xb = {xs} + (b + {ob}) * {x.strides[0]};")
    c0, cb, size_arr = _open_blocks(w, cn, cstatic)
    w(f"{'int32_t' if fixed else 'double'} part[{size_arr}];")
    axes = list(range(1, x.rank - 1))
    simd = lanes is not None and fixed and x.strides[-1] == 1 and len(axes) == 2
    if simd:
        assert lanes is not None and unit is not None
        spatial = tuple((fn.int_(x.extent[a]), x.strides[a]) for a in axes)
        static = _int(cb)
        for line in arm_m.gap_lanes(unit, lanes, x.ctype, f"xb + {_add(oc, c0)}", spatial, cb,
                                    _zp(ex), static):
            w(line)
        w("#else")
    w(f"for (int c = 0; c < {cb}; c++) part[c] = {'0' if fixed else '0.0'};")
    for a in axes:
        w.open(f"for (int j{a} = 0; j{a} < {fn.int_(x.extent[a])}; j{a}++)")
    cst = x.strides[-1]
    pix = " + ".join(f"j{a} * {x.strides[a]}" for a in axes)
    w(f"const {x.ctype} *xp = xb + {pix} + {_cidx(_add(oc, c0), cst)};")
    el = f"xp[{_cidx('c', cst)}]"
    term = f"(int32_t){el} - {_zp(ex)}" if fixed else f"(double){_deq(ex, el)}"
    w(f"for (int c = 0; c < {cb}; c++) part[c] += {term};")
    w.close(len(axes))
    if simd:
        w("#endif")
    return c0, cb


def _gap_fixed(unit: CUnit, op: nn.NNOp, ex: _Elem, ey: _Elem, acc: str) -> str:
    """`GlobalAveragePoolOp.finish_fixed` of the int32 sum `acc`, as C (with
    `rtile.lanes`, `tigris_rq_short` where `band.short_form` holds for sums
    of count 8-bit terms)."""
    fixed_helpers(unit)
    count = math.prod(nn.shape_of(op.operands[0])[1:-1])
    if count * 256 >= 2**31:
        raise CLoweringError(f"{op.name}: {count} int8 terms may leave the int32 sum")
    real = float(K.mean_fixed_real(_scale(ex), _scale(ey), count))
    zy = _zp(ey)
    packed = pack_fixed(real)
    if _lanes(op) is not None and short_form(packed, np.array([count * 255]), zy):
        # the short form, proved exact for these sums (SMMLAR on the DSP extension)
        m, c, k = (int(v[0]) for v in short_params(packed, zy))
        v = f"tigris_rq_short((int32_t){_par(acc)}, {m}, {c}, {k})"
        return f"({ey.ctype})({v} < {ey.lo} ? {ey.lo} : {v} > {ey.hi} ? {ey.hi} : {v})"
    pm = fixed_literal(real)
    return f"({ey.ctype})tigris_requant_fx((int32_t){_par(acc)}, {pm}, {zy}, {ey.lo}, {ey.hi})"


def _check_exact_sum(op: nn.NNOp, ex: _Elem, ey: _Elem | None, terms: int) -> None:
    """Refuse a sum whose int8 result would depend on its order: int8 terms
    are exact in double below 2**21 of them; float32 terms into an int8
    result would need numpy's pairwise order."""
    if ex.quant is not None and terms >= 2**21:
        raise CLoweringError(
            f"{op.name}: {terms} int8 terms: the double sum is exact only below 2**21"
        )
    if ex.quant is None and ey is not None and ey.quant is not None:
        raise CLoweringError(
            f"{op.name}: a float32 sum into an int8 result depends on numpy's summation "
            "order bit for bit; not lowered"
        )


@register("band", nn.GlobalAveragePoolOp)
def emit_gap(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """The mean over all positions: double sum / count, rounded once."""
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    count = math.prod(nn.shape_of(op.operands[0])[1:-1])
    _check_exact_sum(op, ex, ey, count)
    fn = _Fn("tigris_gap")
    ys = fn.ptr(y.ctype, y.name, out=True)
    fixed = _path(op) == "fixed"
    c0, cb = _sum_positions(fn, x, y, ex, op.name, fixed, _lanes(op), unit)
    if fixed:
        res = _gap_fixed(unit, op, ex, ey, "part[c]")
    else:
        res = _quant(unit, ey, f"(float)(part[c] / {count}.0)")
    at = f"b * {y.strides[0]} + {_cidx(_add(c0, 'c'), y.strides[-1])}"
    fn.code(f"for (int c = 0; c < {cb}; c++) {ys}[{at}] = {res};")
    fn.code.close(2)
    return fn.call(unit)


@register("accumulate", nn.GlobalAveragePoolOp)
def emit_gap_accumulate(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """`band_exec.accumulate`: the band's sums in double, added once to the
    accumulator in double and rounded to its type (float, or double)."""
    x, acc = ins[0], outs[0]
    ex = _elem(op.operands[0].type)
    _check_exact_sum(op, ex, None, math.prod(x.shape[1:-1]))
    fixed = _path(op) == "fixed"
    want = ("int64_t",) if fixed else ("float", "double")
    if acc.ctype not in want:
        raise CLoweringError(
            f"{op.name}: a {acc.ctype} accumulator; {' or '.join(want)} expected"
        )
    fn = _Fn("tigris_gap_acc")
    ys = fn.ptr(acc.ctype, acc.name, out=True)
    c0, cb = _sum_positions(fn, x, acc, ex, op.name, fixed, _lanes(op), unit)
    at = f"b * {acc.strides[0]} + {_cidx(_add(c0, 'c'), acc.strides[-1])}"
    new = f"{ys}[{at}] + part[c]" if fixed else f"({acc.ctype})((double){ys}[{at}] + part[c])"
    fn.code(f"for (int c = 0; c < {cb}; c++) {ys}[{at}] = {new};")
    fn.code.close(2)
    return fn.call(unit)


@register("finish", nn.GlobalAveragePoolOp)
def emit_gap_finish(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """`band_exec.finish`: the mean of the sums rounded once, then quantized."""
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    count = math.prod(nn.shape_of(op.operands[0])[1:-1])
    fixed = _path(op) == "fixed"

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        if fixed:
            return [], [_gap_fixed(unit, op, ex, ey, a[0])]
        return [], [_quant(unit, ey, f"(float)((double){a[0]} / {count}.0)")]

    reads = [_Read(ins[0], tuple(range(ins[0].rank)))]
    return _elementwise(unit, "tigris_gap_finish", op.name, outs[:1], reads, body)


# ---------------------------------------------------------------------------
# resize


@register("band", nn.ResizeOp)
def emit_resize(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """`band_exec._resize`: per spatial axis the source rows of each global
    output position (tables computed here by the reference's coordinate
    code); linear taps combine axis by axis in double, as numpy does."""
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    mode = op.str_("mode")
    ctm = op.str_("coordinate_transformation_mode")
    nm = op.str_("nearest_mode", "round_prefer_floor")
    in_shape, out_shape = nn.shape_of(op.operands[0]), nn.shape_of(op.results[0])
    fn = _Fn("tigris_resize")
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    ob, oc, cn, _ = _channel_blocks(fn, x, y, op.name)
    sp = _spatial(fn, x, y)
    w = fn.code
    w.open(f"for (int b = 0; b < {fn.int_(y.extent[0])}; b++)")
    w(f"const {x.ctype} *xb = {xs} + (b + {ob}) * {x.strides[0]};")
    w(f"{y.ctype} *yb = {ys} + b * {y.strides[0]};")
    kinds: list[str] = []
    for ax in sp:
        a = ax.axis
        n_in, n_out = in_shape[a], out_shape[a]
        w.open(f"for (int j{a} = 0; j{a} < {ax.e}; j{a}++)")
        g = _add(ax.o, f"j{a}")
        rows: list[str]
        if n_in == n_out:
            kinds.append("same")
            w(f"const int r{a} = {g} - {ax.i};")
            rows = [f"r{a}"]
        else:
            coords = K._source_coords(n_out, n_in, ctm)
            if mode == "nearest":
                kinds.append("one")
                tab = unit.const(
                    "resize_index", K._nearest_index(coords, nm, n_in).astype(np.int32)
                )
                w(f"const int r{a} = {tab}[{g}] - {ax.i};")
                rows = [f"r{a}"]
            else:
                kinds.append("linear")
                c = np.clip(coords.astype(np.float64), 0.0, n_in - 1)
                i0 = c.astype(np.intp)
                i1 = np.minimum(i0 + 1, n_in - 1)
                frac = (c - i0).astype(np.float32)
                assert np.array_equal(frac.astype(np.float64), c - i0)
                t0 = unit.const("resize_lo", i0.astype(np.int32))
                t1 = unit.const("resize_hi", i1.astype(np.int32))
                tf = unit.const("resize_frac", frac)
                w(f"const int r{a} = {t0}[{g}] - {ax.i};")
                w(f"const int q{a} = {t1}[{g}] - {ax.i};")
                w(f"const double f{a} = (double){tf}[{g}];")
                w(f"const double h{a} = 1.0 - f{a};")
                rows = [f"r{a}", f"q{a}"]
        for r in rows:
            w(f"TIGRIS_BOUND({r} >= 0 && {r} < {ax.n});")
    pix = " + ".join(f"j{ax.axis} * {y.strides[ax.axis]}" for ax in sp)
    w(f"{y.ctype} *yo = yb + {pix};")
    cst = x.strides[-1]
    w.open(f"for (int c = 0; c < {cn}; c++)")

    def load(rows: dict[int, str]) -> str:
        off = " + ".join(f"{rows[ax.axis]} * {x.strides[ax.axis]}" for ax in sp)
        return f"xb[{off} + {_cidx(_add(oc, 'c'), cst)}]"

    def value(i: int, rows: dict[int, str]) -> str:
        """Axes 0..i combined (axis 1 first, as the reference), later fixed."""
        if i < 0:
            return f"(double){_deq(ex, load(rows))}"
        a = sp[i].axis
        if kinds[i] != "linear":
            return value(i - 1, {**rows, a: f"r{a}"})
        lo = value(i - 1, {**rows, a: f"r{a}"})
        hi = value(i - 1, {**rows, a: f"q{a}"})
        return f"({lo} * h{a} + {hi} * f{a})"

    if mode == "linear":  # float64 values, combined, rounded once
        res = _quant(unit, ey, f"(float){value(len(sp) - 1, {})}")
    else:
        res = _move(unit, ex, ey, load({ax.axis: f"r{ax.axis}" for ax in sp}))
    w(f"yo[{_cidx('c', y.strides[-1])}] = {res};")
    w.close(len(sp) + 2)
    return fn.call(unit)


# ---------------------------------------------------------------------------
# reductions


@register("band", nn.ReduceOp)
def emit_reduce(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """ReduceSum / ReduceMean / ReduceL2 / ReduceProd (double sums or products,
    one rounding) and ReduceMax / ReduceMin (numpy's maximum / minimum) over
    axes the band does not cut."""
    assert isinstance(op, nn.ReduceOp)
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    kind = op.KIND
    rank = x.rank
    red = sorted({a % rank for a in op.ints("axes")} or set(range(rank)))
    kept = [a for a in range(rank) if a not in red]
    keep = bool(op.int_("keepdims"))
    out_axis = {a: (a if keep else kept.index(a)) for a in kept}
    if any(a in x.cut for a in red):
        raise CLoweringError(f"{op.name}: a band cuts a reduced axis")
    count = math.prod(x.shape[a] for a in red)
    select = kind in ("max", "min")
    if kind in ("l2", "prod") and (ex.quant is not None or ey.quant is not None):
        raise CLoweringError(
            f"{op.name}: an int8 {kind} depends on numpy's float64 summation order; "
            "not lowered (dequantize around it)"
        )
    if not select:
        _check_exact_sum(op, ex, ey, count)
    fn = _Fn("tigris_reduce_" + kind)
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    last_kept = rank - 1 in kept
    outer = [a for a in kept if a != rank - 1]
    cx, cy = xs, ys
    for a in outer:
        oa = out_axis[a]
        fn.check(_inside(x.origin[a], x.extent[a], y.origin[oa], y.extent[oa], op.name))
        off = fn.int_(_sub(y.origin[oa], x.origin[a]))
        w.open(f"for (int k{a} = 0; k{a} < {fn.int_(y.extent[oa])}; k{a}++)")
        w(f"const {x.ctype} *x_{a} = {cx} + (k{a} + {off}) * {x.strides[a]};")
        w(f"{y.ctype} *y_{a} = {cy} + k{a} * {y.strides[oa]};")
        cx, cy = f"x_{a}", f"y_{a}"
    acc_t = x.ctype if select else "double"
    init = {"max": _low(x.ctype), "min": _high(x.ctype), "prod": "1.0"}.get(kind, "0.0")
    if last_kept:
        a = rank - 1
        oa = out_axis[a]
        fn.check(_inside(x.origin[a], x.extent[a], y.origin[oa], y.extent[oa], op.name))
        cn = fn.int_(y.extent[oa])
        oc = fn.int_(_sub(y.origin[oa], x.origin[a]))
        c0, cb, size_arr = _open_blocks(w, cn, _int(y.extent[oa]))
        w(f"{acc_t} acc[{size_arr}];")
        w(f"for (int c = 0; c < {cb}; c++) acc[c] = {init};")
        ci = _cidx(_add(oc, c0, "c"), x.strides[a])
    else:
        w.open("")
        w(f"{acc_t} acc[1] = {{{init}}};")
        c0, cb, ci = "0", "1", "0"
    cur = "acc[c]" if last_kept else "acc[0]"
    each = f"for (int c = 0; c < {cb}; c++) " if last_kept else ""
    for a in red:
        w.open(f"for (int r{a} = 0; r{a} < {x.shape[a]}; r{a}++)")
    el = f"{cx}[{' + '.join([f'r{a} * {x.strides[a]}' for a in red] + [ci])}]"
    if kind == "max":
        w(f"{each}{cur} = {_max_expr(x.ctype, cur, el)};")
    elif kind == "min":
        w(f"{each}{cur} = {_min_expr(x.ctype, cur, el)};")
    elif kind == "l2":
        w(f"{each}{cur} += (double){_deq(ex, el)} * (double){_deq(ex, el)};")
    elif kind == "prod":
        w(f"{each}{cur} *= (double){_deq(ex, el)};")
    else:
        w(f"{each}{cur} += (double){_deq(ex, el)};")
    w.close(len(red))
    if select:
        res = _move(unit, ex, ey, cur)
    elif kind == "l2":
        res = _quant(unit, ey, f"(float)sqrt({cur})")
    elif kind == "mean":
        res = _quant(unit, ey, f"(float)({cur} / {count}.0)")
    else:
        res = _quant(unit, ey, f"(float){cur}")
    if last_kept:
        at = _cidx(_add(c0, "c"), y.strides[out_axis[rank - 1]])
        w(f"{each}{cy}[{at}] = {res};")
    else:
        w(f"{cy}[0] = {res};")
    w.close(1 + len(outer))
    return fn.call(unit)


# ---------------------------------------------------------------------------
# softmax


@register("band", nn.SoftmaxOp, nn.LogSoftmaxOp)
def emit_softmax(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Softmax / LogSoftmax along an axis the band holds whole, in double:
    max-subtracted, exp, sum, one rounding (float32 only)."""
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    integer = ex.quant is not None and ey.quant is not None
    if op.is_quantized() and not integer:
        raise CLoweringError(
            f"{op.name}: a softmax between a float and a quantized tensor depends on "
            "numpy's float64 exp bit for bit; not lowered (quantize both sides)"
        )
    x, y = ins[0], outs[0]
    rank = x.rank
    ax = op.int_("axis") % rank
    if ax in x.cut or ax in y.cut:
        raise CLoweringError(f"{op.name}: the band cuts the normalised axis {ax}")
    fn = _Fn("tigris_log_softmax" if isinstance(op, nn.LogSoftmaxOp) else "tigris_softmax")
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    cx, cy = xs, ys
    for a in range(rank):
        if a == ax:
            continue
        fn.check(_inside(x.origin[a], x.extent[a], y.origin[a], y.extent[a], op.name))
        off = fn.int_(_sub(y.origin[a], x.origin[a]))
        w.open(f"for (int k{a} = 0; k{a} < {fn.int_(y.extent[a])}; k{a}++)")
        w(f"const {x.ctype} *x_{a} = {cx} + (k{a} + {off}) * {x.strides[a]};")
        w(f"{y.ctype} *y_{a} = {cy} + k{a} * {y.strides[a]};")
        cx, cy = f"x_{a}", f"y_{a}"
    n, sx, sy = x.shape[ax], x.strides[ax], y.strides[ax]
    if integer:
        _softmax_integer(op, unit, w, (cx, sx), (cy, sy), n, ex, ey)
        if rank > 1:
            w.close(rank - 1)
        return fn.call(unit)
    w("double m = -(double)INFINITY;")
    w.open(f"for (int i = 0; i < {n}; i++)")
    w(f"const double v = (double){cx}[i * {sx}];")
    w("m = (m >= v || m != m) ? m : v;")
    w.close()
    w("double sum = 0.0;")
    w(f"for (int i = 0; i < {n}; i++) sum += exp((double){cx}[i * {sx}] - m);")
    if isinstance(op, nn.LogSoftmaxOp):
        w("const double ls = log(sum);")
        val = f"(float)(((double){cx}[i * {sx}] - m) - ls)"
    else:
        val = f"(float)(exp((double){cx}[i * {sx}] - m) / sum)"
    w(f"for (int i = 0; i < {n}; i++) {cy}[i * {sy}] = {val};")
    if rank > 1:
        w.close(rank - 1)
    return fn.call(unit)


def _softmax_integer(
    op: nn.NNOp,
    unit: CUnit,
    w: _Code,
    x: tuple[str, int],
    y: tuple[str, int],
    n: int,
    ex: _Elem,
    ey: _Elem,
) -> None:
    """One row of `kernels.softmax_quantized`: its tables as constants, its
    integer steps in the same order (int64, divisions of non-negative values,
    floor shifts)."""
    assert ex.quant is not None and ey.quant is not None
    log = isinstance(op, nn.LogSoftmaxOp)
    t = K.softmax_tables(float(ex.quant.scale_value), float(ey.quant.scale_value), log)
    cx, sx = x
    cy, sy = y
    e_tab = unit.const("softmax_exp", t["exp"])
    w(f"int32_t mx = {ex.lo};")
    w(f"for (int i = 0; i < {n}; i++) mx = {cx}[i * {sx}] > mx ? {cx}[i * {sx}] : mx;")
    w("int64_t sum = 0;")
    w(f"for (int i = 0; i < {n}; i++) sum += {e_tab}[mx - {cx}[i * {sx}]];")
    zp = ey.quant.zp_value
    ebits, pbits, rbits = K.SOFTMAX_EXP_BITS, K.SOFTMAX_PROB_BITS, K.SOFTMAX_RECIP_BITS
    recip = f"INT64_C({t['recip']})"
    if log:  # the row's log-sum in Q24, once per row
        ln_tab = unit.const("softmax_ln", t["ln"])
        lin_tab = unit.const("softmax_lin", t["lin"])
        fbits = ebits - 8
        w(f"int k = {ebits};")
        w("while ((sum >> (k + 1)) != 0) k++;")
        w(f"const int64_t f = (sum >> (k - {ebits})) - (INT64_C(1) << {ebits});")
        w(f"const int64_t j = f >> {fbits};")
        w(f"const int64_t r = f & ((INT64_C(1) << {fbits}) - 1);")
        w(
            f"const int64_t lnm = {ln_tab}[j] + ((((int64_t){ln_tab}[j + 1] - {ln_tab}[j]) * r) "
            f">> {fbits});"
        )
        w(f"const int64_t big_l = (int64_t)(k - {ebits}) * INT64_C({t['ln2']}) + lnm;")
        w(f"const int64_t b = (big_l * {recip}) >> {K.SOFTMAX_LN_BITS};")
    w.open(f"for (int i = 0; i < {n}; i++)")
    w(f"const int d = mx - {cx}[i * {sx}];")
    if not log:
        w(f"const int64_t p = ((int64_t){e_tab}[d] * (INT64_C(1) << {pbits}) + sum / 2) / sum;")
        w(f"int64_t v = ((p * {recip} + (INT64_C(1) << {pbits + rbits - 1})) >> {pbits + rbits})")
        w(f"    + {zp};")
    else:
        w(f"const int64_t u = (INT64_C(1) << {rbits - 1}) - {lin_tab}[d] - b;")
        w(f"int64_t v = (u >= 0 ? u >> {rbits} : ~((~u) >> {rbits})) + {zp};")
    w(f"v = v < {ey.lo} ? {ey.lo} : v;")
    w(f"v = v > {ey.hi} ? {ey.hi} : v;")
    w(f"{cy}[i * {sy}] = ({ey.ctype})v;")
    w.close()


# ---------------------------------------------------------------------------
# index-map selections (Slice, Tile, Expand, Gather with constant indices)


@register("band", nn.IndexMapOp)
def emit_index_map(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """y[j...] = x[t0[j0], t1[j1], ...]: identity axes in place, the others
    through their index table (a constant); values moved as `_move` moves them."""
    assert isinstance(op, nn.IndexMapOp)
    x, y = ins[0], outs[0]
    ex, ey = _elem(op.operands[0].type), _elem(op.results[0].type)
    ident = set(op.identity_axes())
    fn = _Fn("tigris_" + op.name.split(".")[-1])
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    cx, cy = xs, ys
    rank = x.rank
    if rank == 0:
        w(f"{ys}[0] = {_move(unit, ex, ey, xs + '[0]')};")
        return fn.call(unit)
    for a, t in enumerate(op.tables()):
        n = fn.int_(y.extent[a])
        w.open(f"for (int k{a} = 0; k{a} < {n}; k{a}++)")
        if a in ident:
            fn.check(_inside(x.origin[a], x.extent[a], y.origin[a], y.extent[a], op.name))
            i = f"k{a} + {fn.int_(_sub(y.origin[a], x.origin[a]))}"
        else:
            tab = unit.const(f"{op.name.split('.')[-1]}_idx", t.astype(np.int32))
            at = _add(fn.int_(y.origin[a]), f"k{a}")
            w(f"const int i{a} = {tab}[{at}] - {_par(fn.int_(x.origin[a]))};")
            w(f"TIGRIS_BOUND(i{a} >= 0 && i{a} < {fn.int_(x.extent[a])});")
            i = f"i{a}"
        last = a == rank - 1
        if last:
            src = f"{cx}[({i}) * {x.strides[a]}]"
            w(f"{cy}[k{a} * {y.strides[a]}] = {_move(unit, ex, ey, src)};")
        else:
            w(f"const {x.ctype} *x_{a} = {cx} + ({i}) * {x.strides[a]};")
            w(f"{y.ctype} *y_{a} = {cy} + k{a} * {y.strides[a]};")
            cx, cy = f"x_{a}", f"y_{a}"
    w.close(rank)
    return fn.call(unit)


# ---------------------------------------------------------------------------
# recurrent layers


def _sigmoid_d(v: str) -> str:
    """`kernels._sigmoid64` of a double."""
    return f"({v} >= 0.0 ? 1.0 / (1.0 + exp(-{v})) : exp({v}) / (1.0 + exp({v})))"


@register("band", nn.LSTMOp, nn.GRUOp)
def emit_recurrent(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """LSTM / GRU over the whole sequence, `kernels.lstm` / `kernels.gru` in
    double: the state in a stack scratch, gates summed bias, input, recurrence."""
    assert isinstance(op, nn.RecurrentOp)
    for t in (*ins, *outs):
        if t.cut or not _dense(t, tuple(range(t.rank))):
            raise CLoweringError(f"{op.name}: runs on whole, contiguous tensors only")
    params: list[np.ndarray] = []
    for k, what in ((1, "weights"), (2, "recurrence"), (3, "bias")):
        value = ins[k].value
        if value is None:
            raise CLoweringError(f"{op.name}: the {what} must be constants")
        params.append(np.asarray(value, np.float32))
    lstm = isinstance(op, nn.LSTMOp)
    seq, batch, inp = ins[0].shape
    hid = op.int_("hidden_size")
    g = op.GATES
    dirs = op.dirs()
    backwards = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[
        op.str_("direction")
    ]
    fn = _Fn("tigris_" + op.name.split(".")[-1])
    xs = fn.ptr("float", ins[0].name)
    h0 = fn.ptr("float", ins[4].name)
    c0 = fn.ptr("float", ins[5].name) if lstm else ""
    ys = fn.ptr("float", outs[0].name, out=True)
    yh = fn.ptr("float", outs[1].name, out=True)
    yc = fn.ptr("float", outs[2].name, out=True) if lstm else ""
    unit.scratch(8 * (2 * batch * hid + g * hid + 2 * hid))
    w_ = fn.code
    w_(f"double h[{batch * hid}], c[{batch * hid}], gt[{g * hid}], hn[{hid}], rv[{hid}];")
    w_("(void)c; (void)hn; (void)rv;")
    for d, back in enumerate(backwards):
        wt, rt, bt = (
            unit.const(hint, np.ascontiguousarray(p[d]))
            for hint, p in zip(("rnn_w", "rnn_r", "rnn_b"), params, strict=True)
        )
        w_.open("")
        first = d * batch * hid
        w_(f"for (int i = 0; i < {batch * hid}; i++) h[i] = (double){h0}[{first} + i];")
        if lstm:
            w_(f"for (int i = 0; i < {batch * hid}; i++) c[i] = (double){c0}[{first} + i];")
        w_.open(f"for (int s = 0; s < {seq}; s++)")
        w_(f"const int t = {f'{seq - 1} - s' if back else 's'};")
        w_.open(f"for (int b = 0; b < {batch}; b++)")
        w_(f"const float *xt = {xs} + (t * {batch} + b) * {inp};")
        w_(f"double *hb = h + b * {hid};")
        if lstm:
            w_.open(f"for (int j = 0; j < {g * hid}; j++)")
            w_("double ax = 0.0, ah = 0.0;")
            w_(f"for (int i = 0; i < {inp}; i++) ax += (double)xt[i] * {wt}[j * {inp} + i];")
            w_(f"for (int i = 0; i < {hid}; i++) ah += hb[i] * (double){rt}[j * {hid} + i];")
            w_(f"gt[j] = ((double){bt}[j] + (double){bt}[{g * hid} + j] + ax) + ah;")
            w_.close()
            w_(f"double *cb = c + b * {hid};")
            w_.open(f"for (int j = 0; j < {hid}; j++)")
            w_(f"const double gi = {_sigmoid_d('gt[j]')};")
            w_(f"const double go = {_sigmoid_d(f'gt[{hid} + j]')};")
            w_(f"const double gf = {_sigmoid_d(f'gt[{2 * hid} + j]')};")
            w_(f"const double gc = tanh(gt[{3 * hid} + j]);")
            w_("cb[j] = gf * cb[j] + gi * gc;")
            w_("hb[j] = go * tanh(cb[j]);")
            w_.close()
        else:
            lbr = bool(op.int_("linear_before_reset"))
            # gx = wb + x W^T for the three gates
            w_.open(f"for (int j = 0; j < {g * hid}; j++)")
            w_("double ax = 0.0;")
            w_(f"for (int i = 0; i < {inp}; i++) ax += (double)xt[i] * {wt}[j * {inp} + i];")
            w_(f"gt[j] = (double){bt}[j] + ax;")
            w_.close()
            rb = f"{bt}[{g * hid} + "
            w_.open(f"for (int j = 0; j < {2 * hid}; j++)")
            w_("double ah = 0.0;")
            w_(f"for (int i = 0; i < {hid}; i++) ah += hb[i] * (double){rt}[j * {hid} + i];")
            w_(f"gt[j] = (gt[j] + (double){rb}j]) + ah;")
            w_.close()
            w_(f"for (int j = 0; j < {hid}; j++) rv[j] = {_sigmoid_d(f'gt[{hid} + j]')};")
            w_.open(f"for (int j = 0; j < {hid}; j++)")
            w_("double ah = 0.0;")
            row = f"{rt}[({2 * hid} + j) * {hid} + i]"
            if lbr:
                w_(f"for (int i = 0; i < {hid}; i++) ah += hb[i] * (double){row};")
                w_(
                    f"const double cand = tanh(gt[{2 * hid} + j] "
                    f"+ rv[j] * ((double){rb}{2 * hid} + j] + ah));"
                )
            else:
                w_(f"for (int i = 0; i < {hid}; i++) ah += (rv[i] * hb[i]) * (double){row};")
                w_(
                    f"const double cand = tanh((gt[{2 * hid} + j] "
                    f"+ (double){rb}{2 * hid} + j]) + ah);"
                )
            w_(f"const double z = {_sigmoid_d('gt[j]')};")
            w_("hn[j] = (1.0 - z) * cand + z * hb[j];")
            w_.close()
            w_(f"for (int j = 0; j < {hid}; j++) hb[j] = hn[j];")
        at = f"((t * {dirs} + {d}) * {batch} + b) * {hid} + j"
        w_(f"for (int j = 0; j < {hid}; j++) {ys}[{at}] = (float)hb[j];")
        w_.close(2)
        w_(f"for (int i = 0; i < {batch * hid}; i++) {yh}[{first} + i] = (float)h[i];")
        if lstm:
            w_(f"for (int i = 0; i < {batch * hid}; i++) {yc}[{first} + i] = (float)c[i];")
        w_.close()
    return fn.call(unit)


# ---------------------------------------------------------------------------
# normalisations of the extended set


def _outer_loops(
    fn: _Fn, x: CTensor, y: CTensor, skip: Sequence[int], what: str
) -> tuple[str, str, int]:
    """Loops over the band along every axis but `skip` (held whole); the
    row pointers of x and y inside them and the number of loops opened."""
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    cx, cy = xs, ys
    opened = 0
    for a in range(x.rank):
        if a in skip:
            continue
        fn.check(_inside(x.origin[a], x.extent[a], y.origin[a], y.extent[a], what))
        off = fn.int_(_sub(y.origin[a], x.origin[a]))
        w.open(f"for (int k{a} = 0; k{a} < {fn.int_(y.extent[a])}; k{a}++)")
        w(f"const {x.ctype} *x_{a} = {cx} + (k{a} + {off}) * {x.strides[a]};")
        w(f"{y.ctype} *y_{a} = {cy} + k{a} * {y.strides[a]};")
        cx, cy = f"x_{a}", f"y_{a}"
        opened += 1
    return cx, cy, opened


def _float_only(op: nn.NNOp) -> None:
    if op.is_quantized():
        raise CLoweringError(
            f"{op.name}: an int8 {op.name.split('.')[-1]} depends on numpy's float64 pow / "
            "sqrt and sums bit for bit; not lowered (dequantize around it)"
        )


def _dense(t: CTensor, axes: Sequence[int]) -> bool:
    """Whether the trailing `axes` of t are one contiguous run."""
    step = 1
    for a in sorted(axes, reverse=True):
        if t.strides[a] != step and t.shape[a] != 1:
            return False
        step *= t.shape[a]
    return True


@register("band", nn.LRNOp)
def emit_lrn(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """LRN across the channels (held whole), `kernels.lrn`'s double formula."""
    assert isinstance(op, nn.LRNOp)
    _float_only(op)
    x, y = ins[0], outs[0]
    c_ax = x.rank - 1
    if c_ax in x.cut or c_ax in y.cut:
        raise CLoweringError(f"{op.name}: the band cuts the channels")
    size = op.int_("size")
    lo = (size - 1) // 2
    scale = _f64(op.float_("alpha") / size)
    fn = _Fn("tigris_lrn")
    cx, cy, opened = _outer_loops(fn, x, y, (c_ax,), op.name)
    w = fn.code
    n, sx, sy = x.shape[c_ax], x.strides[c_ax], y.strides[c_ax]
    w.open(f"for (int c = 0; c < {n}; c++)")
    w("double s = 0.0;")
    w.open(f"for (int k = 0; k < {size}; k++)")
    w(f"const int cc = c - {lo} + k;")
    w(f"if (cc >= 0 && cc < {n}) {{ const double v = (double){cx}[cc * {sx}]; s += v * v; }}")
    w.close()
    bias, beta = _f64(op.float_("bias")), _f64(op.float_("beta"))
    w(f"{cy}[c * {sy}] = (float)((double){cx}[c * {sx}] / pow({bias} + {scale} * s, {beta}));")
    w.close(1 + opened)
    return fn.call(unit)


def _param_table(unit: CUnit, op: nn.NNOp, t: CTensor, shape: Sequence[int], hint: str) -> str:
    if t.value is None:
        raise CLoweringError(f"{op.name}: the {hint} must be a constant")
    full = np.broadcast_to(np.asarray(t.value, np.float32), tuple(shape))
    return unit.const(hint, np.ascontiguousarray(full).reshape(-1))


@register("band", nn.LayerNormOp)
def emit_layer_norm(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """LayerNormalization of each whole, contiguous block of normalised axes:
    `kernels.layer_norm`'s double mean, variance and division."""
    assert isinstance(op, nn.LayerNormOp)
    _float_only(op)
    x, y = ins[0], outs[0]
    axes = op.whole_axes()
    if any(a in x.cut or a in y.cut for a in axes):
        raise CLoweringError(f"{op.name}: the band cuts a normalised axis")
    if not (_dense(x, axes) and _dense(y, axes)):
        raise CLoweringError(f"{op.name}: the normalised axes are not contiguous in the band")
    inner = x.shape[axes[0] :]
    m = math.prod(inner)
    g = _param_table(unit, op, ins[1], inner, "ln_scale")
    b = _param_table(unit, op, ins[2], inner, "ln_bias")
    fn = _Fn("tigris_layer_norm")
    cx, cy, opened = _outer_loops(fn, x, y, axes, op.name)
    w = fn.code
    w("double mean = 0.0, var = 0.0;")
    w(f"for (int i = 0; i < {m}; i++) mean += (double){cx}[i];")
    w(f"mean /= {m}.0;")
    w(f"for (int i = 0; i < {m}; i++) {{ const double c = (double){cx}[i] - mean; var += c * c; }}")
    w(f"var /= {m}.0;")
    w(f"const double sd = sqrt(var + {_f64(op.float_('epsilon'))});")
    w(
        f"for (int i = 0; i < {m}; i++) "
        f"{cy}[i] = (float)(((double){cx}[i] - mean) / sd * (double){g}[i] + (double){b}[i]);"
    )
    if opened:
        w.close(opened)
    return fn.call(unit)


@register("band", nn.InstanceNormOp)
def emit_instance_norm(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """InstanceNormalization of a whole channels-last tensor: per sample and
    channel, `kernels.instance_norm`'s double mean, variance and division."""
    assert isinstance(op, nn.InstanceNormOp)
    _float_only(op)
    x, y = ins[0], outs[0]
    every = tuple(range(x.rank))
    if x.cut or y.cut or not (_dense(x, every) and _dense(y, every)):
        raise CLoweringError(f"{op.name}: runs on the whole, contiguous tensor only")
    n, c = x.shape[0], x.shape[-1]
    pos = math.prod(x.shape[1:-1])
    g = _param_table(unit, op, ins[1], (c,), "in_scale")
    b = _param_table(unit, op, ins[2], (c,), "in_bias")
    fn = _Fn("tigris_instance_norm")
    xs = fn.ptr(x.ctype, x.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    w.open(f"for (int n = 0; n < {n}; n++)")
    w(f"const float *xn = {xs} + n * {pos * c};")
    w(f"float *yn = {ys} + n * {pos * c};")
    w.open(f"for (int c = 0; c < {c}; c++)")
    w("double mean = 0.0, var = 0.0;")
    w(f"for (int p = 0; p < {pos}; p++) mean += (double)xn[p * {c} + c];")
    w(f"mean /= {pos}.0;")
    w(
        f"for (int p = 0; p < {pos}; p++) "
        f"{{ const double d = (double)xn[p * {c} + c] - mean; var += d * d; }}"
    )
    w(f"var /= {pos}.0;")
    w(f"const double sd = sqrt(var + {_f64(op.float_('epsilon'))});")
    w(
        f"for (int p = 0; p < {pos}; p++) yn[p * {c} + c] = "
        f"(float)(((double)xn[p * {c} + c] - mean) / sd * (double){g}[c] + (double){b}[c]);"
    )
    w.close(2)
    return fn.call(unit)


REFUSED: dict[type, str] = {
    nn.WeightOp: "a constant, never the body of a band op",
}
"""nn op classes with no band emitter here or in `c_conv`, and why."""

DELEGATED: tuple[type[nn.NNOp], ...] = (nn.ConvOp, nn.ConvTransposeOp, nn.GemmOp, nn.MatMulOp)
"""Printed by `c_conv`."""

REFUSED_INSTANCES: tuple[str, ...] = (
    "Softmax / LogSoftmax between a float32 and an int8 tensor: numpy's float64 exp",
    "float32 to int8 transcendental unary ops: the reference's float64 function",
    "float32 to int8 GlobalAveragePool / ReduceMean / ReduceSum: numpy's summation order",
    "int8 sums of 2**21 terms or more: no longer exact in double",
    "int8 LRN, LayerNormalization, InstanceNormalization, ReduceL2, ReduceProd: numpy's "
    "float64 pow, sqrt and summation order",
    "a reshape band cutting more than one axis, or not one contiguous span",
    "a band along the axis a Concat joins, a Split splits, a reduction reduces, "
    "or a Softmax normalises",
)
"""Instances refused with CLoweringError rather than lowered approximately
(accumulate / finish of any op but GlobalAveragePool: `c_band.emitter`)."""


# ---------------------------------------------------------------------------
# integer and boolean data (Cast, comparisons, logic, Where, ArgMax / ArgMin,
# Gather with run-time indices): the values of `kernels.cast`,
# `kernels.arg_reduce` and `kernels.take`, exactly


def _int_limits(dt: np.dtype) -> tuple[str, str]:
    info = np.iinfo(dt)
    ct = c_type(dt)
    lit = {"int32_t": ("(-2147483647 - 1)", "2147483647")}
    if ct == "int64_t":
        return "(-9223372036854775807LL - 1)", "9223372036854775807LL"
    return lit.get(ct, (str(int(info.min)), str(int(info.max))))


def _cast_expr(unit: CUnit, src: np.dtype, dst: np.dtype, x: str) -> str:
    """`kernels.cast` of one element."""
    ct = c_type(dst)
    if dst == np.bool_:
        return f"({x} != 0)"
    if src.kind != "f" or dst.kind == "f":
        return f"({ct}){_par(x)}"
    info = np.iinfo(dst)
    lo, hi = float(info.min), float(info.max) + 1.0
    mn, mx = _int_limits(dst)
    text = "\n".join(
        [
            f"static inline {ct} @NAME@(float v) {{",
            "  const double t = trunc((double)v);",
            f"  if (t >= {float(lo).hex()} && t < {float(hi).hex()}) return ({ct})t;",
            f"  return t >= {float(hi).hex()} ? {mx} : (t < {float(lo).hex()} ? {mn} : 0);",
            "}",
        ]
    )
    return f"{_define(unit, 'tigris_cast_' + str(dst), text)}({x})"


@register("band", nn.CastOp)
def emit_cast(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Cast, elementwise."""
    src, dst = nn.dtype_of(op.operands[0]), nn.dtype_of(op.results[0])

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [_cast_expr(unit, src, dst, a[0])]

    reads = [_Read(ins[0], tuple(range(ins[0].rank)))]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


_FLAG_BINARY: dict[type[nn.NNOp], str] = {
    nn.LessOp: "({a} < {b})",
    nn.LessEqualOp: "({a} <= {b})",
    nn.GreaterOp: "({a} > {b})",
    nn.GreaterEqualOp: "({a} >= {b})",
    nn.EqualOp: "({a} == {b})",
    nn.AndOp: "({a} && {b})",
    nn.OrOp: "({a} || {b})",
    nn.XorOp: "({a} != {b})",
}
"""Comparisons (IEEE: a NaN compares false, as numpy) and logic, to bool."""


@register("band", nn.CompareOp, nn.LogicOp)
def emit_flag_binary(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """A comparison or logic op with numpy broadcasting, giving bool."""
    tmpl = _FLAG_BINARY.get(type(op))
    if tmpl is None:
        raise CLoweringError(f"{op.name}: no C lowering for this comparison")

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [tmpl.format(a=a[0], b=a[1])]

    rank = outs[0].rank
    reads = [_aligned(ins[0], rank), _aligned(ins[1], rank)]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


@register("band", nn.NotOp)
def emit_not(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Logical not."""

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [f"(!{_par(a[0])})"]

    reads = [_Read(ins[0], tuple(range(ins[0].rank)))]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


@register("band", nn.WhereOp)
def emit_where(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Where with three-way numpy broadcasting."""

    def body(a: list[str]) -> tuple[list[str], list[str]]:
        return [], [f"({a[0]} ? {a[1]} : {a[2]})"]

    rank = outs[0].rank
    reads = [_aligned(t, rank) for t in ins[:3]]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


def _row_loops(
    fn: _Fn, x: CTensor, y: CTensor, out_axis: dict[int, int], what: str
) -> tuple[str, str]:
    """Open one loop per input axis of `out_axis` (input axis -> result axis)
    over the band's result rows; the C names of the row's first input and
    result elements."""
    w = fn.code
    cx, cy = fn.ptr(x.ctype, x.name), fn.ptr(y.ctype, y.name, out=True)
    for a, oa in out_axis.items():
        fn.check(_inside(x.origin[a], x.extent[a], y.origin[oa], y.extent[oa], what))
        off = fn.int_(_sub(y.origin[oa], x.origin[a]))
        w.open(f"for (int k{a} = 0; k{a} < {fn.int_(y.extent[oa])}; k{a}++)")
        w(f"const {x.ctype} *x_{a} = {cx} + (k{a} + {off}) * {x.strides[a]};")
        w(f"{y.ctype} *y_{a} = {cy} + k{a} * {y.strides[oa]};")
        cx, cy = f"x_{a}", f"y_{a}"
    return cx, cy


@register("band", nn.ArgReduceOp)
def emit_arg_reduce(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """ArgMax / ArgMin along an axis the band does not cut: the first extreme
    (scanning from the end for select_last_index), a NaN winning as in numpy."""
    assert isinstance(op, nn.ArgReduceOp)
    x, y = ins[0], outs[0]
    rank = x.rank
    r = op.axis()
    if r in x.cut:
        raise CLoweringError(f"{op.name}: a band cuts the reduced axis")
    keep = bool(op.int_("keepdims"))
    kept = [a for a in range(rank) if a != r]
    out_axis = {a: (a if keep else kept.index(a)) for a in kept}
    fn = _Fn(_short(op))
    w = fn.code
    cx, cy = _row_loops(fn, x, y, out_axis, op.name)
    n, st = x.shape[r], x.strides[r]
    last = bool(op.int_("select_last_index"))
    first = n - 1 if last else 0
    w.open("")
    w(f"{x.ctype} best = {cx}[{first * st}];")
    w(f"int64_t at = {first};")
    loop = f"for (int j = {n - 2}; j >= 0; j--)" if last else f"for (int j = 1; j < {n}; j++)"
    w.open(loop)
    w(f"const {x.ctype} v = {cx}[j * {st}];")
    better = "v > best" if op.MAX else "v < best"
    nan = " || v != v" if x.ctype == "float" else ""
    guard = "best == best && " if x.ctype == "float" else ""
    w(f"if ({guard}({better}{nan})) {{ best = v; at = j; }}")
    w.close(1)
    w(f"{cy}[0] = at;")
    w.close(1 + len(kept))
    return fn.call(unit)


@register("band", nn.TopKOp)
def emit_top_k(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """TopK along an axis the band does not cut: per row, the best K so far
    kept in order in the result (the values, or the indices whose input
    values are compared), a new element inserted after its equals, so that
    ties keep the lower index first; a NaN is larger than every number."""
    assert isinstance(op, nn.TopKOp)
    x, y = ins[0], outs[0]
    rank = x.rank
    r = op.top_axis()
    if r in x.cut or r in y.cut:
        raise CLoweringError(f"{op.name}: a band cuts the axis it orders")
    kept = [a for a in range(rank) if a != r]
    fn = _Fn(_short(op))
    w = fn.code
    cx, cy = _row_loops(fn, x, y, {a: a for a in kept}, op.name)
    n, k, sx, sy = x.shape[r], op.int_("k"), x.strides[r], y.strides[r]
    flt = x.ctype == "float"
    if op.int_("largest"):
        better = "(v != v && b == b) || v > b" if flt else "v > b"
    else:
        better = "(b != b && v == v) || v < b" if flt else "v < b"
    held = f"{cx}[{cy}[(p - 1) * {sy}] * {sx}]" if op.INDICES else f"{cy}[(p - 1) * {sy}]"
    w.open("")
    w("int count = 0;")
    w.open(f"for (int j = 0; j < {n}; j++)")
    w(f"const {x.ctype} v = {cx}[j * {sx}];")
    w("int p = count;")
    w.open("while (p > 0)")
    w(f"const {x.ctype} b = {held};")
    w(f"if (!({better})) break;")
    w(f"if (p < {k}) {cy}[p * {sy}] = {cy}[(p - 1) * {sy}];")
    w("p--;")
    w.close(1)
    w(f"if (p < {k}) {cy}[p * {sy}] = {'j' if op.INDICES else 'v'};")
    w(f"if (count < {k}) count++;")
    w.close(2 + len(kept))
    return fn.call(unit)


@register("band", nn.TakeOp)
def emit_take(op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit) -> str:
    """Gather with run-time indices: per output element, the data element at
    the index (negative counted from the end; one outside [-n, n) stops a
    TIGRIS_BOUNDS_CHECK build and is clamped otherwise)."""
    assert isinstance(op, nn.TakeOp)
    d, i, y = ins[0], ins[1], outs[0]
    ax, q = op.gather_axis(), i.rank
    if ax in d.cut:
        raise CLoweringError(f"{op.name}: a band cuts the gathered axis of the data")
    fn = _Fn(_short(op))
    ds = fn.ptr(d.ctype, d.name)
    is_ = fn.ptr(i.ctype, i.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    cd, ci, cy = ds, is_, ys
    n = d.shape[ax]
    opened = 0

    def resolve() -> None:
        nonlocal cd
        w(f"int64_t g = (int64_t){ci}[0];")
        w(f"if (g < 0) g += {n};")
        w(f"TIGRIS_BOUND(g >= 0 && g < {n});")
        w(f"g = g < 0 ? 0 : (g >= {n} ? {n - 1} : g);")
        w(f"const {d.ctype} *d_g = {cd} + (g - {_par(fn.int_(d.origin[ax]))}) * {d.strides[ax]};")
        cd = "d_g"

    for oa in range(y.rank):
        if oa == ax + q:
            resolve()
        w.open(f"for (int k{oa} = 0; k{oa} < {fn.int_(y.extent[oa])}; k{oa}++)")
        opened += 1
        if ax <= oa < ax + q:
            ia = oa - ax
            fn.check(_inside(i.origin[ia], i.extent[ia], y.origin[oa], y.extent[oa], op.name))
            off = fn.int_(_sub(y.origin[oa], i.origin[ia]))
            w(f"const {i.ctype} *i_{oa} = {ci} + (k{oa} + {off}) * {i.strides[ia]};")
            ci = f"i_{oa}"
        else:
            da = oa if oa < ax else oa - q + 1
            fn.check(_inside(d.origin[da], d.extent[da], y.origin[oa], y.extent[oa], op.name))
            off = fn.int_(_sub(y.origin[oa], d.origin[da]))
            w(f"const {d.ctype} *d_{oa} = {cd} + (k{oa} + {off}) * {d.strides[da]};")
            cd = f"d_{oa}"
        w(f"{y.ctype} *y_{oa} = {cy} + k{oa} * {y.strides[oa]};")
        cy = f"y_{oa}"
    if y.rank == ax + q:
        w.open("")
        opened += 1
        resolve()
    w(f"{cy}[0] = {cd}[0];")
    w.close(opened)
    return fn.call(unit)


@register("band", nn.QuantizeLinearOp, nn.DequantizeLinearOp)
def emit_linear_quant(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """QuantizeLinear / DequantizeLinear with scale and zero-point operands
    (per axis), elementwise: `kernels.quantize` / `kernels.dequantize`."""
    y = outs[0]
    if isinstance(op, nn.QuantizeLinearOp):
        dt = nn.dtype_of(op.output)
        info = np.iinfo(dt)
        with np.errstate(invalid="ignore"):
            nan = int(K.quantize(np.float32(np.nan), scale=1.0, zero_point=0, dtype=dt))
        lo, hi = _f32(int(info.min)), _f32(int(info.max))
        text = "\n".join(
            [
                f"static inline {y.ctype} @NAME@(float v, float s, float z) {{",
                "  float r = nearbyintf(v / s) + z;",
                f"  r = r < {lo} ? {lo} : r;",
                f"  r = r > {hi} ? {hi} : r;",
                f"  return ({y.ctype})(r == r ? r : {_f32(nan)});",
                "}",
            ]
        )
        name = _define(unit, "tigris_qlin", text)

        def body(a: list[str]) -> tuple[list[str], list[str]]:
            return [], [f"{name}({a[0]}, {a[1]}, (float){_par(a[2])})"]
    else:

        def body(a: list[str]) -> tuple[list[str], list[str]]:
            return [], [f"(float)((int64_t){_par(a[0])} - (int64_t){_par(a[2])}) * {a[1]}"]

    rank = y.rank
    reads = [_aligned(t, rank) for t in ins[:3]]
    return _elementwise(unit, _short(op), op.name, outs[:1], reads, body)


@register("band", nn.MatMulIntegerOp)
def emit_matmul_integer(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """MatMulInteger over a band of A's rows: int64 sums of (a - zp) * b,
    stored as int32 (the reference's wrap-around), B whole."""
    a, b, y = ins[0], ins[1], outs[0]
    if a.rank < 2 or y.rank != a.rank:
        raise CLoweringError(f"{op.name}: the C takes A of rank >= 2 against a matrix B")
    if a.rank - 1 in a.cut or b.cut:
        raise CLoweringError(f"{op.name}: a band cuts the reduced axis or B")
    zp = op.int_("a_zero_point")
    kk, nn_ = b.shape
    fn = _Fn(_short(op))
    xs = fn.ptr(a.ctype, a.name)
    bs = fn.ptr(b.ctype, b.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    w = fn.code
    ca, cy = xs, ys
    for ax in range(y.rank - 1):
        fn.check(_inside(a.origin[ax], a.extent[ax], y.origin[ax], y.extent[ax], op.name))
        off = fn.int_(_sub(y.origin[ax], a.origin[ax]))
        w.open(f"for (int k{ax} = 0; k{ax} < {fn.int_(y.extent[ax])}; k{ax}++)")
        w(f"const {a.ctype} *a_{ax} = {ca} + (k{ax} + {off}) * {a.strides[ax]};")
        w(f"int32_t *y_{ax} = {cy} + k{ax} * {y.strides[ax]};")
        ca, cy = f"a_{ax}", f"y_{ax}"
    fn.check(_inside("0", str(nn_), y.origin[-1], y.extent[-1], op.name))
    w.open(f"for (int n = 0; n < {fn.int_(y.extent[-1])}; n++)")
    w(f"const int gn = n + {_par(fn.int_(y.origin[-1]))};")
    w("int64_t acc = 0;")
    w.open(f"for (int j = 0; j < {kk}; j++)")
    w(
        f"acc += ((int64_t){ca}[j * {a.strides[-1]}] - {zp}) * "
        f"(int64_t){bs}[j * {b.strides[0]} + gn * {b.strides[1]}];"
    )
    w.close()
    w(f"{cy}[n * {y.strides[-1]}] = (int32_t)acc;")
    w.close(1 + y.rank - 1)
    return fn.call(unit)


@register("band", nn.ConvIntegerOp)
def emit_conv_integer(
    op: nn.NNOp, ins: Sequence[CTensor], outs: Sequence[CTensor], unit: CUnit
) -> str:
    """ConvInteger over a band, directly: per output pixel and channel the
    int64 sum over the taps inside the image (outside: the zero padding) of
    (x - zp) * w, stored as int32 like the reference."""
    assert isinstance(op, nn.ConvIntegerOp)
    x, wt, y = ins[0], ins[1], outs[0]
    r = x.rank - 1
    if r in x.cut:
        raise CLoweringError(f"{op.name}: a band cuts the input channels")
    k, s, p, d = op.kernel(), op.strides(), op.pads(), op.dilations()
    zp = op.int_("x_zero_point")
    cout, cing = wt.shape[0], wt.shape[-1]
    coutg = cout // op.groups()
    fn = _Fn(_short(op))
    xs = fn.ptr(x.ctype, x.name)
    ws = fn.ptr(wt.ctype, wt.name)
    ys = fn.ptr(y.ctype, y.name, out=True)
    fn.check(_inside(x.origin[0], x.extent[0], y.origin[0], y.extent[0], op.name))
    ob = fn.int_(_sub(y.origin[0], x.origin[0]))
    sp = _spatial(fn, x, y)
    w = fn.code
    w.open(f"for (int b = 0; b < {fn.int_(y.extent[0])}; b++)")
    w(f"const {x.ctype} *xb = {xs} + (b + {ob}) * {x.strides[0]};")
    w(f"int32_t *yb = {ys} + b * {y.strides[0]};")
    for i, ax in enumerate(sp):
        a = ax.axis
        size = x.shape[a]
        _open_window_axis(w, ax, size, s[i], p[i], d[i], k[i])
    pix = " + ".join(f"j{ax.axis} * {y.strides[ax.axis]}" for ax in sp)
    w(f"int32_t *yo = yb + {pix};")
    fn.check(_inside("0", str(cout), y.origin[r], y.extent[r], op.name))
    w.open(f"for (int c = 0; c < {fn.int_(y.extent[r])}; c++)")
    w(f"const int co = c + {_par(fn.int_(y.origin[r]))};")
    w(f"const int grp = co / {coutg};")
    w("int64_t acc = 0;")
    for i, ax in enumerate(sp):
        a = ax.axis
        w.open(f"for (int t{a} = ta{a}; t{a} < tb{a}; t{a}++)")
        w(f"const int r{a} = g{a} + t{a} * {d[i]} - {ax.i};")
        w(f"TIGRIS_BOUND(r{a} >= 0 && r{a} < {ax.n});")
    tap = " + ".join(f"r{ax.axis} * {x.strides[ax.axis]}" for ax in sp)
    wtap = " + ".join(f"t{ax.axis} * {wt.strides[ax.axis]}" for ax in sp)
    w(f"const {x.ctype} *xp = xb + {tap} + grp * {cing * x.strides[r]};")
    w(f"const int32_t *wp = {ws} + co * {wt.strides[0]} + {wtap};")
    w(
        f"for (int ci = 0; ci < {cing}; ci++) acc += ((int64_t)xp[ci * {x.strides[r]}] - {zp})"
        f" * (int64_t)wp[ci * {wt.strides[r]}];"
    )
    w.close(len(sp))
    w(f"yo[c * {y.strides[r]}] = (int32_t)acc;")
    w.close(1)  # channels
    w.close(len(sp) + 1)
    return fn.call(unit)
