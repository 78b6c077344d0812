"""`lower-gebp`: register-tiled matrix products to their kernels.

On a loop-level plan (after `lower-to-loops`), every matrix-product band whose
op carries a geometry gets its kernel decisions as `#rtile.kernel<...>`
(`tigris_ir.rtile.kernel.plan`): the multiply-accumulate instruction of its
target, the packed contraction, the K block and the rows packed or gathered
per call; the C printer prints exactly those. The tensor-level functions of
such a module (the untiled reference) are left alone.

On tensor-level functions (no plan), sites become scf/vector loop kernels:

Each site carrying `rtile.geom` becomes a call of a kernel `func.func` on
memrefs whose loops are exactly `register_tile.cover`'s decomposition: an
`scf.for` nest over the full rm x (rn * lanes) passes, the column tail as a
narrower tile whose last vector may be partial (`vector.maskedload` of zeros
past its width, `vector.maskedstore` of its width only), and the row band as a
tile of the leftover rows. Nothing is peeled to scalar code: every output
element is one serial k-chain.

Covered:

* float32 `nn.gemm` (trans_a = trans_b = 0, alpha = 1, any beta, C of any shape
  that broadcasts to the result) and 2D `nn.matmul`: `vector.fma` on
  `vector.broadcast` A splats and `vector.load` B rows, accumulators in
  `scf.for` iter_args;
* `rtile.gebp` on f32 (as above) and on i8 x i8 -> i32: k steps in pairs by
  `rtile.dot_acc` (the int16 pairs of pmaddwd / vpdpwssd), an odd last k step
  alone, exact.

Not covered (left at tensor level with a warning): quantized `nn.gemm` and
`nn.matmul` (zero points and requantization have no loop lowering yet),
transposed or alpha-scaled gemms, and convolution sites (`gebp-tile` gives
them geometries; their im2col lowering does not exist yet).

A function whose body is only covered sites becomes a memref function in
destination-passing style (results appended as out-parameters); elsewhere a
site is bridged by `bufferization.to_buffer` / `to_tensor` around the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    VectorType,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import CoverAttr, DotAccOp, GebpOp, GeomAttr
from tigris_ir.passes.gebp_tile import COVER, GEOM, TARGET, describe, warn
from tigris_ir.rtile import decide
from tigris_ir.rtile import model as rt

Dtype = Literal["float32", "int8"]


@dataclass(frozen=True)
class KernelSpec:
    """Everything a kernel's code depends on; equal specs share one kernel."""

    m: int
    n: int
    k: int
    dtype: Dtype
    geom: rt.Geometry
    c_shape: tuple[int, ...] | None = None
    """Shape of the addend C (broadcast to m x n), None for a plain product."""
    beta: float = 1.0
    target: str = "host"

    @property
    def cover(self) -> rt.Cover:
        return rt.cover(self.geom, self.m, self.n)

    def base_name(self) -> str:
        g = self.geom
        dt = "f32" if self.dtype == "float32" else "i8"
        name = f"gebp_{self.m}x{self.n}x{self.k}_{dt}_rm{g.rm}rn{g.rn}l{g.lanes}"
        if self.c_shape is not None:
            name += "_c" + ("x".join(map(str, self.c_shape)) or "0d")
        if self.beta != 1.0:
            name += "_beta"
        return name


# ------------------------------------------------------------------ types


def _elt(dtype: Dtype) -> Attribute:
    return f32 if dtype == "float32" else i8


def _acc_elt(dtype: Dtype) -> Attribute:
    return f32 if dtype == "float32" else i32


def kernel_arg_types(spec: KernelSpec) -> list[MemRefType]:
    """A, B, [C,] Y as memrefs: the kernel's signature."""
    m, n, k = spec.m, spec.n, spec.k
    types = [MemRefType(_elt(spec.dtype), [m, k]), MemRefType(_elt(spec.dtype), [k, n])]
    if spec.c_shape is not None:
        types.append(MemRefType(_acc_elt(spec.dtype), list(spec.c_shape)))
    types.append(MemRefType(_acc_elt(spec.dtype), [m, n]))
    return types


