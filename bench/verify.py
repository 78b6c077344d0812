"""Plans of the full-size zoo, run: do they compute and measure as planned?

For every model, float32 and int8, at each budget where the plan fits: the
plan is lowered to loop IR (`lower-to-loops`), its arena placed and verified
(`plan-arena`) and run (`tigris_ir.interp.loop_ir.run_loop_module`). The table shows whether
the output equals the untiled reference (int8 bit-exact, float32 to a
relative 1e-5), the planned against the measured fast peak, slow peak, slow
reads and writes, and the tiles run. `--backend c` prints the loop IR as C,
builds it with its statistics on (`-DTIGRIS_STATS`) and runs that: output and
figures are then the C program's.

    python bench/verify.py [--models a,b] [--budgets 32K,64K] [--backend c]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from xdsl.context import Context

from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.backend.c.build import run_c
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import format_bytes, parse_budget
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import plan
from tigris_ir.reference.executor import module_layouts, run_function, to_internal


def equal(ref: list[np.ndarray], got: list[np.ndarray]) -> tuple[bool, str]:
    """The oracle's criterion, and the worst difference."""
    ok, worst = True, []
    for r, y in zip(ref, got, strict=True):
        if r.dtype == np.float32:
            scale = max(float(np.max(np.abs(r))), 1e-30)
            e = float(np.max(np.abs(y.astype(np.float64) - r))) / scale
            ok &= e <= 1e-5
            worst.append(f"{e:.1e}")
        else:
            e = int(np.max(np.abs(y.astype(np.int64) - r.astype(np.int64))))
            ok &= e == 0
            worst.append(f"{e} LSB")
    return ok, ", ".join(worst)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--models", default=",".join(zoo.ZOO))
    ap.add_argument("--budgets", default="32K,64K,128K,256K,512K")
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--backend", choices=["interp", "c"], default="interp")
    args = ap.parse_args()
    budgets = [parse_budget(b) for b in args.budgets.split(",")]
    how = "generated C" if args.backend == "c" else "loop IR"
    table = Table(title=f"plans run as planned ({args.size} zoo, {how}), bytes")
    cols = ["model", "dtype", "budget", "equal", "worst"]
    for fig in ("fast peak", "slow peak", "slow reads", "slow writes"):
        cols += [f"{fig} planned", "measured"]
    for col in (*cols, "tiles", "run s"):
        table.add_column(col, justify="left" if col in ("model", "dtype", "equal") else "right")
    held = 0
    total = 0
    for name in args.models.split(","):
        for int8 in (False, True):
            model = zoo.build(name, size=args.size, int8=int8)
            imp = import_model(model, origin=name)
            fn = main_func(imp.module)
            view = build_view(fn)
            x = (
                np.random.default_rng(11)
                .standard_normal(tuple(zoo.input_shape(model)))
                .astype(np.float32)
            )
            args_in = [to_internal(x, module_layouts(fn)[0][0])]
            ref = run_function(fn, imp.weights, args_in)
            dtype = "int8" if int8 else "f32"
            for budget in budgets:
                p = plan(view.graph, budget)
                row = [name, dtype, format_bytes(budget)]
                if not p.fits:
                    table.add_row(
                        *row,
                        "-",
                        f"does not fit: needs {format_bytes(p.failed_min_budget or 0)}",
                        *[""] * 6,
                    )
                    continue
                total += 1
                try:
                    m = import_model(model, origin=name).module
                    LowerToLoopsPass(budget=budget).apply(Context(), m)
                    PlanArenaPass().apply(Context(), m)
                    t = time.perf_counter()
                    res = run_loop_module(m, imp.weights, args_in)
                    if args.backend == "c":
                        outs, stats = run_c(m, imp.weights, [x], variant="stats")
                        assert stats is not None
                        layouts = module_layouts(fn)[1]
                        res = replace(
                            res,
                            outputs=[to_internal(y, lay) for y, lay in zip(outs, layouts)],
                            stats=stats,
                        )
                    dt = time.perf_counter() - t
                except Exception as e:  # a row, not a crash
                    table.add_row(*row, "ERROR", f"{type(e).__name__}: {str(e)[:60]}", *[""] * 10)
                    continue
                ok, worst = equal(ref, res.outputs)
                s = res.stats
                same = (s.fast_peak, s.slow_peak, s.slow_reads, s.slow_writes) == (
                    p.peak,
                    p.slow_peak,
                    p.slow_reads,
                    p.slow_writes,
                ) and s.fast_high <= p.peak
                held += ok and same
                table.add_row(
                    *row,
                    "yes" if ok and same else ("output" if not ok else "figures"),
                    worst,
                    str(p.peak),
                    str(s.fast_peak),
                    str(p.slow_peak),
                    str(s.slow_peak),
                    str(p.slow_reads),
                    str(s.slow_reads),
                    str(p.slow_writes),
                    str(s.slow_writes),
                    str(s.tiles),
                    f"{dt:.2f}",
                )
    console = Console(width=200)
    console.print(table)
    console.print(f"{held} of {total} plans that fit computed and measured exactly as planned")


if __name__ == "__main__":
    main()
