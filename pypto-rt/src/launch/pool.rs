//! The host backend's worker threads: started as launches first need them
//! and kept, so that a launch of many blocks does not start and end a
//! thread per core each time.
//!
//! A launch offers tickets to its job (one per helper it could use) and
//! works on its blocks itself; an idle worker takes a ticket and joins.
//! When no block is left, the launch takes back the tickets no worker took
//! and waits for the workers that joined to leave; only then does it
//! return, so a job never outlives the launch that owns it.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

/// A job as workers see it: what to call and on what. `data` points at a
/// job on the stack of a launch that is waiting for this worker (module
/// docs), so it stays valid while the worker runs `work`.
#[derive(Clone, Copy)]
struct Ticket {
    /// Runs blocks of the job at `data` until none is left.
    ///
    /// Safety: `data` must be the job `work` expects, alive for the call.
    work: unsafe fn(*const ()),
    data: *const (),
}

// SAFETY: a ticket is only a pointer to a job made for sharing between
// threads (its `work` takes `&` of it from any thread), kept valid by its
// launch until every worker that took the ticket has left (module docs).
unsafe impl Send for Ticket {}

struct Pool {
    state: Mutex<State>,
    /// Signalled when tickets are offered.
    offered: Condvar,
    /// Signalled when a worker leaves a job.
    left: Condvar,
}

struct State {
    tickets: VecDeque<Ticket>,
    /// Workers started (never stopped).
    workers: usize,
    /// Per job (its `data`), the workers that joined it and have not left,
    /// as a short list: few launches run at once.
    joined: Vec<(*const (), usize)>,
}