# ---------------------------------------------------------------- builder


class _Kernel:
    """Builds one kernel function, op by op, into the current block."""

    def __init__(self, spec: KernelSpec, name: str):
        self.spec = spec
        self.g = spec.geom
        self.lanes = spec.geom.lanes
        self.entry = Block(arg_types=kernel_arg_types(spec))
        args = list(self.entry.args)
        names = ["A", "B", *(["C"] if spec.c_shape is not None else []), "Y"]
        for arg, hint in zip(args, names, strict=True):
            arg.name_hint = hint
        self.a, self.b = args[0], args[1]
        self.c = args[2] if spec.c_shape is not None else None
        self.y = args[-1]
        self.consts: dict[int, SSAValue] = {}
        self.block = self.entry
        self.acc_type = VectorType(_acc_elt(spec.dtype), [self.lanes])
        self.name = name
        # per tile: masks and zeros made once before its loops, C rows read once
        self.masks: dict[int, SSAValue] = {}
        self.pads: dict[str, SSAValue] = {}
        self.inits: dict[tuple[SSAValue | int, ...], SSAValue] = {}

    # -- emission helpers ------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def index(self, value: int) -> SSAValue:
        """An index constant, created once at the top of the function."""
        if value not in self.consts:
            op = arith.ConstantOp.from_int_and_width(value, IndexType())
            op.result.name_hint = f"c{value}"
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
            self.consts[value] = op.result
        return self.consts[value]

    def add(self, base: SSAValue, offset: int, hint: str) -> SSAValue:
        if offset == 0:
            return base
        op = self.emit(arith.AddiOp(base, self.index(offset)))
        op.results[0].name_hint = hint
        return op.results[0]

    def loop(
        self,
        lb: int,
        ub: int,
        step: int,
        inits: Sequence[SSAValue],
        hint: str,
        iter_hints: Sequence[str] = (),
    ) -> tuple[scf.ForOp, Block]:
        body = Block(arg_types=[IndexType(), *(v.type for v in inits)])
        body.args[0].name_hint = hint
        for arg, h in zip(body.args[1:], iter_hints, strict=False):
            arg.name_hint = h
        op = scf.ForOp(self.index(lb), self.index(ub), self.index(step), inits, body)
        self.emit(op)
        for res, h in zip(op.results, iter_hints, strict=False):
            res.name_hint = h
        return op, body

    def mask(self, width: int) -> SSAValue:
        """The mask of a partial vector's first `width` lanes (one per tile)."""
        if width not in self.masks:
            op = vector.CreateMaskOp([self.index(width)], VectorType(i1, [self.lanes]))
            op.results[0].name_hint = f"mask{width}"
            self.masks[width] = self.emit(op).results[0]
        return self.masks[width]

    def pad(self, elt: Attribute) -> SSAValue:
        """Zeros of one element type (one per tile): partial loads, zero accumulators."""
        key = str(elt)
        if key not in self.pads:
            ty = VectorType(elt, [self.lanes])
            value = 0.0 if isinstance(elt, Float32Type) else 0
            op = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(cast(Any, ty), [value]))
            op.results[0].name_hint = "zero"
            self.pads[key] = self.emit(op).results[0]
        return self.pads[key]

    def load_vector(
        self, ref: SSAValue, idx: Sequence[SSAValue], width: int, hint: str
    ) -> SSAValue:
        """A vector of `lanes` elements; a partial one reads zeros past `width`."""
        ty = VectorType(_memref_elt(ref), [self.lanes])
        if width == self.lanes:
            op = self.emit(vector.LoadOp(ref, idx, ty))
        else:
            pad = self.pad(_memref_elt(ref))
            op = self.emit(vector.MaskedLoadOp(ref, idx, self.mask(width), pad, ty))
        op.results[0].name_hint = hint
        return op.results[0]

    def store_vector(
        self, value: SSAValue, ref: SSAValue, idx: Sequence[SSAValue], width: int
    ) -> None:
        if width == self.lanes:
            self.emit(vector.StoreOp(value, ref, idx))
        else:
            self.emit(vector.MaskedStoreOp(ref, idx, self.mask(width), value))

    # -- the cover ------------------------------------------------------------
    def build(self) -> func.FuncOp:
        spec, g, cv = self.spec, self.g, self.spec.cover
        tail = cv.tail_widths
        full = (self.lanes,) * g.rn
        cols = rt.columns(g)
        if cv.m_full and cv.n_full:
            _, jb = self.loop(0, cv.n_full, cols, [], "j0")
            with self.inside(jb):
                _, ib = self.loop(0, cv.m_full, g.rm, [], "i0")
                with self.inside(ib):
                    self.tile(g.rm, full, ib.args[0], jb.args[0])
        if cv.m_full and tail:
            _, ib = self.loop(0, cv.m_full, g.rm, [], "i0")
            with self.inside(ib):
                self.tile(g.rm, tail, ib.args[0], self.index(cv.n_full))
        if cv.band_rows and cv.n_full:
            _, jb = self.loop(0, cv.n_full, cols, [], "j0")
            with self.inside(jb):
                self.tile(cv.band_rows, full, self.index(cv.m_full), jb.args[0])
        if cv.band_rows and tail:
            self.tile(cv.band_rows, tail, self.index(cv.m_full), self.index(cv.n_full))
        self.emit(func.ReturnOp())
        for value in sorted(self.consts, reverse=True):  # constants in ascending order
            op = self.consts[value].owner
            first = self.entry.first_op
            assert isinstance(op, Operation) and first is not None
            if op is not first:
                op.detach()
                self.entry.insert_op_before(op, first)
        fn = func.FuncOp(
            self.name,
            FunctionType.from_lists([a.type for a in self.entry.args], []),
            Region(self.entry),
            "private",
        )
        fn.attributes[GEOM] = GeomAttr.from_geometry(g)
        fn.attributes[COVER] = CoverAttr.from_cover(cv)
        fn.attributes[TARGET] = StringAttr(spec.target)
        return fn

    def inside(self, block: Block) -> _Inside:
        return _Inside(self, block)

    def tile(self, rows: int, widths: tuple[int, ...], i: SSAValue, j: SSAValue) -> None:
        """One rows x len(widths) register tile at (i, j): init, k chain, store."""
        lanes = self.lanes
        vecs = len(widths)
        irow = [self.add(i, r, f"i{r}") for r in range(rows)]
        jcol = [self.add(j, v * lanes, f"j{v}") for v in range(vecs)]
        self.masks, self.pads, self.inits = {}, {}, {}
        for w in sorted(set(widths)):
            if w < lanes:
                self.mask(w)
                self.pad(_elt(self.spec.dtype))
        inits = [
            self.init(irow[r], jcol[v], widths[v], r, v) for r in range(rows) for v in range(vecs)
        ]
        hints = [f"r{r}c{v}" for r in range(rows) for v in range(vecs)]
        accs = self.k_chain(rows, widths, irow, jcol, inits, hints)
        for r in range(rows):
            for v in range(vecs):
                self.store_vector(accs[r * vecs + v], self.y, [irow[r], jcol[v]], widths[v])

    def init(self, i: SSAValue, j: SSAValue, width: int, r: int, v: int) -> SSAValue:
        """The accumulator's start: zeros, or beta * C broadcast to the tile."""
        spec = self.spec
        elt = _acc_elt(spec.dtype)
        if self.c is None or spec.c_shape is None:
            return self.pad(elt)
        # numpy broadcasting: an axis of extent 1 is read at 0, the last one is j
        shape = spec.c_shape
        idx = [
            self.index(0) if extent == 1 else (j if axis == len(shape) - 1 else i)
            for axis, extent in enumerate(shape)
        ]
        key = (*idx, width)
        if key in self.inits:  # a row (or scalar) of C starts every row alike
            return self.inits[key]
        if shape and shape[-1] != 1:
            value = self.load_vector(self.c, idx, width, f"cin{r}c{v}")
        else:
            scalar = self.emit(memref.LoadOp.get(self.c, idx)).results[0]
            op = self.emit(vector.BroadcastOp(scalar, self.acc_type))
            value = op.results[0]
        if spec.beta != 1.0:
            beta = arith.ConstantOp(
                DenseIntOrFPElementsAttr.from_list(cast(Any, self.acc_type), [spec.beta])
            )
            self.emit(beta)
            value = self.emit(arith.MulfOp(value, beta.result)).results[0]
        self.inits[key] = value
        return value

    def k_chain(
        self,
        rows: int,
        widths: tuple[int, ...],
        irow: list[SSAValue],
        jcol: list[SSAValue],
        inits: list[SSAValue],
        hints: list[str],
    ) -> list[SSAValue]:
        """The k loop: hold the smaller operand set, stream the other (resident_floor)."""
        if self.spec.dtype == "float32":
            loop, body = self.loop(0, self.spec.k, 1, inits, "k", hints)
            with self.inside(body):
                self.emit(scf.YieldOp(*self.f32_step(rows, widths, irow, jcol, body)))
            return list(loop.results)
        pairs = self.spec.k - self.spec.k % 2
        accs: list[SSAValue] = list(inits)
        if pairs:
            loop, body = self.loop(0, pairs, 2, inits, "k", hints)
            with self.inside(body):
                ks = [body.args[0], self.add(body.args[0], 1, "k1")]
                new = self.i8_step(rows, widths, irow, jcol, list(body.args[1:]), ks)
                self.emit(scf.YieldOp(*new))
            accs = list(loop.results)
        if self.spec.k % 2:
            ks = [self.index(self.spec.k - 1)]
            accs = self.i8_step(rows, widths, irow, jcol, accs, ks)
        return accs

    def f32_step(
        self,
        rows: int,
        widths: tuple[int, ...],
        irow: list[SSAValue],
        jcol: list[SSAValue],
        body: Block,
    ) -> list[SSAValue]:
        k, accs = body.args[0], list(body.args[1:])
        vecs = len(widths)
        out: list[SSAValue] = [accs[0]] * (rows * vecs)

        def b_row(v: int) -> SSAValue:
            return self.load_vector(self.b, [k, jcol[v]], widths[v], f"b{v}")

        def splat(r: int) -> SSAValue:
            a = self.emit(memref.LoadOp.get(self.a, [irow[r], k])).results[0]
            a.name_hint = f"a{r}"
            op = self.emit(vector.BroadcastOp(a, self.acc_type))
            op.results[0].name_hint = f"s{r}"
            return op.results[0]

        def fma(r: int, v: int, s: SSAValue, b: SSAValue) -> None:
            op = self.emit(vector.FMAOp(s, b, accs[r * vecs + v]))
            op.results[0].name_hint = f"r{r}c{v}"
            out[r * vecs + v] = op.results[0]

        if vecs <= rows:  # hold the B rows, stream one A splat at a time
            bs = [b_row(v) for v in range(vecs)]
            for r in range(rows):
                s = splat(r)
                for v in range(vecs):
                    fma(r, v, s, bs[v])
        else:  # hold the A splats, stream one B row at a time
            ss = [splat(r) for r in range(rows)]
            for v in range(vecs):
                b = b_row(v)
                for r in range(rows):
                    fma(r, v, ss[r], b)
        return out

    def i8_step(
        self,
        rows: int,
        widths: tuple[int, ...],
        irow: list[SSAValue],
        jcol: list[SSAValue],
        accs: list[SSAValue],
        ks: list[SSAValue],
    ) -> list[SSAValue]:
        vecs = len(widths)
        out: list[SSAValue] = list(accs)
        group = VectorType(i8, [len(ks)])

        def b_rows(v: int) -> list[SSAValue]:
            return [
                self.load_vector(self.b, [kk, jcol[v]], widths[v], f"b{v}_{q}")
                for q, kk in enumerate(ks)
            ]

        def a_group(r: int) -> SSAValue:
            op = self.emit(vector.LoadOp(self.a, [irow[r], ks[0]], group))
            op.results[0].name_hint = f"a{r}"
            return op.results[0]

        def dot(r: int, v: int, a: SSAValue, b: list[SSAValue]) -> None:
            op = self.emit(DotAccOp(accs[r * vecs + v], a, b))
            op.results[0].name_hint = f"r{r}c{v}"
            out[r * vecs + v] = op.results[0]

        if vecs <= rows:
            bs = [b_rows(v) for v in range(vecs)]
            for r in range(rows):
                a = a_group(r)
                for v in range(vecs):
                    dot(r, v, a, bs[v])
        else:
            as_ = [a_group(r) for r in range(rows)]
            for v in range(vecs):
                b = b_rows(v)
                for r in range(rows):
                    dot(r, v, as_[r], b)
        return out


