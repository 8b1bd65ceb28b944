//! Builds the kernels the tests call: their own (`kernels/`) and the
//! examples' (`../examples/kernels/`), as a user's build script would.

fn main() -> anyhow::Result<()> {
    pypto_build::Builder::new()
        .spec_dir("../examples/kernels")
        .spec_dir("kernels")
        .build()?;
    Ok(())
}
