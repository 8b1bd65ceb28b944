//! A brought kernel's entry (`source:` + `entry:`) is checked at compile
//! time against its spec's params: a scalar whose C++ type is not the
//! spec dtype's (a DT_INT64 size into `uint16_t`, a DT_FP32 into
//! `uint32_t`), a tensor taken as a scalar, a parameter too few: each is
//! one error, located at the spec, naming the param, the spec's dtype and
//! the entry's C++ type. Types that carry the same bits (`long long` for
//! DT_INT64, `unsigned int` for DT_UINT32, `void*` or `__gm__ float*` for
//! a DT_FP32 tensor) compile. So does a `tiling:` struct, and each of its
//! problems is one error at the spec too: a field the struct lacks, a
//! number for an integer field, a literal its field cannot hold, fields
//! left without a value, an entry that does not take the struct.
//!
//! The only test in this binary: it sets the variables Cargo gives build
//! scripts, which cc reads, before any other thread runs.

use std::path::Path;
use std::process::Command;

use pypto_build::{Builder, Error};

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc runs");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc names its host")
        .to_owned()
}

/// Each kernel's name, its entry's parameters, and its spec params (after
/// `x` and `y`, tensors of DT_FP32 `[N]`).
const KERNELS: [(&str, &str, &str); 7] = [
    (
        "narrow",
        "GM_ADDR x, GM_ADDR y, uint16_t total_length",
        "total_length: { scalar: DT_INT64, value: x.numel }",
    ),
    (
        "truncating",
        "GM_ADDR x, GM_ADDR y, uint32_t scale",
        "scale: { scalar: DT_FP32 }",
    ),
    (
        "short_of_one",
        "GM_ADDR x, GM_ADDR y",
        "n: { scalar: DT_UINT32 }",
    ),
    (
        "tensor_as_size",
        "uint32_t x, GM_ADDR y, uint32_t n",
        "n: { scalar: DT_UINT32 }",
    ),
    (
        "alike",
        "GM_ADDR x, __gm__ void* y, long long total, const unsigned int n",
        "total: { scalar: DT_INT64, value: x.numel }\n      n: { scalar: DT_UINT32 }",
    ),
    (
        "typed_alike",
        "__gm__ float* x, __gm__ const float* y, uint32_t n",
        "n: { scalar: DT_UINT32 }",
    ),
    (
        "typed_wrongly",
        "__gm__ half* x, GM_ADDR y, uint32_t n",
        "n: { scalar: DT_UINT32 }",
    ),
];

/// Kernels with a `tiling:` struct: name, the struct's fields, the entry's
/// parameters, and the spec's `tiling:` (params `x`, `y` and a DT_FP32
/// scalar `s`).
const TILED: [(&str, &str, &str, &str); 6] = [
    (
        "tiled_alike",
        "uint32_t n; bool flag; double d; int64_t neg; float s;",
        "GM_ADDR x, GM_ADDR y, T t",
        "{ n: x.numel, flag: 1, d: 0.25, neg: -9223372036854775808, s: s }",
    ),
    (
        "tiled_no_field",
        "uint32_t n;",
        "GM_ADDR x, GM_ADDR y, float s, T t",
        "{ n: x.numel, m: 3 }",
    ),
    (
        "tiled_number_into_int",
        "uint32_t n; uint32_t s;",
        "GM_ADDR x, GM_ADDR y, T t",
        "{ n: 0.5, s: s }",
    ),
    (
        "tiled_too_big",
        "uint8_t n;",
        "GM_ADDR x, GM_ADDR y, float s, T t",
        "{ n: 300 }",
    ),
    (
        "tiled_short",
        "uint32_t a; uint32_t b;",
        "GM_ADDR x, GM_ADDR y, float s, T t",
        "{ a: 1 }",
    ),
    (
        "tiled_not_taken",
        "uint32_t a;",
        "GM_ADDR x, GM_ADDR y, float s, uint32_t a",
        "{ a: 1 }",
    ),
];

