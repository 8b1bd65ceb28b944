//! Kernels brought as existing Ascend C (`source:` + `entry:` in
//! `tests/kernels/byok.yaml`, sources in `tests/kernels/byok/`), compiled
//! unchanged and called through typed wrappers on the host backend: sizes
//! bound to scalars (`value:`), block counts from the spec and overridden
//! at run time, a kernel with mask/repeat forms and hand-placed
//! SetFlag/WaitFlag, and a mixed cube + vector kernel whose cube core and
//! two vector cores run paired. Each result is checked against plain Rust.
//! The same kernels on the fake NPU: tests/npu_fake.rs.

use half::f16;
use pypto_rt::{Const, Device, Error, last_launch, with_host_blocks};
use pypto_tests::{data, kernel_message, kernels};

fn add_reference(x: &[f16], y: &[f16]) -> Vec<f16> {
    x.iter()
        .zip(y)
        .map(|(a, b)| f16::from_f32(a.to_f32() + b.to_f32()))
        .collect()
}

#[test]
fn add_custom_takes_its_length_by_value_and_its_blocks_from_the_spec() {
    let dev = Device::host();
    // Whole 512-element tiles, a tail tile, fewer tiles than blocks, one element.
    for n in [4096usize, 3000, 700, 1] {
        let x: Vec<f16> = data(n, 1).iter().map(|v| f16::from_f32(*v)).collect();
        let y: Vec<f16> = data(n, 2).iter().map(|v| f16::from_f32(*v)).collect();
        let want = add_reference(&x, &y);
        let (xt, yt) = (
            dev.tensor_from(&x, (n,)).unwrap(),
            dev.tensor_from(&y, (n,)).unwrap(),
        );
        let mut z = dev.zeros((n,)).unwrap();
        // `total_length` is computed from x: the wrapper does not ask for it.
        kernels::add_custom(&xt, &yt, &mut z).unwrap();
        assert_eq!(z.to_vec().unwrap(), want, "n = {n}");
        assert_eq!(last_launch().unwrap().blocks, 8, "blocks: 8 in the spec");
        // Overridden at run time, for tests: the kernel deals tiles by GetBlockNum().
        for blocks in [1, 3, 48] {
            let mut z = dev.zeros((n,)).unwrap();
            with_host_blocks(blocks, || kernels::add_custom(&xt, &yt, &mut z))
                .unwrap()
                .unwrap();
            assert_eq!(z.to_vec().unwrap(), want, "n = {n}, {blocks} blocks");
            assert_eq!(last_launch().unwrap().blocks, blocks);
        }
    }
}

#[test]
fn add_custom_checks_what_its_types_cannot() {
    let dev = Device::host();
    let x = dev.tensor_from(&[f16::ONE; 8], (8,)).unwrap();
    let y = dev.tensor_from(&[f16::ONE; 9], (9,)).unwrap();
    let mut z = dev.zeros((8,)).unwrap();
    let err = kernels::add_custom(&x, &y, &mut z).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `add_custom`: `y.0` is 9 but `x.0` is 8; they must be equal because they are the \
         dim `LENGTH`"
    );
}

fn leaky_reference(x: &[f32], alpha: f32) -> Vec<f32> {
    x.iter()
        .map(|&v| (if v < 0.0 { v * alpha } else { v }) + 1.0)
        .collect()
}

#[test]
fn leaky_rows_runs_mask_forms_and_hand_placed_flags() {
    let dev = Device::host();
    for (rows, cols) in [(1usize, 64usize), (5, 256), (60, 128), (3, 8192)] {
        let x = data(rows * cols, rows as u64);
        let xt = dev.tensor_from(&x, (rows, cols)).unwrap();
        let mut out = dev.zeros((rows, cols)).unwrap();
        kernels::leaky_rows(&xt, &mut out, 0.25).unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            leaky_reference(&x, 0.25),
            "{rows}x{cols}"
        );
        // `blocks: x.0`: one block per row, beyond the 48 of a rule.
        assert_eq!(last_launch().unwrap().blocks, rows as u32);
    }
    // Fewer blocks than rows: each block takes several rows, reusing its
    // buffers behind the MTE3_V and V_MTE2 flags.
    let x = data(9 * 128, 3);
    let xt = dev.tensor_from(&x, (9, 128)).unwrap();
    let mut out = dev.zeros((9, 128)).unwrap();
    with_host_blocks(2, || kernels::leaky_rows(&xt, &mut out, -0.5))
        .unwrap()
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), leaky_reference(&x, -0.5));
}

