// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: %roundtrip-generic %s | filecheck %s --check-prefix=GENERIC
// RUN: %roundtrip-generic %s | tigris-opt | filecheck %s

// The geometry prints in the model's display form; the cover is the
// decomposition register_tile.cover gives: full passes, a column tail whose
// last vector is partial (3 of 8 lanes) and a one-row band.

// CHECK-LABEL: func.func @gebp_f32
// CHECK: %{{.*}} = rtile.gebp %a, %b geom <rm4 rn3 lanes8> cover <m_full 96 n_full 72 tail [8, 3] band 1> : tensor<97x61xf32>, tensor<61x83xf32> -> tensor<97x83xf32>
func.func @gebp_f32(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>) -> tensor<97x83xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn3 lanes8> cover <m_full 96 n_full 72 tail [8, 3] band 1> : tensor<97x61xf32>, tensor<61x83xf32> -> tensor<97x83xf32>
  func.return %c : tensor<97x83xf32>
}

// The generic form parses to the same op.
// CHECK-LABEL: func.func @generic
// CHECK: rtile.gebp %a, %b geom <rm4 rn1 lanes16> cover <m_full 3136 n_full 16 tail [8] band 0> : tensor<3136x144xf32>, tensor<144x24xf32> -> tensor<3136x24xf32>
func.func @generic(%a: tensor<3136x144xf32>, %b: tensor<144x24xf32>) -> tensor<3136x24xf32> {
  %c = "rtile.gebp"(%a, %b) <{geom = #rtile.geom<rm4 rn1 lanes16>, cover = #rtile.cover<m_full 3136 n_full 16 tail [8] band 0>}> : (tensor<3136x144xf32>, tensor<144x24xf32>) -> tensor<3136x24xf32>
  func.return %c : tensor<3136x24xf32>
}

// int8 operands accumulate into i32; a tail-free site has an empty tail.
// CHECK-LABEL: func.func @gebp_i8
// CHECK: rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 784 n_full 32 tail [] band 0> : tensor<784x192xi8>, tensor<192x32xi8> -> tensor<784x32xi32>
func.func @gebp_i8(%a: tensor<784x192xi8>, %b: tensor<192x32xi8>) -> tensor<784x32xi32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 784 n_full 32 tail [] band 0> : tensor<784x192xi8>, tensor<192x32xi8> -> tensor<784x32xi32>
  func.return %c : tensor<784x32xi32>
}

// The attributes stand alone too.
// CHECK-LABEL: func.func @attrs
// CHECK-SAME: rtile.geom = #rtile.geom<rm1 rn6 lanes16>
// CHECK-SAME: rtile.cover = #rtile.cover<m_full 1 n_full 960 tail [16, 16, 8] band 0>
func.func @attrs() attributes {rtile.geom = #rtile.geom<rm1 rn6 lanes16>, rtile.cover = #rtile.cover<m_full 1 n_full 960 tail [16, 16, 8] band 0>} {
  func.return
}

// The register-tiled kernel of a band's matrix product (what lower-gebp
// places beside the nn op): row blocks, the im2col gather into its scratch,
// the K blocks, the full panels and the column tail's panel with their
// micro-tiles and row edge tiles, the epilogue.
// CHECK-LABEL: func.func @kernel
// CHECK:      rtile.kernel %y dot "fma" k 40 n 19 groups 1 : tensor<1x25x5x19xf32> {
// CHECK-NEXT:   rtile.row_blocks rows 64 {
// CHECK-NEXT:     rtile.pack_a "im2col" kp 40 into f32 scratch 10240
// CHECK-NEXT:     rtile.k_blocks k 40 step 40 {
// CHECK-NEXT:       rtile.panels cols 0 to 16 width 16 {
// CHECK-NEXT:         rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
// CHECK-NEXT:       }
// CHECK-NEXT:       rtile.panels cols 16 to 19 width 8 {
// CHECK-NEXT:         rtile.micro <rm4 rn1 lanes8> last 3 edges [1, 2, 3] unroll 4
// CHECK:        rtile.epilogue "bias"
func.func @kernel(%y: tensor<1x25x5x19xf32>) {
  rtile.kernel %y dot "fma" k 40 n 19 groups 1 : tensor<1x25x5x19xf32> {
    rtile.row_blocks rows 64 {
      rtile.pack_a "im2col" kp 40 into f32 scratch 10240
      rtile.k_blocks k 40 step 40 {
        rtile.panels cols 0 to 16 width 16 {
          rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
        }
        rtile.panels cols 16 to 19 width 8 {
          rtile.micro <rm4 rn1 lanes8> last 3 edges [1, 2, 3] unroll 4
        }
      }
    }
    rtile.epilogue "bias"
  }
  func.return
}

