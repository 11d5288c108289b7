//! WGSL Montgomery arithmetic for one prime field, generated fully unrolled:
//! on 32-bit words ([`wgsl`], Fr) or on narrow limbs ([`narrow_wgsl`], the
//! MSM's Fp).
//!
//! Why generated and not a `.wgsl` loop: lavapipe (llvmpipe) caps the loop
//! iterations of one invocation at 65 535 over *all* loops that its compiler
//! did not unroll, and silently exits the loops past that. Straight-line
//! field code keeps per-point loops to the one over the points, and GPUs get
//! registers instead of indexed arrays.
//!
//! [`wgsl`]: elements are `array<u32, NL>`, little-endian: the host's u64
//! limbs (blst's, halo2curves') split in two, with R = 2^(32·NL), so values
//! are bit-identical with the host's. Needs M < R/2 (true for Fr of
//! BLS12-381, below 2^255, and of BN254, below 2^254, with R = 2^256), so
//! sums and the product's result (below 2M) need no word above NL.
//! Uses `mac(t, a, b, c) -> vec2<u32>` (t + a·b + c as low, high words).

use std::fmt::Write;

/// −m⁻¹ mod 2^32 for odd `m0`.
pub(crate) fn minv(m0: u32) -> u32 {
    let mut x = 1u32;
    for _ in 0..5 {
        x = x.wrapping_mul(2u32.wrapping_sub(m0.wrapping_mul(x)));
    }
    x.wrapping_neg()
}

fn lit(v: u32) -> String {
    format!("0x{v:08x}u")
}

