// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512-vnni --lower-gebp --plan-arena -o %t.mlir
// RUN: filecheck %s --check-prefix=VNNI < %t.mlir
// RUN: tigris-opt %t.mlir | filecheck %s --check-prefix=VNNI
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m55 --lower-gebp --plan-arena | filecheck %s --check-prefix=M55
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=AVX2
// RUN: sed -e 's/into ui8 offset 139/into ui8 offset 138/' %t.mlir > %t.bad.mlir
// RUN: not tigris-opt %t.bad.mlir -t c 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: sed -e 's/into ui8 offset 139/into ui8/' %t.mlir > %t.none.mlir
// RUN: not tigris-opt %t.none.mlir -t c 2>&1 | filecheck %s --check-prefix=MISSING

// The offset an int8 kernel's packed rows of A hold over x - zp is a decision
// of lower-gebp, stated on rtile.pack_a: `vpdpbusd` (AVX-512 VNNI) multiplies
// unsigned bytes, so int8 inputs are packed + 128 and unsigned ones as they
// are, neither less the zero point: DS-CNN's first convolution reads int8
// inputs of zero point 11 (offset 139), its pointwise ones uint8 inputs of
// zero point 0 (offset 0). `vmladava` (Cortex-M55 Helium) multiplies signed
// bytes: int8 inputs as they are (offset 11), uint8 ones - 128 (offset -128).
// The int16 pair products of pmaddwd hold x - zp itself: no offset. The C's
// bias (less offset times B's column sums) and its pad taps follow the IR.

// VNNI:      rtile.kernel %{{.*}} dot "vpdpbusd" k 40 n 16 groups 1
// VNNI-NEXT:   rtile.row_blocks rows 64 {
// VNNI-NEXT:     rtile.pack_a "im2col" kp 40 into ui8 offset 139 scratch 2560
// VNNI:      rtile.kernel %{{.*}} dot "vpdpbusd" k 16 n 16 groups 1
// VNNI-NEXT:   rtile.row_blocks rows 64 merge 5 {
// VNNI-NEXT:     rtile.pack_a "rows" kp 16 into ui8 offset 0 scratch 1024

// M55:      rtile.kernel %{{.*}} dot "vmladava" k 40 n 16 groups 1
// M55-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// M55-NEXT:     rtile.pack_a "im2col" kp 48 into si8 offset 11 scratch
// M55:      rtile.kernel %{{.*}} dot "vmladava" k 16 n 16 groups 1
// M55-NEXT:   rtile.row_blocks rows {{[0-9]+}} merge 5 {
// M55-NEXT:     rtile.pack_a "rows" kp 16 into si8 offset -128 scratch

// AVX2:      rtile.kernel %{{.*}} dot "pmaddwd" k 40 n 16 groups 1
// AVX2-NEXT:   rtile.row_blocks rows 64 {
// AVX2-NEXT:     rtile.pack_a "im2col" kp 40 into i16 scratch 5120
// AVX2:      rtile.kernel %{{.*}} dot "pmaddwd" k 16 n 16 groups 1
// AVX2-NEXT:   rtile.row_blocks rows 64 merge 5 {
// AVX2-NEXT:     rtile.pack_a "rows" kp 16 into i16 scratch 2048

// An offset other than the packing's, or none, is one diagnostic naming the op.
// WRONG: nn.conv: its rtile.pack_a states offset 138, but vpdpbusd rows packed from int8_t inputs of zero point 11 hold x - zp + 139
// MISSING: nn.conv: rtile.kernel: a vpdpbusd kernel's rtile.pack_a must state the offset its packed rows hold over x - zp (run --lower-gebp)
