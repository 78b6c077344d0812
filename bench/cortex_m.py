"""Instructions per MAC (or element) on Cortex-M4, M7 and M55 under QEMU, against CMSIS-NN.

Each row is an int8 plan (budget `--budget`, the target's requantization:
integer-only fixed point on the Cortex-M CPUs, or `--requant float`) whose
kernels `gebp-tile` / `lower-gebp` chose for the CPU, printed as C,
cross-compiled with arm-none-eabi-gcc at the target's flags and run once
under `qemu-system-arm -icount shift=0` on the CPU's board
(`tigris_ir.backend.c.cortex.run_on_target`): its executed instructions
(SysTick; instructions, not cycles), checked bit-exact against the untiled
reference. MACs are counted from the ONNX graph (Conv, Gemm, MatMul).

Rows:

* the five layer shapes of the Cortex-M issue's table, each a model of that
  one layer. With `--boundary int8` (the default) the plan takes and gives
  the quantized tensors (NHWC int8), as CMSIS-NN's kernels do, so the count
  is the layer's; with `--boundary float` it includes the float32 NCHW
  boundary (the input's transpose and quantization, the output's
  dequantization), which CMSIS-NN's figures do not;
* int8 max and average pools, a global average pool and an Add, each a
  model of that one layer, counted in instructions per output element
  (they multiply nothing; CMSIS-NN's documentation gives no per-element
  figure for them, so their anchor column is empty);
* whole networks: MobileNetV2 0.35 at 144x144, DS-CNN, MobileNetV1 0.25 at
  96x96 (the zoo's full sizes), with flash (text + rodata + data) and RAM
  (data + bss + stack) of the image.

The anchor column holds CMSIS-NN's instructions per MAC on the same layer
shapes (M4 / M7 / M55), as the issue states them; the networks' anchor is the
issue's target (MobileNetV2 0.35/144: 2.5 on M7, 0.8 on M55).

    python bench/cortex_m.py [--cpus cortex-m4,cortex-m7,cortex-m55]
                             [--rows pw36,dw36,stem,pw9,fc,maxpool,avgpool,gap,add,
                                     mobilenet_v2_035,ds_cnn,mobilenet_v1_025]
                             [--budget 256K] [--requant fixed|float]
                             [--boundary int8|float]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from rich.console import Console
from rich.table import Table
from xdsl.context import Context

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.backend.c import cortex  # noqa: E402
from tigris_ir.backend.c.network import print_network  # noqa: E402
from tigris_ir.frontend.onnx_import import import_model  # noqa: E402
from tigris_ir.interp.untiled import untiled_reference  # noqa: E402
from tigris_ir.passes.boundary import set_int8_boundary  # noqa: E402
from tigris_ir.passes.lower_gebp import tile_and_lower  # noqa: E402
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass, untiled_func  # noqa: E402
from tigris_ir.passes.plan_arena import PlanArenaPass  # noqa: E402
from tigris_ir.passes.requant import default_requant, set_requant  # noqa: E402
from tigris_ir.plan.ir import main_func  # noqa: E402
from tigris_ir.plan.memory import parse_budget  # noqa: E402
from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal  # noqa: E402
from tigris_ir.rtile.targets import get_target  # noqa: E402

CPUS = ("cortex-m4", "cortex-m7", "cortex-m55")


def _layer(build: Callable[[zoo._Graph], str], shape: tuple[int, ...], name: str):
    def make() -> onnx.ModelProto:
        g = zoo._Graph(0)
        out = build(g)
        return zoo.quantize(g.model(name, shape, out), seed=0)

    return make


def _qdq(
    shape: tuple[int, ...],
    node: Callable[[str, list[onnx.TensorProto]], onnx.NodeProto],
    scales: tuple[float, float] = (0.05, 0.05),
    name: str = "layer",
    two: bool = False,
    same: bool = False,
) -> Callable[[], onnx.ModelProto]:
    """A one-layer int8 model in QDQ form written directly (onnxruntime's
    quantizer leaves a pool on the float input unquantized): the input
    quantized by scale scales[0] (zero point 3), the layer `node` (input
    name, initializers it may add), the output quantized by scales[1] (zero
    point -5, or 3 with `same`: a max pool keeps its input's quantization, as
    onnxruntime's quantizer makes it); with `two`, a second input "input2" quantized by scale 0.08
    (zero point 1), read by the layer as "bd"."""
    from onnx import TensorProto, helper, numpy_helper

    def make() -> onnx.ModelProto:
        inits = [
            numpy_helper.from_array(np.array(scales[0], np.float32), "sx"),
            numpy_helper.from_array(np.array(3, np.int8), "zx"),
            numpy_helper.from_array(np.array(scales[1], np.float32), "sy"),
            numpy_helper.from_array(np.array(3 if same else -5, np.int8), "zy"),
            numpy_helper.from_array(np.array(0.08, np.float32), "sb"),
            numpy_helper.from_array(np.array(1, np.int8), "zb"),
        ]
        inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)]
        if two:
            inputs.append(helper.make_tensor_value_info("input2", TensorProto.FLOAT, shape))
        nodes = [
            helper.make_node("QuantizeLinear", ["input", "sx", "zx"], ["xq"]),
            helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
            *(
                [
                    helper.make_node("QuantizeLinear", ["input2", "sb", "zb"], ["bq"]),
                    helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["bd"]),
                ]
                if two
                else []
            ),
            node("xd", inits),
            helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["yq"]),
            helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["output"]),
        ]
        graph = helper.make_graph(
            nodes, name, inputs,
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        return onnx.shape_inference.infer_shapes(model, strict_mode=True)

    return make


def _pool(op: str, k: int, s: int, pad: int, **attrs: Any):
    from onnx import helper

    def node(x: str, inits: list[onnx.TensorProto]) -> onnx.NodeProto:
        return helper.make_node(op, [x], ["yf"], kernel_shape=[k, k], strides=[s, s],
                                pads=[pad] * 4, **attrs)

    return node


def _gap(x: str, inits: list[onnx.TensorProto]) -> onnx.NodeProto:
    from onnx import helper

    return helper.make_node("GlobalAveragePool", [x], ["yf"])


def _add(x: str, inits: list[onnx.TensorProto]) -> onnx.NodeProto:
    """An Add of the input and a second input of its shape (scale 0.08, zero
    point 1): the layer alone, where a second branch computed from the first
    input would add its own instructions."""
    from onnx import helper

    return helper.make_node("Add", [x, "bd"], ["yf"])


def _fc(g: zoo._Graph) -> str:
    w = g.const("fc_w", g.he((1000, 1280), 1280))
    b = g.const("fc_b", g.small(1000))
    return g.node("Gemm", ["input", w, b], "gemm", transB=1)


@dataclass(frozen=True)
class Row:
    label: str
    make: Callable[[], onnx.ModelProto]
    anchor: tuple[float | None, float | None, float | None]
    """Instructions per MAC to compare with, per CPU of CPUS."""
    per: str = "MAC"
    """What the row's figure counts instructions per: "MAC" (the graph's
    multiply-accumulates) or "elem" (the output's elements: the pools and
    Add, which multiply nothing; CMSIS-NN states no such figure, so no
    anchor)."""


ROWS: dict[str, Row] = {
    "pw36": Row(
        "pointwise 36x36x16 -> 48",
        _layer(lambda g: g.conv("input", 16, 48, (1, 1)), (1, 16, 36, 36), "pw36"),
        (3.96, 3.91, 1.06),
    ),
    "dw36": Row(
        "depthwise 3x3 s1, 36x36x48",
        _layer(lambda g: g.conv("input", 48, 48, (3, 3), group=48), (1, 48, 36, 36), "dw36"),
        (8.82, 8.67, 2.43),
    ),
    "stem": Row(
        "stem 3x3 s2, 144x144x3 -> 16",
        _layer(lambda g: g.conv("input", 3, 16, (3, 3), stride=2), (1, 3, 144, 144), "stem"),
        (4.82, 4.86, 1.36),
    ),
    "pw9": Row(
        "pointwise 9x9x112 -> 336",
        _layer(lambda g: g.conv("input", 112, 336, (1, 1)), (1, 112, 9, 9), "pw9"),
        (1.83, 1.80, 0.30),
    ),
    "fc": Row("fully connected 1280 -> 1000", _layer(_fc, (1, 1280), "fc"), (1.92, 1.92, 0.48)),
    "maxpool": Row(
        "max pool 3x3 s2 p1, 36x36x48",
        _qdq((1, 48, 36, 36), _pool("MaxPool", 3, 2, 1), (0.05, 0.05), "maxpool", same=True),
        (None, None, None),
        "elem",
    ),
    "avgpool": Row(
        "average pool 3x3 s1 p1, 36x36x48",
        _qdq((1, 48, 36, 36), _pool("AveragePool", 3, 1, 1), (0.05, 0.03), "avgpool"),
        (None, None, None),
        "elem",
    ),
    "gap": Row(
        "global average pool 9x9x336",
        _qdq((1, 336, 9, 9), _gap, (0.05, 0.01), "gap"),
        (None, None, None),
        "elem",
    ),
    "add": Row(
        "Add 36x36x48 + 36x36x48",
        _qdq((1, 48, 36, 36), _add, (0.05, 0.1), "add", two=True),
        (None, None, None),
        "elem",
    ),
    "mobilenet_v2_035": Row(
        "MobileNetV2 0.35/144",
        lambda: zoo.build("mobilenet_v2_035", size="full", int8=True),
        (None, 2.5, 0.8),
    ),
    "ds_cnn": Row(
        "DS-CNN", lambda: zoo.build("ds_cnn", size="full", int8=True), (None, None, None)
    ),
    "mobilenet_v1_025": Row(
        "MobileNetV1 0.25/96",
        lambda: zoo.build("mobilenet_v1_025", size="full", int8=True),
        (None, None, None),
    ),
}


def elements(model: onnx.ModelProto) -> int:
    """Elements of the graph's (first) output."""
    inferred = onnx.shape_inference.infer_shapes(model)
    return int(np.prod([d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]))


