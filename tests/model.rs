//! The modelled NPU (pypto_rt::profile): every host launch in the closure
//! is also costed on a per-core, per-pipe timeline. These tests check what
//! the model must always satisfy, whatever its constants: results are
//! unchanged, a pipe never overlaps itself, flags order what they order,
//! and the trace is well-formed JSON with the tracks it claims.

use pypto_rt::model::{PIPES, chrome_trace, memory_names};
use pypto_rt::{Const, Device, ModelArch, Profiler, profile};
use pypto_tests::{data_as, kernels};

fn bf16s(n: usize, seed: u64) -> Vec<half::bf16> {
    data_as::<f32>(n, seed)
        .into_iter()
        .map(half::bf16::from_f32)
        .collect()
}

#[test]
fn a_profiled_matmul_computes_the_same_and_runs_on_the_cube_pipes() {
    let dev = Device::host();
    let m = 300;
    let a = dev
        .tensor_from(&bf16s(m * 96, 1), (m, Const::<96>))
        .unwrap();
    let b = dev
        .tensor_from(&bf16s(96 * 32, 2), (Const::<96>, Const::<32>))
        .unwrap();
    let mut plain = dev.zeros((m, Const::<32>)).unwrap();
    kernels::matmul_bf16(&a, &b, &mut plain).unwrap();
    let mut modelled = dev.zeros((m, Const::<32>)).unwrap();
    let (result, profile) = profile(ModelArch::AtlasA3, || {
        kernels::matmul_bf16(&a, &b, &mut modelled)
    });
    result.unwrap();
    assert_eq!(plain.to_vec().unwrap(), modelled.to_vec().unwrap());

    assert_eq!(profile.launches.len(), 1, "{profile}");
    let launch = &profile.launches[0];
    assert_eq!(launch.kernel, "matmul_bf16");
    assert!(launch.cycles > 0);
    assert_eq!(launch.unmodelled(), 0, "{profile}");
    let busy = launch.busy();
    for pipe in ["M", "MTE1", "MTE2", "FIX"] {
        let p = PIPES.iter().position(|&n| n == pipe).unwrap();
        assert!(busy[p] > 0, "{pipe} idle:\n{profile}");
    }
    assert_eq!(busy[1], 0, "a cube kernel used the vector pipe:\n{profile}");
    for f in launch.busy_fraction() {
        assert!((0.0..=1.0).contains(&f), "{f} in\n{profile}");
    }
    // Output tiles of 128 rows are dealt to the 24 blocks in turn: 300 rows
    // are 3 tiles, fewer than the cores, so N's 32 columns are split into
    // tiles of 16: 6 blocks compute and the other 18 only start.
    let working: Vec<_> = launch
        .cores
        .iter()
        .filter(|c| !c.slices.is_empty())
        .collect();
    assert_eq!((launch.cores.len(), working.len()), (24, 6), "{profile}");
    // No pipe runs two instructions at once; every instruction fits in its core.
    for core in working {
        for pipe in 0..8u8 {
            let mut slices: Vec<_> = core.slices.iter().filter(|s| s.pipe == pipe).collect();
            slices.sort_by_key(|s| s.start);
            for w in slices.windows(2) {
                assert!(w[0].end <= w[1].start, "{:?} overlaps {:?}", w[0], w[1]);
            }
        }
        assert!(
            core.slices
                .iter()
                .all(|s| s.start <= s.end && s.end <= core.cycles)
        );
        // A flag is waited for no earlier than it was set.
        assert!(
            core.flows.iter().all(|f| f.set <= f.wait),
            "{:?}",
            core.flows
        );
        // The Mmad of each K tile starts after the LoadData that fed it ended.
        let first_mmad = core.slices.iter().find(|s| &*s.name == "Mmad").unwrap();
        let first_load = core.slices.iter().find(|s| &*s.name == "LoadData").unwrap();
        assert!(first_load.end <= first_mmad.start);
        assert!(first_mmad.site.as_deref().is_some_and(|s| s.contains(':')));
    }
    let text = profile.to_string();
    assert!(
        text.starts_with("modelled on Atlas A3 (910_9391) (a model, not a measurement)"),
        "{text}"
    );
}

