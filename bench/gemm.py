"""The network's GEBP against numpy's OpenBLAS, one thread, float32 (and int8).

    python bench/gemm.py [--rounds N] [--shapes 3136x24x144,...] [--no-int8]

For every shape M x N x K, a one-Gemm ONNX model (constant B and bias) goes
through the pipeline (`--lower-to-loops --gebp-tile=target=host --lower-gebp`),
once with the model's default tile ("before": no timing) and once with
`autotune=true` ("after"); the band's `rtile.kernel` op (of its `#rtile.geom`)
is printed by the network's one GEBP generator (`tigris_ir.backend.c.gebp`) and
built with the network's flags (`-std=c99 -ffp-contract=off -O3
-march=native`). Each is timed against numpy's `A @ B + bias` in alternating
rounds (each keeps its best, so machine noise hits all alike); B is packed
once beforehand, as a network's weights are. Results are checked against
float64 (float32: relative 1e-5) and, for int8, bit for bit against the
requantization formula computed in numpy.
"""

from __future__ import annotations

import os

# One BLAS thread, and none of the core-type overrides some machines set for
# old OpenBLAS builds. This must happen before numpy is imported.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from xdsl.context import Context  # noqa: E402

from tigris_ir.backend.c import gebp  # noqa: E402
from tigris_ir.dialects.rtile import GEOM, GeomAttr, KernelOp, kernel_of  # noqa: E402
from tigris_ir.frontend.onnx_import import import_model  # noqa: E402
from tigris_ir.passes.gebp_tile import GebpTilePass  # noqa: E402
from tigris_ir.passes.lower_gebp import LowerGebpPass  # noqa: E402
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass  # noqa: E402
from tigris_ir.rtile import autotune, decide  # noqa: E402
from tigris_ir.rtile import model as rt  # noqa: E402
from tigris_ir.rtile.targets import host_cpu_name, host_target  # noqa: E402

SHAPES = [
    (3136, 24, 144),
    (784, 32, 192),
    (196, 64, 384),
    (49, 320, 960),
    (256, 256, 256),
    (512, 512, 512),
    (100, 100, 100),
    (97, 83, 61),
    (1, 1000, 1280),
]


def gemm_model(m: int, n: int, k: int) -> onnx.ModelProto:
    """Y = A B + c with constant B and c."""
    rng = np.random.default_rng(1)
    b = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "b")
    c = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c")
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"])
    graph = helper.make_graph(
        [node],
        "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [b, c],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def pipeline_tile(
    shape: tuple[int, int, int], tune: bool, cache: Path
) -> tuple[rt.Geometry, str]:
    """The geometry and kernel op the pipeline gives the shape's Gemm band."""
    m, n, k = shape
    module = import_model(gemm_model(m, n, k)).module
    budget = 4 * (m * k + m * n) * 2 + (1 << 20)
    LowerToLoopsPass(budget=budget).apply(Context(), module)
    GebpTilePass(target="host", autotune=tune, cache=str(cache)).apply(Context(), module)
    LowerGebpPass().apply(Context(), module)
    ((op, _),) = list(decide.sites(module))
    g, kern = op.attributes[GEOM], kernel_of(op)
    assert isinstance(g, GeomAttr) and isinstance(kern, KernelOp)
    return g.geometry, kern


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


ROUND_SECONDS = 0.002
"""One round of a contender: short, so that on a shared machine many rounds
run without being preempted and the best of them is the kernel's own time."""