#[test]
fn a_block_count_past_the_runtime_limit_is_an_error() {
    let dev = Device::host();
    let xt = dev.zeros((65536, 64)).unwrap();
    let mut out = dev.zeros((65536, 64)).unwrap();
    let err = kernels::leaky_rows(&xt, &mut out, 1.0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `leaky_rows`: size overflow: `blocks: x.0` asks for 65536 blocks; a launch has at \
         most 65535"
    );
    // No rows: nothing to launch.
    let xt = dev.zeros((0, 64)).unwrap();
    let mut out = dev.zeros((0, 64)).unwrap();
    kernels::leaky_rows(&xt, &mut out, 1.0).unwrap();
    assert_eq!(last_launch().unwrap().blocks, 0);
}

#[test]
fn leaky_rows_reports_a_row_too_wide_for_its_buffers() {
    let dev = Device::host();
    let xt = dev.zeros((1, 8256)).unwrap();
    let mut out = dev.zeros((1, 8256)).unwrap();
    match kernels::leaky_rows(&xt, &mut out, 1.0) {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0);
            // 8256 floats, one row, into a buffer of 8192.
            assert_eq!(
                message,
                "DataCopy(GM->local): 33024 bytes do not fit the LocalTensor's 8192 elements \
                 (32768 bytes)"
            );
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

fn matmul_reference(a: &[f16], b: &[f16], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|t| a[i * k + t].to_f32() * b[t * n + j].to_f32())
                .sum();
        }
    }
    c
}

/// Small integers: every product and sum is exact in f32, whatever the order.
fn small(n: usize, seed: u64) -> Vec<f16> {
    data(n, seed)
        .iter()
        .map(|v| f16::from_f32(v.round()))
        .collect()
}

#[test]
fn matmul_relu_runs_its_cube_and_vector_cores_paired() {
    let dev = Device::host();
    for (m, k, n) in [(64usize, 32usize, 48usize), (128, 128, 128), (64, 16, 16)] {
        let (a, b) = (small(m * k, 1), small(k * n, 2));
        let want_c = matmul_reference(&a, &b, m, k, n);
        let want_out: Vec<f32> = want_c.iter().map(|v| v.max(0.0)).collect();
        let mut c = dev.zeros((m, n)).unwrap();
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_relu(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (k, n)).unwrap(),
            &mut c,
            &mut out,
        )
        .unwrap();
        assert_eq!(c.to_vec().unwrap(), want_c, "c, {m}x{k}x{n}");
        assert_eq!(out.to_vec().unwrap(), want_out, "out, {m}x{k}x{n}");
        assert_eq!(last_launch().unwrap().blocks, 2);
    }
}

fn cross_core(which: i32) -> Result<Vec<i32>, Error> {
    let dev = Device::host();
    let mut out = dev.zeros((pypto_rt::Const::<6>,)).unwrap();
    kernels::cross_core(&mut out, which)?;
    Ok(out.to_vec().unwrap())
}

#[test]
fn mixed_kernels_number_their_cores_as_the_hardware_does() {
    // Block b: the cube core is GetBlockIdx() b with ratio 1; vector cores
    // are 2b and 2b + 1, sub-blocks 0 and 1, ratio 2.
    assert_eq!(cross_core(0).unwrap(), [1, 2, 112, 101, 202, 312]);
}

