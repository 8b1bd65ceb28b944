//! The serving builtins of issue 28 (kernels in tests/kernels/serving.yaml)
//! against plain Rust: builtin/reshape_and_cache writes new keys and values
//! into a paged KV cache by slot. Sizes come from the sweep of each
//! kernel's `SIZES` (every DYNAMIC dim at 1, around the vector unit's
//! blocks and repeats, the block rule's boundaries, primes, a large size)
//! plus the template's own tile boundaries; every block count; the errors
//! word for word; and the broken copies of tests/support/mutants.rs fail
//! the same checks.

use pypto_rt::testing::{Sweep, SweepFailure, Tolerance};
use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{Float, data, kernel_message, kernels, same_bits_at_every_block_count};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Index = Tensor<i32, (usize,)>;

// ---- reshape_and_cache ---------------------------------------------------------

/// A paged cache as the serving kernels declare it: `[NB, 128, W]`.
type Cache<T> = Tensor<T, (usize, Const<128>, usize)>;
type WriteCache<T> =
    fn(&Matrix<T>, &Matrix<T>, &Index, &mut Cache<T>, &mut Cache<T>) -> Result<(), Error>;

/// Rows of a cache block (the spec's fixed axis).
const BLOCK: usize = 128;
/// Bytes of one copy of reshape_and_cache (`kTileBytes`): rows wider than
/// this go in column tiles.
const CACHE_TILE_BYTES: usize = 32768;

/// `n` values in [-4, 4) rounded to `T`.
fn values<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed).into_iter().map(T::from_f32).collect()
}

/// `t` slots into a cache of `slots` rows, from a seed: every fifth token
/// padding (a negative slot, -1 or lower), the rest anywhere in the cache,
/// so that with many tokens some share a slot.
fn slot_mapping(t: usize, slots: usize, seed: u64) -> Vec<i32> {
    data(t, seed)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let r = (v + 4.0) / 8.0;
            if i % 5 == 4 {
                -1 - (r * 1000.0) as i32
            } else {
                ((r * slots as f32) as usize).min(slots - 1) as i32
            }
        })
        .collect()
}

/// What reshape_and_cache leaves in a cache: `cache` with row `slots[t]`
/// replaced by row `t` of `rows`, in token order (the later of two tokens
/// with one slot wins), negative slots skipped.
fn cache_reference<T: Copy>(cache: &[T], rows: &[T], slots: &[i32], width: usize) -> Vec<T> {
    let mut out = cache.to_vec();
    for (t, &s) in slots.iter().enumerate() {
        if s >= 0 {
            let s = s as usize;
            out[s * width..(s + 1) * width].copy_from_slice(&rows[t * width..(t + 1) * width]);
        }
    }
    out
}

/// Runs `f` with `t` tokens of width `w` and caches of `nb` blocks that
/// hold values from a seed; returns both caches after the call, key cache
/// first, and what the reference says they hold.
fn write_cache<T: Float>(
    f: WriteCache<T>,
    t: usize,
    nb: usize,
    w: usize,
    slots: &[i32],
    seed: u64,
) -> Result<(Vec<T>, Vec<T>), Error> {
    let dev = Device::host();
    let key: Vec<T> = values(t * w, seed);
    let value: Vec<T> = values(t * w, seed + 1);
    let k_old: Vec<T> = values(nb * BLOCK * w, seed + 2);
    let v_old: Vec<T> = values(nb * BLOCK * w, seed + 3);
    let mut k_cache = dev.tensor_from(&k_old, (nb, Const::<BLOCK>, w))?;
    let mut v_cache = dev.tensor_from(&v_old, (nb, Const::<BLOCK>, w))?;
    f(
        &dev.tensor_from(&key, (t, w))?,
        &dev.tensor_from(&value, (t, w))?,
        &dev.tensor_from(slots, (t,))?,
        &mut k_cache,
        &mut v_cache,
    )?;
    let mut got = k_cache.to_vec()?;
    got.extend(v_cache.to_vec()?);
    let mut want = cache_reference(&k_old, &key, slots, w);
    want.extend(cache_reference(&v_old, &value, slots, w));
    Ok((got, want))
}

fn bits_as_f64<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.bits())).collect()
}