/// add_bias over [8, 128] fp32, profiled on `arch` (traced).
/// A one-row (decode) product is dealt out over every core by columns
/// (1024 columns over 24 cores: 22 tiles of 48), each core streaming its
/// own columns of B once, with the numbers a plain-Rust product gives
/// (exact: small whole numbers).
#[test]
fn a_decode_matmul_is_split_over_the_cores_by_columns() {
    let dev = Device::host();
    let (k, n) = (256usize, 1024usize);
    let a: Vec<half::f16> = (0..k)
        .map(|i| half::f16::from_f32((i % 5) as f32 - 2.0))
        .collect();
    let b: Vec<half::f16> = (0..k * n)
        .map(|i| half::f16::from_f32((i % 3) as f32 - 1.0))
        .collect();
    let at = dev.tensor_from(&a, (1usize, k)).unwrap();
    let bt = dev.tensor_from(&b, (k, n)).unwrap();
    let mut out = dev.zeros((1usize, n)).unwrap();
    let (result, profile) = profile(ModelArch::AtlasA3, || {
        kernels::builtin_matmul_f16(&at, &bt, &mut out)
    });
    result.unwrap();
    let want: Vec<f32> = (0..n)
        .map(|j| (0..k).map(|p| a[p].to_f32() * b[p * n + j].to_f32()).sum())
        .collect();
    let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, want);
    let launch = &profile.launches[0];
    let working = launch.cores.iter().filter(|c| !c.slices.is_empty()).count();
    assert_eq!(
        (launch.cores.len(), working),
        (24, n.div_ceil(48)),
        "{profile}"
    );
    // Busy fractions average over the cores that worked, not the idle
    // blocks (which take no core's time).
    let mte2: u64 = launch.cores.iter().map(|c| c.busy[4]).sum();
    let want = mte2 as f64 / (working as f64 * launch.cycles as f64);
    assert!(
        (launch.busy_fraction()[4] - want).abs() < 1e-12 && want <= 1.0,
        "{profile}"
    );
    // Each working core reads its own 48 columns of B and A's one row:
    // B's bytes once over the launch, not once per row or per core.
    let b_bytes = (k * n * 2) as u64;
    let read: u64 = launch.cores.iter().map(|c| c.gm_read).sum();
    assert!(
        read >= b_bytes && read < b_bytes + (working * k * 2 * 16) as u64,
        "read {read} bytes for a {b_bytes}-byte weight:\n{profile}"
    );
}

fn profiled_add_bias(arch: ModelArch) -> pypto_rt::Profile {
    let dev = Device::host();
    let x = dev
        .tensor_from(&data_as::<f32>(8 * 128, 3), (8, Const::<128>))
        .unwrap();
    let bias = dev
        .tensor_from(&data_as::<f32>(128, 4), (Const::<128>,))
        .unwrap();
    let mut out = dev.zeros((8, Const::<128>)).unwrap();
    let (result, profile) = profile(arch, || kernels::add_bias(&x, &bias, &mut out));
    result.unwrap();
    profile
}

#[test]
fn the_trace_is_json_with_a_track_per_core_and_pipe() {
    let profile = profiled_add_bias(ModelArch::AtlasA2);
    let json: serde_json::Value = serde_json::from_str(&chrome_trace(&profile)).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    let launch = &profile.launches[0];
    let expected: usize = launch.cores.iter().map(|c| c.slices.len()).sum();
    assert_eq!(slices.len(), expected);
    assert!(
        slices
            .iter()
            .any(|e| e["name"].as_str().unwrap().starts_with("DataCopy"))
    );
    let tracks: std::collections::BTreeSet<u64> =
        slices.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    let named: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert!(
        tracks.is_subset(&named),
        "{tracks:?} not all named in {named:?}"
    );
    // Vector-kernel blocks use the vector pipe and both copy directions.
    let busy = launch.busy();
    for pipe in ["V", "MTE2", "MTE3"] {
        let p = PIPES.iter().position(|&n| n == pipe).unwrap();
        assert!(busy[p] > 0, "{pipe} idle:\n{profile}");
    }
}

