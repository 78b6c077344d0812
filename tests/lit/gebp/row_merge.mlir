// RUN: %python %S/../../zoo_cli.py build ds_cnn --small -o %t.onnx
// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t8.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena -o %t.mlir
// RUN: filecheck %s --check-prefix=IR < %t.mlir
// RUN: tigris-opt %t.mlir | filecheck %s --check-prefix=IR
// RUN: tigris-opt %t.mlir -t c | filecheck %s --check-prefix=C
// RUN: tigris-opt %t8.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512-vnni --lower-gebp --plan-arena | filecheck %s --check-prefix=IR8
// RUN: sed -e 's/merge 5/merge 4/' %t.mlir > %t.bad.mlir
// RUN: not tigris-opt %t.bad.mlir -t c 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: sed -e 's/rtile.row_blocks rows 64 {/rtile.row_blocks rows 64 merge 5 {/' %t.mlir > %t.im2col.mlir
// RUN: not tigris-opt %t.im2col.mlir -t c 2>&1 | filecheck %s --check-prefix=NOTPW

// The pointwise row merge is a decision of lower-gebp, stated on the kernel's
// row blocks: where a pointwise convolution's band reads and writes whole
// dense image rows of W pixels (DS-CNN small: 25 x 5 pixels, W = 5), one call
// of its kernel covers all the band's output rows (`merge 5`); without it,
// one call per output row. The im2col convolution and the Gemm state none.
// The attribute prints, parses back, and the C follows it: the merged branch
// of the pointwise driver passes rows x 5 pixels to the kernel.

// IR:      nn.conv {{.*}}kernel = array<i64: 10, 4>
// IR-NEXT: rtile.kernel
// IR-NEXT:   rtile.row_blocks rows 64 {
// IR:      nn.conv {{.*}}kernel = array<i64: 1, 1>
// IR-NEXT: rtile.kernel %{{.*}} dot "fma" k 16 n 16 groups 1
// IR-NEXT:   rtile.row_blocks rows 64 merge 5 {
// IR:      nn.gemm
// IR-NEXT: rtile.kernel %{{.*}} dot "fma" k 16 n 12 groups 1
// IR-NEXT:   rtile.row_blocks rows 64 {

// C:      static TIGRIS_BAND void tg_pw_16_16
// C:          if (yl2 == xl2 && yn2 == 5 && xn2 == 5) {
// C-NEXT:       TIGRIS_BOUND(yl1 >= xl1 && yl1 + yn1 <= xl1 + xn1);
// C-NEXT:       tg_{{.*}}(xn + (long)(yl1 - xl1) * 80, 16, yn1 * 5, bp, bias, yn, 16);

// int8 on AVX-512 VNNI: the packed rows' kernel states the same merge.
// IR8:      nn.conv {{.*}}kernel = array<i64: 1, 1>
// IR8-NEXT: rtile.kernel %{{.*}} dot "vpdpbusd" k 16 n 16 groups 1
// IR8-NEXT:   rtile.row_blocks rows {{[0-9]+}} merge 5 {
// IR8-NEXT:     rtile.pack_a "rows"

// A merge the memrefs do not hold, or on a kernel whose driver has none to
// follow, is one diagnostic naming the op.
// WRONG: nn.conv: its rtile.row_blocks merge 4 runs the band's rows as one, but its memrefs' row strides (80 and 80 elements) are not whole rows of 4 pixels of 16 and 16 channels
// NOTPW: nn.conv: its rtile.row_blocks state merge 5, which only a pointwise convolution's kernel runs
