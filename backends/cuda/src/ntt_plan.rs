//! The NTT's plan: how a transform's stages are grouped into shared-memory
//! passes. Index arithmetic only (no device), so the device can hold its
//! shape and the plan can be unit-tested.

/// Elements per NTT block: at most 2^10 (32 B each, one thread per pair).
const NTT_TILE_MAX: u32 = 10;
/// Stages per pass, at most (`ZKPIPE_CUDA_NTT_STAGES` overrides it).
/// The choice and the sweep behind it are in docs/bench-log.md ("v6"):
/// fewer, longer passes lost, 5–7 stages tied, and blocks of 2^8 won.
const NTT_STAGES: u32 = 7;
/// Elements per block (log2) a pass fills up to with columns and rows
/// (`ZKPIPE_CUDA_NTT_BLOCK`): 2^8 elements, 128 threads.
const NTT_BLOCK_LOG: u32 = 8;
/// Neighbouring columns a pass above the lowest moves together (log2), so
/// that its global reads and writes are runs of 2^c · 32 B rather than
/// scattered 32-byte sectors (`ZKPIPE_CUDA_NTT_COLS`).
const NTT_COLS_LOG: u32 = 2;

/// The shape of [`ntt_passes`]'s plans.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NttShape {
    stages: u32,
    block: u32,
    cols: u32,
}

impl NttShape {
    pub(crate) fn from_env() -> NttShape {
        NttShape {
            stages: env_u32("ZKPIPE_CUDA_NTT_STAGES", NTT_STAGES).clamp(1, NTT_TILE_MAX),
            block: env_u32("ZKPIPE_CUDA_NTT_BLOCK", NTT_BLOCK_LOG).clamp(1, NTT_TILE_MAX),
            cols: env_u32("ZKPIPE_CUDA_NTT_COLS", NTT_COLS_LOG).min(NTT_TILE_MAX - 1),
        }
    }
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One shared-memory pass: the stages of half-widths 2^lo … 2^(lo+s−1) over
/// blocks of 2^w elements: 2^low neighbouring columns (low ≤ lo) and
/// 2^(w−low−s) independent rows above the stage bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NttPass {
    pub(crate) lo: u32,
    pub(crate) s: u32,
    pub(crate) w: u32,
    pub(crate) low: u32,
}

/// The passes of a 2^`log_n` transform in execution order (DIT upward, DIF
/// downward). Stages are spread evenly over as few passes of at most
/// `shape.stages` as cover them, longer passes on the low bits; each pass's
/// block takes up to 2^cols columns, as far as lo allows, then rows up to
/// 2^shape.block elements.
pub(crate) fn ntt_passes(log_n: u32, dit: bool, shape: NttShape) -> Vec<NttPass> {
    let count = log_n.div_ceil(shape.stages).max(1);
    let (short, longer) = (log_n / count, log_n % count);
    let mut lo = 0;
    let mut passes: Vec<NttPass> = (0..count)
        .map(|i| {
            let s = short + (i < longer) as u32;
            lo += s;
            let lo = lo - s;
            let low = shape.cols.min(lo).min(NTT_TILE_MAX - s);
            let rows = shape.block.saturating_sub(s + low).min(log_n - lo - s);
            NttPass {
                lo,
                s,
                w: s + low + rows,
                low,
            }
        })
        .collect();
    if !dit {
        passes.reverse();
    }
    passes
}

/// Rows, at least, of a lowest pass that writes bit-reversed: taken from
/// the top index bits, they make its writes runs of 2^rows elements
/// (4 · 32 B = 128 B) instead of one element every 2^(log_n − w).
const NTT_TOP_ROWS: u32 = 2;

/// `pass` (the lowest: lo = low = 0) with its rows from the top index bits,
/// at least [`NTT_TOP_ROWS`] of them (`ntt_pass_top` in kernels/ntt.cu).
pub(crate) fn with_top_rows(pass: NttPass, log_n: u32) -> NttPass {
    let rows = (pass.w - pass.s)
        .max(NTT_TOP_ROWS)
        .min(NTT_TILE_MAX - pass.s)
        .min(log_n - pass.s);
    NttPass {
        w: pass.s + rows,
        ..pass
    }
}

#[cfg(test)]
mod tests {
    use super::{NTT_TILE_MAX, NttPass, NttShape, ntt_passes, with_top_rows};

    #[test]
    fn ntt_passes_cover_every_stage_once() {
        let p = |lo, s, w, low| NttPass { lo, s, w, low };
        let shape = |stages, block, cols| NttShape {
            stages,
            block,
            cols,
        };
        assert_eq!(ntt_passes(3, true, shape(6, 8, 2)), vec![p(0, 3, 3, 0)]);
        assert_eq!(
            ntt_passes(20, true, shape(10, 8, 2)),
            vec![p(0, 10, 10, 0), p(10, 10, 10, 0)]
        );
        assert_eq!(
            ntt_passes(24, false, shape(6, 8, 2)),
            vec![p(18, 6, 8, 2), p(12, 6, 8, 2), p(6, 6, 8, 2), p(0, 6, 8, 0)]
        );
        assert_eq!(
            ntt_passes(13, true, shape(5, 9, 1)),
            vec![p(0, 5, 9, 0), p(5, 4, 9, 1), p(9, 4, 5, 1)]
        );
        for log_n in 1..=28 {
            for (stages, block, cols) in [(10, 10, 0), (8, 8, 2), (6, 8, 2), (5, 9, 3), (1, 1, 9)] {
                // A permuting DIF pass with top rows: still the lowest, a
                // block within the tile limit and the transform's size.
                let dif = ntt_passes(log_n, false, shape(stages, block, cols));
                if let [.., last] = dif[..] {
                    let t = with_top_rows(last, log_n);
                    assert!(t.lo == 0 && t.low == 0 && t.s == last.s, "{t:?}");
                    assert!(t.w >= t.s && t.w <= NTT_TILE_MAX.min(log_n), "{t:?}");
                }
                let mut next = 0;
                for NttPass { lo, s, w, low } in ntt_passes(log_n, true, shape(stages, block, cols))
                {
                    assert_eq!(lo, next, "2^{log_n}: passes are consecutive");
                    assert!(
                        s >= 1 && s <= stages && w >= s + low && w <= NTT_TILE_MAX,
                        "2^{log_n}: ({lo}, {s}, {w}, {low})"
                    );
                    assert!(
                        low <= lo && lo + w - low <= log_n,
                        "2^{log_n}: ({lo}, {s}, {w}, {low})"
                    );
                    next = lo + s;
                }
                assert_eq!(next, log_n);
            }
        }
    }
}