/// What each slice of a profile says its instruction read and wrote, as
/// `name pipe: reads -> writes`, one line per distinct combination.
fn accesses(profile: &pypto_rt::Profile) -> std::collections::BTreeSet<String> {
    profile.launches[0]
        .cores
        .iter()
        .flat_map(|c| &c.slices)
        .filter(|s| &*s.name != "SetFlag" && &*s.name != "WaitFlag")
        .map(|s| {
            format!(
                "{} {}: {} -> {}",
                s.name,
                PIPES[s.pipe as usize],
                memory_names(s.reads).join(" "),
                memory_names(s.writes).join(" ")
            )
        })
        .collect()
}

#[test]
fn each_slice_names_the_memories_its_instruction_read_and_wrote() {
    let dev = Device::host();
    let vector = profiled_add_bias(ModelArch::AtlasA3);
    let seen = accesses(&vector);
    for want in [
        "DataCopy MTE2: GM -> UB",
        "DataCopy MTE3: UB -> GM",
        "Add V: UB -> UB",
    ] {
        assert!(seen.contains(want), "no `{want}` in {seen:#?}");
    }
    // The trace carries the same record.
    let json: serde_json::Value = serde_json::from_str(&chrome_trace(&vector)).unwrap();
    let add = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with("Add "))
        .expect("an Add slice");
    assert_eq!(
        (
            add["args"]["reads"].as_str(),
            add["args"]["writes"].as_str()
        ),
        (Some("UB"), Some("UB"))
    );

    let a = dev
        .tensor_from(&bf16s(64 * 96, 1), (64, Const::<96>))
        .unwrap();
    let b = dev
        .tensor_from(&bf16s(96 * 32, 2), (Const::<96>, Const::<32>))
        .unwrap();
    let mut c = dev.zeros((64, Const::<32>)).unwrap();
    let (result, cube) = profile(ModelArch::AtlasA3, || kernels::matmul_bf16(&a, &b, &mut c));
    result.unwrap();
    let seen = accesses(&cube);
    for want in [
        "DataCopy MTE2: GM -> L1",
        "LoadData MTE1: L1 -> L0A",
        "LoadData MTE1: L1 -> L0B",
        "Mmad M: L0A L0B -> L0C",
        "Fixpipe FIX: L0C -> GM",
    ] {
        assert!(seen.contains(want), "no `{want}` in {seen:#?}");
    }
    // Every costed instruction touched some memory.
    for line in &seen {
        assert!(!line.ends_with(":  -> "), "{line} touched nothing");
    }
}

#[test]
fn nothing_is_modelled_outside_a_profile() {
    let dev = Device::host();
    let x = dev
        .tensor_from(&data_as::<f32>(2 * 128, 5), (2, Const::<128>))
        .unwrap();
    let bias = dev
        .tensor_from(&data_as::<f32>(128, 6), (Const::<128>,))
        .unwrap();
    let mut out = dev.zeros((2, Const::<128>)).unwrap();
    let ((), profile) = profile(ModelArch::AtlasA3, || ());
    kernels::add_bias(&x, &bias, &mut out).unwrap();
    assert!(profile.launches.is_empty());
}

#[test]
fn timing_only_gives_the_same_timeline_event_for_event() {
    let dev = Device::host();
    let m = 200;
    let a = dev
        .tensor_from(&bf16s(m * 96, 7), (m, Const::<96>))
        .unwrap();
    let b = dev
        .tensor_from(&bf16s(96 * 32, 8), (Const::<96>, Const::<32>))
        .unwrap();
    let mut out = dev.zeros((m, Const::<32>)).unwrap();
    let (full, computed) =
        pypto_rt::Profiler::new(ModelArch::AtlasA3).run(|| kernels::matmul_bf16(&a, &b, &mut out));
    full.unwrap();
    let mut untouched = dev.zeros((m, Const::<32>)).unwrap();
    let (timed, timing) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
        .timing_only(true)
        .run(|| kernels::matmul_bf16(&a, &b, &mut untouched));
    timed.unwrap();
    assert!(timing.timing_only && !computed.timing_only);
    assert_eq!(computed.launches, timing.launches);
    // Nothing was computed: the output is as it was.
    assert!(
        untouched
            .to_vec()
            .unwrap()
            .iter()
            .all(|v| v.to_f32() == 0.0)
    );
}

