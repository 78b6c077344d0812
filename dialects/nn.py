"""The `nn` graph dialect: neural-network operators on statically shaped tensors.

Feature maps are channels-last inside the compiler, (N, H, W, C) and (N, W, C), so
that a band of rows is one contiguous span; the importer moves ONNX's NCHW there.
Quantized tensors carry their scale and zero point in the tensor type's encoding
(`tensor<1x8x8x16xi8, #nn.q<0.02 : -3>>`), so every consumer sees them and no op
has to repeat them.

Each op class states, as data, its tiling class (the table of spec/tiling.md),
how it behaves on quantized tensors, its output shape (checked by the verifier)
and a numpy reference (`reference`), which is the oracle of every later level.

ONNX If and Loop are `nn.if` and `nn.loop`: ops with body regions that read
values defined above them and end in `nn.yield`; comparisons (`nn.less`, ...)
compute their i1 conditions. They are outside the catalogue `NN_OPS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import Enum
from typing import ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NameLoc,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from tigris_ir.plan.tiling_class import TilingClass
from tigris_ir.reference import kernels as K

# --------------------------------------------------------------------------- types


@irdl_attr_definition
class QuantAttr(ParametrizedAttribute):
    """Per-tensor affine quantization of an activation: real = (q - zp) * scale."""

    name = "nn.q"

    scale: FloatAttr
    zero_point: IntegerAttr

    def __init__(self, scale: float, zero_point: int):
        problem = scale_problem(float(scale))  # before float32 rounding hides it
        if problem is not None:
            raise VerifyException(f"#nn.q: {problem}")
        super().__init__(
            FloatAttr(float(np.float32(scale)), Float32Type()), IntegerAttr(zero_point, i64)
        )

    @property
    def scale_value(self) -> np.float32:
        return np.float32(self.scale.value.data)

    @property
    def zp_value(self) -> int:
        return self.zero_point.value.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            scale = float(parser.parse_number(context_msg=" as the #nn.q scale"))
            end = parser.pos
            problem = scale_problem(scale)
            if problem is not None:
                parser.raise_error(f"#nn.q: {problem}", start, end)
            parser.parse_punctuation(":")
            zp = parser.parse_integer(allow_boolean=False, context_msg=" as the #nn.q zero point")
        return (
            FloatAttr(float(np.float32(scale)), Float32Type()),
            IntegerAttr(zp, i64),
        )

    def print_parameters(self, printer: Printer) -> None:
        text = str(np.float32(self.scale.value.data))
        if "." not in text:  # the parser wants a decimal point in a float literal
            text = text.replace("e", ".0e") if "e" in text else text + ".0"
        printer.print_string(f"<{text} : ")
        printer.print_string(f"{self.zero_point.value.data}>")

    def verify(self) -> None:
        problem = scale_problem(self.scale.value.data)
        if problem is not None:
            raise VerifyException(f"#nn.q: {problem}")


def scale_problem(scale: float) -> str | None:
    """Why a quantization scale is unusable (None when it is fine).

    The scale is stored as float32, so a value that is positive as a double but
    rounds to 0 or to infinity in float32 is as unusable as a negative one.
    """
    if not (scale > 0 and math.isfinite(scale)):
        return f"the scale must be positive and finite, got {scale}"
    with np.errstate(over="ignore", under="ignore"):
        s32 = np.float32(scale)
    if s32 == 0 or not np.isfinite(s32):
        return f"the scale {scale} is not representable as a positive finite float32"
    return None


# numpy dtypes of the element types the dialect accepts: (width, signed) of
# an integer type; i1 (bool) and i64 are signless only
_INT_DTYPES = {(8, True): np.int8, (8, False): np.uint8, (32, True): np.int32}
_SIGNLESS_DTYPES = {1: np.bool_, 64: np.int64}


def element_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a tensor element type (i8 is signed, ui8 unsigned,
    i1 is bool, i64 int64)."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, IntegerType):
        width, sign = t.width.data, t.signedness.data
        if sign == Signedness.SIGNLESS and width in _SIGNLESS_DTYPES:
            return np.dtype(_SIGNLESS_DTYPES[width])
        key = (width, sign != Signedness.UNSIGNED)
        if key in _INT_DTYPES:
            return np.dtype(_INT_DTYPES[key])
    raise VerifyException(f"unsupported element type {t}; supported: f32, i8, ui8, i32, i64, i1")


_TYPES: dict[tuple[tuple[int, ...], str, QuantAttr | None], TensorType] = {}
"""Tensor types already built (they are immutable): an import builds
thousands of the same few."""


def tensor_type(
    shape: Sequence[int], dtype: np.dtype | type, quant: QuantAttr | None = None
) -> TensorType:
    """Build the tensor type of an array shape and numpy dtype."""
    key = (tuple(int(d) for d in shape), np.dtype(dtype).str, quant)
    hit = _TYPES.get(key)
    if hit is not None:
        return hit
    if len(_TYPES) > 65536:
        _TYPES.clear()
    _TYPES[key] = ty = _build_tensor_type(shape, dtype, quant)
    return ty


def _build_tensor_type(
    shape: Sequence[int], dtype: np.dtype | type, quant: QuantAttr | None
) -> TensorType:
    dt = np.dtype(dtype)
    elem: Attribute
    if dt == np.float32:
        elem = Float32Type()
    elif dt == np.int8:
        elem = IntegerType(8)
    elif dt == np.uint8:
        elem = IntegerType(8, Signedness.UNSIGNED)
    elif dt == np.int32:
        elem = IntegerType(32)
    elif dt == np.int64:
        elem = IntegerType(64)
    elif dt == np.bool_:
        elem = IntegerType(1)
    else:
        raise ValueError(
            f"unsupported dtype {dt}; supported: float32, int8, uint8, int32, int64, bool"
        )
    return TensorType(elem, shape, quant if quant is not None else NoneAttr())


def model_loc(where: str) -> NameLoc:
    """The location of an op imported from a model node: the node in the
    model's own terms (`node 3 'conv1' (Conv)`), printed only with debug info."""
    return NameLoc(StringAttr(where), NoneAttr())


def model_node_of(op: Operation) -> str | None:
    """The model node an op was imported from (`model_loc`), if it was."""
    loc = op.location
    return loc.desc.data if isinstance(loc, NameLoc) else None


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def dtype_of(v: SSAValue | Attribute) -> np.dtype:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return element_dtype(t.element_type)


def quant_of(v: SSAValue | Attribute) -> QuantAttr | None:
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return t.encoding if isinstance(t.encoding, QuantAttr) else None


def elem_bytes(v: SSAValue | Attribute) -> int:
    """Bytes per element, the unit of every memory figure of the planner."""
    return dtype_of(v).itemsize


def dequantize_array(a: np.ndarray, q: QuantAttr | None) -> np.ndarray:
    if q is None:
        return a
    return K.dequantize(a, scale=q.scale_value, zero_point=q.zp_value)


def quantize_array(a: np.ndarray, t: TensorType) -> np.ndarray:
    q = quant_of(t)
    if q is None:
        return a.astype(element_dtype(t.element_type))
    return K.quantize(
        a, scale=q.scale_value, zero_point=q.zp_value, dtype=element_dtype(t.element_type)
    )


# ----------------------------------------------------------------- property helpers


