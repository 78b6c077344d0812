// RUN: xdsl-opt %s | filecheck %s
// RUN: tigris-opt %s | xdsl-opt | filecheck %s

// The dialects reach plain xdsl-opt through the xdsl.universe entry point.
func.func @main(%x: tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>) -> tensor<1x4x4x2xi8, #nn.q<0.5 : 3>> {
  %0 = nn.max_pool %x {kernel = array<i64: 1, 1>} : (tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>) -> tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>
  func.return %0 : tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>
}
// CHECK: %0 = nn.max_pool %x {kernel = array<i64: 1, 1>} : (tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>) -> tensor<1x4x4x2xi8, #nn.q<0.5 : 3>>
