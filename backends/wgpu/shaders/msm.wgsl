// Pippenger MSM over G1 or G2 (needs the Fr code, and the coordinate field
// Fq — Fp for G1, Fp2 for G2 — from shader.rs: Fq_t, Fq_add, Fq_sub,
// Fq_neg, Fq_mul, Fq_sqr, Fq_is_zero, FQ_ONE, Fq_W words per element,
// XYZZ_W = 4·Fq_W, and the loads and stores of Fq elements). Signed c-bit
// windows: a digit d ∈ [−2^(c−1), 2^(c−1)] adds ±P to bucket |d| − 1 of its
// window. Buckets are XYZZ points (x = X/ZZ, y = Y/ZZZ; ZZ ≡ 0 is the
// identity). Bases are affine points in the device's Fp form (bases.wgsl),
// 2·Fq_W words, all-zero for the identity.
//
// Passes: digits (scalars out of Montgomery form, bucket sizes) → scan
// (bucket offsets, chunk offsets) → scatter (point indices sorted by bucket)
// → chunk (a bucket is cut into chunks of CHUNK points, one thread sums one
// chunk, so many equal scalars do not serialise on one thread) → tree (one
// pass per stride 1, FAN, FAN², …: chunk sums added FAN at a time, until
// chunk 0 holds the bucket) → reduce (weighted and plain sums of a short
// range of buckets per thread) → merge (FAN neighbouring ranges merged into
// one, between `partials` and `overflow`, until a few per window are left);
// the host merges those and adds the windows.
// shader.rs prepends CHUNK and FAN. Every loop of a thread stays short
// (lavapipe leaves loops after 65 535 iterations, see field.rs).
//
// Bucket id = w·nb + b. Chunk 0 of a bucket is summed into its slot of
// `buckets`; chunks r ≥ 1 into `overflow`, ocap slots per window, at
// ofirst(id) + r − 1.
struct Params { n: u32, c: u32, nwin: u32, nb: u32, nt: u32, span: u32, ocap: u32, stride: u32 }
struct Xyzz { x: Fq_t, y: Fq_t, zz: Fq_t, zzz: Fq_t }

@group(0) @binding(0) var<uniform> prm: Params;
@group(0) @binding(1) var<storage, read_write> scalars: array<u32>;
@group(0) @binding(2) var<storage, read> bases: array<u32>;
// Four tables of nwin·nb words, then nwin: bucket sizes, scatter cursors
// (ends of the buckets after scatter), first overflow slot per bucket,
// the most chunks of one bucket per window. One binding for all keeps the
// kernels within WebGPU's default of 8 storage buffers.
@group(0) @binding(3) var<storage, read_write> tables: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> sorted: array<u32>;
@group(0) @binding(5) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(6) var<storage, read_write> overflow: array<u32>;
@group(0) @binding(7) var<storage, read_write> partials: array<u32>;

fn cursor_ix(id: u32) -> u32 { return prm.nwin * prm.nb + id; }
fn ofirst_ix(id: u32) -> u32 { return 2u * prm.nwin * prm.nb + id; }
fn most_ix(w: u32) -> u32 { return 3u * prm.nwin * prm.nb + w; }
fn bucket_size(id: u32) -> u32 { return atomicLoad(&tables[id]); }
fn ofirst(id: u32) -> u32 { return atomicLoad(&tables[ofirst_ix(id)]); }
fn chunks_of(count: u32) -> u32 { return (count + CHUNK - 1u) / CHUNK; }

fn tid(g: vec3<u32>, nw: vec3<u32>) -> u32 { return g.x + g.y * nw.x * 256u; }

fn identity() -> Xyzz { return Xyzz(Fq_t(), Fq_t(), Fq_t(), Fq_t()); }

