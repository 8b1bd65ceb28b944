//! The runtime's own mutexes on the NPU path (streams, buffers' uses, the
//! tiling cache, the opened devices), locked through one function that
//! counts, per thread, how many times it locked: so that a test can check
//! how many locks an NPU launch takes rather than read it from the code
//! (issue 29). The count is a thread-local cell, not an atomic: it costs a
//! launch no shared cache line.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, PoisonError};

thread_local! {
    static TAKEN: Cell<u64> = const { Cell::new(0) };
}

/// Locks `mutex`, counting the acquisition on this thread. A poisoned
/// mutex is used as it is, as pypto-rt always did: a panic on one thread
/// must not make every later launch fail.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    TAKEN.with(|n| n.set(n.get().wrapping_add(1)));
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many times this thread has locked one of the counted mutexes.
pub(crate) fn taken() -> u64 {
    TAKEN.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lock_is_counted_on_its_own_thread() {
        let m = Mutex::new(0);
        let before = taken();
        *lock(&m) += 1;
        *lock(&m) += 1;
        assert_eq!(taken() - before, 2);
        let other = std::thread::scope(|s| {
            s.spawn(|| {
                let start = taken();
                *lock(&m) += 1;
                taken() - start
            })
            .join()
            .unwrap()
        });
        assert_eq!(other, 1);
        // The other thread's lock is not this thread's.
        assert_eq!(taken() - before, 2);
        assert_eq!(*lock(&m), 3);
    }
}