/// reshape_and_cache over the sweep of its sizes (T, NB and W each varied,
/// every case's caches compared bit for bit, untouched rows included),
/// then rows around its column tile.
fn check_cache<T: Float>(
    f: WriteCache<T>,
    sizes: &pypto_rt::testing::KernelSizes,
) -> Result<usize, SweepFailure> {
    let cases = Sweep::new(sizes)
        .max_elements(1 << 20)
        .run(Tolerance::exact(), |case| {
            let (t, nb, w) = (case.dim("T"), case.dim("NB"), case.dim("W"));
            let slots = slot_mapping(t, nb * BLOCK, case.seed());
            let (got, want) = write_cache(f, t, nb, w, &slots, case.seed())?;
            Ok((bits_as_f64(&got), bits_as_f64(&want)))
        })?;
    let tile = CACHE_TILE_BYTES / size_of::<T>();
    for (t, w) in [(3, tile - 1), (3, tile), (2, tile + 1), (1, 2 * tile + 5)] {
        let slots = slot_mapping(t, BLOCK, w as u64);
        let (got, want) = write_cache(f, t, 1, w, &slots, 7).map_err(|e| SweepFailure {
            kernel: sizes.kernel,
            case: format!("T = {t}, NB = 1, W = {w}"),
            problem: format!("the call failed: {e}"),
        })?;
        if let Some(i) = (0..got.len()).find(|&i| got[i].bits() != want[i].bits()) {
            return Err(SweepFailure {
                kernel: sizes.kernel,
                case: format!("T = {t}, NB = 1, W = {w}"),
                problem: format!("element {i} differs"),
            });
        }
    }
    Ok(cases)
}

#[test]
fn reshape_and_cache_writes_each_slot_in_every_dtype() {
    let cases = check_cache::<f32>(
        |a, b, c, d, e| kernels::cache_f32(a, b, c, d, e),
        &kernels::cache_f32::SIZES,
    )
    .unwrap();
    assert!(cases > 40, "{cases} cases");
    check_cache::<half::f16>(
        |a, b, c, d, e| kernels::cache_f16(a, b, c, d, e),
        &kernels::cache_f16::SIZES,
    )
    .unwrap();
    check_cache::<half::bf16>(
        |a, b, c, d, e| kernels::cache_bf16(a, b, c, d, e),
        &kernels::cache_bf16::SIZES,
    )
    .unwrap();
}

#[test]
fn reshape_and_cache_keeps_the_caches_when_no_token_lands() {
    // No token at all: the launch still runs (one block per cache row, at
    // most 48), and writes nothing.
    let (got, want) = write_cache::<f32>(
        |a, b, c, d, e| kernels::cache_f32(a, b, c, d, e),
        0,
        2,
        16,
        &[],
        3,
    )
    .unwrap();
    assert_eq!(pypto_rt::last_launch().unwrap().blocks, 48);
    assert_eq!(bits_as_f64(&got), bits_as_f64(&want));
    // Every token padding.
    let slots = [-1, -7, i32::MIN, -128];
    let (got, want) = write_cache::<half::f16>(
        |a, b, c, d, e| kernels::cache_f16(a, b, c, d, e),
        4,
        2,
        16,
        &slots,
        4,
    )
    .unwrap();
    assert_eq!(got, want);
    // The later of two tokens with one slot wins, at one block and at 48.
    let slots = [5, 200, 5, 200, 5];
    for blocks in [1, 48] {
        let (got, want) = pypto_rt::with_host_blocks(blocks, || {
            write_cache::<f32>(
                |a, b, c, d, e| kernels::cache_f32(a, b, c, d, e),
                5,
                2,
                8,
                &slots,
                5,
            )
        })
        .unwrap()
        .unwrap();
        assert_eq!(got, want, "{blocks} blocks");
        assert_eq!(got[5 * 8], values::<f32>(5 * 8, 5)[4 * 8]);
    }
}

#[test]
fn reshape_and_cache_gives_the_same_bits_at_every_block_count() {
    let (t, nb, w) = (300, 2, 40);
    let slots = slot_mapping(t, nb * BLOCK, 11);
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("reshape_and_cache", || {
        let (got, w_) = write_cache::<half::bf16>(
            |a, b, c, d, e| kernels::cache_bf16(a, b, c, d, e),
            t,
            nb,
            w,
            &slots,
            12,
        )
        .unwrap();
        want = w_;
        got
    });
    assert_eq!(got, want);
}

