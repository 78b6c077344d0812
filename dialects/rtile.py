"""The `rtile` dialect: register tiles of matrix products and their kernels.

`#rtile.geom<rm4 rn2 lanes8>` is a `register_tile.Geometry` in the spec's display
form; `#rtile.cover<...>` is its decomposition of an m x n site (`gebp-tile`
attaches both to `nn` matrix products as discardable attributes); `rtile.gebp`
is a matrix product on tensors carrying both.

`rtile.kernel` and the structure ops of its body are the register-tiled GEBP of
one matrix-product band as `lower-gebp` decides it: the row blocks
(`rtile.row_blocks`), the packing or gathering of A into a stack buffer
(`rtile.pack_a`), the K blocks (`rtile.k_blocks`), the sweeps over the weight
panels (`rtile.panels`), the micro-tile with its row edge tiles
(`rtile.micro`), and the epilogue (`rtile.epilogue`):

    rtile.kernel %y dot "fma" k 40 n 16 groups 1 : tensor<1x25x5x16xf32> {
      rtile.row_blocks rows 64 {
        rtile.pack_a "im2col" kp 40 into f32 scratch 10240
        rtile.k_blocks k 40 step 40 {
          rtile.panels cols 0 to 16 width 16 {
            rtile.micro <rm4 rn2 lanes8> last 8 edges array<i64: 3, 2, 1> unroll 4
          }
        }
      }
      rtile.epilogue "bias"
    }

A pointwise convolution's row blocks may say `merge W` (one call covers all
the band's rows of W pixels), and an int8 kernel's packing `offset N` (what
its packed rows hold over x - zp):

    rtile.row_blocks rows 64 merge 5 {
      rtile.pack_a "rows" kp 16 into ui8 offset 139 scratch 1024

A depthwise convolution states its kernel as `rtile.depthwise`, a band that
runs the direct loops says so as `rtile.direct`, and an activation fused into
a depthwise convolution or an Add is its `rtile.clamp`.

The C backend prints each op as the C it stands for and decides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt

_T = TypeVar("_T", bound=Operation)

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


GEOM = "rtile.geom"
"""The discardable attribute holding a site's `#rtile.geom`."""
COVER = "rtile.cover"
"""... its `#rtile.cover` of the site."""
TARGET = "rtile.target"
"""... the name of the target the geometry was fitted to."""
LANES = "rtile.lanes"
"""The SIMD kernel an int8 elementwise op or pool of a Cortex-M target runs
("dsp": the DSP extension's four bytes per 32-bit register, "mve": Helium's
Q registers), chosen by `lower-gebp` from its `rtile.target`'s description
(`Target.int8_lanes`); absent, the op prints its portable loop."""
REQUEST = "rtile.request"
"""A geometry the user asks for on one op: honoured when `check` accepts it."""
CLAMP = "rtile.clamp"
"""A float32 depthwise convolution's fused activation (`lower-gebp` removed
its Relu or Clip band): `{lo = ..., hi = ...}`, either bound or both, applied
as `rtile.epilogue "bias_clamp"` applies them, to every value it stores."""


DEPTHWISE = "rtile.depthwise"
"""A depthwise convolution's kernel as `lower-gebp` decides it
(`tigris_ir.rtile.kernel.depthwise_plan`): `{kernel = "vector" | "dsp" |
"mve", lanes = L, vectors = V, pixels = P}`: the kernel, the channels per
vector, the channel vectors one step accumulates, the output pixels one step
covers."""

DIRECT = "rtile.direct"
"""A convolution or matrix product whose band runs the direct loops, and why
(`tigris_ir.rtile.direct`): a string such as "no register-tiled kernel" or
"channels not whole and dense". Such an op has no `rtile.kernel` (an
activation fused into one stays, as its `rtile.clamp`)."""


def depthwise_attr(plan: rk.DepthwisePlan) -> DictionaryAttr:
    """The `rtile.depthwise` of a depthwise kernel's decisions."""
    return DictionaryAttr(
        {
            "kernel": StringAttr(plan.kernel),
            "lanes": IntegerAttr(plan.lanes, i64),
            "vectors": IntegerAttr(plan.vectors, i64),
            "pixels": IntegerAttr(plan.pixels, i64),
        }
    )