#[test]
fn an_entry_whose_parameters_are_not_the_specs_is_one_located_error_each() {
    let triple = host_triple();
    // SAFETY: no other thread runs in this test binary yet.
    unsafe {
        std::env::set_var("TARGET", &triple);
        std::env::set_var("HOST", &triple);
        std::env::set_var("OPT_LEVEL", "0");
        std::env::set_var("PYPTO_BACKEND", "host");
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("entry-types");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut spec = String::from("kernels:\n");
    for (name, params, scalars) in KERNELS {
        std::fs::write(
            dir.join(format!("{name}.cpp")),
            format!(
                "#include \"kernel_operator.h\"\n\n\
                 extern \"C\" __global__ __aicore__ void {name}({params})\n{{\n}}\n"
            ),
        )
        .unwrap();
        spec.push_str(&format!(
            "  {name}:\n    source: {name}.cpp\n    entry: {name}\n    blocks: 1\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [N] }}\n      \
             y: {{ dtype: DT_FP32, shape: [N], output: true }}\n      {scalars}\n"
        ));
    }
    for (name, fields, params, tiling) in TILED {
        std::fs::write(
            dir.join(format!("{name}.cpp")),
            format!(
                "#include \"kernel_operator.h\"\n\nstruct T {{ {fields} }};\n\
                 extern \"C\" __global__ __aicore__ void {name}({params})\n{{\n}}\n"
            ),
        )
        .unwrap();
        spec.push_str(&format!(
            "  {name}:\n    source: {name}.cpp\n    entry: {name}\n    blocks: 1\n    \
             tiling: {{ struct: T, fields: {tiling} }}\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [N] }}\n      \
             y: {{ dtype: DT_FP32, shape: [N], output: true }}\n      s: {{ scalar: DT_FP32 }}\n"
        ));
    }
    spec.push_str("dims:\n  N: DYNAMIC\n");
    std::fs::write(dir.join("k.yaml"), &spec).unwrap();
    let out = dir.join("out");
    let err = Builder::new()
        .spec(dir.join("k.yaml"))
        .out_dir(&out)
        .symbol_prefix("t")
        .cargo_metadata(false)
        .build()
        .unwrap_err();
    let Error::Compile { message, .. } = &err else {
        panic!("expected a compile error, got {err}");
    };
    let yaml = dir.join("k.yaml").display().to_string();
    let errors: Vec<&str> = message.lines().filter(|l| l.contains(" error: ")).collect();
    let want = [
        format!(
            "{yaml}:9:31: error: static assertion failed: kernel `narrow`, param `total_length`: \
             the spec passes DT_INT64 (int64_t), but entry `narrow` takes uint16_t; declare the \
             entry's parameter as int64_t, or change the spec's `scalar:` to the dtype the entry \
             takes"
        ),
        format!(
            "{yaml}:17:24: error: static assertion failed: kernel `truncating`, param `scale`: \
             the spec passes DT_FP32 (float), but entry `truncating` takes uint32_t; declare the \
             entry's parameter as float, or change the spec's `scalar:` to the dtype the entry \
             takes"
        ),
        format!(
            "{yaml}:18:3: error: static assertion failed: kernel `short_of_one`: entry \
             `short_of_one` does not take 3 parameters; the spec passes, in order: x (GM_ADDR or \
             __gm__ float*), y (GM_ADDR or __gm__ float*), n (uint32_t, DT_UINT32)"
        ),
        format!(
            "{yaml}:31:19: error: static assertion failed: kernel `tensor_as_size`, param `x`: \
             the spec passes a tensor (DT_FP32) as GM_ADDR or __gm__ float*, but entry \
             `tensor_as_size` takes uint32_t; take it as GM_ADDR or __gm__ float*"
        ),
        format!(
            "{yaml}:56:19: error: static assertion failed: kernel `typed_wrongly`, param `x`: \
             the spec passes a tensor (DT_FP32) as GM_ADDR or __gm__ float*, but entry \
             `typed_wrongly` takes another pointer type; take it as GM_ADDR or __gm__ float*"
        ),
        format!(
            "{yaml}:72:51: error: static assertion failed: kernel `tiled_no_field`, `tiling`, \
             field `m`: `T` has no field `m`"
        ),
        format!(
            "{yaml}:81:39: error: static assertion failed: kernel `tiled_number_into_int`, \
             `tiling`, field `n`: `T::n` is an integer field, and the spec gives it the number \
             0.5, which is not an integer"
        ),
        format!(
            "{yaml}:81:47: error: static assertion failed: kernel `tiled_number_into_int`, \
             `tiling`, field `s`: `T::s` is an integer field, and the spec gives it scalar `s`, \
             which is not an integer"
        ),
        format!(
            "{yaml}:90:39: error: static assertion failed: kernel `tiled_too_big`, `tiling`, \
             field `n`: the type of `T::n` cannot hold the integer 300"
        ),
        format!(
            "{yaml}:99:23: error: static assertion failed: kernel `tiled_short`, `tiling`: `T` \
             has more fields than the 1 the spec gives; give every field a value (fields are \
             numbers: arrays and nested structs are not supported)"
        ),
        format!(
            "{yaml}:108:23: error: static assertion failed: kernel `tiled_not_taken`, `tiling`: \
             the spec passes the `tiling:` struct `T` as parameter 3, but entry \
             `tiled_not_taken` takes uint32_t; take `T` by value there, or move it with \
             `tiling: {{ at: N }}`"
        ),
    ];
    assert_eq!(errors, want, "{message}");
    // Each rejected kernel's source is named once; `alike` compiled.
    let names = KERNELS.iter().map(|k| k.0).chain(TILED.iter().map(|k| k.0));
    for name in names {
        let rendered = out
            .join(format!("pypto/src/{name}_s0.cpp"))
            .display()
            .to_string();
        let named = err.to_string().matches(&rendered).count();
        let compiles = name.ends_with("alike");
        assert_eq!(named, usize::from(!compiles), "{name}: {err}");
    }
}
