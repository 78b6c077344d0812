// RUN: not tigris-opt %s -t c 2>&1 | filecheck %s --check-prefix=TENSOR
// RUN: not tigris-opt %s --gebp-tile=target=avx2 --lower-gebp 2>&1 | filecheck %s --check-prefix=LOWER
// RUN: %python %S/../../zoo_cli.py build ds_cnn --small -o %t.onnx
// RUN: not tigris-opt %t.onnx --lower-to-loops=budget=64K --plan-arena -t c 2>&1 | filecheck %s --check-prefix=UNTILED
// RUN: not tigris-opt %t.onnx --lower-to-loops=budget=64K --gebp-tile=target=avx2 --plan-arena -t c 2>&1 | filecheck %s --check-prefix=UNLOWERED

// The C target prints loop-level plans only, and prints a matrix product's
// register-tiled kernel only as the passes stated it: a plan without the
// decisions of gebp-tile, or without the kernel ops of lower-gebp, is one
// diagnostic naming the op and the pass to run, exit 1, no partial output.
// lower-gebp lowers the matrix products of a plan, never tensor-level ones.

// TENSOR: the C target prints loop-level plans: the module holds none (run --lower-to-loops and --plan-arena
// TENSOR-NOT: Traceback
// LOWER: lower-gebp: the module holds no loop-level plan; it lowers the matrix products of loop.band ops (run --lower-to-loops and --gebp-tile first)
// UNTILED: nn.conv: this matrix product has no register-tile decision (rtile.target, #rtile.geom, rtile.kernel): run --gebp-tile and --lower-gebp (computing 'conv_0')
// UNLOWERED: nn.conv: this matrix product has a register tile (#rtile.geom) but no kernel (rtile.kernel): run --lower-gebp (computing 'conv_0')
func.func @f(%x: tensor<1x6x6x8xf32>, %w: tensor<16x1x1x8xf32>, %b: tensor<16xf32>) -> tensor<1x6x6x16xf32> {
  %y = nn.conv %x, %w, %b {kernel = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<16x1x1x8xf32>, tensor<16xf32>) -> tensor<1x6x6x16xf32>
  func.return %y : tensor<1x6x6x16xf32>
}
