//! Names from specs become Rust and C++ identifiers; this module decides which
//! names are safe in both, and finds the nearest valid word for a typo.

/// Rust keywords of every edition, reserved words included.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Rust's primitive types: a kernel's module of that name (holding its
/// STATIC-size traits) would shadow the type in the generated wrappers.
const PRIMITIVE_TYPES: &[&str] = &[
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f16", "f32", "f64", "f128",
];

/// Names a plain binding cannot take in Rust: in a parameter, `None` is
/// matched as the variant, and the tuple variants are an error.
const PRELUDE_PATTERNS: &[&str] = &["None", "Some", "Ok", "Err"];

/// C++ keywords (C++23), alternative operator spellings, and the Ascend C
/// qualifiers and macros that kernel sources rely on.
const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "main",
    "half",
    "bfloat16_t",
    "GM_ADDR",
    "AscendC",
];

/// Identifiers of the code pypto-build generates after a brought source (the
/// host launch shim and the NPU launch stub), besides generated symbols,
/// `pypto_`/`Pypto`/`PYPTO_` names and scalar types: a macro of one of
/// these names that the source leaves defined would change that code. A
/// unit test (`model::source`) checks the list against the generated code.
pub(crate) const AFTER_SOURCE: &[&str] = &[
    "ASCENDC_CPU_DEBUG",
    "__CCE_KT_TEST__",
    "GM_ADDR",
    "HostLaunch",
    "args",
    "block_num",
    "const",
    "const_cast",
    "defined",
    "extern",
    "launch",
    "main",
    "next_launch_cores",
    "nullptr",
    "reinterpret_cast",
    "return",
    "run_block",
    "run_cube_block",
    "run_mixed_block",
    "scalar",
    "static_cast",
    "stream",
    "tiling",
    "void",
    "int32_t",
    "uint8_t",
    "uint32_t",
    // The entry's parameter check (`entry_check` in codegen/ascendc.rs).
    "EntryCall",
    "call",
    "constexpr",
    "decltype",
    "entry_arity",
    "entry_gm_ok",
    "entry_param_t",
    "entry_scalar_ok",
    "entry_type_index",
    "namespace",
    "static_assert",
    "using",
    // Its C++ vocabulary, with the typed-pointer and `tiling:` checks.
    "bool",
    "declval",
    "else",
    "false",
    "if",
    "int",
    "is_aggregate",
    "is_arithmetic",
    "is_class",
    "is_const",
    "is_floating_point",
    "is_integral",
    "is_pointer",
    "is_same",
    "is_signed",
    "is_trivially_copyable",
    "long",
    "operator",
    "remove_cv",
    "remove_pointer",
    "remove_reference",
    "sizeof",
    "std",
    "struct",
    "template",
    "true",
    "type",
    "typename",
    "unsigned",
    "value",
    "fail",
    "found",
    "static",
    "dim",
];

/// Whether `name` belongs to pypto-build's generated code: `pypto_` and
/// `Pypto` names (its symbols, `PyptoTiling`, `pypto_load_tiling`) and
/// `PYPTO_` macros.
pub(crate) fn generated_prefix(name: &str) -> bool {
    name.starts_with("pypto_") || name.starts_with("Pypto") || name.starts_with("PYPTO_")
}

/// Whether a macro named `name`, left defined by a brought source, would
/// change the code generated after it.
pub(crate) fn used_after_source(name: &str) -> bool {
    generated_prefix(name)
        || AFTER_SOURCE.contains(&name)
        || crate::tables::DType::ALL
            .iter()
            .any(|d| d.cpp_type() == name)
}