// P + (x, y) for an affine, non-identity (x, y) (madd-2008-s, with the
// doubling and P = −Q cases).
fn add_affine(p: Xyzz, x: Fq_t, y: Fq_t) -> Xyzz {
  if (Fq_is_zero(p.zz)) { return Xyzz(x, y, FQ_ONE, FQ_ONE); }
  let u2 = Fq_mul(x, p.zz); let s2 = Fq_mul(y, p.zzz);
  let pp_ = Fq_sub(u2, p.x); let r = Fq_sub(s2, p.y);
  if (Fq_is_zero(pp_)) {
    if (!Fq_is_zero(r)) { return identity(); }
    // 2·(x, y) (mdbl-2008-s-1).
    let u = Fq_add(y, y); let v = Fq_sqr(u); let w = Fq_mul(u, v); let s = Fq_mul(x, v);
    let x2 = Fq_sqr(x); let m = Fq_add(Fq_add(x2, x2), x2);
    let x3 = Fq_sub(Fq_sub(Fq_sqr(m), s), s);
    let y3 = Fq_sub(Fq_mul(m, Fq_sub(s, x3)), Fq_mul(w, y));
    return Xyzz(x3, y3, v, w);
  }
  let pp = Fq_sqr(pp_); let ppp = Fq_mul(pp_, pp); let q = Fq_mul(p.x, pp);
  let x3 = Fq_sub(Fq_sub(Fq_sqr(r), ppp), Fq_add(q, q));
  let y3 = Fq_sub(Fq_mul(r, Fq_sub(q, x3)), Fq_mul(p.y, ppp));
  return Xyzz(x3, y3, Fq_mul(p.zz, pp), Fq_mul(p.zzz, ppp));
}

// 2·P (dbl-2008-s-1, a = 0).
fn dbl(p: Xyzz) -> Xyzz {
  if (Fq_is_zero(p.zz)) { return p; }
  let u = Fq_add(p.y, p.y); let v = Fq_sqr(u); let w = Fq_mul(u, v); let s = Fq_mul(p.x, v);
  let x2 = Fq_sqr(p.x); let m = Fq_add(Fq_add(x2, x2), x2);
  let x3 = Fq_sub(Fq_sub(Fq_sqr(m), s), s);
  let y3 = Fq_sub(Fq_mul(m, Fq_sub(s, x3)), Fq_mul(w, p.y));
  return Xyzz(x3, y3, Fq_mul(v, p.zz), Fq_mul(w, p.zzz));
}

// P + Q (add-2008-s, complete over the identity and doubling cases).
fn add(p: Xyzz, q: Xyzz) -> Xyzz {
  if (Fq_is_zero(p.zz)) { return q; }
  if (Fq_is_zero(q.zz)) { return p; }
  let u1 = Fq_mul(p.x, q.zz); let u2 = Fq_mul(q.x, p.zz);
  let s1 = Fq_mul(p.y, q.zzz); let s2 = Fq_mul(q.y, p.zzz);
  let pp_ = Fq_sub(u2, u1); let r = Fq_sub(s2, s1);
  if (Fq_is_zero(pp_)) {
    if (Fq_is_zero(r)) { return dbl(p); }
    return identity();
  }
  let pp = Fq_sqr(pp_); let ppp = Fq_mul(pp_, pp); let qq = Fq_mul(u1, pp);
  let x3 = Fq_sub(Fq_sub(Fq_sqr(r), ppp), Fq_add(qq, qq));
  let y3 = Fq_sub(Fq_mul(r, Fq_sub(qq, x3)), Fq_mul(s1, ppp));
  return Xyzz(x3, y3, Fq_mul(Fq_mul(p.zz, q.zz), pp), Fq_mul(Fq_mul(p.zzz, q.zzz), ppp));
}

// ld_bk, ld_ov, ld_pa, ld_base and st_bk, st_ov, st_pa (Fq elements of
// buckets, overflow, partials, bases) are written out by shader.rs: see
// field.rs on lavapipe's loop limit.
fn ld_bucket(i: u32) -> Xyzz { let o = XYZZ_W * i; return Xyzz(ld_bk(o), ld_bk(o + Fq_W), ld_bk(o + 2u * Fq_W), ld_bk(o + 3u * Fq_W)); }
fn st_bucket(i: u32, p: Xyzz) { let o = XYZZ_W * i; st_bk(o, p.x); st_bk(o + Fq_W, p.y); st_bk(o + 2u * Fq_W, p.zz); st_bk(o + 3u * Fq_W, p.zzz); }
fn st_overflow(i: u32, p: Xyzz) { let o = XYZZ_W * i; st_ov(o, p.x); st_ov(o + Fq_W, p.y); st_ov(o + 2u * Fq_W, p.zz); st_ov(o + 3u * Fq_W, p.zzz); }
fn st_partial(i: u32, p: Xyzz) { let o = XYZZ_W * i; st_pa(o, p.x); st_pa(o + Fq_W, p.y); st_pa(o + 2u * Fq_W, p.zz); st_pa(o + 3u * Fq_W, p.zzz); }

