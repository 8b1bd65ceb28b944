// Wrappers generated for a pypto-rt interface this pypto-rt does not
// provide (here v5; this pypto-rt provides v1 to v4) fail to compile, saying so:
// generated code opens with this check (see `RT_INTERFACE` in
// pypto-build/src/codegen/rust.rs).
const _: () = ::pypto_rt::__private::require_interface::<5>();

fn main() {}
