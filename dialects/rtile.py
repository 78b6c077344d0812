"""The `rtile` dialect: register-tile geometries attached to matrix products.

`#rtile.geom<rm4 rn2 lanes8>` is a `register_tile.Geometry` in the spec's display
form; `#rtile.cover<...>` is its decomposition of an m x n site;
`#rtile.kernel<fma kp 144 kc 144 mc 64 scratch 0>` the kernel decisions
`lower-gebp` makes beside the tile (`tigris_ir.rtile.kernel`); `rtile.gebp` is a
matrix product on tensors carrying both (the `gebp-tile` pass attaches the same
pair to `nn` matrix products as discardable attributes). `rtile.dot_acc` is the
one loop-level op the `lower-gebp` lowering adds to xDSL's `vector` dialect: an
int8 multiply-accumulate widened to int32, which `vector` cannot express.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    IntAttr,
    IntegerType,
    StringAttr,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt

_GEOM_KEYS = ("rm", "rn", "lanes")


def _parse_keyed_int(parser: AttrParser, key: str) -> int:
    """Parse one `rm4`-style token: a fixed key glued to a decimal count."""
    pos = parser.pos
    word = parser.parse_identifier(f" '{key}<count>'")
    digits = word[len(key) :]
    if not word.startswith(key) or not digits.isdigit():
        parser.raise_error(f"expected '{key}' followed by a count, got '{word}'", pos)
    return int(digits)


@irdl_attr_definition
class GeomAttr(ParametrizedAttribute):
    """A register-tile geometry: rm rows by rn vector columns of `lanes` lanes."""

    name = "rtile.geom"

    rm: IntAttr
    rn: IntAttr
    lanes: IntAttr

    def __init__(self, rm: int | IntAttr, rn: int | IntAttr, lanes: int | IntAttr):
        def as_attr(v: int | IntAttr) -> IntAttr:
            return v if isinstance(v, IntAttr) else IntAttr(v)

        super().__init__(as_attr(rm), as_attr(rn), as_attr(lanes))

    @staticmethod
    def from_geometry(g: rt.Geometry) -> GeomAttr:
        """The attribute of a model geometry."""
        return GeomAttr(g.rm, g.rn, g.lanes)

    @property
    def geometry(self) -> rt.Geometry:
        """The model geometry this attribute names."""
        return rt.Geometry(self.rm.data, self.rn.data, self.lanes.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            values = [_parse_keyed_int(parser, key) for key in _GEOM_KEYS]
        return tuple(IntAttr(v) for v in values)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(rt.show(self.geometry))

    def verify(self) -> None:
        g = self.geometry
        for key, value in zip(_GEOM_KEYS, (g.rm, g.rn, g.lanes), strict=True):
            if value < 1:
                raise VerifyException(
                    f"#rtile.geom<{rt.show(g)}>: {key} must be at least 1, got {value}"
                )
        if g.lanes < 2 or g.lanes & (g.lanes - 1):
            raise VerifyException(
                f"#rtile.geom<{rt.show(g)}>: lanes must be a power of two >= 2, "
                f"got {g.lanes}"
            )


@irdl_attr_definition
class CoverAttr(ParametrizedAttribute):
    """How a geometry covers an m x n site: `register_tile.Cover` as an attribute."""

    name = "rtile.cover"

    m_full: IntAttr
    n_full: IntAttr
    tail_widths: ArrayAttr[IntAttr]
    band_rows: IntAttr

    def __init__(
        self,
        m_full: int | IntAttr,
        n_full: int | IntAttr,
        tail_widths: Sequence[int] | ArrayAttr[IntAttr],
        band_rows: int | IntAttr,
    ):
        def as_attr(v: int | IntAttr) -> IntAttr:
            return v if isinstance(v, IntAttr) else IntAttr(v)

        tails = (
            tail_widths
            if isinstance(tail_widths, ArrayAttr)
            else ArrayAttr(IntAttr(w) for w in tail_widths)
        )
        super().__init__(as_attr(m_full), as_attr(n_full), tails, as_attr(band_rows))

    @staticmethod
    def from_cover(c: rt.Cover) -> CoverAttr:
        """The attribute of a model cover."""
        return CoverAttr(c.m_full, c.n_full, c.tail_widths, c.band_rows)

    @property
    def cover(self) -> rt.Cover:
        """The model cover this attribute names."""
        return rt.Cover(
            self.m_full.data,
            self.n_full.data,
            tuple(w.data for w in self.tail_widths.data),
            self.band_rows.data,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            parser.parse_keyword("m_full")
            m_full = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_keyword("n_full")
            n_full = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_keyword("tail")
            tails = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_integer(allow_boolean=False, allow_negative=False),
            )
            parser.parse_keyword("band")
            band = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (
            IntAttr(m_full),
            IntAttr(n_full),
            ArrayAttr(IntAttr(w) for w in tails),
            IntAttr(band),
        )

    def print_parameters(self, printer: Printer) -> None:
        c = self.cover
        tails = ", ".join(str(w) for w in c.tail_widths)
        printer.print_string(
            f"<m_full {c.m_full} n_full {c.n_full} tail [{tails}] band {c.band_rows}>"
        )

    def verify(self) -> None:
        c = self.cover
        if min((c.m_full, c.n_full, c.band_rows, *c.tail_widths)) < 0:
            raise VerifyException(f"#rtile.cover: negative extent in {c}")
        if any(w == 0 for w in c.tail_widths):
            raise VerifyException("#rtile.cover: a column-tail vector has no lanes")


_KERNEL_KEYS = ("kp", "kc", "mc", "scratch")

GEOM = "rtile.geom"
"""The discardable attribute holding a site's `#rtile.geom`."""
COVER = "rtile.cover"
"""... its `#rtile.cover` of the site."""
TARGET = "rtile.target"
"""... the name of the target the geometry was fitted to."""
REQUEST = "rtile.request"
"""A geometry the user asks for on one op: honoured when `check` accepts it."""
KERNEL = "rtile.kernel"
"""... its `#rtile.kernel` decisions (`lower-gebp`)."""


