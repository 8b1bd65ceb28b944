//! Golden files: the Rust wrappers and Ascend C sources that pypto-build
//! generates for the example specs (`examples/kernels/`, which
//! `examples/build.rs` builds, under `examples/`), for a user template
//! with a contract (`tests/kernels/user.yaml`, under `user/`) and for one
//! kernel of every builtin (`tests/specs/builtins/NAME.yaml`, under
//! `builtins/`) are compared whole with the files under `tests/golden/`, so
//! that any change to generated code shows up in review as a diff of those
//! files.
//!
//! The code is generated in-process with [`Builder::generate_for`]; nothing
//! is compiled. It is generated twice: for the host backend (`host/`: the
//! Rust in `host/kernels.rs`, one source per specialisation) and with the NPU
//! architectures (`npu/`: the Rust that also dispatches to the NPU in
//! `npu/kernels.rs`, and each source as compiled per architecture, stored
//! as its unified diff from the host source, `npu/<arch>/<source>.diff`;
//! a host source of an NPU build is kept as `npu/<source>` only where it
//! differs from `host/<source>`).
//!
//! The goldens do not depend on the machine: specs are named relative to the
//! repository root, any absolute path to the repository in the output is
//! made relative to it, and symbols use a fixed prefix (`golden`) rather than
//! the package name and version.
//!
//! After an intended change to generated code, re-bless (rewrite) the
//! goldens, then review and commit the change:
//!
//! ```sh
//! PYPTO_BLESS=1 cargo test -p pypto-tests --test golden
//! git diff tests/golden
//! ```
//!
//! Blessing also deletes goldens that are no longer generated. Without
//! `PYPTO_BLESS`, a difference fails the test with the first differing lines.

use std::collections::BTreeMap;
use std::path::Path;

use pypto_build::Builder;
use pypto_tests::workspace_root;

/// Where the goldens are, relative to the root: one directory per set.
const GOLDEN_DIR: &str = "tests/golden";

/// The spec sets, as the build script names them, and their directories
/// under [`GOLDEN_DIR`]: the examples, and a user template with a contract.
const SETS: [(&str, &str); 3] = [
    ("examples", "examples/kernels"),
    ("user", "tests/kernels/user.yaml"),
    ("builtins", BUILTIN_SPECS),
];

/// One spec per builtin template, each a kernel named after its builtin.
const BUILTIN_SPECS: &str = "tests/specs/builtins";

/// How to rewrite the goldens; named in every failure.
const BLESS: &str = "PYPTO_BLESS=1 cargo test -p pypto-tests --test golden";

fn blessing() -> bool {
    std::env::var_os("PYPTO_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `text` with every absolute path to the repository made relative to it.
fn machine_independent(text: &str) -> String {
    let root = workspace_root();
    let mut roots = vec![root.to_path_buf()];
    if let Ok(real) = root.canonicalize() {
        roots.push(real);
    }
    let mut text = text.to_owned();
    for r in &roots {
        let r = r.display().to_string();
        text = text.replace(&format!("{r}/"), "").replace(&r, ".");
    }
    text
}

/// Every generated file, by its path under [`GOLDEN_DIR`].
fn generated() -> BTreeMap<String, String> {
    // Relative spec paths, as in examples/build.rs (Cargo runs build
    // scripts and tests in the package directory; this makes sure).
    std::env::set_current_dir(workspace_root()).unwrap();
    let mut files = BTreeMap::new();
    for (set, specs) in SETS {
        let generate = |npu: bool| {
            Builder::new()
                .spec(specs)
                .symbol_prefix("golden")
                .cargo_metadata(false)
                .generate_for(npu)
                .unwrap_or_else(|e| panic!("{specs} does not generate: {e}"))
        };
        let (host, npu) = (generate(false), generate(true));
        files.insert(format!("{set}/host/kernels.rs"), host.rust);
        files.insert(format!("{set}/npu/kernels.rs"), npu.rust);
        for source in &host.sources {
            files.insert(
                format!("{set}/host/{}", source.file_name),
                source.text.clone(),
            );
        }
        // An NPU build compiles the host sources too; kept only where they differ.
        for source in npu.sources.iter().filter(|s| !host.sources.contains(s)) {
            files.insert(
                format!("{set}/npu/{}", source.file_name),
                source.text.clone(),
            );
        }
        // An architecture's source is stored as its difference from the
        // host source of the same name: a few lines, which show in review
        // what the architecture changes.
        for npu_source in npu.npu_sources {
            let name = &npu_source.source.file_name;
            let arch = npu_source.arch.suffix();
            let (path, text) = match host.sources.iter().find(|s| &s.file_name == name) {
                Some(host_source) => (
                    format!("{set}/npu/{arch}/{name}.diff"),
                    unified_diff(
                        &format!("host/{name}"),
                        &host_source.text,
                        &format!("npu/{arch}/{name}"),
                        &npu_source.source.text,
                    ),
                ),
                None => (format!("{set}/npu/{arch}/{name}"), npu_source.source.text),
            };
            assert!(
                files.insert(path.clone(), text).is_none(),
                "{path} generated twice"
            );
        }
    }
    files
        .into_iter()
        .map(|(path, text)| (path, machine_independent(&text)))
        .collect()
}

/// Every file under `dir`, by its path relative to `dir` (with `/`).
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}{name}");
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{path}/"), out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out.sort();
    out
}

