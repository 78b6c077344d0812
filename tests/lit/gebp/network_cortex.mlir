// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m7 --lower-gebp --plan-arena | filecheck %s --check-prefix=IRM7
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m55 --lower-gebp --plan-arena | filecheck %s --check-prefix=IRM55
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m4 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=CM4
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m55 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=CM55

// The int8 DS-CNN (small) on Cortex-M: the int8 instruction is the CPU's.
// With the DSP extension (M4, M7) SMLAD on int16 pairs: A's rows (and the
// first convolution's im2col rows) are packed as int16, k rounded up to the
// four steps of one word of B, and the tile is four rows by two columns of
// int32 accumulators in general registers (the file of pairs the model sees);
// with Helium (M55) VMLADAVA on sixteen int8 steps: rows packed as signed
// bytes, k = 40 padded to 48.

// IRM7:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn1 lanes2>, {{.*}}rtile.target = "cortex-m7", kernel = array<i64: 10, 4>
// IRM7-NEXT: rtile.kernel %{{.*}} dot "smlad" k 40 n 16 groups 1
// IRM7-NEXT:   rtile.row_blocks rows 24 {
// IRM7-NEXT:     rtile.pack_a "im2col" kp 40 into i16 scratch 1920
// IRM7-NEXT:     rtile.panels cols 0 to 16 width 2 {
// IRM7-NEXT:       rtile.micro <rm4 rn1 lanes2> last 2 edges [1, 2, 3] unroll 1
// IRM7:      nn.conv {{.*}}kernel = array<i64: 1, 1>
// IRM7-NEXT: rtile.kernel %{{.*}} dot "smlad" k 16 n 16 groups 1
// IRM7-NEXT:   rtile.row_blocks rows 64 merge 5 {
// IRM7-NEXT:     rtile.pack_a "rows" kp 16 into i16 scratch 2048

// IRM55:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm3 rn1 lanes2>, {{.*}}rtile.target = "cortex-m55", kernel = array<i64: 10, 4>
// IRM55-NEXT: rtile.kernel %{{.*}} dot "vmladava" k 40 n 16 groups 1
// IRM55-NEXT:   rtile.row_blocks rows 42 {
// IRM55-NEXT:     rtile.pack_a "im2col" kp 48 into si8 offset 11 scratch 2016
// IRM55-NEXT:     rtile.panels cols 0 to 16 width 2 {
// IRM55-NEXT:       rtile.micro <rm3 rn1 lanes2> last 2 edges [1, 2] unroll 1

// CM4:     #define TG_DSP 1
// CM4:     void tg_dmk_4x2_2(
// CM4:       c0_0 = __smlad(e, w0, c0_0);
// CM4:       const int32_t w1 = tg_sxtb16r8(tg_ldw(b + 4));
// CM4:     static TG_INORDER void tg_agebp_40x16(
// CM4-NOT: vmladavaq_s8

// CM55:    #define TG_MVE 1
// CM55:    void tg_mmk_3x2_2(
// CM55:      c0_0 = vmladavaq_s8(c0_0, a0, b0);
// CM55:    dt[ci] = (int8_t)s[ci];
// CM55-NOT: __smlad
