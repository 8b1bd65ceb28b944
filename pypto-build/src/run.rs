//! `pypto-build run FILE.asc`: a vendor program in the single-source style
//! (a kernel, a host `main` with ACL calls, `<<<…>>>` launches) compiled
//! whole with the host C++ compiler against the emulation and a host ACL
//! (`templates/include/acl/acl.h`), each launch run on the emulation with
//! every sanitizer check on (`templates/include/pypto_run.h`). The program's
//! output passes through; its exit status is the command's, except that a
//! failed launch the program did not notice still fails the run.
//!
//! The file is never changed: the compiler reads a copy whose launches are
//! rewritten into calls, under `#line 1 "FILE"`, so errors keep the file's
//! lines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `run` was asked to do.
#[derive(Debug, Default, PartialEq, Eq)]
struct RunArgs {
    file: PathBuf,
    includes: Vec<PathBuf>,
    defines: Vec<String>,
    program_args: Vec<String>,
}

/// `FILE [-I DIR]… [-D NAME[=VALUE]]… [-- ARGS…]`.
fn parse(args: &[String]) -> Result<RunArgs, String> {
    let mut run = RunArgs::default();
    let mut file = None;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let value = |i: &mut usize, flag: &str| -> Result<String, String> {
            if arg.len() > 2 {
                return Ok(arg[2..].to_owned());
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        if arg == "--" {
            run.program_args = args[i + 1..].to_vec();
            break;
        } else if arg.starts_with("-I") {
            run.includes.push(PathBuf::from(value(&mut i, "-I")?));
        } else if arg.starts_with("-D") {
            let define = value(&mut i, "-D")?;
            let name = define.split('=').next().unwrap_or_default();
            if let Some(problem) = crate::names::c_identifier_problem(name) {
                return Err(format!(
                    "`-D {define}`: `{name}` cannot name a macro: {problem}"
                ));
            }
            run.defines.push(define);
        } else if arg.starts_with('-') {
            return Err(format!("unknown option `{arg}`"));
        } else if file.is_some() {
            return Err(format!(
                "`run` takes one program, found `{arg}` too (its arguments go after `--`)"
            ));
        } else {
            file = Some(PathBuf::from(arg));
        }
        i += 1;
    }
    run.file = file.ok_or("`run` needs a program file")?;
    Ok(run)
}

/// Which cores a kernel runs on, from its declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cores {
    Vector,
    Cube,
    Mixed,
}

impl Cores {
    fn cpp(self) -> &'static str {
        match self {
            Cores::Vector => "pypto_run::Cores::Vector",
            Cores::Cube => "pypto_run::Cores::Cube",
            Cores::Mixed => "pypto_run::Cores::Mixed",
        }
    }
}

/// The core kind and parameter names of kernel `name` as `text` declares
/// it (`__global__ … name(…)`); a vector kernel with no parameter names
/// when `text` does not declare it.
fn kernel_decl(text: &str, name: &str) -> (Cores, Vec<String>) {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for (at, _) in text.match_indices(name) {
        let before = text[..at].chars().next_back();
        let rest = &text[at + name.len()..];
        if before.is_some_and(is_ident) || rest.chars().next().is_some_and(is_ident) {
            continue;
        }
        let Some(params) = rest.trim_start().strip_prefix('(') else {
            continue;
        };
        // The declaration's head: back to the previous statement or brace.
        let start = text[..at].rfind([';', '}', '{']).map_or(0, |i| i + 1);
        let head = &text[start..at];
        if !(head.contains("__global__") || head.contains("__aicore__")) {
            continue;
        }
        let Some(close) = params.find(')') else {
            continue;
        };
        let names = params[..close]
            .split(',')
            .map(|p| {
                let p = p.split('=').next().unwrap_or_default().trim_end();
                let tail: String = p
                    .chars()
                    .rev()
                    .take_while(|c| is_ident(*c))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                tail
            })
            .collect();
        // The body, for the older `KERNEL_TASK_TYPE_DEFAULT` form.
        let body_end = params[close..]
            .find('{')
            .and_then(|open| {
                let body = &params[close + open..];
                let mut depth = 0usize;
                body.char_indices().find_map(|(i, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    (depth == 0).then_some(close + open + i)
                })
            })
            .unwrap_or(close);
        let body = &params[close..body_end];
        let cores = if head.contains("__mix__") || body.contains("KERNEL_TYPE_MIX") {
            Cores::Mixed
        } else if head.contains("__cube__") || body.contains("KERNEL_TYPE_AIC_ONLY") {
            Cores::Cube
        } else {
            Cores::Vector
        };
        return (cores, names);
    }
    (Cores::Vector, Vec::new())
}

