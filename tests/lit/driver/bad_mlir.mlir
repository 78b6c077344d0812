// RUN: not tigris-opt %s --split-input-file 2>&1 | filecheck %s

// Malformed IR: the parser's diagnostic, with file, line and column.
func.func @undefined_value() {
  %0 = nn.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: bad_mlir.mlir:{{[0-9]+}}:{{[0-9]+}}
// CHECK: values used but not defined: [%x]
// CHECK-NOT: Traceback
