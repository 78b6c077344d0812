"""The kernel decisions of a register-tiled matrix product, beside its tile.

`gebp-tile` gives a site its geometry; `lower-gebp` then fixes, with `plan`,
everything else its C kernel depends on: the multiply-accumulate instruction,
the packed contraction length (K rounded up to that instruction's group of k
steps), the K block the float kernel sweeps its panels in, the rows of A one
call packs (int8) or gathers (im2col) into its stack buffer, and the rows one
micro-tile runs (`micro_rows`: a float tile whose accumulator grid is smaller
than the target's FMA pipeline runs several of its row passes at once), and
for a pointwise convolution how many output rows one call covers
(`row_merge`: a band of whole dense image rows is one run of pixels); and states
them as the ops of an `rtile.kernel` (`tigris_ir.rtile.lower`). A
depthwise convolution's kernel (no matrix product) is decided here too
(`depthwise_plan`: its kernel, lanes, channel vectors and pixels a step,
stated as `rtile.depthwise`). The C printer
reads those ops and decides nothing. The weights' panel layout follows from the
geometry and its cover: full panels of rn * lanes columns, then one panel of
the column tail's vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tigris_ir.rtile import model as rt
from tigris_ir.rtile.targets import INT8_DOT_GROUP, Int8Dot, Target, host_target

Dot = Literal["fma", "vpdpbusd", "pmaddwd", "smlad", "vmladava", "none"]
"""The multiply-accumulate of a kernel: float32 vector FMA (or mul + add where
the unit has none), or one of the int8 instructions (`targets.Int8Dot`)."""

DOTS: tuple[Dot, ...] = ("fma", "vpdpbusd", "pmaddwd", "smlad", "vmladava", "none")

Packing = Literal["rows", "im2col", "window", "winograd"]
"""How A reaches the kernel: rows read in place (float32) or packed (int8),
pixel rows gathered tap-major from the input (im2col), or (`window`, float32)
each pixel's window read in place from the input, one K block per kernel row
(its kw * c taps are one run of the input row, the next pixel's run sw * c
further), where the window lies inside the image's width, and gathered as
im2col rows where it leaves it; or (`winograd`, float32, a kernel three taps
wide at stride and dilation 1 along the width) Winograd's F(4, 3) along the
width: per tile of `WINOGRAD_TILE` output pixels of a row, the
`WINOGRAD_POINTS` input pixels of each kernel row inside the image are
transformed (`WINOGRAD_BT`) into one row of A for each of six products, whose
B are the weights transformed (`WINOGRAD_G`, kh * c rows each); the products'
results go back through `WINOGRAD_AT`, then the bias and the activation. It
takes 6 products of kh * c where the direct product takes 4 of kh * 3 * c
per tile: 2x fewer multiply-adds, for the transforms."""

WINOGRAD_TILE = 4
"""Output pixels of one Winograd tile (F(4, 3) along the width)."""

WINOGRAD_POINTS = 6
"""Input pixels (and products) of one tile: WINOGRAD_TILE + 3 - 1."""

WINOGRAD_BT: tuple[tuple[float, ...], ...] = (
    (4, 0, -5, 0, 1, 0),
    (0, -4, -4, 1, 1, 0),
    (0, 4, -4, -1, 1, 0),
    (0, -2, -1, 2, 1, 0),
    (0, 2, -1, -2, 1, 0),
    (0, 4, 0, -5, 0, 1),
)
"""F(4, 3)'s input transform B^T (points 0, 1, -1, 2, -2 and infinity): row j
of A for product j is the sum of BT[j][p] times input pixel p of the tile."""

WINOGRAD_G: tuple[tuple[float, ...], ...] = (
    (1 / 4, 0, 0),
    (-1 / 6, -1 / 6, -1 / 6),
    (-1 / 6, 1 / 6, -1 / 6),
    (1 / 24, 1 / 12, 1 / 6),
    (1 / 24, -1 / 12, 1 / 6),
    (0, 0, 1),
)
"""F(4, 3)'s weight transform G: product j's weight of a kernel row is the
sum of G[j][kx] times its tap kx (computed in float64, stored as float32)."""

WINOGRAD_AT: tuple[tuple[float, ...], ...] = (
    (1, 1, 1, 1, 1, 0),
    (0, 1, -1, 2, -2, 0),
    (0, 1, 1, 4, 4, 0),
    (0, 1, -1, 8, -8, 1),
)
"""F(4, 3)'s output transform A^T: output pixel q of a tile is the sum of
AT[q][j] times product j."""

WINOGRAD_MIN_CHANNELS = 8
"""The fewest input channels a Winograd kernel takes: below, the transforms
cost more than the multiply-adds they save."""

WINDOW_MIN_RUN = 16
"""The fewest taps of one kernel row (kw * c) a `window` kernel reads in
place: each kernel row is a K block, whose accumulators go through C, and
below this a gathered row is cheaper than those round trips."""

L2_PANEL_BYTES = 24 * 1024
"""The bytes of one K block of a weight panel the float kernel keeps hot."""

PACKED_BYTES: dict[Int8Dot, int] = {
    "vpdpbusd": 1, "pmaddwd": 2, "smlad": 2, "vmladava": 1, "none": 2
}
"""Bytes of one packed element of A per int8 instruction: unsigned bytes
(`vpdpbusd`), signed bytes (`vmladava`) or int16 pairs (x - zero point)."""

ROW_BLOCK = 64
"""The most rows of A one call of a kernel packs or gathers."""


@dataclass(frozen=True)
class KernelPlan:
    """What a GEBP kernel's code depends on besides its geometry."""

    dot: Dot
    kp: int
    """Packed contraction length: K rounded up to the dot's group."""
    kc: int
    """K block: the k steps one sweep of the panels runs (float32; int8 runs all)."""
    mc: int
    """Rows of A per call of the panel sweep (packed or gathered in a stack buffer)."""
    scratch: int
    """Bytes of the stack buffer those rows take (0: A is read in place)."""
    rows: int = 0
    """Rows of one full micro-tile (`micro_rows`; 0: the geometry's rm)."""


