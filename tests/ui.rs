//! Compile-time checks of the generated wrappers: each file under tests/ui
//! must fail to compile with the message in its `.stderr`.

#[test]
fn markers_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
