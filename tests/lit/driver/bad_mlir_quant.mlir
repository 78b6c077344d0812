// RUN: not tigris-opt %s 2>&1 | filecheck %s
// A quantization encoding with a malformed parameter list.
func.func @f(%x: tensor<4xi8, #nn.q<0.5>>) -> tensor<4xi8, #nn.q<0.5>> {
  func.return %x : tensor<4xi8, #nn.q<0.5>>
}
// CHECK: bad_mlir_quant.mlir:3:{{[0-9]+}}
// CHECK: ':'
// CHECK-NOT: Traceback