#[test]
fn a_mixed_kernel_s_cores_wait_for_each_other_s_flags() {
    let dev = Device::host();
    let (m, k, n) = (64, 32, 48);
    let a: Vec<half::f16> = data_as::<f32>(m * k, 9)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let b: Vec<half::f16> = data_as::<f32>(k * n, 10)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let a = dev.tensor_from(&a, (m, k)).unwrap();
    let b = dev.tensor_from(&b, (k, n)).unwrap();
    let mut c = dev.zeros((m, n)).unwrap();
    let mut out = dev.zeros((m, n)).unwrap();
    let (result, profile) = profile(ModelArch::AtlasA3, || {
        kernels::matmul_relu(&a, &b, &mut c, &mut out)
    });
    result.unwrap();
    let launch = &profile.launches[0];
    let cube = launch
        .cores
        .iter()
        .find(|c| c.core == pypto_rt::model::CoreKind::MixedCube)
        .unwrap();
    let fixpipe_end = cube
        .slices
        .iter()
        .filter(|s| &*s.name == "Fixpipe")
        .map(|s| s.end)
        .min()
        .unwrap();
    for vector in launch.cores.iter().filter(|c| c.core.is_vector()) {
        // The vector core's wait comes from the cube core, after its first Fixpipe.
        let cross: Vec<_> = vector.flows.iter().filter(|f| f.from_core == 0).collect();
        assert!(!cross.is_empty(), "{:?}", vector.flows);
        assert!(
            cross
                .iter()
                .all(|f| f.set >= fixpipe_end && f.wait >= f.set)
        );
        // Its first vector instruction runs after the flag arrived.
        let first_v = vector
            .slices
            .iter()
            .filter(|s| s.pipe == 1 || s.pipe == 4)
            .map(|s| s.start)
            .min()
            .unwrap();
        assert!(first_v >= cross[0].set, "{first_v} < {}", cross[0].set);
    }
}

#[test]
#[ignore = "prints a GEMM's modelled timeline, for calibrating by hand"]
fn print_gemm_timeline() {
    let dev = Device::host();
    let (m, n, k) = (256usize, 512usize, 2048usize);
    let a = dev.zeros::<half::f16, _>((m, k)).unwrap();
    let b = dev.zeros::<half::f16, _>((n, k)).unwrap();
    let mut out = dev.zeros::<f32, _>((m, n)).unwrap();
    let (r, profile) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
        .timing_only(true)
        .run(|| kernels::gemm_a3_1x1(&a, &b, &mut out));
    r.unwrap();
    println!("{profile}");
    let core = &profile.launches[0].cores[0];
    let mut slices = core.slices.clone();
    slices.sort_by_key(|s| s.start);
    for s in slices.iter().take(120) {
        println!(
            "{:>7} {:>7} {:>5} {} {:?}",
            s.start, s.end, PIPES[s.pipe as usize], s.name, s.site
        );
    }
    let dir = std::env::temp_dir();
    std::fs::write(dir.join("gemm_trace.json"), chrome_trace(&profile)).unwrap();
    std::fs::write(
        dir.join("gemm_timeline.svg"),
        pypto_rt::model::svg(&profile),
    )
    .unwrap();
    println!(
        "wrote gemm_trace.json and gemm_timeline.svg in {}",
        dir.display()
    );
}

#[test]
#[ignore = "writes the README's flash attention timeline"]
fn print_flash_attention_timeline() {
    // Decode: 2 requests x 2 KV heads over 2 blocks, 2,048 keys each.
    let dev = Device::host();
    let (batch, skv) = (2usize, 2048usize);
    let q = dev
        .zeros::<half::f16, _>((batch, 1, Const::<1024>))
        .unwrap();
    let k = dev
        .zeros::<half::f16, _>((batch, skv, Const::<256>))
        .unwrap();
    let v = dev
        .zeros::<half::f16, _>((batch, skv, Const::<256>))
        .unwrap();
    let mut out = dev
        .zeros::<half::f16, _>((batch, 1, Const::<1024>))
        .unwrap();
    let (r, profile) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
        .timing_only(true)
        .run(|| kernels::flash_gqa4_two_cores(&q, &k, &v, &mut out));
    r.unwrap();
    println!("{profile}");
    let path = std::env::temp_dir().join("flash_attention_timeline.svg");
    std::fs::write(&path, pypto_rt::model::svg(&profile)).unwrap();
    println!("wrote {}", path.display());
}

