"""The `c` target: loop-level IR (what `lower-gebp` emits) printed as C.

`tigris-opt m.mlir --gebp-tile --lower-gebp -t c -o k.c` (or plain
`xdsl-opt -t c`) prints every function of a module of `func` / `scf` /
`arith` / `memref` / `vector` / `rtile.dot_acc` ops as a C function: a memref
argument is a pointer to its row-major elements, `scf.for` a C loop whose
iter_args are named variables, float32 vectors GCC vector extensions and int8
products x86 intrinsics. It keeps to the practices `gebp_c` keeps, from the
measurements behind the spec:

* every accumulator is a named variable (an array of vectors spills the tile);
* an empty asm barrier, `KEEP(x)`, after each B load and A splat of a k loop
  (else gcc folds the loads into every FMA as memory operands);
* int8 through widening intrinsics (`__builtin_convertvector` from int8 is
  scalarised): k steps in int16 pairs, `pmaddwd` + add, or AVX512-VNNI
  `vpdpwssd` when the kernel's `rtile.target` has VNNI;
* a partial vector is loaded through a zeroed copy and stored by its width.

An op it cannot print (an `nn` op not lowered yet, a tensor-level function) is
a diagnostic naming that op, never partial output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, cast

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tigris_ir.dialects.loop import PLAN_ATTR
from tigris_ir.dialects.rtile import COVER, GEOM, TARGET, DotAccOp
from tigris_ir.rtile import targets as tg

if TYPE_CHECKING:
    from tigris_ir.backend.c.network import CSource


class CEmitError(DiagnosticException):
    """The module holds something the C target cannot print."""


def _describe(op: Operation) -> str:
    from tigris_ir.passes.gebp_tile import describe

    return describe(op)


def _lowering_hint(op: Operation) -> str:
    """What would bring a tensor-level op to loops, in the words of a command line."""
    from tigris_ir.passes.gebp_tile import gemm_site
    from tigris_ir.passes.lower_gebp import NotCovered, site_spec

    try:
        spec = site_spec(op)
    except NotCovered as e:
        return f"lower-gebp does not cover it: {e}"
    if spec is not None:
        return "run --lower-gebp first"
    if gemm_site(op) is not None:
        return "run --gebp-tile and --lower-gebp first"
    return (
        "no pass lowers it to loops yet; the C target prints the kernels lower-gebp "
        "makes of register-tiled nn.gemm and nn.matmul"
    )


def _not_printable(op: Operation, why: str = "") -> CEmitError:
    graph = op.name.startswith("nn.") or (
        op.name.startswith("rtile.") and not isinstance(op, DotAccOp)
    )
    if graph:
        hint = why or _lowering_hint(op)
        verb = "is not lowered"
    else:
        hint = why or (
            "its function still holds tensor-level ops"
            if op.name.startswith(("bufferization.", "tensor."))
            else "it is outside what the C target prints"
        )
        verb = "cannot be printed"
    return CEmitError(f"the C target prints loop-level IR; {_describe(op)} {verb} ({hint})")


# ------------------------------------------------------------------ types


def _is_f32(t: Attribute) -> bool:
    return isinstance(t, Float32Type)


def _int_width(t: Attribute) -> int | None:
    return t.width.data if isinstance(t, IntegerType) else None


def c_scalar(t: Attribute) -> str:
    """The C type of a scalar element type."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, IndexType):
        return "ptrdiff_t"
    if isinstance(t, IntegerType):
        width = t.width.data
        unsigned = t.signedness.data == Signedness.UNSIGNED
        if width == 1:
            return "_Bool"
        if width in (8, 16, 32, 64):
            return f"{'u' if unsigned else ''}int{width}_t"
    raise ValueError(f"no C type for {t}")


_SI = {
    8: ("_mm", "si128", "__m128i"),  # the low half of an xmm register
    16: ("_mm", "si128", "__m128i"),
    32: ("_mm256", "si256", "__m256i"),
    64: ("_mm512", "si512", "__m512i"),
}


