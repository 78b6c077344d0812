"""The untiled numpy reference: runs an `nn` module op by op.

This is the oracle of the compiler: tiled plans, the loop-level interpreter and
the printed C are all compared against it, and it is itself compared against
onnxruntime. Inputs and outputs cross the boundary in the model's own layout
(NCHW); the function records which arguments the importer moved to
channels-last (`nn.input_layouts`, `nn.output_layouts`).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import MutableMapping, Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Region, SSAValue

from tigris_ir.dialects import nn, tile


class ReferenceError_(Exception):
    """A module that cannot be run, or inputs that do not fit it."""


def load_weights(module: ModuleOp, base: Path | None = None) -> dict[str, np.ndarray]:
    """The weight table a module references through its `nn.weights` attribute."""
    ref = module.attributes.get("nn.weights")
    if not isinstance(ref, StringAttr):
        needs = any(isinstance(op, nn.WeightOp) for op in module.walk())
        if needs:
            raise ReferenceError_(
                "the module uses nn.weight but has no nn.weights attribute naming the "
                "model or .npz file that holds them"
            )
        return {}
    path = Path(ref.data)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.exists():
        raise ReferenceError_(f"weights file '{path}' (from nn.weights) does not exist")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    if path.suffix == ".onnx":
        # onnx (about a second to load) only when the weights are in a model
        from tigris_ir.frontend.onnx_import import import_file

        return import_file(path).weights
    raise ReferenceError_(f"weights file '{path}' must be .onnx or .npz")


def module_io(
    module: ModuleOp,
) -> tuple[func.FuncOp, list[str], list[str], list[str], list[str]]:
    """The entry function and its input/output names and boundary layouts."""
    fns = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if not fns:
        raise ValueError("the module has no func.func to run")
    fn = next((f for f in fns if f.sym_name.data == "main"), fns[0])
    n_in = len(fn.function_type.inputs.data)
    n_out = len(fn.function_type.outputs.data)
    in_layouts, out_layouts = module_layouts(fn)
    return (
        fn,
        _strings(fn, "nn.input_names", [f"arg{i}" for i in range(n_in)]),
        in_layouts,
        _strings(fn, "nn.output_names", [f"arg{i}" for i in range(n_out)]),
        out_layouts,
    )


def _strings(fn: func.FuncOp, key: str, default: list[str]) -> list[str]:
    """The strings of `fn`'s array attribute `key`, or `default` without one."""
    a = fn.attributes.get(key)
    if isinstance(a, ArrayAttr):
        return [s.data for s in a.data if isinstance(s, StringAttr)]
    return default


def save_weights(weights: dict[str, np.ndarray], path: Path) -> None:
    np.savez(path, **weights)  # type: ignore[arg-type]


def to_internal(x: np.ndarray, layout: str) -> np.ndarray:
    """A boundary array in the function's layout: NCHW / NCW channels-last,
    a scalar ("scalar") as one element of shape 1."""
    if layout in ("nchw", "ncw"):
        return np.ascontiguousarray(np.moveaxis(x, 1, -1))
    if layout == "scalar":
        return np.asarray(x).reshape(-1)
    return x


def to_boundary(x: np.ndarray, layout: str) -> np.ndarray:
    """The inverse of `to_internal`."""
    if layout in ("nchw", "ncw"):
        return np.ascontiguousarray(np.moveaxis(x, -1, 1))
    if layout == "scalar":
        return np.asarray(x).reshape(())
    return x


def run_function(
    fn: func.FuncOp, weights: dict[str, np.ndarray], args: list[np.ndarray]
) -> list[np.ndarray]:
    """Run a function on internal-layout arrays; returns internal-layout arrays."""
    env: dict[SSAValue, np.ndarray] = {}
    block = fn.body.block
    for a, x in zip(block.args, args, strict=True):
        env[a] = x
    outs = run_block(block, env, weights)
    if outs is None:
        raise ReferenceError_("the function has no func.return")
    return outs