#[test]
fn a_mixed_kernel_s_timeline_is_the_same_every_run_and_in_timing_only_mode() {
    let dev = Device::host();
    let (s0, s1) = (256usize, 512usize);
    let halves = |n: usize, seed: u64| -> Vec<half::f16> {
        data_as::<f32>(n, seed)
            .into_iter()
            .map(half::f16::from_f32)
            .collect()
    };
    let q = dev
        .tensor_from(&halves(s0 * 128, 11), (s0, Const::<128>))
        .unwrap();
    let k = dev
        .tensor_from(&halves(s1 * 128, 12), (s1, Const::<128>))
        .unwrap();
    let v = dev
        .tensor_from(&halves(s1 * 128, 13), (s1, Const::<128>))
        .unwrap();
    let run = |timing_only: bool| {
        let mut out = dev.zeros::<f32, _>((s0, Const::<128>)).unwrap();
        let mut ws_s = dev.zeros::<f32, _>((Const::<5>, s0, Const::<128>)).unwrap();
        let mut ws_p = dev
            .zeros::<half::f16, _>((Const::<5>, s0, Const::<128>))
            .unwrap();
        let mut ws_o = dev.zeros::<f32, _>((Const::<5>, s0, Const::<128>)).unwrap();
        let (r, p) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
            .timing_only(timing_only)
            .run(|| {
                kernels::flash_attention_128(&q, &k, &v, &mut out, &mut ws_s, &mut ws_p, &mut ws_o)
            });
        r.unwrap();
        p
    };
    let first = run(false);
    assert_eq!(first.launches[0].cores.len(), 2 * 3);
    // The two blocks start one mixed-launch stagger apart, and the launch
    // ends with the later block's slowest core, after the launch overhead.
    let launch = &first.launches[0];
    let arch = ModelArch::AtlasA3;
    let stagger = (arch.mixed_block_stagger_micros() * arch.clock_mhz()).round() as u64;
    assert!(stagger > 0);
    assert_eq!(launch.schedule[0].0, 0);
    assert_eq!(launch.schedule[1].0, stagger);
    let block_end = |b: u32| -> u64 {
        launch
            .cores
            .iter()
            .filter(|c| c.block == b)
            .map(|c| launch.schedule[b as usize].0 + c.cycles)
            .max()
            .unwrap()
    };
    assert_eq!(
        launch.cycles,
        arch.launch_cycles(true) + block_end(0).max(block_end(1))
    );
    for timing_only in [false, false, false, true] {
        let again = run(timing_only);
        if let Some(diff) = first_difference(&first, &again) {
            panic!("timing only {timing_only}: {diff}");
        }
    }
}

/// Where two profiles' timelines first differ, if they do.
fn first_difference(a: &pypto_rt::Profile, b: &pypto_rt::Profile) -> Option<String> {
    for (la, lb) in a.launches.iter().zip(&b.launches) {
        for (ca, cb) in la.cores.iter().zip(&lb.cores) {
            for (i, (sa, sb)) in ca.slices.iter().zip(&cb.slices).enumerate() {
                if sa != sb {
                    return Some(format!(
                        "block {} {:?} slice {i}: {sa:?} then {sb:?}",
                        ca.block, ca.core
                    ));
                }
            }
            for (i, (fa, fb)) in ca.flows.iter().zip(&cb.flows).enumerate() {
                if fa != fb {
                    return Some(format!(
                        "block {} {:?} flow {i}: {fa:?} then {fb:?}",
                        ca.block, ca.core
                    ));
                }
            }
            if (ca.cycles, ca.busy, ca.slices.len()) != (cb.cycles, cb.busy, cb.slices.len()) {
                return Some(format!("block {} {:?}: totals differ", ca.block, ca.core));
            }
        }
    }
    (a.launches != b.launches).then(|| "launch totals differ".to_owned())
}

