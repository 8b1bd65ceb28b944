//! The `pypto-build` command: `check` and `dump` over spec files, `emit`
//! of generated code, `schema`, the spec files' JSON Schema, and `run`, a
//! vendor program on the emulation (`crate::run`).
//!
//! Exit status: 0 when every spec is valid, 1 when a spec has errors, 2 when
//! the command line itself is wrong.

use std::io::Write;
use std::path::Path;

use crate::codegen::ascendc::{self, Source};
use crate::codegen::{Plan, SymbolScope};

const USAGE: &str = "\
usage: pypto-build <command> PATH...

commands:
  check [--compile] [--require-dim-docs] PATH...
                  check spec files and directories, and render each kernel's
                  template for each specialisation; print each problem as
                  PATH:LINE:COL: error: MESSAGE (for a template problem, the
                  template's line). With --compile, also compile the rendered
                  sources, syntax only, with the host C++ compiler ($CXX, else
                  c++) against the emulation headers; its errors name
                  template lines too. With --require-dim-docs, a DYNAMIC
                  dim that does not say what it counts is an error
  dump PATH...    print the checked model: what each dim marker resolved to
                  and the STATIC specialisations to build
  emit rust PATH...      print the generated Rust wrappers
  emit ascendc PATH...   print the rendered Ascend C sources
  schema          print the JSON Schema (draft 2020-12) of spec files, for
                  editors: structure only, `check` checks the rest
  run FILE [-I DIR]... [-D NAME[=VALUE]]... [-- ARGS...]
                  compile a vendor program (kernel, host `main`, ACL calls,
                  `<<<>>>` launches) whole against the emulation and a host
                  ACL, and run it with ARGS: every launch runs on the CPU
                  with the sanitizer checks on. Exits with the program's
                  status, or 1 when a launch failed and the program exited 0

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
        "schema" => return schema(paths, out, err),
        "run" => return crate::run::command(paths, err),
        other => {
            writeln!(err, "error: unknown command `{other}`\n\n{USAGE}")?;
            return Ok(2);
        }
    }
    // `check`'s options, before the paths.
    let mut compile = false;
    let mut require_docs = false;
    let mut paths = paths;
    while command == "check"
        && let Some((first, rest)) = paths.split_first()
    {
        match first.as_str() {
            "--compile" => compile = true,
            "--require-dim-docs" => require_docs = true,
            _ => break,
        }
        paths = rest;
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
    if require_docs && let Err(problems) = crate::model::require_dim_docs(&model) {
        writeln!(err, "{}", problems.render())?;
        let n = problems.len();
        writeln!(
            err,
            "error: {n} DYNAMIC dim{} without a doc",
            if n == 1 { "" } else { "s" }
        )?;
        return Ok(1);
    }
    for warning in model.warnings() {
        writeln!(err, "warning: {warning}")?;
    }
    if command == "dump" {
        write!(out, "{}", crate::dump::model(&model))?;
        return Ok(0);
    }
    let sources = match render_templates(&model, err)? {
        Ok(sources) => sources,
        Err(code) => return Ok(code),
    };
    if compile && let Err(code) = compile_sources(&model, &sources, err)? {
        return Ok(code);
    }
    // Kernels as a user calls them: a kernel with variants is one.
    let variants = model.kernels.iter().filter(|k| k.variant.is_some()).count();
    let choosers = model
        .kernels
        .iter()
        .filter(|k| k.variant.as_ref().is_some_and(|v| v.index == 0))
        .count();
    let k = model.kernels.len() - variants + choosers;
    let f = model.files.len();
    write!(
        out,
        "ok: {k} kernel{} in {f} spec file{}",
        plural(k),
        plural(f)
    )?;
    if variants > 0 {
        write!(
            out,
            "; {choosers} choose{} among {variants} variants",
            if choosers == 1 { "s" } else { "" }
        )?;
    }
    if compile {
        let n = sources.len();
        write!(
            out,
            "; {n} rendered source{} compile{}",
            plural(n),
            if n == 1 { "s" } else { "" }
        )?;
    }
    writeln!(out)?;
    Ok(0)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Renders every kernel's template for each specialisation, strictly, as a
/// build would; prints each problem, located in its template.
fn render_templates(
    model: &crate::Model,
    err: &mut dyn Write,
) -> std::io::Result<Result<Vec<Source>, i32>> {
    let scope = SymbolScope::Prefix("crate".to_owned());
    let plans: Vec<Plan<'_>> = model.kernels.iter().map(|k| Plan::new(k, &scope)).collect();
    let mut read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| crate::Error::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let (sources, errors) = ascendc::render_all(&plans, &mut read);
    if errors.is_empty() {
        return Ok(Ok(sources));
    }
    for e in &errors {
        match e {
            crate::Error::Template { .. } => writeln!(err, "{e}")?,
            _ => writeln!(err, "error: {e}")?,
        }
    }
    let n = errors.len();
    writeln!(
        err,
        "error: {n} problem{} found in the templates",
        plural(n)
    )?;
    Ok(Err(1))
}

/// Compiles the rendered sources, syntax only, in a scratch directory with
/// the emulation headers; prints what the compiler said about each it
/// rejected, and keeps the directory for a look at the sources.
fn compile_sources(
    model: &crate::Model,
    sources: &[Source],
    err: &mut dyn Write,
) -> std::io::Result<Result<(), i32>> {
    let dir = std::env::temp_dir().join(format!("pypto-build-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let include_dir = dir.join("include");
    let source_dir = dir.join("src");
    let mut paths = Vec::with_capacity(sources.len());
    let written: Result<(), crate::Error> = (|| {
        for (name, text) in crate::library::EMULATION_HEADERS {
            crate::write_if_changed(&include_dir.join(name), text)?;
        }
        for source in sources {
            let path = source_dir.join(&source.file_name);
            crate::write_if_changed(&path, &source.text)?;
            paths.push(path);
        }
        Ok(())
    })();
    if let Err(e) = written {
        writeln!(err, "error: {e}")?;
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(Err(1));
    }
    let rejected = match crate::toolchain::syntax_check(&include_dir, &paths) {
        Ok(rejected) => rejected,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            let _ = std::fs::remove_dir_all(&dir);
            return Ok(Err(1));
        }
    };
    if rejected.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(Ok(()));
    }
    let failure = crate::toolchain::CompileFailure {
        summary: String::new(),
        rejected,
    };
    writeln!(
        err,
        "{}",
        crate::builder::describe_failure(&failure, sources, model)
    )?;
    let n = failure.rejected.len();
    writeln!(
        err,
        "error: {n} rendered source{} failed to compile; the sources are in {}",
        plural(n),
        crate::diag::display_path(&source_dir)
    )?;
    Ok(Err(1))
}

fn schema(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<i32> {
    if let Some(arg) = args.first() {
        writeln!(
            err,
            "error: `schema` takes no arguments, found `{arg}`\n\n{USAGE}"
        )?;
        return Ok(2);
    }
    // A `Value` always serialises; the fallback keeps this free of panics.
    let text = serde_json::to_string_pretty(&crate::grammar::schema()).unwrap_or_default();
    writeln!(out, "{text}")?;
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
        Err(e @ crate::Error::Template { .. }) => {
            writeln!(err, "{e}")?;
            return Ok(1);
        }
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(1);
        }
    }
    Ok(0)
}
