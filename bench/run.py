"""The loop level's speed: a MobileNetV2-224 plan run against numpy and onnxruntime.

For float32 and int8 at 256K: planning + lowering + arena placement, the
loop-IR run (`tigris_ir.interp.loop_ir.run_loop_module`, the interpreter `tigris-run` uses),
the untiled numpy reference (`reference.run_function`) and onnxruntime on
one thread; best of `--repeat` runs, ratios against the reference. Also the
`tigris-run model.onnx -m 256K` command line end to end (import included).
The target: the plan's run within 3x the untiled reference, under 10 s.

    python bench/run.py [--model mobilenet_v2] [--budget 256K] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from xdsl.context import Context

from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import parse_budget
from tigris_ir.reference.executor import module_layouts, run_function, to_internal
from tigris_ir.reference.oracle import _session  # pyright: ignore[reportPrivateUsage]


def best(f, repeat: int) -> float:
    """The least CPU time of `repeat` calls (one thread, so CPU time is time)."""
    t_best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        f()
        t_best = min(t_best, time.process_time() - t)
    return t_best


ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def main() -> None:
    if any(os.environ.get(k) != v for k, v in ONE_THREAD.items()):
        # one BLAS thread, like onnxruntime's session; CPU time then is time, and
        # other processes on the machine do not move the ratios
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ONE_THREAD})
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--model", default="mobilenet_v2")
    ap.add_argument("--budget", default="256K")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    budget = parse_budget(args.budget)
    table = Table(
        title=f"{args.model} (full) at {args.budget}: CPU seconds on one thread, best of "
        f"{args.repeat} (the CLI: wall seconds, import included)"
    )
    for col in (
        "dtype",
        "plan+lower+arena",
        "plan run",
        "reference",
        "onnxruntime 1T",
        "run / reference",
        "run / ort",
        "tigris-run CLI",
        "tiles",
        "outputs",
    ):
        table.add_column(col, justify="left" if col == "dtype" else "right")
    tigris_run = Path(sys.executable).parent / "tigris-run"
    for int8 in (False, True):
        model = zoo.build(args.model, size="full", int8=int8)
        data = model.SerializeToString()
        imp = import_model(model, origin=args.model)
        fn = main_func(imp.module)
        x = np.random.default_rng(3).standard_normal(tuple(zoo.input_shape(model)))
        x = x.astype(np.float32)
        internal = [to_internal(x, module_layouts(fn)[0][0])]
        module = import_model(model, origin=args.model).module
        t = time.perf_counter()
        LowerToLoopsPass(budget=budget).apply(Context(), module)
        PlanArenaPass().apply(Context(), module)
        t_lower = time.perf_counter() - t
        res = run_loop_module(module, imp.weights, internal)
        ref = run_function(fn, imp.weights, internal)
        same = all(
            np.array_equal(a, b)
            if a.dtype != np.float32
            else bool(np.max(np.abs(a - b)) <= 1e-5 * max(float(np.max(np.abs(b))), 1e-30))
            for a, b in zip(res.outputs, ref, strict=True)
        )
        w = imp.weights
        sess = _session(data, "ORT_ENABLE_ALL")
        # interleaved, best of each: the three see the same machine load
        t_run = t_ref = t_ort = float("inf")
        for _ in range(args.repeat):
            t_run = min(t_run, best(lambda m=module, w=w, i=internal: run_loop_module(m, w, i), 1))
            t_ref = min(t_ref, best(lambda f=fn, w=w, i=internal: run_function(f, w, i), 1))
            t_ort = min(t_ort, best(lambda s=sess, x=x: s.run(None, {"input": x}), 1))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.onnx")
            with open(path, "wb") as f:
                f.write(data)
            np.save(os.path.join(tmp, "x.npy"), x)
            t = time.perf_counter()
            subprocess.run(
                [
                    str(tigris_run),
                    path,
                    "-m",
                    args.budget,
                    "--input",
                    os.path.join(tmp, "x.npy"),
                    "-q",
                ],
                check=True,
            )
            t_cli = time.perf_counter() - t
        table.add_row(
            "int8" if int8 else "f32",
            f"{t_lower:.2f}",
            f"{t_run:.2f}",
            f"{t_ref:.2f}",
            f"{t_ort:.3f}",
            f"{t_run / t_ref:.2f}x",
            f"{t_run / t_ort:.0f}x",
            f"{t_cli:.2f}",
            str(res.stats.tiles),
            "equal" if same else "DIFFER",
        )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
