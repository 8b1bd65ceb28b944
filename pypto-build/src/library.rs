//! The files pypto-build carries: the builtin kernel templates and the host
//! emulation of the Ascend C API, embedded so that a user's build script
//! needs nothing but this crate.

/// The emulation headers, by path under the include directory.
pub const EMULATION_HEADERS: &[(&str, &str)] = &[
    (
        "kernel_operator.h",
        include_str!("../../templates/include/kernel_operator.h"),
    ),
    (
        "pypto_emu/core.h",
        include_str!("../../templates/include/pypto_emu/core.h"),
    ),
    (
        "pypto_emu/types.h",
        include_str!("../../templates/include/pypto_emu/types.h"),
    ),
    (
        "pypto_emu/memory.h",
        include_str!("../../templates/include/pypto_emu/memory.h"),
    ),
    (
        "pypto_emu/copy.h",
        include_str!("../../templates/include/pypto_emu/copy.h"),
    ),
    (
        "pypto_emu/vector.h",
        include_str!("../../templates/include/pypto_emu/vector.h"),
    ),
];

/// The builtin templates, by name (`builtin/NAME`).
pub const BUILTIN_TEMPLATES: &[(&str, &str)] = &[
    ("add", include_str!("../../templates/builtin/add.hbs")),
    (
        "add_bias",
        include_str!("../../templates/builtin/add_bias.hbs"),
    ),
    ("mul", include_str!("../../templates/builtin/mul.hbs")),
    ("relu", include_str!("../../templates/builtin/relu.hbs")),
];

/// Partials the builtin templates share (`{{> NAME}}`).
pub const PARTIALS: &[(&str, &str)] = &[(
    "elementwise",
    include_str!("../../templates/builtin/partials/elementwise.hbs"),
)];

/// The text of `builtin/NAME`.
pub fn builtin_template(name: &str) -> Option<&'static str> {
    BUILTIN_TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}
