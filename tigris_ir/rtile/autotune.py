"""Timing the register-tile candidates of a site on this machine, with a cache.

The model (`register_tile.default`) only ranks; where it proposes alternatives
(and, under `autotune_register_tile_rm_twin`, the two-row twin) the choice is a
timing question. `autotune` compiles every candidate with the network's own
GEBP generator and flags (`backend.c.gebp`: the code and `-std=c99
-ffp-contract=off -O3 -march=native` a network with that tile is built with),
times them in alternating rounds (machine noise hits all alike), keeps the fastest and
records it in a JSON cache keyed by target and site (m, n, k, dtype), so that a
second compilation of the same network does not time again.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tigris_ir.backend.c import gebp as gebp_c
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.targets import Target, can_run

Dtype = Literal["float32", "int8"]

CACHE_VERSION = 2
"""Bumped whenever the meaning of a cache entry changes; older files are ignored."""


def default_cache_path() -> Path:
    """`$XDG_CACHE_HOME/tigris-ir/gebp-autotune.json`, else under `~/.cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tigris-ir" / "gebp-autotune.json"


def target_key(target: Target) -> str:
    """A target as the facts that decide a timing: name, ISA, register file."""
    extras = ("+vnni" if target.vnni else "") + ("" if target.fma else "-fma")
    return f"{target.name}:{target.isa}{extras}:{target.vector_bytes}Bx{target.vector_registers}"


def site_key(m: int, n: int, k: int, dtype: str) -> str:
    """A site as its extents and element type."""
    return f"{m}x{n}x{k}:{dtype}"


class CacheError(Exception):
    """The cache file exists but cannot be used (unreadable or not ours)."""


@dataclass
class TuneCache:
    """The JSON file of past choices: {target: {site: {"geom": ..., "seconds": ...}}}."""

    path: Path
    _data: dict[str, Any] | None = field(default=None, init=False, repr=False)

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._read()
        return self._data

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"version": CACHE_VERSION, "targets": {}}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as e:
            raise CacheError(f"cannot read the autotune cache {self.path}: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("targets"), dict):
            raise CacheError(f"{self.path} is not a tigris-ir autotune cache")
        if data.get("version") != CACHE_VERSION:
            return {"version": CACHE_VERSION, "targets": {}}
        return data

    def lookup(self, target: Target, site: str) -> rt.Geometry | None:
        """The cached choice for a site on a target, if any."""
        entry = self._load()["targets"].get(target_key(target), {}).get(site)
        if not isinstance(entry, dict):
            return None
        return parse_geometry(str(entry.get("geom", "")))

    def store(self, target: Target, site: str, g: rt.Geometry, seconds: dict[str, float]) -> None:
        """Record a choice and write the file (merged with what is on disk now)."""
        fresh = self._read()  # another compilation may have added entries
        fresh["targets"].setdefault(target_key(target), {})[site] = {
            "geom": rt.show(g),
            "seconds": seconds,
        }
        self._data = fresh
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".gebp-autotune-")
        with os.fdopen(fd, "w") as f:
            json.dump(fresh, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def parse_geometry(text: str) -> rt.Geometry | None:
    """ "rm4 rn2 lanes8" back to a Geometry (None if it is not that form)."""
    parts = text.split()
    keys = ("rm", "rn", "lanes")
    if len(parts) != 3 or not all(
        p.startswith(key) and p[len(key) :].isdigit() for p, key in zip(parts, keys)
    ):
        return None
    rm, rn, lanes = (int(p[len(key) :]) for p, key in zip(parts, keys))
    return rt.Geometry(rm, rn, lanes)


Timer = Callable[[Sequence[rt.Geometry], gebp_c.Problem, Target], dict[rt.Geometry, float]]
"""Seconds per call of each candidate on a problem (injectable for tests)."""


def operands(
    p: gebp_c.Problem, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """A, B, the bias and (int8) the requantization multipliers of a problem."""
    rng = np.random.default_rng(seed)
    if p.dtype == "float32":
        return (
            rng.standard_normal((p.m, p.k), dtype=np.float32),
            rng.standard_normal((p.k, p.n), dtype=np.float32),
            rng.standard_normal(p.n, dtype=np.float32),
            None,
        )
    return (
        rng.integers(-128, 128, (p.m, p.k), dtype=np.int8),
        rng.integers(-128, 128, (p.k, p.n), dtype=np.int8),
        rng.integers(-1000, 1000, p.n, dtype=np.int32),
        np.full(p.n, 1.0 / (128.0 * max(1, p.k) ** 0.5), np.float32),
    )


def call_of(kernel: gebp_c.Kernel, a: np.ndarray, b: np.ndarray, bias: np.ndarray,
            mult: np.ndarray | None) -> tuple[Callable[[], object], np.ndarray]:
    """A call of the kernel on packed operands (packed once, as a network's
    weights are) and the array it writes.

    The operands are checked by one `Kernel.call`; the call returned passes
    their addresses straight to the compiled function, so that a timing of a
    small problem is the kernel's and not the checks' (100x100x100 on Zen 4:
    18.4 us a call, 23.1 us through `Kernel.call`)."""
    out = np.empty((kernel.problem.m, kernel.problem.n), a.dtype)
    bp, bs = kernel.pack(b), kernel.bias(b, bias)
    ms = None if mult is None else kernel.pad(mult)
    kernel.call(a, bp, bs, out, ms)
    fn, m = kernel.fn, kernel.problem.m
    args = (a.ctypes.data, bp.ctypes.data, bs.ctypes.data,
            None if ms is None else ms.ctypes.data, out.ctypes.data, m)

    def call(_held: object = (a, bp, bs, ms, out)) -> object:  # the arrays `args` points to
        return fn(*args)

    return call, out


def time_candidates(
    geoms: Sequence[rt.Geometry],
    problem: gebp_c.Problem,
    target: Target,
    *,
    rounds: int = 5,
    round_seconds: float = 0.01,
) -> dict[rt.Geometry, float]:
    """Best seconds per call of each compiled candidate, in alternating rounds."""
    a, b, bias, mult = operands(problem)
    calls: dict[rt.Geometry, Callable[[], object]] = {}
    for g in geoms:
        calls[g] = call_of(gebp_c.build(g, problem, target), a, b, bias, mult)[0]
    reps: dict[rt.Geometry, int] = {}
    for g, f in calls.items():
        f()  # warm up: page in the code and the operands
        start = time.perf_counter()
        f()
        once = max(time.perf_counter() - start, 1e-7)
        reps[g] = max(1, int(round_seconds / once))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for g, f in calls.items():
            start = time.perf_counter()
            for _ in range(reps[g]):
                f()
            best[g] = min(best[g], (time.perf_counter() - start) / reps[g])
    return best


Source = Literal["timed", "cache", "single", "untimed"]


@dataclass(frozen=True)
class Choice:
    """The geometry autotune keeps, and how it came to it."""

    geometry: rt.Geometry
    source: Source
    """timed here, read from the cache, the only candidate, or untimed (see note)."""
    note: str = ""
    """Why nothing was timed when the source is "untimed"."""
    seconds: dict[rt.Geometry, float] = field(default_factory=dict[rt.Geometry, float])


def candidates(
    target: Target, m: int, n: int, config: rt.TileConfig = rt.DEFAULT_CONFIG
) -> list[rt.Geometry]:
    """The default first, then the alternatives and (if configured) the twin, on
    files of 16 lanes or more one tile at half the width, and at each width the
    tallest tile the register budget admits.

    The spec's alternatives stay at the widest width the site fills; but the
    model cannot see that a narrower vector with more columns per pass can win
    (ANCHORS.md: a 4 x 3 tile of 8 lanes beats the 16-lane default at
    3136x24x144 on AVX-512), so the tuner also times, at half the default's
    width, the widest tile the register budget accepts there.
    """
    seen = rt.seeds(target, m, n, config)
    if not seen:
        return seen
    rm = seen[0].rm
    widths = [seen[0].lanes]
    if seen[0].lanes >= 16:
        widths.append(seen[0].lanes // 2)
    for lanes in rt.renderable_lanes(target.vector_bytes, target.elt_bytes):
        if lanes not in widths[1:]:
            continue
        for rn in range(rt.rn_cap(target), 0, -1):
            g = rt.Geometry(rm, rn, lanes)
            if g not in seen and rt.check(target, m, n, g) is None:
                seen.append(g)
                break
    # and, at each of those widths, the tallest tile of the default's columns
    # the register budget admits: more rows reuse each B vector more often,
    # which the model (ranking at rm_cap rows) does not price
    for lanes in widths:
        rn = max((g.rn for g in seen if g.lanes == lanes), default=0)
        for rows in range(2 * rt.rm_cap, rm, -1):
            g = rt.Geometry(rows, rn, lanes)
            if rn and g not in seen and rt.check(target, m, n, g) is None:
                seen.append(g)
                break
    return seen


def autotune(
    target: Target,
    m: int,
    n: int,
    k: int,
    dtype: Dtype,
    *,
    cache: TuneCache | None = None,
    config: rt.TileConfig = rt.DEFAULT_CONFIG,
    timer: Timer | None = None,
) -> Choice | None:
    """The fastest seeded geometry of an m x n x k site, or None if none fits.

    Targets this CPU cannot run keep the model's default, untimed and uncached.
    """
    geoms = candidates(target, m, n, config)
    if not geoms:
        return None
    if len(geoms) == 1:
        return Choice(geoms[0], "single")
    site = site_key(m, n, k, dtype)
    if cache is not None:
        cached = cache.lookup(target, site)
        if cached is not None and cached in geoms:
            return Choice(cached, "cache")
    reason = can_run(target)
    if reason is not None:
        return Choice(geoms[0], "untimed", f"cannot time here: {reason}")
    if dtype == "int8" and target.arch != "x86_64":
        return Choice(geoms[0], "untimed", "int8 kernels are timed on x86 only")
    problem = gebp_c.Problem(m, n, k, dtype)
    seconds = (timer or time_candidates)(geoms, problem, target)
    best = min(geoms, key=lambda g: (seconds[g], geoms.index(g)))
    if cache is not None:
        cache.store(target, site, best, {rt.show(g): seconds[g] for g in geoms})
    return Choice(best, "timed", seconds=seconds)