def depthwise_of(op: Operation) -> rk.DepthwisePlan | None:
    """The op's `rtile.depthwise` (None where it has none)."""
    attr = op.attributes.get(DEPTHWISE)
    if attr is None:
        return None
    keys = ("kernel", "lanes", "vectors", "pixels")
    form = '{kernel = "vector" | "dsp" | "mve", lanes, vectors, pixels (integers >= 1)}'
    if not isinstance(attr, DictionaryAttr) or set(attr.data) != set(keys):
        raise VerifyException(f"{DEPTHWISE} must be {form}, got {attr}")
    kind = attr.data["kernel"]
    if not isinstance(kind, StringAttr) or kind.data not in rk.DW_KERNELS:
        raise VerifyException(f"{DEPTHWISE}: kernel must be one of {rk.DW_KERNELS}, got {kind}")
    counts: list[int] = []
    for key in keys[1:]:
        v = attr.data[key]
        if not isinstance(v, IntegerAttr) or v.value.data < 1:
            raise VerifyException(f"{DEPTHWISE}: {key} must be an integer >= 1, got {v}")
        counts.append(v.value.data)
    return rk.DepthwisePlan(cast(rk.DwKernel, kind.data), *counts)


def direct_of(op: Operation) -> str | None:
    """Why the op's band runs the direct loops (its `rtile.direct`), or None."""
    attr = op.attributes.get(DIRECT)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr):
        raise VerifyException(f"{DIRECT} must be a string (the reason), got {attr}")
    return attr.data


def clamp_attr(lo: float | None, hi: float | None) -> DictionaryAttr:
    """The `rtile.clamp` of an activation clamping below by lo, above by hi."""
    bounds = {k: FloatAttr(v, f32) for k, v in (("lo", lo), ("hi", hi)) if v is not None}
    if not bounds:
        raise VerifyException(f"{CLAMP}: needs lo, hi or both")
    return DictionaryAttr(dict(bounds))


def clamp_of(op: Operation) -> tuple[float | None, float | None] | None:
    """(lo, hi) of the activation fused into an op: its kernel's epilogue
    (`bias_clamp`) or its `rtile.clamp`; None where none is."""
    kern = kernel_of(op)
    if kern is not None:
        return kern.epilogue.clamp
    attr = op.attributes.get(CLAMP)
    if attr is None:
        return None
    if not isinstance(attr, DictionaryAttr) or not set(attr.data) <= {"lo", "hi"}:
        raise VerifyException(
            f"{CLAMP} must be {{lo = f32, hi = f32}} (either or both), got {attr}"
        )
    out: list[float | None] = []
    for key in ("lo", "hi"):
        v = attr.data.get(key)
        if v is not None and not isinstance(v, FloatAttr):
            raise VerifyException(f"{CLAMP}: {key} must be a float, got {v}")
        out.append(float(v.value.data) if isinstance(v, FloatAttr) else None)
    return out[0], out[1]


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


# ---------------------------------------------------------------------------
# The register-tiled kernel of a band's matrix product (`lower-gebp`)
#
# Structure ops, printed by the C backend one to one: each states one loop or
# one step of the GEBP with its static extents; none computes a value of its
# own. The kernel op sits in a `loop.band` body beside the `nn` op whose result
# it names: the `nn` op is the semantics, the kernel how it is computed
# (`tigris_ir.interp.rtile_exec` runs its loops).


def _positive(op: IRDLOperation, **values: int) -> None:
    for key, v in values.items():
        if v < 1:
            raise VerifyException(f"{op.name}: {key} must be at least 1, got {v}")


def _region_ops(region: Region) -> list[Operation]:
    return list(region.block.ops) if region.blocks else []