#[test]
fn a_decode_steps_cache_of_16_token_blocks() {
    // cache_llama: [T, 128] keys into [NB, 16, 128] caches; slot = block·16 + offset.
    let dev = Device::host();
    let (t, nb) = (4, 3);
    let key: Vec<half::f16> = values(t * 128, 20);
    let value: Vec<half::f16> = values(t * 128, 21);
    let old: Vec<half::f16> = values(nb * 16 * 128, 22);
    let slots = [2 * 16 + 15, -1, 0, 16];
    let mut k_cache = dev
        .tensor_from(&old, (nb, Const::<16>, Const::<128>))
        .unwrap();
    let mut v_cache = dev
        .tensor_from(&old, (nb, Const::<16>, Const::<128>))
        .unwrap();
    kernels::cache_llama(
        &dev.tensor_from(&key, (t, Const::<128>)).unwrap(),
        &dev.tensor_from(&value, (t, Const::<128>)).unwrap(),
        &dev.tensor_from(&slots, (t,)).unwrap(),
        &mut k_cache,
        &mut v_cache,
    )
    .unwrap();
    assert_eq!(
        k_cache.to_vec().unwrap(),
        cache_reference(&old, &key, &slots, 128)
    );
    assert_eq!(
        v_cache.to_vec().unwrap(),
        cache_reference(&old, &value, &slots, 128)
    );
}

#[test]
fn a_slot_outside_the_cache_is_an_error_naming_the_token_and_slot() {
    let f: WriteCache<f32> = |a, b, c, d, e| kernels::cache_f32(a, b, c, d, e);
    for (bad, blocks) in [
        (256, None),
        (256, Some(1)),
        (i32::MAX, Some(48)),
        (1000, Some(7)),
    ] {
        let mut slots = slot_mapping(9, 2 * BLOCK, 30);
        slots[6] = bad;
        let run = || write_cache(f, 9, 2, 24, &slots, 31);
        let err = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap_err();
        let Error::Kernel { kernel, .. } = &err else {
            panic!("expected a kernel error, got {err:?}");
        };
        assert_eq!(*kernel, "cache_f32");
        let message = kernel_message(err);
        let want = format!(
            "cache_f32: token 6: slot_mapping[6] = {bad} is outside the cache's 256 slots (2 blocks of 128)"
        );
        assert!(message.contains(&want), "{message}");
    }
    // The spec's own param names, and a block size of 16.
    let dev = Device::host();
    let x = dev
        .tensor_from(&[half::f16::ZERO; 2 * 128], (2, Const::<128>))
        .unwrap();
    let slots = dev.tensor_from(&[3, 32], (2,)).unwrap();
    let mut k = dev.zeros((2, Const::<16>, Const::<128>)).unwrap();
    let mut v = dev.zeros((2, Const::<16>, Const::<128>)).unwrap();
    let message = kernel_message(kernels::cache_llama(&x, &x, &slots, &mut k, &mut v).unwrap_err());
    assert!(
        message.contains(
            "cache_llama: token 1: slots[1] = 32 is outside the cache's 32 slots (2 blocks of 16)"
        ),
        "{message}"
    );
}

#[test]
fn reshape_and_cache_checks_its_shapes_before_launching() {
    let dev = Device::host();
    let key = dev.zeros::<f32, _>((3, 8)).unwrap();
    let slots = dev.tensor_from(&[0, 1], (2,)).unwrap();
    let mut k = dev.zeros((1, Const::<128>, 8)).unwrap();
    let mut v = dev.zeros((1, Const::<128>, 8)).unwrap();
    let err = kernels::cache_f32(&key, &key, &slots, &mut k, &mut v).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `cache_f32`: `slot_mapping.0` is 2 but `key.0` is 3; they must be equal because \
         they are the dim `T`"
    );
    let slots = dev.tensor_from(&[0, 1, 2], (3,)).unwrap();
    let mut k = dev.zeros((1, Const::<128>, 9)).unwrap();
    let err = kernels::cache_f32(&key, &key, &slots, &mut k, &mut v).unwrap_err();
    assert!(err.to_string().contains("`key_cache.2` is 9"), "{err}");
}

// ---- broken builtins ------------------------------------------------------------

/// Each serving mutant of tests/support/mutants.rs fails the checks its
/// builtin passes (tests/rows.rs leaves them to this file).
#[test]
fn broken_serving_builtins_fail_the_checks() {
    let failure = check_cache::<f32>(
        |a, b, c, d, e| kernels::broken_reshape_and_cache_share_end_f32(a, b, c, d, e),
        &kernels::cache_f32::SIZES,
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let mut serving: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| ["reshape_and_cache"].contains(&m.builtin))
        .map(|m| m.name)
        .collect();
    serving.sort_unstable();
    assert_eq!(
        serving,
        ["broken_reshape_and_cache_share_end_f32"],
        "every serving mutant is checked here"
    );
}