class _Inside:
    """`with kernel.inside(block):` emits into a loop body, then back out."""

    def __init__(self, kernel: _Kernel, block: Block):
        self.kernel, self.block = kernel, block
        self.saved = kernel.block

    def __enter__(self) -> None:
        self.kernel.block = self.block

    def __exit__(self, *exc: object) -> None:
        if not isinstance(self.block.last_op, scf.YieldOp):
            self.block.add_op(scf.YieldOp())
        self.kernel.block = self.saved


def _memref_elt(ref: SSAValue) -> Attribute:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return ty.get_element_type()


def build_kernel(spec: KernelSpec, name: str | None = None) -> func.FuncOp:
    """The kernel function of a spec: `(A, B, [C,] Y)` on memrefs, Y written."""
    g = spec.geom
    if g.rm > spec.m or rt.columns(g) > spec.n:
        raise ValueError(f"{rt.show(g)} does not fit a {spec.m}x{spec.n} site")
    return _Kernel(spec, name or spec.base_name()).build()


# ------------------------------------------------------------- the sites


class NotCovered(Exception):
    """A register-tiled site this lowering does not handle (the message says why)."""


def _tensor(v: SSAValue) -> TensorType:
    ty = v.type
    assert isinstance(ty, TensorType)
    return ty


def _geometry(op: Operation) -> rt.Geometry | None:
    if isinstance(op, GebpOp):
        return op.geom.geometry
    attr = op.attributes.get(GEOM)
    return attr.geometry if isinstance(attr, GeomAttr) else None