def ints_prop(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def int_prop(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def float_prop(v: float) -> FloatAttr:
    return FloatAttr(float(v), Float32Type())


class QuantKind(Enum):
    """How an op computes when its tensors are quantized."""

    INTEGER = "integer"
    """Its own integer kernel: int32 accumulators and one requantization."""
    EXACT = "exact"
    """Moves or selects values: runs on the stored integers when scales agree."""
    REAL = "real"
    """Dequantize, compute in float32, quantize: one rounding at the output."""


REQUANT_ATTR = "nn.requant"
"""Set to "fixed" on an int8 op by the `requant` pass: its requantizations
are integer-only (`kernels.requantize_fixed` and the fixed definitions of
Add, Sub, Mul and the average pools); absent or "float", the float32 rule.
The reference, both interpreters and the C read this one attribute."""

REQUANT_MODES = ("float", "fixed")


def requant_fixed(op: Operation) -> bool:
    """Whether the op's int8 arithmetic is the fixed-point kind (`REQUANT_ATTR`)."""
    a = op.attributes.get(REQUANT_ATTR)
    return isinstance(a, StringAttr) and a.data == "fixed"


class NNOp(IRDLOperation):
    """Common behaviour of the graph operators."""

    TILING: ClassVar[TilingClass] = TilingClass.WHOLE
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.REAL
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    irdl_options = (ParsePropInAttrDict(),)

    def tiling(self) -> TilingClass:
        """The row of the spec's tileability table this op belongs to."""
        return self.TILING

    def quant_kind(self) -> QuantKind:
        return self.QUANT_KIND

    def whole_axes(self) -> tuple[int, ...]:
        """Axes of the result that every band holds whole: the axes a
        WHOLE_ROWS op normalises along (none for the other classes)."""
        return ()

    def independent_axes(self) -> tuple[int, tuple[int, ...]] | None:
        """For an INDEPENDENT_AXIS op that states it: the result axis its
        bands cut and, per input, the axis read with it (-1: read whole).
        None: the planner's own rule for the op."""
        return None

    # -- properties -------------------------------------------------------------
    def ints(self, name: str) -> tuple[int, ...]:
        p = self.properties.get(name)
        if p is None:
            return ()
        assert isinstance(p, DenseArrayBase)
        return tuple(int(x) for x in p.get_values())

    def int_(self, name: str, default: int = 0) -> int:
        p = self.properties.get(name)
        if p is None:
            return default
        assert isinstance(p, IntegerAttr)
        return p.value.data

    def float_(self, name: str, default: float = 0.0) -> float:
        p = self.properties.get(name)
        if p is None:
            return default
        assert isinstance(p, FloatAttr)
        return float(p.value.data)

    def str_(self, name: str, default: str = "") -> str:
        p = self.properties.get(name)
        if p is None:
            return default
        assert isinstance(p, StringAttr)
        return p.data

    # -- shapes -----------------------------------------------------------------
    def infer_shapes(self) -> list[tuple[int, ...]]:
        """Result shapes implied by the operands and properties."""
        return [shape_of(self.operands[0])]

    def check_operands(self) -> None:
        """Ranks, channel counts and element types; raise VerifyException."""

    def verify_(self) -> None:
        for kind, values in (("operand", self.operands), ("result", self.results)):
            for i, v in enumerate(values):
                _check_tensor_type(self, v, f"{kind} #{i}")
        self.check_operands()
        expected = self.infer_shapes()
        got = [shape_of(r) for r in self.results]
        if [tuple(s) for s in expected] != got:
            exp = ", ".join("x".join(map(str, s)) for s in expected)
            have = ", ".join("x".join(map(str, s)) for s in got)
            raise VerifyException(
                f"{self.name}: result shape {have} does not match the inferred shape {exp}"
            )

    # -- numerics ---------------------------------------------------------------
    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """The float32 semantics (also run on raw integers by EXACT ops)."""
        raise NotImplementedError(f"{self.name} has no reference implementation")

    def compute_quantized(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """The integer semantics of INTEGER ops."""
        raise NotImplementedError(f"{self.name} has no integer reference")

    FIXED: ClassVar[bool] = False
    """A REAL op with an integer-only int8 definition (`compute_fixed`), run
    instead of dequantize-compute-quantize when `requant_fixed`."""

    def compute_fixed(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """The integer-only semantics of a FIXED op on stored int8 values."""
        raise NotImplementedError(f"{self.name} has no integer-only definition")

    def fixed_problem(self) -> str | None:
        """Why this quantized op cannot run integer-only (None: it can): its
        requantizations are fixed-point, a compile-time table, or none."""
        if not self.is_quantized() or self.quant_kind() is QuantKind.INTEGER:
            return None
        if self.quant_kind() is QuantKind.EXACT:
            return None  # stored integers, or a table per operand where scales differ
        if self.FIXED:
            values = (*self.operands, *self.results)
            if all(quant_of(v) is not None for v in values if dtype_of(v) != np.int32):
                return None
            return f"{self.name} mixes int8 and float32 operands"
        if isinstance(self, UnaryOp):
            return None  # a 256-entry table computed at compile time
        if isinstance(self, QuantizeOp | DequantizeOp):
            return None  # the float boundary of the plan
        return f"{self.name} has no integer-only int8 definition"

    def is_quantized(self) -> bool:
        return any(quant_of(v) is not None for v in (*self.operands, *self.results))

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run the op on numpy arrays holding the stored values of its operands."""
        if not self.is_quantized():
            outs = self.compute(args)
        elif self.quant_kind() is QuantKind.INTEGER:
            outs = self.compute_quantized(args)
        elif self.quant_kind() is QuantKind.EXACT and self._same_quantization():
            outs = self.compute(args)
        elif self.FIXED and requant_fixed(self):
            outs = self.compute_fixed(args)
        else:
            real = [dequantize_array(a, quant_of(v)) for a, v in zip(args, self.operands)]
            outs = self.compute(real)
            outs = [quantize_array(o, cast(TensorType, r.type)) for o, r in zip(outs, self.results)]
        return [np.asarray(o).astype(dtype_of(r), copy=False) for o, r in zip(outs, self.results)]

    def _same_quantization(self) -> bool:
        qs = {
            (quant_of(v), dtype_of(v).str)
            for v in (*self.operands, *self.results)
            if quant_of(v) is not None or dtype_of(v) != np.float32
        }
        acts = [v for v in (*self.operands, *self.results) if quant_of(v) is not None]
        return len(qs) == 1 and len(acts) == len(self.operands) + len(self.results)


def _rank(v: SSAValue) -> int:
    return len(shape_of(v))


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise VerifyException(msg)


def _check_tensor_type(op: NNOp, v: SSAValue, what: str) -> None:
    """Element type and encoding rules every operand and result obeys."""
    t = v.type
    if not isinstance(t, TensorType):  # the message only on failure: printing a type is slow
        raise VerifyException(f"{op.name}: {what} must be a tensor, got {t}")
    try:
        dt = element_dtype(t.element_type)
    except VerifyException as e:
        raise VerifyException(f"{op.name}: {what} has an {e}") from None
    enc = t.encoding
    if isinstance(enc, NoneAttr):
        return
    if not isinstance(enc, QuantAttr):
        raise VerifyException(f"{op.name}: {what} has the encoding {enc}; only #nn.q is supported")
    _require(
        dt in (np.int8, np.uint8),
        f"{op.name}: {what} carries #nn.q on {t.element_type}; quantized tensors are i8 or ui8",
    )
    info = np.iinfo(dt)
    _require(
        info.min <= enc.zp_value <= info.max,
        f"{op.name}: {what} has zero point {enc.zp_value}, outside the {t.element_type} "
        f"range [{info.min}, {info.max}]",
    )


def _check_float_or_quant(op: NNOp, v: SSAValue, what: str) -> None:
    dt = dtype_of(v)
    if dt == np.float32:
        return
    if not (dt in (np.int8, np.uint8) and quant_of(v) is not None):
        raise VerifyException(
            f"{op.name}: {what} must be f32, or i8/ui8 with a #nn.q quantization, got {v.type}"
        )


def _check_values(op: NNOp) -> None:
    """Every operand and result is f32 or a quantized i8/ui8 activation."""
    for i, v in enumerate(op.operands):
        _check_float_or_quant(op, v, f"operand #{i}")
    for i, v in enumerate(op.results):
        _check_float_or_quant(op, v, f"result #{i}")


def _check_data(op: NNOp) -> None:
    """What ops that only move values accept: `_check_values`, or unquantized
    integer or bool tensors that all share one element type."""
    values = (*op.operands, *op.results)
    raw = [v for v in values if quant_of(v) is None and dtype_of(v) != np.float32]
    if not raw or any(quant_of(v) is not None for v in values):
        _check_values(op)
        return
    dt = dtype_of(raw[0])
    for v in values:
        _require(
            quant_of(v) is None and dtype_of(v) == dt,
            f"{op.name}: operands and results must share one element type, got {v.type} "
            f"beside {raw[0].type}",
        )


# ------------------------------------------------------------------------- weights


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A constant tensor, stored outside the IR and referenced by name."""

    name = "nn.weight"
    ref = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$ref attr-dict `:` type($result)"

    def __init__(self, ref: str, ty: TensorType):
        super().__init__(properties={"ref": StringAttr(ref)}, result_types=[ty])


# ---------------------------------------------------------------------- elementwise


class UnaryOp(NNOp):
    """A shape-preserving op of one tensor."""

    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_float_or_quant(self, self.x, "the input")
        _check_float_or_quant(self, self.y, "the result")

    def fn(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [self.fn(args[0])]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "nn.relu"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.relu(x)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "nn.sigmoid"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.sigmoid(x)


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "nn.tanh"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.tanh(x)


@irdl_op_definition
class HardSwishOp(UnaryOp):
    name = "nn.hard_swish"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.hard_swish(x)


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    name = "nn.hard_sigmoid"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.hard_sigmoid(x, alpha=self.float_("alpha"), beta=self.float_("beta"))


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    name = "nn.leaky_relu"
    alpha = prop_def(FloatAttr)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.leaky_relu(x, alpha=self.float_("alpha"))


@irdl_op_definition
class EluOp(UnaryOp):
    name = "nn.elu"
    alpha = prop_def(FloatAttr)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.elu(x, alpha=self.float_("alpha"))


@irdl_op_definition
class GeluOp(UnaryOp):
    name = "nn.gelu"
    approximate = opt_prop_def(StringAttr)

    def check_operands(self) -> None:
        super().check_operands()
        _require(
            self.str_("approximate", "none") in ("none", "tanh"),
            f'{self.name}: approximate must be "none" or "tanh", got '
            f'"{self.str_("approximate", "none")}"',
        )

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.gelu(x, approximate=self.str_("approximate", "none"))


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "nn.exp"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.exp(x)


@irdl_op_definition
class LogOp(UnaryOp):
    name = "nn.log"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.log(x)


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "nn.sqrt"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.sqrt(x)


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "nn.abs"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.abs(x)


@irdl_op_definition
class FloorOp(UnaryOp):
    name = "nn.floor"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.floor(x)


@irdl_op_definition
class ClipOp(UnaryOp):
    """Clamp to [min, max]; Relu6 is Clip(0, 6)."""

    name = "nn.clip"
    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)

    def check_operands(self) -> None:
        super().check_operands()
        _require(
            self.float_("min") <= self.float_("max"),
            f"{self.name}: min {self.float_('min')} exceeds max {self.float_('max')}",
        )

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.clip(x, lo=self.float_("min"), hi=self.float_("max"))


@irdl_op_definition
class IdentityOp(UnaryOp):
    name = "nn.identity"
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT

    def check_operands(self) -> None:
        # a copy moves values of any element type (a constant graph output
        # of int64 or bool is copied out by one)
        _check_data(self)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return x.copy()


def _dims(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def broadcast_shapes(*shapes: Sequence[int], op: str = "") -> tuple[int, ...]:
    """numpy (ONNX multidirectional) broadcasting; `op` prefixes the message."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError as e:
        raise VerifyException(
            (f"{op}: " if op else "")
            + "operand shapes "
            + " and ".join(_dims(s) for s in shapes)
            + " do not broadcast"
        ) from e


class BinaryOp(NNOp):
    """An elementwise op of two tensors with numpy (ONNX) broadcasting."""

    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    INTEGER_DATA: ClassVar[bool] = False
    """Whether the op also takes unquantized integer operands (one element
    type for both and the result; numpy's wrap-around arithmetic)."""

    def integer_data(self) -> bool:
        """Unquantized integer operands (not f32, not #nn.q)."""
        values = (self.lhs, self.rhs, self.y)
        return all(quant_of(v) is None for v in values) and dtype_of(self.lhs).kind in "iu"

    def check_operands(self) -> None:
        if self.integer_data():
            _require(
                self.INTEGER_DATA,
                f"{self.name}: integer operands are supported by add, sub, mul, div, max, min "
                f"and pow only, got {self.lhs.type}",
            )
            _require(
                dtype_of(self.lhs) == dtype_of(self.rhs) == dtype_of(self.y),
                f"{self.name}: integer operands and the result must share one element type, "
                f"got {self.lhs.type}, {self.rhs.type} and {self.y.type}",
            )
            return
        for v, what in ((self.lhs, "lhs"), (self.rhs, "rhs"), (self.y, "result")):
            _check_float_or_quant(self, v, f"the {what}")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs), op=self.name)]

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [self.fn(args[0], args[1])]

    def fixed_quants(self) -> tuple[QuantAttr, QuantAttr, QuantAttr] | None:
        """The three quantizations of an all-int8 op (None otherwise)."""
        qa, qb, qy = quant_of(self.lhs), quant_of(self.rhs), quant_of(self.y)
        if qa is None or qb is None or qy is None:
            return None
        return qa, qb, qy

    def fixed_problem(self) -> str | None:
        if self.FIXED and self.is_quantized() and self.fixed_quants() is None:
            return f"{self.name} mixes int8 and float32 operands"
        if self.is_quantized() and self.quant_kind() is QuantKind.EXACT:
            qs = {quant_of(v) for v in (self.lhs, self.rhs, self.y)}
            if len(qs) > 1:  # the C rescales such operands in float32
                return (
                    f"{self.name} of operands quantized differently from its result has no "
                    "integer-only form yet"
                )
        return super().fixed_problem()

    def compute_fixed(self, args: list[np.ndarray]) -> list[np.ndarray]:
        q = self.fixed_quants()
        assert q is not None
        a, b, y = ((float(x.scale_value), int(x.zp_value)) for x in q)
        return [self.fn_fixed(args[0], args[1], a, b, y, dtype_of(self.y))]

    def fn_fixed(
        self,
        qa: np.ndarray,
        qb: np.ndarray,
        a: tuple[float, int],
        b: tuple[float, int],
        y: tuple[float, int],
        dtype: np.dtype,
    ) -> np.ndarray:
        raise NotImplementedError(f"{self.name} has no integer-only definition")


@irdl_op_definition
class AddOp(BinaryOp):
    name = "nn.add"
    INTEGER_DATA: ClassVar[bool] = True
    FIXED: ClassVar[bool] = True

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def fn_fixed(self, qa, qb, a, b, y, dtype) -> np.ndarray:  # noqa: ANN001
        return K.add_fixed(qa, qb, a=a, b=b, y=y, dtype=dtype)


@irdl_op_definition
class SubOp(BinaryOp):
    name = "nn.sub"
    INTEGER_DATA: ClassVar[bool] = True
    FIXED: ClassVar[bool] = True

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b

    def fn_fixed(self, qa, qb, a, b, y, dtype) -> np.ndarray:  # noqa: ANN001
        return K.add_fixed(qa, qb, a=a, b=b, y=y, dtype=dtype, sign=-1)


@irdl_op_definition
class MulOp(BinaryOp):
    name = "nn.mul"
    INTEGER_DATA: ClassVar[bool] = True
    FIXED: ClassVar[bool] = True

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a * b

    def fn_fixed(self, qa, qb, a, b, y, dtype) -> np.ndarray:  # noqa: ANN001
        return K.mul_fixed(qa, qb, a=a, b=b, y=y, dtype=dtype)


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; of integer data, onnxruntime's quotient truncated toward zero
    (`kernels.divide_integers`, which also defines a zero divisor)."""

    name = "nn.div"
    INTEGER_DATA: ClassVar[bool] = True

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if np.asarray(a).dtype.kind in "iu":
            return K.divide_integers(a, b)
        return a / b


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "nn.max"
    INTEGER_DATA: ClassVar[bool] = True
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(a, b)


@irdl_op_definition
class MinOp(BinaryOp):
    name = "nn.min"
    INTEGER_DATA: ClassVar[bool] = True
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b)


@irdl_op_definition
class PReluOp(BinaryOp):
    """Leaky rectifier with a learned slope, broadcast against the input."""

    name = "nn.prelu"

    def infer_shapes(self) -> list[tuple[int, ...]]:
        out = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs), op=self.name)
        _require(
            out == shape_of(self.lhs),
            f"{self.name}: the slope {_dims(shape_of(self.rhs))} must broadcast to the "
            f"input shape {_dims(shape_of(self.lhs))}",
        )
        return [out]

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return K.prelu(a, b)


# -------------------------------------------------------------------- convolutions


def _window_out(
    size: int, k: int, s: int, d: int, pb: int, pe: int, ceil_mode: bool = False
) -> int:
    eff = (k - 1) * d + 1
    span = size + pb + pe - eff
    if span < 0:
        raise VerifyException(
            f"a window of {eff} (kernel {k}, dilation {d}) does not fit an input of "
            f"{size} with pads {pb},{pe}"
        )
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + pb:
        out -= 1
    return out


class WindowOp(NNOp):
    """An op that slides a window over the spatial axes of a feature map."""

    TILING: ClassVar[TilingClass] = TilingClass.HALO

    def spatial_rank(self) -> int:
        return len(shape_of(self.operands[0])) - 2

    def kernel(self) -> tuple[int, ...]:
        return self.ints("kernel")

    def strides(self) -> tuple[int, ...]:
        return self.ints("strides") or (1,) * self.spatial_rank()

    def dilations(self) -> tuple[int, ...]:
        return self.ints("dilations") or (1,) * self.spatial_rank()

    def pads(self) -> tuple[int, ...]:
        return self.ints("pads") or (0,) * (2 * self.spatial_rank())

    def check_window(self) -> None:
        r = _rank(self.operands[0])
        _require(
            r in (3, 4),
            f"{self.name}: the input must be a rank-3 (N, W, C) or rank-4 (N, H, W, C) "
            f"feature map, got rank {r}",
        )
        n = r - 2
        for prop, want in (("strides", n), ("dilations", n), ("pads", 2 * n)):
            got = len(self.ints(prop))
            _require(
                got in (0, want),
                f"{self.name}: {prop} needs {want} values for a rank-{r} input, got {got}",
            )
        _require(
            all(v >= 1 for v in (*self.strides(), *self.dilations())),
            f"{self.name}: strides and dilations must be >= 1",
        )
        _require(all(p >= 0 for p in self.pads()), f"{self.name}: pads must be >= 0")
        _require(
            all(k >= 1 for k in self.kernel()),
            f"{self.name}: kernel sizes must be >= 1, got {list(self.kernel())}",
        )

    def window_shape(self, spatial_in: Sequence[int], ceil_mode: bool = False) -> list[int]:
        k, s, d, p = self.kernel(), self.strides(), self.dilations(), self.pads()
        n = len(spatial_in)
        out: list[int] = []
        for i in range(n):
            try:
                out.append(_window_out(spatial_in[i], k[i], s[i], d[i], p[i], p[n + i], ceil_mode))
            except VerifyException as e:
                raise VerifyException(f"{self.name}: spatial axis {i}: {e}") from None
        return out


class ConvLikeOp(WindowOp):
    """What a convolution and a transposed convolution share: operands,
    properties, element types and the integer path (int32 accumulators,
    `requantize_acc` once)."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    weight_scale = opt_operand_def(TensorType)
    output = result_def(TensorType)
    kernel_ = prop_def(DenseArrayBase, prop_name="kernel")
    strides_ = opt_prop_def(DenseArrayBase, prop_name="strides")
    dilations_ = opt_prop_def(DenseArrayBase, prop_name="dilations")
    pads_ = opt_prop_def(DenseArrayBase, prop_name="pads")
    group = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.INTEGER

    def groups(self) -> int:
        return self.int_("group", 1)

    def kernel_fn(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The numpy kernel with this op's geometry (float or exact integer)."""
        raise NotImplementedError(f"{self.name} names no kernel")

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x, w, b = args[:3]
        return [self.kernel_fn(x, w, b)]

    def compute_quantized(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x, w, b, ws = args
        qx, qy = quant_of(self.input), quant_of(self.output)
        assert qx is not None and qy is not None
        acc = self.kernel_fn(
            x.astype(np.int32) - np.int32(qx.zp_value), w.astype(np.int32), b.astype(np.int32)
        )
        return [
            requantize_acc(
                acc, qx.scale_value, ws, qy, dtype_of(self.output), fixed=requant_fixed(self)
            )
        ]

    def check_types(self, cout: int) -> None:
        """Element types of the float or the quantized form."""
        what = "conv" if isinstance(self, ConvOp) else "transposed conv"
        if self.is_quantized():
            _require(
                quant_of(self.input) is not None and quant_of(self.output) is not None,
                f"{self.name}: a quantized {what} needs quantized input and result",
            )
            _require(
                dtype_of(self.weight) == np.int8 and dtype_of(self.bias) == np.int32,
                f"{self.name}: a quantized {what} needs i8 weights and an i32 bias",
            )
            _require(
                self.weight_scale is not None
                and shape_of(self.weight_scale) in ((cout,), (1,), ())
                and dtype_of(self.weight_scale) == np.float32,
                f"{self.name}: a quantized {what} needs f32 per-channel weight scales "
                f"of shape ({cout},), got "
                + (str(self.weight_scale.type) if self.weight_scale is not None else "none"),
            )
            return
        for v, role in ((self.input, "input"), (self.weight, "weight"), (self.bias, "bias")):
            if dtype_of(v) != np.float32:  # the message only on failure: printing a type is slow
                raise VerifyException(
                    f"{self.name}: the {role} must be f32 in a float {what}, got {v.type}"
                )
        _require(self.weight_scale is None, f"{self.name}: weight scales need a quantized {what}")


@irdl_op_definition
class ConvOp(ConvLikeOp):
    """Convolution: groups, strides, dilations, explicit pads; 1D or 2D.

    Weights are (Cout, *kernel, Cin / group). Quantized: i8/ui8 input, i8 weights
    (symmetric, per output channel scales as a fourth operand), i32 bias; int32
    accumulators requantized once by `kernels.requantize`.
    """

    name = "nn.conv"

    def check_operands(self) -> None:
        self.check_window()
        xs, ws, bs = shape_of(self.input), shape_of(self.weight), shape_of(self.bias)
        r = len(xs)
        _require(
            len(ws) == r,
            f"{self.name}: the weight must have rank {r} (Cout, *kernel, Cin/group), got {len(ws)}",
        )
        _require(
            tuple(ws[1:-1]) == self.kernel(),
            f"{self.name}: weight kernel {ws[1:-1]} does not match kernel {self.kernel()}",
        )
        g = self.groups()
        _require(g >= 1, f"{self.name}: group must be >= 1, got {g}")
        _require(ws[0] % g == 0, f"{self.name}: Cout {ws[0]} is not divisible by group {g}")
        _require(
            xs[-1] == ws[-1] * g,
            f"{self.name}: input has {xs[-1]} channels but the weight expects "
            f"{ws[-1]} x group {g} = {ws[-1] * g}",
        )
        _require(bs == (ws[0],), f"{self.name}: bias must have shape ({ws[0]},), got {bs}")
        self.check_types(ws[0])

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs, ws = shape_of(self.input), shape_of(self.weight)
        return [(xs[0], *self.window_shape(xs[1:-1]), ws[0])]

    def macs(self) -> int:
        ws = shape_of(self.weight)
        return int(np.prod(shape_of(self.output))) * int(np.prod(ws[1:]))

    def is_depthwise(self) -> bool:
        return self.groups() > 1 and self.groups() == shape_of(self.input)[-1]

    def kernel_fn(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return K.conv(
            x,
            w,
            b,
            strides=self.strides(),
            pads=self.pads(),
            dilations=self.dilations(),
            group=self.groups(),
        )


def requantize_acc(
    acc: np.ndarray,
    in_scale: np.float32,
    w_scale: np.ndarray,
    qy: QuantAttr,
    dtype: np.dtype,
    *,
    fixed: bool = False,
) -> np.ndarray:
    """int32 accumulators to the output type: M = float32(s_x * s_w / s_y),
    applied in float32 (`kernels.requantize`) or, `fixed`, as a Q31
    multiplier and shift (`kernels.requantize_fixed`)."""
    mult = (np.float32(in_scale) * w_scale.astype(np.float32)) / qy.scale_value
    if fixed:
        return K.requantize_fixed(
            acc, real=mult.astype(np.float32), zero_point=qy.zp_value, dtype=dtype
        )
    return K.requantize(
        acc, multiplier=mult.astype(np.float32), zero_point=qy.zp_value, dtype=dtype
    )


@irdl_op_definition
class ConvTransposeOp(ConvLikeOp):
    """Transposed convolution; weights are (Cin, *kernel, Cout / group)."""

    name = "nn.conv_transpose"
    TILING: ClassVar[TilingClass] = TilingClass.EXPANDED
    output_padding = opt_prop_def(DenseArrayBase)

    def out_padding(self) -> tuple[int, ...]:
        return self.ints("output_padding") or (0,) * self.spatial_rank()

    def check_operands(self) -> None:
        self.check_window()
        xs, ws, bs = shape_of(self.input), shape_of(self.weight), shape_of(self.bias)
        g = self.groups()
        r = len(xs)
        _require(
            len(ws) == r,
            f"{self.name}: the weight must have rank {r} (Cin, *kernel, Cout/group), got {len(ws)}",
        )
        _require(
            ws[0] == xs[-1],
            f"{self.name}: input has {xs[-1]} channels but the weight expects {ws[0]}",
        )
        _require(
            tuple(ws[1:-1]) == self.kernel(),
            f"{self.name}: weight kernel {ws[1:-1]} does not match kernel {self.kernel()}",
        )
        _require(g >= 1, f"{self.name}: group must be >= 1, got {g}")
        _require(xs[-1] % g == 0, f"{self.name}: Cin {xs[-1]} is not divisible by group {g}")
        out_pad = self.ints("output_padding")
        _require(
            len(out_pad) in (0, r - 2),
            f"{self.name}: output_padding needs {r - 2} values for a rank-{r} input, "
            f"got {len(out_pad)}",
        )
        _require(
            all(
                0 <= p < max(s, d)
                for p, s, d in zip(self.out_padding(), self.strides(), self.dilations())
            ),
            f"{self.name}: output_padding {list(self.out_padding())} must be >= 0 and "
            "smaller than the stride or the dilation",
        )
        _require(
            bs == (ws[-1] * g,),
            f"{self.name}: bias must have shape ({ws[-1] * g},), got {bs}",
        )
        self.check_types(ws[-1] * g)

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs, ws = shape_of(self.input), shape_of(self.weight)
        k, s, d, p, op = (
            self.kernel(),
            self.strides(),
            self.dilations(),
            self.pads(),
            self.out_padding(),
        )
        n = len(xs) - 2
        sp = [
            s[i] * (xs[1 + i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - p[i] - p[n + i]
            for i in range(n)
        ]
        return [(xs[0], *sp, ws[-1] * self.groups())]

    def kernel_fn(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return K.conv_transpose(
            x,
            w,
            b,
            strides=self.strides(),
            pads=self.pads(),
            dilations=self.dilations(),
            group=self.groups(),
            output_padding=self.out_padding(),
        )


class PoolOp(WindowOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_ = prop_def(DenseArrayBase, prop_name="kernel")
    strides_ = opt_prop_def(DenseArrayBase, prop_name="strides")
    pads_ = opt_prop_def(DenseArrayBase, prop_name="pads")
    ceil_mode = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        self.check_window()
        _require(
            len(self.kernel()) == self.spatial_rank(),
            f"{self.name}: kernel needs {self.spatial_rank()} values for a rank-"
            f"{self.spatial_rank() + 2} input, got {len(self.kernel())}",
        )
        _check_float_or_quant(self, self.input, "the input")
        _check_float_or_quant(self, self.output, "the result")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        return [(xs[0], *self.window_shape(xs[1:-1], bool(self.int_("ceil_mode"))), xs[-1])]


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "nn.max_pool"
    dilations_ = opt_prop_def(DenseArrayBase, prop_name="dilations")
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.max_pool(
                args[0],
                kernel=self.kernel(),
                strides=self.strides(),
                pads=self.pads(),
                dilations=self.dilations(),
                ceil_mode=bool(self.int_("ceil_mode")),
            )
        ]


@irdl_op_definition
class AveragePoolOp(PoolOp):
    name = "nn.average_pool"
    count_include_pad = opt_prop_def(IntegerAttr[I64])

    FIXED: ClassVar[bool] = True

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.avg_pool(
                args[0],
                kernel=self.kernel(),
                strides=self.strides(),
                pads=self.pads(),
                ceil_mode=bool(self.int_("ceil_mode")),
                count_include_pad=bool(self.int_("count_include_pad")),
            )
        ]

    def compute_fixed(self, args: list[np.ndarray]) -> list[np.ndarray]:
        qx, qy = quant_of(self.input), quant_of(self.output)
        assert qx is not None and qy is not None
        total, count = K.avg_pool_parts(
            args[0].astype(np.float64) - qx.zp_value,
            kernel=self.kernel(),
            strides=self.strides(),
            pads=self.pads(),
            ceil_mode=bool(self.int_("ceil_mode")),
            count_include_pad=bool(self.int_("count_include_pad")),
        )
        y = (float(qy.scale_value), int(qy.zp_value))
        return [
            K.mean_fixed(
                total.astype(np.int64),
                count.astype(np.int64),
                s_x=float(qx.scale_value),
                y=y,
                dtype=dtype_of(self.output),
            )
        ]


@irdl_op_definition
class GlobalAveragePoolOp(NNOp):
    name = "nn.global_average_pool"
    TILING: ClassVar[TilingClass] = TilingClass.ACCUMULATE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        r = _rank(self.input)
        _require(
            r in (3, 4),
            f"{self.name}: the input must be a rank-3 (N, W, C) or rank-4 (N, H, W, C) "
            f"feature map, got rank {r}",
        )
        _check_float_or_quant(self, self.input, "the input")
        _check_float_or_quant(self, self.output, "the result")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        return [(xs[0], *([1] * (len(xs) - 2)), xs[-1])]

    FIXED: ClassVar[bool] = True

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.global_avg_pool(args[0])]

    def compute_fixed(self, args: list[np.ndarray]) -> list[np.ndarray]:
        qx = quant_of(self.input)
        assert qx is not None
        x = args[0].astype(np.int64) - qx.zp_value
        total = x.sum(axis=tuple(range(1, x.ndim - 1)), keepdims=True)
        return [self.finish_fixed(total)]

    def finish_fixed(self, total: np.ndarray) -> np.ndarray:
        """The integer-only mean from the sums of (q - zp) over every position."""
        qx, qy = quant_of(self.input), quant_of(self.output)
        assert qx is not None and qy is not None
        count = math.prod(shape_of(self.input)[1:-1])
        return K.mean_fixed(
            total,
            count,
            s_x=float(qx.scale_value),
            y=(float(qy.scale_value), int(qy.zp_value)),
            dtype=dtype_of(self.output),
        )


@irdl_op_definition
class BatchNormOp(NNOp):
    """Inference batch normalisation over the channel (last) axis, when not folded."""

    name = "nn.batch_norm"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _require(_rank(self.input) >= 2, f"{self.name}: the input needs rank >= 2")
        _check_float_or_quant(self, self.input, "the input")
        _check_float_or_quant(self, self.output, "the result")
        c = shape_of(self.input)[-1]
        for v in (self.scale, self.bias, self.mean, self.var):
            _require(
                shape_of(v) == (c,) and dtype_of(v) == np.float32,
                f"{self.name}: parameters must be f32 of shape ({c},), got {v.type}",
            )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x, g, b, m, v = args
        inv = (g / np.sqrt(v + np.float32(self.float_("epsilon")))).astype(np.float32)
        return [((x - m) * inv + b).astype(np.float32)]


# ---------------------------------------------------------------- matrix products


@irdl_op_definition
class GemmOp(NNOp):
    """Y = alpha * op(A) @ op(B) + beta * C (ONNX Gemm); B is read whole."""

    name = "nn.gemm"
    TILING: ClassVar[TilingClass] = TilingClass.MATRIX_ROWS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.INTEGER
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    weight_scale = opt_operand_def(TensorType)
    y = result_def(TensorType)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    trans_a = opt_prop_def(IntegerAttr[I64])
    trans_b = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def dims(self) -> tuple[int, int, int]:
        sa, sb = shape_of(self.a), shape_of(self.b)
        _require(
            len(sa) == 2 and len(sb) == 2,
            f"{self.name}: A and B must be matrices (rank 2), got {_dims(sa)} and {_dims(sb)}",
        )
        m, k = (sa[1], sa[0]) if self.int_("trans_a") else sa
        k2, n = (sb[1], sb[0]) if self.int_("trans_b") else sb
        _require(
            k == k2,
            f"{self.name}: inner dimensions differ: op(A) is {m}x{k}, op(B) is {k2}x{n}",
        )
        return m, n, k

    def check_operands(self) -> None:
        m, n, _ = self.dims()
        cs = shape_of(self.c)
        _require(
            len(cs) <= 2 and broadcast_shapes(cs, (m, n), op=self.name) == (m, n),
            f"{self.name}: C of shape {_dims(cs)} does not broadcast to the {m}x{n} result",
        )
        if self.is_quantized():
            _require(
                quant_of(self.a) is not None and quant_of(self.y) is not None,
                f"{self.name}: a quantized gemm needs a quantized A and result",
            )
            _require(
                dtype_of(self.b) == np.int8 and dtype_of(self.c) == np.int32,
                f"{self.name}: a quantized gemm needs an i8 B and an i32 C",
            )
            _require(
                self.weight_scale is not None
                and shape_of(self.weight_scale) in ((n,), (1,), ())
                and dtype_of(self.weight_scale) == np.float32,
                f"{self.name}: a quantized gemm needs f32 per-column weight scales of "
                f"shape ({n},), got "
                + (str(self.weight_scale.type) if self.weight_scale is not None else "none"),
            )
            _require(
                not self.int_("trans_a")
                and self.float_("alpha", 1.0) == 1.0
                and self.float_("beta", 1.0) == 1.0,
                f"{self.name}: a quantized gemm takes alpha = beta = 1 and no trans_a",
            )
        else:
            for v, role in ((self.a, "A"), (self.b, "B"), (self.c, "C")):
                _require(
                    dtype_of(v) == np.float32,
                    f"{self.name}: {role} must be f32 in a float gemm, got {v.type}",
                )
            _require(self.weight_scale is None, f"{self.name}: weight scales need a quantized gemm")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        m, n, _ = self.dims()
        return [(m, n)]

    def macs(self) -> int:
        m, n, k = self.dims()
        return m * n * k

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        a, b, c = args[:3]
        return [
            K.gemm(
                a,
                b,
                c,
                alpha=self.float_("alpha", 1.0),
                beta=self.float_("beta", 1.0),
                trans_a=bool(self.int_("trans_a")),
                trans_b=bool(self.int_("trans_b")),
            )
        ]

    def compute_quantized(self, args: list[np.ndarray]) -> list[np.ndarray]:
        a, b, c, ws = args
        qa, qy = quant_of(self.a), quant_of(self.y)
        assert qa is not None and qy is not None
        bi = b.astype(np.int32)
        if self.int_("trans_b"):
            bi = bi.T
        acc = K.matmul(a.astype(np.int32) - np.int32(qa.zp_value), bi) + c.astype(np.int32)
        return [
            requantize_acc(acc, qa.scale_value, ws, qy, dtype_of(self.y), fixed=requant_fixed(self))
        ]


def matmul_shape(name: str, sa: Sequence[int], sb: Sequence[int]) -> tuple[int, ...]:
    """numpy matmul's shape rule, without multiplying anything."""
    _require(len(sa) >= 1 and len(sb) >= 1, f"{name}: operands must have rank >= 1")
    a2, b2 = list(sa), list(sb)
    if len(sa) == 1:
        a2.insert(0, 1)
    if len(sb) == 1:
        b2.append(1)
    _require(
        a2[-1] == b2[-2],
        f"{name}: shapes {_dims(sa)} and {_dims(sb)} do not multiply "
        f"({a2[-1]} columns against {b2[-2]} rows)",
    )
    batch = broadcast_shapes(a2[:-2], b2[:-2], op=name)
    rows = (a2[-2],) if len(sa) > 1 else ()
    cols = (b2[-1],) if len(sb) > 1 else ()
    return (*batch, *rows, *cols)


@irdl_op_definition
class MatMulOp(NNOp):
    """numpy matmul with broadcasting batch axes (ONNX MatMul)."""

    name = "nn.matmul"
    TILING: ClassVar[TilingClass] = TilingClass.MATRIX_ROWS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.INTEGER
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    weight_scale = opt_operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [matmul_shape(self.name, shape_of(self.a), shape_of(self.b))]

    def check_operands(self) -> None:
        if self.is_quantized():
            _require(
                quant_of(self.a) is not None and quant_of(self.y) is not None,
                f"{self.name}: a quantized matmul needs a quantized A and result",
            )
            _require(
                quant_of(self.b) is not None
                or (dtype_of(self.b) == np.int8 and self.weight_scale is not None),
                f"{self.name}: a quantized matmul needs a quantized B or i8 weights with scales",
            )
            if quant_of(self.b) is None:
                ws, n = self.weight_scale, (shape_of(self.b) or (1,))[-1]
                assert ws is not None
                _require(
                    shape_of(ws) in ((n,), (1,), ()) and dtype_of(ws) == np.float32,
                    f"{self.name}: weight scales must be f32 of shape ({n},), got {ws.type}",
                )
        else:
            for v, role in ((self.a, "A"), (self.b, "B")):
                _require(
                    dtype_of(v) == np.float32,
                    f"{self.name}: {role} must be f32 in a float matmul, got {v.type}",
                )
            _require(
                self.weight_scale is None,
                f"{self.name}: weight scales need a quantized matmul",
            )

    def macs(self) -> int:
        sa = shape_of(self.a)
        return int(np.prod(shape_of(self.y))) * sa[-1]

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.matmul(args[0], args[1])]

    def compute_quantized(self, args: list[np.ndarray]) -> list[np.ndarray]:
        a, b = args[:2]
        qa, qb, qy = quant_of(self.a), quant_of(self.b), quant_of(self.y)
        assert qa is not None and qy is not None
        bi = b.astype(np.int32)
        if qb is not None:
            bi = bi - np.int32(qb.zp_value)
            ws = np.array([qb.scale_value], np.float32)
        else:
            ws = args[2]
        acc = K.matmul(a.astype(np.int32) - np.int32(qa.zp_value), bi)
        return [
            requantize_acc(acc, qa.scale_value, ws, qy, dtype_of(self.y), fixed=requant_fixed(self))
        ]


# --------------------------------------------------------------- shape and layout


def _norm_axis(axis: int, rank: int, op: str) -> int:
    if not -rank <= axis < rank:
        raise VerifyException(
            f"{op}: axis {axis} is out of range [{-rank}, {rank - 1}] for rank {rank}"
        )
    return axis % rank


@irdl_op_definition
class ConcatOp(NNOp):
    """Concatenation; along the last (channel) axis it tiles with the band."""

    name = "nn.concat"
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    """The general case; `tiling()` refines a channel concat to POINTWISE."""
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def tiling(self) -> TilingClass:
        r = len(shape_of(self.output))
        return (
            TilingClass.POINTWISE
            if self.int_("axis") % r == r - 1 and r in (3, 4)
            else TilingClass.INDEPENDENT_AXIS
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        shapes = [shape_of(v) for v in self.inputs]
        _require(len(shapes) >= 1, f"{self.name}: needs at least one input")
        r = len(shapes[0])
        ax = _norm_axis(self.int_("axis"), r, self.name)
        for s in shapes:
            _require(
                len(s) == r and all(s[i] == shapes[0][i] for i in range(r) if i != ax),
                f"{self.name}: inputs differ outside axis {ax}: "
                + ", ".join("x".join(map(str, t)) for t in shapes),
            )
        out = list(shapes[0])
        out[ax] = sum(s[ax] for s in shapes)
        return [tuple(out)]

    def check_operands(self) -> None:
        _check_data(self)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.concatenate(args, axis=self.int_("axis"))]


@irdl_op_definition
class SplitOp(NNOp):
    name = "nn.split"
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    sizes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        ax = _norm_axis(self.int_("axis"), len(xs), self.name)
        sizes = self.ints("sizes")
        _require(
            sum(sizes) == xs[ax] and all(s >= 0 for s in sizes),
            f"{self.name}: sizes {list(sizes)} do not add up to {xs[ax]} along axis {ax}",
        )
        return [tuple(xs[:ax]) + (s,) + tuple(xs[ax + 1 :]) for s in sizes]

    def check_operands(self) -> None:
        _check_data(self)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        cuts = np.cumsum(self.ints("sizes"))[:-1]
        return list(np.split(args[0], cuts, axis=self.int_("axis")))


class ReshapeLikeOp(NNOp):
    """A view change that keeps the element order: Reshape, Flatten, (Un)Squeeze."""

    TILING: ClassVar[TilingClass] = TilingClass.RESHAPE
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [shape_of(self.output)]

    def check_operands(self) -> None:
        self.infer_shapes()  # the axis rules of the op come before the element count
        a, b = shape_of(self.input), shape_of(self.output)
        _require(
            math.prod(a) == math.prod(b),
            f"{self.name}: cannot reshape {_dims(a)} ({math.prod(a)} elements) into "
            f"{_dims(b)} ({math.prod(b)} elements)",
        )
        _check_data(self)
        _require(
            dtype_of(self.input) == dtype_of(self.output)
            and quant_of(self.input) == quant_of(self.output),
            f"{self.name}: input and result element types must agree, got "
            f"{self.input.type} and {self.output.type}",
        )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [args[0].reshape(shape_of(self.output))]


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    name = "nn.reshape"


@irdl_op_definition
class FlattenOp(ReshapeLikeOp):
    name = "nn.flatten"
    axis = prop_def(IntegerAttr[I64])

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        r, axis = len(xs), self.int_("axis")
        _require(
            -r <= axis <= r,
            f"{self.name}: axis {axis} is out of range [{-r}, {r}] for rank {r}",
        )
        ax = axis + r if axis < 0 else axis  # ONNX: a negative axis counts from the back
        return [(math.prod(xs[:ax]), math.prod(xs[ax:]))]


@irdl_op_definition
class SqueezeOp(ReshapeLikeOp):
    name = "nn.squeeze"
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        axes = {_norm_axis(a, len(xs), self.name) for a in self.ints("axes")}
        for a in axes:
            _require(xs[a] == 1, f"{self.name}: axis {a} has size {xs[a]}, not 1")
        return [tuple(d for i, d in enumerate(xs) if i not in axes)]


@irdl_op_definition
class UnsqueezeOp(ReshapeLikeOp):
    name = "nn.unsqueeze"
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = list(shape_of(self.input))
        r = len(xs) + len(self.ints("axes"))
        axes = sorted(_norm_axis(a, r, self.name) for a in self.ints("axes"))
        _require(
            len(set(axes)) == len(axes),
            f"{self.name}: axes {list(self.ints('axes'))} name an output axis twice",
        )
        for a in axes:
            xs.insert(a, 1)
        return [tuple(xs)]


@irdl_op_definition
class TransposeOp(NNOp):
    name = "nn.transpose"
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        p = self.ints("perm")
        _require(
            sorted(p) == list(range(len(xs))),
            f"{self.name}: perm {list(p)} is not a permutation of {len(xs)} axes",
        )
        return [tuple(xs[i] for i in p)]

    def check_operands(self) -> None:
        _check_data(self)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.transpose(args[0], self.ints("perm")))]


@irdl_op_definition
class PadOp(NNOp):
    """Constant, reflect, edge or wrap padding; pads are begin per axis then end per axis."""

    name = "nn.pad"
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_data(self)
        r = _rank(self.input)
        _require(
            len(self.ints("pads")) == 2 * r,
            f"{self.name}: pads needs {2 * r} values for a rank-{r} input, got "
            f"{len(self.ints('pads'))}",
        )
        _require(
            self.str_("mode") in ("constant", "reflect", "edge", "wrap"),
            f"{self.name}: mode must be constant, reflect, edge or wrap, got "
            f"{self.str_('mode')}",
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs, p = shape_of(self.input), self.ints("pads")
        r = len(xs)
        return [tuple(xs[i] + p[i] + p[r + i] for i in range(r))]

    def _same_quantization(self) -> bool:
        # a non-zero constant must be quantized: fall back to the real path
        return super()._same_quantization() and (
            self.str_("mode") != "constant" or self.float_("value") == 0.0
        )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x = args[0]
        value: float | int = self.float_("value")
        q = quant_of(self.input)
        if q is not None and x.dtype != np.float32:
            value = q.zp_value
        return [K.pad(x, pads=self.ints("pads"), mode=self.str_("mode"), value=value)]


_RESIZE_COORDINATES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(NNOp):
    """Resize of the spatial axes to the result's size (nearest or linear)."""

    name = "nn.resize"
    TILING: ClassVar[TilingClass] = TilingClass.RESIZE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    traits = traits_def(Pure())

    def quant_kind(self) -> QuantKind:
        return QuantKind.EXACT if self.str_("mode") == "nearest" else QuantKind.REAL

    def check_operands(self) -> None:
        xs, ys = shape_of(self.input), shape_of(self.output)
        _require(
            len(xs) in (3, 4),
            f"{self.name}: the input must be a rank-3 (N, W, C) or rank-4 (N, H, W, C) "
            f"feature map, got rank {len(xs)}",
        )
        _require(
            len(ys) == len(xs) and xs[0] == ys[0] and xs[-1] == ys[-1],
            f"{self.name}: only the spatial axes may change size, got {_dims(xs)} -> {_dims(ys)}",
        )
        _check_values(self)
        _require(
            self.str_("mode") in ("nearest", "linear"),
            f"{self.name}: mode must be nearest or linear, got {self.str_('mode')}",
        )
        ctm = self.str_("coordinate_transformation_mode")
        _require(
            ctm in _RESIZE_COORDINATES,
            f"{self.name}: coordinate_transformation_mode must be one of "
            f"{', '.join(_RESIZE_COORDINATES)}, got {ctm}",
        )
        nm = self.str_("nearest_mode", "round_prefer_floor")
        _require(
            nm in _NEAREST_MODES,
            f"{self.name}: nearest_mode must be one of {', '.join(_NEAREST_MODES)}, got {nm}",
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [shape_of(self.output)]

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.resize(
                args[0],
                out_spatial=shape_of(self.output)[1:-1],
                mode=self.str_("mode"),
                coordinate_transformation_mode=self.str_("coordinate_transformation_mode"),
                nearest_mode=self.str_("nearest_mode", "round_prefer_floor"),
            )
        ]


class AxisOp(NNOp):
    """A normalisation along one axis."""

    TILING: ClassVar[TilingClass] = TilingClass.WHOLE_ROWS
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_values(self)
        _norm_axis(self.int_("axis"), _rank(self.input), self.name)

    def whole_axes(self) -> tuple[int, ...]:
        return (self.int_("axis") % _rank(self.input),)


class SoftmaxLikeOp(AxisOp):
    """Softmax and LogSoftmax. On quantized input and result they run the
    integer definition of `kernels.softmax_quantized` (an exp table, integer
    sums and divisions), which the C prints with the same tables."""

    QUANT_KIND: ClassVar[QuantKind] = QuantKind.INTEGER
    LOG: ClassVar[bool] = False

    def check_operands(self) -> None:
        super().check_operands()
        qx, qy = quant_of(self.input), quant_of(self.output)
        if qx is not None and qy is not None:
            _require(
                float(qy.scale_value) >= K.SOFTMAX_MIN_OUT_SCALE,
                f"{self.name}: a quantized result needs a scale >= 2^-15 (the integer "
                f"softmax's range), got {qy.scale_value}",
            )

    def compute_quantized(self, args: list[np.ndarray]) -> list[np.ndarray]:
        qx, qy = quant_of(self.input), quant_of(self.output)
        if qx is None or qy is None:  # one side float: dequantize, compute, quantize
            real = dequantize_array(args[0], qx)
            out = self.compute([real])[0]
            t = cast(TensorType, self.output.type)
            return [quantize_array(out, t) if qy is not None else out]
        return [
            K.softmax_quantized(
                args[0],
                axis=self.int_("axis"),
                s_x=float(qx.scale_value),
                s_y=float(qy.scale_value),
                zp_y=qy.zp_value,
                dtype=dtype_of(self.output),
                log=self.LOG,
            )
        ]


@irdl_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    name = "nn.softmax"

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.softmax(args[0], axis=self.int_("axis"))]


@irdl_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    name = "nn.log_softmax"
    LOG: ClassVar[bool] = True

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.log_softmax(args[0], axis=self.int_("axis"))]


class ReduceOp(NNOp):
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    KIND: ClassVar[str] = ""

    def check_operands(self) -> None:
        _check_values(self)
        _require(
            self.int_("keepdims") in (0, 1),
            f"{self.name}: keepdims must be 0 or 1, got {self.int_('keepdims')}",
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.input)
        listed = [_norm_axis(a, len(xs), self.name) for a in self.ints("axes")]
        _require(
            len(set(listed)) == len(listed),
            f"{self.name}: axes {list(self.ints('axes'))} name an axis twice",
        )
        axes = set(listed) or set(range(len(xs)))
        if self.int_("keepdims"):
            return [tuple(1 if i in axes else d for i, d in enumerate(xs))]
        return [tuple(d for i, d in enumerate(xs) if i not in axes)]

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        axes = self.ints("axes") or tuple(range(args[0].ndim))
        return [K.reduce(args[0], kind=self.KIND, axes=axes, keepdims=bool(self.int_("keepdims")))]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "nn.reduce_mean"
    KIND: ClassVar[str] = "mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "nn.reduce_max"
    KIND: ClassVar[str] = "max"
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "nn.reduce_sum"
    KIND: ClassVar[str] = "sum"


# ----------------------------------------------------------------- quantization


@irdl_op_definition
class QuantizeOp(NNOp):
    """float32 to the quantized result type (rounding half to even, saturating)."""

    name = "nn.quantize"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _require(dtype_of(self.input) == np.float32, f"{self.name}: input must be f32")
        _require(
            quant_of(self.output) is not None,
            f"{self.name}: the result type needs a #nn.q quantization",
        )

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [quantize_array(args[0], cast(TensorType, self.output.type))]


@irdl_op_definition
class DequantizeOp(NNOp):
    """A quantized tensor to float32."""

    name = "nn.dequantize"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _require(
            quant_of(self.input) is not None,
            f"{self.name}: the input type needs a #nn.q quantization",
        )
        _require(dtype_of(self.output) == np.float32, f"{self.name}: result must be f32")

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [dequantize_array(args[0], quant_of(self.input))]


# ------------------------------------------------------------ conditions and flags
#
# ONNX If and Loop take a boolean condition and Loop counts its trips in int64.
# Comparisons give i1 flags; the loop level lowers them like any pointwise op,
# and the If / Loop they feed as scf.if / scf.while (`lower-to-loops`).

FLAG = IntegerType(1)
INDEX = IntegerType(64)


def value_dtype(v: SSAValue | Attribute) -> np.dtype:
    """The numpy dtype of any tensor the dialect holds (`dtype_of`)."""
    return dtype_of(v)


def value_type(
    shape: Sequence[int], dtype: np.dtype | type, quant: QuantAttr | None = None
) -> TensorType:
    """`tensor_type` (bool is i1, int64 is i64)."""
    return tensor_type(shape, dtype, quant)


def value_bytes(v: SSAValue | Attribute) -> int:
    """Bytes per element of any tensor (a flag takes one byte)."""
    return value_dtype(v).itemsize


def is_flag(v: SSAValue | Attribute) -> bool:
    """A single-element i1 tensor: what If and Loop accept as a condition."""
    t = v.type if isinstance(v, SSAValue) else v
    return (
        isinstance(t, TensorType)
        and t.element_type == FLAG
        and math.prod(t.get_shape()) == 1
        and isinstance(t.encoding, NoneAttr)
    )


def flag_value(a: np.ndarray, what: str) -> bool:
    """The truth of a condition array, which must hold exactly one element."""
    if a.size != 1:
        raise ValueError(f"{what}: a condition must hold one element, got shape {a.shape}")
    return bool(a.reshape(()))


class CompareOp(NNOp):
    """An elementwise comparison with broadcasting; the result is an i1 flag tensor.

    Operands are unquantized tensors of one element type (quantized tensors
    are compared after dequantization by the importer). They compute the
    conditions of `nn.if` and `nn.loop`, and boolean data for `nn.where` and
    the logic ops; numpy's comparisons are the reference (NaN compares false).
    """

    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs), op=self.name)]

    def verify_(self) -> None:
        for v, what in ((self.lhs, "lhs"), (self.rhs, "rhs")):
            t = v.type
            _require(
                isinstance(t, TensorType)
                and isinstance(t.encoding, NoneAttr)
                and _safe_dtype(t) is not None,
                f"{self.name}: the {what} must be an unquantized tensor of f32, i8, ui8, "
                f"i32, i64 or i1, got {t}",
            )
        _require(
            value_dtype(self.lhs) == value_dtype(self.rhs),
            f"{self.name}: operands must have one element type, got {self.lhs.type} "
            f"and {self.rhs.type}",
        )
        yt = self.y.type
        _require(
            isinstance(yt, TensorType) and yt.element_type == FLAG,
            f"{self.name}: the result must be a tensor of i1, got {yt}",
        )
        expected = self.infer_shapes()[0]
        _require(
            shape_of(self.y) == expected,
            f"{self.name}: result shape {_dims(shape_of(self.y))} does not match the "
            f"inferred shape {_dims(expected)}",
        )

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(self.fn(args[0], args[1]), dtype=np.bool_)]


