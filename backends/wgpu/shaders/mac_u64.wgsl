// t + a·b + c as (low, high) 32-bit words, through 64-bit integers (SHADER_INT64).
fn mac(t: u32, a: u32, b: u32, c: u32) -> vec2<u32> {
  let r = u64(a) * u64(b) + u64(t) + u64(c);
  return vec2<u32>(u32(r), u32(r >> 32u));
}
