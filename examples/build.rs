//! Builds the examples' kernels, as a user's build script would. The tests'
//! kernels are built by the `pypto-tests` package (`tests/build.rs`).

fn main() -> anyhow::Result<()> {
    pypto_build::Builder::new()
        .spec_dir("examples/kernels")
        .build()?;
    Ok(())
}
