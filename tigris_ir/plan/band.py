"""Bands: the global range a tile holds along each axis it cuts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Range = tuple[int, int]
Band = Mapping[int, Range]
"""Axis -> global range [lo, hi) held along it; axes not named are whole."""

WHOLE: Band = {}


class BandError(Exception):
    """A band that cannot be computed as asked (never a silent wrong result)."""


def band_shape(shape: Sequence[int], band: Band) -> tuple[int, ...]:
    """The shape of a tensor's band."""
    return tuple(band[a][1] - band[a][0] if a in band else d for a, d in enumerate(shape))


def band_slices(band: Band, ndim: int) -> tuple[slice, ...]:
    """Index of a band inside the whole tensor."""
    return tuple(slice(*band[a]) if a in band else slice(None) for a in range(ndim))