#[test]
fn a_cross_core_wait_no_core_can_satisfy_is_an_error_not_a_hang() {
    for (which, core, flag) in [
        (1, "cube core (AIC)", "CrossCoreWaitFlag<2>(7)"),
        (2, "vector core 1 (AIV)", "CrossCoreWaitFlag<1>(2)"),
    ] {
        match cross_core(which) {
            Err(Error::Kernel { block, message, .. }) => {
                assert_eq!(block, 0);
                assert_eq!(
                    message,
                    format!(
                        "{core}: {flag}: no core of this AI core can set the flag any more (the \
                         others are waiting or have finished); on the NPU this core would wait \
                         for ever"
                    )
                );
            }
            other => panic!("scenario {which}: expected a kernel error, got {other:?}"),
        }
    }
}

#[test]
fn a_cross_core_waits_mode_is_ignored_and_mode_0_across_blocks_is_a_gap() {
    // Atlas A2/A3 ignore a wait's mode: the cube core's mode-1 wait takes
    // what both vector cores' mode-2 sets raised.
    assert_eq!(cross_core(5).unwrap(), [1, 2, 112, 101, 202, 312]);
    let error = |which| match cross_core(which) {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0, "scenario {which}");
            message
        }
        other => panic!("scenario {which}: expected a kernel error, got {other:?}"),
    };
    assert_eq!(
        error(3),
        "vector core 0 (AIV): CrossCoreSetFlag<0>(4): mode 0 synchronises the vector cores (AIV) \
         of all 2 blocks; a barrier across blocks is not emulated on the host"
    );
    assert_eq!(
        error(4),
        "synccheck: CrossCoreSetFlag<2>(6) from the cube core (AIC) is pending 1 time(s) with no \
         CrossCoreWaitFlag(6) on vector core 0 (AIV) when the block ended; CrossCoreSetFlag and \
         CrossCoreWaitFlag must be paired: add the wait, or remove the CrossCoreSetFlag"
    );
}

#[test]
fn a_mixed_source_declared_vector_says_to_declare_it_mixed() {
    let dev = Device::host();
    let mut out = dev.zeros((pypto_rt::Const::<6>,)).unwrap();
    match kernels::cross_core_vector(&mut out, 0) {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0);
            assert_eq!(
                message,
                "CrossCoreWaitFlag<2>(1): waits for the other core kind of a mixed kernel, but \
                 this kernel runs one core kind; declare it `cores: mixed` (its spec or template \
                 contract) so that its cube and vector cores run paired"
            );
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

#[test]
fn kernels_sharing_a_source_with_c_linkage_names_and_an_entry_named_launch_run() {
    // tests/kernels/byok/shared_helper.cpp: the entry is `launch`, the name
    // of the generated shim's own parameter, and `op_helper` and
    // `op_offset` have C linkage, so every compiled copy (shared_helper,
    // and shared_helper_static in two sizes) would define them again; each
    // copy renames them, and this binary links.
    let dev = Device::host();
    let reference = |x: &[f32]| x.iter().map(|v| 2.0 * v + 1.0).collect::<Vec<f32>>();
    for n in [1usize, 7, 1000] {
        let x = data(n, 5);
        let mut out = dev.zeros((n,)).unwrap();
        kernels::shared_helper(&dev.tensor_from(&x, (n,)).unwrap(), &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), reference(&x), "n = {n}");
        assert_eq!(last_launch().unwrap().blocks, 4);
    }
    let x = data(8, 6);
    let mut out = dev.zeros((Const::<8>,)).unwrap();
    kernels::shared_helper_static(&dev.tensor_from(&x, (Const::<8>,)).unwrap(), &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), reference(&x));
    let x = data(16, 7);
    let mut out = dev.zeros((Const::<16>,)).unwrap();
    kernels::shared_helper_static(&dev.tensor_from(&x, (Const::<16>,)).unwrap(), &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), reference(&x));
    assert_eq!(last_launch().unwrap().blocks, 2);
}