@dataclass
class _Types:
    """The vector typedefs and helpers a printed module needs."""

    f32_lanes: set[int] = field(default_factory=set[int])
    keep_bytes: set[int] = field(default_factory=set[int])
    intrinsics: bool = False
    partial_i8: bool = False

    def vector(self, t: VectorType, where: Operation) -> str:
        lanes = t.get_shape()[0] if t.get_num_dims() == 1 else 0
        elt = t.get_element_type()
        if lanes and _is_f32(elt):
            self.f32_lanes.add(lanes)
            return f"vf{lanes}"
        width = _int_width(elt)
        if lanes and width == 32 and 4 * lanes in _SI:
            self.intrinsics = True
            return _SI[4 * lanes][2]
        if lanes and width == 8 and lanes <= 16:
            self.intrinsics = True
            return "__m128i"
        raise _not_printable(where, f"no C vector type for {t}")


def _i32_load(ptr: str, lanes: int) -> str:
    if lanes == 2:
        return f"_mm_loadl_epi64((const __m128i *)({ptr}))"
    prefix, si, _ = _SI[4 * lanes]
    return f"{prefix}_loadu_{si}((const void *)({ptr}))"


def _i32_store(ptr: str, value: str, lanes: int) -> str:
    if lanes == 2:
        return f"_mm_storel_epi64((__m128i *)({ptr}), {value});"
    prefix, si, _ = _SI[4 * lanes]
    return f"{prefix}_storeu_{si}((void *)({ptr}), {value});"


def _ident(text: str) -> str:
    text = re.sub(r"\W", "_", text)
    return text if text and not text[0].isdigit() else f"v_{text}"


_RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "int", "long", "register",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "restrict", "inline", "KEEP",
    "t_", "free", "memcpy", "aligned_alloc",
}  # fmt: skip


# ----------------------------------------------------------- the printer


def _mask_width(value: SSAValue, where: Operation) -> int:
    """The constant width of a prefix mask made by vector.create_mask."""
    owner = value.owner
    if isinstance(owner, vector.CreateMaskOp) and len(owner.mask_dim_sizes) == 1:
        size = owner.mask_dim_sizes[0].owner
        if isinstance(size, arith.ConstantOp) and isinstance(size.value, IntegerAttr):
            return size.value.value.data
    raise _not_printable(where, "only masks of vector.create_mask on a constant print")


def _zero_constant(value: SSAValue) -> bool:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return all(v == 0 for v in owner.value.get_values())
    return False


