// Wrappers generated for a pypto-rt interface this pypto-rt does not
// provide (here v4; this pypto-rt provides v1, v2 and v3) fail to compile, saying so:
// generated code opens with this check (see `RT_INTERFACE` in
// pypto-build/src/codegen/rust.rs).
const _: () = ::pypto_rt::__private::require_interface::<4>();

fn main() {}
