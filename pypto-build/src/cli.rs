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