def run_block(
    block: Block, env: MutableMapping[SSAValue, np.ndarray], weights: dict[str, np.ndarray]
) -> list[np.ndarray] | None:
    """Run a block's ops in order; returns what its terminator hands out.

    `env` holds the block's arguments and every value defined above it (If and
    Loop bodies read outer values). Stages and chains of the tiling passes run
    their ops in place, as the untiled graph would.
    """
    for op in block.ops:
        if isinstance(op, nn.WeightOp):
            env[op.result] = _weight(op, weights)
        elif isinstance(op, nn.NNOp):
            outs = op.reference([env[v] for v in op.operands])
            for r, o in zip(op.results, outs, strict=True):
                env[r] = o
        elif isinstance(op, nn.ControlFlowOp):
            outs = op.reference(
                [env[v] for v in op.operands],
                lambda region, args, env=env: _run_region(region, args, env, weights),
            )
            for r, o in zip(op.results, outs, strict=True):
                env[r] = o
        elif isinstance(op, tile.StageOp | tile.ChainOp):
            outs = run_block(op.body.block, env, weights)
            assert outs is not None
            for r, o in zip(op.results, outs, strict=True):
                env[r] = o
        elif isinstance(op, func.ReturnOp | nn.YieldOp | tile.YieldOp):
            return [env[v] for v in op.operands]
        else:
            raise ReferenceError_(f"the reference cannot run '{op.name}'")
    return None


def _run_region(
    region: Region,
    args: Sequence[np.ndarray],
    outer: MutableMapping[SSAValue, np.ndarray],
    weights: dict[str, np.ndarray],
) -> list[np.ndarray]:
    """One run of an If or Loop body in a scope of its own over `outer`."""
    block = region.block
    env: ChainMap[SSAValue, np.ndarray] = ChainMap(dict(zip(block.args, args, strict=True)), outer)
    outs = run_block(block, env, weights)
    if outs is None:
        owner = region.parent_op()
        raise ReferenceError_(f"a body of '{owner.name if owner else '?'}' has no nn.yield")
    return outs


def _weight(op: nn.WeightOp, weights: dict[str, np.ndarray]) -> np.ndarray:
    name = op.ref.data
    if name not in weights:
        raise ReferenceError_(f"weight '{name}' is not in the weight table")
    w = weights[name]
    want_shape, want_dt = nn.shape_of(op.result), nn.value_dtype(op.result)
    if tuple(w.shape) != want_shape or w.dtype != want_dt:
        raise ReferenceError_(
            f"weight '{name}' is {w.dtype}{list(w.shape)} but the IR says "
            f"{want_dt}{list(want_shape)}"
        )
    return w


def check_inputs(fn: func.FuncOp, names: list[str], inputs: list[np.ndarray]) -> None:
    types = fn.function_type.inputs.data
    if len(inputs) != len(types):
        raise ReferenceError_(f"the model takes {len(types)} input(s), got {len(inputs)}")
    for name, t, x, arg in zip(names, types, inputs, fn.body.block.args):
        want = nn.shape_of(arg)
        layouts = module_layouts(fn)[0]
        lay = layouts[names.index(name)]
        boundary = (
            tuple(want[i] for i in (0, len(want) - 1, *range(1, len(want) - 1)))
            if lay in ("nchw", "ncw")
            else ()
            if lay == "scalar"
            else want
        )
        if tuple(x.shape) != boundary or x.dtype != nn.dtype_of(arg):
            raise ReferenceError_(
                f"input '{name}' must be {nn.dtype_of(arg)} of shape "
                f"{'x'.join(map(str, boundary))}, got {x.dtype} of shape "
                f"{'x'.join(map(str, x.shape))}"
            )
        del t


def module_layouts(fn: func.FuncOp) -> tuple[list[str], list[str]]:
    """`fn`'s input and output boundary layouts ("plain" where none is given)."""
    return (
        _strings(fn, "nn.input_layouts", ["plain"] * len(fn.function_type.inputs.data)),
        _strings(fn, "nn.output_layouts", ["plain"] * len(fn.function_type.outputs.data)),
    )


def run_reference(
    module: ModuleOp, weights: dict[str, np.ndarray], inputs: list[np.ndarray]
) -> list[np.ndarray]:
    """Run a module on inputs in the model's own layout; outputs likewise."""
    fn, in_names, in_layouts, _, out_layouts = module_io(module)
    check_inputs(fn, in_names, inputs)
    args = [to_internal(x, lay) for x, lay in zip(inputs, in_layouts)]
    outs = run_function(fn, weights, args)
    return [to_boundary(o, lay) for o, lay in zip(outs, out_layouts)]