/// Most lines a side of [`unified_diff`] may have: its table is the
/// product of the two sides' lengths.
const MAX_DIFF_LINES: usize = 20_000;

/// `new` as a unified diff against `old` (three lines of context), from a
/// longest common subsequence of their lines; empty when they are equal.
fn unified_diff(old_name: &str, old: &str, new_name: &str, new: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    assert!(
        a.len() <= MAX_DIFF_LINES && b.len() <= MAX_DIFF_LINES,
        "{new_name}: too long to diff"
    );
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * width + j] = if a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    // The edit script: (mark, old line index, new line index, text).
    let mut ops: Vec<(char, usize, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i, j, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len()
            && (j == b.len() || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
        {
            // Deletions before insertions, as diff(1) prints them.
            ops.push(('-', i, j, a[i]));
            i += 1;
        } else {
            ops.push(('+', i, j, b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    // Hunks: changes closer than twice the context share one.
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let olds = hunk.iter().filter(|o| o.0 != '+').count();
        let news = hunk.iter().filter(|o| o.0 != '-').count();
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "@@ -{},{olds} +{},{news} @@\n",
                hunk[0].1 + usize::from(olds > 0),
                hunk[0].2 + usize::from(news > 0)
            ),
        );
        for (mark, _, _, text) in hunk {
            out.push(*mark);
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// Lines of context shown around a difference.
const CONTEXT: usize = 3;
/// Lines shown of each side of a difference.
const SHOWN: usize = 30;

/// A readable account of how `actual` differs from `expected`, or `None`
/// when they are equal: the differing run of lines between the longest
/// common head and tail, unified-diff style (`-` golden, `+` generated),
/// with [`CONTEXT`] lines either side.
fn line_diff(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    // split_inclusive keeps a missing final newline visible as a difference.
    let e: Vec<&str> = expected.split_inclusive('\n').collect();
    let a: Vec<&str> = actual.split_inclusive('\n').collect();
    let head = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let tail = e[head..]
        .iter()
        .rev()
        .zip(a[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (e_end, a_end) = (e.len() - tail, a.len() - tail);
    let start = head.saturating_sub(CONTEXT);
    let mut out = format!(
        "@@ -{},{} +{},{} @@ (first difference at line {})\n",
        head + 1,
        e_end - head,
        head + 1,
        a_end - head,
        head + 1
    );
    let mut line = |mark: char, text: &str| {
        out.push(mark);
        out.push_str(text.strip_suffix('\n').unwrap_or(text));
        if !text.ends_with('\n') {
            out.push_str("\n\\ no newline at end of file");
        }
        out.push('\n');
    };
    for l in &e[start..head] {
        line(' ', l);
    }
    for (mark, lines) in [('-', &e[head..e_end]), ('+', &a[head..a_end])] {
        for l in lines.iter().take(SHOWN) {
            line(mark, l);
        }
        if lines.len() > SHOWN {
            line(mark, &format!("… {} more lines\n", lines.len() - SHOWN));
        }
    }
    for l in e[e_end..].iter().take(CONTEXT) {
        line(' ', l);
    }
    Some(out)
}

#[test]
fn generated_code_matches_the_goldens() {
    let dir = workspace_root().join(GOLDEN_DIR);
    let generated = generated();
    let on_disk = files_under(&dir);
    if blessing() {
        for (path, text) in &generated {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&file, text).unwrap();
                eprintln!("blessed {GOLDEN_DIR}/{path}");
            }
        }
        for path in on_disk.iter().filter(|p| !generated.contains_key(*p)) {
            std::fs::remove_file(dir.join(path)).unwrap();
            eprintln!("removed {GOLDEN_DIR}/{path}");
        }
        return;
    }
    let mut failures = Vec::new();
    for (path, text) in &generated {
        match std::fs::read_to_string(dir.join(path)) {
            Ok(golden) => {
                if let Some(diff) = line_diff(&golden, text) {
                    failures.push(format!("{GOLDEN_DIR}/{path} differs:\n{diff}"));
                }
            }
            Err(e) => failures.push(format!("{GOLDEN_DIR}/{path} is missing ({e})")),
        }
    }
    for path in on_disk.iter().filter(|p| !generated.contains_key(*p)) {
        failures.push(format!("{GOLDEN_DIR}/{path} is no longer generated"));
    }
    assert!(
        failures.is_empty(),
        "generated code differs from the goldens; if the change is intended, \
         re-bless with `{BLESS}` and review `git diff tests/golden`\n\n{}",
        failures.join("\n")
    );
}

#[test]
fn goldens_are_machine_independent() {
    let root = workspace_root();
    let mut machine_paths = vec![root.display().to_string()];
    if let Ok(real) = root.canonicalize() {
        machine_paths.push(real.display().to_string());
    }
    machine_paths.extend(option_env!("OUT_DIR").map(str::to_owned));
    for (path, text) in generated() {
        for p in &machine_paths {
            assert!(!text.contains(p.as_str()), "{path} names {p}");
        }
        assert!(
            !text.contains("/target/"),
            "{path} names a target directory"
        );
    }
}

/// pypto-build's own tests read copies of the example specs (a published
/// crate's tests may read only its own files); they must stay current.
#[test]
fn pypto_build_test_copies_of_the_examples_are_current() {
    let root = workspace_root();
    let copies = Path::new("pypto-build/tests/specs/examples");
    let originals: Vec<String> = files_under(&root.join(SETS[0].1));
    assert_eq!(
        files_under(&root.join(copies)),
        originals,
        "{} and {} hold different files",
        copies.display(),
        SETS[0].1
    );
    for name in &originals {
        let original = std::fs::read_to_string(root.join(SETS[0].1).join(name)).unwrap();
        let copy = std::fs::read_to_string(root.join(copies).join(name)).unwrap();
        if let Some(diff) = line_diff(&copy, &original) {
            panic!(
                "{}/{name} is out of date; copy {}/{name} over it (and update \
                 pypto-build/tests/specs/examples.dump if the model changed):\n{diff}",
                copies.display(),
                SETS[0].1
            );
        }
    }
}

#[test]
fn line_diff_shows_the_first_differing_lines_with_context() {
    assert_eq!(line_diff("a\nb\n", "a\nb\n"), None);
    let expected = "1\n2\n3\n4\n5\n6\n7\n8\n";
    let actual = "1\n2\n3\n4\nfive\n6\n7\n8\n";
    assert_eq!(
        line_diff(expected, actual).unwrap(),
        "@@ -5,1 +5,1 @@ (first difference at line 5)\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
    );
    // Lines added at the end, and a final newline lost.
    assert_eq!(
        line_diff("a\nb\n", "a\nb\nc\n").unwrap(),
        "@@ -3,0 +3,1 @@ (first difference at line 3)\n a\n b\n+c\n"
    );
    assert_eq!(
        line_diff("a\nb\n", "a\nb").unwrap(),
        "@@ -2,1 +2,1 @@ (first difference at line 2)\n a\n-b\n+b\n\\ no newline at end of file\n"
    );
    // A long difference is cut.
    let many: String = (0..100).map(|i| format!("{i}\n")).collect();
    let diff = line_diff("", &many).unwrap();
    assert!(diff.ends_with("+29\n+… 70 more lines\n"), "{diff}");
}

#[test]
fn absolute_paths_into_the_repository_become_relative() {
    let root = workspace_root().display();
    assert_eq!(
        machine_independent(&format!(
            "#line 7 \"{root}/templates/builtin/add.hbs\"\n// from {root}\n"
        )),
        "#line 7 \"templates/builtin/add.hbs\"\n// from .\n"
    );
    assert_eq!(
        machine_independent("// examples/kernels/add_bias.yaml"),
        "// examples/kernels/add_bias.yaml"
    );
}

#[test]
fn every_builtin_has_a_golden_kernel() {
    let root = workspace_root();
    let templates = files_under(&root.join("templates/builtin"));
    let builtins: Vec<&str> = templates
        .iter()
        .filter_map(|f| f.strip_suffix(".hbs"))
        .filter(|f| !f.contains('/'))
        .collect();
    let specs = files_under(&root.join(BUILTIN_SPECS));
    let missing: Vec<&&str> = builtins
        .iter()
        .filter(|b| !specs.contains(&format!("{b}.yaml")))
        .collect();
    assert!(
        missing.is_empty(),
        "builtins without a golden kernel (add {BUILTIN_SPECS}/NAME.yaml with one kernel \
         named NAME, then `{BLESS}`): {missing:?}"
    );
    assert!(builtins.len() >= 27, "{builtins:?}");
}

#[test]
fn a_unified_diff_holds_each_change_once_with_its_context() {
    let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
    let new = old.replacen("1\n", "0\n1\n", 1).replace("15\n", "15b\n");
    assert_eq!(
        unified_diff("a", &old, "b", &new),
        "--- a\n+++ b\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n@@ -12,7 +13,7 @@\n 12\n 13\n 14\n-15\n+15b\n 16\n 17\n 18\n"
    );
    assert_eq!(unified_diff("a", &old, "b", &old), "");
    assert_eq!(
        unified_diff("a", "x", "b", "y"),
        "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n"
    );
}