fn ld_scalar(i: u32) -> Fr_t { let o = 8u * i; return Fr_t(scalars[o], scalars[o + 1u], scalars[o + 2u], scalars[o + 3u], scalars[o + 4u], scalars[o + 5u], scalars[o + 6u], scalars[o + 7u]); }

// Window w's c bits of the canonical scalar s.
fn window_bits(s: Fr_t, w: u32) -> u32 {
  let off = w * prm.c; let l = off / 32u; let sh = off % 32u;
  if (l >= 8u) { return 0u; }
  var v = s[l] >> sh;
  if (sh + prm.c > 32u && l + 1u < 8u) { v |= s[l + 1u] << (32u - sh); }
  return v & ((1u << prm.c) - 1u);
}

// Signed digit of window w given the carry in; returns (digit + 2^c, carry out)
// encoded as (magnitude | sign << 31, carry).
fn digit(s: Fr_t, w: u32, carry: u32) -> vec2<u32> {
  let raw = window_bits(s, w) + carry;
  let half = 1u << (prm.c - 1u);
  if (raw > half) { return vec2<u32>(((1u << prm.c) - raw) | 0x80000000u, 1u); }
  return vec2<u32>(raw, 0u);
}

@compute @workgroup_size(256)
fn digits(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = tid(g, nw);
  if (i >= prm.n) { return; }
  var one: Fr_t; one[0] = 1u;
  let s = Fr_mul(ld_scalar(i), one); // out of Montgomery form
  for (var k = 0u; k < 8u; k++) { scalars[8u * i + k] = s[k]; }
  var carry = 0u;
  for (var w = 0u; w < prm.nwin; w++) {
    let d = digit(s, w, carry); carry = d.y;
    let m = d.x & 0x7fffffffu;
    if (m != 0u) { atomicAdd(&tables[w * prm.nb + m - 1u], 1u); }
  }
}

var<workgroup> sums: array<u32, 256>;
var<workgroup> extra: array<u32, 256>;
var<workgroup> most: array<u32, 256>;

// Overflow chunks of a bucket of `count` points.
fn extra_chunks(count: u32) -> u32 { return select(0u, chunks_of(count) - 1u, count != 0u); }

// Workgroup w, over the buckets of window w: cursor = w·n + Σ_{b' < b} counts,
// ofirst = Σ_{b' < b} extra_chunks (Hillis–Steele scans of per-thread sums),
// most = the largest chunk count.
@compute @workgroup_size(256)
fn scan(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>) {
  let w = wg.x; let t = l.x;
  let per = (prm.nb + 255u) / 256u;
  let lo = min(t * per, prm.nb); let hi = min(lo + per, prm.nb);
  var s = 0u; var x = 0u; var m = 0u;
  for (var b = lo; b < hi; b++) {
    let c = bucket_size(w * prm.nb + b);
    s += c; x += extra_chunks(c); m = max(m, chunks_of(c));
  }
  sums[t] = s; extra[t] = x; most[t] = m;
  workgroupBarrier();
  for (var d = 1u; d < 256u; d <<= 1u) {
    var v = 0u; var e = 0u; var u = 0u;
    if (t >= d) { v = sums[t - d]; e = extra[t - d]; u = most[t - d]; }
    workgroupBarrier();
    sums[t] += v; extra[t] += e; most[t] = max(most[t], u);
    workgroupBarrier();
  }
  var acc = w * prm.n + sums[t] - s;
  var o = extra[t] - x;
  for (var b = lo; b < hi; b++) {
    let id = w * prm.nb + b;
    let c = bucket_size(id);
    atomicStore(&tables[cursor_ix(id)], acc);
    atomicStore(&tables[ofirst_ix(id)], o);
    acc += c; o += extra_chunks(c);
  }
  if (t == 255u) { atomicStore(&tables[most_ix(w)], most[255]); }
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = tid(g, nw);
  if (i >= prm.n) { return; }
  let s = ld_scalar(i);
  var carry = 0u;
  for (var w = 0u; w < prm.nwin; w++) {
    let d = digit(s, w, carry); carry = d.y;
    let m = d.x & 0x7fffffffu;
    if (m != 0u) {
      let pos = atomicAdd(&tables[cursor_ix(w * prm.nb + m - 1u)], 1u);
      sorted[pos] = i | (d.x & 0x80000000u);
    }
  }
}