def _safe_dtype(t: TensorType) -> np.dtype | None:
    try:
        return value_dtype(t)
    except VerifyException:
        return None


@irdl_op_definition
class LessOp(CompareOp):
    name = "nn.less"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a < b


@irdl_op_definition
class LessEqualOp(CompareOp):
    name = "nn.less_equal"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a <= b


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "nn.greater"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a > b


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    name = "nn.greater_equal"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a >= b


@irdl_op_definition
class EqualOp(CompareOp):
    name = "nn.equal"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a == b


# ------------------------------------------------------------------ control flow

RegionRunner = Callable[[Region, Sequence[np.ndarray]], list[np.ndarray]]
"""Runs a body region on its block arguments and returns what it yields.
The caller supplies it: bodies read weights and values defined above them."""


class ControlFlowOp(IRDLOperation):
    """What `nn.if` and `nn.loop` share.

    Their bodies are graphs of their own: they read values defined above
    (ONNX subgraphs capture outer names) and end in `nn.yield`. To the planner
    the op is one node that runs whole; each body is planned as a model of its
    own under the same budget (see `tigris_ir.plan.ir.plan_tree`).
    """

    TILING: ClassVar[TilingClass] = TilingClass.WHOLE

    def tiling(self) -> TilingClass:
        return self.TILING

    def bodies(self) -> list[tuple[str, Region]]:
        """The body regions with their names (`then`, `else`, `body`)."""
        raise NotImplementedError

    def captured(self) -> list[SSAValue]:
        """Values defined outside the op that its bodies read, in first-use order."""
        seen: dict[SSAValue, None] = {}
        for _, region in self.bodies():
            for inner in region.walk():
                for v in inner.operands:
                    if v not in seen and not _defined_within(v, self):
                        seen[v] = None
        return list(seen)

    def reference(self, args: list[np.ndarray], run_region: RegionRunner) -> list[np.ndarray]:
        """Run the op on its operands' arrays; `run_region` runs a body."""
        raise NotImplementedError

    def _check_yield(self, label: str, region: Region, want: Sequence[Attribute]) -> YieldOp:
        term = region.block.last_op
        _require(
            isinstance(term, YieldOp),
            f"{self.name}: the {label} region must end in nn.yield",
        )
        assert isinstance(term, YieldOp)
        got = [v.type for v in term.values]
        _require(
            list(got) == list(want),
            f"{self.name}: the {label} region yields ({_types(got)}) but the op needs "
            f"({_types(want)})",
        )
        return term