@irdl_op_definition
class KernelOp(IRDLOperation):
    """The register-tiled GEBP computing `site` (an `nn` result of the band):
    C[m, n] = A[m, k] . B[k, n] for `groups` independent groups, with `dot` the
    multiply-accumulate (`fma`, or an int8 instruction of `tigris_ir.rtile.targets`).
    Its body holds the row blocks and the epilogue."""

    name = "rtile.kernel"

    site = operand_def(TensorType)
    dot = prop_def(StringAttr)
    k = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    groups = prop_def(IntegerAttr[I64])
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = (
        "$site `dot` $dot `k` $k `n` $n `groups` $groups attr-dict-with-keyword "
        "`:` type($site) $body"
    )

    def __init__(
        self, site: SSAValue, dot: str, k: int, n: int, groups: int, ops: Sequence[Operation]
    ):
        super().__init__(
            operands=[site],
            properties={
                "dot": StringAttr(dot),
                "k": IntegerAttr(k, i64),
                "n": IntegerAttr(n, i64),
                "groups": IntegerAttr(groups, i64),
            },
            regions=[Region(Block(ops))],
        )

    def verify_(self) -> None:
        if self.dot.data not in rk.DOTS:
            raise VerifyException(
                f"{self.name}: unknown multiply-accumulate '{self.dot.data}' "
                f"(one of {', '.join(rk.DOTS)})"
            )
        _positive(self, k=self.k.value.data, n=self.n.value.data, groups=self.groups.value.data)
        ops = _region_ops(self.body)
        kinds = [type(o) for o in ops]
        if kinds != [RowBlocksOp, EpilogueOp]:
            raise VerifyException(
                f"{self.name}: the body holds rtile.row_blocks then rtile.epilogue, got "
                + ", ".join(o.name for o in ops)
            )

    @property
    def row_blocks(self) -> RowBlocksOp:
        return cast(RowBlocksOp, self.body.block.first_op)

    @property
    def epilogue(self) -> EpilogueOp:
        return cast(EpilogueOp, self.body.block.last_op)

    @property
    def packing(self) -> str:
        """How A reaches the kernel: its `rtile.pack_a` kind ("" read in place)."""
        first = self.row_blocks.body.block.first_op
        return first.kind.data if isinstance(first, PackOp) else ""

    def walk_of(self, kind: type[_T]) -> list[_T]:
        """Every op of type `kind` in the body, in order."""
        return [o for o in self.walk() if isinstance(o, kind)]


@irdl_op_definition
class RowBlocksOp(IRDLOperation):
    """for i0 in 0..m step `rows`: the rows of A one call packs or gathers and
    sweeps over the panels (m is the band's, known at run time).

    `merge W` (a pointwise convolution only): where a band spans whole image
    rows of W pixels (both memrefs dense rows of W pixels), one call covers all
    the band's output rows at once, m = rows x W; without it, one call per
    output row, m = the band's pixels of that row."""

    name = "rtile.row_blocks"

    rows = prop_def(IntegerAttr[I64])
    merge = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "`rows` $rows (`merge` $merge^)? attr-dict-with-keyword $body"

    def __init__(self, rows: int, ops: Sequence[Operation], merge: int | None = None):
        props: dict[str, Attribute] = {"rows": IntegerAttr(rows, i64)}
        if merge is not None:
            props["merge"] = IntegerAttr(merge, i64)
        super().__init__(properties=props, regions=[Region(Block(ops))])

    @property
    def merge_width(self) -> int | None:
        """W of `merge W`: the pixels of one image row a merged call spans
        (None: one call per output row)."""
        return self.merge.value.data if self.merge is not None else None

    def verify_(self) -> None:
        _positive(self, rows=self.rows.value.data)
        if self.merge is not None:
            _positive(self, merge=self.merge.value.data)