def site_spec(op: Operation) -> KernelSpec | None:
    """The kernel a register-tiled op lowers to; None for ops without a geometry.

    Raises NotCovered for a register-tiled op of a form this lowering lacks.
    """
    g = _geometry(op)
    if g is None:
        return None
    target = op.attributes.get(TARGET)
    label = target.data if isinstance(target, StringAttr) else "host"
    if isinstance(op, GebpOp):
        m, k = _tensor(op.a).get_shape()
        n = _tensor(op.b).get_shape()[1]
        elt = _tensor(op.a).get_element_type()
        if isinstance(elt, Float32Type):
            return KernelSpec(m, n, k, "float32", g, target=label)
        if isinstance(elt, IntegerType) and elt.width.data == 8:
            return KernelSpec(m, n, k, "int8", g, target=label)
        raise NotCovered(f"rtile.gebp on {elt} is not lowered (f32 and i8 are)")
    if isinstance(op, nn.GemmOp | nn.MatMulOp):
        _check_float(op)
    if isinstance(op, nn.GemmOp):
        if op.int_("trans_a") or op.int_("trans_b"):
            raise NotCovered("a transposed gemm is not lowered (transpose B first)")
        if op.float_("alpha", 1.0) != 1.0:
            raise NotCovered("a gemm with alpha != 1 is not lowered")
        m, n, k = op.dims()
        spec = KernelSpec(m, n, k, "float32", g, nn.shape_of(op.c), op.float_("beta", 1.0), label)
    elif isinstance(op, nn.MatMulOp):
        sa, sb = nn.shape_of(op.a), nn.shape_of(op.b)
        if len(sa) != 2 or len(sb) != 2:
            raise NotCovered("only 2D matmuls are lowered")
        spec = KernelSpec(sa[0], sb[1], sa[1], "float32", g, target=label)
    elif isinstance(op, nn.ConvOp):
        raise NotCovered(
            "convolution sites are not lowered yet (lower-gebp lowers gemm and matmul)"
        )
    else:
        raise NotCovered(f"'{op.name}' has no GEBP lowering")
    _check_cover(op, spec)
    return spec