def _types(ts: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in ts)


def _defined_within(v: SSAValue, op: Operation) -> bool:
    """Whether `v` is defined inside one of `op`'s regions."""
    block = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    while block is not None:
        parent = block.parent_op()
        if parent is op:
            return True
        block = parent.parent_block() if parent is not None else None
    return False


def _check_flag(op: Operation, v: SSAValue, what: str) -> None:
    _require(
        is_flag(v),
        f"{op.name}: {what} must be a single-element tensor of i1, got {v.type}",
    )


@irdl_op_definition
class IfOp(ControlFlowOp):
    """ONNX If: runs the then or the else region, as the condition says.

    %y = nn.if %c : tensor<i1> -> (tensor<1x8x8x4xf32>) {
      ...
      nn.yield %a : tensor<1x8x8x4xf32>
    } else {
      ...
      nn.yield %b : tensor<1x8x8x4xf32>
    }
    """

    name = "nn.if"
    cond = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")

    def __init__(
        self,
        cond: SSAValue,
        result_types: Sequence[Attribute],
        then_region: Region,
        else_region: Region,
    ):
        super().__init__(
            operands=[cond],
            result_types=[list(result_types)],
            regions=[then_region, else_region],
        )

    def bodies(self) -> list[tuple[str, Region]]:
        return [("then", self.then_region), ("else", self.else_region)]

    def verify_(self) -> None:
        _check_flag(self, self.cond, "the condition")
        want = [r.type for r in self.outputs]
        for label, region in self.bodies():
            _require(
                not region.block.args,
                f"{self.name}: the {label} region takes no block arguments",
            )
            self._check_yield(label, region, want)

    def reference(self, args: list[np.ndarray], run_region: RegionRunner) -> list[np.ndarray]:
        taken = self.then_region if flag_value(args[0], self.name) else self.else_region
        return run_region(taken, [])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.cond)
        printer.print_string(" : ")
        printer.print_attribute(self.cond.type)
        if self.outputs:
            printer.print_string(" -> (")
            printer.print_list(self.outputs.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.then_region, print_entry_block_args=False)
        printer.print_string(" else ")
        printer.print_region(self.else_region, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> IfOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        cond = parser.resolve_operand(unresolved, parser.parse_type())
        types: list[Attribute] = []
        if parser.parse_optional_punctuation("->"):
            types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        then_region = parser.parse_region()
        parser.parse_keyword("else")
        else_region = parser.parse_region()
        op = cls(cond, types, then_region, else_region)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class LoopOp(ControlFlowOp):
    """ONNX Loop: a for loop of at most `max_trips` trips that runs while its
    condition holds, carrying values from one trip to the next.

        %y = nn.loop max_trips 3 cond %c : tensor<i1> (%i, %go, %h = %x)
              -> (tensor<1x8x8x4xf32>) {
          ...
          nn.yield %go2, %h2 : tensor<i1>, tensor<1x8x8x4xf32>
        }

    The body's block arguments are the iteration number (tensor<i64>), the
    condition (tensor<i1>) and the carried values; it yields the next
    condition and the carried values. Without `max_trips` the loop runs while
    the condition holds; without `cond` it starts true. Scan outputs are not
    part of the op. The results are the carried values after the last trip.
    """

    name = "nn.loop"
    cond = opt_operand_def(TensorType)
    inits = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    max_trips = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        cond: SSAValue | None,
        inits: Sequence[SSAValue],
        body: Region,
        max_trips: int | None = None,
    ):
        props: dict[str, Attribute] = {}
        if max_trips is not None:
            props["max_trips"] = IntegerAttr(max_trips, i64)
        super().__init__(
            operands=[[cond] if cond is not None else [], list(inits)],
            result_types=[[v.type for v in inits]],
            regions=[body],
            properties=props,
        )

    def bodies(self) -> list[tuple[str, Region]]:
        return [("body", self.body)]

    def trips(self) -> int | None:
        """The trip limit, None when the condition alone ends the loop."""
        return self.max_trips.value.data if self.max_trips is not None else None

    def verify_(self) -> None:
        trips = self.trips()
        _require(
            trips is None or trips >= 0,
            f"{self.name}: max_trips must be >= 0, got {trips}",
        )
        if self.cond is not None:
            _check_flag(self, self.cond, "the condition")
        carried = [v.type for v in self.inits]
        _require(
            [r.type for r in self.outputs] == carried,
            f"{self.name}: the results ({_types([r.type for r in self.outputs])}) must have "
            f"the types of the carried values ({_types(carried)})",
        )
        args = self.body.block.args
        want_args = [index_type(), flag_type(), *carried]
        _require(
            [a.type for a in args] == want_args,
            f"{self.name}: the body's block arguments must be the iteration number, the "
            f"condition and the carried values ({_types(want_args)}), got "
            f"({_types([a.type for a in args])})",
        )
        term = self.body.block.last_op
        _require(
            isinstance(term, YieldOp) and len(term.values) == 1 + len(carried),
            f"{self.name}: the body must end in nn.yield of the next condition and "
            f"{len(carried)} carried value(s)",
        )
        assert isinstance(term, YieldOp)
        _check_flag(self, term.values[0], "the yielded condition")
        self._check_yield("body", self.body, [term.values[0].type, *carried])

    def reference(self, args: list[np.ndarray], run_region: RegionRunner) -> list[np.ndarray]:
        has_cond = self.cond is not None
        go = flag_value(args[0], self.name) if has_cond else True
        carried = list(args[1:] if has_cond else args)
        limit = self.trips()
        i = 0
        while go and (limit is None or i < limit):
            outs = run_region(self.body, [np.array(i, np.int64), np.array(go), *carried])
            go = flag_value(outs[0], self.name)
            carried = list(outs[1:])
            i += 1
        return carried

    def print(self, printer: Printer) -> None:
        if self.max_trips is not None:
            printer.print_string(f" max_trips {self.max_trips.value.data}")
        if self.cond is not None:
            printer.print_string(" cond ")
            printer.print_ssa_value(self.cond)
            printer.print_string(" : ")
            printer.print_attribute(self.cond.type)
        args = self.body.block.args
        printer.print_string(" (")
        heads = list(args[:2])
        printer.print_list(heads, lambda a: printer.print_block_argument(a, print_type=False))
        for a, v in zip(args[2:], self.inits):
            printer.print_string(", ")
            printer.print_block_argument(a, print_type=False)
            printer.print_string(" = ")
            printer.print_ssa_value(v)
        printer.print_string(") -> (")
        printer.print_list(self.outputs.types, printer.print_attribute)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> LoopOp:
        trips: int | None = None
        if parser.parse_optional_keyword("max_trips"):
            trips = parser.parse_integer(allow_boolean=False, context_msg=" as max_trips")
        cond: SSAValue | None = None
        if parser.parse_optional_keyword("cond"):
            unresolved = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            cond = parser.resolve_operand(unresolved, parser.parse_type())
        pos = parser.pos

        def item() -> tuple[Parser.UnresolvedArgument, UnresolvedOperand | None]:
            arg = parser.parse_argument(expect_type=False)
            if parser.parse_optional_punctuation("=") is None:
                return arg, None
            return arg, parser.parse_unresolved_operand()

        items = parser.parse_comma_separated_list(parser.Delimiter.PAREN, item)
        if len(items) < 2 or any(init is not None for _, init in items[:2]):
            parser.raise_error(
                "nn.loop: expected (%iteration, %condition, %carried = %init, ...)", pos, parser.pos
            )
        if any(init is None for _, init in items[2:]):
            parser.raise_error(
                "nn.loop: every carried value needs its initial value (%carried = %init)",
                pos,
                parser.pos,
            )
        parser.parse_punctuation("->")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        if len(types) != len(items) - 2:
            parser.raise_error(
                f"nn.loop: {len(items) - 2} carried value(s) but {len(types)} result type(s)",
                pos,
                parser.pos,
            )
        inits = [
            parser.resolve_operand(init, t)
            for (_, init), t in zip(items[2:], types)
            if init is not None
        ]
        arguments = [
            items[0][0].resolve(index_type()),
            items[1][0].resolve(flag_type()),
            *(a.resolve(t) for (a, _), t in zip(items[2:], types)),
        ]
        body = parser.parse_region(arguments)
        op = cls(cond, inits, body, trips)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


