//! Tests that run in a process of their own: the test binary starts itself
//! again to run one of its tests, and checks that the child ran it and what
//! it printed.
//!
//! A test meant only for a child is `#[ignore]`d, so that the normal run
//! lists it as ignored rather than as a pass, and it begins with [`enter`],
//! which panics outside the child its parent started. The parent runs it
//! with [`run`], which asserts that libtest started exactly that test and
//! that it reached [`enter`]: a child that did not run fails its parent.

use std::process::Command;

/// Names the test a child process was started for.
pub const CHILD_VAR: &str = "PYPTO_TEST_CHILD";

/// What a child printed on entering, on stderr, before anything else.
const ENTERED: &str = "pypto-tests child: entered ";

/// A finished child process.
#[derive(Debug)]
pub struct Child {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// Whether libtest reported the child's one test passed.
    pub fn passed(&self) -> bool {
        self.code == Some(0)
            && self
                .stdout
                .contains("\ntest result: ok. 1 passed; 0 failed;")
    }

    /// The lines of stdout that follow `prefix` (a line libtest began with
    /// its "test NAME ... " may carry one), without the prefix.
    pub fn printed(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|l| l.split_once(prefix).map(|(_, printed)| printed))
            .collect()
    }
}

/// Runs test `name` of this test binary in a child process, with `env` set
/// and [`CHILD_VAR`] naming it; asserts that the child started that one test
/// and reached [`enter`] (for a test that does not call `enter`: that it
/// passed). Whether it then passed, crashed or printed the right things is
/// for the caller to check.
pub fn run(name: &str, env: &[(&str, &str)]) -> Child {
    // A child never starts another for its own test (no chain of processes
    // when a child finds what its parent found).
    assert!(
        std::env::var(CHILD_VAR).map_or(true, |v| v != name),
        "test `{name}`, run as a child, would start a child for itself"
    );
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, name)
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs again");
    let child = Child {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        child.stdout.starts_with("\nrunning 1 test\n"),
        "the child did not start test `{name}`: {child:#?}"
    );
    assert!(
        child.stderr.contains(&format!("{ENTERED}{name}\n")) || child.passed(),
        "the child started test `{name}` but did not reach pypto_tests::child::enter: {child:#?}"
    );
    child
}

/// The first call of a child-only test `name`: panics unless this process
/// is the child [`run`] started for it, else says on stderr that it entered.
pub fn enter(name: &str) {
    match std::env::var(CHILD_VAR) {
        Ok(v) if v == name => eprintln!("{ENTERED}{name}"),
        _ => panic!(
            "`{name}` runs only in the child process its parent test starts \
             (pypto_tests::child::run); it is #[ignore]d so that a normal run skips it"
        ),
    }
}

/// For a test that needs read-only inputs (a kernel's raw write to an input
/// must fault): whether it already ran, in a child process with
/// `PYPTO_READONLY_INPUTS=1`, because this process has them off (release
/// builds, or the variable set to `0`). The test returns at once when this
/// is true, and runs its checks when it is false; so it runs in every
/// profile, and a failure in the child fails it.
pub fn ran_with_read_only_inputs(name: &str) -> bool {
    if crate::read_only_inputs() {
        return false;
    }
    assert!(
        std::env::var(CHILD_VAR).map_or(true, |v| v != name),
        "`{name}`: {}=1 did not turn read-only inputs on in its child process",
        pypto_rt::READONLY_INPUTS_VAR
    );
    let child = run(name, &[(pypto_rt::READONLY_INPUTS_VAR, "1")]);
    assert!(
        child.passed(),
        "`{name}` with {}=1 in a child process failed: {child:#?}",
        pypto_rt::READONLY_INPUTS_VAR
    );
    true
}