@irdl_attr_definition
class KernelAttr(ParametrizedAttribute):
    """The kernel decisions of a site: `rtile.kernel.KernelPlan` as an attribute."""

    name = "rtile.kernel"

    dot: StringAttr
    kp: IntAttr
    kc: IntAttr
    mc: IntAttr
    scratch: IntAttr

    def __init__(self, dot: str, kp: int, kc: int, mc: int, scratch: int):
        super().__init__(StringAttr(dot), IntAttr(kp), IntAttr(kc), IntAttr(mc), IntAttr(scratch))

    @staticmethod
    def from_plan(p: rk.KernelPlan) -> KernelAttr:
        return KernelAttr(p.dot, p.kp, p.kc, p.mc, p.scratch)

    @property
    def plan(self) -> rk.KernelPlan:
        return rk.KernelPlan(
            self.dot.data,  # type: ignore[arg-type]
            self.kp.data,
            self.kc.data,
            self.mc.data,
            self.scratch.data,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            dot = parser.parse_identifier(" the multiply-accumulate")
            if dot not in rk.DOTS:
                parser.raise_error(
                    f"expected one of {', '.join(rk.DOTS)} as the multiply-accumulate, "
                    f"got '{dot}'",
                    pos,
                )
            values = []
            for key in _KERNEL_KEYS:
                parser.parse_keyword(key)
                values.append(parser.parse_integer(allow_boolean=False, allow_negative=False))
        return (StringAttr(dot), *(IntAttr(v) for v in values))

    def print_parameters(self, printer: Printer) -> None:
        p = self.plan
        printer.print_string(
            f"<{p.dot} kp {p.kp} kc {p.kc} mc {p.mc} scratch {p.scratch}>"
        )

    def verify(self) -> None:
        p = self.plan
        if p.dot not in rk.DOTS:
            raise VerifyException(f"#rtile.kernel: unknown multiply-accumulate '{p.dot}'")
        if min(p.kp, p.kc, p.mc) < 1:
            raise VerifyException(f"#rtile.kernel: kp, kc and mc must be at least 1 in {p}")
        if p.kp % rk.dot_group(p.dot):
            raise VerifyException(
                f"#rtile.kernel: kp {p.kp} is no multiple of {p.dot}'s group of "
                f"{rk.dot_group(p.dot)} k steps"
            )


def _matrix_shape(value: SSAValue, what: str) -> tuple[int, int]:
    ty = value.type
    if not isinstance(ty, TensorType) or len(ty.get_shape()) != 2:
        raise VerifyException(f"rtile.gebp: {what} must be a rank-2 tensor, got {ty}")
    rows, cols = ty.get_shape()
    if rows < 1 or cols < 1:
        raise VerifyException(
            f"rtile.gebp: {what} needs static positive extents, got {ty}"
        )
    return rows, cols


def _accumulator_type(elt: Attribute) -> Attribute | None:
    """The result element of a product of `elt`s: f32 stays, i8 widens to i32."""
    if isinstance(elt, Float32Type):
        return elt
    if isinstance(elt, IntegerType) and elt.width.data in (8, 32):
        return IntegerType(32)
    return None


@irdl_op_definition
class GebpOp(IRDLOperation):
    """C = A x B on tensors, register-tiled by `geom` as `cover` decomposes it."""

    name = "rtile.gebp"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)

    geom = prop_def(GeomAttr)
    cover = prop_def(CoverAttr)

    assembly_format = (
        "$a `,` $b `geom` $geom `cover` $cover attr-dict "
        "`:` type($a) `,` type($b) `->` type($result)"
    )

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        geom: GeomAttr | rt.Geometry,
        result_type: Attribute | None = None,
    ):
        g = geom if isinstance(geom, GeomAttr) else GeomAttr.from_geometry(geom)
        a_ty, b_ty = a.type, b.type
        if result_type is None:
            assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType)
            elt = _accumulator_type(a_ty.get_element_type()) or a_ty.get_element_type()
            result_type = TensorType(elt, [a_ty.get_shape()[0], b_ty.get_shape()[1]])
        assert isinstance(result_type, TensorType)
        m, n = result_type.get_shape()
        cover = CoverAttr.from_cover(rt.cover(g.geometry, m, n))
        super().__init__(
            operands=[a, b],
            result_types=[result_type],
            properties={"geom": g, "cover": cover},
        )

    def verify_(self) -> None:
        m, k = _matrix_shape(self.a, "lhs")
        kb, n = _matrix_shape(self.b, "rhs")
        rm, rn = _matrix_shape(self.result, "result")
        if k != kb:
            raise VerifyException(
                f"rtile.gebp: contraction mismatch, lhs has {k} "
                f"columns and rhs {kb} rows"
            )
        if (rm, rn) != (m, n):
            raise VerifyException(f"rtile.gebp: result must be {m}x{n}, got {rm}x{rn}")
        a_ty, b_ty, r_ty = self.a.type, self.b.type, self.result.type
        assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType)
        assert isinstance(r_ty, TensorType)
        elt = a_ty.get_element_type()
        if b_ty.get_element_type() != elt:
            raise VerifyException("rtile.gebp: lhs and rhs element types differ")
        acc = _accumulator_type(elt)
        if acc is None:
            raise VerifyException(
                f"rtile.gebp: operands must be f32, i8 or i32 tensors, got {elt}"
            )
        if r_ty.get_element_type() != acc:
            raise VerifyException(
                f"rtile.gebp: {elt} x {elt} must accumulate into {acc}, "
                f"got {r_ty.get_element_type()}"
            )
        g = self.geom.geometry
        if g.rm > m:
            raise VerifyException(
                f"rtile.gebp: rows-fit: rm={g.rm} exceeds the row extent m={m}"
            )
        if rt.columns(g) > n:
            raise VerifyException(
                f"rtile.gebp: columns-fit: rn*lanes={rt.columns(g)} exceeds the "
                f"column extent n={n}"
            )
        expected = rt.cover(g, m, n)
        if self.cover.cover != expected:
            raise VerifyException(
                f"rtile.gebp: cover {self.cover} does not match {rt.show(g)} on "
                f"{m}x{n}, expected {CoverAttr.from_cover(expected)}"
            )


