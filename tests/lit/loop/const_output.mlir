// RUN: tigris-opt %s --split-input-file -p 'lower-to-loops{budget=64},plan-arena' | filecheck %s

// A constant output (a folded Shape) copied by nn.identity, as the importer
// writes it: the copy is a band like any other and its 32 bytes are the
// plan's peak; the input nothing reads is stored nowhere (no loop.offset).
// CHECK:      func.func @main(%x: memref<1x8x8x4xf32, "fast">) -> memref<4xi64, "fast">
// CHECK-SAME: loop.plan = {peak = 32 : i64, slow_peak = 0 : i64
// CHECK-SAME: loop.arena = 32 : i64
// CHECK-NEXT: %s = memref.alloc() {loop.tensor = "s", loop.offset = 0 : i64} : memref<4xi64, "fast">
// CHECK-NEXT: %w_c = memref.get_global @w_c : memref<4xi64>
// CHECK-NEXT: loop.band ins(%w_c : memref<4xi64>) outs(%s : memref<4xi64, "fast">)
// CHECK:      nn.identity
// CHECK:      func.return %s : memref<4xi64, "fast">
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<4xi64> {
  %c = nn.weight "c" : tensor<4xi64>
  %s = nn.identity %c : (tensor<4xi64>) -> tensor<4xi64>
  func.return %s : tensor<4xi64>
}

// -----

// A constant beside a computed output, tiled at 64 bytes: the copy is
// written to slow memory with the other output.
// CHECK:      func.func @main(%x: memref<1x8x8x4xf32, "slow"> {loop.offset = {{[0-9]+}} : i64})
// CHECK:      %s = memref.alloc() {loop.tensor = "s", loop.offset = {{[0-9]+}} : i64} : memref<4xi64, "fast">
// CHECK:      loop.band ins(%w_c : memref<4xi64>) outs(%s : memref<4xi64, "fast">)
// CHECK:      "memref.copy"(%s, %s_s)
// CHECK:      func.return %s_y, %s_s
func.func @main(%x: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<4xi64>) {
  %y = nn.relu %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = nn.weight "c" : tensor<4xi64>
  %s = nn.identity %c : (tensor<4xi64>) -> tensor<4xi64>
  func.return %y, %s : tensor<1x8x8x4xf32>, tensor<4xi64>
}