/// The start of the kernel expression that ends at `end` (`name`,
/// `ns::name`, `name<float, 8>`), and the kernel's name; `None` when there
/// is none.
fn kernel_before(text: &str, end: usize) -> Option<(usize, String)> {
    let b = text.as_bytes();
    let mut i = end;
    while i > 0 && b[i - 1].is_ascii_whitespace() {
        i -= 1;
    }
    // Template arguments, nested.
    if i > 0 && b[i - 1] == b'>' {
        let mut depth = 0usize;
        while i > 0 {
            i -= 1;
            match b[i] {
                b'>' => depth += 1,
                b'<' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                // A parenthesised argument, `(4 > 2)`, whole.
                b')' => {
                    let mut parens = 1usize;
                    while parens > 0 && i > 0 {
                        i -= 1;
                        match b[i] {
                            b')' => parens += 1,
                            b'(' => parens -= 1,
                            _ => {}
                        }
                    }
                }
                b';' | b'{' | b'}' => return None,
                _ => {}
            }
        }
        if depth != 0 {
            return None;
        }
    }
    let name_end = {
        let mut j = i;
        while j > 0 && b[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        j
    };
    let mut start = name_end;
    while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
        start -= 1;
    }
    if start == name_end {
        return None;
    }
    let name = text[start..name_end].to_owned();
    // Qualifiers (`ns::`).
    while start >= 2 && &text[start - 2..start] == "::" {
        let mut s = start - 2;
        while s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_') {
            s -= 1;
        }
        start = s;
    }
    Some((start, name))
}

/// The program with each `kernel<<<blocks, l2ctrl, stream>>>(args)` made
/// `pypto_run::launch<CORES>("kernel", "params", &kernel, blocks, l2ctrl,
/// stream)(args)`; lines are kept. An error names a launch it cannot read.
fn rewrite(text: &str, headers: &[String]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 256);
    let mut done = 0;
    for (open, close) in crate::model::launches(text) {
        let line = text[..open].lines().count().max(1);
        let (start, name) = kernel_before(text, open)
            .filter(|(start, _)| *start >= done)
            .ok_or_else(|| format!("line {line}: a `<<<…>>>` launch without a kernel before it"))?;
        let config = &text[open + 3..close - 3];
        if split_top_level(config).len() != 3 {
            return Err(format!(
                "line {line}: a launch of `{name}` needs three values in `<<<…>>>` (blocks, \
                 l2ctrl, stream)"
            ));
        }
        // Declared in the program, or in a header it includes.
        let (cores, params) = std::iter::once(text)
            .chain(headers.iter().map(String::as_str))
            .map(|t| kernel_decl(t, &name))
            .find(|(_, params)| !params.is_empty())
            .unwrap_or((Cores::Vector, Vec::new()));
        out.push_str(&text[done..start]);
        out.push_str(&format!(
            "pypto_run::launch<{}>(\"{name}\", \"{}\", &",
            cores.cpp(),
            params.join(",")
        ));
        out.push_str(&text[start..open]);
        out.push_str(", ");
        out.push_str(config);
        out.push(')');
        done = close;
    }
    out.push_str(&text[done..]);
    Ok(out)
}

/// `text` split at its commas outside brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Runs `pypto-build run ARGS`; returns the exit status.
pub(crate) fn command(args: &[String], err: &mut dyn Write) -> std::io::Result<i32> {
    let run = match parse(args) {
        Ok(run) => run,
        Err(e) => {
            writeln!(
                err,
                "error: {e}\n\nusage: pypto-build run FILE [-I DIR]… [-D NAME[=VALUE]]… [-- ARGS…]"
            )?;
            return Ok(2);
        }
    };
    let text = match crate::model::read_template(&run.file) {
        Ok(text) => text,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(1);
        }
    };
    let shown = crate::diag::display_path(&run.file);
    let headers = crate::model::quoted_headers(&run.file, &text);
    let copy = match rewrite(&text, &headers) {
        Ok(copy) => copy,
        Err(e) => {
            writeln!(err, "{shown}: error: {e}")?;
            return Ok(1);
        }
    };
    let dir = std::env::temp_dir().join(format!("pypto-build-run-{}", std::process::id()));
    let result = compile_and_run(&run, &copy, &dir, err);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn compile_and_run(
    run: &RunArgs,
    copy: &str,
    dir: &Path,
    err: &mut dyn Write,
) -> std::io::Result<i32> {
    let include_dir = dir.join("include");
    let real = run.file.canonicalize().unwrap_or_else(|_| run.file.clone());
    let at = crate::codegen::c_string(&real.display().to_string());
    let program = dir.join("program.cpp");
    let written: Result<(), crate::Error> = (|| {
        for (name, text) in crate::library::EMULATION_HEADERS {
            crate::write_if_changed(&include_dir.join(name), text)?;
        }
        crate::write_if_changed(
            &program,
            &format!("#include \"pypto_run.h\"\n#line 1 {at}\n{copy}"),
        )?;
        Ok(())
    })();
    if let Err(e) = written {
        writeln!(err, "error: {e}")?;
        return Ok(1);
    }
    let compiler = std::env::var_os("CXX")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "c++".into());
    let binary = dir.join("program");
    let mut compile = Command::new(&compiler);
    compile
        .args(["-std=c++17", "-O1", "-pthread", "-fnon-call-exceptions"])
        .args(["-DPYPTO_HOST_BACKEND=1", "-DPYPTO_NON_CALL_EXCEPTIONS=1"])
        .arg("-iquote")
        .arg(real.parent().unwrap_or(Path::new(".")))
        .arg("-I")
        .arg(&include_dir);
    for include in &run.includes {
        compile.arg("-I").arg(include);
    }
    for define in &run.defines {
        compile.arg(format!("-D{define}"));
    }
    let output = compile
        .arg(&program)
        .arg("-o")
        .arg(&binary)
        .env("LC_ALL", "C")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            writeln!(
                err,
                "error: cannot run the C++ compiler `{}`: {e}",
                compiler.to_string_lossy()
            )?;
            return Ok(1);
        }
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        writeln!(err, "{}", crate::toolchain::first_lines(&lines))?;
        writeln!(
            err,
            "error: `{}` failed to compile",
            crate::diag::display_path(&run.file)
        )?;
        return Ok(1);
    }
    let failures = dir.join("failures");
    let status = Command::new(&binary)
        .args(&run.program_args)
        .env("PYPTO_RUN_FAILURES", &failures)
        .status();
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            writeln!(err, "error: cannot run the compiled program: {e}")?;
            return Ok(1);
        }
    };
    let code = status.code().unwrap_or_else(|| signalled(&status));
    let failed = std::fs::read_to_string(&failures).unwrap_or_default();
    let launches = failed.lines().count();
    if code == 0 && launches > 0 {
        writeln!(
            err,
            "error: the program exited with 0, but {launches} launch{} failed (above)",
            if launches == 1 { "" } else { "es" }
        )?;
        return Ok(1);
    }
    Ok(code)
}

