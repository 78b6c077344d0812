// RUN: tigris-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The rules of nn.if, nn.loop, nn.yield and the comparisons, one case per
// rule; each message names the op and the rule.

// CHECK: Operation does not verify: nn.if: the condition must be a single-element tensor of i1, got tensor<f32>
func.func @if_float_condition(%c: tensor<f32>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.if %c : tensor<f32> -> (tensor<2xf32>) {
    nn.yield %x : tensor<2xf32>
  } else {
    nn.yield %x : tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.if: the condition must be a single-element tensor of i1, got tensor<4xi1>
func.func @if_tensor_condition(%c: tensor<4xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.if %c : tensor<4xi1> -> (tensor<2xf32>) {
    nn.yield %x : tensor<2xf32>
  } else {
    nn.yield %x : tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.if: the else region yields (tensor<3xf32>) but the op needs (tensor<2xf32>)
func.func @if_yield_type(%c: tensor<i1>, %x: tensor<2xf32>, %z: tensor<3xf32>) -> tensor<2xf32> {
  %y = nn.if %c : tensor<i1> -> (tensor<2xf32>) {
    nn.yield %x : tensor<2xf32>
  } else {
    nn.yield %z : tensor<3xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.if: the then region must end in nn.yield
func.func @if_no_yield(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.if %c : tensor<i1> -> (tensor<2xf32>) {
    tile.yield %x : tensor<2xf32>
  } else {
    nn.yield %x : tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.loop: max_trips must be >= 0, got -1
func.func @loop_negative_trips(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips -1 (%i, %go, %h = %x) -> (tensor<2xf32>) {
    nn.yield %go, %h : tensor<i1>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.loop: the body must end in nn.yield of the next condition and 1 carried value(s)
func.func @loop_yield_count(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%i, %go, %h = %x) -> (tensor<2xf32>) {
    nn.yield %go : tensor<i1>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.loop: the yielded condition must be a single-element tensor of i1, got tensor<2xf32>
func.func @loop_yield_condition(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%i, %go, %h = %x) -> (tensor<2xf32>) {
    nn.yield %h, %h : tensor<2xf32>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.loop: the body region yields (tensor<i1>, tensor<4xf32>) but the op needs (tensor<i1>, tensor<2xf32>)
func.func @loop_carried_type(%x: tensor<2xf32>, %z: tensor<4xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%i, %go, %h = %x) -> (tensor<2xf32>) {
    nn.yield %go, %z : tensor<i1>, tensor<4xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.loop: the condition must be a single-element tensor of i1, got tensor<i64>
func.func @loop_condition(%c: tensor<i64>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop cond %c : tensor<i64> (%i, %go, %h = %x) -> (tensor<2xf32>) {
    nn.yield %go, %h : tensor<i1>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: 'nn.yield' expects parent op to be one of 'nn.if', 'nn.loop'
func.func @stray_yield(%x: tensor<2xf32>) -> tensor<2xf32> {
  nn.yield %x : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.less: the lhs must be an unquantized tensor of f32, i8, ui8, i32, i64 or i1, got tensor<2xi8, #nn.q<0.5 : 0>>
func.func @compare_i8(%a: tensor<2xi8, #nn.q<0.5 : 0>>, %b: tensor<2xi8, #nn.q<0.5 : 0>>) -> tensor<2xi1> {
  %c = nn.less %a, %b : (tensor<2xi8, #nn.q<0.5 : 0>>, tensor<2xi8, #nn.q<0.5 : 0>>) -> tensor<2xi1>
  func.return %c : tensor<2xi1>
}

// -----

// CHECK: Operation does not verify: nn.greater: operands must have one element type, got tensor<2xf32> and tensor<2xi64>
func.func @compare_mixed(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xi1> {
  %c = nn.greater %a, %b : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xi1>
  func.return %c : tensor<2xi1>
}

// -----

// CHECK: Operation does not verify: nn.equal: the result must be a tensor of i1, got tensor<2xf32>
func.func @compare_result(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %c = nn.equal %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

// CHECK: Operation does not verify: nn.less_equal: result shape 2 does not match the inferred shape 3x2
func.func @compare_shape(%a: tensor<3x1xf32>, %b: tensor<2xf32>) -> tensor<2xi1> {
  %c = nn.less_equal %a, %b : (tensor<3x1xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return %c : tensor<2xi1>
}
