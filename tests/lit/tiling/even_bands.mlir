// RUN: tigris-opt %s --tile-stages=budget=7936 | filecheck %s
// RUN: tigris-analyze %s -m 7936 --json | filecheck %s --check-prefix=JSON

// H = 100, one 3x3 conv, 128-byte rows: the largest band that fits holds 30
// output rows (30 + 2 input rows and 30 output rows, 7936 bytes), so 4 tiles;
// evened out, 4 tiles of 25 rows. The input is read with overhead_bytes =
// halo 2 * 128 bytes * (4 - 1) = 768 more than its 12800 bytes.
func.func @main(%x: tensor<1x100x8x4xf32>) -> tensor<1x100x8x4xf32> {
  %w = nn.weight "w" : tensor<4x3x3x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x100x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x100x8x4xf32>
  func.return %y : tensor<1x100x8x4xf32>
}
// CHECK: tile.stage "s0" strategy "strips" band #tile.band<tile_h = 25, tile_w = 0, tiles = 4, halo = [1, 1, 0, 0], peak = 6656>
// JSON: "slow_read_bytes": 13568,
// JSON: "description": "4 tiles of 25 rows, halo 2",