def _check_float(op: nn.GemmOp | nn.MatMulOp) -> None:
    if op.is_quantized() or any(nn.dtype_of(v) != "float32" for v in (*op.operands, *op.results)):
        raise NotCovered(
            "quantized products are not lowered yet (zero points and requantization "
            "have no loop lowering); rtile.gebp on i8 is"
        )


def _check_cover(op: Operation, spec: KernelSpec) -> None:
    g = spec.geom
    if g.rm > spec.m or rt.columns(g) > spec.n:
        raise PassFailedException(
            f"lower-gebp: {describe(op)}: {rt.show(g)} does not fit its "
            f"{spec.m}x{spec.n} site (rows-fit / columns-fit); rerun gebp-tile"
        )
    attr = op.attributes.get(COVER)
    if isinstance(attr, CoverAttr) and attr.cover != spec.cover:
        raise PassFailedException(
            f"lower-gebp: {describe(op)}: {COVER} {attr} does not match "
            f"{rt.show(g)} on {spec.m}x{spec.n}, expected "
            f"{CoverAttr.from_cover(spec.cover)}; rerun gebp-tile"
        )


def _memref_of(ty: Attribute) -> MemRefType:
    assert isinstance(ty, TensorType)
    if not isinstance(ty.encoding, NoneAttr):
        raise NotCovered(f"tensors with an encoding ({ty}) have no memref form")
    return MemRefType(ty.get_element_type(), ty.get_shape())


