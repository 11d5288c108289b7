// The quotient's pointwise kernels over one piece of a, b, c (needs the Fr
// field code of field.rs): the satisfaction check and (a·b − c)·z.
struct Params { count: u32, base: u32, p0: u32, p1: u32, z0: vec4<u32>, z1: vec4<u32> }

@group(0) @binding(0) var<uniform> prm: Params;
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> first: atomic<u32>;

fn tid(g: vec3<u32>, nw: vec3<u32>) -> u32 { return g.x + g.y * nw.x * 256u; }

fn ld_a(i: u32) -> Fr_t {
  let o = 8u * i;
  return Fr_t(a[o], a[o + 1u], a[o + 2u], a[o + 3u], a[o + 4u], a[o + 5u], a[o + 6u], a[o + 7u]);
}
fn ld_b(i: u32) -> Fr_t {
  let o = 8u * i;
  return Fr_t(b[o], b[o + 1u], b[o + 2u], b[o + 3u], b[o + 4u], b[o + 5u], b[o + 6u], b[o + 7u]);
}
fn ld_c(i: u32) -> Fr_t {
  let o = 8u * i;
  return Fr_t(c[o], c[o + 1u], c[o + 2u], c[o + 3u], c[o + 4u], c[o + 5u], c[o + 6u], c[o + 7u]);
}

// The smallest row base + i (i < count) with a·b ≠ c into `first`. Values
// are reduced below r, so equality is equality of words.
@compute @workgroup_size(256)
fn check(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = tid(g, nw);
  if (i >= prm.count) { return; }
  let p = Fr_mul(ld_a(i), ld_b(i));
  let q = ld_c(i);
  let d = (p[0] ^ q[0]) | (p[1] ^ q[1]) | (p[2] ^ q[2]) | (p[3] ^ q[3])
    | (p[4] ^ q[4]) | (p[5] ^ q[5]) | (p[6] ^ q[6]) | (p[7] ^ q[7]);
  if (d != 0u) { atomicMin(&first, prm.base + i); }
}

// a ← (a·b − c)·z, z = 1/Z on the coset.
@compute @workgroup_size(256)
fn combine(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = tid(g, nw);
  if (i >= prm.count) { return; }
  let z = Fr_t(prm.z0.x, prm.z0.y, prm.z0.z, prm.z0.w, prm.z1.x, prm.z1.y, prm.z1.z, prm.z1.w);
  let v = Fr_mul(Fr_sub(Fr_mul(ld_a(i), ld_b(i)), ld_c(i)), z);
  let o = 8u * i;
  a[o] = v[0]; a[o + 1u] = v[1]; a[o + 2u] = v[2]; a[o + 3u] = v[3];
  a[o + 4u] = v[4]; a[o + 5u] = v[5]; a[o + 6u] = v[6]; a[o + 7u] = v[7];
}
