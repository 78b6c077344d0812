// RUN: not tigris-opt %s 2>&1 | filecheck %s
// A wrong result shape: the verifier names the op and both shapes.
func.func @f(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  func.return %0 : tensor<1x8x8x4xf32>
}
// CHECK: nn.conv: result shape 1x8x8x4 does not match the inferred shape 1x6x6x4
// CHECK-NOT: Traceback