# -------------------------------------------------------------- the pass


@dataclass(frozen=True)
class LowerGebpPass(ModulePass):
    """Lower register-tiled gemm/matmul sites to scf.for/vector kernel functions.

    Run after gebp-tile. Covered: float32 nn.gemm (no transpose, alpha = 1) and
    2D nn.matmul, rtile.gebp on f32 and i8; other sites stay with a warning.
    """

    name = "lower-gebp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if decide.holds_plan(op):
            for site_op, site in decide.sites(op):
                decide.set_kernel(site_op, site)
            return
        lowering = _Lowering(op)
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            lowering.function(fn)
            # each new kernel follows the first function that calls it
            op.body.block.insert_ops_after(lowering.new, fn)
            lowering.new = []


class _Lowering:
    def __init__(self, module: ModuleOp):
        self.kernels: dict[KernelSpec, func.FuncOp] = {}
        self.taken = {f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp)}
        self.new: list[func.FuncOp] = []

    def kernel(self, spec: KernelSpec) -> func.FuncOp:
        if spec not in self.kernels:
            name, n = spec.base_name(), 1
            while name in self.taken:
                n += 1
                name = f"{spec.base_name()}_{n}"
            self.taken.add(name)
            self.kernels[spec] = build_kernel(spec, name)
            self.new.append(self.kernels[spec])
        return self.kernels[spec]

    def sites(self, fn: func.FuncOp) -> list[tuple[Operation, KernelSpec]]:
        found: list[tuple[Operation, KernelSpec]] = []
        for op in fn.walk():
            try:
                spec = site_spec(op)
            except NotCovered as e:
                warn("lower-gebp", op, f"left at tensor level: {e}")
                continue
            if spec is not None:
                found.append((op, spec))
        return found

    def function(self, fn: func.FuncOp) -> None:
        sites = self.sites(fn)
        if not sites:
            return
        if _whole(fn, [s for s, _ in sites]):
            self.destination_passing(fn, sites)
        else:
            for site, spec in sites:
                self.bridge(site, spec)

    def bridge(self, site: Operation, spec: KernelSpec) -> None:
        """Call the kernel from tensor-level IR through bufferization casts."""
        kernel = self.kernel(spec)
        block = site.parent_block()
        assert block is not None
        new: list[Operation] = []
        args: list[SSAValue] = []
        for v in site.operands[: 3 if spec.c_shape is not None else 2]:
            cast = bufferization.ToBufferOp.create(
                operands=[v],
                result_types=[_memref_of(v.type)],
                properties={"read_only": UnitAttr()},
            )
            new.append(cast)
            args.append(cast.results[0])
        out = memref.AllocOp([], [], _memref_of(site.results[0].type))
        new.append(out)
        call = func.CallOp(kernel.sym_name.data, [*args, out.memref], [])
        back = bufferization.ToTensorOp(out.memref, restrict=True, writable=True)
        back.results[0].name_hint = site.results[0].name_hint
        new += [call, back]
        block.insert_ops_before(new, site)
        site.results[0].replace_all_uses_with(back.results[0])
        site.detach()
        site.erase()

    def destination_passing(
        self, fn: func.FuncOp, sites: list[tuple[Operation, KernelSpec]]
    ) -> None:
        """Rewrite a function of sites only into memref form, results as out-params."""
        old = fn.body.block
        ret = old.last_op
        assert isinstance(ret, func.ReturnOp)
        returned = list(ret.operands)
        in_types = [_memref_of(a.type) for a in old.args]
        out_types = [_memref_of(v.type) for v in returned]
        block = Block(arg_types=[*in_types, *out_types])
        mapping: dict[SSAValue, SSAValue] = {}
        for new_arg, old_arg in zip(block.args, old.args):
            new_arg.name_hint = old_arg.name_hint
            mapping[old_arg] = new_arg
        outs = dict(zip(returned, block.args[len(in_types) :], strict=True))
        for value, arg in outs.items():
            arg.name_hint = value.name_hint
        allocs: list[SSAValue] = []
        for site, spec in sites:
            kernel = self.kernel(spec)
            n_in = 3 if spec.c_shape is not None else 2
            args = [mapping[v] for v in site.operands[:n_in]]
            result = site.results[0]
            if result in outs:
                dest = outs[result]
            else:
                alloc = memref.AllocOp([], [], _memref_of(result.type))
                alloc.memref.name_hint = result.name_hint
                block.add_op(alloc)
                dest = alloc.memref
                allocs.append(dest)
            block.add_op(func.CallOp(kernel.sym_name.data, [*args, dest], []))
            mapping[result] = dest
        for a in allocs:
            block.add_op(memref.DeallocOp.get(a))
        block.add_op(func.ReturnOp())
        for op in list(old.ops):
            op.detach()
            op.drop_all_references()
        fn.body.detach_block(old)
        fn.body.add_block(block)
        fn.function_type = FunctionType.from_lists([*in_types, *out_types], [])
        fn.arg_attrs = None
        fn.res_attrs = None


def _whole(fn: func.FuncOp, sites: list[Operation]) -> bool:
    """Whether fn is only covered sites on its arguments, returning distinct results."""
    if len(fn.body.blocks) != 1:
        return False
    block = fn.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        return False
    ops = list(block.ops)[:-1]
    if ops != sites:
        return False
    produced = {s.results[0] for s in sites}
    returned = list(ret.operands)
    if len(set(returned)) != len(returned) or not set(returned) <= produced:
        return False
    for arg in block.args:
        if not isinstance(arg.type, TensorType) or not isinstance(arg.type.encoding, NoneAttr):
            return False
    return all(
        isinstance(v.type, TensorType) and isinstance(v.type.encoding, NoneAttr) for v in produced
    )
