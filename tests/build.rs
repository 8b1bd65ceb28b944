//! Builds the kernels the tests call: their own (`kernels/`) and the
//! examples' (`../examples/kernels/`), as a user's build script would; and
//! the broken builtins of `support/mutants.rs`, written into
//! `OUT_DIR/mutants/` first.

use std::path::Path;

#[path = "support/mutants.rs"]
mod mutants;

fn main() -> anyhow::Result<()> {
    let out = std::env::var("OUT_DIR")?;
    let dir = Path::new(&out).join("mutants");
    write_mutants(&dir)?;
    pypto_build::Builder::new()
        .spec_dir("../examples/kernels")
        .spec_dir("kernels")
        .spec_dir(&dir)
        .build()?;
    println!("cargo:rerun-if-changed=support/mutants.rs");
    println!("cargo:rerun-if-changed=../templates/builtin");
    Ok(())
}

/// Each mutant's template, and one spec declaring them all.
fn write_mutants(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut spec = String::from(
        "# Broken builtins (tests/support/mutants.rs), written by tests/build.rs.\n\
         dims:\n  R: DYNAMIC\n  C: DYNAMIC\n  N: DYNAMIC\nkernels:\n",
    );
    for m in mutants::MUTANTS {
        let builtin = Path::new("../templates/builtin").join(format!("{}.hbs", m.builtin));
        let text =
            mutants::apply(m, &std::fs::read_to_string(&builtin)?).map_err(anyhow::Error::msg)?;
        let file = format!("{}.hbs", m.name);
        pypto_build::write_if_changed(&dir.join(&file), &text)?;
        spec.push_str(&format!(
            "  {}:\n    doc: \"builtin/{} broken: {}.\"\n    template: {file}\n    params: {}\n",
            m.name,
            m.builtin,
            m.defect.replace('"', "'"),
            mutants::params(m.builtin, m.dtype),
        ));
    }
    pypto_build::write_if_changed(&dir.join("mutants.yaml"), &spec)?;
    Ok(())
}
