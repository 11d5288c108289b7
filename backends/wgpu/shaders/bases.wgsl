// Affine bases from the host's form (COORDS Fp elements of RAW_W u32 words,
// Montgomery with H = 2^(32·RAW_W): blst's for BLS12-381, halo2curves' for
// BN254; x, y for G1; x.c0, x.c1, y.c0, y.c1 for G2) to the MSM's (COORDS·
// Fp_NL limbs, R = 2^(bits·Fp_NL)): repack the words into limbs
// (Fp_from_words, generated), then one Montgomery multiplication by FP_CONV
// = R²/H mod p moves the factor H to R. Zero stays zero.
struct Params { n: u32, p1: u32, p2: u32, p3: u32, p4: u32, p5: u32, p6: u32, p7: u32 }

@group(0) @binding(0) var<uniform> prm: Params;
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read_write> bases: array<u32>;

@compute @workgroup_size(256)
fn convert(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = g.x + g.y * nw.x * 256u;
  if (i >= prm.n) { return; }
  for (var c = 0u; c < COORDS; c++) {
    var w: array<u32, RAW_W>;
    for (var k = 0u; k < RAW_W; k++) { w[k] = raw[RAW_W * (COORDS * i + c) + k]; }
    let v = Fp_mul(Fp_from_words(w), FP_CONV);
    for (var k = 0u; k < Fp_NL; k++) { bases[Fp_NL * (COORDS * i + c) + k] = v[k]; }
  }
}