/// `F_t`, `F_is_zero`, `F_add`, `F_sub`, `F_neg`, `F_mul`, `F_sqr` with `F` = `p`.
pub(crate) fn wgsl(p: &str, m: &[u32]) -> String {
    let nl = m.len();
    let t = format!("{p}_t");
    let mut s = String::new();
    let w = &mut s;
    let list = |f: &dyn Fn(usize) -> String| (0..nl).map(f).collect::<Vec<_>>().join(", ");
    writeln!(w, "alias {t} = array<u32, {nl}>;").unwrap();

    writeln!(w, "fn {p}_is_zero(a: {t}) -> bool {{").unwrap();
    let ors = (0..nl)
        .map(|i| format!("a[{i}]"))
        .collect::<Vec<_>>()
        .join(" | ");
    writeln!(w, "  return ({ors}) == 0u;\n}}").unwrap();

    // r = a − M if that does not borrow, else a.
    writeln!(
        w,
        "fn {p}_reduce(a: {t}) -> {t} {{\n  var b = 0u; var x = 0u;"
    )
    .unwrap();
    for (i, mi) in m.iter().enumerate() {
        writeln!(
            w,
            "  x = a[{i}] - {m}; let d{i} = x - b; b = select(0u, 1u, a[{i}] < {m}) | select(0u, 1u, x < b);",
            m = lit(*mi)
        )
        .unwrap();
    }
    writeln!(w, "  if (b != 0u) {{ return a; }}").unwrap();
    writeln!(w, "  return {t}({});\n}}", list(&|i| format!("d{i}"))).unwrap();

    writeln!(
        w,
        "fn {p}_add(a: {t}, b: {t}) -> {t} {{\n  var c = 0u; var x = 0u;"
    )
    .unwrap();
    for i in 0..nl {
        writeln!(
            w,
            "  x = a[{i}] + b[{i}]; let s{i} = x + c; c = select(0u, 1u, x < a[{i}]) | select(0u, 1u, s{i} < x);"
        )
        .unwrap();
    }
    writeln!(
        w,
        "  return {p}_reduce({t}({}));\n}}",
        list(&|i| format!("s{i}"))
    )
    .unwrap();

    // a − b, plus M when that borrows.
    writeln!(
        w,
        "fn {p}_sub(a: {t}, b: {t}) -> {t} {{\n  var br = 0u; var x = 0u;"
    )
    .unwrap();
    for i in 0..nl {
        writeln!(
            w,
            "  x = a[{i}] - b[{i}]; var d{i} = x - br; br = select(0u, 1u, a[{i}] < b[{i}]) | select(0u, 1u, x < br);"
        )
        .unwrap();
    }
    writeln!(w, "  if (br != 0u) {{\n    var c = 0u;").unwrap();
    for (i, mi) in m.iter().enumerate() {
        writeln!(
            w,
            "    x = d{i} + {m}; d{i} = x + c; c = select(0u, 1u, x < {m}) | select(0u, 1u, d{i} < x);",
            m = lit(*mi)
        )
        .unwrap();
    }
    writeln!(w, "  }}\n  return {t}({});\n}}", list(&|i| format!("d{i}"))).unwrap();

    writeln!(
        w,
        "fn {p}_neg(a: {t}) -> {t} {{ return {p}_sub({t}(), a); }}"
    )
    .unwrap();

    // CIOS: t = (t + a·b_i + q·M) / 2^32 per limb of b, q = t_0·(−M⁻¹).
    let inv = lit(minv(m[0]));
    writeln!(w, "fn {p}_mul(a: {t}, b: {t}) -> {t} {{").unwrap();
    for j in 0..=nl {
        write!(w, "  var t{j} = 0u;").unwrap();
    }
    writeln!(w, "\n  var c = 0u; var h = 0u; var v: vec2<u32>;").unwrap();
    for i in 0..nl {
        writeln!(w, "  c = 0u;").unwrap();
        for j in 0..nl {
            writeln!(
                w,
                "  v = mac(t{j}, a[{j}], b[{i}], c); t{j} = v.x; c = v.y;"
            )
            .unwrap();
        }
        writeln!(
            w,
            "  t{nl} += c; h = select(0u, 1u, t{nl} < c);\n  let q{i} = t0 * {inv};\n  c = mac(t0, q{i}, {}, 0u).y;",
            lit(m[0])
        )
        .unwrap();
        for (j, mj) in m.iter().enumerate().skip(1) {
            writeln!(
                w,
                "  v = mac(t{j}, q{i}, {}, c); t{} = v.x; c = v.y;",
                lit(*mj),
                j - 1
            )
            .unwrap();
        }
        writeln!(
            w,
            "  t{l} = t{nl} + c; t{nl} = h + select(0u, 1u, t{l} < c);",
            l = nl - 1
        )
        .unwrap();
    }
    writeln!(
        w,
        "  return {p}_reduce({t}({}));\n}}",
        list(&|i| format!("t{i}"))
    )
    .unwrap();
    writeln!(w, "fn {p}_sqr(a: {t}) -> {t} {{ return {p}_mul(a, a); }}").unwrap();
    s
}

/// Limbs of `bits` bits (little-endian) of the integer with u32 words `w`;
/// `nl` limbs, the top one holding what is left.
pub(crate) fn narrow_limbs(w: &[u32], bits: u32, nl: usize) -> Vec<u32> {
    let bit = |i: usize| w.get(i / 32).is_some_and(|v| v >> (i % 32) & 1 == 1);
    (0..nl)
        .map(|k| {
            (0..bits as usize)
                .filter(|&j| bit(k * bits as usize + j))
                .fold(0u32, |acc, j| acc | 1 << j)
        })
        .collect()
}

/// Limbs of `bits` bits for the modulus with u32 words `m`: enough for
/// R > 4M (two spare bits above M's top bit).
pub(crate) fn narrow_len(m: &[u32], bits: u32) -> usize {
    let top = m.iter().rposition(|&v| v != 0).expect("a nonzero modulus");
    (32 * top + 34 - m[top].leading_zeros() as usize).div_ceil(bits as usize)
}

