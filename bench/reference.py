"""The reference executor against onnxruntime on the full-size zoo.

For every model, float32 and int8: import time, our numpy reference's time and
onnxruntime's (one thread) side by side, and the worst difference: relative for
float32, quantization steps (LSB) for int8, against onnxruntime's execution of
the QDQ graph and, for information, against its fused integer kernels; for
int8 also each quantized op fed onnxruntime's own inputs ("worst op", and how
many elements differ at all).

    python bench/reference.py [--size full|small] [--models a,b]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import _session, compare_with_onnxruntime, per_op_lsb


def _best(f, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--models", default=",".join(zoo.ZOO))
    args = ap.parse_args()
    table = Table(title=f"reference vs onnxruntime ({args.size} size)")
    for col in (
        "model",
        "dtype",
        "import s",
        "ours ms",
        "ort ms",
        "ours/ort",
        "worst",
        "vs fused ORT",
        "worst op",
        "ops off",
    ):
        table.add_column(col, justify="right" if col not in ("model", "dtype") else "left")
    for name in args.models.split(","):
        for int8 in (False, True):
            model = zoo.build(name, size=args.size, int8=int8)
            data = model.SerializeToString()
            t = time.perf_counter()
            imp = import_model(model, origin=name)
            t_import = time.perf_counter() - t
            x = np.random.default_rng(5).standard_normal(zoo.input_shape(model)).astype(np.float32)
            outs = run_reference(imp.module, imp.weights, [x])
            rep = compare_with_onnxruntime(data, {"input": x}, outs, ["output"]).diffs[0]
            t_ours = _best(lambda imp=imp, x=x: run_reference(imp.module, imp.weights, [x]))
            sess = _session(data, "ORT_ENABLE_ALL")
            t_ort = _best(lambda sess=sess, x=x: sess.run(None, {"input": x}))
            unit = (lambda v: f"{v:.0f} LSB") if int8 else (lambda v: f"{v:.1e}")
            op_worst, op_off = "", ""
            if int8:
                ops = per_op_lsb(data, imp, {"input": x})
                op_worst = f"{max(d.worst_lsb for d in ops)} LSB"
                op_off = f"{sum(d.differing for d in ops)}/{sum(d.size for d in ops)}"
            table.add_row(
                name,
                "int8" if int8 else "f32",
                f"{t_import:.3f}",
                f"{t_ours * 1e3:.1f}",
                f"{t_ort * 1e3:.1f}",
                f"{t_ours / t_ort:.1f}x",
                unit(rep.worst),
                unit(rep.worst_fused),
                op_worst,
                op_off,
            )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
