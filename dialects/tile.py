"""The `tile` dialect: stages, chains and their band records (spec/tiling.md).

A `tile.stage` holds a region of `nn` ops that run together between a load of
their inputs from slow memory and a spill of their outputs; its strategy says
how (normal, strips, a 2D grid, or one of the other band kinds of the spec's
table) and its `#tile.band` record gives the figures: tile height and width,
number of tiles, halo per side and planned peak bytes. A `tile.chain` holds
consecutive stages whose tile loops are fused, so that intermediates never
leave fast memory; it records the chain tile height and whether it is
line-buffered. Values from outside are captured implicitly; results leave
through `tile.yield`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

STRATEGIES = (
    "normal",  # fits: load inputs, run, spill outputs
    "inplace",  # a plan of one stage: inputs and outputs stay in the fast arena
    "strips",  # horizontal strips with a halo
    "grid",  # 2D tiles with a halo in both directions
    "rows",  # bands of matrix rows; the second operand is read whole
    "accumulate",  # bands of input rows accumulated (GlobalAveragePool)
    "resize",  # height bands of a resize's output
    "axis",  # bands along an independent axis
    "whole_rows",  # with the tile, whole rows (softmax-like)
    "reshape",  # bands of a reshape mapping onto whole output rows
    "expanded",  # height and width of a transposed convolution's output
    "whole",  # untileable: everything in fast memory at once
)

I64_MAX = 2**63 - 1
"""The largest row count or tile count the IR holds (a signed 64-bit integer)."""


def out_of_range(key: str, value: int) -> str:
    """A count below 1 (or past the i64 range) in words: the attribute, its
    range and, for a negative value, how a literal of 2^63 or more reads."""
    wrapped = (
        " (an integer literal of 2^63 or more wraps to a negative i64)"
        if value < -(2**32)
        else ""
    )
    return f"{key} must lie in [1, {I64_MAX}], got {value}{wrapped}"


_BAND_KEYS = ("tile_h", "tile_w", "tiles", "halo", "peak")


@irdl_attr_definition
class BandAttr(ParametrizedAttribute):
    """The tile record of a stage or chain.

    `#tile.band<tile_h = 7, tile_w = 52, tiles = 48, halo = [1, 1, 1, 1], peak = 12544>`
    halo is (top, bottom, left, right) rows/columns re-read at tile borders;
    tile_w is 0 for full-width strips; peak is the planned fast-memory bytes.
    A band cut into groups of channels also records the group size, as
    `channels = 40` (printed only then; `tiles` counts groups x spatial tiles,
    the groups outermost).
    """

    name = "tile.band"

    tile_h: IntAttr
    tile_w: IntAttr
    tiles: IntAttr
    halo: ArrayAttr[IntAttr]
    peak: IntAttr
    channels: IntAttr

    def __init__(
        self,
        tile_h: int,
        tile_w: int,
        tiles: int,
        halo: Sequence[int],
        peak: int,
        channels: int = 0,
    ) -> None:
        super().__init__(
            IntAttr(tile_h),
            IntAttr(tile_w),
            IntAttr(tiles),
            ArrayAttr([IntAttr(h) for h in halo]),
            IntAttr(peak),
            IntAttr(channels),
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            while True:
                pos = parser.pos
                key = parser.parse_identifier()
                if key not in (*_BAND_KEYS, "channels") or key in values:
                    parser.raise_error(
                        f"expected one of {', '.join(_BAND_KEYS)} (and optionally channels) "
                        f"once each, got '{key}'",
                        pos,
                        parser.pos,
                    )
                parser.parse_punctuation("=")
                if key == "halo":
                    values[key] = ArrayAttr(
                        IntAttr(v)
                        for v in parser.parse_comma_separated_list(
                            parser.Delimiter.SQUARE, parser.parse_integer
                        )
                    )
                else:
                    values[key] = IntAttr(parser.parse_integer())
                if parser.parse_optional_punctuation(",") is None:
                    break
        missing = [k for k in _BAND_KEYS if k not in values]
        if missing:
            parser.raise_error(f"#tile.band is missing {', '.join(missing)}")
        return (*(values[k] for k in _BAND_KEYS), values.get("channels", IntAttr(0)))

    def print_parameters(self, printer: Printer) -> None:
        halo = ", ".join(str(h.data) for h in self.halo.data)
        printer.print_string(
            f"<tile_h = {self.tile_h.data}, tile_w = {self.tile_w.data}, "
            f"tiles = {self.tiles.data}, halo = [{halo}], peak = {self.peak.data}"
            + (f", channels = {self.channels.data}" if self.channels.data else "")
            + ">"
        )

    def verify(self) -> None:
        for key, v in (("tile_h", self.tile_h.data), ("tiles", self.tiles.data)):
            if not 1 <= v <= I64_MAX:
                raise VerifyException(f"#tile.band: {out_of_range(key, v)}")
        if self.tile_w.data < 0 or self.peak.data < 0 or self.channels.data < 0:
            raise VerifyException("#tile.band: tile_w, peak and channels must be >= 0")
        if len(self.halo.data) != 4 or any(h.data < 0 for h in self.halo.data):
            raise VerifyException(
                "#tile.band: halo needs 4 non-negative values (top, bottom, left, right)"
            )

    @property
    def halo_values(self) -> tuple[int, int, int, int]:
        top, bottom, left, right = (h.data for h in self.halo.data)
        return (top, bottom, left, right)

    def describe(self) -> str:
        """The spec's words: `48 tiles of 7 x 52, halo 2`."""
        halo = max(self.halo_values)
        shape = (
            f"{self.tile_h.data} x {self.tile_w.data}"
            if self.tile_w.data
            else f"{self.tile_h.data} rows"
        )
        group = f" x {self.channels.data} channels" if self.channels.data else ""
        return f"{self.tiles.data} tiles of {shape}{group}, halo {halo}"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The values a stage or chain hands out."""

    name = "tile.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class StageOp(IRDLOperation):
    """Ops run together between one load of their inputs and one spill of outputs."""

    name = "tile.stage"
    sym_name = prop_def(StringAttr)
    strategy = opt_prop_def(StringAttr)
    band = opt_prop_def(BandAttr)
    outputs = var_result_def()
    body = region_def("single_block")
    assembly_format = (
        "$sym_name (`strategy` $strategy^)? (`band` qualified($band)^)? attr-dict-with-keyword "
        "$body (`:` type($outputs)^)?"
    )

    def __init__(
        self,
        name: str,
        strategy: str | None,
        body: Region,
        result_types: Sequence[Attribute],
        band: BandAttr | None = None,
    ):
        props: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        if strategy is not None:
            props["strategy"] = StringAttr(strategy)
        if band is not None:
            props["band"] = band
        super().__init__(properties=props, regions=[body], result_types=[list(result_types)])

    @property
    def strategy_name(self) -> str | None:
        """None until `tile-stages` has chosen how the stage runs."""
        return self.strategy.data if self.strategy is not None else None

    def verify_(self) -> None:
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException(f"tile.stage '{self.sym_name.data}' must end in tile.yield")
        if self.strategy is None:
            if self.band is not None:
                raise VerifyException(
                    f"tile.stage '{self.sym_name.data}': a band record needs a strategy"
                )
            return
        if self.strategy.data not in STRATEGIES:
            raise VerifyException(
                f"tile.stage '{self.sym_name.data}': unknown strategy "
                f"'{self.strategy.data}'; expected one of {', '.join(STRATEGIES)}"
            )
        got = [v.type for v in term.values]
        want = [r.type for r in self.outputs]
        if got != want:
            raise VerifyException(
                f"tile.stage '{self.sym_name.data}': tile.yield types do not match the results"
            )
        tiled = self.strategy.data not in ("normal", "inplace", "whole")
        if tiled and self.band is None:
            raise VerifyException(
                f"tile.stage '{self.sym_name.data}': strategy '{self.strategy.data}' "
                "needs a #tile.band record"
            )
        from tigris_ir.plan.band_rule import check_stage_band

        check_stage_band(cast(Any, self))


@irdl_op_definition
class ChainOp(IRDLOperation):
    """Consecutive stages with fused tile loops; intermediates stay in fast memory."""

    name = "tile.chain"
    sym_name = prop_def(StringAttr)
    tile_h = prop_def(IntegerAttr[I64])
    band = opt_prop_def(BandAttr)
    line_buffered = opt_prop_def(UnitAttr)
    outputs = var_result_def()
    body = region_def("single_block")
    assembly_format = (
        "$sym_name `tile_h` $tile_h (`line_buffered` $line_buffered^)? (`band` qualified($band)^)? "
        "attr-dict-with-keyword $body (`:` type($outputs)^)?"
    )

    def __init__(
        self,
        name: str,
        tile_h: int,
        body: Region,
        result_types: Sequence[Attribute],
        band: BandAttr | None = None,
        line_buffered: bool = False,
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "tile_h": IntegerAttr(tile_h, 64),
        }
        if band is not None:
            props["band"] = band
        if line_buffered:
            props["line_buffered"] = UnitAttr()
        super().__init__(properties=props, regions=[body], result_types=[list(result_types)])

    def stages(self) -> list[StageOp]:
        return [op for op in self.body.block.ops if isinstance(op, StageOp)]

    def verify_(self) -> None:
        name = self.sym_name.data
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException(f"tile.chain '{name}' must end in tile.yield")
        others = [op for op in self.body.block.ops if not isinstance(op, StageOp | YieldOp)]
        if others:
            raise VerifyException(
                f"tile.chain '{name}' may hold only tile.stage ops, found {others[0].name}"
            )
        if len(self.stages()) < 2:
            raise VerifyException(f"tile.chain '{name}' needs at least two stages")
        h = self.tile_h.value.data
        if h < 1:
            raise VerifyException(f"tile.chain '{name}': {out_of_range('tile_h', h)}")
        from tigris_ir.plan.band_rule import check_chain_band

        check_chain_band(cast(Any, self))


Tile = Dialect("tile", [StageOp, ChainOp, YieldOp], [BandAttr])
