"""The register-tile (GEBP) geometry of matrix products: spec/register_tile.md.

One function or value per entry of the spec, under the spec's names. A geometry is
an rm x rn grid of `lanes`-wide vector accumulators; `default` is the renderer's
own pick for an m x n site, `check` says whether a requested one can be honoured
(its message is the decline diagnostic), `alternatives` and `rm_twin` are what the
tuner times beside the default. The hardware enters only through a `Target`'s
vector width, register count and element width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tigris_ir.rtile.targets import Target


@dataclass(frozen=True, order=True)
class Geometry:
    """rm accumulator rows by rn vector columns of `lanes` elements each."""

    rm: int
    rn: int
    lanes: int

    def __str__(self) -> str:
        return show(self)


def show(g: Geometry) -> str:
    """The display form shared by decline diagnostics and labels: "rm4 rn2 lanes8"."""
    return f"rm{g.rm} rn{g.rn} lanes{g.lanes}"


def columns(g: Geometry) -> int:
    """The columns one tile pass covers."""
    return g.rn * g.lanes


def live_registers(g: Geometry) -> int:
    """Accumulators plus every A splat and B row of a k step: the model's over-count."""
    return g.rm * g.rn + g.rm + g.rn


def resident_floor(g: Geometry) -> int:
    """The fewest registers that keep every operand of a pass resident."""
    return g.rm * g.rn + min(g.rm, g.rn) + 1