/// The scratch crate's program: each brought kernel on the default device
/// (the fake NPU when its runtime is found), checked against plain Rust.
const FAKE_NPU_MAIN: &str = r#"pypto_rt::include_kernels!();

use half::f16;
use pypto_rt::Device;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn small(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32 * 7 + seed * 3) % 9) as f32 - 4.0).collect()
}

fn main() -> Result<()> {
    let dev = Device::from_env()?;
    println!("device: {dev}");

    let n = 3000;
    let x: Vec<f16> = small(n, 1).iter().map(|v| f16::from_f32(*v)).collect();
    let y: Vec<f16> = small(n, 2).iter().map(|v| f16::from_f32(*v)).collect();
    let mut z = dev.zeros((n,))?;
    kernels::add_custom(&dev.tensor_from(&x, (n,))?, &dev.tensor_from(&y, (n,))?, &mut z)?;
    let want: Vec<f16> = x.iter().zip(&y).map(|(a, b)| f16::from_f32(a.to_f32() + b.to_f32())).collect();
    assert_eq!(z.to_vec()?, want, "add_custom");
    println!("add_custom ok");

    let (rows, cols) = (5, 256);
    let x = small(rows * cols, 3);
    let mut out = dev.zeros((rows, cols))?;
    kernels::leaky_rows(&dev.tensor_from(&x, (rows, cols))?, &mut out, 0.25)?;
    let want: Vec<f32> = x.iter().map(|&v| (if v < 0.0 { v * 0.25 } else { v }) + 1.0).collect();
    assert_eq!(out.to_vec()?, want, "leaky_rows");
    println!("leaky_rows ok");

    let (m, k, n) = (64, 32, 48);
    let a: Vec<f16> = small(m * k, 4).iter().map(|v| f16::from_f32(*v)).collect();
    let b: Vec<f16> = small(k * n, 5).iter().map(|v| f16::from_f32(*v)).collect();
    let mut c = dev.zeros((m, n))?;
    let mut out = dev.zeros((m, n))?;
    kernels::matmul_relu(&dev.tensor_from(&a, (m, k))?, &dev.tensor_from(&b, (k, n))?, &mut c, &mut out)?;
    let got = out.to_vec()?;
    for i in 0..m {
        for j in 0..n {
            let s: f32 = (0..k).map(|t| a[i * k + t].to_f32() * b[t * n + j].to_f32()).sum();
            assert_eq!(got[i * n + j], s.max(0.0), "matmul_relu ({i}, {j})");
        }
    }
    println!("matmul_relu ok");

    // One source, three compiled copies, each with its own `launch`,
    // `op_helper` and `op_offset`.
    let x = small(37, 6);
    let mut out = dev.zeros((37,))?;
    kernels::shared_helper(&dev.tensor_from(&x, (37,))?, &mut out)?;
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(out.to_vec()?, want, "shared_helper");
    let x = small(16, 7);
    let mut out = dev.zeros((pypto_rt::Const::<16>,))?;
    kernels::shared_helper_static(&dev.tensor_from(&x, (pypto_rt::Const::<16>,))?, &mut out)?;
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(out.to_vec()?, want, "shared_helper_static");
    println!("shared_helper ok");

    // A tiling struct built by the launch stub; tensors as `__gm__ float*`.
    let x = small(640, 8);
    let mut y = dev.zeros((640,))?;
    kernels::tiled_scale(&dev.tensor_from(&x, (640,))?, &mut y, 1.5)?;
    let want: Vec<f32> = x.iter().map(|v| v * 1.5 - 3.0).collect();
    assert_eq!(y.to_vec()?, want, "tiled_scale");
    let mut y = dev.zeros((640,))?;
    kernels::tiled_scale_one_tile(&dev.tensor_from(&x, (640,))?, &mut y)?;
    let want: Vec<f32> = x.iter().map(|v| v * 0.5 + 7.0).collect();
    assert_eq!(y.to_vec()?, want, "tiled_scale_one_tile");
    let x = dev.zeros((65536,))?;
    let mut y = dev.zeros((65536,))?;
    let err = kernels::tiled_scale_one_tile(&x, &mut y).unwrap_err();
    println!("tiled_scale ok: {err}");
    Ok(())
}
"#;

