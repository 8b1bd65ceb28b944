//! Builds the kernels of the examples and of the workspace tests, as a
//! user's build script would.

fn main() -> anyhow::Result<()> {
    pypto_build::Builder::new()
        .spec("examples/kernels/add_bias.yaml")
        .spec_dir("tests/kernels")
        .build()?;
    Ok(())
}
