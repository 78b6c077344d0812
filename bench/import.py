"""Import time of the nine light models of the onnx wheel, beside onnxruntime.

Per model (`onnx/backend/test/data/light/`, opset 9, weights written as
ConstantOfShape): the nodes before and after the import-time simplification,
what it folded, our import seconds (simplification and nn graph; the median of
`--repeat` runs) and onnxruntime's session creation seconds on the same bytes
(single thread, basic optimisation: it also folds constants), with the ratio.
A model the importer refuses prints its diagnostic in place of the figures.
Target: DenseNet121 and ResNet50 import in at most 2 s.

    python bench/import.py [--repeat N] [MODEL ...]

Measured on the host CPU, which the first line names (the import is Python
and numpy, no vector code of ours); both columns slow down alike under load,
the ratio less.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import onnx

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.rtile.targets import host_cpu_name

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)


def _ort_seconds(data: bytes) -> float | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    t = time.perf_counter()
    ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    return time.perf_counter() - t




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"host: {platform.machine()} {host_cpu_name()}".rstrip())
    head = (
        f"{'model':<14} {'nodes':>6} {'after':>6} {'folded':>7} "
        f"{'import s':>9} {'ort s':>8} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    for name in args.models:
        path = LIGHT / f"light_{name}.onnx"
        data = path.read_bytes()
        times: list[float] = []
        imp = None
        try:
            for _ in range(max(1, args.repeat)):
                model = onnx.load_model_from_string(data)
                t = time.perf_counter()
                imp = import_model(model, origin=path.name)
                times.append(time.perf_counter() - t)
        except ImportDiagnostic as e:
            print(f"{name:<14} refused: {e.message[:70]}")
            continue
        assert imp is not None and imp.simplified is not None
        s = imp.simplified
        ours = statistics.median(times)
        ort_s = _ort_seconds(data)
        ratio = f"{ours / ort_s:6.2f}" if ort_s else "     -"
        ort_txt = f"{ort_s:8.3f}" if ort_s is not None else "       -"
        print(
            f"{name:<14} {s.nodes_before:>6} {len(s.model.graph.node):>6} "
            f"{sum(s.folded.values()):>7} {ours:>9.3f} {ort_txt} {ratio}"
        )
    print("ratio: our import seconds / onnxruntime's session creation seconds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