def _int_vector(ty: Attribute, width: int) -> VectorType | None:
    """ty as a rank-1 vector of `width`-bit integers, else None."""
    if not isinstance(ty, VectorType) or ty.get_num_dims() != 1:
        return None
    elt = ty.get_element_type()
    if not isinstance(elt, IntegerType) or elt.width.data != width:
        return None
    return ty


@irdl_op_definition
class DotAccOp(IRDLOperation):
    """acc[l] + sum over g of sext(a[g]) * sext(b_g[l]), exactly, in int32.

    G = len(b) consecutive k steps of an int8 product at once: `a` holds one A
    row's G values, each `b_g` one B row's L columns. The vector dialect has no
    widening multiply-accumulate; G = 2 is the int16 pair that pmaddwd and
    AVX512-VNNI vpdpwssd consume, G = 1 a last odd k step.
    """

    name = "rtile.dot_acc"

    T: ClassVar = VarConstraint("T", base(VectorType))

    acc = operand_def(T)
    a = operand_def(VectorType)
    b = var_operand_def(VectorType)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = (
        "$acc `,` $a `,` $b attr-dict `:` type($a) `,` type($b) `into` type($result)"
    )

    def __init__(self, acc: SSAValue, a: SSAValue, b: Sequence[SSAValue]):
        super().__init__(operands=[acc, a, b], result_types=[acc.type])

    def verify_(self) -> None:
        acc = _int_vector(self.acc.type, 32)
        if acc is None:
            raise VerifyException(
                f"rtile.dot_acc: the accumulator must be a vector of i32, got "
                f"{self.acc.type}"
            )
        lanes = acc.get_shape()[0]
        groups = len(self.b)
        if not 1 <= groups <= 4:
            raise VerifyException(
                f"rtile.dot_acc: takes 1 to 4 B rows (k steps), got {groups}"
            )
        a = _int_vector(self.a.type, 8)
        if a is None or a.get_shape()[0] != groups:
            raise VerifyException(
                f"rtile.dot_acc: a must be vector<{groups}xi8> (one i8 per B row), "
                f"got {self.a.type}"
            )
        for i, b in enumerate(self.b):
            bt = _int_vector(b.type, 8)
            if bt is None or bt.get_shape()[0] != lanes:
                raise VerifyException(
                    f"rtile.dot_acc: B row #{i} must be vector<{lanes}xi8> like the "
                    f"accumulator's {lanes} lanes, got {b.type}"
                )


RTile = Dialect("rtile", [GebpOp, DotAccOp], [GeomAttr, CoverAttr, KernelAttr])
