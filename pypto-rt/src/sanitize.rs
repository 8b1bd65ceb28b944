//! Which of the host emulation's sanitizer checks run: racecheck, initcheck,
//! synccheck and memcheck (the vendor's msSanitizer tools, on the CPU).
//! All are on in debug builds and off in release builds (a shipped
//! binary's CPU fallback runs at full speed), unless `PYPTO_SANITIZE` or
//! [`with_sanitize`] says otherwise.

use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;

use crate::error::Error;

/// Chooses the sanitizer checks of every host launch of the process:
/// `PYPTO_SANITIZE=off` (or `none`), `on` (or `all`), or a comma-separated
/// list of `race`, `init`, `sync`, `mem`. Unset, the checks follow the build
/// profile of pypto-rt: all in debug builds (tests, `cargo run`), none in
/// release builds ([`Sanitize::DEFAULT`]). Read
/// once, at the first host launch; any other value makes every host launch
/// fail with [`Error::Setting`]. [`with_sanitize`] overrides it on one
/// thread. NPU launches ignore it.
pub const SANITIZE_VAR: &str = "PYPTO_SANITIZE";

/// A set of sanitizer checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sanitize(u32);

impl Sanitize {
    /// No checks.
    pub const OFF: Sanitize = Sanitize(0);
    /// Pipe races between a kernel's pipes (MTE2, V, MTE3, M, MTE1, FIX, S).
    pub const RACE: Sanitize = Sanitize(1);
    /// Reads of local memory no instruction of the launch wrote.
    pub const INIT: Sanitize = Sanitize(2);
    /// `SetFlag`s never waited for, event IDs never released, queue
    /// buffers never freed, at the end of each block.
    pub const SYNC: Sanitize = Sanitize(4);
    /// Blocks of one launch writing (or reading what another writes)
    /// overlapping global memory.
    pub const MEM: Sanitize = Sanitize(8);
    /// Every check.
    pub const ALL: Sanitize = Sanitize(15);
    /// The checks when `PYPTO_SANITIZE` is unset: all in debug builds, none
    /// in release builds, as `PYPTO_READONLY_INPUTS` does.
    pub const DEFAULT: Sanitize = if cfg!(debug_assertions) {
        Sanitize::ALL
    } else {
        Sanitize::OFF
    };

    const NAMES: [(&'static str, Sanitize); 4] = [
        ("race", Sanitize::RACE),
        ("init", Sanitize::INIT),
        ("sync", Sanitize::SYNC),
        ("mem", Sanitize::MEM),
    ];

    /// Whether every check of `other` is in this set.
    pub fn contains(self, other: Sanitize) -> bool {
        self.0 & other.0 == other.0
    }

    /// The bits the emulation reads (`HostLaunch::sanitize`).
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Parses a `PYPTO_SANITIZE` value.
    ///
    /// ```
    /// use pypto_rt::Sanitize;
    /// assert_eq!(Sanitize::parse("off"), Ok(Sanitize::OFF));
    /// assert_eq!(Sanitize::parse(" race, sync "), Ok(Sanitize::RACE | Sanitize::SYNC));
    /// assert_eq!(
    ///     Sanitize::parse("races").unwrap_err().to_string(),
    ///     "PYPTO_SANITIZE: `races` is not a list of checks; use `on`, `off`, or a comma-separated \
    ///      list of race, init, sync, mem"
    /// );
    /// ```
    ///
    /// # Errors
    /// [`Error::Setting`] for anything else.
    pub fn parse(value: &str) -> Result<Sanitize, Error> {
        let bad = || Error::Setting {
            setting: SANITIZE_VAR,
            value: value.to_owned(),
            expected: "a list of checks; use `on`, `off`, or a comma-separated list of race, \
                       init, sync, mem",
        };
        match value.trim() {
            "" | "on" | "all" => return Ok(Sanitize::ALL),
            "off" | "none" => return Ok(Sanitize::OFF),
            _ => {}
        }
        let mut set = Sanitize::OFF;
        for word in value.split(',').map(str::trim) {
            let (_, check) = Sanitize::NAMES
                .iter()
                .find(|(name, _)| *name == word)
                .ok_or_else(bad)?;
            set = set | *check;
        }
        Ok(set)
    }
}

impl std::ops::BitOr for Sanitize {
    type Output = Sanitize;
    fn bitor(self, other: Sanitize) -> Sanitize {
        Sanitize(self.0 | other.0)
    }
}

impl fmt::Display for Sanitize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Sanitize::NAMES
            .iter()
            .filter(|(_, c)| self.contains(*c))
            .map(|(n, _)| *n)
            .collect();
        if names.is_empty() {
            f.write_str("off")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

thread_local! {
    static FORCED: Cell<Option<Sanitize>> = const { Cell::new(None) };
}

/// `PYPTO_SANITIZE`, parsed once.
static FROM_ENV: OnceLock<Result<Sanitize, Error>> = OnceLock::new();

/// The checks of a host launch on this thread: [`with_sanitize`]'s, else
/// `PYPTO_SANITIZE`'s, else [`Sanitize::DEFAULT`]. Inline, with the
/// setting read and copied once it is known: every host launch asks.
#[inline]
pub(crate) fn current() -> Result<Sanitize, Error> {
    if let Some(forced) = FORCED.with(Cell::get) {
        return Ok(forced);
    }
    match FROM_ENV.get() {
        Some(Ok(checks)) => Ok(*checks),
        _ => from_env(),
    }
}

/// `PYPTO_SANITIZE`'s checks, read the first time (or its error).
#[cold]
#[inline(never)]
fn from_env() -> Result<Sanitize, Error> {
    match FROM_ENV.get_or_init(|| match std::env::var_os(SANITIZE_VAR) {
        None => Ok(Sanitize::DEFAULT),
        Some(v) => Sanitize::parse(&v.to_string_lossy()),
    }) {
        Ok(checks) => Ok(*checks),
        Err(e) => Err(e.clone()),
    }
}

/// Runs `f` with the host launches made on this thread using `checks`,
/// whatever `PYPTO_SANITIZE` says; calls nest, the innermost wins, and the
/// setting ends when `f` returns or unwinds. For tests and benchmarks.
///
/// ```
/// use pypto_rt::{Sanitize, with_sanitize};
/// assert_eq!(with_sanitize(Sanitize::OFF, || 7), 7);
/// ```
pub fn with_sanitize<R>(checks: Sanitize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Sanitize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|f| f.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|f| f.replace(Some(checks))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_follows_the_build_profile() {
        // `cargo test` builds with debug assertions: every check; a
        // release build (`cargo test --release`) none.
        let expected = if cfg!(debug_assertions) {
            Sanitize::ALL
        } else {
            Sanitize::OFF
        };
        assert_eq!(Sanitize::DEFAULT, expected);
        if std::env::var_os(SANITIZE_VAR).is_none() {
            assert_eq!(current().unwrap(), expected);
        }
    }

    #[test]
    fn settings_parse_and_nest() {
        assert_eq!(Sanitize::parse("on"), Ok(Sanitize::ALL));
        assert_eq!(Sanitize::parse("mem"), Ok(Sanitize::MEM));
        assert_eq!((Sanitize::RACE | Sanitize::MEM).to_string(), "race,mem");
        assert_eq!(Sanitize::OFF.to_string(), "off");
        assert!(Sanitize::parse("race,,sync").is_err());
        let inner = with_sanitize(Sanitize::OFF, || {
            with_sanitize(Sanitize::SYNC, || current().unwrap())
        });
        assert_eq!(inner, Sanitize::SYNC);
        assert!(FORCED.with(Cell::get).is_none());
    }
}
