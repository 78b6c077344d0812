"""How each operator may be cut: the tileability table of spec/tiling.md, as data.

Every `nn` op class names one `TilingClass`; passes ask the op, never its name.
"""

from __future__ import annotations

from enum import Enum


class TilingClass(Enum):
    """One row of the spec's "Op tileability" table."""

    HALO = "halo"
    """Height, or height and width, with a halo (Conv, DepthwiseConv, pools)."""
    EXPANDED = "expanded"
    """Height and width of the expanded output (ConvTranspose); never chained."""
    POINTWISE = "pointwise"
    """With the tile, no halo: shape-preserving elementwise ops, channel Concat."""
    WHOLE_ROWS = "whole_rows"
    """With the tile, whole rows: normalisations along the last stored axis."""
    RESIZE = "resize"
    """Height bands of the output; the source band follows the coordinates."""
    ACCUMULATE = "accumulate"
    """Bands of input rows accumulated into one partial sum (GlobalAveragePool)."""
    MATRIX_ROWS = "matrix_rows"
    """Bands of matrix rows; the second operand is read whole (Gemm, MatMul)."""
    INDEPENDENT_AXIS = "independent_axis"
    """Bands along an axis the op does not reduce, index, reverse or move."""
    RESHAPE = "reshape"
    """When each band of input rows maps onto whole output rows."""
    WHOLE = "whole"
    """Not audited for a tiling contract: inputs and outputs in fast memory at once."""

    @property
    def has_halo(self) -> bool:
        """True for the classes that widen the receptive field."""
        return self is TilingClass.HALO

    @property
    def chainable(self) -> bool:
        """Chain rule 1: convolutions, pools and shape-preserving ops, no resize."""
        return self in (TilingClass.HALO, TilingClass.POINTWISE, TilingClass.WHOLE_ROWS)
