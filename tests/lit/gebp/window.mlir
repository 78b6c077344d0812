// RUN: %python %S/../../zoo_cli.py build resnet --small -o %t.onnx
// RUN: %python %S/../../zoo_cli.py build resnet --small --int8 -o %t8.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=zen4 --lower-gebp=winograd=false --plan-arena -o %t.mlir
// RUN: filecheck %s --check-prefix=IR < %t.mlir
// RUN: tigris-opt %t.mlir -t c | filecheck %s --check-prefix=CW
// RUN: tigris-opt %t8.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=zen4 --lower-gebp --plan-arena -o %t8.mlir
// RUN: filecheck %s --check-prefix=IR8 < %t8.mlir
// RUN: sed -e 's/rtile.pack_a "im2col" kp 72 into ui8/rtile.pack_a "window" kp 72 into ui8/' %t8.mlir > %t8.bad.mlir
// RUN: not tigris-opt %t8.bad.mlir -t c 2>&1 | filecheck %s --check-prefix=INT8

// A float32 convolution of one group whose kernel rows are runs of at least
// 16 input values (kw * c: 3 x 8 here), asked not to run Winograd's F(4, 3)
// (winograd=false; see winograd.mlir), reads its pixels' windows in place
// (lower-gebp's `window` packing): one K block per kernel row (step kw * c =
// 24 of k = 72), pixel i's run sw * c values after pixel i - 1's; only the
// pixels whose window leaves the image's width are gathered, into the
// scratch. The stem (3 input channels: runs of 9) and the 1x1 stride-2
// projection of 8 channels keep their gathered im2col rows. int8 kernels
// gather: their rows are packed as the instruction takes them.

// IR:      nn.conv {{.*}}kernel = array<i64: 3, 3>
// IR-NEXT: rtile.kernel %{{.*}} dot "fma" k 27 n 8 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "im2col" kp 27 into f32
// IR-NEXT:     rtile.k_blocks k 27 step 27 {
// IR:      rtile.kernel %{{.*}} dot "fma" k 72 n 8 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "window" kp 72 into f32
// IR-NEXT:     rtile.k_blocks k 72 step 24 {
// IR:      rtile.kernel %{{.*}} dot "fma" k 144 n 16 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "window" kp 144 into f32
// IR-NEXT:     rtile.k_blocks k 144 step 48 {
// IR:      nn.conv {{.*}}kernel = array<i64: 1, 1>, strides = array<i64: 2, 2>
// IR-NEXT: rtile.kernel %{{.*}} dot "fma" k 8 n 16 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "im2col" kp 8 into f32

// The C: the window driver sweeps the panels per kernel row inside the image
// (B's rows rk[s], pixel i's run at pa[s * ps + i]), its first block from the
// bias, its last clamping; the band queues its pixels across output rows, 56
// at a time (`rows` of the row blocks): those whose window lies inside the
// image by pointer into the held rows, the others gathered into a slot of buf;
// the queue runs when full, when the kernel rows inside the image change, and
// at the end.
// CW:      static void [[WIN:tg_fwin_72x8]](const float *const *pa, long ps, const int *rk, int ns, int m,
// CW:        for (int s = 0; s < ns; ++s) {
// CW-NEXT:     const float *const *a = pa + s * ps;
// CW:          const int kc = 24;
// CW:          const int first = s == 0;
// CW-NEXT:     const int fin = s == ns - 1;
// CW:            const float *b = bp + (long)j0 * 72 + (long)k0 * 8;
// CW:            tg_fmk8w_8x1_8_clamp(a + i, b, y + i, j0, kc, bias + j0, first, fin);
// CW:          if (rok[ky]) { ra[ns] = xn + roff[ky]; rk[ns] = ky * 24; ++ns; }
// CW-NEXT:   if (np && (ns != pns || memcmp(rk, prk, sizeof(int) * ns) != 0)) {
// CW-NEXT:     [[WIN]](pa, 56, prk, pns, np, bp, bias, py);
// CW:          if (ox >= 1 && ox <= 30) {
// CW:              pa[s * 56 + np] = ra[s] + (long)(ix0 - xl2) * 8;
// CW:            for (int s = 0; s < ns; ++s) pa[s * 56 + np] = d + rk[s];
// CW:          if (++np == 56) {
// CW-NEXT:       [[WIN]](pa, 56, prk, pns, np, bp, bias, py);
// CW:        if (np) [[WIN]](pa, 56, prk, pns, np, bp, bias, py);

// IR8:      rtile.kernel %{{.*}} dot "vpdpbusd" k 72 n 8 groups 1
// IR8-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR8-NEXT:     rtile.pack_a "im2col" kp 72 into ui8
// IR8-NOT:  "window"

// INT8: nn.conv: its rtile.kernel reads its pixels' windows in place for 1 group(s); the band gathers im2col rows for 1
// INT8-NOT: Traceback