#[test]
#[ignore = "prints a flash attention's modelled timeline, for calibrating by hand"]
fn print_fa_timeline() {
    let dev = Device::host();
    let (s0, s1) = (128usize, 2048usize);
    let q = dev.zeros::<half::f16, _>((s0, Const::<128>)).unwrap();
    let k = dev.zeros::<half::f16, _>((s1, Const::<128>)).unwrap();
    let v = dev.zeros::<half::f16, _>((s1, Const::<128>)).unwrap();
    let mut out = dev.zeros::<f32, _>((s0, Const::<128>)).unwrap();
    let mut ws_s = dev.zeros::<f32, _>((Const::<5>, s0, Const::<256>)).unwrap();
    let mut ws_p = dev
        .zeros::<half::f16, _>((Const::<5>, s0, Const::<256>))
        .unwrap();
    let mut ws_o = dev.zeros::<f32, _>((Const::<5>, s0, Const::<128>)).unwrap();
    let (r, profile) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
        .timing_only(true)
        .run(|| {
            kernels::flash_attention_128_t256(&q, &k, &v, &mut out, &mut ws_s, &mut ws_p, &mut ws_o)
        });
    r.unwrap();
    println!("{profile}");
    for core in profile.launches[0].cores.iter().take(2) {
        println!(
            "core {:?}: {} cycles, busy {:?}",
            core.core, core.cycles, core.busy
        );
        let mut slices = core.slices.clone();
        slices.sort_by_key(|s| s.start);
        for s in slices.iter().filter(|s| s.end > s.start + 1).take(160) {
            println!(
                "{:>7} {:>7} {:>5} {} {}",
                s.start, s.end, PIPES[s.pipe as usize], s.name, s.bytes
            );
        }
    }
    let path = std::env::temp_dir().join("fa_timeline.svg");
    std::fs::write(&path, pypto_rt::model::svg(&profile)).unwrap();
    println!("wrote {}", path.display());
}

/// Models leaky_rows over `rows` rows of `h` floats: one block per row
/// (not capped at the chip's cores), each streaming its row in and out.
fn streaming(rows: usize, h: usize) -> pypto_rt::model::LaunchProfile {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((rows, h)).unwrap();
    let mut out = dev.zeros::<f32, _>((rows, h)).unwrap();
    let (result, profile) = pypto_rt::Profiler::new(ModelArch::AtlasA3)
        .trace(false)
        .run(|| kernels::leaky_rows(&x, &mut out, 0.25));
    result.unwrap();
    assert_eq!(profile.launches.len(), 1);
    profile.launches[0].clone()
}

#[test]
fn many_cores_streaming_global_memory_share_the_chip_s_bandwidth() {
    let arch = ModelArch::AtlasA3;
    let h = 8 * 1024;
    let overhead = arch.launch_cycles(false);
    let few = streaming(4, h);
    let all = streaming(48, h);
    let waves = streaming(96, h);
    let kernel = |l: &pypto_rt::model::LaunchProfile| l.cycles - overhead;
    let read = |l: &pypto_rt::model::LaunchProfile| l.cores.iter().map(|c| c.gm_read).sum::<u64>();
    let written =
        |l: &pypto_rt::model::LaunchProfile| l.cores.iter().map(|c| c.gm_write).sum::<u64>();
    // Every block moves the same bytes.
    assert_eq!(read(&all), 12 * read(&few));
    assert_eq!(read(&few), 4 * h as u64 * 4);
    assert_eq!(written(&waves), 2 * written(&all));

    // Four cores stream at their own rates: the chip's L2 is not reached,
    // and the launch takes as long as its slowest core.
    assert_eq!(few.gm_stall, 0);
    let slowest =
        |l: &pypto_rt::model::LaunchProfile| l.cores.iter().map(|c| c.cycles).max().unwrap();
    assert_eq!(kernel(&few), slowest(&few));

    // First reads of the inputs come from HBM, split evenly over the cores:
    // on four cores at the core's L2 rate (the HBM's 768 bytes a cycle over
    // four is more), on 48 at 768 / 48 = 16 bytes a cycle, so each of the
    // 48 cores streams longer for the same bytes and the launch is slower.
    let inputs = |rows: u64| rows * h as u64 * 4;
    for (l, rows) in [(&few, 4u64), (&all, 48)] {
        let cold_rate = arch.chip_hbm_bytes_per_cycle().min(110.0 * rows as f64) / rows as f64;
        for c in &l.cores {
            assert_eq!(c.gm_cold, inputs(rows) / rows, "block {}", c.block);
            let streaming = c.gm_cold as f64 / cold_rate + (c.gm_read - c.gm_cold) as f64 / 110.0;
            assert!(
                c.busy[4] as f64 >= streaming - 1.0,
                "{} < {streaming}",
                c.busy[4]
            );
        }
    }
    assert_eq!(arch.chip_hbm_bytes_per_cycle() / 48.0, 16.0);
    assert!(slowest(&all) > slowest(&few));
    assert!(kernel(&all) > kernel(&few));
    // The chip's L2 is not reached by this kernel's re-reads and writes
    // (a unit test of pypto-rt's report.rs shows it binding); when it is,
    // the launch takes at least its bytes at the L2's rate.
    let bound = |l: &pypto_rt::model::LaunchProfile| {
        let reads = read(l) as f64 / arch.chip_l2_bytes_per_cycle();
        let writes = written(l) as f64 / arch.chip_l2_write_bytes_per_cycle();
        reads.max(writes) - 2.0 * 1024.0
    };
    assert!(kernel(&all) as f64 >= bound(&all));

    // 96 blocks on 48 vector cores run in two waves: the second starts as
    // first-wave blocks end, on the same cores, and the launch is bound by
    // the chip's bandwidth over both waves.
    let slots: std::collections::BTreeSet<u32> = waves.schedule.iter().map(|&(_, s)| s).collect();
    assert_eq!(slots.len(), 48);
    assert!(waves.schedule[..48].iter().all(|&(start, _)| start == 0));
    assert!(waves.schedule[48..].iter().all(|&(start, _)| start > 0));
    let shortest = waves.cores[..48].iter().map(|c| c.cycles).min().unwrap();
    assert!(
        waves.schedule[48..]
            .iter()
            .all(|&(start, _)| start >= shortest)
    );
    assert!(kernel(&waves) >= 2 * shortest);
    assert!(kernel(&waves) as f64 >= bound(&waves));
}

