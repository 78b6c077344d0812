// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// nn.if, nn.loop, nn.yield and the comparisons print and parse back. Bodies
// read values defined above them (%x, %t).

// CHECK:      %c = nn.greater %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT: %y = nn.if %c : tensor<i1> -> (tensor<1x4x4x2xf32>) {
// CHECK-NEXT:   %r = nn.relu %x : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK-NEXT:   nn.yield %r : tensor<1x4x4x2xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT:   nn.yield %x : tensor<1x4x4x2xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %z = nn.loop max_trips 3 cond %c : tensor<i1> (%i, %go, %h = %y) -> (tensor<1x4x4x2xf32>) {
// CHECK-NEXT:   %s = nn.add %h, %x
// CHECK-NEXT:   %m2 = nn.reduce_max %s
// CHECK-NEXT:   %g = nn.less_equal %m2, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:   nn.yield %g, %s : tensor<i1>, tensor<1x4x4x2xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %w, %w_1 = nn.loop (%j, %go2, %a = %z, %b = %x) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) {
// CHECK-NEXT:   %e = nn.equal %j, %j : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK-NEXT:   nn.yield %e, %b, %a : tensor<i1>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %u = nn.greater_equal %m, %t
// CHECK-NEXT: %v = nn.less %m, %t
// CHECK-NEXT: nn.if %u : tensor<i1> {
// CHECK-NEXT:   nn.yield
// CHECK-NEXT: } else {
// CHECK-NEXT:   nn.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %w :

// The generic form: the loop's optional condition is a segment of its operands.
// GENERIC: %y = "nn.if"(%c) ({
// GENERIC: "nn.loop"(%c, %y) <{max_trips = 3 : i64, operandSegmentSizes = array<i32: 1, 1>}> ({
// GENERIC-NEXT: ^{{.*}}(%i: tensor<i64>, %go: tensor<i1>, %h: tensor<1x4x4x2xf32>):
// GENERIC: %w, %w_1 = "nn.loop"(%z, %x) <{operandSegmentSizes = array<i32: 0, 2>}> ({

func.func @main(%x: tensor<1x4x4x2xf32>, %t: tensor<f32>) -> tensor<1x4x4x2xf32> {
  %m = nn.reduce_mean %x {axes = array<i64>, keepdims = 0 : i64} : (tensor<1x4x4x2xf32>) -> tensor<f32>
  %c = nn.greater %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %y = nn.if %c : tensor<i1> -> (tensor<1x4x4x2xf32>) {
    %r = nn.relu %x : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    nn.yield %r : tensor<1x4x4x2xf32>
  } else {
    nn.yield %x : tensor<1x4x4x2xf32>
  }
  %z = nn.loop max_trips 3 cond %c : tensor<i1> (%i, %go, %h = %y) -> (tensor<1x4x4x2xf32>) {
    %s = nn.add %h, %x : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    %m2 = nn.reduce_max %s {axes = array<i64>, keepdims = 0 : i64} : (tensor<1x4x4x2xf32>) -> tensor<f32>
    %g = nn.less_equal %m2, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
    nn.yield %g, %s : tensor<i1>, tensor<1x4x4x2xf32>
  }
  %w:2 = nn.loop (%j, %go2, %a = %z, %b = %x) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) {
    %e = nn.equal %j, %j : (tensor<i64>, tensor<i64>) -> tensor<i1>
    nn.yield %e, %b, %a : tensor<i1>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
  }
  %u = nn.greater_equal %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %v = nn.less %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
  nn.if %u : tensor<i1> {
    nn.yield
  } else {
    nn.yield
  }
  func.return %w#0 : tensor<1x4x4x2xf32>
}