def flag_type(shape: Sequence[int] = ()) -> TensorType:
    return TensorType(FLAG, shape)


def index_type(shape: Sequence[int] = ()) -> TensorType:
    return TensorType(INDEX, shape)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """What a body of `nn.if` or `nn.loop` hands out."""

    name = "nn.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(IfOp, LoopOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


CONDITION_OPS: list[type[IRDLOperation]] = [
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    EqualOp,
]
"""Comparisons giving i1 flags: the conditions of If and Loop."""

CONTROL_FLOW_OPS: list[type[IRDLOperation]] = [IfOp, LoopOp, YieldOp]


# ------------------------------------------------------------ more elementwise ops
#
# Unary functions map int8 through a 256-entry table of their reference (the
# REAL path), like the ones above; Pow is a binary op with broadcasting.


@irdl_op_definition
class NegOp(UnaryOp):
    name = "nn.neg"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.neg(x)


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "nn.reciprocal"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.reciprocal(x)


@irdl_op_definition
class SoftplusOp(UnaryOp):
    name = "nn.softplus"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.softplus(x)


@irdl_op_definition
class SoftsignOp(UnaryOp):
    name = "nn.softsign"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.softsign(x)


@irdl_op_definition
class SeluOp(UnaryOp):
    name = "nn.selu"
    alpha = prop_def(FloatAttr)
    gamma = prop_def(FloatAttr)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.selu(x, alpha=self.float_("alpha"), gamma=self.float_("gamma"))


