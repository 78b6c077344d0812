// RUN: %python %S/../../zoo_cli.py build ds_cnn --small -o %t.onnx
// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t8.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena -o %t.mlir
// RUN: filecheck %s --check-prefix=IR < %t.mlir
// RUN: tigris-opt %t.mlir | filecheck %s --check-prefix=IR
// RUN: tigris-opt %t.mlir -t c | filecheck %s --check-prefix=C
// RUN: sed -e 's/pixels = 5 : i64/pixels = 4 : i64/' %t.mlir | tigris-opt -t c | filecheck %s --check-prefix=C4
// RUN: sed -e 's/rtile.depthwise = {[^}]*}/rtile.direct = "asked"/' %t.mlir | tigris-opt -t c | filecheck %s --check-prefix=CDIRECT
// RUN: sed -e 's/kernel = "vector"/kernel = "dsp"/' %t.mlir > %t.dsp.mlir
// RUN: not tigris-opt %t.dsp.mlir -t c 2>&1 | filecheck %s --check-prefix=NOTDSP
// RUN: sed -e 's/lanes = \([0-9]*\) : i64, vectors/lanes = 3 : i64, vectors/' %t.mlir > %t.lanes.mlir
// RUN: not tigris-opt %t.lanes.mlir -t c 2>&1 | filecheck %s --check-prefix=LANES
// RUN: sed -e 's/rtile.depthwise = {[^}]*}, //' %t.mlir > %t.none.mlir
// RUN: not tigris-opt %t.none.mlir -t c 2>&1 | filecheck %s --check-prefix=DWMISSING
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m4 --lower-gebp --plan-arena -o %tm4.mlir
// RUN: filecheck %s --check-prefix=M4 < %tm4.mlir
// RUN: tigris-opt %tm4.mlir -t c | filecheck %s --check-prefix=CM4
// RUN: sed -e 's/, rtile.direct = "[^"]*"//' %tm4.mlir > %tm4.none.mlir
// RUN: not tigris-opt %tm4.none.mlir -t c 2>&1 | filecheck %s --check-prefix=UNSTATED
// RUN: tigris-opt %t8.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m55 --lower-gebp --plan-arena -o %t55.mlir
// RUN: filecheck %s --check-prefix=M55 < %t55.mlir
// RUN: tigris-opt %t55.mlir -t c | filecheck %s --check-prefix=CM55
// RUN: sed -e 's/kernel = "mve"/kernel = "vector"/' %t55.mlir > %t55.vec.mlir
// RUN: not tigris-opt %t55.vec.mlir -t c 2>&1 | filecheck %s --check-prefix=M55VEC
// RUN: tigris-opt %t8.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=X8

// The kernel decisions the C printer used to make while printing are
// lower-gebp's, stated in the IR (a depthwise convolution's kernel,
// (`rtile.depthwise`: which kernel, its channels per vector, the channel
// vectors one step accumulates, the output pixels one step covers; and, on
// every convolution or matrix product whose band runs the direct loops, that
// decision and its reason, `rtile.direct`). The printer follows them and
// refuses, naming the op, what is missing or what the target does not run.

// x86 (avx2), float32 (DS-CNN small, 16 channels): the vector kernel in the
// C's float vectors (their lanes are the compiling host's), two channel
// vectors a step (a 3x3 kernel's 18 weight vectors stay in registers), blocks
// of 8 pixels or, as here, of the output's width where it is narrower (25 x 5
// pixels: a row is one whole block of 5). A row's last partial block, where the
// row holds a whole one, is the whole block ending with the row.
// IR:      nn.conv {{.*}}rtile.depthwise = {kernel = "vector", lanes = {{[0-9]+}} : i64, vectors = 2 : i64, pixels = 5 : i64}{{.*}}group = 16
// IR-NOT:  rtile.direct
// C:       static TIGRIS_BAND void tg_dw_3x3s1x1_16(
// C:           for (int ox0 = yl2; ox0 < yl2 + yn2; ox0 += 5) {
// C:           if (pn < 5 && yn2 >= 5) { ox0 = yl2 + yn2 - 5; pn = 5; }
// C:           const float *tq[45];

// Another pixel block stated in the IR is another kernel.
// C4:      static TIGRIS_BAND void tg_dw_3x3s1x1_16(
// C4:          for (int ox0 = yl2; ox0 < yl2 + yn2; ox0 += 4) {
// C4:          const float *tq[36];

// The direct loops stated on the depthwise convolution: the plain C loop
// nest over global indices, no depthwise kernel.
// CDIRECT-NOT: tg_dw_
// CDIRECT:     static TIGRIS_BAND void tg_conv_3x3_16_16(
// CDIRECT-NOT: tg_dw_

// NOTDSP: nn.conv: its rtile.depthwise states the dsp kernel; a float32 depthwise convolution of target 'host' runs the vector one
// LANES:  nn.conv: its rtile.depthwise states 3 lanes; the vector kernel of float32 runs
// DWMISSING:  nn.conv: this depthwise convolution states no kernel (rtile.depthwise): run --lower-gebp

// Cortex-M4, float32: no register-tiled float kernel (the target tiles int8
// only), so every convolution and the Gemm run the direct loops, stated;
// without the statement the printer refuses.
// M4:      nn.conv {{.*}}rtile.target = "cortex-m4", rtile.direct = "no register-tiled kernel"{{.*}}kernel = array<i64: 10, 4>
// M4:      nn.conv {{.*}}rtile.depthwise = {kernel = "vector", {{.*}}group = 16
// M4:      nn.conv {{.*}}rtile.direct = "no register-tiled kernel"{{.*}}kernel = array<i64: 1, 1>
// M4:      nn.gemm {{.*}}rtile.direct = "no register-tiled kernel"
// CM4:     static TIGRIS_BAND void tg_conv_10x4_1_16(
// CM4:     static TIGRIS_BAND void tg_mat_16(
// UNSTATED:  nn.conv: its band runs no kernel (no register-tiled kernel), but the IR does not state its direct loops (rtile.direct): run --lower-gebp

// Cortex-M55, int8: the depthwise convolutions run Helium's kernel, eight
// channels a step; another kernel than the target's is refused.
// M55:     nn.conv {{.*}}rtile.depthwise = {kernel = "mve", lanes = 8 : i64, vectors = 1 : i64, pixels = 1 : i64}
// CM55:    #ifdef TG_MVE
// M55VEC:  nn.conv: its rtile.depthwise states the vector kernel; an int8 depthwise convolution of target 'cortex-m55' runs the mve one

// x86 int8: eight int32 lanes, four vectors a step, one pixel.
// X8:      nn.conv {{.*}}rtile.depthwise = {kernel = "vector", lanes = 8 : i64, vectors = 4 : i64, pixels = 1 : i64}
