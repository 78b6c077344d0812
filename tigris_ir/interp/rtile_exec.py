"""The register-tiled loops of an `rtile.kernel`, run on numpy.

`product` executes the loops a kernel's ops state for C = A . B (per group):
for every row block of `rtile.row_blocks` rows, A's rows as `rtile.pack_a`
packs them (zero columns up to `kp`), every K block of `rtile.k_blocks`
(the whole packed contraction without one), every weight panel of each
`rtile.panels` sweep (B's columns, zero padding past the last), and in it the
micro-tiles of `rtile.micro`: full tiles of rm rows (side by side down the
block's rows, as one numpy product), then the edge tile of the rows left,
which must be one of the micro-tile's edge tiles. A product over a K block is
one numpy product (float64, exact for int8 operands); a tile's
columns past the sweep's last are dropped, as the partial vector's store
drops them. Every element of C is checked to be stored once per K block, so
a kernel whose loops miss or repeat part of the product is an error naming
the op. The epilogue (bias, rounding, requantization) is the band
executor's, by the `nn` op's semantics.

`winograd` runs a convolution the way a `winograd` kernel states it: the
input transformed per tile of four output pixels of a row, six products of
the kernel rows' channels through the kernel's loops, and the output
transform (float64 throughout, so it equals the direct sum to rounding).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tigris_ir.dialects.rtile import KBlocksOp, KernelOp, PackOp, PanelsOp
from tigris_ir.loops.machine import LoopIRError
from tigris_ir.rtile import kernel as rk


class KernelRunError(LoopIRError):
    """An `rtile.kernel` whose loops do not compute its product."""


Product = Callable[[np.ndarray, np.ndarray], np.ndarray]


def product(kern: KernelOp) -> Product:
    """The kernel's matrix product: (G, m, k) x (G, k, n) -> (G, m, n)."""

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
            raise KernelRunError(
                f"{kern.name}: operands {a.shape}, {b.shape} are no grouped product"
            )
        return np.stack([_one(kern, a[g], b[g]) for g in range(a.shape[0])])

    return run


