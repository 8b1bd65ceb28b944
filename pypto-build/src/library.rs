//! The files pypto-build carries: the builtin kernel templates and the host
//! emulation of the Ascend C API, embedded so that a user's build script
//! needs nothing but this crate.

/// `(name, contents)` pairs of files under `templates/`: the repository's
/// top-level directory, reached through the `pypto-build/templates` symlink so
/// that `cargo package` ships the files inside the crate.
macro_rules! embed {
    ($($name:literal => $path:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/", $path)))),*]
    };
}

/// The emulation headers, by path under the include directory.
pub const EMULATION_HEADERS: &[(&str, &str)] = embed![
    "kernel_operator.h" => "include/kernel_operator.h",
    "acl/acl.h" => "include/acl/acl.h",
    "cpu_debug_launch.h" => "include/cpu_debug_launch.h",
    "pypto_run.h" => "include/pypto_run.h",
    "pypto_emu/arch.h" => "include/pypto_emu/arch.h",
    "pypto_emu/memories.h" => "include/pypto_emu/memories.h",
    "pypto_emu/instr.h" => "include/pypto_emu/instr.h",
    "pypto_emu/access.h" => "include/pypto_emu/access.h",
    "pypto_emu/core.h" => "include/pypto_emu/core.h",
    "pypto_emu/types.h" => "include/pypto_emu/types.h",
    "pypto_emu/memory.h" => "include/pypto_emu/memory.h",
    "pypto_emu/sync.h" => "include/pypto_emu/sync.h",
    "pypto_emu/misc.h" => "include/pypto_emu/misc.h",
    "pypto_emu/copy.h" => "include/pypto_emu/copy.h",
    "pypto_emu/vector.h" => "include/pypto_emu/vector.h",
    "pypto_emu/mask.h" => "include/pypto_emu/mask.h",
    "pypto_emu/compound.h" => "include/pypto_emu/compound.h",
    "pypto_emu/reduce.h" => "include/pypto_emu/reduce.h",
    "pypto_emu/cube.h" => "include/pypto_emu/cube.h",
    "pypto_emu/layout.h" => "include/pypto_emu/layout.h",
    "pypto_emu/math.h" => "include/pypto_emu/math.h",
    "pypto_emu/sort.h" => "include/pypto_emu/sort.h",
    "pypto_emu/system.h" => "include/pypto_emu/system.h",
    "pypto_emu/sanitize/race.h" => "include/pypto_emu/sanitize/race.h",
    "pypto_emu/sanitize/init.h" => "include/pypto_emu/sanitize/init.h",
    "pypto_emu/sanitize/mem.h" => "include/pypto_emu/sanitize/mem.h",
    "pypto_emu/sanitize/sync.h" => "include/pypto_emu/sanitize/sync.h",
    "pypto_emu/model/abi.h" => "include/pypto_emu/model/abi.h",
    "pypto_emu/model/timeline.h" => "include/pypto_emu/model/timeline.h",
    "pypto_emu/model/cost.h" => "include/pypto_emu/model/cost.h",
];

/// The builtin templates, by name (`builtin/NAME`).
pub const BUILTIN_TEMPLATES: &[(&str, &str)] = embed![
    "add" => "builtin/add.hbs",
    "add_bias" => "builtin/add_bias.hbs",
    "add_rms_norm" => "builtin/add_rms_norm.hbs",
    "argmax" => "builtin/argmax.hbs",
    "attention" => "builtin/attention.hbs",
    "batch_matmul" => "builtin/batch_matmul.hbs",
    "dynamic_quant" => "builtin/dynamic_quant.hbs",
    "flash_attention" => "builtin/flash_attention.hbs",
    "flash_attention_varlen" => "builtin/flash_attention_varlen.hbs",
    "gather_rows" => "builtin/gather_rows.hbs",
    "gelu" => "builtin/gelu.hbs",
    "grouped_matmul" => "builtin/grouped_matmul.hbs",
    "layer_norm" => "builtin/layer_norm.hbs",
    "matmul" => "builtin/matmul.hbs",
    "matmul_int8" => "builtin/matmul_int8.hbs",
    "moe_finalize_routing" => "builtin/moe_finalize_routing.hbs",
    "moe_gating_topk" => "builtin/moe_gating_topk.hbs",
    "moe_init_routing" => "builtin/moe_init_routing.hbs",
    "mul" => "builtin/mul.hbs",
    "paged_attention" => "builtin/paged_attention.hbs",
    "quant_matmul" => "builtin/quant_matmul.hbs",
    "relu" => "builtin/relu.hbs",
    "reshape_and_cache" => "builtin/reshape_and_cache.hbs",
    "rms_norm" => "builtin/rms_norm.hbs",
    "rope" => "builtin/rope.hbs",
    "scatter_add" => "builtin/scatter_add.hbs",
    "segment_mean" => "builtin/segment_mean.hbs",
    "segment_sum" => "builtin/segment_sum.hbs",
    "silu" => "builtin/silu.hbs",
    "softmax" => "builtin/softmax.hbs",
    "swiglu" => "builtin/swiglu.hbs",
    "topk_topp_sample" => "builtin/topk_topp_sample.hbs",
    "weight_quant_matmul" => "builtin/weight_quant_matmul.hbs",
];

/// Partials the builtin templates share (`{{> NAME}}`).
pub const PARTIALS: &[(&str, &str)] = embed![
    "common" => "builtin/partials/common.hbs",
    "cube_matmul" => "builtin/partials/cube_matmul.hbs",
    "elementwise" => "builtin/partials/elementwise.hbs",
    "flash_attention" => "builtin/partials/flash_attention.hbs",
    "graph_rows" => "builtin/partials/graph_rows.hbs",
    "row_io" => "builtin/partials/row_io.hbs",
    "segment" => "builtin/partials/segment.hbs",
];

/// The text of `builtin/NAME`.
pub fn builtin_template(name: &str) -> Option<&'static str> {
    BUILTIN_TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn files_under(dir: &Path, ext: &str) -> Vec<String> {
        let mut out: Vec<String> = walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == ext))
            .map(|e| {
                e.path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_header_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/include");
        let mut embedded: Vec<String> = EMULATION_HEADERS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        embedded.sort();
        assert_eq!(files_under(&dir, "h"), embedded);
    }

    #[test]
    fn every_builtin_has_a_template_and_every_template_a_contract() {
        for (name, text) in BUILTIN_TEMPLATES {
            let path = format!("builtin/{name}.hbs");
            match crate::contract::read(Path::new(&path), text) {
                Ok(Some(c)) => {
                    let params = c.params.as_ref().expect("builtins declare their params");
                    assert!(!params.is_empty(), "{name}");
                    assert!(c.summary.is_some(), "{name}");
                    assert!(c.blocks.is_some(), "{name}");
                }
                Ok(None) => panic!("{path} has no contract"),
                Err(problems) => panic!("{path}: {problems:?}"),
            }
        }
        let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/builtin");
        let on_disk: Vec<String> = files_under(&dir, "hbs")
            .into_iter()
            .filter(|f| !f.starts_with("partials/"))
            .collect();
        let expected: Vec<String> = names.iter().map(|t| format!("{t}.hbs")).collect();
        assert_eq!(on_disk, expected);
    }
}