/// Copies the brought kernels and their spec into a scratch user crate.
fn byok_crate() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-byok");
    pypto_tests::user_crate(
        &dir,
        "scratch-byok",
        "[dependencies.half]\nversion = \"2\"\n\n",
    )
    .unwrap();
    let kernels = pypto_tests::workspace_root().join("tests/kernels");
    std::fs::create_dir_all(dir.join("kernels/byok")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::copy(kernels.join("byok.yaml"), dir.join("kernels/byok.yaml")).unwrap();
    for entry in std::fs::read_dir(kernels.join("byok")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            dir.join("kernels/byok").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::fs::write(dir.join("src/main.rs"), FAKE_NPU_MAIN).unwrap();
    dir
}

#[test]
fn brought_kernels_run_unchanged_on_the_fake_npu() {
    use pypto_tests::fake_cann::{FakeCann, FakeVersion};
    use std::process::Command;

    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = byok_crate();
    let target = pypto_tests::workspace_root().join("target/scratch");
    let fake = FakeCann::assemble(&tmp.join("fake-cann-byok"), FakeVersion::Cann85).unwrap();
    let (ok, _, stderr) =
        pypto_tests::scratch_cargo(&dir, None, &["build"], [("ASCEND_HOME_PATH", &fake.home)]);
    assert!(ok, "NPU build failed:\n{stderr}");
    // Every source rendered for each architecture its targets need (the
    // objects may come from the cache of an earlier run, so the compiler's
    // log is not counted).
    let build_dirs: Vec<std::path::PathBuf> = std::fs::read_dir(target.join("debug/build"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("scratch-byok-"))
        })
        .collect();
    for kernel in [
        "add_custom",
        "leaky_rows",
        "matmul_relu",
        "cross_core",
        "cross_core_vector",
        "shared_helper",
        "shared_helper_static",
        "tiled_scale",
        "tiled_scale_one_tile",
    ] {
        for arch in ["dav2201", "dav3510"] {
            let rendered = format!("out/pypto/src/npu-{arch}/{kernel}_s0.cpp");
            assert!(
                build_dirs.iter().any(|d| d.join(&rendered).is_file()),
                "{rendered} missing"
            );
        }
    }
    // At most one compile per source and architecture (20 sources: 10 of
    // the kernels above, 10 of the scenario, templated, whole-program and
    // quantising kernels), and one `-shared` link per architecture.
    let (links, compiles): (Vec<String>, Vec<String>) = fake
        .bisheng_log()
        .into_iter()
        .partition(|l| l.starts_with("-shared "));
    assert!(compiles.len() <= 40, "{compiles:#?}");
    assert!(links.len() <= 2, "{links:#?}");

    for device in ["npu", "host"] {
        let out = Command::new(target.join("debug/scratch-byok"))
            .env("PYPTO_DEVICE", device)
            // The binary has no run path into the toolkit; `set_env.sh`
            // puts its libraries on the library path.
            .env("LD_LIBRARY_PATH", fake.home.join("lib64"))
            .env_remove("PYPTO_ACL_LIBRARY")
            .env_remove("PYPTO_FAKE_ACL_FAIL")
            .env_remove("PYPTO_FAKE_SOC")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{device}: {stdout}\n{stderr}");
        let shown = if device == "npu" {
            "npu:0 (Ascend910B3)"
        } else {
            "the host (CPU)"
        };
        assert_eq!(
            stdout,
            format!(
                "device: {shown}\nadd_custom ok\nleaky_rows ok\nmatmul_relu ok\nshared_helper ok\n\
                 tiled_scale ok: {}\n",
                if device == "npu" {
                    "`kernel launch` failed with ACL error 1886650369: a `tiling:` field's value \
                     does not fit its type in the struct (the host backend's error names the \
                     field)"
                } else {
                    "kernel `tiled_scale_one_tile`, block 0: `tiling`, field `tileLength`: the \
                     type of `ScaleTilingData::tileLength` cannot hold the size 65536"
                }
            )
        );
    }
}

