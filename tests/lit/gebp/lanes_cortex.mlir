// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t.onnx
// RUN: tigris-opt %t.onnx --requant=mode=fixed --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m7 --lower-gebp --plan-arena | filecheck %s --check-prefix=M7
// RUN: tigris-opt %t.onnx --requant=mode=fixed --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m55 --lower-gebp --plan-arena | filecheck %s --check-prefix=M55
// RUN: tigris-opt %t.onnx --requant=mode=fixed --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=X86
// RUN: tigris-opt %t.onnx --requant=mode=fixed --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m4 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=CM4
// RUN: tigris-opt %t.onnx --mcpu cortex-m7 --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile --lower-gebp --plan-arena | filecheck %s --check-prefix=MCPU
// RUN: tigris-opt %t.onnx --mcpu cortex-m7 --requant=mode=float --tile-stages=budget=64K | filecheck %s --check-prefix=MCPUFLOAT

// The int8 global average pool of DS-CNN on Cortex-M: lower-gebp states the
// SIMD unit its kernel runs on (rtile.lanes: the DSP extension on M7,
// Helium on M55) from the target gebp-tile wrote; an x86 target gets none.
// The C sums its positions' bytes in 16-bit halves on the DSP extension,
// with the portable loops under #else.

// M7:      nn.global_average_pool {{.*}}rtile.target = "cortex-m7", rtile.lanes = "dsp"
// M55:     nn.global_average_pool {{.*}}rtile.target = "cortex-m55", rtile.lanes = "mve"
// X86-NOT: rtile.lanes
// CM4:     static TIGRIS_BAND void tigris_gap
// CM4:     #ifdef TG_DSP
// CM4:     e0 = __sxtab16(e0, v0); o0 = tg_sxtab16r8(o0, v0);
// CM4:     #else

// --mcpu of an integer-only CPU alone selects fixed-point requantization
// (recorded in the IR), so the int8 kernels get their SIMD lanes; a requant
// pass in the pipeline keeps its own choice.
// MCPU:      nn.requant = "fixed"
// MCPU:      rtile.lanes = "dsp"
// MCPUFLOAT: nn.requant = "float"
// MCPUFLOAT-NOT: nn.requant = "fixed"
