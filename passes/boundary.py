"""`boundary`: the element type and layout a plan takes and gives.

`kind=float` (the default) keeps the model's boundary: float32, NCHW for
feature maps, the importer's transpose and QuantizeLinear at the input and
DequantizeLinear and transpose at the output. `kind=int8` absorbs them: each
input must be read by exactly one per-tensor QuantizeLinear (`nn.quantize`),
which is removed, so the function takes the quantized tensor (int8 or uint8
as the model's zero point says, with its scale and zero point in its type)
channels-last (`nhwc` / `nwc`, the camera or microphone buffer as it is);
each output must be a per-tensor DequantizeLinear (`nn.dequantize`), which
is dropped, so the function gives the int8 tensor, channels-last, its scale
and zero point in its type. No float and no transpose are left at the
boundary. An input or output that breaks the rule is a diagnostic naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FunctionType, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.plan.ir import main_func

BOUNDARY_ATTR = "nn.boundary"
"""On the entry function: "int8" once the boundary pass absorbed the QDQ pair."""

BOUNDARY_KINDS = ("float", "int8")

_CHANNELS_LAST = {"nchw": "nhwc", "ncw": "nwc"}
"""A feature map's boundary layout once the transpose is absorbed."""


def _names(fn: func.FuncOp, key: str, n: int, stem: str) -> list[str]:
    a = fn.attributes.get(key)
    if isinstance(a, ArrayAttr) and len(a.data) == n:
        return [x.data if isinstance(x, StringAttr) else f"{stem}{i}" for i, x in enumerate(a.data)]
    return [f"{stem}{i}" for i in range(n)]


def _layouts(fn: func.FuncOp, key: str, n: int) -> list[str]:
    a = fn.attributes.get(key)
    if isinstance(a, ArrayAttr) and len(a.data) == n:
        return [x.data if isinstance(x, StringAttr) else "plain" for x in a.data]
    return ["plain"] * n


def _users(v) -> list[str]:  # noqa: ANN001
    return sorted({u.operation.name for u in v.uses})


def is_int8_boundary(module: ModuleOp) -> bool:
    """Whether the entry function's boundary is the quantized tensors."""
    a = main_func(module).attributes.get(BOUNDARY_ATTR)
    return isinstance(a, StringAttr) and a.data == "int8"


def set_int8_boundary(module: ModuleOp) -> None:
    """Absorb each input's QuantizeLinear and each output's DequantizeLinear."""
    fn = main_func(module)
    if any(op.name.startswith(("tile.", "loop.")) for op in fn.walk()):
        raise PassFailedException(
            "boundary: run the boundary pass on the imported graph, before the tiling passes"
        )
    block = fn.body.block
    n_in, n_out = len(block.args), len(fn.function_type.outputs.data)
    in_names = _names(fn, "nn.input_names", n_in, "arg")
    out_names = _names(fn, "nn.output_names", n_out, "out")
    in_lay = _layouts(fn, "nn.input_layouts", n_in)
    out_lay = _layouts(fn, "nn.output_layouts", n_out)
    rule_in = "an int8 boundary needs every input read by exactly one per-tensor QuantizeLinear"
    quants: list[nn.QuantizeOp] = []
    for name, arg in zip(in_names, block.args):
        users = [u.operation for u in arg.uses]
        if len(users) != 1 or not isinstance(users[0], nn.QuantizeOp):
            what = ", ".join(_users(arg)) or "nothing"
            kind = "a float32 input" if nn.dtype_of(arg) == "float32" else f"a {arg.type} input"
            raise PassFailedException(
                f"boundary=int8: input '{name}' ({kind}) is read by {what}; {rule_in}"
            )
        quants.append(users[0])
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise PassFailedException("boundary: the entry function does not end in func.return")
    rule_out = "an int8 boundary needs every output to be a per-tensor DequantizeLinear"
    deqs: list[nn.DequantizeOp] = []
    for name, v in zip(out_names, ret.operands):
        owner = v.owner
        if not isinstance(owner, nn.DequantizeOp):
            what = owner.name if isinstance(owner, Operation) else "an input of the function"
            raise PassFailedException(
                f"boundary=int8: output '{name}' ({v.type}) is produced by {what}; {rule_out}"
            )
        deqs.append(owner)
    for i, q in enumerate(quants):
        old = block.args[i]
        new = block.insert_arg(q.output.type, i)
        new.name_hint = old.name_hint
        q.output.replace_all_uses_with(new)
        q.detach()
        q.erase()
        block.erase_arg(old)
    for i, d in enumerate(deqs):
        ret.operands[i] = d.input
        if not d.output.uses:
            d.detach()
            d.erase()
    fn.function_type = FunctionType.from_lists(
        [a.type for a in block.args], [v.type for v in ret.operands]
    )
    fn.attributes["nn.input_layouts"] = ArrayAttr(
        [StringAttr(_CHANNELS_LAST.get(s, s)) for s in in_lay]
    )
    fn.attributes["nn.output_layouts"] = ArrayAttr(
        [StringAttr(_CHANNELS_LAST.get(s, s)) for s in out_lay]
    )
    fn.attributes[BOUNDARY_ATTR] = StringAttr("int8")


@dataclass(frozen=True)
class BoundaryPass(ModulePass):
    """Choose the boundary: kind=float (float32, NCHW) or kind=int8 (quantized tensors, NHWC)."""

    name = "boundary"

    kind: str = "float"
    """"float": the model's float32 NCHW inputs and outputs; "int8": the
    quantized input and output tensors, channels-last, no float, no transpose."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.kind not in BOUNDARY_KINDS:
            raise PassFailedException(
                f"boundary: kind must be one of {', '.join(BOUNDARY_KINDS)}, got '{self.kind}'"
            )
        if self.kind == "int8" and not is_int8_boundary(op):
            set_int8_boundary(op)
