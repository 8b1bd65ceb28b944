// Wrappers generated for a pypto-rt interface this pypto-rt does not
// provide (here v99, far past any it provides) fail to compile, saying so:
// generated code opens with this check (see `RT_INTERFACE` in
// pypto-build/src/codegen/rust.rs).
const _: () = ::pypto_rt::__private::require_interface::<99>();

fn main() {}