@irdl_op_definition
class SignOp(UnaryOp):
    name = "nn.sign"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.sign(x)


@irdl_op_definition
class ShrinkOp(UnaryOp):
    name = "nn.shrink"
    bias = prop_def(FloatAttr)
    lambd = prop_def(FloatAttr)

    def check_operands(self) -> None:
        super().check_operands()
        _require(
            self.float_("lambd") >= 0,
            f"{self.name}: lambd must be >= 0, got {self.float_('lambd')}",
        )

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.shrink(x, bias=self.float_("bias"), lambd=self.float_("lambd"))


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "nn.erf"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.erf(x)


@irdl_op_definition
class MishOp(UnaryOp):
    name = "nn.mish"

    def fn(self, x: np.ndarray) -> np.ndarray:
        return K.mish(x)


@irdl_op_definition
class PowOp(BinaryOp):
    """ONNX Pow as onnxruntime computes it (`kernels.power`): the base f32
    (or int8 through its quantization) or raw i32 / i64, the result of the
    base's type; the exponent f32, or raw i32 / i64. `multiply` = 1 where
    onnxruntime multiplies for the exponents 2 and 3 (`kernels.pow_multiplies`
    of the ONNX shapes; the importer decides it)."""

    name = "nn.pow"
    INTEGER_DATA: ClassVar[bool] = True
    multiply = opt_prop_def(IntegerAttr[I64])

    def integer_data(self) -> bool:
        return quant_of(self.lhs) is None and dtype_of(self.lhs).kind in "iu"

    def check_operands(self) -> None:
        base, exp, y = dtype_of(self.lhs), dtype_of(self.rhs), dtype_of(self.y)
        raw_exp = quant_of(self.rhs) is None and exp.kind in "iu"
        if raw_exp:
            _require(
                exp in (np.int32, np.int64),
                f"{self.name}: an integer exponent must be i32 or i64, got {self.rhs.type}",
            )
        if self.integer_data():
            _require(
                base in (np.int32, np.int64),
                f"{self.name}: an integer base must be i32 or i64, got {self.lhs.type}",
            )
            _require(
                raw_exp or (quant_of(self.rhs) is None and exp == np.float32),
                f"{self.name}: the exponent of an integer base must be f32, i32 or i64, got "
                f"{self.rhs.type}",
            )
            _require(
                quant_of(self.y) is None and y == base,
                f"{self.name}: the result must have the base's type {self.lhs.type}, got "
                f"{self.y.type}",
            )
            return
        if raw_exp:
            for v, what in ((self.lhs, "base"), (self.y, "result")):
                _require(
                    quant_of(v) is None and dtype_of(v) == np.float32,
                    f"{self.name}: with an integer exponent the {what} must be f32, got {v.type}",
                )
            return
        super().check_operands()

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return K.power(a, b, multiply=bool(self.int_("multiply")))


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "nn.reduce_min"
    KIND: ClassVar[str] = "min"
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    name = "nn.reduce_l2"
    KIND: ClassVar[str] = "l2"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    name = "nn.reduce_prod"
    KIND: ClassVar[str] = "prod"


EXTRA_OPS: list[type[IRDLOperation]] = [
    NegOp,
    ReciprocalOp,
    SoftplusOp,
    SoftsignOp,
    SeluOp,
    SignOp,
    ShrinkOp,
    ErfOp,
    MishOp,
    PowOp,
    ReduceMinOp,
    ReduceL2Op,
    ReduceProdOp,
]
"""Operators of the extended set, in the catalogue `NN_OPS` too."""


# ------------------------------------------------------------ more normalisations


@irdl_op_definition
class LRNOp(NNOp):
    """Local response normalisation across the channels (the last axis)."""

    name = "nn.lrn"
    TILING: ClassVar[TilingClass] = TilingClass.WHOLE_ROWS
    input = operand_def(TensorType)
    output = result_def(TensorType)
    size = prop_def(IntegerAttr[I64])
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_values(self)
        _require(_rank(self.input) >= 3, f"{self.name}: the input needs rank >= 3")
        _require(self.int_("size") >= 1, f"{self.name}: size must be >= 1, got {self.int_('size')}")

    def whole_axes(self) -> tuple[int, ...]:
        return (_rank(self.input) - 1,)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.lrn(
                args[0],
                size=self.int_("size"),
                alpha=self.float_("alpha"),
                beta=self.float_("beta"),
                bias=self.float_("bias"),
            )
        ]


@irdl_op_definition
class LayerNormOp(NNOp):
    """LayerNormalization over the axes from `axis` to the last; scale and bias
    broadcast against those axes. It tiles with whole rows when it normalises
    the last axis only, and runs whole otherwise."""

    name = "nn.layer_norm"
    TILING: ClassVar[TilingClass] = TilingClass.WHOLE_ROWS
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_float_or_quant(self, self.input, "the input")
        _check_float_or_quant(self, self.output, "the result")
        xs = shape_of(self.input)
        a = _norm_axis(self.int_("axis"), len(xs), self.name)
        for v, what in ((self.scale, "scale"), (self.bias, "bias")):
            _require(dtype_of(v) == np.float32, f"{self.name}: the {what} must be f32")
            got = broadcast_shapes(xs[a:], shape_of(v), op=f"{self.name} {what}")
            _require(
                got == tuple(xs[a:]),
                f"{self.name}: the {what} {_dims(shape_of(v))} must broadcast to the "
                f"normalised shape {_dims(xs[a:])}",
            )

    def tiling(self) -> TilingClass:
        rank = _rank(self.input)
        return TilingClass.WHOLE_ROWS if self.int_("axis") % rank == rank - 1 else TilingClass.WHOLE

    def whole_axes(self) -> tuple[int, ...]:
        rank = _rank(self.input)
        return tuple(range(self.int_("axis") % rank, rank))

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.layer_norm(
                args[0], args[1], args[2], axis=self.int_("axis"), epsilon=self.float_("epsilon")
            )
        ]


