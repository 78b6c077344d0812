// RUN: not tigris-opt %s --split-input-file --plan-arena 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not tigris-opt %s --split-input-file --lower-to-loops=budget=1K --plan-arena=budget=512 2>&1 | filecheck %s --check-prefix=BUDGET
// RUN: not tigris-opt %s --split-input-file --lower-to-loops=budget=256 2>&1 | filecheck %s --check-prefix=NOFIT

func.func @main(%x: tensor<1x24x4x8xf32>) -> tensor<1x24x4x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x24x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x24x4x8xf32>
  func.return %y : tensor<1x24x4x8xf32>
}
// ORDER:  plan-arena needs loop IR: run lower-to-loops first
// BUDGET: plan-arena: the arena does not verify:
// BUDGET: the fast arena of {{[0-9]+}} bytes exceeds the budget of 512
// NOFIT:  'nn.conv' (conv_0) does not fit the budget of 256 bytes

// -----
// A planner discrepancy the loop level refuses to run: the chain's line
// buffers would read a row of %p that no tile computes (the first tile's
// range starts at row 1, the second reaches back to row 0).
// RUN: not tigris-opt %s --split-input-file --lower-to-loops=budget=400 2>&1 | filecheck %s --check-prefix=GAP
func.func @main(%x: tensor<1x8x2x8xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.weight "w" : tensor<1x2x3x8xf32>
  %b = nn.weight "b" : tensor<1xf32>
  %p = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x2x8xf32>) -> tensor<1x5x2x8xf32>
  %y = nn.conv %p, %w, %b {kernel = array<i64: 2, 3>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 3>} : (tensor<1x5x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1xf32>) -> tensor<1x4x1x1xf32>
  func.return %y : tensor<1x4x1x1xf32>
}
// GAP: lower-to-loops: chain 0: line-buffered tile 1: 'conv_1' reads rows [0, 3) of 'p', but row 0 is never computed or loaded
