//! Deliberately broken copies of the row, graph, serving, MoE and sampling
//! builtins, each one edit away from its builtin's template: tests/rows.rs,
//! tests/graph.rs, tests/serving.rs, tests/moe.rs, tests/sample.rs and tests/grouped_matmul.rs check that every one fails the checks the real
//! builtin passes. tests/build.rs writes them, as user
//! templates with a spec, into `OUT_DIR/mutants/` from the builtins'
//! templates in `templates/builtin/`, so that each stays the builtin with
//! one defect as the builtin changes; an edit whose text is no longer in the
//! template fails the build. (This file is also tests/build.rs's module.)

/// One broken builtin: kernel `name`, from `builtin/<builtin>` with
/// `edits` applied (each `from` must occur exactly once), built for `dtype`.
pub struct Mutant {
    pub name: &'static str,
    pub builtin: &'static str,
    pub dtype: &'static str,
    /// The defect, in words.
    pub defect: &'static str,
    pub edits: &'static [(&'static str, &'static str)],
}

/// The mutants, by builtin.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "broken_softmax_no_max_f32",
        builtin: "softmax",
        dtype: "DT_FP32",
        defect: "no max subtraction: exp(x) / Σ exp(x), which overflows past x = 88.7",
        edits: &[
            ("                AscendC::Adds(v, v, -newMax, len);\n", ""),
            (
                "sum = sum * io_.Exp(max - newMax) + io_.Sum(v, len);",
                "sum += io_.Sum(v, len);",
            ),
            ("                AscendC::Adds(v, v, -max, len);\n", ""),
            // and where a row of one tile stays on the vector unit.
            (
                "                io_.Reduce<true>(v, len);\n                io_.Apply<true>(v, len);\n",
                "",
            ),
        ],
    },
    Mutant {
        name: "broken_softmax_no_max_f16",
        builtin: "softmax",
        dtype: "DT_FP16",
        defect: "no max subtraction, in fp16",
        edits: &[
            ("                AscendC::Adds(v, v, -newMax, len);\n", ""),
            (
                "sum = sum * io_.Exp(max - newMax) + io_.Sum(v, len);",
                "sum += io_.Sum(v, len);",
            ),
            ("                AscendC::Adds(v, v, -max, len);\n", ""),
            // and where a row of one tile stays on the vector unit.
            (
                "                io_.Reduce<true>(v, len);\n                io_.Apply<true>(v, len);\n",
                "",
            ),
        ],
    },
    Mutant {
        name: "broken_softmax_last_tile_f32",
        builtin: "softmax",
        dtype: "DT_FP32",
        defect: "off by one tile: the max and sum leave out a row's last column tile",
        edits: &[(
            "            for (uint32_t t = 0; t < io_.Tiles(); ++t) {\n                \
             uint32_t len = io_.TileLen(t);\n                \
             AscendC::LocalTensor<float> v = io_.Load(r, t);\n                \
             float tileMax",
            "            for (uint32_t t = 0; t == 0 || t + 1 < io_.Tiles(); ++t) {\n                \
             uint32_t len = io_.TileLen(t);\n                \
             AscendC::LocalTensor<float> v = io_.Load(r, t);\n                \
             float tileMax",
        )],
    },
    Mutant {
        name: "broken_rms_norm_eps_outside_f32",
        builtin: "rms_norm",
        dtype: "DT_FP32",
        defect: "a wrong epsilon: 1 / (sqrt(mean(x²)) + eps)",
        edits: &[(
            "io_.InverseSqrt(squares / static_cast<float>(io_.Cols()) + eps_)",
            "1.0f / (1.0f / io_.InverseSqrt(squares / static_cast<float>(io_.Cols())) + eps_)",
        )],
    },
    Mutant {
        name: "broken_rms_norm_two_tiles_f32",
        builtin: "rms_norm",
        dtype: "DT_FP32",
        defect: "off by one tile: rows of two tiles use the first tile's weights for both",
        edits: &[(
            "bool resident = io_.Tiles() == 1;",
            "bool resident = io_.Tiles() <= 2;",
        )],
    },
    Mutant {
        name: "broken_layer_norm_eps_f32",
        builtin: "layer_norm",
        dtype: "DT_FP32",
        defect: "a wrong epsilon: (m2 + eps) / n in place of m2 / n + eps",
        edits: &[
            (
                "io_.InverseSqrt(m2 / count + eps_)",
                "io_.InverseSqrt((m2 + eps_) / count)",
            ),
            // The same defect where a row of one tile stays on the vector unit.
            (
                "AscendC::Adds(s, s, eps_, 8);",
                "AscendC::Adds(s, s, eps_ * inverseLen, 8);",
            ),
        ],
    },
    Mutant {
        name: "broken_layer_norm_full_tiles_f32",
        builtin: "layer_norm",
        dtype: "DT_FP32",
        defect: "a dropped tail: every tile is counted as full in the mean and variance",
        edits: &[(
            "float n = static_cast<float>(len);",
            "float n = static_cast<float>(io_.TileLen(0));",
        )],
    },
    Mutant {
        name: "broken_swiglu_dropped_tail_f32",
        builtin: "swiglu",
        dtype: "DT_FP32",
        defect: "a dropped tail: a half's last, partial column tile is never written",
        edits: &[(
            "begin < half_; begin += tile_",
            "begin + tile_ <= half_; begin += tile_",
        )],
    },
    Mutant {
        name: "broken_swiglu_whole_tiles_f32",
        builtin: "swiglu",
        dtype: "DT_FP32",
        defect: "a half of whole tiles (4096, 8192 columns) loses its last tile: the loop \
                 ends a tile early when the tile divides the half evenly",
        edits: &[(
            "begin < half_; begin += tile_",
            "begin < (half_ % kTile != 0 || half_ == 0 ? half_ : half_ - kTile); begin += tile_",
        )],
    },
    Mutant {
        name: "broken_gelu_constant_f32",
        builtin: "gelu",
        dtype: "DT_FP32",
        defect: "a truncated constant: 2·√(2/π) to five digits",
        edits: &[("-1.5957691216057308f", "-1.5957f")],
    },
    Mutant {
        name: "broken_silu_overflows_f32",
        builtin: "silu",
        dtype: "DT_FP32",
        defect: "x · exp(x) / (1 + exp(x)), which is inf / inf past x = 88.7",
        edits: &[(
            "    AscendC::Muls(t, x, -1.0f, len);\n    AscendC::Exp(t, t, len);\n    \
             AscendC::Adds(t, t, 1.0f, len);\n    AscendC::Div(out, x, t, len);\n",
            "    AscendC::Exp(t, x, len);\n    AscendC::Mul(out, x, t, len);\n    \
             AscendC::Adds(t, t, 1.0f, len);\n    AscendC::Div(out, out, t, len);\n",
        )],
    },
    Mutant {
        name: "broken_gather_rows_chunk_tail_f32",
        builtin: "gather_rows",
        dtype: "DT_FP32",
        defect: "a dropped tail: a block's last, partial chunk of rows is never copied",
        edits: &[(
            "for (uint64_t e0 = 0; e0 < count_; e0 += rows_)",
            "for (uint64_t e0 = 0; e0 + rows_ <= count_; e0 += rows_)",
        )],
    },
    Mutant {
        name: "broken_scatter_add_last_edge_f32",
        builtin: "scatter_add",
        dtype: "DT_FP32",
        defect: "off by one: the last edge is never added",
        edits: &[(
            "for (uint64_t e = 0; e < edges_; ++e)",
            "for (uint64_t e = 0; e + 1 < edges_; ++e)",
        )],
    },
    Mutant {
        name: "broken_segment_mean_empty_nan_f32",
        builtin: "segment_mean",
        dtype: "DT_FP32",
        defect: "an empty segment's mean is 0 · (1 / 0), NaN",
        edits: &[(
            "return count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;",
            "return 1.0f / static_cast<float>(count);",
        )],
    },
    Mutant {
        name: "broken_reshape_and_cache_share_end_f32",
        builtin: "reshape_and_cache",
        dtype: "DT_FP32",
        defect: "off by one: no block writes the last cache row of its share",
        edits: &[(
            "slot >= first_ && slot < first_ + count_",
            "slot >= first_ && slot + 1 < first_ + count_",
        )],
    },
    Mutant {
        name: "broken_rope_backwards_f32",
        builtin: "rope",
        dtype: "DT_FP32",
        defect: "rotates by minus the angle: the first of each pair takes +sin, the second −sin",
        edits: &[(
            "sinIndex = (first ? 2 * kSin : kSin) + i;",
            "sinIndex = (first ? kSin : 2 * kSin) + i;",
        )],
    },
    Mutant {
        name: "broken_argmax_last_tie_f32",
        builtin: "argmax",
        dtype: "DT_FP32",
        defect: "a tie between tiles goes to the later tile",
        edits: &[(
            "cand != cand || cand > best",
            "cand != cand || cand >= best",
        )],
    },
    Mutant {
        name: "broken_dynamic_quant_double_rounding_f32",
        builtin: "dynamic_quant",
        dtype: "DT_FP32",
        defect: "rounds to nearest twice (fp32 to fp16, then to int8): 3.4999998 becomes 4",
        edits: &[(
            "AscendC::Cast(h, a, AscendC::RoundMode::CAST_ODD, len);",
            "AscendC::Cast(h, a, AscendC::RoundMode::CAST_RINT, len);",
        )],
    },
    Mutant {
        name: "broken_moe_gating_topk_no_fallback_f32",
        builtin: "moe_gating_topk",
        dtype: "DT_FP32",
        defect: "no fallback once only -inf is left: an expert already chosen is chosen again",
        edits: &[("if (value == kMinusInf) {", "if (value != value) {")],
    },
    Mutant {
        name: "broken_moe_init_routing_late_share_f32",
        builtin: "moe_init_routing",
        dtype: "DT_FP32",
        defect: "off by one: a block notes the counts before its share one pair late",
        edits: &[("if (f == first_) {", "if (f == first_ + 1) {")],
    },
    Mutant {
        name: "broken_moe_finalize_routing_first_weight_f32",
        builtin: "moe_finalize_routing",
        dtype: "DT_FP32",
        defect: "the first choice's weight is dropped: its row is added with weight 1",
        edits: &[(
            "AscendC::Muls(acc, term, w, len);",
            "AscendC::Muls(acc, term, 1.0f, len);",
        )],
    },
    Mutant {
        name: "broken_grouped_matmul_floor_tiles_f32",
        builtin: "grouped_matmul",
        dtype: "DT_FP32",
        defect: "a group's rows are cut into tiles rounding down: rows past its last whole 128-row tile are never computed",
        edits: &[
            (
                "tilesM += (static_cast<uint64_t>(count) + kTileM - 1) / kTileM;",
                "tilesM += static_cast<uint64_t>(count) / kTileM;",
            ),
            (
                "return (count + kTileM - 1) / kTileM * tilesN_;",
                "return count / kTileM * tilesN_;",
            ),
        ],
    },
    Mutant {
        name: "broken_weight_quant_matmul_truncates_f16",
        builtin: "weight_quant_matmul",
        dtype: "DT_FP16",
        defect: "the dequantised weight is truncated to fp16 (CAST_TRUNC), not rounded to nearest even",
        edits: &[(
            "AscendC::Cast(o, f, AscendC::RoundMode::CAST_RINT, count);",
            "AscendC::Cast(o, f, AscendC::RoundMode::CAST_TRUNC, count);",
        )],
    },
    Mutant {
        name: "broken_topk_topp_sample_short_nucleus_f32",
        builtin: "topk_topp_sample",
        dtype: "DT_FP32",
        defect: "the nucleus leaves out its last candidate (unless it is the only one)",
        edits: &[("n = j + 1;", "n = j > 0 ? j : 1;")],
    },
];