@irdl_op_definition
class InstanceNormOp(NNOp):
    """InstanceNormalization, channels-last: per sample and channel over the
    spatial positions. It reads every row to produce any: it runs whole."""

    name = "nn.instance_norm"
    TILING: ClassVar[TilingClass] = TilingClass.WHOLE
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_float_or_quant(self, self.input, "the input")
        _check_float_or_quant(self, self.output, "the result")
        xs = shape_of(self.input)
        _require(len(xs) >= 3, f"{self.name}: the input needs rank >= 3 (N, spatial..., C)")
        for v, what in ((self.scale, "scale"), (self.bias, "bias")):
            _require(
                shape_of(v) == (xs[-1],) and dtype_of(v) == np.float32,
                f"{self.name}: the {what} must be f32 of shape ({xs[-1]},), got {v.type}",
            )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.instance_norm(args[0], args[1], args[2], epsilon=self.float_("epsilon"))]


EXTRA_OPS += [LRNOp, LayerNormOp, InstanceNormOp]


# ---------------------------------------------------------- index-map selections
#
# Slice, Tile, Expand and Gather with constant indices select, along every
# axis independently, input index t_a[j] for output index j (a table per
# axis; input and result have one rank). They run on the stored integers and
# tile along an axis whose table is the identity.


class IndexMapOp(NNOp):
    """y[j0, j1, ...] = x[t0[j0], t1[j1], ...] with one index table per axis."""

    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def tables(self) -> list[np.ndarray]:
        """Per axis, the input index of each output index (int64)."""
        raise NotImplementedError(f"{self.name}: each index-map op defines its tables")

    def check_operands(self) -> None:
        _check_data(self)
        xs = shape_of(self.input)
        for a, t in enumerate(self.tables()):
            _require(
                t.size == 0 or (int(t.min()) >= 0 and int(t.max()) < xs[a]),
                f"{self.name}: axis {a} reads indices outside [0, {xs[a]})",
            )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [tuple(int(t.size) for t in self.tables())]

    def identity_axes(self) -> list[int]:
        """Axes whose table is 0, 1, ..., n - 1 over an input of n."""
        xs = shape_of(self.input)
        return [
            a
            for a, t in enumerate(self.tables())
            if t.size == xs[a] and np.array_equal(t, np.arange(xs[a]))
        ]

    def independent_axes(self) -> tuple[int, tuple[int, ...]] | None:
        """The band axis of the result and the input axis it reads (-1: the
        input whole): a non-unit identity axis, else the first non-unit one."""
        ys = shape_of(self.output)
        same = [a for a in self.identity_axes() if ys[a] != 1]
        if same:
            return same[0], (same[0],)
        lead = next((a for a, d in enumerate(ys) if d != 1), 0)
        return lead, (-1,)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(args[0])
        return [np.ascontiguousarray(x[np.ix_(*self.tables())])]


def _rank_props(op: NNOp, names: Sequence[str]) -> None:
    rank = _rank(op.input) if isinstance(op, IndexMapOp) else 0
    for n in names:
        _require(
            len(op.ints(n)) == rank,
            f"{op.name}: {n} has {len(op.ints(n))} values for a rank-{rank} input",
        )


@irdl_op_definition
class SliceOp(IndexMapOp):
    """Python's x[start:end:step] on every axis (bounds already clamped as
    ONNX's Slice clamps them: `slice.indices` of the axis length)."""

    name = "nn.slice"
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)

    def tables(self) -> list[np.ndarray]:
        _rank_props(self, ("starts", "ends", "steps"))
        out = []
        bounds = zip(self.ints("starts"), self.ints("ends"), self.ints("steps"))
        for a, (b, e, st) in enumerate(bounds):
            _require(st != 0, f"{self.name}: the step of axis {a} is 0")
            out.append(np.arange(b, e, st, dtype=np.int64))
        return out


@irdl_op_definition
class TileOp(IndexMapOp):
    name = "nn.tile"
    repeats = prop_def(DenseArrayBase)

    def tables(self) -> list[np.ndarray]:
        _rank_props(self, ("repeats",))
        xs = shape_of(self.input)
        out = []
        for a, r in enumerate(self.ints("repeats")):
            _require(r >= 0, f"{self.name}: repeats of axis {a} is negative ({r})")
            out.append(np.arange(xs[a] * r, dtype=np.int64) % max(xs[a], 1))
        return out


@irdl_op_definition
class ExpandOp(IndexMapOp):
    """numpy broadcasting of the input to `shape` (of the input's rank)."""

    name = "nn.expand"
    shape = prop_def(DenseArrayBase)

    def tables(self) -> list[np.ndarray]:
        _rank_props(self, ("shape",))
        xs = shape_of(self.input)
        out = []
        for a, (d, want) in enumerate(zip(xs, self.ints("shape"))):
            n = max(d, want)
            _require(
                d == want or d == 1 or want == 1,
                f"{self.name}: axis {a} of size {d} does not broadcast to {want}",
            )
            out.append(np.zeros(n, np.int64) if d == 1 else np.arange(n, dtype=np.int64))
        return out


@irdl_op_definition
class GatherOp(IndexMapOp):
    """Gather along `axis` with constant, non-negative 1-D indices."""

    name = "nn.gather"
    axis = prop_def(IntegerAttr[I64])
    indices = prop_def(DenseArrayBase)

    def tables(self) -> list[np.ndarray]:
        xs = shape_of(self.input)
        ax = _norm_axis(self.int_("axis"), len(xs), self.name)
        out = [np.arange(d, dtype=np.int64) for d in xs]
        out[ax] = np.asarray(self.ints("indices"), np.int64)
        return out


EXTRA_OPS += [SliceOp, TileOp, ExpandOp, GatherOp]


# ------------------------------------------------------- integer and boolean data
#
# Tensors of i32, i64, i1 (bool) and raw i8 / ui8 flow between the ops below
# as data: casts, comparisons (above), logic, selection, arg reductions and
# gathers with run-time indices. They carry no quantization; a quantized
# tensor reaches them dequantized (the importer), except where an op only
# moves or orders stored values (ArgMax, the gather's data).


def _check_plain(op: NNOp, v: SSAValue, what: str, dtypes: Sequence[type] = ()) -> None:
    """An unquantized tensor, of one of `dtypes` when they are given (the
    message is formatted only on failure: printing a type is slow)."""
    if quant_of(v) is not None:
        raise VerifyException(f"{op.name}: {what} must be unquantized, got {v.type}")
    if dtypes and dtype_of(v) not in [np.dtype(d) for d in dtypes]:
        names = ", ".join(str(np.dtype(d)) for d in dtypes)
        raise VerifyException(f"{op.name}: {what} must be {names}, got {v.type}")


@irdl_op_definition
class CastOp(NNOp):
    """ONNX Cast between f32, i8, ui8, i32, i64 and i1 (`kernels.cast`: floats
    to integers truncate toward zero and saturate, NaN becomes 0; integers
    narrow modulo 2^n; anything to bool is `!= 0`)."""

    name = "nn.cast"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_plain(self, self.input, "the input")
        _check_plain(self, self.output, "the result")

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.cast(args[0], dtype_of(self.output))]


@irdl_op_definition
class NotOp(NNOp):
    """Logical not of a bool tensor."""

    name = "nn.not"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_plain(self, self.input, "the input", (np.bool_,))
        _check_plain(self, self.output, "the result", (np.bool_,))

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.logical_not(args[0])]