// int8: the rows packed as int16 (x - zp), no K blocks, a requantizing epilogue.
// CHECK-LABEL: func.func @kernel_i8
// CHECK:      rtile.kernel %y dot "pmaddwd" k 16 n 16 groups 1 : tensor<1x5x5x16xi8> {
// CHECK-NEXT:   rtile.row_blocks rows 64 {
// CHECK-NEXT:     rtile.pack_a "rows" kp 16 into i16 scratch 2048
// CHECK-NEXT:     rtile.panels cols 0 to 16 width 16 {
// CHECK:        rtile.epilogue "bias_requant"
func.func @kernel_i8(%y: tensor<1x5x5x16xi8>) {
  rtile.kernel %y dot "pmaddwd" k 16 n 16 groups 1 : tensor<1x5x5x16xi8> {
    rtile.row_blocks rows 64 {
      rtile.pack_a "rows" kp 16 into i16 scratch 2048
      rtile.panels cols 0 to 16 width 16 {
        rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
      }
    }
    rtile.epilogue "bias_requant"
  }
  func.return
}

// A pointwise convolution's kernel whose calls cover a band's rows at once:
// both memrefs hold whole rows of 5 pixels (`merge 5`); the generic form
// carries it as the optional `merge` property.
// CHECK-LABEL: func.func @kernel_merge
// CHECK:      rtile.kernel %y dot "fma" k 16 n 16 groups 1 : tensor<1x5x5x16xf32> {
// CHECK-NEXT:   rtile.row_blocks rows 64 merge 5 {
// CHECK-NEXT:     rtile.k_blocks k 16 step 16 {

// GENERIC: "rtile.row_blocks"() <{rows = 64 : i64, merge = 5 : i64}>
func.func @kernel_merge(%y: tensor<1x5x5x16xf32>) {
  rtile.kernel %y dot "fma" k 16 n 16 groups 1 : tensor<1x5x5x16xf32> {
    rtile.row_blocks rows 64 merge 5 {
      rtile.k_blocks k 16 step 16 {
        rtile.panels cols 0 to 16 width 16 {
          rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
        }
      }
    }
    rtile.epilogue "bias"
  }
  func.return
}

// int8 on AVX-512 VNNI: the rows packed as unsigned bytes holding x - zp + 128
// (`offset 128`, int8 inputs of zero point 0).
// CHECK-LABEL: func.func @kernel_vnni
// CHECK:      rtile.kernel %y dot "vpdpbusd" k 16 n 16 groups 1 : tensor<1x5x5x16xi8> {
// CHECK-NEXT:   rtile.row_blocks rows 64 merge 5 {
// CHECK-NEXT:     rtile.pack_a "rows" kp 16 into ui8 offset 128 scratch 1024
// GENERIC: "rtile.pack_a"() <{kind = "rows", kp = 16 : i64, into = ui8, offset = 128 : i64, scratch = 1024 : i64}>
func.func @kernel_vnni(%y: tensor<1x5x5x16xi8>) {
  rtile.kernel %y dot "vpdpbusd" k 16 n 16 groups 1 : tensor<1x5x5x16xi8> {
    rtile.row_blocks rows 64 merge 5 {
      rtile.pack_a "rows" kp 16 into ui8 offset 128 scratch 1024
      rtile.panels cols 0 to 16 width 16 {
        rtile.micro <rm4 rn1 lanes16> last 16 edges [1, 2, 3] unroll 4
      }
    }
    rtile.epilogue "bias_requant"
  }
  func.return
}
