// t + a·b + c as (low, high) 32-bit words, from 16-bit partial products
// (WGSL has no widening multiply). The sum is < 2^64, so it never overflows.
fn mac(t: u32, a: u32, b: u32, c: u32) -> vec2<u32> {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let ll = al * bl; let lh = al * bh; let hl = ah * bl;
  let mid = lh + (ll >> 16u) + (hl & 0xffffu);
  var lo = (mid << 16u) | (ll & 0xffffu);
  var hi = ah * bh + (mid >> 16u) + (hl >> 16u);
  lo += t; hi += select(0u, 1u, lo < t);
  lo += c; hi += select(0u, 1u, lo < c);
  return vec2<u32>(lo, hi);
}