/// `F_from_words(w: array<u32, n>) -> F_t`: the integer with u32 words `w`
/// (below 2^(bits·nl)) in limbs of `bits` bits.
pub(crate) fn narrow_from_words(p: &str, n: usize, bits: u32, nl: usize) -> String {
    let mut s = format!(
        "fn {p}_from_words(w: array<u32, {n}>) -> {p}_t {{
  var r: {p}_t;
"
    );
    let mask = lit((1u32 << bits) - 1);
    for k in 0..nl {
        let (j, sh) = (k * bits as usize / 32, k * bits as usize % 32);
        if j >= n {
            writeln!(s, "  r[{k}] = 0u;").unwrap(); // above every word
            continue;
        }
        let mut v = format!("(w[{j}] >> {sh}u)");
        if sh + bits as usize > 32 && j + 1 < n {
            v = format!("{v} | (w[{}] << {}u)", j + 1, 32 - sh);
        }
        writeln!(s, "  r[{k}] = ({v}) & {mask};").unwrap();
    }
    s + "  return r;
}
"
}

/// Field code on narrow limbs for the MSM's Fp: `nl` limbs of `bits` bits,
/// products summed column by column in a `u64` accumulator (`wide`, 28-bit
/// limbs) or a `u32` one (13-bit limbs), carries taken once per column. A
/// 32-bit CIOS step costs a widening multiply and two 64-bit additions per
/// product; here a product is one multiply-add into the accumulator.
///
/// Montgomery form with R = 2^(bits·nl), values lazily reduced to [0, 2M):
/// with 4M < R a product of two such values is < 2M again, so `mul` never
/// subtracts; `add` and `sub` keep the range with one conditional ±2M, and
/// `is_zero` accepts 0 and M. Emits `F_t`, `F_is_zero`, `F_add`, `F_sub`,
/// `F_neg`, `F_mul`, `F_sqr` and the constant `F_NL`.
pub(crate) fn narrow_wgsl(p: &str, m: &[u32], bits: u32, wide: bool) -> String {
    let nl = narrow_len(m, bits);
    let t = format!("{p}_t");
    let mk = narrow_limbs(m, bits, nl);
    let m2: Vec<u32> = {
        let mut w = m.to_vec();
        let mut c = 0u32;
        for v in &mut w {
            let n = *v >> 31;
            *v = *v << 1 | c;
            c = n;
        }
        w.push(c);
        narrow_limbs(&w, bits, nl)
    };
    let mask = lit((1u32 << bits) - 1);
    let inv = lit(minv(m[0]) & ((1u32 << bits) - 1));
    let (acc_t, cast) = if wide { ("u64", "u64") } else { ("u32", "") };
    // A column: up to 2·nl products below 2^(2·bits) (the square's doubled
    // ones count twice as few), plus the carry in.
    let acc_max = if wide {
        u64::MAX as u128
    } else {
        u32::MAX as u128
    };
    let limb_max = (1u128 << bits) - 1;
    assert!(
        2 * nl as u128 * limb_max * limb_max + (acc_max >> bits) <= acc_max,
        "{bits}-bit limbs overflow a {acc_t} column sum"
    );
    let list = |f: &dyn Fn(usize) -> String| (0..nl).map(f).collect::<Vec<_>>().join(", ");
    let mut s = String::new();
    let w = &mut s;
    writeln!(
        w,
        "alias {t} = array<u32, {nl}>;\nconst {p}_NL: u32 = {nl}u;"
    )
    .unwrap();

    let zero = list(&|i| format!("a[{i}]")).replace(", ", " | ");
    let is_m = list(&|i| format!("(a[{i}] ^ {})", lit(mk[i]))).replace(", ", " | ");
    writeln!(
        w,
        "fn {p}_is_zero(a: {t}) -> bool {{ return ({zero}) == 0u || ({is_m}) == 0u; }}"
    )
    .unwrap();

    // Limb differences are > −2^(bits+1): bit 31 is the borrow.
    let carry = |i: usize| match i {
        0 => String::new(),
        _ => format!(" + (x >> {bits}u)"),
    };
    let borrow = |i: usize| if i == 0 { "" } else { " - (x >> 31u)" };
    writeln!(
        w,
        "fn {p}_add(a: {t}, b: {t}) -> {t} {{\n  var x = 0u; var s: {t}; var d: {t};"
    )
    .unwrap();
    for i in 0..nl {
        writeln!(w, "  x = a[{i}] + b[{i}]{}; s[{i}] = x & {mask};", carry(i)).unwrap();
    }
    for (i, m2i) in m2.iter().enumerate() {
        let (m2i, b) = (lit(*m2i), borrow(i));
        writeln!(w, "  x = s[{i}] - {m2i}{b}; d[{i}] = x & {mask};").unwrap();
    }
    writeln!(
        w,
        "  if ((x >> 31u) != 0u) {{ return s; }}\n  return d;\n}}"
    )
    .unwrap();

    writeln!(
        w,
        "fn {p}_sub(a: {t}, b: {t}) -> {t} {{\n  var x = 0u; var d: {t};"
    )
    .unwrap();
    for i in 0..nl {
        writeln!(
            w,
            "  x = a[{i}] - b[{i}]{}; d[{i}] = x & {mask};",
            borrow(i)
        )
        .unwrap();
    }
    writeln!(w, "  if ((x >> 31u) == 0u) {{ return d; }}").unwrap();
    // Borrowed: d is a − b + R; adding 2M and dropping the carry out of the
    // top limb gives a − b + 2M.
    for (i, m2i) in m2.iter().enumerate() {
        let (m2i, c) = (lit(*m2i), carry(i));
        writeln!(w, "  x = d[{i}] + {m2i}{c}; d[{i}] = x & {mask};").unwrap();
    }
    writeln!(w, "  return d;\n}}").unwrap();
    writeln!(
        w,
        "fn {p}_neg(a: {t}) -> {t} {{ return {p}_sub({t}(), a); }}"
    )
    .unwrap();

    // Product scanning: column k sums a_i·b_(k−i) and q_i·M_(k−i); below
    // column nl it then picks q_k to clear its low limb. The column sums
    // stay below 2·nl·2^(2·bits) + carry, which the accumulator holds. The
    // square sums each a_i·a_j (i < j) once against a doubled limb (below
    // 2^(bits+1)): about half the products, the sums no larger.
    let prod = |x: String, y: String| format!("{cast}({x}) * {cast}({y})");
    for square in [false, true] {
        if square {
            writeln!(w, "fn {p}_sqr(a: {t}) -> {t} {{\n  var d: {t};").unwrap();
            for j in 0..nl {
                writeln!(w, "  d[{j}] = a[{j}] << 1u;").unwrap();
            }
        } else {
            writeln!(w, "fn {p}_mul(a: {t}, b: {t}) -> {t} {{").unwrap();
        }
        writeln!(
            w,
            "  var acc: {acc_t} = {acc_t}(0); var q: {t}; var r: {t};"
        )
        .unwrap();
        for k in 0..2 * nl - 1 {
            let lo = k.saturating_sub(nl - 1);
            let mut terms = Vec::new();
            for i in lo..=k.min(nl - 1) {
                let j = k - i;
                match (square, i.cmp(&j)) {
                    (false, _) => terms.push(prod(format!("a[{i}]"), format!("b[{j}]"))),
                    (true, std::cmp::Ordering::Less) => {
                        terms.push(prod(format!("a[{i}]"), format!("d[{j}]")))
                    }
                    (true, std::cmp::Ordering::Equal) => {
                        terms.push(prod(format!("a[{i}]"), format!("a[{i}]")))
                    }
                    (true, std::cmp::Ordering::Greater) => {}
                }
                if i < k {
                    terms.push(prod(format!("q[{i}]"), lit(mk[j])));
                }
            }
            for tm in terms {
                writeln!(w, "  acc += {tm};").unwrap();
            }
            if k < nl {
                writeln!(w, "  q[{k}] = (u32(acc) * {inv}) & {mask};").unwrap();
                writeln!(w, "  acc += {};", prod(format!("q[{k}]"), lit(mk[0]))).unwrap();
            } else {
                writeln!(w, "  r[{}] = u32(acc) & {mask};", k - nl).unwrap();
            }
            writeln!(w, "  acc = acc >> {bits}u;").unwrap();
        }
        writeln!(w, "  r[{}] = u32(acc);\n  return r;\n}}", nl - 1).unwrap();
    }
    s
}
