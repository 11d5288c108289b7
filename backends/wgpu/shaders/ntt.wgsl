// Radix-2 NTT over Fr (needs the Fr field code of field.rs). Elements are 8 u32 limbs.
// shader.rs prepends TILE (elements of workgroup memory) and TILE_WG (threads per tile).
// shader.rs also writes the bindings — data and table in one buffer each,
// or each in pieces of 2^piece_log elements (ntt.rs), and prm — with their
// accessors ld, st (data) and tw (table).
struct Params { n: u32, log_n: u32, lo: u32, s: u32, flag: u32, w: u32, piece_log: u32, p1: u32 }

var<workgroup> tile: array<Fr_t, TILE>;

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

// A pass of `s` radix-2 stages whose butterflies pair indices differing in
// one bit of [lo, lo + s): the stages need no other element, so each
// workgroup loads its 2^w elements (w ≥ s) into workgroup memory once, runs
// the stages there and stores once. Its elements are the 2^s indices over
// those bits times 2^low consecutive values of the bits below (several
// columns when s < w; low = w − s ≤ lo, see ntt.rs `passes`), so that
// neighbouring threads load neighbouring elements where they can: local bits
// [0, low) are global bits [0, low), local bits [low, w) global bits
// [lo, lo + s); the workgroup index g fills global bits [low, lo) (its `gap`
// low bits) and those from lo + s up.
fn global_index(q: u32, g: u32, low: u32) -> u32 {
  let gap = prm.lo - low;
  return (q & ((1u << low) - 1u)) | ((g & ((1u << gap) - 1u)) << low) | ((q >> low) << prm.lo)
    | ((g >> gap) << (prm.lo + prm.s));
}

// Stages with global half-widths 2^lo … 2^(lo+s−1): ascending for
// Cooley–Tukey (flag = 1: a + w·b, a − w·b), descending for Gentleman–Sande
// (flag = 0: a + b, (a − b)·w); twiddle ω^(j·n/(2·half)), j = i0 mod half.
@compute @workgroup_size(TILE_WG)
fn stages(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let g = wg.x + wg.y * nw.x;
  if (g >= (prm.n >> prm.w)) { return; } // the whole workgroup leaves: barriers stay uniform
  let size = 1u << prm.w;
  let low = prm.w - prm.s;
  for (var q = l.x; q < size; q += TILE_WG) { tile[q] = ld(global_index(q, g, low)); }
  workgroupBarrier();
  for (var k = 0u; k < prm.s; k++) {
    let e = select(prm.s - 1u - k, k, prm.flag == 1u); // stage within the pass
    let lh = low + e; // log2 of the half-width in the tile…
    let gh = prm.lo + e; // …and in the whole array
    for (var b = l.x; b < size / 2u; b += TILE_WG) {
      let i0 = ((b >> lh) << (lh + 1u)) | (b & ((1u << lh) - 1u));
      let i1 = i0 + (1u << lh);
      let j = global_index(i0, g, low) & ((1u << gh) - 1u);
      let w = tw(j << (prm.log_n - 1u - gh));
      let a = tile[i0]; let c = tile[i1];
      if (prm.flag == 1u) {
        let wc = Fr_mul(w, c);
        tile[i0] = Fr_add(a, wc); tile[i1] = Fr_sub(a, wc);
      } else {
        tile[i0] = Fr_add(a, c); tile[i1] = Fr_mul(Fr_sub(a, c), w);
      }
    }
    workgroupBarrier();
  }
  for (var q = l.x; q < size; q += TILE_WG) { st(global_index(q, g, low), tile[q]); }
}

// data[p] ·= table[idx(p)], idx the natural index of p (flag = 1: p is bit-reversed).
@compute @workgroup_size(256)
fn scale(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let p = tid(g, nw);
  if (p >= prm.n) { return; }
  let i = select(p, rev(p), prm.flag == 1u);
  st(p, Fr_mul(ld(p), tw(i)));
}