/// Why `name` cannot name a C++ function (an Ascend C kernel entry), or
/// `None`. Laxer than [`identifier_problem`]: the name never reaches Rust.
pub(crate) fn c_identifier_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("it is empty".to_owned());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some("an identifier must start with an ASCII letter or `_`".to_owned());
    }
    if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Some(format!(
            "`{}` is not allowed; use ASCII letters, digits and `_`",
            bad.escape_default()
        ));
    }
    if CPP_KEYWORDS.contains(&name) {
        return Some("it is a C++ keyword or a name Ascend C reserves".to_owned());
    }
    if name.starts_with("pypto_") {
        return Some("names starting with `pypto_` are pypto-build's own".to_owned());
    }
    None
}

/// Why `name` cannot name one of a kernel's variants, or `None`. A variant
/// name reaches generated code only inside the compiled kernel's name
/// (`KERNEL__VARIANT`, which symbols escape) and in string literals, so
/// keywords are fine; `__` is not, or two kernels could compile alike.
pub(crate) fn variant_name_problem(name: &str) -> Option<String> {
    let Some(first) = name.chars().next() else {
        return Some("it is empty".to_owned());
    };
    if !first.is_ascii_alphabetic() {
        return Some("a variant name must start with an ASCII letter".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Some(format!(
            "`{}` is not allowed; use ASCII letters, digits and `_`",
            bad.escape_default()
        ));
    }
    if name.contains("__") {
        return Some(
            "`__` is not allowed: the variant is compiled as `KERNEL__VARIANT`".to_owned(),
        );
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters".to_owned());
    }
    None
}

pub(crate) fn identifier_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("it is empty".to_owned());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some("an identifier must start with an ASCII letter or `_`".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Some(format!(
            "`{}` is not allowed; use ASCII letters, digits and `_`",
            bad.escape_default()
        ));
    }
    if name == "_" {
        return Some("`_` alone is not a name in Rust".to_owned());
    }
    if RUST_KEYWORDS.contains(&name) {
        return Some("it is a Rust keyword".to_owned());
    }
    if PRIMITIVE_TYPES.contains(&name) {
        return Some(
            "it is a Rust primitive type, which generated code must be able to name".to_owned(),
        );
    }
    if PRELUDE_PATTERNS.contains(&name) {
        return Some(
            "Rust's prelude uses it for a variant of `Option` or `Result`, so a generated \
             parameter of that name would not compile"
                .to_owned(),
        );
    }
    if CPP_KEYWORDS.contains(&name) {
        return Some("it is a C++ keyword or a name Ascend C reserves".to_owned());
    }
    let bytes = name.as_bytes();
    if name.contains("__") || (bytes[0] == b'_' && bytes.get(1).is_some_and(u8::is_ascii_uppercase))
    {
        return Some("C++ reserves names with `__` or starting with `_` and a capital".to_owned());
    }
    if name.starts_with("pypto_") {
        return Some("names starting with `pypto_` are reserved for generated code".to_owned());
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters".to_owned());
    }
    None
}

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn nearest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let word_lower: Vec<char> = word.chars().map(|c| c.to_ascii_lowercase()).collect();
    let limit = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    let mut buffers = (Vec::new(), Vec::new(), Vec::new());
    for c in candidates {
        // Only a candidate nearer than the best so far can replace it.
        let bound = best.map_or(limit, |(d, _)| d.saturating_sub(1));
        let (lower, prev, cur) = &mut buffers;
        lower.clear();
        lower.extend(c.chars().map(|c| c.to_ascii_lowercase()));
        if let Some(d) = bounded_distance(&word_lower, lower, bound, prev, cur) {
            best = Some((d, c));
            if d == 0 {
                break;
            }
        }
    }
    best.map(|(_, c)| c)
}

/// ` — did you mean `X`?` when there is a near candidate, else nothing.
pub(crate) fn did_you_mean<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match nearest(word, candidates) {
        Some(c) if c != word => format!(" — did you mean `{c}`?"),
        _ => String::new(),
    }
}