/// K = 0: nothing to multiply; every output value is written, as zero.
#[test]
fn a_matmul_over_no_k_writes_zeros() {
    let dev = Device::host();
    let a = dev.zeros::<half::f16, _>((130usize, 0usize)).unwrap();
    let b = dev.zeros::<half::f16, _>((0usize, 144usize)).unwrap();
    let ones = vec![half::f16::ONE; 130 * 144];
    let mut out = dev.tensor_from(&ones, (130usize, 144usize)).unwrap();
    kernels::builtin_matmul_f16(&a, &b, &mut out).unwrap();
    assert!(out.to_vec().unwrap().iter().all(|v| *v == half::f16::ZERO));
}

#[test]
fn a_mixed_kernel_s_first_reads_are_the_cube_s_reads_of_its_inputs() {
    // builtin/flash_attention (tests/kernels/flash.yaml) on 24 blocks:
    // the cube cores read q, k and v; the vector cores read only the
    // workspace the cube wrote, which is never a first read from HBM.
    let dev = Device::host();
    let (batch, sq, skv) = (3usize, 1usize, 300usize);
    let q = dev
        .zeros::<half::f16, _>((batch, sq, Const::<1024>))
        .unwrap();
    let k = dev
        .zeros::<half::f16, _>((batch, skv, Const::<256>))
        .unwrap();
    let v = dev
        .zeros::<half::f16, _>((batch, skv, Const::<256>))
        .unwrap();
    let mut out = dev
        .zeros::<half::f16, _>((batch, sq, Const::<1024>))
        .unwrap();
    let (result, profile) = Profiler::new(ModelArch::AtlasA3)
        .trace(false)
        .run(|| kernels::flash_gqa4_d128_causal_f16(&q, &k, &v, &mut out));
    result.unwrap();
    let launch = &profile.launches[0];
    let inputs = ((batch * sq * 1024 + 2 * batch * skv * 256) * 2) as u64;
    let share = inputs / 24;
    let mut cube_cold = 0;
    for c in &launch.cores {
        if c.core.is_vector() {
            assert!(
                c.gm_read > 0 || c.block >= 3,
                "block {} {:?} read nothing",
                c.block,
                c.core
            );
            assert_eq!(c.gm_cold, 0, "block {} {:?}", c.block, c.core);
        } else {
            // Each cube reads one unit's q rows, keys and values (3 units:
            // a request's two KV heads together, as decode pairs them), up
            // to its block's share cold.
            assert!(
                c.gm_cold <= share,
                "block {}: {} > {share}",
                c.block,
                c.gm_cold
            );
            cube_cold += c.gm_cold;
        }
    }
    assert_eq!(cube_cold, 3 * share);
}