@irdl_op_definition
class PackOp(IRDLOperation):
    """A's rows of one row block into a stack buffer of `scratch` bytes, `kp`
    elements per row (zero-padded past k): `rows` copies rows (int8: minus the
    input zero point, widened to `into`), `im2col` gathers each pixel's taps
    (tap-major, zeros where a tap leaves the image), `window` (float32) reads
    each pixel's window in place, one K block per kernel row, where it lies
    inside the image's width and gathers the others as im2col does (the
    scratch holds those), `winograd` (float32) runs Winograd's F(4, 3) along
    the width (`rtile.kernel.Packing`): per tile of four output pixels, the
    six input pixels of each kernel row inside the image transformed into one
    row of A of each of six products of `kp` (kernel rows x channels), whose
    B are the weights transformed; the scratch holds a row block's
    transformed rows and the six products' results, which the output
    transform takes back to pixels (then the bias and the activation: the
    products start from zero). `offset N`: the packed
    rows hold x - zp + N (`rtile.kernel.row_offset`: the byte an instruction
    multiplies is of the other signedness than the input's, and zp is not
    subtracted), and the kernel's bias is less N times B's column sums; a tap
    outside the image holds the zero point's packed byte. Without a pack op A
    is read in place."""

    name = "rtile.pack_a"

    kind = prop_def(StringAttr)
    kp = prop_def(IntegerAttr[I64])
    into = prop_def(TypeAttribute)
    offset = opt_prop_def(IntegerAttr[I64])
    scratch = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$kind `kp` $kp `into` $into (`offset` $offset^)? `scratch` $scratch attr-dict"
    )

    def __init__(
        self, kind: str, kp: int, into: Attribute, scratch: int, offset: int | None = None
    ):
        props: dict[str, Attribute] = {
            "kind": StringAttr(kind),
            "kp": IntegerAttr(kp, i64),
            "into": into,
            "scratch": IntegerAttr(scratch, i64),
        }
        if offset is not None:
            props["offset"] = IntegerAttr(offset, i64)
        super().__init__(properties=props)

    @property
    def row_offset(self) -> int | None:
        """What the packed rows hold more than x - zp (`offset N`: the
        `vpdpbusd` and `vmladava` kernels, whose bias is less N times B's
        column sums); None: they hold x - zp."""
        return self.offset.value.data if self.offset is not None else None

    def verify_(self) -> None:
        if self.kind.data not in ("rows", "im2col", "window", "winograd"):
            raise VerifyException(
                f"{self.name}: kind is rows, im2col, window or winograd, got '{self.kind.data}'"
            )
        _positive(self, kp=self.kp.value.data, scratch=self.scratch.value.data)


@irdl_op_definition
class KBlocksOp(IRDLOperation):
    """for k0 in 0..k step `step`: the panels swept per block of the contraction
    (the first block starts the accumulators from the bias, later ones from C)."""

    name = "rtile.k_blocks"

    k = prop_def(IntegerAttr[I64])
    step = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "`k` $k `step` $step attr-dict-with-keyword $body"

    def __init__(self, k: int, step: int, ops: Sequence[Operation]):
        super().__init__(
            properties={"k": IntegerAttr(k, i64), "step": IntegerAttr(step, i64)},
            regions=[Region(Block(ops))],
        )

    def verify_(self) -> None:
        _positive(self, k=self.k.value.data, step=self.step.value.data)


@irdl_op_definition
class PanelsOp(IRDLOperation):
    """for j0 in lo..hi step `width`: the weight panels of `width` packed columns
    (the full panels, or the one panel of the column tail, whose columns past hi
    are zero padding), each swept by the micro-tile of the body."""

    name = "rtile.panels"

    lo = prop_def(IntegerAttr[I64])
    hi = prop_def(IntegerAttr[I64])
    width = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "`cols` $lo `to` $hi `width` $width attr-dict-with-keyword $body"

    def __init__(self, lo: int, hi: int, width: int, micro: MicroOp):
        super().__init__(
            properties={
                "lo": IntegerAttr(lo, i64),
                "hi": IntegerAttr(hi, i64),
                "width": IntegerAttr(width, i64),
            },
            regions=[Region(Block([micro]))],
        )

    @property
    def micro(self) -> MicroOp:
        return cast(MicroOp, self.body.block.first_op)

    def verify_(self) -> None:
        lo, hi, w = self.lo.value.data, self.hi.value.data, self.width.value.data
        _positive(self, width=w)
        if not 0 <= lo < hi:
            raise VerifyException(f"{self.name}: columns {lo} to {hi} are empty")
        ops = _region_ops(self.body)
        if len(ops) != 1 or not isinstance(ops[0], MicroOp):
            raise VerifyException(f"{self.name}: the body holds one rtile.micro")
        g = ops[0].geom.geometry
        if rt.columns(g) != w:
            raise VerifyException(
                f"{self.name}: panels of {w} columns swept by {rt.show(g)} ({rt.columns(g)})"
            )