/// The spec params of a mutant of `builtin`, as tests/kernels/rows.yaml
/// declares the builtin's own kernels.
pub fn params(builtin: &str, dtype: &str) -> String {
    let t = |name: &str, shape: &str| format!("{name}: {{ dtype: {dtype}, shape: {shape} }}");
    let out = |shape: &str| format!("out: {{ dtype: {dtype}, shape: {shape}, output: true }}");
    let eps = "eps: { scalar: DT_FP32 }".to_owned();
    let index = |shape: &str| format!("index: {{ dtype: DT_INT32, shape: {shape} }}");
    let params = match builtin {
        "softmax" => vec![t("x", "[R, C]"), out("[R, C]")],
        "rms_norm" => vec![t("x", "[R, C]"), t("w", "[C]"), eps, out("[R, C]")],
        "layer_norm" => vec![
            t("x", "[R, C]"),
            t("w", "[C]"),
            t("b", "[C]"),
            eps,
            out("[R, C]"),
        ],
        "swiglu" => vec![t("x", "[R, DYNAMIC]"), out("[R, DYNAMIC]")],
        "gelu" | "silu" => vec![t("x", "[N]"), out("[N]")],
        // tests/kernels/graph.yaml's: int32 indices, N nodes, R edges.
        "gather_rows" => vec![t("x", "[N, C]"), index("[R]"), out("[R, C]")],
        "scatter_add" => vec![t("src", "[R, C]"), index("[R]"), out("[N, C]")],
        "segment_mean" => vec![t("x", "[R, C]"), index("[DYNAMIC]"), out("[N, C]")],
        // tests/kernels/serving.yaml's: R tokens of C values, caches of N blocks.
        "reshape_and_cache" => vec![
            t("key", "[R, C]"),
            t("value", "[R, C]"),
            index("[R]"),
            format!("key_cache: {{ dtype: {dtype}, shape: [N, 128, C], output: true }}"),
            format!("value_cache: {{ dtype: {dtype}, shape: [N, 128, C], output: true }}"),
        ],
        // Heads of 128 (the default head_dim), all rotated; N positions.
        "rope" => vec![
            t("x", "[R, C]"),
            "positions: { dtype: DT_INT32, shape: [R] }".to_owned(),
            t("cos_sin", "[N, 128]"),
            out("[R, C]"),
        ],
        "argmax" => vec![
            t("x", "[R, C]"),
            "out: { dtype: DT_INT32, shape: [R], output: true }".to_owned(),
        ],
        "dynamic_quant" => vec![
            t("x", "[R, C]"),
            "q: { dtype: DT_INT8, shape: [R, C], output: true }".to_owned(),
            "scale: { dtype: DT_FP32, shape: [R], output: true }".to_owned(),
        ],
        // tests/kernels/moe.yaml's: R tokens choosing 2 of 8 experts, C
        // values a token, N = 2·R expanded rows.
        "moe_gating_topk" => vec![
            t("logits", "[R, 8]"),
            "expert_ids: { dtype: DT_INT32, shape: [R, 2], output: true }".to_owned(),
            "weights: { dtype: DT_FP32, shape: [R, 2], output: true }".to_owned(),
        ],
        "moe_init_routing" => vec![
            t("x", "[R, C]"),
            "expert_ids: { dtype: DT_INT32, shape: [R, 2] }".to_owned(),
            format!("expanded_x: {{ dtype: {dtype}, shape: [N, C], output: true }}"),
            "expanded_row_idx: { dtype: DT_INT32, shape: [N], output: true }".to_owned(),
            "expert_tokens: { dtype: DT_INT32, shape: [8], output: true }".to_owned(),
        ],
        "moe_finalize_routing" => vec![
            t("y", "[N, C]"),
            "expanded_row_idx: { dtype: DT_INT32, shape: [N] }".to_owned(),
            "weights: { dtype: DT_FP32, shape: [R, 2] }".to_owned(),
            out("[R, C]"),
        ],
        // R rows of C values in groups for 8 experts, N = 32 columns.
        "grouped_matmul" => vec![
            t("x", "[R, C]"),
            t("weight", "[8, C, 32]"),
            "group_list: { dtype: DT_INT32, shape: [8] }".to_owned(),
            out("[R, 32]"),
        ],
        // tests/kernels/wquant.yaml's: R tokens of C values, N weight rows.
        "weight_quant_matmul" => vec![
            t("a", "[R, C]"),
            "b: { dtype: DT_INT8, shape: [N, C] }".to_owned(),
            "scale: { dtype: DT_FP32, shape: [N] }".to_owned(),
            out("[R, N]"),
        ],
        // tests/kernels/sample.yaml's: R requests, a vocabulary of C.
        "topk_topp_sample" => vec![
            t("logits", "[R, C]"),
            "temperature: { dtype: DT_FP32, shape: [R] }".to_owned(),
            "top_k: { dtype: DT_INT32, shape: [R] }".to_owned(),
            "top_p: { dtype: DT_FP32, shape: [R] }".to_owned(),
            "seed: { dtype: DT_INT64, shape: [R] }".to_owned(),
            "out: { dtype: DT_INT32, shape: [R], output: true }".to_owned(),
        ],
        other => panic!("no mutant params for builtin/{other}"),
    };
    format!("{{ {} }}", params.join(", "))
}

/// `template` with the mutant's edits applied, or what is missing.
pub fn apply(mutant: &Mutant, template: &str) -> Result<String, String> {
    let mut text = template.to_owned();
    for (from, to) in mutant.edits {
        match text.matches(from).count() {
            1 => text = text.replacen(from, to, 1),
            n => {
                return Err(format!(
                    "mutant `{}`: {from:?} occurs {n} times in builtin/{}.hbs, not once",
                    mutant.name, mutant.builtin
                ));
            }
        }
    }
    Ok(text)
}
