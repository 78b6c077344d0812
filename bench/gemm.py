"""Register-tiled GEBP against numpy's OpenBLAS, one thread, float32 (and int8).

    python bench/gemm.py [--rounds N] [--shapes 256x256x256,...]

For every shape: GFLOP/s of numpy (OpenBLAS, one thread), of the kernel the model
picks by default for this CPU, and of the fastest alternative the seeding
proposes; then the ratios to numpy, and the geometry `gebp_autotune` keeps when
it times the same candidates itself (in a fresh cache). Timings alternate
between contenders round after round and keep each one's best, so machine noise
hits all alike. Then int8 x int8 -> int32 at 512^3 in GOP/s, and the model's
default on avx512 and avx2 for every shape.
"""

from __future__ import annotations

import os

# One BLAS thread, and none of the core-type overrides some machines set for
# old OpenBLAS builds: they make a current one run a slower kernel. This must
# happen before numpy is imported.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)

import argparse  # noqa: E402
import ctypes  # noqa: E402
import glob  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tigris_ir.backend.c import gebp as gebp_c  # noqa: E402
from tigris_ir.rtile import autotune as gebp_autotune  # noqa: E402
from tigris_ir.rtile import model as rt  # noqa: E402
from tigris_ir.rtile.targets import avx2, avx512, host_target  # noqa: E402

SHAPES = [
    (64, 64, 64),
    (128, 128, 128),
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (3136, 24, 144),
    (784, 32, 192),
    (49, 320, 960),
    (1, 1000, 1280),
    (100, 100, 100),
    (97, 83, 61),
]


def blas_info() -> str:
    """Which OpenBLAS kernel numpy runs and with how many threads."""
    try:
        import threadpoolctl  # type: ignore[import-not-found]

        infos = threadpoolctl.threadpool_info()
        blas = [i for i in infos if i.get("user_api") == "blas"]
        if blas:
            b = blas[0]
            return (
                f"{b.get('internal_api')} {b.get('version')} "
                f"{b.get('architecture')}, {b.get('num_threads')} thread(s)"
            )
    except ImportError:
        pass
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libdir, "*openblas*")):
        lib = ctypes.CDLL(path)
        for fn in ("scipy_openblas_get_corename64_", "openblas_get_corename"):
            if hasattr(lib, fn):
                f = getattr(lib, fn)
                f.restype = ctypes.c_char_p
                core = f().decode()
                return f"OpenBLAS core {core}, OPENBLAS_NUM_THREADS=1"
    return "unknown BLAS, OPENBLAS_NUM_THREADS=1"


def _calls_per_round(f: Callable[[], object], seconds: float) -> int:
    f()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t
        if dt > seconds / 4:
            return max(1, int(n * seconds / dt))
        n *= 4