class _Function:
    """Prints one func.func."""

    def __init__(self, printer: CPrinter, fn: func.FuncOp):
        self.p, self.fn = printer, fn
        self.names: dict[SSAValue, str] = {}
        self.inline: dict[SSAValue, str] = {}
        self.used = set(_RESERVED) | set(printer.c_names.values())
        self.lines: list[str] = []
        self.depth = 1
        self.target = printer.target_of(fn)
        self.memo: dict[tuple[object, ...], str] = {}

    # -- names ---------------------------------------------------------------
    def fresh(self, hint: str | None) -> str:
        base = _ident(hint) if hint else "v"
        name, n = base, 1
        while name in self.used or (base == "v" and name == "v"):
            name = f"{base}{n}" if base == "v" else f"{base}_{n}"
            n += 1
        self.used.add(name)
        return name

    def name(self, v: SSAValue) -> str:
        if v not in self.names:
            self.names[v] = self.fresh(v.name_hint)
        return self.names[v]

    def expr(self, v: SSAValue) -> str:
        return self.inline[v] if v in self.inline else self.name(v)

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    # -- memrefs ---------------------------------------------------------------
    def element(self, ref: SSAValue, indices: Sequence[SSAValue], where: Operation) -> str:
        """`A[flat]`: the element of a row-major memref at indices."""
        ty = ref.type
        if not isinstance(ty, MemRefType) or not isinstance(ty.layout, NoneAttr):
            raise _not_printable(where, f"only identity-layout memrefs print, got {ty}")
        shape = ty.get_shape()
        if any(d < 0 for d in shape):
            raise _not_printable(where, f"only static memref shapes print, got {ty}")
        flat = "0"
        for extent, idx in zip(shape, indices, strict=True):
            flat = _linear(flat, extent, self.expr(idx))
        if _wrapped(flat):
            flat = flat[1:-1]  # `A[(j0 + 8)]` reads better as `A[j0 + 8]`
        return f"{self.expr(ref)}[{flat}]"

    # -- the function ------------------------------------------------------------
    def signature(self) -> str:
        fn = self.fn
        if fn.function_type.outputs.data:
            raise CEmitError(
                f"the C target prints loop-level IR; @{fn.sym_name.data} returns "
                "values (a lowered function returns through out-parameters)"
            )
        params: list[str] = []
        written = self.p.written_args(fn)
        block = fn.body.block if not fn.is_declaration else None
        for i, t in enumerate(fn.function_type.inputs.data):
            if not isinstance(t, MemRefType):
                raise CEmitError(
                    f"the C target prints loop-level IR; @{fn.sym_name.data} takes "
                    f"a {t} argument (only memref arguments print)"
                )
            const = "" if i in written else "const "
            arg_name = self.name(block.args[i]) if block is not None else f"arg{i}"
            params.append(f"{const}{c_scalar(t.get_element_type())} *restrict {arg_name}")
        static = "static " if self.p.is_private(fn) else ""
        return f"{static}void {self.p.c_names[fn.sym_name.data]}({', '.join(params) or 'void'})"

    def body(self) -> list[str]:
        self.lines = []
        block = self.fn.body.block
        self.block(block, top=True)
        return self.lines

    def block(self, block: Block, top: bool = False, in_loop: bool = False) -> None:
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                if not top or op is not block.last_op:
                    self.emit("return;")
                continue
            if isinstance(op, scf.YieldOp):
                continue
            self.op(op, in_loop)

    def op(self, op: Operation, in_loop: bool) -> None:
        if isinstance(op, arith.ConstantOp):
            self.constant(op)
        elif isinstance(op, arith.AddiOp | arith.MuliOp) and isinstance(op.result.type, IndexType):
            sign = "+" if isinstance(op, arith.AddiOp) else "*"
            self.inline[op.result] = f"({self.expr(op.lhs)} {sign} {self.expr(op.rhs)})"
        elif isinstance(op, arith.MulfOp):
            self.declare(op.result, f"{self.expr(op.lhs)} * {self.expr(op.rhs)}", op)
        elif isinstance(op, vector.CreateMaskOp):
            _mask_width(op.mask_vector, op)  # printed where it is used
        elif isinstance(op, memref.LoadOp):
            self.declare(op.res, self.element(op.memref, op.indices, op), op)
        elif isinstance(op, memref.StoreOp):
            self.emit(f"{self.element(op.memref, op.indices, op)} = {self.expr(op.value)};")
        elif isinstance(op, vector.LoadOp):
            self.load(op, in_loop)
        elif isinstance(op, vector.MaskedLoadOp):
            self.masked_load(op, in_loop)
        elif isinstance(op, vector.StoreOp):
            self.store(op)
        elif isinstance(op, vector.MaskedStoreOp):
            self.masked_store(op)
        elif isinstance(op, vector.BroadcastOp):
            self.broadcast(op, in_loop)
        elif isinstance(op, vector.FMAOp):
            if not _is_f32(_vector_elt(op.res.type)):
                raise _not_printable(op, "vector.fma prints for f32 only")
            self.assign(
                op.res, f"{self.expr(op.lhs)} * {self.expr(op.rhs)} + {self.expr(op.acc)}", op
            )
        elif isinstance(op, DotAccOp):
            self.dot_acc(op)
        elif isinstance(op, scf.ForOp):
            self.loop(op)
        elif isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            if callee not in self.p.c_names or op.results:
                raise _not_printable(op, f"@{callee} is no printed function without results")
            args = ", ".join(self.expr(a) for a in op.arguments)
            self.emit(f"{self.p.c_names[callee]}({args});")
        elif isinstance(op, memref.AllocOp):
            ty = op.memref.type
            assert isinstance(ty, MemRefType)
            if op.dynamic_sizes or any(d < 0 for d in ty.get_shape()):
                raise _not_printable(op, "only static allocations print")
            elt = c_scalar(ty.get_element_type())
            count = 1
            for d in ty.get_shape():
                count *= d
            size = -(-count * _elt_bytes(ty.get_element_type()) // 64) * 64
            self.emit(f"{elt} *{self.name(op.memref)} = aligned_alloc(64, {max(size, 64)});")
        elif isinstance(op, memref.DeallocOp):
            self.emit(f"free({self.expr(op.memref)});")
        else:
            raise _not_printable(op)

    # -- scalars and constants -----------------------------------------------
    def declare(self, v: SSAValue, value: str, where: Operation) -> None:
        ty = self.c_type(v.type, where)
        self.emit(f"{ty} {self.name(v)} = {value};")

    def assign(self, v: SSAValue, value: str, where: Operation) -> None:
        """Define v, or update the loop-carried variable it is yielded into."""
        target = self.p.folded.get(v)
        if target is not None:
            self.emit(f"{self.name(target)} = {value};")
            self.names[v] = self.name(target)
        else:
            self.declare(v, value, where)

    def c_type(self, t: Attribute, where: Operation) -> str:
        if isinstance(t, VectorType):
            return self.p.types.vector(t, where)
        try:
            return c_scalar(t)
        except ValueError:
            raise _not_printable(where, f"no C type for {t}") from None

    def constant(self, op: arith.ConstantOp) -> None:
        value = op.value
        if isinstance(value, IntegerAttr):
            self.inline[op.result] = str(value.value.data)
        elif isinstance(value, FloatAttr):
            self.inline[op.result] = f"{float(value.value.data)!r}f"
        elif isinstance(value, DenseIntOrFPElementsAttr) and isinstance(op.result.type, VectorType):
            values = set(cast(tuple[float, ...], value.get_values()))
            ty = op.result.type
            ctype = self.p.types.vector(ty, op)
            if len(values) != 1:
                raise _not_printable(op, "only splat vector constants print")
            x = cast(float, next(iter(values)))
            if _is_f32(ty.get_element_type()):
                lanes = ty.get_shape()[0]
                self.inline[op.result] = f"(({ctype}){{{', '.join([f'{float(x)!r}f'] * lanes)}}})"
            elif _int_width(ty.get_element_type()) == 32:
                prefix, si, _ = _SI[4 * ty.get_shape()[0]]
                self.inline[op.result] = (
                    f"{prefix}_setzero_{si}()" if x == 0 else f"{prefix}_set1_epi32({int(x)})"
                )
            else:
                self.inline[op.result] = (
                    "_mm_setzero_si128()" if x == 0 else f"_mm_set1_epi8({int(x)})"
                )
        else:
            raise _not_printable(op, f"the constant {value} has no C form")

    # -- vectors ---------------------------------------------------------------
    def keep(self, v: SSAValue, in_loop: bool) -> None:
        ty = v.type
        if in_loop and isinstance(ty, VectorType) and _is_f32(ty.get_element_type()):
            nbytes = 4 * ty.get_shape()[0]
            self.p.types.keep_bytes.add(nbytes)
            self.emit(f"KEEP{nbytes}({self.name(v)});")

    def load(self, op: vector.LoadOp, in_loop: bool) -> None:
        ty = op.result.type
        assert isinstance(ty, VectorType)
        ptr = "&" + self.element(op.base, op.indices, op)
        elt = ty.get_element_type()
        lanes = ty.get_shape()[0]
        ctype = self.p.types.vector(ty, op)
        if _is_f32(elt):
            self.declare(op.result, f"*(const {ctype}u *)({ptr})", op)
            self.keep(op.result, in_loop)
        elif _int_width(elt) == 32:
            self.declare(op.result, _i32_load(ptr, lanes), op)
        else:
            self.declare(op.result, _i8_load(self.p.types, ptr, lanes), op)

    def masked_load(self, op: vector.MaskedLoadOp, in_loop: bool) -> None:
        ty = op.result.type
        assert isinstance(ty, VectorType)
        if not _zero_constant(op.pass_thru):
            raise _not_printable(op, "only masked loads that pass zeros through print")
        width = _mask_width(op.mask, op)
        ptr = "&" + self.element(op.base, op.indices, op)
        elt = ty.get_element_type()
        lanes = ty.get_shape()[0]
        ctype = self.p.types.vector(ty, op)
        name = self.name(op.result)
        if _int_width(elt) == 8:
            self.p.types.partial_i8 = True
            self.declare(op.result, f"tigris_load_i8({ptr}, {width})", op)
            return
        ebytes = _elt_bytes(elt)
        cel = c_scalar(elt)
        self.emit(f"{ctype} {name};")
        load = (
            f"{name} = *(const {ctype}u *)t_;"
            if _is_f32(elt)
            else f"{name} = {_i32_load('t_', lanes)};"
        )
        self.emit(
            f"{{ {cel} t_[{max(lanes, 16 // ebytes)}] __attribute__((aligned(64))) = {{0}}; "
            f"memcpy(t_, {ptr}, {width * ebytes}); {load} }}"
        )
        self.keep(op.result, in_loop)

    def store(self, op: vector.StoreOp) -> None:
        ty = op.vector.type
        assert isinstance(ty, VectorType)
        ptr = "&" + self.element(op.base, op.indices, op)
        ctype = self.p.types.vector(ty, op)
        value = self.expr(op.vector)
        elt = ty.get_element_type()
        if _is_f32(elt):
            self.emit(f"*({ctype}u *)({ptr}) = {value};")
        elif _int_width(elt) == 32:
            self.emit(_i32_store(ptr, value, ty.get_shape()[0]))
        else:
            raise _not_printable(op, "i8 vector stores do not print")

    def masked_store(self, op: vector.MaskedStoreOp) -> None:
        ty = op.value_to_store.type
        assert isinstance(ty, VectorType)
        width = _mask_width(op.mask, op)
        ptr = "&" + self.element(op.base, op.indices, op)
        ctype = self.p.types.vector(ty, op)
        elt = ty.get_element_type()
        lanes = ty.get_shape()[0]
        value = self.expr(op.value_to_store)
        if _is_f32(elt):
            put = f"*({ctype}u *)t_ = {value};"
        elif _int_width(elt) == 32:
            put = _i32_store("t_", value, lanes)
        else:
            raise _not_printable(op, "i8 vector stores do not print")
        self.emit(
            f"{{ {c_scalar(elt)} t_[{lanes}] __attribute__((aligned(64))); {put} "
            f"memcpy({ptr}, t_, {width * _elt_bytes(elt)}); }}"
        )

    def broadcast(self, op: vector.BroadcastOp, in_loop: bool) -> None:
        ty = op.vector.type
        assert isinstance(ty, VectorType)
        ctype = self.p.types.vector(ty, op)
        x = self.expr(op.source)
        elt = ty.get_element_type()
        lanes = ty.get_shape()[0]
        if _is_f32(elt):
            # a brace list of one value is a broadcast load (no zero register, no add)
            self.declare(op.vector, f"(({ctype}){{{', '.join([x] * lanes)}}})", op)
            self.keep(op.vector, in_loop)
        elif _int_width(elt) == 32:
            self.declare(op.vector, f"{_SI[4 * lanes][0]}_set1_epi32({x})", op)
        else:
            raise _not_printable(op, "i8 broadcasts do not print")

    def dot_acc(self, op: DotAccOp) -> None:
        """pmaddwd (or VNNI vpdpwssd) on int16 pairs of k: exact int8 products."""
        acc_ty = op.acc.type
        assert isinstance(acc_ty, VectorType)
        lanes = acc_ty.get_shape()[0]
        if self.target.arch != "x86_64":
            raise _not_printable(op, f"int8 products print for x86 only, not {self.target.name}")
        if lanes not in (2, 4, 8, 16) or len(op.b) > 2:
            raise _not_printable(op, "int8 products print for 2 to 16 lanes in k pairs")
        self.p.types.vector(acc_ty, op)
        prefix = _SI[4 * lanes][0]
        rows = [self.expr(b) for b in op.b]
        key_b = ("b", *rows)
        if key_b not in self.memo:
            second = rows[1] if len(rows) > 1 else "_mm_setzero_si128()"
            lo = f"_mm_unpacklo_epi8({rows[0]}, {second})"
            if lanes <= 4:
                wide = f"_mm_cvtepi8_epi16({lo})"
            elif lanes == 8:
                wide = f"_mm256_cvtepi8_epi16({lo})"
            else:
                hi = f"_mm_unpackhi_epi8({rows[0]}, {second})"
                wide = (
                    f"_mm512_cvtepi8_epi16(_mm256_inserti128_si256("
                    f"_mm256_castsi128_si256({lo}), {hi}, 1))"
                )
            name = self.fresh("w" + "_".join(rows))
            self.emit(f"{_SI[4 * lanes][2]} {name} = {wide};")
            self.p.types.keep_bytes.add(4 * lanes)
            self.emit(f"KEEP{4 * lanes}({name});")
            self.memo[key_b] = name
        a = self.expr(op.a)
        key_a = ("a", a, lanes)
        if key_a not in self.memo:
            name = self.fresh(f"{a}w")
            word = f"_mm_cvtsi128_si32(_mm_cvtepi8_epi16({a}))"
            self.emit(f"{_SI[4 * lanes][2]} {name} = {prefix}_set1_epi32({word});")
            self.emit(f"KEEP{4 * lanes}({name});")
            self.memo[key_a] = name
        bw, aw, acc = self.memo[key_b], self.memo[key_a], self.expr(op.acc)
        if self.target.vnni:
            value = f"{prefix}_dpwssd_epi32({acc}, {aw}, {bw})"
        else:
            value = f"{prefix}_add_epi32({acc}, {prefix}_madd_epi16({aw}, {bw}))"
        self.assign(op.result, value, op)

    # -- loops ---------------------------------------------------------------
    def loop(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv = body.args[0]
        carried = list(body.args[1:])
        for res, arg, init in zip(op.results, carried, op.iter_args, strict=True):
            name = self.name(res)
            self.names[arg] = name
            ctype = self.c_type(res.type, op)
            self.emit(f"{ctype} {name} = {self.expr(init)};")
        lb, ub, step = self.expr(op.lb), self.expr(op.ub), self.expr(op.step)
        var = self.name(iv)
        if carried:
            self.emit("#pragma GCC unroll 2")
        self.emit(f"for (ptrdiff_t {var} = {lb}; {var} < {ub}; {var} += {step}) {{")
        self.depth += 1
        saved = self.memo
        self.memo = {}
        self.block(body, in_loop=bool(carried))
        self.memo = saved
        yield_op = body.last_op
        assert isinstance(yield_op, scf.YieldOp)
        pending = [
            (i, v)
            for i, v in enumerate(yield_op.operands)
            if self.p.folded.get(v) is not op.results[i] and v is not carried[i]
        ]
        hazard = any(v in carried for _, v in pending)
        if hazard:
            temps = []
            for i, v in pending:
                t = self.fresh("t")
                self.emit(f"{self.c_type(v.type, op)} {t} = {self.expr(v)};")
                temps.append((i, t))
            for i, t in temps:
                self.emit(f"{self.name(op.results[i])} = {t};")
        else:
            for i, v in pending:
                self.emit(f"{self.name(op.results[i])} = {self.expr(v)};")
        self.depth -= 1
        self.emit("}")


def _vector_elt(t: Attribute) -> Attribute:
    assert isinstance(t, VectorType)
    return t.get_element_type()


def _elt_bytes(t: Attribute) -> int:
    if isinstance(t, Float32Type):
        return 4
    width = _int_width(t)
    if width is None:
        raise ValueError(f"no byte width for {t}")
    return max(1, width // 8)


def _linear(flat: str, extent: int, term: str) -> str:
    """flat * extent + term, folding integer literals."""
    if flat.isdigit() and term.isdigit():
        return str(int(flat) * extent + int(term))
    if flat == "0":
        return term
    scaled = str(int(flat) * extent) if flat.isdigit() else f"{_paren(flat)} * {extent}"
    return scaled if term == "0" else f"{scaled} + {_paren(term)}"


def _wrapped(e: str) -> bool:
    """Whether e is one parenthesised expression: its first '(' closes at the end."""
    if not e.startswith("("):
        return False
    depth = 0
    for pos, ch in enumerate(e):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return pos == len(e) - 1
    return False


def _paren(e: str) -> str:
    return e if re.fullmatch(r"[\w.]+", e) or _wrapped(e) else f"({e})"


def _i8_load(types: _Types, ptr: str, lanes: int) -> str:
    if lanes == 16:
        return f"_mm_loadu_si128((const __m128i *)({ptr}))"
    if lanes == 8:
        return f"_mm_loadl_epi64((const __m128i *)({ptr}))"
    types.partial_i8 = True
    return f"tigris_load_i8({ptr}, {lanes})"


def _folded(fn: func.FuncOp) -> dict[SSAValue, SSAValue]:
    """Values computed straight into a loop-carried variable.

    A value whose only use is the yield at position p, computed from the loop's
    p-th iter_arg as that argument's only use, updates the variable in place:
    `r0c0 = s0 * b0 + r0c0;` -- the named accumulator, no copy.
    """
    out: dict[SSAValue, SSAValue] = {}
    for op in fn.walk():
        if not isinstance(op, scf.ForOp):
            continue
        body = op.body.block
        yield_op = body.last_op
        if not isinstance(yield_op, scf.YieldOp):
            continue
        for p, v in enumerate(yield_op.operands):
            arg = body.args[1 + p]
            owner = v.owner
            if (
                isinstance(owner, Operation)
                and owner.parent_block() is body
                and v.has_one_use()
                and arg.has_one_use()
                and next(iter(arg.uses)).operation is owner
            ):
                out[v] = op.results[p]
    return out


@dataclass
class CPrinter:
    """Prints a module of loop-level functions as one C translation unit."""

    module: ModuleOp
    isa: str = ""
    """A target preset overriding every kernel's `rtile.target` (empty: keep them)."""
    types: _Types = field(default_factory=_Types)
    c_names: dict[str, str] = field(default_factory=dict[str, str])
    folded: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    _written: dict[str, set[int]] = field(default_factory=dict[str, set[int]])

    def functions(self) -> list[func.FuncOp]:
        fns: list[func.FuncOp] = []
        for op in self.module.ops:
            if not isinstance(op, func.FuncOp):
                raise _not_printable(op, "only func.func prints at module level")
            fns.append(op)
        return fns

    def is_private(self, fn: func.FuncOp) -> bool:
        vis = fn.sym_visibility
        return vis is not None and vis.data == "private" and not fn.is_declaration

    def target_of(self, fn: func.FuncOp) -> tg.Target:
        name = self.isa
        if not name:
            attr = fn.attributes.get(TARGET)
            name = attr.data if isinstance(attr, StringAttr) else "host"
        try:
            return tg.get_target(name)
        except ValueError as e:
            raise CEmitError(f"C target: @{fn.sym_name.data}: {e}") from None

    def written_args(self, fn: func.FuncOp) -> set[int]:
        """Argument positions a function writes, directly or through its callees."""
        name = fn.sym_name.data
        if name in self._written:
            return self._written[name]
        self._written[name] = set()  # recursion: assume nothing more
        if fn.is_declaration:
            self._written[name] = set(range(len(fn.function_type.inputs.data)))
            return self._written[name]
        args: list[SSAValue] = list(fn.body.block.args)
        out: set[int] = set()
        fns = {f.sym_name.data: f for f in self.functions()}
        for op in fn.walk():
            targets: list[SSAValue] = []
            if isinstance(op, memref.StoreOp):
                targets = [op.memref]
            elif isinstance(op, vector.StoreOp | vector.MaskedStoreOp):
                targets = [op.base]
            elif isinstance(op, func.CallOp):
                callee = fns.get(op.callee.root_reference.data)
                positions = (
                    self.written_args(callee)
                    if callee is not None
                    else set(range(len(op.arguments)))
                )
                targets = [op.arguments[i] for i in positions]
            out |= {args.index(t) for t in targets if t in args}
        self._written[name] = out
        return out

    def check(self) -> None:
        """Fail on the first op that has no C form, graph ops not yet lowered first.

        A graph op (`nn`, a tensor-level `rtile.gebp`) is the cause whenever a
        function is not loop-level, so it is named before the bufferization
        casts that bridge it.
        """
        ops = [op for op in self.module.walk() if not isinstance(op, ModuleOp | func.FuncOp)]
        for op in ops:
            if op.name.startswith(("nn.", "rtile.")) and not isinstance(op, DotAccOp):
                raise _not_printable(op)
        for op in ops:
            if not isinstance(op, _PRINTED):
                raise _not_printable(op)

    def print(self) -> str:
        self.check()
        fns = self.functions()
        for fn in fns:
            self.c_names[fn.sym_name.data] = _ident(fn.sym_name.data)
            self.folded |= _folded(fn)
        protos: list[str] = []
        bodies: list[str] = []
        for fn in fns:
            pf = _Function(self, fn)
            sig = pf.signature()
            protos.append(sig + ";")
            if fn.is_declaration:
                continue
            lines = pf.body()
            comment = _kernel_comment(fn, pf.target)
            bodies.append("\n".join([*comment, sig, "{", *lines, "}"]))
        head = self.header()
        return "\n".join([*head, *protos, "", "\n\n".join(bodies), ""])

    def header(self) -> list[str]:
        t = self.types
        out = [
            "/* The TiGrIS-IR C target: loop-level IR (lower-gebp kernels) as C. */",
            "#include <stddef.h>",
            "#include <stdint.h>",
            "#include <stdlib.h>",
            "#include <string.h>",
        ]
        if t.intrinsics:
            out.append("#include <immintrin.h>")
        for lanes in sorted(t.f32_lanes):
            size = 4 * lanes
            out.append(f"typedef float vf{lanes} __attribute__((vector_size({size})));")
            out.append(
                f"typedef float vf{lanes}u __attribute__((vector_size({size}), aligned(4), "
                "may_alias));"
            )
        for nbytes in sorted(t.keep_bytes):
            out.append(_keep_macro(nbytes))
        if t.partial_i8:
            out.append(
                "static inline __m128i tigris_load_i8(const int8_t *p, size_t n)\n"
                "{\n"
                "  if (n <= 4) {\n"
                "    uint32_t w = 0;\n"
                "    memcpy(&w, p, n);\n"
                "    return _mm_cvtsi32_si128((int)w);\n"
                "  }\n"
                "  int8_t t_[16] __attribute__((aligned(16))) = {0};\n"
                "  memcpy(t_, p, n);\n"
                "  return _mm_load_si128((const __m128i *)t_);\n"
                "}"
            )
        return out


def _kernel_comment(fn: func.FuncOp, target: tg.Target) -> list[str]:
    geom = fn.attributes.get(GEOM)
    if geom is None:
        return []
    cover = fn.attributes.get(COVER)
    flags = " ".join(target.cflags())
    return [f"/* {geom} {cover or ''} for {target.name}: gcc -O3 {flags} */"]


def _keep_macro(nbytes: int) -> str:
    """KEEP<n>(x): an empty asm pinning an n-byte vector in a register.

    Only where the compiler has registers of that width; elsewhere gcc splits
    the vector type and the constraint could not be met, so the same source
    still compiles (and stays correct) with narrower ISA flags.
    """
    isa = {8: "__SSE__", 16: "__SSE__", 32: "__AVX__", 64: "__AVX512F__"}.get(
        nbytes, "__TIGRIS_NO_SUCH_ISA__"
    )
    arm = "1" if nbytes <= 16 else "0"
    return (
        f"#if (defined(__x86_64__) || defined(__i386__)) && defined({isa})\n"
        f'#define KEEP{nbytes}(x) __asm__("" : "+v"(x))\n'
        f"#elif defined(__aarch64__) && {arm}\n"
        f'#define KEEP{nbytes}(x) __asm__("" : "+w"(x))\n'
        "#else\n"
        f"#define KEEP{nbytes}(x) ((void)0)\n"
        "#endif"
    )


_PRINTED = (
    arith.ConstantOp,
    arith.AddiOp,
    arith.MuliOp,
    arith.MulfOp,
    scf.ForOp,
    scf.YieldOp,
    func.CallOp,
    func.ReturnOp,
    memref.AllocOp,
    memref.DeallocOp,
    memref.LoadOp,
    memref.StoreOp,
    vector.LoadOp,
    vector.StoreOp,
    vector.MaskedLoadOp,
    vector.MaskedStoreOp,
    vector.CreateMaskOp,
    vector.BroadcastOp,
    vector.FMAOp,
    DotAccOp,
)


def print_c(module: ModuleOp, isa: str = "") -> str:
    """The C translation unit of a module of loop-level functions."""
    return CPrinter(module, isa).print()


@dataclass(frozen=True)
class CTarget(Target):
    """Print loop-level IR (after lower-gebp) as C with GCC vector extensions;
    a planned network (after plan-arena) as one C unit (`c_net`).

    `isa` names a target preset for every kernel instead of its `rtile.target`
    (`-t c{isa=avx512-vnni}`).
    """

    name = "c"

    isa: str = ""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if holds_plan(module):
            output.write(network_source(module).c)
            return
        output.write(print_c(module, self.isa))


def holds_plan(module: ModuleOp) -> bool:
    """Whether the module is a loop-level plan (a function with `loop.plan`):
    the `c` target prints it as a whole network (`c_net`)."""
    return any(isinstance(op, func.FuncOp) and PLAN_ATTR in op.attributes for op in module.ops)


def network_source(module: ModuleOp, name: str = "tigris") -> CSource:
    """The network's C unit and header (`c_net.print_network`)."""
    from tigris_ir.backend.c.network import print_network

    return print_network(module, name=name)
