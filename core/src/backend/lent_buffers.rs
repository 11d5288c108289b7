//! Host buffers for a proof's evaluation vectors (A·w, B·w, C·w, then h),
//! over either curve's scalar field:
//! memory lent by the quotient's backend where it offers some (page-locked
//! for a GPU, so its copies skip the staging pieces and run at the link's
//! speed), the heap otherwise. A dropped buffer goes back to its pool:
//! page-locked allocation pins every page (slow), so a prover makes its
//! buffers once and reuses them proof after proof.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::backend::Backend;
use crate::plugin::ops;
use crate::scalar::ScalarField;
use crate::types::Fr;

/// A block of host memory lent by a backend: `cap` field elements.
#[derive(Debug)]
struct Block<F> {
    ptr: NonNull<F>,
    cap: usize,
}

// SAFETY: a block is plain memory owned by one buffer or by the pool's
// list, never aliased: moving it between threads moves that ownership.
unsafe impl<F: Send> Send for Block<F> {}
// SAFETY: shared access only reads through `&FrBuffer` (plain data).
unsafe impl<F: Sync> Sync for Block<F> {}

/// Buffers of one backend's host memory, reused; the heap where the
/// backend lends none (or refuses). Elements of BLS12-381's Fr unless
/// told otherwise.
#[derive(Debug)]
pub struct BufferPool<F: ScalarField = Fr> {
    lender: Option<Arc<Backend>>,
    free: Mutex<Vec<Block<F>>>,
    /// Why the lender last refused (its buffers then came from the heap).
    refusal: Mutex<Option<String>>,
}

impl<F: ScalarField> BufferPool<F> {
    /// A pool drawing on `backend` when it lists
    /// [`ops::HOST_MEMORY`], else on the heap.
    pub fn new(backend: &Arc<Backend>) -> Arc<Self> {
        let lends = backend.capabilities().supports(ops::HOST_MEMORY);
        Arc::new(BufferPool {
            lender: lends.then(|| backend.clone()),
            free: Mutex::new(Vec::new()),
            refusal: Mutex::new(None),
        })
    }

    /// A pool on the heap only.
    pub fn heap() -> Arc<Self> {
        Arc::new(BufferPool {
            lender: None,
            free: Mutex::new(Vec::new()),
            refusal: Mutex::new(None),
        })
    }

    /// A buffer of `len` elements with unspecified (initialised) contents:
    /// a free block of the pool when one is large enough, else a new one
    /// (zeroed once), else the heap when the backend lends none or refuses.
    pub fn take(self: &Arc<Self>, len: usize) -> FrBuffer<F> {
        self.take_marked(len).0
    }

    /// A buffer of `len` zeros: [`take`](Self::take), filled only where it
    /// reused a block (new blocks and the heap's come zeroed).
    pub fn take_zeroed(self: &Arc<Self>, len: usize) -> FrBuffer<F> {
        let (mut buf, reused) = self.take_marked(len);
        if reused {
            buf.par_chunks_mut(1 << 16).for_each(|c| c.fill(F::ZERO));
        }
        buf
    }

    /// [`take`](Self::take), and whether the buffer is a reused block.
    fn take_marked(self: &Arc<Self>, len: usize) -> (FrBuffer<F>, bool) {
        let Some(lender) = &self.lender else {
            return (FrBuffer::from(vec![F::ZERO; len]), false);
        };
        let reused = {
            let mut free = self.free.lock().unwrap();
            // The smallest block that fits.
            let best = (0..free.len())
                .filter(|&i| free[i].cap >= len)
                .min_by_key(|&i| free[i].cap);
            best.map(|i| free.swap_remove(i))
        };
        let was_reused = reused.is_some();
        let block = match reused {
            Some(b) => b,
            None => match lend(lender, len) {
                Ok(b) => b,
                Err(why) => {
                    *self.refusal.lock().unwrap() = Some(why);
                    return (FrBuffer::from(vec![F::ZERO; len]), false);
                }
            },
        };
        let buf = FrBuffer {
            data: Data::Lent {
                block: Some(block),
                pool: self.clone(),
            },
            len,
        };
        (buf, was_reused)
    }

