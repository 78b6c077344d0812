// The plan verifier (plan-arena, and tigris-run and -t c before they run or
// print) proves that the tiles cover every output element of every band op:
// an edited loop-level plan that leaves a gap or computes rows twice is
// refused, naming the band op (the graph node it computes) and the rows.

// A line-buffered chain (conv_0 -> relu_1, 3 tiles of rows [0,3) [3,6) [6,8)).
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --lower-to-loops=budget=1K --plan-arena -o %t.chain.mlir
// RUN: tigris-run %t.chain.mlir --random-input 1 --check | filecheck %s --check-prefix=OK
// OK: equals the untiled reference

// The last tile's row table of relu_1 stops one row short: row 7 is never
// computed (the spill still copies it, from what the line buffer held before).
// RUN: sed '/chain0_out_relu1"/s/\[6, 8\]\]/[6, 7]]/' %t.chain.mlir > %t.gap.mlir
// RUN: not tigris-run %t.gap.mlir --random-input 1 2>&1 | filecheck %s --check-prefix=GAP
// RUN: not tigris-opt %t.gap.mlir -t c 2>&1 | filecheck %s --check-prefix=GAP
// RUN: not tigris-opt %t.gap.mlir --plan-arena 2>&1 | filecheck %s --check-prefix=GAP
// GAP: loop.band of 'relu_1' (chain 0) has not computed rows [7, 8) of its output
// GAP-NOT: int tigris_run

// Every table's last tile repeats tile 1: rows [3, 6) computed twice.
// RUN: sed -e 's/\[3, 6\], \[6, 8\]\]/[3, 6], [3, 6]]/' -e 's/\[2, 7\], \[5, 8\]\]/[2, 7], [2, 7]]/' -e 's/\[2, 2\], \[3, 2\]\]/[2, 2], [2, 2]]/' -e 's/\[4, 7\], \[7, 8\]\]/[4, 7], [4, 7]]/' %t.chain.mlir > %t.twice.mlir
// RUN: not tigris-run %t.twice.mlir --random-input 1 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not tigris-opt %t.twice.mlir -t c 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE: chain 0 tile 2: loop.band of 'conv_0' computes rows [3, 6) of its output twice

// The tile loop runs 2 of its 3 tiles.
// RUN: sed 's/arith.constant 3 : index/arith.constant 2 : index/' %t.chain.mlir > %t.short.mlir
// RUN: not tigris-run %t.short.mlir --random-input 1 2>&1 | filecheck %s --check-prefix=SHORT
// SHORT: loop.band of 'conv_0' (chain 0) never computes rows [6, 8) of its output

// A strided 1D conv in strips: 4 tiles of 8 output positions, each spilled.
// RUN: tigris-opt %s --lower-to-loops=budget=1K --plan-arena -o %t.strips.mlir
// The last strip computes 7 positions of its 8.
// RUN: sed '/stage0_out_conv0"/s/\[24, 32\]\]/[24, 31]]/' %t.strips.mlir > %t.sgap.mlir
// RUN: not tigris-opt %t.sgap.mlir -t c 2>&1 | filecheck %s --check-prefix=SGAP
// SGAP: loop.band of 'conv_0' (stage 0) never computes positions [31, 32) of its output
// Strip 1 computes and spills positions [8, 16) again in strip 2's place.
// RUN: sed -e '/stage0_\(out_conv0\|spill_y\|held_y\)"/s/\[16, 24\]/[8, 16]/' -e '/stage0_\(held\|load\)_x"/s/\[30, 49\]/[14, 33]/' %t.strips.mlir > %t.stwice.mlir
// RUN: not tigris-opt %t.stwice.mlir -t c 2>&1 | filecheck %s --check-prefix=STWICE
// STWICE: stage 0 tile 2: loop.band of 'conv_0' computes positions [8, 16) of its output twice
func.func @main(%x: tensor<1x64x8xf32>) -> tensor<1x32x8xf32> {
  %w = nn.weight "w" : tensor<8x5x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 5>, strides = array<i64: 2>, pads = array<i64: 2, 2>} : (tensor<1x64x8xf32>, tensor<8x5x8xf32>, tensor<8xf32>) -> tensor<1x32x8xf32>
  func.return %y : tensor<1x32x8xf32>
}
