"""GFLOP/s of the printed convolution kernels beside numpy, single thread.

Each MobileNetV2-224 layer shape (plus a ResNet-style 3x3) is printed through
the `c_conv` emitters as one whole-tensor band, compiled as the network build
compiles it (`-O3 -march=native -ffp-contract=off`, no bounds checks) and timed
against numpy on the same product (the kernel lower-gebp picks for the
host: the 3x3 stride-1 convolution of 64 channels runs Winograd's F(4, 3)
along the width; GFLOP/s count 2 x the direct product's MACs, so a kernel
doing fewer multiply-adds shows above the FMA peak): `np.matmul` of the pixels by the weights
for pointwise layers, of the im2col matrix (built outside the timing) for
general convolutions, and a multiply-add per tap over shifted views for
depthwise ones. numpy's BLAS is held to one thread.

    python bench/conv_kernels.py [--int8] [--quick]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import hashlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tigris_ir.dialects import nn  # noqa: E402
from tigris_ir.interp import band_exec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support
from c_band_check import make_op, render  # noqa: E402

FLAGS = ("-std=c99", "-O3", "-march=native", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror")


@dataclass(frozen=True)
class Layer:
    kind: str  # "pw", "dw" or "3x3"
    h: int
    w: int
    cin: int
    cout: int
    stride: int = 1

    @property
    def label(self) -> str:
        s = f" s{self.stride}" if self.stride > 1 else ""
        return f"{self.kind:3s} {self.h}x{self.w} {self.cin}->{self.cout}{s}"


LAYERS = [
    Layer("3x3", 224, 224, 3, 32, 2),
    Layer("dw", 112, 112, 32, 32),
    Layer("pw", 112, 112, 32, 16),
    Layer("pw", 112, 112, 16, 96),
    Layer("dw", 112, 112, 96, 96, 2),
    Layer("pw", 56, 56, 96, 24),
    Layer("pw", 56, 56, 24, 144),
    Layer("dw", 56, 56, 144, 144),
    Layer("pw", 56, 56, 144, 24),
    Layer("dw", 56, 56, 144, 144, 2),
    Layer("pw", 28, 28, 144, 32),
    Layer("pw", 28, 28, 32, 192),
    Layer("dw", 28, 28, 192, 192),
    Layer("pw", 28, 28, 192, 32),
    Layer("pw", 14, 14, 192, 64),
    Layer("pw", 14, 14, 64, 384),
    Layer("dw", 14, 14, 384, 384),
    Layer("pw", 14, 14, 384, 64),
    Layer("pw", 14, 14, 384, 96),
    Layer("pw", 14, 14, 96, 576),
    Layer("dw", 14, 14, 576, 576),
    Layer("pw", 14, 14, 576, 96),
    Layer("pw", 7, 7, 576, 160),
    Layer("pw", 7, 7, 160, 960),
    Layer("dw", 7, 7, 960, 960),
    Layer("pw", 7, 7, 960, 160),
    Layer("pw", 7, 7, 960, 320),
    Layer("pw", 7, 7, 320, 1280),
    Layer("3x3", 56, 56, 64, 64),
]


def conv_op(layer: Layer, int8: bool) -> nn.NNOp:
    k = (1, 1) if layer.kind == "pw" else (3, 3)
    pads = (0, 0, 0, 0) if layer.kind == "pw" else (1, 1, 1, 1)
    group = layer.cin if layer.kind == "dw" else 1
    x = (1, layer.h, layer.w, layer.cin)
    wshape = (layer.cout, *k, layer.cin // group)
    props = {
        "kernel": nn.ints_prop(k),
        "strides": nn.ints_prop((layer.stride,) * 2),
        "pads": nn.ints_prop(pads),
        "group": nn.int_prop(group),
    }
    f32 = [
        nn.tensor_type(x, np.float32),
        nn.tensor_type(wshape, np.float32),
        nn.tensor_type((layer.cout,), np.float32),
    ]
    if not int8:
        return make_op(nn.ConvOp, f32, None, props)
    shape = nn.shape_of(make_op(nn.ConvOp, f32, None, props).results[0])
    operands = [
        nn.tensor_type(x, np.uint8, nn.QuantAttr(0.02, 128)),
        nn.tensor_type(wshape, np.int8),
        nn.tensor_type((layer.cout,), np.int32),
        nn.tensor_type((layer.cout,), np.float32),
    ]
    result = [nn.tensor_type(shape, np.uint8, nn.QuantAttr(0.05, 120))]
    return make_op(nn.ConvOp, operands, result, props)


def operands(op: nn.NNOp, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for i, v in enumerate(op.operands):
        dt, shape = nn.dtype_of(v), nn.shape_of(v)
        if dt == np.float32:
            a = rng.standard_normal(shape).astype(np.float32)
            out.append(np.abs(a) * 0.01 + 0.001 if i == 3 else a)
        else:
            info = np.iinfo(dt)
            lo, hi = (-1000, 1000) if dt == np.int32 else (info.min, info.max)
            out.append(rng.integers(lo, hi + 1, shape).astype(dt))
    return out


def compile_band(op: nn.NNOp, args: list[np.ndarray], outs: list[np.ndarray]) -> ctypes.CDLL:
    source = render(
        "band", op, args, [{} for _ in args], {}, outs, [i > 0 for i in range(len(args))]
    )
    d = Path(tempfile.gettempdir()) / "tigris-bench-conv"
    d.mkdir(exist_ok=True)
    key = hashlib.sha256((source + " ".join(FLAGS)).encode()).hexdigest()[:16]
    src, so = d / f"k_{key}.c", d / f"k_{key}.so"
    if not so.exists():
        src.write_text(source)
        cmd = ["gcc", *FLAGS, "-shared", "-fPIC", str(src), "-o", str(so), "-lm"]
        subprocess.run(cmd, check=True)
    return ctypes.CDLL(str(so))


def best_time(fn: Callable[[], object], budget: float) -> float:
    """The fastest of repeated runs within about `budget` seconds."""
    fn()
    best = float("inf")
    spent = 0.0
    runs = 0
    while spent < budget or runs < 3:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        runs += 1
    return best


def numpy_peer(layer: Layer, args: list[np.ndarray]) -> tuple[Callable[[], object], str]:
    x = args[0].astype(np.float32)
    w = args[1].astype(np.float32)
    if layer.kind == "pw":
        a = x.reshape(-1, layer.cin)
        b = np.ascontiguousarray(w.reshape(layer.cout, layer.cin).T)
        return (lambda: np.matmul(a, b)), "matmul"
    s = layer.stride
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    oh, ow = (layer.h - 1) // s + 1, (layer.w - 1) // s + 1
    views = [
        xp[:, ky : ky + s * (oh - 1) + 1 : s, kx : kx + s * (ow - 1) + 1 : s, :]
        for ky in range(3)
        for kx in range(3)
    ]
    if layer.kind == "dw":
        taps = [w[:, ky, kx, 0] for ky in range(3) for kx in range(3)]

        def depthwise() -> np.ndarray:
            acc = views[0] * taps[0]
            for v, t in zip(views[1:], taps[1:]):
                acc += v * t
            return acc

        return depthwise, "tap madds"
    cols = np.ascontiguousarray(np.concatenate(views, axis=-1).reshape(oh * ow, -1))
    wm = np.ascontiguousarray(w.reshape(layer.cout, -1).T)
    return (lambda: np.matmul(cols, wm)), "matmul(im2col)"


def check(op: nn.NNOp, args: list[np.ndarray], got: np.ndarray) -> None:
    """The timed kernel's result is the interpreter's (float32 within 1e-5)."""
    want = band_exec.compute(op, args, [{} for _ in args], {})[0]
    if want.dtype == np.float32:
        err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))
        ok = err <= 1e-5
    else:
        ok = bool(np.array_equal(got, want))
    if not ok:
        raise SystemExit(f"{op.name}: the compiled kernel differs from band_exec")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("--int8", action="store_true", help="uint8 activations, int8 weights")
    ap.add_argument("--quick", action="store_true", help="shorter timings")
    ns = ap.parse_args()
    budget = 0.05 if ns.quick else 0.25
    rng = np.random.default_rng(0)
    dtype = "int8" if ns.int8 else "float32"
    print(f"conv kernels, {dtype}, single thread; GFLOP/s = 2 * MACs / time")
    head = ("MMACs", "C ms", "C GF/s", "np GF/s")
    print(f"{'layer':28s} " + " ".join(f"{h:>8s}" for h in head) + "   C/np  peer")
    totals: dict[str, tuple[float, float]] = {}
    for layer in LAYERS:
        op = conv_op(layer, ns.int8)
        args = operands(op, rng)
        shape = nn.shape_of(op.results[0])
        outs = [np.zeros(shape, nn.dtype_of(op.results[0]))]
        lib = compile_band(op, args, outs)
        ptrs = (ctypes.c_void_p * (len(args) + 1))(
            *[a.ctypes.data for a in args], outs[0].ctypes.data
        )
        bounds = (ctypes.c_int * 1)(0)
        macs = op.macs()  # type: ignore[attr-defined]
        t_c = best_time(lambda lib=lib, p=ptrs, b=bounds: lib.band(p, b), budget)
        check(op, args, outs[0])
        peer, what = numpy_peer(layer, args)
        t_np = best_time(peer, budget)
        gc, gn = 2 * macs / t_c / 1e9, 2 * macs / t_np / 1e9
        c_tot, n_tot = totals.get(layer.kind, (0.0, 0.0))
        totals[layer.kind] = (c_tot + t_c, n_tot + t_np)
        print(
            f"{layer.label:28s} {macs / 1e6:8.2f} {t_c * 1e3:8.3f} {gc:8.1f} {gn:8.1f}"
            f" {gc / gn:6.2f}  {what}"
        )
    print()
    for kind, (tc, tn) in totals.items():
        print(
            f"total {kind:3s}: C {tc * 1e3:7.2f} ms, numpy {tn * 1e3:7.2f} ms, ratio {tn / tc:5.2f}"
        )


if __name__ == "__main__":
    main()
