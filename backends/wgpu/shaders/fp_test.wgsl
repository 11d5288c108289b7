// Test kernel (shader.rs tests): per pair (a, b) of inputs, a + b, a − b,
// a·b, a², is_zero(a).
@group(0) @binding(0) var<storage, read> inp: array<u32>;
@group(0) @binding(1) var<storage, read_write> outp: array<u32>;
fn ld_in(o: u32) -> Fp_t { var r: Fp_t; for (var k = 0u; k < Fp_NL; k++) { r[k] = inp[o + k]; } return r; }
fn st_out(o: u32, v: Fp_t) { for (var k = 0u; k < Fp_NL; k++) { outp[o + k] = v[k]; } }
@compute @workgroup_size(64)
fn fp_ops(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if (i >= arrayLength(&inp) / (2u * Fp_NL)) { return; }
  let a = ld_in(2u * Fp_NL * i); let b = ld_in(2u * Fp_NL * i + Fp_NL);
  let o = (4u * Fp_NL + 1u) * i;
  st_out(o, Fp_add(a, b)); st_out(o + Fp_NL, Fp_sub(a, b));
  st_out(o + 2u * Fp_NL, Fp_mul(a, b)); st_out(o + 3u * Fp_NL, Fp_sqr(a));
  outp[o + 4u * Fp_NL] = select(0u, 1u, Fp_is_zero(a));
}
