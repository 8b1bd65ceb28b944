//! Kernels brought as Ascend C (`source:`): the names a source declares.
//! An entry may have any name; C-linkage names besides it are renamed in
//! every compiled copy; names that would meet the program's (`main`) or the
//! code generated around the source are errors located in the source.

use std::path::{Path, PathBuf};

use pypto_build::unstable::codegen::{Plan, SymbolScope, ascendc};

/// A fresh directory holding `files`.
fn with_files(files: &[(&str, &str)]) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "brought-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn check(dir: &Path, spec: &str) -> Result<pypto_build::Model, Vec<String>> {
    pypto_build::check_source(&dir.join("k.yaml"), spec).map_err(|d| {
        d.iter()
            .map(|d| {
                let file = d.location.path.file_name().unwrap().to_string_lossy();
                format!("{file}:{}: {}", d.location.pos, d.message)
            })
            .collect()
    })
}

/// A kernel `name` on source `k.cpp` with entry `entry`.
fn kernel(name: &str, entry: &str) -> String {
    format!(
        "  {name}:\n    source: k.cpp\n    entry: {entry}\n    blocks: 1\n    params:\n      \
         x: {{ dtype: DT_FP32, shape: [DYNAMIC] }}\n      \
         y: {{ dtype: DT_FP32, shape: [DYNAMIC], output: true }}\n"
    )
}

const SHARED: &str = "#include \"kernel_operator.h\"\n\
extern \"C\" { float op_offset = 1.0f; }\n\
extern \"C\" float op_helper(float v) { return 2.0f * v + op_offset; }\n\
extern \"C\" float op_declared(float v);\n\
static float op_local(float v) { return v; }\n\
extern \"C\" __global__ __aicore__ void launch(GM_ADDR x, GM_ADDR y) { (void)x; (void)y; }\n";

#[test]
fn an_entry_may_take_any_name_and_c_linkage_names_are_renamed_in_each_copy() {
    let dir = with_files(&[("k.cpp", SHARED)]);
    let spec = format!(
        "kernels:\n{}{}",
        kernel("first", "launch"),
        kernel("second", "launch")
    );
    let model = check(&dir, &spec).unwrap();
    for k in &model.kernels {
        // Defined with C linkage, besides the entry: not the declaration,
        // not the static function.
        assert_eq!(k.c_names, ["op_offset", "op_helper"]);
    }
    let plans: Vec<Plan<'_>> = model
        .kernels
        .iter()
        .map(|k| Plan::new(k, &SymbolScope::Prefix("t".to_owned())).with_npu())
        .collect();
    let mut read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| pypto_build::Error::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    let sources = ascendc::render(&plans, &mut read).unwrap();
    let directives = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("#define") || l.starts_with("#undef"))
            .map(str::to_owned)
            .collect()
    };
    // Each copy renames the entry and both names to symbols of its own, and
    // undefines them before the launch code, which names the symbols.
    let first = directives(&sources[0].text);
    let second = directives(&sources[1].text);
    let symbol = |plan: &Plan<'_>| plan.entry_symbol(0);
    let c = |plan: &Plan<'_>, n: &str| plan.c_symbol(0, n);
    for (got, plan) in [(&first, &plans[0]), (&second, &plans[1])] {
        assert_eq!(
            got.iter()
                .filter(|l| !l.contains("PYPTO_TARGET_950"))
                .cloned()
                .collect::<Vec<_>>(),
            [
                format!("#define launch {}", symbol(plan)),
                format!("#define op_offset {}", c(plan, "op_offset")),
                format!("#define op_helper {}", c(plan, "op_helper")),
                // A whole program's `main`, and the vendor's CPU debug macros.
                format!("#define main {}", c(plan, "main")),
                "#define ASCENDC_CPU_DEBUG 1".to_owned(),
                "#define __CCE_KT_TEST__ 1".to_owned(),
                "#undef ASCENDC_CPU_DEBUG".to_owned(),
                "#undef __CCE_KT_TEST__".to_owned(),
                "#undef main".to_owned(),
                "#undef launch".to_owned(),
                "#undef op_offset".to_owned(),
                "#undef op_helper".to_owned(),
            ]
        );
    }
    assert_ne!(c(&plans[0], "op_helper"), c(&plans[1], "op_helper"));
    // Each architecture's copy renames them once more.
    let arch = plans[0].npu_arches[0];
    let npu = ascendc::for_arch(&plans[0], 0, arch, &sources[0].text);
    for name in ["op_offset", "op_helper", "main"] {
        let s = c(&plans[0], name);
        assert!(
            npu.contains(&format!("#define {s} {}\n", Plan::for_arch(&s, arch))),
            "{npu}"
        );
    }
}

#[test]
fn names_that_would_meet_the_program_or_the_generated_code_are_errors_in_the_source() {
    let source = "#include \"kernel_operator.h\"\n\
#define launch my_launch\n\
#define stream my_stream\n\
#undef stream\n\
#undef GM_ADDR\n\
#define PYPTO_HOST_BACKEND 1\n\
struct PyptoTiling { int x; };\n\
extern \"C\" int main() { return 0; }\n\
extern \"C\" float pypto_helper(float v) { return v; }\n\
extern \"C\" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR y) { (void)x; (void)y; }\n";
    let dir = with_files(&[("k.cpp", source)]);
    let errors = check(&dir, &format!("kernels:\n{}", kernel("k", "k"))).unwrap_err();
    assert_eq!(
        errors,
        [
            "k.cpp:2:9: the macro `launch` is still defined where the source ends, and the launch \
             code pypto-build generates after the source uses `launch`; rename the macro, or \
             `#undef` it at the end of the source",
            "k.cpp:5:8: `#undef GM_ADDR`: the launch code pypto-build generates after the source \
             needs `GM_ADDR`",
            "k.cpp:6:9: the macro `PYPTO_HOST_BACKEND` is still defined where the source ends, \
             and the launch code pypto-build generates after the source uses \
             `PYPTO_HOST_BACKEND`; rename the macro, or `#undef` it at the end of the source",
            "k.cpp:7:8: `PyptoTiling` is declared here, but names starting with `pypto_`, `Pypto` \
             or `PYPTO_` belong to the code pypto-build generates around the source \
             (`PyptoTiling`, `pypto_load_tiling`, the kernels' symbols); rename it",
            "k.cpp:9:18: `pypto_helper` is declared here, but names starting with `pypto_`, \
             `Pypto` or `PYPTO_` belong to the code pypto-build generates around the source \
             (`PyptoTiling`, `pypto_load_tiling`, the kernels' symbols); rename it",
        ]
    );
    // Every kernel of the source fails, and the source is reported once.
    let spec = format!("kernels:\n{}{}", kernel("a", "k"), kernel("b", "k"));
    assert_eq!(check(&dir, &spec).unwrap_err().len(), 5);
    // A `main` (a whole vendor program's) is no error: the generated code
    // renames it to a symbol of the kernel's own and never calls it.
    let source = "int main() { return 0; }\nnamespace tool { int main() { return 1; } }\n\
                  extern \"C\" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR y) {}\n";
    let dir = with_files(&[("k.cpp", source)]);
    check(&dir, &format!("kernels:\n{}", kernel("k", "k"))).unwrap();
}