def simd_lane_ladder(vector_bytes: int, elt_bytes: int) -> list[int]:
    """Widths in lanes a file renders, widest first, halving to the 32-byte floor.

    The floor is never below the file itself; widths under two lanes are dropped.
    No rendering file is narrower than 8 bytes, so such a file renders nothing.
    """
    if elt_bytes <= 0 or vector_bytes < 8:
        return []
    floor = min(vector_bytes, 32)
    ladder: list[int] = []
    width = vector_bytes
    while width >= floor:
        if width // elt_bytes >= 2:
            ladder.append(width // elt_bytes)
        width //= 2
    return ladder


def renderable_lanes(vector_bytes: int, elt_bytes: int) -> list[int]:
    """Widths a requested geometry may name: the ladders of the file and every half.

    A narrower vector is the low part of the same register, so the register count
    and the budget it sets still hold for it.
    """
    lanes: list[int] = []
    width = vector_bytes
    while width >= 8:
        for w in simd_lane_ladder(width, elt_bytes):
            if w not in lanes:
                lanes.append(w)
        width //= 2
    return sorted(lanes, reverse=True)


rm_cap: Final[int] = 4
"""tinyBLAS's four accumulator rows, which `default` takes wherever m affords them."""


def rn_cap(target: Target) -> int:
    """The largest rn whose rm_cap-row pass fits the register COUNT (resident_floor)."""
    rn = 0
    while resident_floor(Geometry(rm_cap, rn + 1, 1)) <= target.vector_registers:
        rn += 1
    return rn


def budget(target: Target) -> int:
    """live_registers of the widest default tile, rm_cap x rn_cap: 19 or 34."""
    return live_registers(Geometry(rm_cap, rn_cap(target), 1))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Cover:
    """How a geometry covers an m x n site, exactly as the renderer emits it.

    m_full x n_full in full rm x columns passes; the leftover columns as a column
    tail of `tail_widths` vectors (the last one possibly partial, its entry being
    its valid lanes); the leftover `band_rows` rows as a band over all n columns.
    """

    m_full: int
    n_full: int
    tail_widths: tuple[int, ...]
    band_rows: int

    @property
    def n_tail(self) -> int:
        """Columns of the column tail."""
        return sum(self.tail_widths)


def cover(g: Geometry, m: int, n: int) -> Cover:
    """The decomposition of an m x n site by g: full passes, column tail, row band."""
    m_full = m - m % g.rm
    n_full = n - n % columns(g)
    n_tail = n - n_full
    tail = tuple(
        min(g.lanes, n_tail - c * g.lanes) for c in range(_ceil_div(n_tail, g.lanes))
    )
    return Cover(m_full, n_full, tail, m - m_full)


def _ladder_for(target: Target, n: int) -> list[int]:
    """The file's own widths, narrowed to those n can fill."""
    return [
        w for w in simd_lane_ladder(target.vector_bytes, target.elt_bytes) if w <= n
    ]


def price(n: int, rm: int, lanes: int, rn: int) -> int:
    """Vector-issue slots of a site per unit of k, scaled by rm to stay an integer.

    ceil(n / lanes) * (rm + 1) for the FMAs and B loads of every vector column
    (whatever rn), plus rm * ceil(n / (rn * lanes)) for one A splat per row per pass.
    """
    return _ceil_div(n, lanes) * (rm + 1) + rm * _ceil_div(n, rn * lanes)


def _tail_free(g: Geometry, n: int) -> bool:
    return n % columns(g) == 0


def rank_key(g: Geometry, n: int) -> tuple[int, int, int, int]:
    """Price, then the wider vector, then tail-free, then the smaller tile."""
    return (price(n, g.rm, g.lanes, g.rn), -g.lanes, 0 if _tail_free(g, n) else 1, g.rn)


def _default_candidates(target: Target, m: int, n: int) -> list[Geometry]:
    rm = min(rm_cap, m)
    cap = rn_cap(target)
    return [
        Geometry(rm, rn, lanes)
        for lanes in _ladder_for(target, n)
        for rn in range(1, min(cap, n // lanes) + 1)
    ]


def default(target: Target, m: int, n: int) -> Geometry | None:
    """The renderer's own geometry for an m x n site, or None when no width fits."""
    if m < 1 or n < 1:
        return None
    candidates = _default_candidates(target, m, n)
    if not candidates:
        return None
    return min(candidates, key=lambda g: rank_key(g, n))


def target_default(target: Target, m: int, n: int, int8: bool) -> Geometry | None:
    """The default for an m x n site of a target's kernels: the model's
    (`default`), its rows capped where the target's int8 instruction caps
    them (`Target.int8_rows`: rm3 rn1 lanes2 for Helium's VMLADAVA, whose
    accumulators only the even registers hold). `target` is the register
    file the site is fitted to; the cap is the default's, not a rule of
    `check` (a request for more rows is still honoured)."""
    g = default(target, m, n)
    cap = target.int8_rows if int8 else None
    if g is None or cap is None or g.rm <= cap:
        return g
    return Geometry(cap, g.rn, g.lanes)


CHECK_RULES: Final[tuple[str, ...]] = (
    "degenerate",
    "renderable-lanes",
    "n-fills-lanes",
    "register-file",
    "rows-fit",
    "columns-fit",
    "register-budget",
)
"""The rules `check` applies, in order; each decline message starts with one."""


def check(target: Target, m: int, n: int, g: Geometry) -> str | None:
    """None if the renderer can honour g on an m x n site, else the violated rule."""
    label = f"{show(g)} on {m}x{n} ({target.name})"
    if g.rm < 1 or g.rn < 1 or g.lanes < 1:
        return f"degenerate: {label} has a dimension below 1"
    lanes = renderable_lanes(target.vector_bytes, target.elt_bytes)
    if g.lanes not in lanes:
        widths = "/".join(str(w) for w in lanes) or "none"
        return (
            f"renderable-lanes: {label}: lanes={g.lanes} is not a width a "
            f"{target.vector_bytes}-byte vector file renders at "
            f"{target.elt_bytes}-byte elements ({widths})"
        )
    if g.lanes > n:
        return (
            f"n-fills-lanes: {label}: n={n} is below the vector width lanes={g.lanes}"
        )
    if rn_cap(target) < 1:
        return (
            f"register-file: {label}: {target.vector_registers} vector registers "
            f"hold no {rm_cap}-row tile (resident floor "
            f"{resident_floor(Geometry(rm_cap, 1, 1))})"
        )
    if g.rm > m:
        return f"rows-fit: {label}: rm={g.rm} exceeds the row extent m={m}"
    if columns(g) > n:
        return (
            f"columns-fit: {label}: rn*lanes={columns(g)} exceeds the column "
            f"extent n={n}"
        )
    if live_registers(g) > budget(target):
        return (
            f"register-budget: {label}: {live_registers(g)} live registers "
            f"(rm*rn + rm + rn) exceed the budget of {budget(target)} of a "
            f"{target.vector_registers}-register file"
        )
    return None


def rn_budget_cap(target: Target, rm: int) -> int:
    """The largest rn whose live_registers beside rm rows stay within budget."""
    return (budget(target) - rm) // (rm + 1)


def alternatives(target: Target, m: int, n: int) -> list[Geometry]:
    """What the seeding times beside the default: tail-free, budget cap, tied larger."""
    dflt = default(target, m, n)
    widths = _ladder_for(target, n)
    if dflt is None or not widths:
        return []
    lanes, rm = widths[0], dflt.rm
    cap = min(rn_budget_cap(target, rm), n // lanes)
    tail_free = [rn for rn in range(2, cap + 1) if n % (rn * lanes) == 0]
    picks: list[int] = tail_free[-1:]
    if cap >= 2 and cap not in picks and n % (cap * lanes) <= lanes:
        picks.append(cap)
    if dflt.lanes == lanes and not _tail_free(dflt, n):
        own = price(n, rm, lanes, dflt.rn)
        top = min(rn_cap(target), n // lanes)
        tied = [
            rn for rn in range(dflt.rn + 1, top + 1) if price(n, rm, lanes, rn) == own
        ]
        if tied and tied[-1] not in picks:
            picks.append(tied[-1])
    found = [Geometry(rm, rn, lanes) for rn in picks]
    return [g for g in found if g != dflt and check(target, m, n, g) is None]


@dataclass(frozen=True)
class TileConfig:
    """Config keys of the register-tile seeding."""

    autotune_register_tile_rm_twin: bool = False
    """Seed the two-row twin of a four-row default (off: the model never prefers it)."""


DEFAULT_CONFIG: Final[TileConfig] = TileConfig()


def rm_twin(
    target: Target, m: int, n: int, config: TileConfig = DEFAULT_CONFIG
) -> Geometry | None:
    """The two-row twin of a four-row default, only under its config key."""
    if not config.autotune_register_tile_rm_twin:
        return None
    dflt = default(target, m, n)
    if dflt is None or dflt.rm != rm_cap:
        return None
    twin = Geometry(2, min(rn_budget_cap(target, 2), n // dflt.lanes), dflt.lanes)
    if twin.rn < 1 or check(target, m, n, twin) is not None:
        return None
    return twin


def seeds(
    target: Target, m: int, n: int, config: TileConfig = DEFAULT_CONFIG
) -> list[Geometry]:
    """Every geometry the seeding proposes for a site: default first, no repeats."""
    dflt = default(target, m, n)
    if dflt is None:
        return []
    twin = rm_twin(target, m, n, config)
    return [dflt, *alternatives(target, m, n), *([twin] if twin else [])]
