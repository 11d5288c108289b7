// Radix-2 NTT over Fr (needs the Fr field code of field.rs). Elements are 8 u32 limbs.
struct Params { n: u32, log_n: u32, half: u32, stride: u32, flag: u32, count: u32, p0: u32, p1: u32 }

@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;

fn ld(i: u32) -> Fr_t { let o = 8u * i; return Fr_t(data[o], data[o + 1u], data[o + 2u], data[o + 3u], data[o + 4u], data[o + 5u], data[o + 6u], data[o + 7u]); }
fn st(i: u32, v: Fr_t) { for (var k = 0u; k < 8u; k++) { data[8u * i + k] = v[k]; } }
fn tw(i: u32) -> Fr_t { let o = 8u * i; return Fr_t(table[o], table[o + 1u], table[o + 2u], table[o + 3u], table[o + 4u], table[o + 5u], table[o + 6u], table[o + 7u]); }
fn rev(i: u32) -> u32 { return select(reverseBits(i) >> (32u - prm.log_n), 0u, prm.log_n == 0u); }
// Thread index over a 2-D grid of 256-wide workgroups.
fn tid(g: vec3<u32>, nw: vec3<u32>) -> u32 { return g.x + g.y * nw.x * 256u; }

@compute @workgroup_size(256)
fn bit_reverse(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = tid(g, nw);
  if (i >= prm.n) { return; }
  let j = rev(i);
  if (i < j) { let a = ld(i); st(i, ld(j)); st(j, a); }
}

// One stage of n/2 butterflies on blocks of 2·half; twiddle ω^(j·stride).
// flag = 1: Cooley–Tukey (a + w·b, a − w·b); 0: Gentleman–Sande (a + b, (a − b)·w).
@compute @workgroup_size(256)
fn stage(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let k = tid(g, nw);
  if (k >= prm.n / 2u) { return; }
  let j = k % prm.half;
  let i0 = (k / prm.half) * 2u * prm.half + j;
  let i1 = i0 + prm.half;
  let w = tw(j * prm.stride);
  let a = ld(i0); let b = ld(i1);
  if (prm.flag == 1u) {
    let wb = Fr_mul(w, b);
    st(i0, Fr_add(a, wb)); st(i1, Fr_sub(a, wb));
  } else {
    st(i0, Fr_add(a, b)); st(i1, Fr_mul(Fr_sub(a, b), w));
  }
}

// data[p] ·= table[idx(p)], idx the natural index of p (flag = 1: p is bit-reversed).
@compute @workgroup_size(256)
fn scale(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let p = tid(g, nw);
  if (p >= prm.n) { return; }
  let i = select(p, rev(p), prm.flag == 1u);
  st(p, Fr_mul(ld(p), tw(i)));
}
