// RUN: tigris-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// nn.loop's header: the iteration number and the condition come first, then
// every carried value with its initial value, then one result type each.

// CHECK: nn.loop: every carried value needs its initial value (%carried = %init)
func.func @no_init(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%i, %go, %h) -> (tensor<2xf32>) {
    nn.yield %go, %h : tensor<i1>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: nn.loop: expected (%iteration, %condition, %carried = %init, ...)
func.func @no_iteration(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%h = %x) -> (tensor<2xf32>) {
    nn.yield %h, %h : tensor<2xf32>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: nn.loop: 1 carried value(s) but 2 result type(s)
func.func @types(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.loop max_trips 2 (%i, %go, %h = %x) -> (tensor<2xf32>, tensor<2xf32>) {
    nn.yield %go, %h : tensor<i1>, tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}
