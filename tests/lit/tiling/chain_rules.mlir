// RUN: tigris-opt %s --split-input-file --tile-stages=budget=16K --fuse-chains --backprop-heights | filecheck %s

// Rules 1-3 hold: conv -> relu -> conv become one line-buffered chain. The
// chain's halo is the RF of its two 3x3 convs (5) less one; back-propagation
// gives the first conv 4 + 2 rows per tile of 4 output rows (the Relu
// overwrites the conv's rows in place, so 4-row tiles fit 16K).
func.func @main(%x: tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  %r = nn.relu %a : (tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  %y = nn.conv %r, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  func.return %y : tensor<1x32x32x8xf32>
}
// CHECK:      tile.chain "c0" tile_h 4 line_buffered band #tile.band<tile_h = 4, tile_w = 0, tiles = 8, halo = [2, 2, 0, 0], peak = {{[0-9]+}}>
// CHECK-NEXT:   tile.stage "s0" strategy "strips"
// CHECK-NEXT:     nn.conv %x, %w, %b {tile.rows = 6 : i64
// CHECK:        tile.stage "s1" strategy "strips"
// CHECK-NEXT:     nn.relu {{.*}} {tile.rows = 6 : i64}
// CHECK:        tile.stage "s2" strategy "strips"
// CHECK-NEXT:     nn.conv {{.*}} {tile.rows = 4 : i64

// -----
// Rule 4: the first conv's output is also a model output, so it must be
// spilled whole: no chain.
func.func @main(%x: tensor<1x32x32x8xf32>) -> (tensor<1x32x32x8xf32>, tensor<1x32x32x8xf32>) {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  %y = nn.conv %a, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  func.return %a, %y : tensor<1x32x32x8xf32>, tensor<1x32x32x8xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<1x32x32x8xf32>) -> (tensor<1x32x32x8xf32>, tensor<1x32x32x8xf32>)
// CHECK-NOT:   tile.chain
// CHECK:       tile.stage "s0"
// CHECK-NOT:   tile.chain
// CHECK:       tile.stage "s1"
// CHECK-NOT:   tile.chain
// CHECK:       func.return

// -----
// Rule 2: rank-3 (1D) maps tile in strips (along W) but do not chain.
func.func @main(%x: tensor<1x1024x8xf32>) -> tensor<1x1024x8xf32> {
  %w = nn.weight "w" : tensor<8x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3>, pads = array<i64: 1, 1>} : (tensor<1x1024x8xf32>, tensor<8x3x8xf32>, tensor<8xf32>) -> tensor<1x1024x8xf32>
  %y = nn.conv %a, %w, %b {kernel = array<i64: 3>, pads = array<i64: 1, 1>} : (tensor<1x1024x8xf32>, tensor<8x3x8xf32>, tensor<8xf32>) -> tensor<1x1024x8xf32>
  func.return %y : tensor<1x1024x8xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<1x1024x8xf32>)
// CHECK-NOT:   tile.chain
// CHECK:       tile.stage "s0" strategy "strips" band #tile.band<{{.*}}, halo = [2, 2, 0, 0]
// CHECK:         nn.conv %x, %w, %b {tile.rows = [[R:[0-9]+]] : i64
// CHECK:         nn.conv {{.*}} {tile.rows = {{[0-9]+}} : i64

// -----
// Rule 3: the Add reads a second model input, from outside any chain: the
// convs chain, the Add stays out.
func.func @main(%x: tensor<1x32x32x8xf32>, %z: tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  %c = nn.conv %a, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
  %y = nn.add %c, %z : (tensor<1x32x32x8xf32>, tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  func.return %y : tensor<1x32x32x8xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<1x32x32x8xf32>, %z: tensor<1x32x32x8xf32>)
// CHECK:       %[[C:.*]] = tile.chain "c0" tile_h {{[0-9]+}} line_buffered
// CHECK:       tile.stage "s2" strategy "strips"
// CHECK-NEXT:    nn.add %[[C]], %z
