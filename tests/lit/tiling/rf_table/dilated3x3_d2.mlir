// RUN: tigris-opt %s --tile-stages=budget=16K --fuse-chains | filecheck %s
// RUN: tigris-analyze %s -m 16K --json | filecheck %s --check-prefix=JSON

// The spec's RF table: 3x3 dilated Conv (d=2): RF 5, halo 4.

func.func @main(%x: tensor<1x32x32x4xf32>) -> tensor<1x32x32x4xf32> {
  %w = nn.weight "w" : tensor<4x3x3x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, dilations = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x32x32x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x32x32x4xf32>
  func.return %y : tensor<1x32x32x4xf32>
}

// CHECK: tile.stage "s0" strategy "strips" band #tile.band<{{.*}}, halo = [2, 2, 0, 0]
// JSON: "halo": 4,