/// One source, three kernels: `defines:` picks the scenario (and, for
/// one, the element type) as vendor samples pick theirs with
/// `SCENARIO_NUM`; without it the source's own default holds.
#[test]
fn defines_choose_a_sources_scenario() {
    let dev = Device::host();
    for n in [1usize, 300, 1000] {
        let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32 - 8.0).collect();
        let xt = dev.tensor_from(&x, (n,)).unwrap();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::scenario_default(&xt, &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
        assert_eq!(y.to_vec().unwrap(), want, "default, {n}");
        kernels::scenario_double(&xt, &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(y.to_vec().unwrap(), want, "SCENARIO_NUM 2, {n}");

        let xi: Vec<i32> = (0..n as i32).map(|i| i % 1000 - 500).collect();
        let xit = dev.tensor_from(&xi, (n,)).unwrap();
        let mut yi = dev.zeros((n,)).unwrap();
        kernels::scenario_square_i32(&xit, &mut yi).unwrap();
        let want: Vec<i32> = xi.iter().map(|v| v * v).collect();
        assert_eq!(yi.to_vec().unwrap(), want, "SCENARIO_NUM 3 on int32_t, {n}");
    }
}

/// A templated entry, instantiated by `template_args:` with a dtype and an
/// integer, or with a STATIC size: one instantiation per built size, each
/// seeing its own size as the template argument.
#[test]
fn template_args_instantiate_a_templated_entry() {
    let dev = Device::host();
    for n in [1usize, 77, 2000] {
        let x: Vec<f32> = (0..n).map(|i| (i % 9) as f32 - 4.0).collect();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::twice_plus_f32(&dev.tensor_from(&x, (n,)).unwrap(), &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 5.0).collect();
        assert_eq!(y.to_vec().unwrap(), want, "float, {n}");
    }
    let x: Vec<i32> = (0..16).map(|i| i * 3 - 20).collect();
    let mut y = dev.zeros((Const::<16>,)).unwrap();
    kernels::twice_plus_i32_static(&dev.tensor_from(&x, (Const::<16>,)).unwrap(), &mut y).unwrap();
    let want: Vec<i32> = x.iter().map(|v| 2 * v + 16).collect();
    assert_eq!(y.to_vec().unwrap(), want, "int32_t, 16");
    let x: Vec<i32> = (0..48).map(|i| 7 - i).collect();
    let mut y = dev.zeros((Const::<48>,)).unwrap();
    kernels::twice_plus_i32_static(&dev.tensor_from(&x, (Const::<48>,)).unwrap(), &mut y).unwrap();
    let want: Vec<i32> = x.iter().map(|v| 2 * v + 48).collect();
    assert_eq!(y.to_vec().unwrap(), want, "int32_t, 48");
}

/// A whole program in the vendor's single-source style (ACL host code, a
/// `main`, a `<<<>>>` launch, a helper header with <iostream> beside it),
/// brought through `source:` unchanged: its kernel runs, `main` stays out.
#[test]
fn a_whole_single_source_program_brings_its_kernel() {
    let dev = Device::host();
    let x: Vec<f32> = (0..256).map(|i| i as f32 - 100.0).collect();
    let mut y = dev.zeros((Const::<256>,)).unwrap();
    kernels::abs_minus_one(&dev.tensor_from(&x, (Const::<256>,)).unwrap(), &mut y).unwrap();
    let want: Vec<f32> = x.iter().map(|v| v.abs() - 1.0).collect();
    assert_eq!(y.to_vec().unwrap(), want);
}

/// A tiling struct passed by value, built by the launch field by field
/// from a size, literals and a scalar param (which is then not an entry
/// argument of its own), with `__gm__ float*` tensor parameters; `at: 0`
/// passes it first; a size its field cannot hold is the kernel's error.
#[test]
fn a_tiling_struct_is_built_from_the_spec_and_passed_by_value() {
    let dev = Device::host();
    for n in [64usize, 640, 4096] {
        let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::tiled_scale(&dev.tensor_from(&x, (n,)).unwrap(), &mut y, 1.5).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * 1.5 - 3.0).collect();
        assert_eq!(y.to_vec().unwrap(), want, "{n}");
    }
    for n in [8usize, 1000] {
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::tiled_scale_one_tile(&dev.tensor_from(&x, (n,)).unwrap(), &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * 0.5 + 7.0).collect();
        assert_eq!(y.to_vec().unwrap(), want, "{n}");
    }
    // 65536 elements: `tileLength` is a uint16_t.
    let x = dev.zeros((65536usize,)).unwrap();
    let mut y = dev.zeros((65536usize,)).unwrap();
    let err = kernels::tiled_scale_one_tile(&x, &mut y).unwrap_err();
    assert_eq!(
        kernel_message(err),
        "`tiling`, field `tileLength`: the type of `ScaleTilingData::tileLength` cannot hold \
         the size 65536"
    );
}