class LogicOp(NNOp):
    """An elementwise logic op of two bool tensors with broadcasting."""

    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        for v, what in ((self.lhs, "the lhs"), (self.rhs, "the rhs"), (self.y, "the result")):
            _check_plain(self, v, what, (np.bool_,))

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs), op=self.name)]

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The op on two bool arrays; each logic op defines it."""
        raise NotImplementedError(f"{self.name}: each logic op defines its function")

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [self.fn(args[0], args[1])]


@irdl_op_definition
class AndOp(LogicOp):
    name = "nn.and"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.logical_and(a, b)


@irdl_op_definition
class OrOp(LogicOp):
    name = "nn.or"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.logical_or(a, b)


@irdl_op_definition
class XorOp(LogicOp):
    name = "nn.xor"

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.logical_xor(a, b)


@irdl_op_definition
class WhereOp(NNOp):
    """ONNX Where: x where the bool condition holds, else y (three-way
    broadcasting); x, y and the result share one unquantized element type."""

    name = "nn.where"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    cond = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_plain(self, self.cond, "the condition", (np.bool_,))
        for v, what in ((self.x, "x"), (self.y, "y"), (self.output, "the result")):
            _check_plain(self, v, what)
        _require(
            dtype_of(self.x) == dtype_of(self.y) == dtype_of(self.output),
            f"{self.name}: x, y and the result must have one element type, got "
            f"{self.x.type}, {self.y.type} and {self.output.type}",
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        shapes = (shape_of(self.cond), shape_of(self.x), shape_of(self.y))
        return [broadcast_shapes(*shapes, op=self.name)]

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.where(args[0], args[1], args[2]).astype(args[1].dtype, copy=False)]


class ArgReduceOp(ReduceOp):
    """ONNX ArgMax / ArgMin along one axis (`axes` holds it): the int64 index
    of the first (or, with select_last_index, the last) extreme element, NaN
    counting as the extreme as numpy's argmax has it. On a quantized input it
    orders the stored integers, which order the real values the same way."""

    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    select_last_index = prop_def(IntegerAttr[I64])
    MAX: ClassVar[bool] = True

    def check_operands(self) -> None:
        _require(
            dtype_of(self.input) != np.bool_,
            f"{self.name}: the input must be numeric, got {self.input.type}",
        )
        _check_plain(self, self.output, "the result", (np.int64,))
        _require(
            len(self.ints("axes")) == 1,
            f"{self.name}: reduces exactly one axis, got axes {list(self.ints('axes'))}",
        )
        for p in ("keepdims", "select_last_index"):
            _require(self.int_(p) in (0, 1), f"{self.name}: {p} must be 0 or 1")

    def axis(self) -> int:
        return _norm_axis(self.ints("axes")[0], _rank(self.input), self.name)

    def independent_axes(self) -> tuple[int, tuple[int, ...]] | None:
        """The first non-unit axis it does not reduce (rows of a feature map)."""
        xs, r = shape_of(self.input), self.axis()
        kept = [a for a in range(len(xs)) if a != r]
        if not kept:
            return 0, (-1,)
        a = next((a for a in kept if xs[a] != 1), kept[0])
        return (a if self.int_("keepdims") else kept.index(a)), (a,)

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        out = K.arg_reduce(
            args[0],
            axis=self.axis(),
            largest=self.MAX,
            last=bool(self.int_("select_last_index")),
            keepdims=bool(self.int_("keepdims")),
        )
        return [out]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "nn.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "nn.argmin"
    MAX: ClassVar[bool] = False


class TopKOp(NNOp):
    """ONNX TopK with a constant K, one op per result: `nn.top_k_values` (the
    input's type) and `nn.top_k_indices` (int64) along `axis`, the K largest
    (or smallest) elements in order, ties broken by the lower index, NaN
    counting as the largest (numpy's rule for ArgMax). An unsorted request
    (sorted=0) gets the sorted order, which ONNX allows. On quantized values
    it orders the stored integers, which order the real values the same way.

    Bands cut an axis other than `axis`; the C keeps each row's best K in its
    result, inserted in order (K x n comparisons per row at worst)."""

    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    largest = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    INDICES: ClassVar[bool] = False

    def top_axis(self) -> int:
        return _norm_axis(self.int_("axis"), _rank(self.input), self.name)

    def check_operands(self) -> None:
        _require(
            dtype_of(self.input) != np.bool_,
            f"{self.name}: the input must be numeric, got {self.input.type}",
        )
        if self.INDICES:
            _check_plain(self, self.output, "the result", (np.int64,))
        else:
            _require(
                quant_of(self.input) == quant_of(self.output)
                and dtype_of(self.input) == dtype_of(self.output),
                f"{self.name}: the result must have the input's type {self.input.type}, "
                f"got {self.output.type}",
            )
        _require(self.int_("largest") in (0, 1), f"{self.name}: largest must be 0 or 1")
        _require(_rank(self.input) >= 2, f"{self.name}: the input must have rank >= 2")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs, ax, k = list(shape_of(self.input)), self.top_axis(), self.int_("k")
        _require(
            1 <= k <= xs[ax],
            f"{self.name}: k = {k} must be in [1, {xs[ax]}], the length of axis {ax}",
        )
        xs[ax] = k
        return [tuple(xs)]

    def independent_axes(self) -> tuple[int, tuple[int, ...]] | None:
        """The first non-unit axis other than `axis` (rank >= 2 leaves one)."""
        xs, r = shape_of(self.input), self.top_axis()
        kept = [a for a in range(len(xs)) if a != r]
        a = next((a for a in kept if xs[a] != 1), kept[0])
        return a, (a,)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        values, indices = K.top_k(
            args[0], k=self.int_("k"), axis=self.top_axis(), largest=bool(self.int_("largest"))
        )
        return [indices if self.INDICES else values]


@irdl_op_definition
class TopKValuesOp(TopKOp):
    name = "nn.top_k_values"


@irdl_op_definition
class TopKIndicesOp(TopKOp):
    name = "nn.top_k_indices"
    INDICES: ClassVar[bool] = True


@irdl_op_definition
class TakeOp(NNOp):
    """ONNX Gather with run-time indices: y = take(data, indices, axis), the
    indices i32 or i64 of any shape, negative ones counted from the end. An
    index outside [-n, n) is a run-time error (the reference raises; the C
    stops in a TIGRIS_BOUNDS_CHECK build and otherwise clamps). The data may
    be quantized: the result keeps its values and type.

    Bands cut an axis of the indices (the data read whole: a table of
    independent lookups) or, when the indices hold one element per axis, a
    data axis other than `axis`."""

    name = "nn.take"
    TILING: ClassVar[TilingClass] = TilingClass.INDEPENDENT_AXIS
    QUANT_KIND: ClassVar[QuantKind] = QuantKind.EXACT
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def gather_axis(self) -> int:
        return _norm_axis(self.int_("axis"), _rank(self.data), self.name)

    def check_operands(self) -> None:
        _check_plain(self, self.indices, "the indices", (np.int32, np.int64))
        _require(
            quant_of(self.data) == quant_of(self.output)
            and dtype_of(self.data) == dtype_of(self.output),
            f"{self.name}: the result must have the data's type {self.data.type}, "
            f"got {self.output.type}",
        )
        _require(_rank(self.data) >= 1, f"{self.name}: the data must have rank >= 1")

    def infer_shapes(self) -> list[tuple[int, ...]]:
        ds, ax = shape_of(self.data), self.gather_axis()
        return [(*ds[:ax], *shape_of(self.indices), *ds[ax + 1 :])]

    def independent_axes(self) -> tuple[int, tuple[int, ...]] | None:
        ds, ax, ins = shape_of(self.data), self.gather_axis(), shape_of(self.indices)
        for i, d in enumerate(ins):
            if d != 1:
                return ax + i, (-1, i)
        for a, d in enumerate(ds):
            if a != ax and d != 1:
                return (a if a < ax else a - 1 + len(ins)), (a, -1)
        return 0, (-1, -1)

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [K.take(args[0], args[1], axis=self.gather_axis(), what=self.name)]


INT_DATA_OPS: list[type[IRDLOperation]] = [
    CastOp,
    NotOp,
    AndOp,
    OrOp,
    XorOp,
    WhereOp,
    ArgMaxOp,
    ArgMinOp,
    TopKValuesOp,
    TopKIndicesOp,
    TakeOp,
]
"""Operators of integer and boolean data, in the catalogue `NN_OPS` too."""


@irdl_op_definition
class QuantizeLinearOp(NNOp):
    """ONNX QuantizeLinear with its scale and zero point as operands (per axis:
    shaped to broadcast along the channel axis): float32 to raw i8 / ui8
    (`kernels.quantize`: the float32 quotient rounded half to even, plus the
    zero point, saturated). The result carries no #nn.q: a per-tensor
    quantization is a type (`nn.quantize`), a per-axis one is data."""

    name = "nn.quantize_linear"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_plain(self, self.input, "the input", (np.float32,))
        _check_plain(self, self.scale, "the scale", (np.float32,))
        _check_plain(self, self.zero_point, "the zero point", (np.int8, np.uint8))
        _check_plain(self, self.output, "the result", (dtype_of(self.zero_point).type,))
        _require(
            broadcast_shapes(shape_of(self.scale), shape_of(self.zero_point), shape_of(self.input))
            == shape_of(self.input),
            f"{self.name}: the scale and zero point must broadcast to the input",
        )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x, s, zp = args
        return [K.quantize(x, scale=s, zero_point=zp, dtype=dtype_of(self.output))]


@irdl_op_definition
class DequantizeLinearOp(NNOp):
    """ONNX DequantizeLinear with its scale and zero point as operands, of a
    raw i8 / ui8 / i32 tensor: float32(q - zero point) * scale."""

    name = "nn.dequantize_linear"
    TILING: ClassVar[TilingClass] = TilingClass.POINTWISE
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def check_operands(self) -> None:
        _check_plain(self, self.input, "the input", (np.int8, np.uint8, np.int32))
        _check_plain(self, self.scale, "the scale", (np.float32,))
        _check_plain(self, self.zero_point, "the zero point", (dtype_of(self.input).type,))
        _check_plain(self, self.output, "the result", (np.float32,))
        _require(
            broadcast_shapes(shape_of(self.scale), shape_of(self.zero_point), shape_of(self.input))
            == shape_of(self.input),
            f"{self.name}: the scale and zero point must broadcast to the input",
        )

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        x, s, zp = args
        return [K.dequantize(x, scale=s, zero_point=zp)]


INT_DATA_OPS += [QuantizeLinearOp, DequantizeLinearOp]


@irdl_op_definition
class MatMulIntegerOp(NNOp):
    """ONNX MatMulInteger: (A - a_zero_point) @ B as exact int32, A raw i8 /
    ui8 (or the stored integers of a quantized tensor), or i32 that already
    holds A - a_zero_point (a zero point per row: the importer subtracts it
    first), B an i32 constant that already holds B - b_zero_point (the
    importer subtracts it). Bands of A's rows; B is read whole."""

    name = "nn.matmul_integer"
    TILING: ClassVar[TilingClass] = TilingClass.MATRIX_ROWS
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    y = result_def(TensorType)
    a_zero_point = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def infer_shapes(self) -> list[tuple[int, ...]]:
        return [matmul_shape(self.name, shape_of(self.a), shape_of(self.b))]

    def check_operands(self) -> None:
        _require(
            dtype_of(self.a) in (np.int8, np.uint8)
            or (dtype_of(self.a) == np.int32 and quant_of(self.a) is None),
            f"{self.name}: A must be i8 or ui8 (or i32 holding A - a_zero_point per row), "
            f"got {self.a.type}",
        )
        _check_plain(self, self.b, "B", (np.int32,))
        _check_plain(self, self.y, "the result", (np.int32,))
        _require(_rank(self.b) == 2, f"{self.name}: B must be a matrix, got {self.b.type}")

    def macs(self) -> int:
        return int(np.prod(shape_of(self.y))) * shape_of(self.a)[-1]

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        a = args[0].astype(np.int64) - np.int64(self.int_("a_zero_point"))
        acc = np.matmul(a, args[1].astype(np.int64))
        return [np.ascontiguousarray(acc.astype(np.int32))]


INT_DATA_OPS += [MatMulIntegerOp]


@irdl_op_definition
class ConvIntegerOp(WindowOp):
    """ONNX ConvInteger: the exact int32 accumulator of (x - x_zero_point) and
    the weights, x raw i8 / ui8 (or the stored integers of a quantized tensor,
    channels-last), the weights an i32 constant (Cout, *kernel, Cin / group)
    that already holds w - w_zero_point. Pads add zeros after the zero point
    is subtracted (x_zero_point before). Tiles like a convolution."""

    name = "nn.conv_integer"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_ = prop_def(DenseArrayBase, prop_name="kernel")
    strides_ = opt_prop_def(DenseArrayBase, prop_name="strides")
    dilations_ = opt_prop_def(DenseArrayBase, prop_name="dilations")
    pads_ = opt_prop_def(DenseArrayBase, prop_name="pads")
    group = opt_prop_def(IntegerAttr[I64])
    x_zero_point = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def groups(self) -> int:
        return self.int_("group", 1)

    def check_operands(self) -> None:
        self.check_window()
        _require(
            dtype_of(self.input) in (np.int8, np.uint8),
            f"{self.name}: the input must be i8 or ui8, got {self.input.type}",
        )
        _check_plain(self, self.weight, "the weight", (np.int32,))
        _check_plain(self, self.output, "the result", (np.int32,))
        xs, ws = shape_of(self.input), shape_of(self.weight)
        g = self.groups()
        _require(
            len(ws) == len(xs) and tuple(ws[1:-1]) == self.kernel(),
            f"{self.name}: the weight {_dims(ws)} does not match kernel {list(self.kernel())}",
        )
        _require(
            g >= 1 and ws[0] % g == 0 and xs[-1] == ws[-1] * g,
            f"{self.name}: {xs[-1]} input channels do not fit the weight {_dims(ws)} "
            f"and group {g}",
        )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs, ws = shape_of(self.input), shape_of(self.weight)
        return [(xs[0], *self.window_shape(xs[1:-1]), ws[0])]

    def macs(self) -> int:
        return int(np.prod(shape_of(self.output))) * int(np.prod(shape_of(self.weight)[1:]))

    def accumulate(self, x: np.ndarray, w: np.ndarray, pads: Sequence[int]) -> np.ndarray:
        """The accumulator of a (band of the) input with explicit pads."""
        xi = x.astype(np.int32) - np.int32(self.int_("x_zero_point"))
        return K.conv(
            xi,
            w.astype(np.int32),
            None,
            strides=self.strides(),
            pads=pads,
            dilations=self.dilations(),
            group=self.groups(),
        ).astype(np.int32)

    def reference(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [self.accumulate(args[0], args[1], self.pads())]


INT_DATA_OPS += [ConvIntegerOp]


# ------------------------------------------------------------- recurrent layers


_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


class RecurrentOp(NNOp):
    """ONNX LSTM / GRU with the default activations, layout 0 (the importer
    moves layout 1 there): x (seq, batch, input), weights (dirs, gates * H,
    input), recurrence (dirs, gates * H, H), bias (dirs, 2 * gates * H),
    initial states (dirs, batch, H). The recurrence reads every step: whole."""

    TILING: ClassVar[TilingClass] = TilingClass.WHOLE
    GATES: ClassVar[int] = 0
    STATES: ClassVar[int] = 1
    hidden_size = prop_def(IntegerAttr[I64])
    direction = prop_def(StringAttr)
    traits = traits_def(Pure())

    def dirs(self) -> int:
        d = self.str_("direction")
        _require(
            d in _DIRECTIONS,
            f'{self.name}: direction must be "forward", "reverse" or "bidirectional", got "{d}"',
        )
        return _DIRECTIONS[d]

    def check_operands(self) -> None:
        for i, v in enumerate((*self.operands, *self.results)):
            _require(
                dtype_of(v) == np.float32 and quant_of(v) is None,
                f"{self.name}: value #{i} must be f32 (no int8 recurrence), got {v.type}",
            )

    def infer_shapes(self) -> list[tuple[int, ...]]:
        xs = shape_of(self.operands[0])
        _require(len(xs) == 3, f"{self.name}: x must be (seq, batch, input), got {_dims(xs)}")
        seq, batch, inp = xs
        h, g, d = self.int_("hidden_size"), self.GATES, self.dirs()
        _require(h >= 1, f"{self.name}: hidden_size must be >= 1")
        want = {
            "weights": (d, g * h, inp),
            "recurrence": (d, g * h, h),
            "bias": (d, 2 * g * h),
            **{f"initial state {k}": (d, batch, h) for k in range(self.STATES)},
        }
        for v, (what, shape) in zip(self.operands[1:], want.items()):
            _require(
                shape_of(v) == shape,
                f"{self.name}: the {what} must be {_dims(shape)}, got {_dims(shape_of(v))}",
            )
        _require(
            len(self.operands) == 4 + self.STATES,
            f"{self.name}: takes {4 + self.STATES} operands, got {len(self.operands)}",
        )
        return [(seq, d, batch, h)] + [(d, batch, h)] * self.STATES


@irdl_op_definition
class LSTMOp(RecurrentOp):
    name = "nn.lstm"
    GATES: ClassVar[int] = 4
    STATES: ClassVar[int] = 2
    x = operand_def(TensorType)
    weights = operand_def(TensorType)
    recurrence = operand_def(TensorType)
    bias = operand_def(TensorType)
    initial_h = operand_def(TensorType)
    initial_c = operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    y_c = result_def(TensorType)

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return list(K.lstm(*args, direction=self.str_("direction")))


@irdl_op_definition
class GRUOp(RecurrentOp):
    name = "nn.gru"
    GATES: ClassVar[int] = 3
    STATES: ClassVar[int] = 1
    x = operand_def(TensorType)
    weights = operand_def(TensorType)
    recurrence = operand_def(TensorType)
    bias = operand_def(TensorType)
    initial_h = operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    linear_before_reset = prop_def(IntegerAttr[I64])

    def compute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return list(
            K.gru(
                *args,
                direction=self.str_("direction"),
                linear_before_reset=bool(self.int_("linear_before_reset")),
            )
        )


EXTRA_OPS += [LSTMOp, GRUOp]


NN_OPS: list[type[IRDLOperation]] = [
    WeightOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
    HardSwishOp,
    HardSigmoidOp,
    LeakyReluOp,
    EluOp,
    GeluOp,
    ExpOp,
    LogOp,
    SqrtOp,
    AbsOp,
    FloorOp,
    ClipOp,
    IdentityOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaxOp,
    MinOp,
    PReluOp,
    ConvOp,
    ConvTransposeOp,
    MaxPoolOp,
    AveragePoolOp,
    GlobalAveragePoolOp,
    BatchNormOp,
    GemmOp,
    MatMulOp,
    ConcatOp,
    SplitOp,
    ReshapeOp,
    FlattenOp,
    SqueezeOp,
    UnsqueezeOp,
    TransposeOp,
    PadOp,
    ResizeOp,
    SoftmaxOp,
    LogSoftmaxOp,
    ReduceMeanOp,
    ReduceMaxOp,
    ReduceSumOp,
    QuantizeOp,
    DequantizeOp,
    *EXTRA_OPS,
    *INT_DATA_OPS,
]

NN = Dialect("nn", [*NN_OPS, *CONDITION_OPS, *CONTROL_FLOW_OPS], [QuantAttr])

__all__ = [
    "CONDITION_OPS",
    "CONTROL_FLOW_OPS",
    "NN",
    "NN_OPS",
    "ArrayAttr",
    "ControlFlowOp",
    "IfOp",
    "LoopOp",
    "NNOp",
    "QuantAttr",
    "YieldOp",
]
