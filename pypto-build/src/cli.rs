//! The `pypto-build` command: `check` and `dump` over spec files.
//!
//! Exit status: 0 when every spec is valid, 1 when a spec has errors, 2 when
//! the command line itself is wrong.

use std::io::Write;

const USAGE: &str = "\
usage: pypto-build <command> PATH...

commands:
  check PATH...   check spec files and directories; print each problem as
                  PATH:LINE:COL: error: MESSAGE
  dump PATH...    print the checked model: what each dim marker resolved to
                  and the STATIC specialisations to build
  emit rust PATH...      print the generated Rust wrappers
  emit ascendc PATH...   print the rendered Ascend C sources

Directories are searched for *.yaml and *.yml files, in sorted order.";

/// Runs the command line `args` (without the program name), writing results
/// to `out` and diagnostics to `err`; returns the exit status.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    // An output stream closed early (piped into `head`): nothing more to say.
    run_inner(args, out, err).unwrap_or(1)
}

fn run_inner(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<i32> {
    let Some((command, paths)) = args.split_first() else {
        writeln!(err, "{USAGE}")?;
        return Ok(2);
    };
    match command.as_str() {
        "-h" | "--help" | "help" => {
            writeln!(out, "{USAGE}")?;
            return Ok(0);
        }
        "check" | "dump" => {}
        "emit" => return emit(paths, out, err),
        other => {
            writeln!(err, "error: unknown command `{other}`\n\n{USAGE}")?;
            return Ok(2);
        }
    }
    if paths.is_empty() {
        writeln!(
            err,
            "error: `{command}` needs at least one spec file or directory\n\n{USAGE}"
        )?;
        return Ok(2);
    }
    let model = match crate::check_paths(paths) {
        Ok(model) => model,
        Err(problems) => {
            writeln!(err, "{}", problems.render())?;
            let n = problems.len();
            writeln!(
                err,
                "error: {n} problem{} found in the specs",
                if n == 1 { "" } else { "s" }
            )?;
            return Ok(1);
        }
    };
    if command == "dump" {
        write!(out, "{}", crate::dump::model(&model))?;
    } else {
        let k = model.kernels.len();
        let f = model.files.len();
        writeln!(
            out,
            "ok: {k} kernel{} in {f} spec file{}",
            if k == 1 { "" } else { "s" },
            if f == 1 { "" } else { "s" }
        )?;
    }
    Ok(0)
}

fn emit(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<i32> {
    let (language, paths) = match args.split_first() {
        Some((l, p)) if (l == "rust" || l == "ascendc") && !p.is_empty() => (l.as_str(), p),
        _ => {
            writeln!(
                err,
                "error: `emit` takes `rust` or `ascendc` and at least one spec path\n\n{USAGE}"
            )?;
            return Ok(2);
        }
    };
    let mut builder = crate::Builder::new()
        .symbol_prefix("crate")
        .cargo_metadata(false);
    for p in paths {
        builder = builder.spec(p);
    }
    match builder.generate() {
        Ok(generated) if language == "rust" => write!(out, "{}", generated.rust)?,
        Ok(generated) => {
            for source in &generated.sources {
                writeln!(out, "// ===== {} =====\n{}", source.file_name, source.text)?;
            }
        }
        Err(crate::Error::Spec(problems)) => {
            writeln!(err, "{}", problems.render())?;
            return Ok(1);
        }
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(1);
        }
    }
    Ok(0)
}