def race(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best seconds per call of each contender, measured in alternating rounds."""
    reps = {k: _calls_per_round(f, 0.02) for k, f in contenders.items()}
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for key, f in contenders.items():
            t = time.perf_counter()
            for _ in range(reps[key]):
                f()
            best[key] = min(best[key], (time.perf_counter() - t) / reps[key])
    return best


def raw_call(kernel: gebp_c.GebpKernel, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    fn = kernel._fn  # noqa: SLF001 - the bare ctypes call, no argument checks
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    return lambda: fn(pa, pb, None, pc)


def autotune_pick(shape: tuple[int, int, int], cache: gebp_autotune.TuneCache) -> str:
    """What the autotune of gebp-tile keeps for the site, timed by itself."""
    m, n, k = shape
    choice = gebp_autotune.autotune(host_target(), m, n, k, "float32", cache=cache)
    if choice is None:
        return "-"
    return rt.show(choice.geometry) + ("" if choice.source == "timed" else f" ({choice.source})")


def bench_f32(
    shape: tuple[int, int, int], rounds: int, cache: gebp_autotune.TuneCache
) -> tuple[str, ...]:
    m, n, k = shape
    target = host_target()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b
    c_np = np.empty((m, n), np.float32)
    dflt = rt.default(target, m, n)
    if dflt is None:
        raise RuntimeError(f"no register tile fits {m}x{n} on {target.name}")
    geoms = [dflt, *rt.alternatives(target, m, n)]
    contenders: dict[str, Callable[[], object]] = {"numpy": lambda: np.matmul(a, b, out=c_np)}
    outs: dict[str, np.ndarray] = {}
    for g in geoms:
        kern = gebp_c.build(g, gebp_c.Problem(m, n, k), target)
        outs[rt.show(g)] = c = np.empty((m, n), np.float32)
        contenders[rt.show(g)] = raw_call(kern, a, b, c)
    best = race(contenders, rounds)
    for label, c in outs.items():
        err = np.abs(c - ref).max() / max(1.0, float(np.abs(ref).max()))
        if err > 1e-5:
            raise RuntimeError(f"{label} on {shape}: relative error {err:.2e}")
    flops = 2.0 * m * n * k
    gf = {key: flops / t / 1e9 for key, t in best.items()}
    alt = max((rt.show(g) for g in geoms[1:]), key=lambda s: gf[s], default=None)
    fastest = max((rt.show(g) for g in geoms), key=lambda s: gf[s])
    gain = gf[fastest] / gf[rt.show(dflt)] - 1.0
    note = "" if fastest == rt.show(dflt) else f"faster: {fastest} (+{100 * gain:.0f}%)"
    pick = autotune_pick(shape, cache)
    return (
        f"{m}x{n}x{k}",
        f"{gf['numpy']:.1f}",
        f"{rt.show(dflt)}",
        f"{gf[rt.show(dflt)]:.1f}",
        f"{gf[rt.show(dflt)] / gf['numpy']:.2f}",
        f"{alt} {gf[alt]:.1f}" if alt else "-",
        f"{max(gf[alt] if alt else 0.0, gf[rt.show(dflt)]) / gf['numpy']:.2f}",
        pick,
        note,
    )


def bench_int8(size: int, rounds: int) -> list[str]:
    target = host_target()
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    b = rng.integers(-128, 128, (size, size), dtype=np.int8)
    ref = a.astype(np.int32) @ b.astype(np.int32)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    c_np = np.empty((size, size), np.float32)
    contenders: dict[str, Callable[[], object]] = {"numpy f32": lambda: np.matmul(af, bf, out=c_np)}
    outs: dict[str, np.ndarray] = {}
    dflt = rt.default(target, size, size)
    assert dflt is not None
    for g in [dflt, *rt.alternatives(target, size, size)]:
        kern = gebp_c.build(g, gebp_c.Problem(size, size, size, "int8"), target)
        outs[rt.show(g)] = c = np.empty((size, size), np.int32)
        contenders[rt.show(g)] = raw_call(kern, a, b, c)
    best = race(contenders, rounds)
    for label, c in outs.items():
        if not np.array_equal(c, ref):
            raise RuntimeError(f"int8 {label}: results differ from numpy")
    ops = 2.0 * size**3
    path = "AVX512-VNNI vpdpbusd" if target.vnni else "pmaddwd on int16 pairs"
    lines = [f"int8 x int8 -> int32 at {size}^3 ({path}), exact:"]
    for key, t in best.items():
        lines.append(f"  {key:<16} {ops / t / 1e9:7.1f} GOP/s")
    return lines


def table(rows: list[tuple[str, ...]], head: tuple[str, ...]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--shapes", default="", help="MxNxK,... (default: all)")
    parser.add_argument("--no-int8", action="store_true")
    args = parser.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = [
            (int(m), int(n), int(k)) for m, n, k in (s.split("x") for s in args.shapes.split(","))
        ]
    target = host_target()
    print(
        f"host target: {target.name} ({target.isa}, {target.vector_bytes}-byte x "
        f"{target.vector_registers} registers, VNNI {target.vnni}); "
        f"numpy: {blas_info()}"
    )
    head = (
        "MxNxK",
        "numpy",
        "default",
        "GF/s",
        "x np",
        "best alternative",
        "best x np",
        "autotune",
        "note",
    )
    with tempfile.TemporaryDirectory() as tmp:
        cache = gebp_autotune.TuneCache(Path(tmp) / "tune.json")
        rows = [bench_f32(s, args.rounds, cache) for s in shapes]
    print(table(rows, head))
    if not args.no_int8:
        print("\n".join(bench_int8(512, args.rounds)))
    print("\nmodel defaults (no timing) on avx512 and avx2:")
    picks = []
    for m, n, k in shapes:
        d512, d2 = rt.default(avx512, m, n), rt.default(avx2, m, n)
        picks.append(
            (
                f"{m}x{n}x{k}",
                rt.show(d512) if d512 else "-",
                " ".join(map(str, rt.cover(d512, m, n).tail_widths)) if d512 else "",
                rt.show(d2) if d2 else "-",
                " ".join(map(str, rt.cover(d2, m, n).tail_widths)) if d2 else "",
            )
        )
    print(table(picks, ("MxNxK", "avx512", "tail", "avx2", "tail")))


if __name__ == "__main__":
    main()