def dot_group(dot: Dot) -> int:
    """The k steps one multiply-accumulate consumes per lane."""
    return 1 if dot == "fma" else INT8_DOT_GROUP[dot]


def _k_block(g: rt.Geometry, k: int) -> int:
    """A multiple of 8 k steps whose panel block of rn * lanes float32 columns
    fits L2_PANEL_BYTES; the whole K when that is at most half a block more."""
    kc = max(8, (L2_PANEL_BYTES // (4 * rt.columns(g))) // 8 * 8)
    return k if k <= kc + kc // 2 else kc


def _block_rows(rm: int, row_bytes: int, scratch_bytes: int) -> int:
    """Rows per packed or gathered block: a multiple of the tile's rm, at most
    ROW_BLOCK and within the target's scratch bound (but at least rm)."""
    return max(rm, min(ROW_BLOCK, scratch_bytes // row_bytes) // rm * rm)


def micro_rows(target: Target, g: rt.Geometry, m: int | None = None) -> int:
    """The rows one float micro-tile of `g` runs: rm, or where the model's
    rm_cap-row grid holds fewer accumulators (rm * rn) than the target's FMA
    pipeline keeps in flight (`Target.fma_chains`), as many of its row passes
    at once as make up the difference -- while the register file holds them
    all resident (resident_floor), the site has the rows (m) and a row block
    holds them (ROW_BLOCK). A geometry of fewer rows (a request, a twin) is
    run as it is: its rows were asked for."""
    if g.rm != rt.rm_cap or g.rn < 1:
        return g.rm
    passes = 1
    while g.rm * g.rn * passes < target.fma_chains:
        rows = g.rm * (passes + 1)
        wider = rt.Geometry(rows, g.rn, g.lanes)
        if (
            rt.resident_floor(wider) > target.vector_registers
            or (m is not None and rows > m)
            or rows > ROW_BLOCK
        ):
            break
        passes += 1
    return g.rm * passes


def window_run(dtype: str, groups: int, dilation: int, kw: int, c: int) -> int | None:
    """The taps of one kernel row (kw * c) where a convolution's kernel reads
    its pixels' windows in place (`window` packing): float32, one group, no
    dilation along the width (a kernel row's taps are one run of the input
    row), at least WINDOW_MIN_RUN taps; else None (im2col)."""
    run = kw * c
    if dtype != "float32" or groups != 1 or dilation != 1 or run < WINDOW_MIN_RUN:
        return None
    return run


def winograd_taps(
    target: Target, dtype: str, groups: int, kw: int, stride: int, dilation: int, c: int
) -> int | None:
    """The contraction of each product (kh * c, as a multiple of c: returned
    as c) where a convolution's kernel runs Winograd's F(4, 3) along the
    width (`winograd` packing): float32 on a target with a float vector unit
    and no M-profile CPU (the x86 and Arm A-profile targets), one group, a
    kernel three taps wide at stride and dilation 1 along the width, at least
    `WINOGRAD_MIN_CHANNELS` input channels; else None."""
    if target.mcu is not None or not target.fma or "float32" not in target.tiled:
        return None
    if dtype != "float32" or groups != 1 or kw != 3 or stride != 1 or dilation != 1:
        return None
    return c if c >= WINOGRAD_MIN_CHANNELS else None


def plan(
    target: Target,
    g: rt.Geometry,
    k: int,
    int8: bool,
    packing: Packing,
    m: int | None = None,
    run: int = 0,
    n: int = 0,
) -> KernelPlan:
    """The kernel decisions for a k-long contraction of (up to) m rows tiled by
    `g` on `target`; `run`: the taps of one kernel row of a `window` kernel,
    its K block (of a `winograd` one: the channels of one kernel row, each
    product's contraction being the kernel rows' k; its stack buffer holds a
    row block's transformed rows and the results of its n columns)."""
    if packing == "window" and (int8 or run < 1 or k % run):
        raise ValueError(f"a window kernel is float32 with K blocks of whole kernel rows, "
                         f"not {run} of {k}")
    if packing == "winograd":
        if int8 or run < 1 or k % run:
            raise ValueError(f"a Winograd kernel is float32 with products of whole kernel "
                             f"rows of {run} channels, not {k}")
        # the row block: tiles whose six transformed rows and six results of
        # n (vector-padded) columns the stack buffer holds, at least a micro-tile
        rows = micro_rows(target, g, m)
        cols = -(-n // g.lanes) * g.lanes if n else g.lanes
        tile_bytes = 4 * WINOGRAD_POINTS * (k + cols)
        mc = _block_rows(rows, tile_bytes, target.scratch_bytes)
        return KernelPlan("fma", k, k, mc, mc * tile_bytes, rows)
    if not int8:
        rows = micro_rows(target, g, m)
        # one row tile sweeps each panel once: no later tile reuses a K block
        # of it, so the blocks would only restart the accumulators (and break
        # the panel's one sequential stream into strided pieces)
        kc = k if m is not None and m <= rows else _k_block(g, k)
        if packing == "window":  # one K block per kernel row, read in place
            kc = run
        if packing == "rows":
            return KernelPlan("fma", k, kc, ROW_BLOCK // rows * rows, 0, rows)
        mc = _block_rows(rows, 4 * k, target.scratch_bytes)
        return KernelPlan("fma", k, kc, mc, mc * k * 4, rows)
    dot: Int8Dot = target.int8_dot
    group = INT8_DOT_GROUP[dot]
    kp = -(-k // group) * group
    elt = PACKED_BYTES[dot]
    mc = _block_rows(g.rm, elt * kp, target.scratch_bytes)
    return KernelPlan(dot, kp, kp, mc, mc * kp * elt, g.rm)


def row_merge(
    x_strides: tuple[int, ...], y_strides: tuple[int, ...], c: int, co: int
) -> int | None:
    """W where one call of a pointwise convolution's kernel covers all the
    output rows of a band at once: both NHWC memrefs hold whole dense rows of
    the same W pixels (the input's row stride W * c, the output's W * co), so
    the band's pixels are one run of rows x W rows of A. None (one call per
    output row) for any other layout, and for a feature map without an H axis."""
    if len(x_strides) != 4 or len(y_strides) != 4 or c < 1:
        return None
    w = x_strides[1] // c
    if w > 0 and x_strides[1] == w * c and y_strides[1] == w * co:
        return w
    return None


OFFSET_DOTS: tuple[Dot, ...] = ("vpdpbusd", "vmladava")
"""The int8 instructions whose packed rows hold x - zp plus an offset (their
byte type's, where the input's is the other signedness) rather than x - zp."""


def row_offset(dot: Dot, unsigned_input: bool, zp: int) -> int | None:
    """What the packed rows of A hold more than x - zp, for inputs of zero
    point `zp` (uint8 where `unsigned_input`, else int8): `vpdpbusd` packs
    unsigned bytes (int8 inputs + 128), `vmladava` signed ones (uint8 inputs
    - 128), both without subtracting zp, so the offset is zp plus that shift
    (the kernel's bias is less offset times B's column sums). None where the
    rows hold x - zp itself (the int16 pair products, float32)."""
    if dot == "vpdpbusd":
        return zp if unsigned_input else zp + 128
    if dot == "vmladava":
        return zp - 128 if unsigned_input else zp
    return None


DwKernel = Literal["vector", "dsp", "mve"]
"""The kernel of a depthwise convolution: the vector kernel of the x86 C
(float32 GCC vectors, int8 AVX2 lanes with an AVX-512 block of 32 channels
beside them, each under its compiler's guard, plain loops elsewhere), or the
Cortex-M int8 ones: the DSP extension's (SMLABB / SMLATT on channel pairs) or
Helium's (VMULLB / VMULLT on int16 lanes)."""

DW_KERNELS: tuple[DwKernel, ...] = ("vector", "dsp", "mve")

DW_PIXELS = 8
"""Output pixels per block of the float32 depthwise kernel (their tap pointers
stay on the stack, the taps' weights in vector registers across the block; a
whole block of a row keeps one accumulator per pixel and loads each input
vector once per kernel row)."""

DW_WEIGHT_REGISTERS = 20
"""The taps' weight vectors a float32 depthwise step may hold in registers
(two channel vectors while taps * 2 stay within it: a 3x3 kernel)."""

DW_INT8_VECTORS = 4
"""Channel vectors (of eight int32 lanes) one int8 depthwise step of the
x86 C accumulates."""

C_FLOAT_LANES = max(4, host_target().vector_bytes // 4)
"""float32 lanes of the C's generic float vectors (`tg_vf`): the widest unit
of the compiling host, enabled where the compiler targets it (the portable
loops elsewhere). The float32 depthwise kernel is written in them."""

DW_LANES: dict[DwKernel, int] = {"dsp": 4, "mve": 8}
"""Channels one step of a Cortex-M int8 depthwise kernel takes: four int8 in
a 32-bit word (DSP), eight widened to int16 lanes of a Q register (Helium)."""

DW_INT8_LANES = 8
"""int32 lanes of the x86 C's int8 depthwise vectors (AVX2)."""


@dataclass(frozen=True)
class DepthwisePlan:
    """The decisions of a depthwise convolution's kernel (`rtile.depthwise`)."""

    kernel: DwKernel
    lanes: int
    """Channels per vector."""
    vectors: int
    """Channel vectors one step accumulates (float32: per block of pixels)."""
    pixels: int
    """Output pixels one step covers (float32: a block whose tap pointers and
    weight vectors it shares; 1: one pixel per step)."""


def depthwise_plan(
    target: Target, taps: int, int8: bool, width: int | None = None
) -> DepthwisePlan:
    """The kernel of a depthwise convolution of `taps` taps on `target`: the
    CPU's int8 extension on a Cortex-M (Helium, else the DSP extension), else
    the vector kernel, float32 in `C_FLOAT_LANES` lanes over blocks of
    `DW_PIXELS` pixels, or of `width` where it is narrower (the most pixels
    of a row the band computes at once: a row of a 7-wide map, or of a 2D
    grid's 5-wide tile, is one whole block, not a partial one of 8),
    with as many channel vectors (two, or one) as keep the taps' weights
    within `DW_WEIGHT_REGISTERS`."""
    if int8:
        mcu = target.mcu
        if mcu is not None and (mcu.mve != "none" or mcu.dsp):
            kind: DwKernel = "mve" if mcu.mve != "none" else "dsp"
            return DepthwisePlan(kind, DW_LANES[kind], 1, 1)
        return DepthwisePlan("vector", DW_INT8_LANES, DW_INT8_VECTORS, 1)
    vectors = 2 if 2 * taps <= DW_WEIGHT_REGISTERS else 1
    pixels = DW_PIXELS if width is None else max(1, min(DW_PIXELS, width))
    return DepthwisePlan("vector", C_FLOAT_LANES, vectors, pixels)
