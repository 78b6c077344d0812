// RUN: tigris-opt %s --tile-stages=budget=16K --fuse-chains | filecheck %s
// RUN: tigris-analyze %s -m 16K --json | filecheck %s --check-prefix=JSON

// The spec's RF table: 3x3 Conv, stride 2: RF 3, halo 2 (the band reads 2 * rows + 1 input rows).

func.func @main(%x: tensor<1x64x64x4xf32>) -> tensor<1x32x32x4xf32> {
  %w = nn.weight "w" : tensor<4x3x3x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x64x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x32x32x4xf32>
  func.return %y : tensor<1x32x32x4xf32>
}

// CHECK: tile.stage "s0" strategy "{{strips|grid}}" band #tile.band<{{.*}}, halo = [1, 0, {{[01]}}, 0]
// JSON: "halo": 2,