/// The kernels of a whole vendor-style program (the one
/// `pypto-build run` runs in pypto-build/tests/run.rs), brought through
/// `source:`: a templated entry with typed pointers, a tiling struct and a
/// scenario define, and a mixed cube + vector kernel from a file it
/// includes; each against plain Rust.
#[test]
fn a_vendor_programs_kernels_are_brought_unchanged() {
    let dev = Device::host();
    for n in [8usize, 1000, 4096] {
        let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32 - 8.0).collect();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::vendor_scale_add(&dev.tensor_from(&x, (n,)).unwrap(), &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| 3.0 * v - 0.5).collect();
        assert_eq!(y.to_vec().unwrap(), want, "{n}");
    }
    let (m, k, n) = (64, 32, 48);
    let a: Vec<f16> = (0..m * k)
        .map(|i| f16::from_f32((i % 7) as f32 - 3.0))
        .collect();
    let b: Vec<f16> = (0..k * n)
        .map(|i| f16::from_f32((i % 5) as f32 - 2.0))
        .collect();
    let mut c = dev.zeros((m, n)).unwrap();
    let mut out = dev.zeros((m, n)).unwrap();
    kernels::vendor_matmul_relu(
        &dev.tensor_from(&a, (m, k)).unwrap(),
        &dev.tensor_from(&b, (k, n)).unwrap(),
        &mut c,
        &mut out,
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            let s: f32 = (0..k)
                .map(|t| a[i * k + t].to_f32() * b[t * n + j].to_f32())
                .sum();
            assert_eq!(got[i * n + j], s.max(0.0), "({i}, {j})");
        }
    }
}

