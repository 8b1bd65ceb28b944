//! A kernel's `defines:`: preprocessor macros for every compile of its
//! source or template (a vendor source's `SCENARIO_NUM`), each a name and
//! an integer or identifier value, checked so that the generated code
//! around them still means what it says.

use crate::diag::{Sink, clip};
use crate::names::{c_identifier_problem, generated_prefix};
use crate::spec::{KernelSpec, QUOTED};
use crate::yaml::Value;

/// Most macros one kernel may define.
pub const MAX_DEFINES: usize = 64;

/// The checked `defines` of kernel `k` (`renamed`: the macros the generated
/// code defines around its source: the entry, other C-linkage names,
/// `main`, ASCENDC_CPU_DEBUG), as `(NAME, VALUE)` in spec order; `None`
/// after an error.
pub(super) fn check_defines(
    k: &KernelSpec,
    ctx: &str,
    renamed: &[&str],
    sink: &mut Sink<'_>,
) -> Option<Vec<(String, String)>> {
    let before = sink.count();
    if k.defines.len() > MAX_DEFINES {
        sink.error(
            k.defines[MAX_DEFINES].0.pos,
            format!(
                "{ctx}, `defines`: {} macros; at most {MAX_DEFINES} are supported",
                k.defines.len()
            ),
        );
        return None;
    }
    let mut out = Vec::new();
    for (name, node) in &k.defines {
        let what = format!("{ctx}, `defines`, `{}`", clip(&name.value, QUOTED));
        let problem = c_identifier_problem(&name.value)
            .or_else(|| {
                generated_prefix(&name.value)
                    .then(|| "names starting with `pypto_`, `Pypto` or `PYPTO_` are pypto-build's own".to_owned())
            })
            .or_else(|| {
                let n = &name.value;
                (n.starts_with("__") || (n.starts_with('_') && n[1..].starts_with(|c: char| c.is_ascii_uppercase())))
                    .then(|| "names starting with `__` or `_` and a capital are reserved for the compiler and the toolkit (it defines `__CCE_KT_TEST__` and `ASCENDC_CPU_DEBUG` itself where the vendor's flow does)".to_owned())
            })
            .or_else(|| {
                renamed.contains(&name.value.as_str()).then(|| {
                    "the generated code defines a macro of that name around the source (it \
                     renames the source's functions and `main`, and sets ASCENDC_CPU_DEBUG)"
                        .to_owned()
                })
            });
        if let Some(problem) = problem {
            sink.error(
                name.pos,
                format!("{what}: cannot be a macro's name: {problem}"),
            );
            continue;
        }
        let value = match &node.value {
            Value::Int(i) if i64::try_from(*i).is_err() => {
                sink.error(
                    node.pos,
                    format!("{what}: {i} is outside the 64-bit range a macro's integer may take"),
                );
                continue;
            }
            Value::Int(i) if *i < 0 => format!("({i})"),
            Value::Int(i) => i.to_string(),
            Value::Str(word) => {
                let ok = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    sink.error(
                        node.pos,
                        format!(
                            "{what}: `{}` is neither an integer nor an identifier; a macro's \
                             value is one of those",
                            clip(word, QUOTED)
                        ),
                    );
                    continue;
                }
                word.clone()
            }
            other => {
                sink.error(
                    node.pos,
                    format!(
                        "{what}: expected an integer or an identifier, found {}",
                        other.kind()
                    ),
                );
                continue;
            }
        };
        out.push((name.value.clone(), value));
    }
    (sink.count() == before).then_some(out)
}
