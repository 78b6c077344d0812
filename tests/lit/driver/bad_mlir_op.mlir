// RUN: not tigris-opt %s 2>&1 | filecheck %s
// An op name the nn dialect does not have.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = nn.frobnicate %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: bad_mlir_op.mlir:4:{{[0-9]+}}
// CHECK: nn.frobnicate
// CHECK-NOT: Traceback
