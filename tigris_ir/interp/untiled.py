"""The untiled oracle of a plan: every `nn` op of a function once, on whole
tensors, in the order of its graph view (the graph the planner tiles)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func

from tigris_ir.dialects import nn
from tigris_ir.loops.schedule import tensor_consts
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.reference.executor import run_function


def untiled_reference(
    fn: func.FuncOp, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """The untiled oracle on internal-layout inputs: every `nn` op once, on
    whole tensors, in order (through stages and chains if the function has
    them; If and Loop as the reference runs them)."""
    if any(isinstance(op, nn.ControlFlowOp) for op in fn.walk()):
        return run_function(fn, dict(weights), list(inputs))
    view = build_view(fn)
    graph = view.graph
    consts = tensor_consts(view, weights)
    env: dict[str, np.ndarray] = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        op: nn.NNOp = view.ops[node.name]  # type: ignore[assignment]
        res = op.reference([consts[n] if n in consts else env[n] for n in node.inputs])
        env.update(zip(node.outputs, res))
    return [env[o] for o in graph.outputs]