/// The shell's status for a program killed by a signal: 128 + the signal.
#[cfg(unix)]
fn signalled(status: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    128 + status.signal().unwrap_or(0)
}

#[cfg(not(unix))]
fn signalled(_: &std::process::ExitStatus) -> i32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_become_calls_on_the_same_lines() {
        let text = "__global__ __vector__ void add(GM_ADDR x, GM_ADDR y, uint32_t n)\n{\n}\n\
                    template <typename T, int N>\n__global__ __mix__(1, 2) void mm(GM_ADDR a)\n{\n}\n\
                    int main()\n{\n    add<<<8, nullptr, stream>>>(x, y, n);\n    \
                    mm<float, (4 > 2)><<<blocks(1, 2), nullptr, s>>>(a);\n    \
                    ns::add <<< 1, nullptr, s >>> (x, y, 3);\n}\n";
        let out = rewrite(text, &[]).unwrap();
        assert_eq!(out.lines().count(), text.lines().count());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[9],
            "    pypto_run::launch<pypto_run::Cores::Vector>(\"add\", \"x,y,n\", &add, 8, nullptr, \
             stream)(x, y, n);"
        );
        assert_eq!(
            lines[10],
            "    pypto_run::launch<pypto_run::Cores::Mixed>(\"mm\", \"a\", &mm<float, (4 > 2)>, \
             blocks(1, 2), nullptr, s)(a);"
        );
        assert_eq!(
            lines[11],
            "    pypto_run::launch<pypto_run::Cores::Vector>(\"add\", \"x,y,n\", &ns::add ,  1, \
             nullptr, s ) (x, y, 3);"
        );
    }

    #[test]
    fn a_launch_that_cannot_be_read_is_an_error_naming_its_line() {
        assert_eq!(
            rewrite("int main()\n{\n    <<<1, nullptr, s>>>(x);\n}\n", &[]).unwrap_err(),
            "line 3: a `<<<…>>>` launch without a kernel before it"
        );
        assert_eq!(
            rewrite("void k(int);\nint main()\n{\n    k<<<1, s>>>(x);\n}\n", &[]).unwrap_err(),
            "line 4: a launch of `k` needs three values in `<<<…>>>` (blocks, l2ctrl, stream)"
        );
    }

    #[test]
    fn arguments_are_read_as_the_usage_says() {
        let args: Vec<String> = ["p.asc", "-I", "inc", "-Dx=1", "-D", "Y", "--", "a", "-b"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            parse(&args).unwrap(),
            RunArgs {
                file: "p.asc".into(),
                includes: vec!["inc".into()],
                defines: vec!["x=1".into(), "Y".into()],
                program_args: vec!["a".into(), "-b".into()],
            }
        );
        let bad = |a: &[&str]| parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(bad(&[]).unwrap_err(), "`run` needs a program file");
        assert_eq!(
            bad(&["a", "b"]).unwrap_err(),
            "`run` takes one program, found `b` too (its arguments go after `--`)"
        );
        assert_eq!(bad(&["a", "-I"]).unwrap_err(), "`-I` needs a value");
        assert_eq!(bad(&["a", "-q"]).unwrap_err(), "unknown option `-q`");
        assert_eq!(
            bad(&["a", "-D1x"]).unwrap_err(),
            "`-D 1x`: `1x` cannot name a macro: an identifier must start with an ASCII letter or `_`"
        );
    }
}