/// int8 on the cube: b stored [K, N] reaches L0B through the 8-bit
/// LoadDataWithTranspose (32 x 32 squares), and Fixpipe moves the int32
/// product out as it is, as half scaled by 1/8 (DEQF16, saturating), as
/// int8 by a scale per column (VREQ8) and as uint8 scaled by 1/4 through
/// the ReLU (REQ8); each against plain Rust rounding the documented way
/// (the scale's mantissa cut to 10 bits, nearest-even, saturation).
#[test]
fn int8_products_are_transposed_in_and_quantised_out() {
    let dev = Device::host();
    let (m, k, n) = (16usize, 64usize, 64usize);
    let mut a: Vec<i8> = (0..m * k).map(|i| ((i * 7 + 3) % 41) as i8 - 20).collect();
    let mut b: Vec<i8> = (0..k * n).map(|i| ((i * 5 + 1) % 37) as i8 - 18).collect();
    // Row 0 of a and column 0 of b at the int8 maximum: a sum past half's range.
    a[..k].fill(127);
    for t in 0..k {
        b[t * n] = 127;
    }
    let cut = |s: f32| f32::from_bits(s.to_bits() & 0xFFFF_E000);
    let column_scale = |j: usize| 1.0 / (j as f32 + 1.5);
    let words: Vec<u64> = (0..n)
        .map(|j| u64::from(column_scale(j).to_bits()) | 1 << 46)
        .collect();
    let mut out32 = dev.zeros((Const::<16>, Const::<64>)).unwrap();
    let mut out16 = dev.zeros((Const::<16>, Const::<64>)).unwrap();
    let mut out8 = dev.zeros((Const::<16>, Const::<64>)).unwrap();
    let mut outu8 = dev.zeros((Const::<16>, Const::<64>)).unwrap();
    kernels::quant_cube(
        &dev.tensor_from(&a, (Const::<16>, Const::<64>)).unwrap(),
        &dev.tensor_from(&b, (Const::<64>, Const::<64>)).unwrap(),
        &dev.tensor_from(&words, (Const::<64>,)).unwrap(),
        &mut out32,
        &mut out16,
        &mut out8,
        &mut outu8,
        0,
    )
    .unwrap();
    let sums: Vec<i32> = (0..m * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            (0..k)
                .map(|t| i32::from(a[i * k + t]) * i32::from(b[t * n + j]))
                .sum()
        })
        .collect();
    assert_eq!(out32.to_vec().unwrap(), sums);
    let want16: Vec<f16> = sums
        .iter()
        .map(|&v| f16::from_f32((v as f32 * 0.125).clamp(-65504.0, 65504.0)))
        .collect();
    assert_eq!(out16.to_vec().unwrap(), want16);
    assert_eq!(out16.to_vec().unwrap()[0], f16::from_f32(65504.0));
    let want8: Vec<i8> = sums
        .iter()
        .enumerate()
        .map(|(e, &v)| {
            let q = (v as f32 * cut(column_scale(e % n))).clamp(-256.0, 255.0);
            q.round_ties_even().clamp(-128.0, 127.0) as i8
        })
        .collect();
    assert_eq!(out8.to_vec().unwrap(), want8);
    let wantu8: Vec<u8> = sums
        .iter()
        .map(|&v| {
            let q = if v >= 0 { v as f32 * 0.25 } else { 0.0 };
            q.clamp(-256.0, 255.0).round_ties_even().clamp(0.0, 255.0) as u8
        })
        .collect();
    assert_eq!(outu8.to_vec().unwrap(), wantu8);
    // Both ends of int8 and uint8 are reached.
    assert!(want8.contains(&127) && want8.contains(&-128));
    assert!(wantu8.contains(&255) && wantu8.contains(&0));
    // Mistakes the documents rule out, and what is not emulated, are errors.
    for (fault, message) in [
        (
            1,
            "quantPre does not match the types; use DEQF16 or VDEQF16 for int32_t to half",
        ),
        (
            2,
            "the per-column quantPre mode takes its scales from cbufWorkspace; use the overload \
             with a LocalTensor<uint64_t> in L1",
        ),
        (
            3,
            "the quantisation word's mode control bit (bit 36: shift by N before scaling) is not \
             emulated",
        ),
        (
            4,
            "the quantisation word's sign bit (46) says int8, but the destination is uint8_t",
        ),
    ] {
        let err = kernels::quant_cube(
            &dev.tensor_from(&a, (Const::<16>, Const::<64>)).unwrap(),
            &dev.tensor_from(&b, (Const::<64>, Const::<64>)).unwrap(),
            &dev.tensor_from(&words, (Const::<64>,)).unwrap(),
            &mut out32,
            &mut out16,
            &mut out8,
            &mut outu8,
            fault,
        )
        .unwrap_err();
        assert_eq!(
            kernel_message(err),
            format!("Fixpipe: {message}"),
            "fault {fault}"
        );
    }
}
