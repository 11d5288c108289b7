//! WGSL Montgomery arithmetic for one prime field, generated fully unrolled.
//!
//! Why generated and not a `.wgsl` loop: lavapipe (llvmpipe) caps the loop
//! iterations of one invocation at 65 535 over *all* loops that its compiler
//! did not unroll, and silently exits the loops past that. Straight-line
//! field code keeps per-point loops to the one over the points, and GPUs get
//! registers instead of indexed arrays.
//!
//! Elements are `array<u32, NL>`, little-endian: blst's u64 limbs split in
//! two, with R = 2^(32·NL), so values are bit-identical with blst's. Needs
//! M < R/4 (true for Fr and Fp of BLS12-381), so sums need no carry out.
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
