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
