// RUN: not tigris-opt %s -p 'lower-to-loops{budget=64}' 2>&1 | filecheck %s

// The weight returned itself: refused, naming the rule.
// CHECK: output #1 is the weight 'c' itself: a plan writes every output of the function, so a constant output is copied into one by an op (nn.identity, as the importer does)
func.func @main(%x: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<4xi64>) {
  %y = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = nn.weight "c" : tensor<4xi64>
  func.return %y, %c : tensor<1x8x8x4xf32>, tensor<4xi64>
}