// SAFETY: the pointers in `State` are only compared, or handed to workers
// under the rules of `Ticket`.
unsafe impl Send for State {}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        state: Mutex::new(State {
            tickets: VecDeque::new(),
            workers: 0,
            joined: Vec::new(),
        }),
        offered: Condvar::new(),
        left: Condvar::new(),
    })
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Starts workers until there are `wanted` (or a thread cannot be
/// started: then there are fewer, and launches run with what there is).
fn ensure_workers(pool: &'static Pool, state: &mut State, wanted: usize) {
    while state.workers < wanted {
        let started = std::thread::Builder::new()
            .name("pypto-block".to_owned())
            .spawn(move || work_forever(pool));
        if started.is_err() {
            return;
        }
        state.workers += 1;
    }
}

fn work_forever(pool: &'static Pool) {
    let mut state = pool.lock();
    loop {
        let Some(ticket) = state.tickets.pop_front() else {
            state = pool.offered.wait(state).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        match state.joined.iter_mut().find(|(d, _)| *d == ticket.data) {
            Some((_, n)) => *n += 1,
            None => state.joined.push((ticket.data, 1)),
        }
        drop(state);
        // A panic cannot cross the job's blocks (they return their
        // failures), but were one to, the launch must still see this worker
        // leave, or it would wait forever.
        // SAFETY: the ticket's launch waits for this worker to leave before
        // its job goes away (it counted the worker as joined above).
        let _ =
            std::panic::catch_unwind(AssertUnwindSafe(|| unsafe { (ticket.work)(ticket.data) }));
        state = pool.lock();
        if let Some(i) = state.joined.iter().position(|(d, _)| *d == ticket.data) {
            state.joined[i].1 -= 1;
            if state.joined[i].1 == 0 {
                state.joined.swap_remove(i);
            }
        }
        pool.left.notify_all();
    }
}

/// Runs `job` on this thread and on up to `helpers` pool workers, and
/// returns when every worker that joined has left it. `work` is called
/// once per thread and must return when no work is left.
pub(super) fn run<J: Sync>(job: &J, helpers: usize, work: fn(&J)) {
    // `work` is not a closure, so one monomorphic function can call it
    // through the ticket's untyped pointer.
    struct Job<'a, J> {
        job: &'a J,
        work: fn(&J),
    }
    /// Safety: `data` points at a live `Job<J>`.
    unsafe fn trampoline<J>(data: *const ()) {
        // SAFETY: this function's contract.
        let job = unsafe { &*data.cast::<Job<'_, J>>() };
        (job.work)(job.job);
    }
    /// Takes back the job's untaken tickets and waits for the workers that
    /// joined it to leave; on drop, so that it happens even if `work`
    /// unwinds on this thread (the job lives in this frame).
    struct Leave {
        pool: &'static Pool,
        data: *const (),
    }
    impl Drop for Leave {
        fn drop(&mut self) {
            let mut state = self.pool.lock();
            state.tickets.retain(|t| t.data != self.data);
            while state.joined.iter().any(|(d, _)| *d == self.data) {
                state = self
                    .pool
                    .left
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
        }
    }
    let erased = Job { job, work };
    let data: *const () = (&raw const erased).cast();
    if helpers == 0 {
        work(job);
        return;
    }
    let pool = pool();
    let leave = Leave { pool, data };
    let mut state = pool.lock();
    ensure_workers(pool, &mut state, helpers);
    let offered = helpers.min(state.workers);
    for _ in 0..offered {
        state.tickets.push_back(Ticket {
            work: trampoline::<J>,
            data,
        });
    }
    drop(state);
    for _ in 0..offered {
        pool.offered.notify_one();
    }
    work(job);
    drop(leave);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Count {
        next: AtomicU32,
        total: u32,
        threads: Mutex<HashSet<std::thread::ThreadId>>,
        done: Mutex<Vec<u32>>,
    }

    fn count(c: &Count) {
        loop {
            let i = c.next.fetch_add(1, Ordering::Relaxed);
            if i >= c.total {
                return;
            }
            c.threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(1));
            c.done.lock().unwrap().push(i);
        }
    }

    #[test]
    fn every_item_runs_once_and_workers_are_kept() {
        let job = |total| Count {
            next: AtomicU32::new(0),
            total,
            threads: Mutex::new(HashSet::new()),
            done: Mutex::new(Vec::new()),
        };
        let mut helpers_seen = HashSet::new();
        for _ in 0..3 {
            let c = job(40);
            run(&c, 3, count);
            let mut done = c.done.into_inner().unwrap();
            done.sort_unstable();
            assert_eq!(done, (0..40).collect::<Vec<_>>());
            let mut threads = c.threads.into_inner().unwrap();
            threads.remove(&std::thread::current().id());
            assert!(
                threads.len() <= 3,
                "{} helpers for 3 tickets",
                threads.len()
            );
            helpers_seen.extend(threads);
        }
        // Every helper of the three jobs is one of the pool's workers, kept
        // from one job to the next (other tests share the pool).
        assert!(helpers_seen.len() <= pool().lock().workers);
    }

    /// Work that panics on the launching thread still leaves only after
    /// the workers that joined have left the job (which lives in the
    /// launching frame): they finish every item.
    #[test]
    fn a_panic_on_the_launching_thread_waits_for_the_workers() {
        struct Job {
            launcher: std::thread::ThreadId,
            inner: Count,
        }
        fn work(job: &Job) {
            if std::thread::current().id() == job.launcher {
                // Let a worker join before the launcher gives up.
                std::thread::sleep(std::time::Duration::from_millis(5));
                panic!("the launching thread's work failed");
            }
            count(&job.inner);
        }
        let job = Job {
            launcher: std::thread::current().id(),
            inner: Count {
                next: AtomicU32::new(0),
                total: 20,
                threads: Mutex::new(HashSet::new()),
                done: Mutex::new(Vec::new()),
            },
        };
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| run(&job, 1, work)));
        assert!(unwound.is_err());
        // Whatever a worker took, it finished before `run` unwound.
        let taken = job.inner.next.load(Ordering::Relaxed).min(20) as usize;
        assert_eq!(job.inner.done.lock().unwrap().len(), taken);
    }

    #[test]
    fn launches_from_many_threads_at_once_each_get_all_their_items() {
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..5 {
                        let c = Count {
                            next: AtomicU32::new(0),
                            total: 12,
                            threads: Mutex::new(HashSet::new()),
                            done: Mutex::new(Vec::new()),
                        };
                        run(&c, 2, count);
                        assert_eq!(c.done.into_inner().unwrap().len(), 12);
                    }
                });
            }
        });
    }
}
