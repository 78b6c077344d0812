// RUN: tigris-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The band rule of spec/tiling.md on hand-written tile IR.

// A branch off the input of a strided conv: the stage hands out a 16-row and a
// 32-row result, and no band holds both.
func.func @main(%x: tensor<1x32x32x8xf32>) -> (tensor<1x16x16x8xf32>, tensor<1x32x32x8xf32>) {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %s:2 = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 4, tile_w = 0, tiles = 4, halo = [1, 0, 0, 0], peak = 4096> {
    %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x16x16x8xf32>
    %r = nn.relu %x : (tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
    tile.yield %a, %r : tensor<1x16x16x8xf32>, tensor<1x32x32x8xf32>
  } : tensor<1x16x16x8xf32>, tensor<1x32x32x8xf32>
  func.return %s#0, %s#1 : tensor<1x16x16x8xf32>, tensor<1x32x32x8xf32>
}
// CHECK: TIGRIS_ERR_TILE_BAND: in tile.stage 's0', the outputs have heights [16, 32]: one band cannot hold them all

// -----
// An op that does not cut along the height inside a strip stage.
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x1x1x4xf32> {
  %s = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 1, tile_w = 0, tiles = 8, halo = [0, 0, 0, 0], peak = 256> {
    %g = nn.global_average_pool %x : (tensor<1x8x8x4xf32>) -> tensor<1x1x1x4xf32>
    tile.yield %g : tensor<1x1x1x4xf32>
  } : tensor<1x1x1x4xf32>
  func.return %s : tensor<1x1x1x4xf32>
}
// CHECK: TIGRIS_ERR_TILE_BAND: in tile.stage 's0', 'nn.global_average_pool' (accumulate) cannot be cut into height bands; strategy 'strips' needs every op to tile along the height

// -----
// Chain rule 3: a later member reads a tensor from outside the chain.
func.func @main(%x: tensor<1x8x8x4xf32>, %z: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %c = tile.chain "c0" tile_h 2 band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
    %s0 = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %r : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    %s1 = tile.stage "s1" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %a = nn.add %s0, %z : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %a : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    tile.yield %s1 : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %c : tensor<1x8x8x4xf32>
}
// CHECK: TIGRIS_ERR_CHAIN_BAND: in tile.chain 'c0', stage 's1' reads a value from outside the chain; only the first stage may

// -----
// Chain rule 4: an earlier member's output leaves the chain.
func.func @main(%x: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) {
  %c:2 = tile.chain "c0" tile_h 2 band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
    %s0 = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %r : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    %s1 = tile.stage "s1" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %t = nn.tanh %s0 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %t : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    tile.yield %s0, %s1 : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
  func.return %c#0, %c#1 : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
}
// CHECK: TIGRIS_ERR_CHAIN_BAND: in tile.chain 'c0', an output of stage 's0' leaves the chain; only the last stage's outputs may

// -----
// A chain member that is not cut into strips.
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %c = tile.chain "c0" tile_h 2 band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
    %s0 = tile.stage "s0" strategy "normal" {
      %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %r : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    %s1 = tile.stage "s1" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %t = nn.tanh %s0 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %t : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    tile.yield %s1 : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %c : tensor<1x8x8x4xf32>
}
// CHECK: TIGRIS_ERR_CHAIN_BAND: in tile.chain 'c0', stage 's0' has strategy 'normal', which does not tile along the height

// -----
// Records that do not verify.
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %s = tile.stage "s0" strategy "strips" {
    %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    tile.yield %r : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %s : tensor<1x8x8x4xf32>
}
// CHECK: tile.stage 's0': strategy 'strips' needs a #tile.band record

// -----
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %s = tile.stage "s0" strategy "diagonal" {
    %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    tile.yield %r : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %s : tensor<1x8x8x4xf32>
}
// CHECK: tile.stage 's0': unknown strategy 'diagonal'; expected one of normal, inplace, strips, grid

// -----
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %s = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 0, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
    %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    tile.yield %r : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %s : tensor<1x8x8x4xf32>
}
// CHECK: #tile.band: tile_h must lie in [1, 9223372036854775807], got 0

// -----
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %c = tile.chain "c0" tile_h 2 {
    %s0 = tile.stage "s0" strategy "strips" band #tile.band<tile_h = 2, tile_w = 0, tiles = 4, halo = [0, 0, 0, 0], peak = 512> {
      %r = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      tile.yield %r : tensor<1x8x8x4xf32>
    } : tensor<1x8x8x4xf32>
    tile.yield %s0 : tensor<1x8x8x4xf32>
  } : tensor<1x8x8x4xf32>
  func.return %c : tensor<1x8x8x4xf32>
}
// CHECK: tile.chain 'c0' needs at least two stages
