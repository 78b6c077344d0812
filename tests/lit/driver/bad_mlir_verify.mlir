// RUN: not tigris-opt %s 2>&1 | filecheck %s
// RUN: not tigris-run %s --random-input 0 2>&1 | filecheck %s
// RUN: not tigris-analyze %s -m 64K 2>&1 | filecheck %s
// A wrong result shape: the verifier names the op by its place in the file
// (the line and column where its text begins) and both shapes, in one line.
func.func @f(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  func.return %0 : tensor<1x8x8x4xf32>
}
// CHECK: bad_mlir_verify.mlir:7:3: error: the IR does not verify: nn.conv: result shape 1x8x8x4 does not match the inferred shape 1x6x6x4
// CHECK-NOT: func.func
// CHECK-NOT: Traceback