// Chunk u of the dispatch: u < nwin·nb is chunk 0 of bucket u; past that,
// window w's overflow slot t is chunk r ≥ 1 of the last bucket whose first
// overflow slot is ≤ t (binary search). Returns (bucket id, r); r ≥ the
// bucket's chunks for a slot past the window's last chunk.
fn chunk_at(u: u32) -> vec2<u32> {
  let nbw = prm.nwin * prm.nb;
  if (u < nbw) { return vec2<u32>(u, 0u); }
  let w = (u - nbw) / prm.ocap; let t = (u - nbw) % prm.ocap;
  let base = w * prm.nb;
  var lo = 0u; var hi = prm.nb; // ofirst(base + lo) ≤ t < ofirst(base + hi) (hi = nb: +∞)
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (ofirst(base + mid) <= t) { lo = mid; } else { hi = mid; }
  }
  return vec2<u32>(base + lo, t - ofirst(base + lo) + 1u);
}

fn ld_chunk(id: u32, r: u32) -> Xyzz {
  if (r == 0u) { return ld_bucket(id); }
  let o = XYZZ_W * ((id / prm.nb) * prm.ocap + ofirst(id) + r - 1u);
  return Xyzz(ld_ov(o), ld_ov(o + Fq_W), ld_ov(o + 2u * Fq_W), ld_ov(o + 3u * Fq_W));
}

fn st_chunk(id: u32, r: u32, p: Xyzz) {
  if (r == 0u) { st_bucket(id, p); return; }
  st_overflow((id / prm.nb) * prm.ocap + ofirst(id) + r - 1u, p);
}

// Sums points [r·CHUNK, (r + 1)·CHUNK) of a bucket (chunk 0 of an empty
// bucket stores the identity). After scatter, a bucket's entries end at its cursor.
@compute @workgroup_size(256)
fn chunk(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let u = tid(g, nw);
  if (u >= prm.nwin * (prm.nb + prm.ocap)) { return; }
  let c = chunk_at(u); let id = c.x; let r = c.y;
  let size = bucket_size(id);
  if (r > 0u && r >= chunks_of(size)) { return; }
  let end = atomicLoad(&tables[cursor_ix(id)]);
  let start = end - size + r * CHUNK;
  var acc = identity();
  for (var k = start; k < min(start + CHUNK, end); k++) {
    let e = sorted[k]; let o = 2u * Fq_W * (e & 0x7fffffffu);
    let x = ld_base(o); var y = ld_base(o + Fq_W);
    if (Fq_is_zero(x) && Fq_is_zero(y)) { continue; }
    if ((e & 0x80000000u) != 0u) { y = Fq_neg(y); }
    acc = add_affine(acc, x, y);
  }
  st_chunk(id, r, acc);
}

// Tree pass of stride s = prm.stride: chunk r ≡ 0 (mod s·FAN) of each bucket
// adds chunks r + j·s, 0 < j < FAN, into itself. A window whose buckets all
// have at most s chunks is done: its threads leave before the search.
@compute @workgroup_size(256)
fn tree(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let u = tid(g, nw);
  if (u >= prm.nwin * (prm.nb + prm.ocap)) { return; }
  let s = prm.stride;
  let w = select((u - prm.nwin * prm.nb) / prm.ocap, u / prm.nb, u < prm.nwin * prm.nb);
  if (atomicLoad(&tables[most_ix(w)]) <= s) { return; }
  let c = chunk_at(u); let id = c.x; let r = c.y;
  let m = chunks_of(bucket_size(id));
  if (r % (s * FAN) != 0u || r + s >= m) { return; }
  var acc = ld_chunk(id, r);
  for (var j = 1u; j < FAN && r + j * s < m; j++) { acc = add(acc, ld_chunk(id, r + j * s)); }
  st_chunk(id, r, acc);
}

