// RUN: tigris-opt %s --tile-stages=budget=16K --fuse-chains | filecheck %s
// RUN: tigris-analyze %s -m 16K --json | filecheck %s --check-prefix=JSON

// The spec's RF table: 3x3 DWConv + 3x3 Conv: RF 5, halo 4.

func.func @main(%x: tensor<1x32x32x4xf32>) -> tensor<1x32x32x4xf32> {
  %dw = nn.weight "dw" : tensor<4x3x3x1xf32>
  %w = nn.weight "w" : tensor<4x3x3x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %d = nn.conv %x, %dw, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x32x32x4xf32>, tensor<4x3x3x1xf32>, tensor<4xf32>) -> tensor<1x32x32x4xf32>
  %y = nn.conv %d, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x32x32x4xf32>
  func.return %y : tensor<1x32x32x4xf32>
}

// CHECK: tile.chain "c0" tile_h {{[0-9]+}} line_buffered band #tile.band<{{.*}}, halo = [2, 2, 0, 0]
// JSON: "chains": [
// JSON: "halo": 4,