    /// Makes sure `count` blocks of at least `len` elements exist, made now
    /// rather than by the first proofs that need them: lending pins every
    /// page, which made a batch's first round of SpMVs several times slower
    /// than later ones when it was done on the way. Stops at the lender's
    /// first refusal (later buffers then come from the heap).
    pub fn reserve(self: &Arc<Self>, count: usize, len: usize) {
        let held: Vec<FrBuffer<F>> = (0..count)
            .map_while(|_| {
                let buf = self.take(len);
                buf.is_lent().then_some(buf)
            })
            .collect();
        drop(held);
    }

    /// Why the backend last refused to lend (those buffers came from the heap).
    pub fn refusal(&self) -> Option<String> {
        self.refusal.lock().unwrap().clone()
    }

    /// Blocks kept for reuse and their bytes.
    pub fn idle(&self) -> (usize, u64) {
        let free = self.free.lock().unwrap();
        let bytes = free.iter().map(|b| (b.cap * size_of::<F>()) as u64).sum();
        (free.len(), bytes)
    }
}

/// `len` zeroed elements of `lender`'s memory, or why not.
fn lend<F: ScalarField>(lender: &Backend, len: usize) -> Result<Block<F>, String> {
    let cap = len.max(1);
    let address = lender
        .host_alloc((cap * size_of::<F>()) as u64)
        .map_err(|e| e.to_string())?;
    let ptr = NonNull::new(address as *mut F)
        .filter(|p| p.as_ptr().is_aligned())
        .ok_or_else(|| {
            let _ = lender.host_free(address);
            format!(
                "backend `{}` lent misaligned memory ({address:#x})",
                lender.name()
            )
        })?;
    // SAFETY: the backend lent `cap` elements' bytes at `ptr`, aligned
    // (checked above), owned by this block until freed.
    let all = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), cap) };
    // Make the contents initialised; the threads also fault the pages in.
    all.par_chunks_mut(1 << 16).for_each(|c| c.fill(F::ZERO));
    Ok(Block { ptr, cap })
}

impl<F: ScalarField> Drop for BufferPool<F> {
    fn drop(&mut self) {
        let Some(lender) = &self.lender else { return };
        for b in self.free.get_mut().unwrap().drain(..) {
            // Nothing to tell: the block came from this lender, and a
            // failure here would be the plugin's bug, with no caller left.
            let _ = lender.host_free(b.ptr.as_ptr() as u64);
        }
    }
}

#[derive(Debug)]
enum Data<F: ScalarField> {
    Heap(Vec<F>),
    Lent {
        block: Option<Block<F>>,
        pool: Arc<BufferPool<F>>,
    },
}

/// Field elements in host memory: a [`BufferPool`]'s block or a vector.
/// Dereferences to a slice; dropping it returns a block to its pool.
#[derive(Debug)]
pub struct FrBuffer<F: ScalarField = Fr> {
    data: Data<F>,
    len: usize,
}

impl<F: ScalarField> From<Vec<F>> for FrBuffer<F> {
    fn from(v: Vec<F>) -> Self {
        FrBuffer {
            len: v.len(),
            data: Data::Heap(v),
        }
    }
}

impl<F: ScalarField> FrBuffer<F> {
    /// Shortens the buffer to `len` elements (no-op when longer).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Whether the memory was lent by a backend (not the heap).
    pub fn is_lent(&self) -> bool {
        matches!(self.data, Data::Lent { .. })
    }
}

impl<F: ScalarField> Deref for FrBuffer<F> {
    type Target = [F];
    fn deref(&self) -> &[F] {
        match &self.data {
            Data::Heap(v) => &v[..self.len],
            Data::Lent { block, .. } => {
                let b = block.as_ref().expect("held until drop");
                // SAFETY: the block holds `cap ≥ len` initialised elements
                // owned by this buffer.
                unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), self.len) }
            }
        }
    }
}

impl<F: ScalarField> DerefMut for FrBuffer<F> {
    fn deref_mut(&mut self) -> &mut [F] {
        match &mut self.data {
            Data::Heap(v) => &mut v[..self.len],
            Data::Lent { block, .. } => {
                let b = block.as_ref().expect("held until drop");
                // SAFETY: as in `deref`, and `&mut self` makes it exclusive.
                unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr(), self.len) }
            }
        }
    }
}