// Buckets are weighed in groups: a group of width W starting at bucket L is
// the pair (A, R) = (Σ (b − L + 1)·bucket_b, Σ bucket_b), and eight
// neighbouring groups g_0 … g_7 make one of width 8·W:
//   A = Σ A_i + W·Σ i·R_i,  R = Σ R_i.
// Pair p of a level sits in slots 2p (A) and 2p + 1 (R) of its buffer.
// Every kernel has one `add` call site (compilers inline every call, and
// lavapipe's compile time grows with each copy): its steps pick operands.

// Thread w·nt + t: the pair of buckets [t·span, t·span + span) of window w,
// into `partials`: from the top, R += bucket_b, then A += R.
@compute @workgroup_size(64)
fn reduce(@builtin(global_invocation_id) g: vec3<u32>) {
  let id = g.x;
  if (id >= prm.nwin * prm.nt) { return; }
  let w = id / prm.nt; let lo = (id % prm.nt) * prm.span;
  var run = identity(); var acc = identity();
  for (var i = 0u; i < 2u * prm.span; i++) {
    let odd = (i & 1u) == 1u;
    var x = acc; var y = run;
    if (!odd) { x = run; y = ld_bucket(w * prm.nb + lo + prm.span - 1u - i / 2u); }
    let r = add(x, y);
    if (odd) { acc = r; } else { run = r; }
  }
  st_partial(2u * id, acc); st_partial(2u * id + 1u, run);
}

fn ld_pair(from_overflow: bool, p: u32) -> Xyzz {
  let o = XYZZ_W * p;
  if (from_overflow) { return Xyzz(ld_ov(o), ld_ov(o + Fq_W), ld_ov(o + 2u * Fq_W), ld_ov(o + 3u * Fq_W)); }
  return Xyzz(ld_pa(o), ld_pa(o + Fq_W), ld_pa(o + 2u * Fq_W), ld_pa(o + 3u * Fq_W));
}

// Merge pass: prm.stride = m | log2(W) << 24 | dir << 31, m groups of width
// W per window in `partials` (dir 0) or `overflow` (dir 1); thread
// w·m' + g, m' = ⌈m/FAN⌉, merges groups g·FAN … of window w into pair
// w·m' + g of the other buffer. Steps: R_i for i from the top down to 1
// (R += R_i, S += R: S = Σ i·R_i), R += R_0, log2(W) doublings of S, then
// S += A_i for every i.
@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) g: vec3<u32>) {
  let m = prm.stride & 0xffffffu; let wlog = (prm.stride >> 24u) & 0x7fu;
  let from_overflow = (prm.stride >> 31u) != 0u;
  let m2 = (m + FAN - 1u) / FAN;
  let id = g.x;
  if (id >= prm.nwin * m2) { return; }
  let base = (id / m2) * m + (id % m2) * FAN; // first input pair
  let k = min(FAN, m - (id % m2) * FAN);      // groups in this merge
  let tops = 2u * (k - 1u);
  let steps = tops + 1u + wlog + k;
  var run = identity(); var acc = identity();
  for (var i = 0u; i < steps; i++) {
    let to_run = (i < tops && (i & 1u) == 0u) || i == tops;
    var slot = 0xffffffffu; // the pair slot this step loads, if any
    if (i < tops && (i & 1u) == 0u) { slot = 2u * (base + k - 1u - i / 2u) + 1u; }
    if (i == tops) { slot = 2u * base + 1u; }
    if (i >= tops + 1u + wlog) { slot = 2u * (base + i - tops - 1u - wlog); }
    var x = acc; var y = acc;
    if (i < tops) { y = run; }
    if (to_run) { x = run; }
    if (slot != 0xffffffffu) { y = ld_pair(from_overflow, slot); }
    let r = add(x, y);
    if (to_run) { run = r; } else { acc = r; }
  }
  if (from_overflow) { st_partial(2u * id, acc); st_partial(2u * id + 1u, run); }
  else { st_overflow(2u * id, acc); st_overflow(2u * id + 1u, run); }
}
