// RUN: %python %S/../../zoo_cli.py build mobilenet_v2 --small -o %t.onnx
// RUN: tigris-opt %t.onnx --lower-to-loops=budget=64K --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR
// RUN: tigris-opt %t.onnx --lower-to-loops=budget=64K --gebp-tile=target=avx2 --lower-gebp --plan-arena | tigris-opt | filecheck %s --check-prefix=IR
// RUN: tigris-opt %t.onnx --lower-to-loops=budget=64K --gebp-tile=target=avx2 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C

// A float32 depthwise convolution whose band is followed by an in-place Clip
// band takes the activation (lower-gebp): the convolution carries it as
// `rtile.clamp` and the Clip band is gone; the IR reads back. The C clamps
// the accumulator vectors before their store (and the scalar channel tail).

// IR:      loop.band
// IR:        nn.conv {{.*}}rtile.clamp = {lo = 0.000000e+00 : f32, hi = 6.000000e+00 : f32}, rtile.depthwise = {kernel = "vector", {{.*}}}, kernel = array<i64: 3, 3>, {{.*}}group = 16
// IR-NEXT:   loop.yield
// IR-NEXT: }
// IR-NOT:  nn.clip {{.*}}tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
// IR:      func.func private @main_untiled
// IR:      nn.clip {{.*}}tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>

// C:       #define TG_VLO(v, c)
// C:       #define TG_VHI(v, c)
// C:       void tg_dw_3x3s1x1_16(
// C:         TG_FMA(a0, TG_LD(t_[8] + c0 + 0), w8_0);
// C:         { const tg_vf c_ = {0x0.0p+0f,
// C-NEXT:      TG_VLO(a0, c_);
// C:         { const tg_vf c_ = {0x1.8000000000000p+2f,
// C-NEXT:      TG_VHI(a0, c_);
// C:         TG_ST(yp + c0 + 0, a0);
