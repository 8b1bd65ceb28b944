//! Builds the kernels of the examples and of the workspace tests, as a
//! user's build script would.

fn main() -> anyhow::Result<()> {
    pypto_build::Builder::new()
        .spec_dir("examples/kernels")
        .spec_dir("tests/kernels")
        .build()?;
    Ok(())
}
