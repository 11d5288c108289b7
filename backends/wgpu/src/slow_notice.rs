//! A word on stderr when a step outlasts its expected time: NVIDIA's
//! Vulkan driver compiles the G2 MSM shaders for minutes on a machine's
//! first use (it keeps the result), with no other output meanwhile.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Runs `say` once if it is still held after `after`; dropping it ends the
/// wait (and joins the waiting thread, so nothing is said after the drop).
pub(crate) struct SlowNotice {
    done: Option<mpsc::Sender<()>>,
    waiter: Option<JoinHandle<()>>,
}

impl SlowNotice {
    pub(crate) fn new(after: Duration, say: impl FnOnce() + Send + 'static) -> Self {
        let (done, wait) = mpsc::channel::<()>();
        let waiter = std::thread::Builder::new()
            .name("zkpipe-wgpu-notice".into())
            .spawn(move || {
                if wait.recv_timeout(after) == Err(RecvTimeoutError::Timeout) {
                    say();
                }
            })
            .ok(); // no thread, no notice: the step itself goes on
        Self {
            done: Some(done),
            waiter,
        }
    }
}

impl Drop for SlowNotice {
    fn drop(&mut self) {
        drop(self.done.take()); // wakes the waiter at once
        if let Some(w) = self.waiter.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    use super::*;

    fn flag() -> (Arc<AtomicBool>, impl FnOnce() + Send + 'static) {
        let said = Arc::new(AtomicBool::new(false));
        let s = said.clone();
        (said, move || s.store(true, Ordering::SeqCst))
    }

    #[test]
    fn a_step_that_outlasts_its_time_is_announced() {
        let (said, say) = flag();
        let notice = SlowNotice::new(Duration::from_millis(10), say);
        std::thread::sleep(Duration::from_millis(300));
        drop(notice);
        assert!(said.load(Ordering::SeqCst));
    }

    #[test]
    fn a_quick_step_says_nothing_and_does_not_wait() {
        let (said, say) = flag();
        let t = Instant::now();
        drop(SlowNotice::new(Duration::from_secs(30), say));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(!said.load(Ordering::SeqCst));
    }
}
