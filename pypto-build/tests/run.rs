//! `pypto-build run`: whole vendor-style programs (kernel, ACL host code,
//! `<<<>>>` launches) compiled against the emulation and run, their output
//! and exit status passed through, a failed launch reported (with the
//! sanitizers' findings) both to the program, at aclrtSynchronizeStream,
//! and by the command's own status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn byok(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/kernels/byok")
        .join(name)
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(name)
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .arg("run")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_vendor_style_program_runs_whole_in_both_scenarios() {
    let file = byok("vendor_program.asc");
    let out = run(&[file.as_os_str(), "--".as_ref(), "1000".as_ref()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "scale_add ok (scenario 1, 1000 elements)\nmatmul_relu ok\n"
    );
    let out = run(&[file.as_os_str(), "-D".as_ref(), "SCENARIO_NUM=2".as_ref()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "scale_add ok (scenario 2, 1024 elements)\nmatmul_relu ok\n"
    );
}

#[test]
fn a_program_writes_its_output_where_its_arguments_say() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-output");
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("y.bin");
    let _ = std::fs::remove_file(&saved);
    let file = byok("program.asc");
    let out = run(&[file.as_os_str(), "--".as_ref(), saved.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bytes = std::fs::read(&saved).unwrap();
    let y: Vec<f32> = bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let want: Vec<f32> = (0..256).map(|i| (i as f32 - 100.0).abs() - 1.0).collect();
    assert_eq!(y, want);
}

#[test]
fn a_race_is_reported_to_the_program_and_by_the_status() {
    let file = program("race.asc");
    let race = "pypto-build run: kernel `racy`, block 0: racecheck: V reads UB bytes [0, 1024) \
                (Adds, race.asc:20), written by MTE2 (DataCopy(GM->local), race.asc:19) with no \
                synchronisation between them; insert SetFlag<HardEvent::MTE2_V>(id) after the \
                DataCopy(GM->local) and WaitFlag<HardEvent::MTE2_V>(id) before the Adds, or pass \
                the buffer through a TQue (EnQue after the DataCopy(GM->local), DeQue before the \
                Adds)\n";
    // The program does not check: it says done and exits 0; the run fails.
    let out = run(&[file.as_os_str()]);
    assert_eq!(text(&out.stdout), "done\n");
    assert_eq!(
        text(&out.stderr),
        format!("{race}error: the program exited with 0, but 1 launch failed (above)\n")
    );
    assert_eq!(out.status.code(), Some(1));
    // It checks: aclrtSynchronizeStream returns the NPU's kernel-fault
    // code, and the program's own status passes through.
    let out = run(&[file.as_os_str(), "-DCHECKED".as_ref()]);
    assert_eq!(text(&out.stdout), "sync: 507015\n");
    assert_eq!(text(&out.stderr), race);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn an_acl_call_the_host_runtime_lacks_is_a_compile_error_naming_it() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-acl");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("count.asc");
    std::fs::write(
        &file,
        "#include \"acl/acl.h\"\n\nint main()\n{\n    uint32_t n = 0;\n    \
         aclrtGetDeviceCount(&n);\n    return 0;\n}\n",
    )
    .unwrap();
    let out = run(&[file.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let at = file.canonicalize().unwrap().display().to_string();
    assert!(
        stderr.contains(&format!(
            "{at}:6:5: error: 'aclrtGetDeviceCount' was not declared in this scope"
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(&format!("error: `{}` failed to compile\n", file.display())),
        "{stderr}"
    );
}

#[test]
fn a_wrong_command_line_says_how_to_call_it() {
    let out = run(&["a.asc".as_ref(), "b.asc".as_ref()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: `run` takes one program, found `b.asc` too (its arguments go after `--`)\n\n\
         usage: pypto-build run FILE [-I DIR]… [-D NAME[=VALUE]]… [-- ARGS…]\n"
    );
    let out = run(&["missing.asc".as_ref()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: cannot read `missing.asc`"),
        "{}",
        text(&out.stderr)
    );
}