impl<F: ScalarField> Drop for FrBuffer<F> {
    fn drop(&mut self) {
        if let Data::Lent { block, pool } = &mut self.data
            && let Some(b) = block.take()
        {
            pool.free.lock().unwrap().push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::LentMemory;
    use crate::plugin::{
        AccelError, AcceleratorImpl, BackendInfo, Capabilities, ErrorCode, OpSupport,
        into_accelerator,
    };

    /// Lends heap memory, or refuses every request when `refuse`.
    struct Lender {
        refuse: bool,
        lent: LentMemory,
    }

    impl AcceleratorImpl for Lender {
        fn info(&self) -> BackendInfo {
            BackendInfo {
                name: "lender".into(),
                version: "0".into(),
                devices: Default::default(),
                notes: Default::default(),
            }
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities {
                ops: vec![OpSupport::new(ops::HOST_MEMORY, 32)].into(),
            }
        }
        fn host_alloc(&self, bytes: u64) -> Result<u64, AccelError> {
            if self.refuse {
                return Err(AccelError::new(
                    ErrorCode::OUT_OF_MEMORY,
                    "no pinned memory left",
                ));
            }
            let layout = std::alloc::Layout::from_size_align(bytes as usize, 64).unwrap();
            // SAFETY: nonzero size (checked at the seam).
            let p = unsafe { std::alloc::alloc(layout) } as usize;
            self.lent.insert(p, bytes as usize);
            Ok(p as u64)
        }
        fn host_free(&self, address: u64) -> Result<(), AccelError> {
            let bytes = self.lent.remove(address as usize)?;
            let layout = std::alloc::Layout::from_size_align(bytes, 64).unwrap();
            // SAFETY: allocated above with this layout, freed once.
            unsafe { std::alloc::dealloc(address as *mut u8, layout) };
            Ok(())
        }
    }

    fn lender(refuse: bool) -> Arc<Backend> {
        let inner = Lender {
            refuse,
            lent: LentMemory::default(),
        };
        Arc::new(Backend::new("lender", into_accelerator(inner)))
    }

    #[test]
    fn heap_buffers_are_zeroed_and_cut() {
        let pool = BufferPool::heap();
        let mut b = pool.take(10);
        assert!(!b.is_lent());
        assert_eq!(b.len(), 10);
        assert!(b.iter().all(|x| *x == Fr::ZERO));
        b[3] = Fr::one();
        b.truncate(4);
        assert_eq!(&b[..], &[Fr::ZERO, Fr::ZERO, Fr::ZERO, Fr::one()]);
        drop(b);
        assert_eq!(pool.idle(), (0, 0));
    }

    #[test]
    fn lent_blocks_are_zeroed_once_then_reused_smallest_first() {
        let pool = BufferPool::new(&lender(false));
        let (mut big, small) = (pool.take(100), pool.take(10));
        assert!(big.is_lent() && small.is_lent());
        assert!(big.iter().chain(small.iter()).all(|x| *x == Fr::ZERO));
        big[99] = Fr::one();
        let big_at = big.as_ptr();
        drop((big, small));
        assert_eq!(pool.idle(), (2, 110 * 32));
        // 50 fits only the big block, which keeps what it held.
        let again = pool.take(50);
        assert_eq!(again.as_ptr(), big_at);
        assert_eq!(pool.idle(), (1, 10 * 32));
        assert_eq!(pool.take(8).len(), 8); // the small block, cut
        assert!(pool.refusal().is_none());
    }

    #[test]
    fn take_zeroed_clears_a_reused_block() {
        let pool = BufferPool::new(&lender(false));
        let mut b = pool.take_zeroed(20);
        b[7] = Fr::one();
        let at = b.as_ptr();
        drop(b);
        let dirty = pool.take(20);
        assert_eq!((dirty.as_ptr(), dirty[7]), (at, Fr::one()));
        drop(dirty);
        let clean = pool.take_zeroed(20);
        assert_eq!(clean.as_ptr(), at);
        assert!(clean.iter().all(|x| *x == Fr::ZERO));
    }

    #[test]
    fn a_refusing_lender_leaves_the_heap_and_says_why() {
        let pool = BufferPool::<Fr>::new(&lender(true));
        let b = pool.take(16);
        assert!(!b.is_lent());
        assert!(b.iter().all(|x| *x == Fr::ZERO));
        let why = pool.refusal().unwrap();
        assert!(why.contains("no pinned memory left"), "{why}");
    }
}
