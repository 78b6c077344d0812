// RUN: tigris-opt %s --tile-stages=budget=12K | filecheck %s
// RUN: tigris-analyze %s -m 12K -v | filecheck %s --check-prefix=VERBOSE

// A wide map: one row of input and output is 16 KiB, so no strip fits 12K;
// the stage runs as a grid of 2D tiles with a halo on all four sides.
func.func @main(%x: tensor<1x16x512x8xf32>) -> tensor<1x16x512x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x512x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x16x512x8xf32>
  func.return %y : tensor<1x16x512x8xf32>
}
// CHECK: tile.stage "s0" strategy "grid" band #tile.band<tile_h = [[H:[0-9]+]], tile_w = [[W:[0-9]+]], tiles = [[T:[0-9]+]], halo = [1, 1, 1, 1], peak = {{[0-9]+}}>
// VERBOSE: s0 {{.*}} grid {{.*}} {{[0-9]+}} tiles of {{[0-9]+}} x {{[0-9]+}}, halo 2