def race(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best seconds per call of each contender, measured in alternating rounds."""
    reps = {k: _calls_per_round(f, ROUND_SECONDS) for k, f in contenders.items()}
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for key, f in contenders.items():
            t = time.perf_counter()
            for _ in range(reps[key]):
                f()
            best[key] = min(best[key], (time.perf_counter() - t) / reps[key])
    return best


def bench_f32(shape: tuple[int, int, int], rounds: int, cache: Path) -> tuple[str, ...]:
    m, n, k = shape
    problem = gebp.Problem(m, n, k)
    a, b, bias, _ = autotune.operands(problem, seed=2)
    ref = a.astype(np.float64) @ b + bias
    y_np = np.empty((m, n), np.float32)

    def numpy_call() -> None:
        np.matmul(a, b, out=y_np)
        np.add(y_np, bias, out=y_np)

    contenders: dict[str, Callable[[], object]] = {"numpy": numpy_call}
    tiles: dict[str, tuple[rt.Geometry, KernelOp]] = {
        "before": pipeline_tile(shape, False, cache),
        "after": pipeline_tile(shape, True, cache),
    }
    outs = {}
    for key, (g, kern) in tiles.items():  # the band's own kernel op, printed on its own
        call, outs[key] = autotune.call_of(gebp.build(g, problem, kern=kern), a, b, bias, None)
        contenders[key] = call
    best = race(contenders, rounds)
    for key, y in outs.items():
        err = float(np.abs(y - ref).max()) / max(1.0, float(np.abs(ref).max()))
        if err > 1e-5:
            raise RuntimeError(f"{key} on {shape}: relative error {err:.2e}")
    gf = {key: 2.0 * m * n * k / t / 1e9 for key, t in best.items()}
    return (
        f"{m}x{n}x{k}",
        f"{gf['numpy']:.1f}",
        rt.show(tiles["before"][0]),
        f"{gf['before']:.1f}",
        f"{gf['before'] / gf['numpy']:.2f}",
        rt.show(tiles["after"][0]),
        f"{gf['after']:.1f}",
        f"{gf['after'] / gf['numpy']:.2f}",
    )


def requant(acc: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """saturate(rint(float32(acc) * m)), the network's int8 rule at zero points 0."""
    v = np.rint(acc.astype(np.float32) * mult)
    return np.clip(v, -128, 127).astype(np.int8)


def bench_int8(size: int, rounds: int) -> list[str]:
    target = host_target().int8_file()
    problem = gebp.Problem(size, size, size, "int8")
    a, b, bias, mult = autotune.operands(problem, seed=3)
    assert mult is not None
    want = requant(a.astype(np.int32) @ b.astype(np.int32) + bias, mult)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    y_np = np.empty((size, size), np.float32)
    g = rt.default(target, size, size)
    assert g is not None
    kernel = gebp.build(g, problem, target)
    call, out = autotune.call_of(kernel, a, b, bias, mult)
    best = race({"numpy f32": lambda: np.matmul(af, bf, out=y_np), "network": call}, rounds)
    if not np.array_equal(out, want):
        raise RuntimeError("int8: results differ from the requantized integer product")
    ops = 2.0 * size**3
    lines = [f"int8 x int8 -> int8 (int32 sums, requantized) at {size}^3, {rt.show(g)}, "
             f"{kernel.plan.dot}, bit-exact:"]
    for key, t in best.items():
        lines.append(f"  {key:<10} {ops / t / 1e9:7.1f} GOP/s")
    lines.append(f"  ratio      {best['numpy f32'] / best['network']:7.2f} x numpy f32")
    return lines


def table(rows: list[tuple[str, ...]], head: tuple[str, ...]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)




def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--shapes", default="", help="MxNxK,... (default: all)")
    parser.add_argument("--no-int8", action="store_true")
    args = parser.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = [
            (int(m), int(n), int(k)) for m, n, k in (s.split("x") for s in args.shapes.split(","))
        ]
    t = host_target()
    print(
        f"{host_cpu_name()}; target {t.name}: {t.isa}, "
        f"{t.vector_bytes}-byte x {t.vector_registers} "
        f"vector registers, VNNI {t.vnni}; one thread each; flags "
        f"{' '.join(gebp.compile_flags())}"
    )
    head = ("MxNxK", "numpy GF/s", "before: model", "GF/s", "x np", "after: autotune", "GF/s",
            "x np")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "tune.json"
        rows = [bench_f32(s, args.rounds, cache) for s in shapes]
    print(table(rows, head))
    if not args.no_int8:
        print("\n".join(bench_int8(256, args.rounds)))


if __name__ == "__main__":
    main()