/// The Levenshtein distance of `a` and `b` if it is at most `bound`.
/// Suggestions search every name of a spec, so the cheap cases come first:
/// lengths too far apart, and the common prefix and suffix, which cost
/// nothing; rows are abandoned once every entry exceeds `bound`.
fn bounded_distance(
    a: &[char],
    b: &[char],
    bound: usize,
    prev: &mut Vec<usize>,
    cur: &mut Vec<usize>,
) -> Option<usize> {
    if a.len().abs_diff(b.len()) > bound {
        return None;
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    prev.clear();
    prev.extend(0..=b.len());
    cur.clear();
    cur.resize(b.len() + 1, 0);
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        if row_min > bound {
            return None;
        }
        std::mem::swap(prev, cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= bound)
}

/// `a, b or c`, for "expected one of" messages.
pub(crate) fn one_of(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|w| format!("`{w}`")).collect();
            format!("{} or `{last}`", init.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_identifiers() {
        for name in ["x", "add_bias", "HIDDEN_SIZE", "_tmp", "q2"] {
            assert_eq!(identifier_problem(name), None, "{name}");
        }
    }

    #[test]
    fn rejects_keywords_of_either_language() {
        assert_eq!(
            identifier_problem("fn").as_deref(),
            Some("it is a Rust keyword")
        );
        assert_eq!(
            identifier_problem("class").as_deref(),
            Some("it is a C++ keyword or a name Ascend C reserves")
        );
        assert_eq!(
            identifier_problem("half").as_deref(),
            Some("it is a C++ keyword or a name Ascend C reserves")
        );
    }

    #[test]
    fn rejects_bad_characters_and_reserved_shapes() {
        assert!(identifier_problem("1x").is_some());
        assert_eq!(
            identifier_problem("a-b").as_deref(),
            Some("`-` is not allowed; use ASCII letters, digits and `_`")
        );
        assert!(identifier_problem("a__b").is_some());
        assert!(identifier_problem("_X").is_some());
        assert!(identifier_problem("_").is_some());
        assert!(identifier_problem("é").is_some());
        assert_eq!(
            identifier_problem("f32").as_deref(),
            Some("it is a Rust primitive type, which generated code must be able to name")
        );
        assert_eq!(
            identifier_problem("None").as_deref(),
            Some(
                "Rust's prelude uses it for a variant of `Option` or `Result`, so a generated \
                 parameter of that name would not compile"
            )
        );
        assert_eq!(
            identifier_problem("pypto_tiling").as_deref(),
            Some("names starting with `pypto_` are reserved for generated code")
        );
    }

    #[test]
    fn suggests_the_nearest_word() {
        let markers = ["DYNAMIC", "DYN", "STATIC"];
        assert_eq!(nearest("DYNAMC", markers), Some("DYNAMIC"));
        assert_eq!(nearest("static", markers), Some("STATIC"));
        assert_eq!(nearest("banana", markers), None);
        assert_eq!(
            did_you_mean("shpe", ["shape", "dtype"]),
            " — did you mean `shape`?"
        );
        assert_eq!(did_you_mean("zzz", ["shape", "dtype"]), "");
        // The first of equally near candidates wins, as before.
        assert_eq!(nearest("ab", ["ax", "ay", "ab"]), Some("ab"));
        assert_eq!(nearest("abc", ["abx", "aby"]), Some("abx"));
    }

    #[test]
    fn bounded_distance_agrees_with_the_plain_one() {
        let words = [
            "",
            "a",
            "ab",
            "kitten",
            "sitting",
            "DIM_NUMBER_0X",
            "DIM_NUMBER_10",
            "xyz",
        ];
        let (mut p, mut c) = (Vec::new(), Vec::new());
        for a in words {
            for b in words {
                let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                let exact = plain_distance(&ca, &cb);
                for bound in 0..8 {
                    let got = bounded_distance(&ca, &cb, bound, &mut p, &mut c);
                    assert_eq!(got, (exact <= bound).then_some(exact), "{a} {b} {bound}");
                }
            }
        }
    }

    fn plain_distance(a: &[char], b: &[char]) -> usize {
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }
}