def _one(kern: KernelOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k, n = kern.k.value.data, kern.n.value.data
    m = a.shape[0]
    if a.shape[1] != k or b.shape != (k, n):
        raise KernelRunError(
            f"{kern.name} of {k} x {n} runs on A {a.shape} and B {b.shape}"
        )
    blocks = kern.row_blocks
    body = list(blocks.body.block.ops)
    pack = body[0] if body and isinstance(body[0], PackOp) else None
    rest = body[1:] if pack is not None else body
    kblocks = rest[0] if len(rest) == 1 and isinstance(rest[0], KBlocksOp) else None
    sweeps = list(kblocks.body.block.ops) if kblocks is not None else rest
    if not all(isinstance(s, PanelsOp) for s in sweeps):
        raise KernelRunError(
            f"{kern.name}: a row block holds rtile.pack_a, then rtile.k_blocks or rtile.panels"
        )
    kp = pack.kp.value.data if pack is not None else k
    step = kblocks.step.value.data if kblocks is not None else kp
    rows = blocks.rows.value.data
    # B once as every panel reads it: float64, zero rows up to kp and zero
    # columns past n (a panel's columns past the sweep's last); a panel is a
    # view of it (copied per panel and row block, this was most of the run)
    width = max((s.width.value.data for s in sweeps if isinstance(s, PanelsOp)), default=0)
    padded = np.zeros((kp, n + width), np.float64)
    padded[:k, :n] = b
    acc = np.zeros((m, n), np.float64)
    for i0 in range(0, m, rows):
        mb = min(rows, m - i0)
        packed = np.zeros((mb, kp), np.float64)
        packed[:, :k] = a[i0 : i0 + mb]
        for k0 in range(0, kp, step):
            kc = min(step, kp - k0)
            stored = np.zeros((mb, n), np.int64)
            for sweep in sweeps:
                assert isinstance(sweep, PanelsOp)
                _sweep(kern, sweep, packed, padded, n, acc[i0 : i0 + mb], stored, k0, kc)
            if not (stored == 1).all():
                bad = np.argwhere(stored != 1)[0]
                raise KernelRunError(
                    f"{kern.name}: K block {k0} of row block {i0} stores C[{i0 + bad[0]}, "
                    f"{bad[1]}] {int(stored[tuple(bad)])} times"
                )
    return acc


def _sweep(
    kern: KernelOp,
    sweep: PanelsOp,
    packed: np.ndarray,
    padded: np.ndarray,
    n: int,
    acc: np.ndarray,
    stored: np.ndarray,
    k0: int,
    kc: int,
) -> None:
    """One `rtile.panels` sweep over a row block's K block: every panel, and in
    it the full micro-tiles, then the edge tile of the rows left. `padded` is
    B zero-padded (`_one`), `n` its columns."""
    micro = sweep.micro
    g = micro.geom.geometry
    edges = micro.edge_rows
    width = sweep.width.value.data
    last = micro.last.value.data
    mb = packed.shape[0]
    for j0 in range(sweep.lo.value.data, sweep.hi.value.data, width):
        cols = min(width, n - j0)  # what the tile stores: its last vector's `last` lanes
        if cols != width - g.lanes + last:
            raise KernelRunError(
                f"{kern.name}: the panel at column {j0} holds {cols} columns, its micro-tile "
                f"stores {width - g.lanes + last}"
            )
        panel = padded[:, j0 : j0 + width]
        i = mb // g.rm * g.rm  # the full tiles, side by side down the block's rows
        if i:
            _tile(packed, panel, acc, stored, 0, i, j0, cols, k0, kc)
        if i < mb:
            if mb - i not in edges:
                raise KernelRunError(
                    f"{kern.name}: {mb - i} rows are left in a row block of {mb}, and "
                    f"{micro.name} has edge tiles of {list(edges)} rows"
                )
            _tile(packed, panel, acc, stored, i, mb - i, j0, cols, k0, kc)


def _tile(
    packed: np.ndarray,
    panel: np.ndarray,
    acc: np.ndarray,
    stored: np.ndarray,
    i: int,
    r: int,
    j0: int,
    cols: int,
    k0: int,
    kc: int,
) -> None:
    """Micro-tiles over r rows from row i over a K block, their columns stored
    from j0."""
    part = packed[i : i + r, k0 : k0 + kc] @ panel[k0 : k0 + kc]
    acc[i : i + r, j0 : j0 + cols] += part[:, :cols]
    stored[i : i + r, j0 : j0 + cols] += 1


def winograd(
    xp: np.ndarray, w: np.ndarray, stride: int, dilation: int, out: Sequence[int],
    product: Product,
) -> np.ndarray:
    """A 2D convolution (NHWC input `xp` already zero-padded, weights (co, kh,
    3, c), stride and dilation along the height, 1 along the width) as
    Winograd's F(4, 3) along the width: the sum before the bias, (n, oh, ow, co)."""
    co, kh, kw, c = w.shape
    oh, ow = out
    tile, points = rk.WINOGRAD_TILE, rk.WINOGRAD_POINTS
    tiles = -(-ow // tile)
    wide = tiles * tile + points - tile
    if xp.shape[2] < wide:  # the last tile's pixels past the padded input: zeros
        xp = np.concatenate(
            [xp, np.zeros((*xp.shape[:2], wide - xp.shape[2], c), xp.dtype)], axis=2
        )
    bt, g, at = (np.asarray(t, np.float64) for t in (rk.WINOGRAD_BT, rk.WINOGRAD_G,
                                                      rk.WINOGRAD_AT))
    # d[n, y, t, p, c]: input pixel p of tile t of row y
    d = np.stack([xp[:, :, p : p + tile * tiles : tile] for p in range(points)], axis=3)
    v = np.einsum("jp,nytpc->jnytc", bt, d)
    rows = [i * stride + ky * dilation for i in range(oh) for ky in range(kh)]
    # A of product j: (n, oy, t) rows, (ky, c) columns
    a = v[:, :, rows].reshape(points, xp.shape[0], oh, kh, tiles, c)
    a = a.transpose(0, 1, 2, 4, 3, 5).reshape(points, -1, kh * c)
    u = np.einsum("jx,okxc->jkco", g, w.astype(np.float64)).reshape(points, kh * c, co)
    m = product(a, u).reshape(points, xp.shape[0], oh, tiles, co)
    y = np.einsum("qj,jnyto->nytqo", at, m).reshape(xp.shape[0], oh, tiles * tile, co)
    return y[:, :, :ow]
