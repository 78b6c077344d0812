"""`requant`: how the int8 ops of a module requantize, decided once.

`mode=float` (the default) keeps the float32 rule of `kernels.requantize`;
`mode=fixed` makes every int8 op integer-only: its requantizations become a
Q31 multiplier and a shift (`kernels.requantize_fixed`, the convention TFLite
and CMSIS-NN document), Add, Sub, Mul and the average pools take their
integer definitions, and ops that map int8 values through a function of
their dequantized values keep their 256-entry tables, computed at compile
time. The decision is the attribute `nn.requant = "fixed"` on each such op
(and on the module), which the reference, the interpreters and the C printer
read; an int8 op that has no integer-only form is a diagnostic naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn


def _where(op: nn.NNOp) -> str:
    node = nn.model_node_of(op)
    return f"{op.name} ({node})" if node else op.name


def set_requant(module: ModuleOp, mode: str) -> None:
    """Record `mode` on the module and on every quantized nn op (the pass's work)."""
    if mode not in nn.REQUANT_MODES:
        raise PassFailedException(
            f"requant: mode must be one of {', '.join(nn.REQUANT_MODES)}, got '{mode}'"
        )
    ops = [
        op
        for op in module.walk()
        if isinstance(op, nn.NNOp)
        and op.is_quantized()
        and not isinstance(op, nn.QuantizeOp | nn.DequantizeOp)  # the float boundary
    ]
    if mode == "fixed":
        for op in ops:
            problem = op.fixed_problem()
            if problem is not None:
                raise PassFailedException(
                    f"requant=fixed: {_where(op)}: {problem}; integer-only plans need every "
                    "int8 op to requantize in fixed point (use mode=float for this model)"
                )
    for op in ops:
        if mode == "fixed":
            op.attributes[nn.REQUANT_ATTR] = StringAttr("fixed")
        elif nn.REQUANT_ATTR in op.attributes:
            del op.attributes[nn.REQUANT_ATTR]
    module.attributes[nn.REQUANT_ATTR] = StringAttr(mode)


def default_requant(target: str = "") -> str:
    """The mode a target selects when none is given: "fixed" for the
    integer-only targets (`Target.integer_only`: the Cortex-M CPUs), else
    "float". An unknown target name raises PassFailedException listing the known."""
    if not target or target == "host":
        return "float"
    from tigris_ir.rtile import targets as tg

    try:
        t = tg.get_target(target)
    except (KeyError, ValueError) as e:
        raise PassFailedException(f"requant: {e}") from None
    return "fixed" if t.integer_only else "float"


def module_requant(module: ModuleOp) -> str:
    """The module's recorded mode ("float" when no pass recorded one)."""
    a = module.attributes.get(nn.REQUANT_ATTR)
    return a.data if isinstance(a, StringAttr) else "float"


@dataclass(frozen=True)
class RequantPass(ModulePass):
    """Choose how int8 ops requantize: mode=float (float32 multipliers, the default) or
    mode=fixed (integer-only: Q31 multipliers and shifts, no floating point in the int8 body)."""

    name = "requant"

    mode: str = ""
    """"float": float32 multipliers (bit-exact with onnxruntime's MLAS rule);
    "fixed": Q31 multipliers and shifts, no floating point in the int8 body;
    empty: the target's default (`default_requant`)."""
    target: str = ""
    """The target whose default an empty mode takes (a gebp-tile target name:
    cortex-m4, cortex-m7, cortex-m55 select fixed; host and x86 float)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        set_requant(op, self.mode or default_requant(self.target))