@irdl_op_definition
class MicroOp(IRDLOperation):
    """The micro-tile: `geom` rows x vectors of accumulators over the k steps of
    a block, the last vector `last` lanes wide (a partial vector loads zeros
    past its width and stores only its width); the leftover rows of a row block
    run the tiles of `edges` rows (one case per count). `unroll` is the k-loop
    unroll of the full tile (1: none)."""

    name = "rtile.micro"

    geom = prop_def(GeomAttr)
    last = prop_def(IntegerAttr[I64])
    edges = prop_def(DenseArrayBase[I64])
    unroll = prop_def(IntegerAttr[I64])
    assembly_format = "$geom `last` $last `edges` $edges `unroll` $unroll attr-dict"

    def __init__(self, geom: rt.Geometry, last: int, edges: Sequence[int], unroll: int):
        super().__init__(
            properties={
                "geom": GeomAttr.from_geometry(geom),
                "last": IntegerAttr(last, i64),
                "edges": DenseArrayBase.from_list(i64, list(edges)),
                "unroll": IntegerAttr(unroll, i64),
            }
        )

    @property
    def edge_rows(self) -> tuple[int, ...]:
        return tuple(int(v) for v in cast(DenseArrayBase[IntegerType], self.edges).get_values())

    def verify_(self) -> None:
        g = self.geom.geometry
        last = self.last.value.data
        if not 1 <= last <= g.lanes:
            raise VerifyException(f"{self.name}: last must be 1 to {g.lanes} lanes, got {last}")
        if any(not 1 <= r < g.rm for r in self.edge_rows):
            raise VerifyException(
                f"{self.name}: edge tiles take 1 to {g.rm - 1} rows, got {list(self.edge_rows)}"
            )
        _positive(self, unroll=self.unroll.value.data)


@irdl_op_definition
class EpilogueOp(IRDLOperation):
    """What the accumulators become: `bias` (float32: the bias starts the first
    K block, C is stored as summed), `bias_clamp` (float32: the same, then on
    the last K block clamped below by `lo` and / or above by `hi` before the
    store -- a Relu or Clip fused into the product, `x < lo ? lo : x` then
    `x > hi ? hi : x` as the op computes it) or `bias_requant` (int8: int32
    bias, then one requantization by per-column multipliers to the output's
    zero point, saturated)."""

    name = "rtile.epilogue"

    kind = prop_def(StringAttr)
    lo = opt_prop_def(FloatAttr)
    hi = opt_prop_def(FloatAttr)
    assembly_format = "$kind (`lo` $lo^)? (`hi` $hi^)? attr-dict"

    def __init__(self, kind: str, lo: float | None = None, hi: float | None = None):
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if lo is not None:
            props["lo"] = FloatAttr(lo, f32)
        if hi is not None:
            props["hi"] = FloatAttr(hi, f32)
        super().__init__(properties=props)

    @property
    def clamp(self) -> tuple[float | None, float | None] | None:
        """(lo, hi) of a fused activation (`bias_clamp`), else None."""
        if self.kind.data != "bias_clamp":
            return None
        lo = self.lo.value.data if self.lo is not None else None
        hi = self.hi.value.data if self.hi is not None else None
        return lo, hi

    def verify_(self) -> None:
        if self.kind.data not in EPILOGUES:
            raise VerifyException(
                f"{self.name}: kind is one of {', '.join(EPILOGUES)}, got '{self.kind.data}'"
            )
        bounds = self.lo is not None or self.hi is not None
        if self.kind.data == "bias_clamp" and not bounds:
            raise VerifyException(f"{self.name}: bias_clamp needs lo, hi or both")
        if self.kind.data != "bias_clamp" and bounds:
            raise VerifyException(f"{self.name}: only bias_clamp has lo and hi")
        clamp = self.clamp
        if clamp is not None and None not in clamp and clamp[0] > clamp[1]:  # type: ignore[operator]
            raise VerifyException(f"{self.name}: lo {clamp[0]} exceeds hi {clamp[1]}")


EPILOGUES = ("bias", "bias_clamp", "bias_requant")
"""The kinds of `rtile.epilogue`."""


def kernel_of(op: Operation) -> KernelOp | None:
    """The kernel op computing `op`'s first result in its band, if any."""
    nxt = op.next_op
    if isinstance(nxt, KernelOp) and op.results and nxt.site == op.results[0]:
        return nxt
    return None

RTile = Dialect(
    "rtile",
    [GebpOp, KernelOp, RowBlocksOp, PackOp, KBlocksOp, PanelsOp, MicroOp, EpilogueOp],
    [GeomAttr, CoverAttr],
)
