// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trips of the elementwise ops of the nn dialect: custom form, custom form
// printed and parsed again, and generic form parsed back to the custom form.

// Properties print inside <{...}> in the generic form.
// GENERIC: "nn.hard_sigmoid"(%3) <{alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}> : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// GENERIC: "nn.gelu"(%6) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// GENERIC: "nn.clip"(%13) <{min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}> : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// GENERIC: "nn.prelu"(%5, %c) : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// GENERIC: "nn.weight"() <{ref = "layer.0/weight:0"}> : () -> tensor<2x3xf32>

// Every unary op, with and without properties; gelu's approximate is optional.
// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.relu %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.sigmoid %0 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %2 = nn.tanh %1 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %3 = nn.hard_swish %2 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %4 = nn.hard_sigmoid %3 {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %5 = nn.leaky_relu %4 {alpha = 1.000000e-02 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %6 = nn.elu %5 {alpha = 1.000000e+00 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %7 = nn.gelu %6 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %8 = nn.gelu %7 {approximate = "tanh"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %9 = nn.exp %8 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %10 = nn.log %9 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %11 = nn.sqrt %10 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %12 = nn.abs %11 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %13 = nn.floor %12 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %14 = nn.clip %13 {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %15 = nn.identity %14 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %15 : tensor<1x4x4x8xf32>
func.func @unary(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.relu %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %1 = nn.sigmoid %0 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %2 = nn.tanh %1 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %3 = nn.hard_swish %2 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %4 = nn.hard_sigmoid %3 {alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %5 = nn.leaky_relu %4 {alpha = 0.01 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %6 = nn.elu %5 {alpha = 1.0 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %7 = nn.gelu %6 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %8 = nn.gelu %7 {approximate = "tanh"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %9 = nn.exp %8 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %10 = nn.log %9 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %11 = nn.sqrt %10 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %12 = nn.abs %11 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %13 = nn.floor %12 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %14 = nn.clip %13 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %15 = nn.identity %14 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  func.return %15 : tensor<1x4x4x8xf32>
}

// Every binary op; broadcasting of a per-channel vector and of a unit-axis tensor.
// CHECK-LABEL: func.func @binary(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x8xf32>, %c: tensor<8xf32>, %r: tensor<1x4x1x1xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.add %x, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.sub %0, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %2 = nn.mul %r, %1 : (tensor<1x4x1x1xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %3 = nn.div %2, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %4 = nn.max %3, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %5 = nn.min %4, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %6 = nn.prelu %5, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %6 : tensor<1x4x4x8xf32>
func.func @binary(%x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x8xf32>, %c: tensor<8xf32>, %r: tensor<1x4x1x1xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.add %x, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %1 = nn.sub %0, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %2 = nn.mul %r, %1 : (tensor<1x4x1x1xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %3 = nn.div %2, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %4 = nn.max %3, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %5 = nn.min %4, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %6 = nn.prelu %5, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  func.return %6 : tensor<1x4x4x8xf32>
}

// Broadcasting in both directions: neither operand has the result's shape.
// CHECK-LABEL: func.func @outer(
// CHECK-SAME: %a: tensor<1x4x1x8xf32>, %b: tensor<1x1x4x1xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.add %a, %b : (tensor<1x4x1x8xf32>, tensor<1x1x4x1xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x8xf32>
func.func @outer(%a: tensor<1x4x1x8xf32>, %b: tensor<1x1x4x1xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.add %a, %b : (tensor<1x4x1x8xf32>, tensor<1x1x4x1xf32>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// A weight is referenced by name; dots, slashes and colons of ONNX names survive.
// CHECK-LABEL: func.func @weights(
// CHECK-SAME: ) -> tensor<2x3xf32> {
// CHECK-NEXT: %w = nn.weight "layer.0/weight:0" : tensor<2x3xf32>
// CHECK-NEXT: %i = nn.weight "table" : tensor<5xi32>
// CHECK-NEXT: func.return %w : tensor<2x3xf32>
func.func @weights() -> tensor<2x3xf32> {
  %w = nn.weight "layer.0/weight:0" : tensor<2x3xf32>
  %i = nn.weight "table" : tensor<5xi32>
  func.return %w : tensor<2x3xf32>
}

// The generic form parses to the custom form; a tiny f32 property keeps its value.
// CHECK-LABEL: func.func @generic_input(
// CHECK-SAME: %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %0 = nn.clip %x {min = -1.000000e+00 : f32, max = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %1 = nn.leaky_relu %0 {alpha = 1.000000e-10 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %1 : tensor<2x3xf32>
func.func @generic_input(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.clip"(%x) <{min = -1.0 : f32, max = 1.0 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "nn.leaky_relu"(%0) <{alpha = 1.0e-10 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
