// CSR SpMV over Fr for Groth16's a, b, c = A·w, B·w, C·w (needs the Fr
// field code of field.rs), one matrix chunk per dispatch (spmv.rs).
// shader.rs prepends SEG and ONE and writes the bindings — prm, starts (row
// starts relative to the chunk, then its long rows), cols, vals, out (the
// domain piece the chunk's rows fall in), inp and the private witness in
// pieces — with the witness accessor `wit`.
struct Params { rows: u32, out_base: u32, round: u32, count: u32, long_at: u32, ni: u32, aux_log: u32, p1: u32 }

// Thread index over a 2-D grid of 256-wide workgroups.
fn tid(g: vec3<u32>, nw: vec3<u32>) -> u32 { return g.x + g.y * nw.x * 256u; }

fn ld_out(i: u32) -> Fr_t {
  let o = 8u * i;
  return Fr_t(out[o], out[o + 1u], out[o + 2u], out[o + 3u], out[o + 4u], out[o + 5u], out[o + 6u], out[o + 7u]);
}
fn st_out(i: u32, v: Fr_t) {
  let o = 8u * i;
  out[o] = v[0]; out[o + 1u] = v[1]; out[o + 2u] = v[2]; out[o + 3u] = v[3];
  out[o + 4u] = v[4]; out[o + 5u] = v[5]; out[o + 6u] = v[6]; out[o + 7u] = v[7];
}

// Entry k's term: the witness value, times the coefficient unless the
// column's ONE bit says it is one.
fn term(k: u32) -> Fr_t {
  let c = cols[k];
  let x = wit(c & ~ONE);
  if ((c & ONE) != 0u) { return x; }
  let o = 8u * k;
  return Fr_mul(x, Fr_t(vals[o], vals[o + 1u], vals[o + 2u], vals[o + 3u], vals[o + 4u], vals[o + 5u], vals[o + 6u], vals[o + 7u]));
}

// Σ term(k) for k in [lo, hi): at most SEG iterations (lavapipe ends a
// thread's loops silently after 65 535).
fn sum(lo: u32, hi: u32) -> Fr_t {
  var acc = Fr_t();
  for (var k = lo; k < hi; k++) { acc = Fr_add(acc, term(k)); }
  return acc;
}

// Row r of the chunk, its first SEG entries: out[out_base + r].
@compute @workgroup_size(256)
fn rows(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let r = tid(g, nw);
  if (r >= prm.rows) { return; }
  let lo = starts[r];
  st_out(prm.out_base + r, sum(lo, min(starts[r + 1u], lo + SEG)));
}

// Pass `round` ≥ 1 over the first `count` long rows (longest first, so
// those are the rows still going): entries round·SEG … of each, added to
// its sum. One thread per row: no two threads write one element.
@compute @workgroup_size(256)
fn long_rows(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let t = tid(g, nw);
  if (t >= prm.count) { return; }
  let r = starts[prm.long_at + t];
  let lo = starts[r] + prm.round * SEG;
  let i = prm.out_base + r;
  st_out(i, Fr_add(ld_out(i), sum(lo, min(starts[r + 1u], lo + SEG))));
}