def macs(model: onnx.ModelProto) -> int:
    """Multiply-accumulates of the graph's Conv, Gemm and MatMul nodes."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    shapes = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in (*g.value_info, *g.output, *g.input)
    }
    inits = {t.name: list(t.dims) for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}

    def weight(name: str) -> list[int]:
        while name not in inits:  # through DequantizeLinear
            name = producer[name].input[0]
        return inits[name]

    total = 0
    for n in g.node:
        if n.op_type == "Conv":
            total += int(np.prod(shapes[n.output[0]][1:])) * int(np.prod(weight(n.input[1])[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            total += int(np.prod(weight(n.input[1])))
    return total


@dataclass(frozen=True)
class Measure:
    instructions: float
    flash: int
    ram: int
    exact: bool


def measure(
    model: onnx.ModelProto, cpu: str, budget: int, requant: str, boundary: str = "int8"
) -> Measure:
    imported = import_model(model)
    module = imported.module
    if boundary == "int8":
        set_int8_boundary(module)
    set_requant(module, requant or default_requant(cpu))
    LowerToLoopsPass(budget=budget).apply(Context(), module)
    tile_and_lower(module, target=cpu)
    PlanArenaPass(budget=budget).apply(Context(), module)
    source = print_network(module, weights=imported.weights, verify=False)
    ins, outs = module_layouts(main_func(module))
    rng = np.random.default_rng(0)
    x = [
        rng.integers(np.iinfo(p.dtype).min, np.iinfo(p.dtype).max + 1, p.shape).astype(p.dtype)
        if np.dtype(p.dtype).kind in "iu"
        else rng.standard_normal(p.shape).astype(p.dtype)
        for p in source.inputs
    ]
    run = cortex.run_on_target(source, get_target(cpu), x)
    ref_fn = untiled_func(module)
    assert ref_fn is not None
    ref = untiled_reference(ref_fn, imported.weights, [to_internal(a, s) for a, s in zip(x, ins)])
    exact = all(
        y.tobytes() == to_boundary(r, lay).tobytes() for y, r, lay in zip(run.outputs, ref, outs)
    )
    return Measure(run.figures["instructions"], run.sizes.flash, run.sizes.ram, exact)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cpus", default=",".join(CPUS))
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--budget", default="256K")
    ap.add_argument("--requant", default="", choices=["", "fixed", "float"])
    ap.add_argument("--boundary", default="int8", choices=["int8", "float"])
    args = ap.parse_args(argv)
    missing = cortex.tools_available()
    if missing:
        print(f"bench/cortex_m.py: {missing}", file=sys.stderr)
        return 1
    cpus = [c for c in args.cpus.split(",") if c]
    budget = parse_budget(args.budget)
    table = Table(
        title=f"int8 instructions per MAC under QEMU -icount (budget {args.budget}, "
        f"requantization: {args.requant or 'the target default (fixed point)'}, "
        f"{args.boundary} boundary)"
    )
    table.add_column("row")
    table.add_column("MACs (elements)", justify="right")
    for cpu in cpus:
        table.add_column(f"{cpu}", justify="right")
        table.add_column("anchor", justify="right")
        table.add_column("ratio", justify="right")
        table.add_column("flash / RAM KiB", justify="right")
    console = Console(width=220)
    for key in (r for r in args.rows.split(",") if r):
        row = ROWS[key]
        model = row.make()
        n = macs(model) if row.per == "MAC" else elements(model)
        cells = [row.label, f"{n / 1e6:.2f} M" + ("" if row.per == "MAC" else " elem")]
        for cpu in cpus:
            m = measure(model, cpu, budget, args.requant, args.boundary)
            per = m.instructions / n
            anchor = row.anchor[CPUS.index(cpu)] if cpu in CPUS else None
            cells += [
                f"{per:.2f}" + ("" if m.exact else " (NOT bit-exact)"),
                f"{anchor:.2f}" if anchor is not None else "-",
                f"{per / anchor:.2f}" if anchor is not None else "-",
                f"{m.flash / 1024:.0f} / {m.ram / 1024:.0f}",
            ]
        table.add_row(*cells)
        console.print(f"{row.label}: " + "  ".join(cells[2:]))
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
