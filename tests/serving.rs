//! The serving builtins of issue 28 (kernels in tests/kernels/serving.yaml)
//! against plain Rust: builtin/reshape_and_cache writes new keys and values
//! into a paged KV cache by slot; builtin/rope rotates query or key heads
//! by their tokens' positions (NeoX and interleaved pairs, partial rotary;
//! the references compute in fp32 as the kernel does, so the checks are
//! bit for bit); builtin/argmax picks each row's largest value (ties to the
//! lowest index, NaN first); builtin/dynamic_quant quantises each token to
//! int8 with an fp32 scale (checked against a model of the two casts it
//! uses). Sizes come from the sweep of each
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

// ---- rope ------------------------------------------------------------------------

/// How a rope kernel was built: its options.
#[derive(Clone, Copy, Debug)]
struct RopeShape {
    head_dim: usize,
    rotary_dim: usize,
    interleaved: bool,
}

/// rope's wrapper; `S` is the table's shape type (`(usize, Const<64>)`).
type Rope<T, C, S> = fn(&Matrix<T>, &Index, &Tensor<C, S>, &mut Matrix<T>) -> Result<(), Error>;

/// A cos/sin table of `positions` rows as serving engines build it:
/// cos(p·θ_i) for i < R/2, then sin(p·θ_i), θ_i = 10000^(−2i/R), in f64,
/// rounded to `C`.
fn cos_sin_table<C: Float>(positions: usize, rotary: usize) -> Vec<C> {
    let half = rotary / 2;
    let mut table = Vec::with_capacity(positions * rotary);
    for p in 0..positions {
        let angle = |i: usize| p as f64 * 10000f64.powf(-2.0 * i as f64 / rotary as f64);
        table.extend((0..half).map(|i| C::from_f32(angle(i).cos() as f32)));
        table.extend((0..half).map(|i| C::from_f32(angle(i).sin() as f32)));
    }
    table
}

/// `t` positions in [0, max), from a seed.
fn positions(t: usize, max: usize, seed: u64) -> Vec<i32> {
    data(t, seed)
        .into_iter()
        .map(|v| (((v + 4.0) / 8.0 * max as f32) as usize).min(max - 1) as i32)
        .collect()
}

/// What rope computes, in fp32 as the kernel does: each rotated pair
/// (x1, x2) becomes (x1·cos) + (x2·(−sin)) and (x2·cos) + (x1·sin), rounded
/// to `T` once; dims past the rotary ones are copied.
fn rope_reference<T: Float, C: Float>(
    x: &[T],
    pos: &[i32],
    table: &[C],
    cols: usize,
    shape: RopeShape,
) -> Vec<T> {
    let (d, r) = (shape.head_dim, shape.rotary_dim);
    let half = r / 2;
    let mut out = x.to_vec();
    for (t, &p) in pos.iter().enumerate() {
        let row = &table[p as usize * r..(p as usize + 1) * r];
        for j in 0..cols {
            let (head, k) = (j - j % d, j % d);
            if k >= r {
                continue;
            }
            let (i, first, partner) = if shape.interleaved {
                (k / 2, k % 2 == 0, head + (k ^ 1))
            } else if k < half {
                (k, true, head + k + half)
            } else {
                (k - half, false, head + k - half)
            };
            let (c, s) = (row[i].to_f32(), row[half + i].to_f32());
            let s = if first { -s } else { s };
            let (v, w) = (x[t * cols + j].to_f32(), x[t * cols + partner].to_f32());
            out[t * cols + j] = T::from_f32(v * c + w * s);
        }
    }
    out
}

/// Runs `f` on `t` tokens of `cols` values at positions `pos`, with a
/// table of `max_pos` rows; returns the output (filled with NaN first) and
/// the reference.
fn run_rope<T: Float, C: Float, S: pypto_rt::Shape>(
    f: Rope<T, C, S>,
    shape: RopeShape,
    t: usize,
    cols: usize,
    max_pos: usize,
    pos: &[i32],
    seed: u64,
) -> Result<(Vec<T>, Vec<T>), Error> {
    let dev = Device::host();
    let x: Vec<T> = values(t * cols, seed);
    let table: Vec<C> = cos_sin_table(max_pos, shape.rotary_dim);
    let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); t * cols], (t, cols))?;
    f(
        &dev.tensor_from(&x, (t, cols))?,
        &dev.tensor_from(pos, (t,))?,
        &dev.tensor_from_sizes::<C, S>(&table, &[max_pos, shape.rotary_dim])?,
        &mut out,
    )?;
    Ok((out.to_vec()?, rope_reference(&x, pos, &table, cols, shape)))
}

/// rope over the sweep of its sizes (tokens, the row in whole heads and
/// positions each varied; `labels` names those dims), bit for bit against
/// the reference.
fn check_rope<T: Float, C: Float, S: pypto_rt::Shape>(
    f: Rope<T, C, S>,
    shape: RopeShape,
    sizes: &pypto_rt::testing::KernelSizes,
    labels: [&str; 3],
) -> Result<usize, SweepFailure> {
    Sweep::new(sizes)
        .max_elements(1 << 20)
        .run(Tolerance::exact(), |case| {
            let [t, cols, max_pos] = labels.map(|l| case.dim(l));
            let pos = positions(t, max_pos, case.seed());
            let (got, want) = run_rope(f, shape, t, cols, max_pos, &pos, case.seed())?;
            Ok((bits_as_f64(&got), bits_as_f64(&want)))
        })
}

/// The dims of serving.yaml's rope kernels: tokens, a row, positions.
const ROPE_DIMS: [&str; 3] = ["T", "HD", "P"];

const NEOX_64: RopeShape = RopeShape {
    head_dim: 64,
    rotary_dim: 64,
    interleaved: false,
};
const NEOX_128_PARTIAL: RopeShape = RopeShape {
    head_dim: 128,
    rotary_dim: 64,
    interleaved: false,
};
const INTERLEAVED_64: RopeShape = RopeShape {
    head_dim: 64,
    rotary_dim: 64,
    interleaved: true,
};
const INTERLEAVED_80_PARTIAL: RopeShape = RopeShape {
    head_dim: 80,
    rotary_dim: 34,
    interleaved: true,
};

#[test]
fn rope_rotates_every_head_in_both_styles_and_every_dtype() {
    let cases = check_rope::<f32, f32, _>(
        |a, b, c, d| kernels::rope_f32(a, b, c, d),
        NEOX_64,
        &kernels::rope_f32::SIZES,
        ROPE_DIMS,
    )
    .unwrap();
    assert!(cases > 40, "{cases} cases");
    check_rope::<half::f16, half::f16, _>(
        |a, b, c, d| kernels::rope_f16_partial(a, b, c, d),
        NEOX_128_PARTIAL,
        &kernels::rope_f16_partial::SIZES,
        ROPE_DIMS,
    )
    .unwrap();
    check_rope::<half::bf16, f32, _>(
        |a, b, c, d| kernels::rope_bf16_interleaved(a, b, c, d),
        INTERLEAVED_64,
        &kernels::rope_bf16_interleaved::SIZES,
        ROPE_DIMS,
    )
    .unwrap();
    check_rope::<f32, half::bf16, _>(
        |a, b, c, d| kernels::rope_f32_interleaved_partial(a, b, c, d),
        INTERLEAVED_80_PARTIAL,
        &kernels::rope_f32_interleaved_partial::SIZES,
        ROPE_DIMS,
    )
    .unwrap();
}

#[test]
fn rope_sizes_take_whole_heads() {
    // The contract's divisible_by reaches SIZES: the sweep tries whole heads only.
    let cases = Sweep::new(&kernels::rope_f32_interleaved_partial::SIZES).cases();
    assert!(cases.iter().all(|c| c.dim("HD") % 80 == 0));
    assert!(
        cases.iter().any(|c| c.dim("HD") == 80 * 33),
        "a tile of 25 heads and more"
    );
}

#[test]
fn rope_at_position_zero_is_the_identity_and_passes_specials_through() {
    // cos 0 = 1 and sin 0 = 0: every value comes back; past the rotary
    // dims -0, inf and NaN come back too. A rotated -0 follows the
    // arithmetic: -0·1 + x1·(−0) is +0 when its partner x1 is negative.
    let dev = Device::host();
    let (t, cols) = (3, 160);
    let mut x: Vec<f32> = values(t * cols, 40);
    x[0] = -0.0;
    x[1] = -1.5;
    x[40] = f32::INFINITY; // dim 40 of head 0: past the 34 rotary dims
    x[41] = f32::NAN;
    x[42] = -0.0;
    x[80 + 79] = f32::NEG_INFINITY;
    let table: Vec<half::bf16> = cos_sin_table(1, 34);
    let mut out = dev.zeros((t, cols)).unwrap();
    kernels::rope_f32_interleaved_partial(
        &dev.tensor_from(&x, (t, cols)).unwrap(),
        &dev.tensor_from(&[0, 0, 0], (t,)).unwrap(),
        &dev.tensor_from(&table, (1, Const::<34>)).unwrap(),
        &mut out,
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let want = rope_reference(&x, &[0, 0, 0], &table, cols, INTERLEAVED_80_PARTIAL);
    assert_eq!(bits(&got), bits(&want));
    assert_eq!(got[0].to_bits(), 0);
    assert_eq!(bits(&got[1..]), bits(&x[1..]));
}

#[test]
fn rope_gives_the_same_bits_at_every_block_count() {
    let (t, cols, max_pos) = (100, 256, 50);
    let pos = positions(t, max_pos, 41);
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("rope", || {
        let (got, w) = run_rope::<half::f16, half::f16, _>(
            |a, b, c, d| kernels::rope_f16_partial(a, b, c, d),
            NEOX_128_PARTIAL,
            t,
            cols,
            max_pos,
            &pos,
            42,
        )
        .unwrap();
        want = w;
        got
    });
    assert_eq!(got, want);
}

#[test]
fn a_decode_steps_query_heads_rotated_at_fixed_sizes() {
    let dev = Device::host();
    let t = 5;
    let q: Vec<half::f16> = values(t * 256, 43);
    let pos = [0, 1, 4095, 17, 300];
    let table: Vec<f32> = cos_sin_table(4096, 64);
    let mut out = dev.zeros((t, Const::<256>)).unwrap();
    kernels::rope_llama(
        &dev.tensor_from(&q, (t, Const::<256>)).unwrap(),
        &dev.tensor_from(&pos, (t,)).unwrap(),
        &dev.tensor_from(&table, (Const::<4096>, Const::<64>))
            .unwrap(),
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.to_vec().unwrap(),
        rope_reference(&q, &pos, &table, 256, NEOX_64)
    );
}

#[test]
fn a_position_outside_the_table_is_an_error_naming_the_token_and_position() {
    let f: Rope<f32, f32, _> = |a, b, c, d| kernels::rope_f32(a, b, c, d);
    for (bad, blocks) in [
        (10, None),
        (-1, Some(1)),
        (i32::MAX, Some(48)),
        (11, Some(3)),
    ] {
        let mut pos = positions(9, 10, 44);
        pos[7] = bad;
        let run = || run_rope(f, NEOX_64, 9, 128, 10, &pos, 45);
        let err = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap_err();
        let message = kernel_message(err);
        let want = format!(
            "rope_f32: token 7: positions[7] = {bad} is outside [0, 10), the rows of cos_sin"
        );
        assert!(message.contains(&want), "{message}");
    }
    // A table whose width, DYNAMIC in this spec, is not rotary_dim; the
    // right width works.
    let dev = Device::host();
    let x = dev
        .tensor_from(&values::<f32>(2 * 64, 46), (2, 64))
        .unwrap();
    let pos = dev.tensor_from(&[0, 1], (2,)).unwrap();
    let table = dev.zeros::<f32, _>((4, 32)).unwrap();
    let mut out = dev.zeros((2, 64)).unwrap();
    let message = kernel_message(kernels::rope_any_table(&x, &pos, &table, &mut out).unwrap_err());
    assert!(
        message.contains(
            "rope_any_table: cos_sin has 32 columns; with rotary_dim 64 it must have 64 (cos, then \
             sin, 32 each)"
        ),
        "{message}"
    );
    let table = cos_sin_table::<f32>(4, 64);
    kernels::rope_any_table(
        &x,
        &pos,
        &dev.tensor_from(&table, (4, 64)).unwrap(),
        &mut out,
    )
    .unwrap();
    let want = rope_reference(&x.to_vec().unwrap(), &[0, 1], &table, 64, NEOX_64);
    assert_eq!(out.to_vec().unwrap(), want);
    // Rows that are not whole heads are refused before the launch.
    let x = dev.zeros::<f32, _>((2, 96)).unwrap();
    let table = dev.zeros::<f32, _>((4, Const::<64>)).unwrap();
    let mut out = dev.zeros((2, 96)).unwrap();
    let err = kernels::rope_f32(&x, &pos, &table, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `rope_f32`: `x.1` is 96, not a multiple of 64 (head_dim = 64: the head size D; \
         x's last axis holds heads of D (an even number))"
    );
}

// ---- argmax ----------------------------------------------------------------------

type ArgMax<T> = fn(&Matrix<T>, &mut Index) -> Result<(), Error>;

/// The index of each row's largest value: ties to the lowest index, the
/// first NaN beating every number, -0 and +0 equal.
fn argmax_reference<T: Float>(x: &[T], cols: usize) -> Vec<i32> {
    x.chunks(cols)
        .map(|row| {
            let mut best = 0;
            for (j, v) in row.iter().enumerate() {
                let (v, b) = (v.to_f32(), row[best].to_f32());
                if !b.is_nan() && (v.is_nan() || v > b) {
                    best = j;
                }
            }
            best as i32
        })
        .collect()
}

/// Values in [-4, 4] in steps of 1/2, so that a row's maximum often
/// occurs more than once.
fn coarse<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed)
        .into_iter()
        .map(|v| T::from_f32((v * 2.0).round() / 2.0))
        .collect()
}

fn run_argmax<T: Float>(
    f: ArgMax<T>,
    x: &[T],
    rows: usize,
    cols: usize,
) -> Result<Vec<i32>, Error> {
    let dev = Device::host();
    let mut out = dev.tensor_from(&vec![-7; rows], (rows,))?;
    f(&dev.tensor_from(x, (rows, cols))?, &mut out)?;
    out.to_vec()
}

/// argmax over the sweep of its sizes (B and V each varied), with ties in
/// most rows, then rows past one block's 1024 indices.
fn check_argmax<T: Float>(
    f: ArgMax<T>,
    sizes: &pypto_rt::testing::KernelSizes,
) -> Result<usize, SweepFailure> {
    let as_f64 = |v: Vec<i32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    let cases = Sweep::new(sizes)
        .max_elements(1 << 20)
        .run(Tolerance::exact(), |case| {
            let (rows, cols) = (case.dim("B"), case.dim("V"));
            let x: Vec<T> = coarse(rows * cols, case.seed());
            let got = run_argmax(f, &x, rows, cols)?;
            Ok((as_f64(got), as_f64(argmax_reference(&x, cols))))
        })?;
    for rows in [1023, 1024, 1025, 2049] {
        let x: Vec<T> = coarse(rows * 5, rows as u64);
        let got = pypto_rt::with_host_blocks(1, || run_argmax(f, &x, rows, 5))
            .and_then(|r| r)
            .map_err(|e| SweepFailure {
                kernel: sizes.kernel,
                case: format!("B = {rows}, V = 5, 1 block"),
                problem: format!("the call failed: {e}"),
            })?;
        if got != argmax_reference(&x, 5) {
            return Err(SweepFailure {
                kernel: sizes.kernel,
                case: format!("B = {rows}, V = 5, 1 block"),
                problem: "the ids differ".into(),
            });
        }
    }
    Ok(cases)
}

#[test]
fn argmax_finds_each_rows_largest_value_in_every_dtype() {
    let cases = check_argmax::<f32>(
        |a, b| kernels::argmax_f32(a, b),
        &kernels::argmax_f32::SIZES,
    )
    .unwrap();
    assert!(cases > 40, "{cases} cases");
    check_argmax::<half::f16>(
        |a, b| kernels::argmax_f16(a, b),
        &kernels::argmax_f16::SIZES,
    )
    .unwrap();
    check_argmax::<half::bf16>(
        |a, b| kernels::argmax_bf16(a, b),
        &kernels::argmax_bf16::SIZES,
    )
    .unwrap();
}

#[test]
fn argmax_ties_go_to_the_lowest_index_and_nan_beats_every_number() {
    let cols = 9000; // three tiles of 4096
    let nan = f32::NAN;
    let mut rows: Vec<Vec<f32>> = Vec::new();
    let row = |cells: &[(usize, f32)]| {
        let mut r = vec![-1.0f32; cols];
        for &(j, v) in cells {
            r[j] = v;
        }
        r
    };
    let cases: [(&[(usize, f32)], i32); 10] = [
        (&[], 0),                                         // all equal
        (&[(5000, 3.0), (8999, 3.0), (4096, 3.0)], 4096), // a tie across tiles
        (&[(4095, 2.0), (4096, 2.0)], 4095),              // either side of a tile edge
        (&[(7, 2.0), (3, 2.0), (64, 2.0)], 3),            // a tie in one repeat and the next
        (&[(6000, nan), (8000, f32::INFINITY)], 6000),    // NaN beats inf
        (&[(100, f32::INFINITY), (6000, nan), (7000, nan)], 6000),
        (&[(8998, nan), (10, 5.0)], 8998),
        (&[(0, -0.0), (1, 0.0)], 0), // -1 everywhere else; -0 and +0 tie
        (&[(2, 0.0), (9, -0.0)], 2),
        (&[(8999, f32::MAX)], 8999),
    ];
    for (cells, _) in &cases {
        rows.push(row(cells));
    }
    rows.push(vec![f32::NEG_INFINITY; cols]);
    rows.push(vec![nan; cols]);
    let want: Vec<i32> = cases.iter().map(|&(_, w)| w).chain([0, 0]).collect();
    let x: Vec<f32> = rows.concat();
    assert_eq!(argmax_reference(&x, cols), want);
    for blocks in [None, Some(1), Some(5)] {
        let run = || run_argmax::<f32>(|a, b| kernels::argmax_f32(a, b), &x, want.len(), cols);
        let got = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap();
        assert_eq!(got, want, "{blocks:?} blocks");
        let h: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f32(v)).collect();
        let got = run_argmax::<half::f16>(|a, b| kernels::argmax_f16(a, b), &h, want.len(), cols)
            .unwrap();
        // f32::MAX is inf in fp16, -1 everywhere else: still the largest.
        assert_eq!(got, want, "f16, {blocks:?} blocks");
    }
}

#[test]
fn argmax_gives_the_same_ids_at_every_block_count() {
    let (rows, cols) = (60, 300);
    let x: Vec<half::bf16> = coarse(rows * cols, 50);
    let want = argmax_reference(&x, cols);
    let f: ArgMax<half::bf16> = |a, b| kernels::argmax_bf16(a, b);
    assert_eq!(run_argmax(f, &x, rows, cols).unwrap(), want);
    assert_eq!(pypto_rt::last_launch().unwrap().blocks, 48);
    for n in 1..=pypto_rt::MAX_BLOCKS {
        let got = pypto_rt::with_host_blocks(n, || run_argmax(f, &x, rows, cols))
            .unwrap()
            .unwrap();
        assert_eq!(pypto_rt::last_launch().unwrap().blocks, n);
        assert_eq!(got, want, "{n} blocks");
    }
}

#[test]
fn greedy_sampling_over_a_fixed_vocabulary() {
    let dev = Device::host();
    let b = 4;
    let logits: Vec<half::f16> = values(b * 4096, 51);
    let mut next = dev.zeros((b,)).unwrap();
    kernels::argmax_vocab(
        &dev.tensor_from(&logits, (b, Const::<4096>)).unwrap(),
        &mut next,
    )
    .unwrap();
    assert_eq!(next.to_vec().unwrap(), argmax_reference(&logits, 4096));
}

#[test]
fn an_empty_row_has_no_argmax() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((3, 0)).unwrap();
    let mut out = dev.zeros((3,)).unwrap();
    let err = kernels::argmax_f32(&x, &mut out).unwrap_err();
    assert!(matches!(err, Error::NoBlocks { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "kernel `argmax_f32`: its block rule (one block per row of `logits`) gives 0 blocks for \
         these sizes, but output `ids` has 3 elements, which no block would write"
    );
}

// ---- dynamic_quant -----------------------------------------------------------------

type Quant<T> = fn(
    &Matrix<T>,
    &mut Tensor<i8, (usize, usize)>,
    &mut Tensor<f32, (usize,)>,
) -> Result<(), Error>;

/// fp32 → fp16 rounded to odd (Cast's CAST_ODD): the value truncated toward
/// zero, with its last bit set when that dropped anything.
fn f16_round_odd(v: f32) -> half::f16 {
    let h = half::f16::from_f32(v);
    if v.is_nan() || v.is_infinite() || h.to_f32() == v {
        return h;
    }
    let sign = h.to_bits() & 0x8000;
    let mut magnitude = h.to_bits() & 0x7fff;
    if h.to_f32().abs() > v.abs() {
        magnitude -= 1; // round to nearest went away from zero
    }
    half::f16::from_bits(sign | magnitude | 1)
}

/// What dynamic_quant computes, by the casts it uses: m = max|x| (NaN
/// wins), factor = 127 / m (0 when m is 0, inf or NaN), each product
/// x · factor in fp32 cast to fp16 rounding to odd, then to int8 rounding
/// to nearest even, saturating (NaN to 0); scale = m / 127. Also checks
/// that the two casts round the fp32 product once, as the template says.
fn quant_reference<T: Float>(x: &[T], cols: usize) -> (Vec<i8>, Vec<f32>) {
    let (mut q, mut scales) = (Vec::new(), Vec::new());
    for row in x.chunks(cols) {
        let m = if row.iter().any(|v| v.to_f32().is_nan()) {
            f32::NAN
        } else {
            row.iter().fold(0f32, |m, v| m.max(v.to_f32().abs()))
        };
        let factor = if m > 0.0 && m.is_finite() {
            127.0 / m
        } else {
            0.0
        };
        for v in row {
            let p = v.to_f32() * factor;
            let by_casts = f16_round_odd(p).to_f32().round_ties_even() as i8;
            assert_eq!(
                by_casts,
                p.round_ties_even() as i8,
                "{p}: two casts, one rounding"
            );
            q.push(by_casts);
        }
        scales.push(m / 127.0);
    }
    (q, scales)
}

fn run_quant<T: Float>(
    f: Quant<T>,
    x: &[T],
    rows: usize,
    cols: usize,
) -> Result<(Vec<i8>, Vec<f32>), Error> {
    let dev = Device::host();
    let mut q = dev.tensor_from(&vec![-99i8; rows * cols], (rows, cols))?;
    let mut scale = dev.tensor_from(&vec![f32::NAN; rows], (rows,))?;
    f(&dev.tensor_from(x, (rows, cols))?, &mut q, &mut scale)?;
    Ok((q.to_vec()?, scale.to_vec()?))
}

/// Both outputs as one list of f64: q, then the scales.
fn quant_f64((q, scales): (Vec<i8>, Vec<f32>)) -> Vec<f64> {
    q.into_iter()
        .map(f64::from)
        .chain(scales.into_iter().map(f64::from))
        .collect()
}

/// dynamic_quant over the sweep of its sizes (T and H each varied), exact,
/// then more rows than one block writes scales for at once.
fn check_quant<T: Float>(
    f: Quant<T>,
    sizes: &pypto_rt::testing::KernelSizes,
) -> Result<usize, SweepFailure> {
    let cases = Sweep::new(sizes)
        .max_elements(1 << 20)
        .run(Tolerance::exact(), |case| {
            let (rows, cols) = (case.dim("T"), case.dim("H"));
            let x: Vec<T> = values(rows * cols, case.seed());
            let got = run_quant(f, &x, rows, cols)?;
            Ok((quant_f64(got), quant_f64(quant_reference(&x, cols))))
        })?;
    for rows in [1023, 1024, 1025, 2049] {
        let x: Vec<T> = values(rows * 3, rows as u64);
        let got = pypto_rt::with_host_blocks(1, || run_quant(f, &x, rows, 3))
            .and_then(|r| r)
            .map_err(|e| SweepFailure {
                kernel: sizes.kernel,
                case: format!("T = {rows}, H = 3, 1 block"),
                problem: format!("the call failed: {e}"),
            })?;
        if quant_f64(got) != quant_f64(quant_reference(&x, 3)) {
            return Err(SweepFailure {
                kernel: sizes.kernel,
                case: format!("T = {rows}, H = 3, 1 block"),
                problem: "q or the scales differ".into(),
            });
        }
    }
    Ok(cases)
}

#[test]
fn dynamic_quant_rounds_each_token_to_int8_in_every_dtype() {
    let cases = check_quant::<f32>(
        |a, b, c| kernels::quant_f32(a, b, c),
        &kernels::quant_f32::SIZES,
    )
    .unwrap();
    assert!(cases > 40, "{cases} cases");
    check_quant::<half::f16>(
        |a, b, c| kernels::quant_f16(a, b, c),
        &kernels::quant_f16::SIZES,
    )
    .unwrap();
    check_quant::<half::bf16>(
        |a, b, c| kernels::quant_bf16(a, b, c),
        &kernels::quant_bf16::SIZES,
    )
    .unwrap();
}

#[test]
fn dynamic_quant_rounds_ties_to_even_once_and_handles_special_rows() {
    let cols = 8;
    // max 127: the factor is 1, so q is x rounded. 3.4999998 is 3.5 in
    // fp16: rounding to nearest twice would give 4.
    let below = f32::from_bits(3.5f32.to_bits() - 1);
    let rows: [[f32; 8]; 6] = [
        [127.0, 0.5, 1.5, 2.5, -2.5, below, -below, -0.0],
        [0.0; 8],
        [-0.0, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, f32::INFINITY, -3.0, 0.0, 2.0, 1.0, 1.0, 1.0],
        [1.0, 2.0, f32::NAN, 4.0, 5.0, 6.0, 7.0, -100.0],
        [-2.0, 1.0, 0.5, 0.25, 1e-30, -1e-30, 2.0, -2.0],
    ];
    let x: Vec<f32> = rows.concat();
    let (q, scales) = quant_reference(&x, cols);
    assert_eq!(&q[..8], [127, 0, 2, 2, -2, 3, -3, 0]);
    assert_eq!(&q[8..40], [0; 32]);
    assert_eq!(&q[40..], [-127, 64, 32, 16, 0, 0, 127, -127]);
    assert_eq!(scales[..3], [1.0, 0.0, 0.0]);
    assert!(scales[3].is_infinite() && scales[4].is_nan());
    for blocks in [None, Some(1), Some(4)] {
        let run = || run_quant::<f32>(|a, b, c| kernels::quant_f32(a, b, c), &x, 6, cols);
        let got = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap();
        assert_eq!(got.0, q, "{blocks:?} blocks");
        let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got.1), bits(&scales), "{blocks:?} blocks");
    }
}

#[test]
fn dynamic_quant_gives_the_same_numbers_at_every_block_count() {
    let (rows, cols) = (60, 300);
    let x: Vec<half::f16> = values(rows * cols, 60);
    let f: Quant<half::f16> = |a, b, c| kernels::quant_f16(a, b, c);
    let want = quant_reference(&x, cols);
    assert_eq!(run_quant(f, &x, rows, cols).unwrap(), want);
    assert_eq!(pypto_rt::last_launch().unwrap().blocks, 48);
    for n in 1..=pypto_rt::MAX_BLOCKS {
        let got = pypto_rt::with_host_blocks(n, || run_quant(f, &x, rows, cols))
            .unwrap()
            .unwrap();
        assert_eq!(got, want, "{n} blocks");
    }
}

#[test]
fn dynamic_quant_of_empty_rows_is_refused() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((3, 0)).unwrap();
    let mut q = dev.zeros((3, 0)).unwrap();
    let mut scale = dev.zeros((3,)).unwrap();
    let err = kernels::quant_f32(&x, &mut q, &mut scale).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `quant_f32`: its block rule (one block per row of `x`) gives 0 blocks for these \
         sizes, but output `scale` has 3 elements, which no block would write"
    );
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
    let backwards = RopeShape {
        head_dim: 128,
        rotary_dim: 128,
        interleaved: false,
    };
    let failure = check_rope::<f32, f32, _>(
        |a, b, c, d| kernels::broken_rope_backwards_f32(a, b, c, d),
        backwards,
        &kernels::broken_rope_backwards_f32::SIZES,
        ["R", "C", "N"],
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let failure = check_argmax::<f32>(
        |a, b| kernels::broken_argmax_last_tie_f32(a, b),
        &kernels::argmax_f32::SIZES,
    )
    .unwrap_err();
    // Caught where a row has two tiles whose maxima tie.
    assert!(failure.case.starts_with("B = 3, V = 8191"), "{failure}");
    let failure = check_quant::<f32>(
        |a, b, c| kernels::broken_dynamic_quant_double_rounding_f32(a, b, c),
        &kernels::quant_f32::SIZES,
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let mut serving: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| ["reshape_and_cache", "rope", "argmax", "dynamic_quant"].contains(&m.builtin))
        .map(|m| m.name)
        .collect();
    serving.sort_unstable();
    assert_eq!(
        serving,
        [
            "broken_argmax_last_tie_f32",
            "broken_dynamic_quant_double_rounding_f32",
            "broken_reshape_and_cache_share_end_f32",
            "broken_rope_backwards_f32"
        ],
        "every serving mutant is checked here"
    );
}

// ---- quant_matmul ------------------------------------------------------------------

type QmmA = Tensor<i8, (usize, Const<100>)>;
type QmmB = Tensor<i8, (Const<272>, Const<100>)>;
type QmmCols = Tensor<f32, (Const<272>,)>;
type Qmm<T> = fn(
    &QmmA,
    &QmmB,
    &Tensor<f32, (usize,)>,
    &QmmCols,
    Option<&QmmCols>,
    &mut Tensor<T, (usize, Const<272>)>,
) -> Result<(), Error>;

const QMM_K: usize = 100;
const QMM_N: usize = 272;

/// Int8 values over the whole range, -128 and 127 included, from a seed.
fn int8s(n: usize, seed: u64) -> Vec<i8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match i % 37 {
                0 => -128,
                1 => 127,
                _ => (s >> 56) as u8 as i8,
            }
        })
        .collect()
}

/// Positive scales of the size dynamic_quant gives (max|x| / 127), from a seed.
fn scales(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed)
        .into_iter()
        .map(|v| (v.abs() + 0.01) / 127.0)
        .collect()
}

/// What quant_matmul computes: the int32 sum of the int8 products (exact),
/// converted to fp32, times the row's scale, times the column's scale, plus
/// the bias, each an fp32 operation in that order, rounded once to T
/// (to nearest, ties to even).
fn qmm_reference<T: Float>(
    a: &[i8],
    b: &[i8],
    a_scale: &[f32],
    b_scale: &[f32],
    bias: Option<&[f32]>,
) -> Vec<T> {
    let m = a_scale.len();
    let mut out = Vec::with_capacity(m * QMM_N);
    for (r, row) in a.chunks(QMM_K).enumerate() {
        for n in 0..QMM_N {
            let acc: i32 = row
                .iter()
                .zip(&b[n * QMM_K..(n + 1) * QMM_K])
                .map(|(&x, &w)| i32::from(x) * i32::from(w))
                .sum();
            let mut v = acc as f32 * a_scale[r] * b_scale[n];
            if let Some(bias) = bias {
                v += bias[n];
            }
            out.push(T::from_f32(v));
        }
    }
    out
}

/// Runs `f` on M rows from `seed`; returns the output and the reference's.
fn run_qmm<T: Float>(
    f: Qmm<T>,
    with_bias: bool,
    m: usize,
    seed: u64,
) -> Result<(Vec<T>, Vec<T>), Error> {
    let dev = Device::host();
    let a = int8s(m * QMM_K, seed);
    let b = int8s(QMM_N * QMM_K, seed + 1);
    let a_scale = scales(m, seed + 2);
    let b_scale = scales(QMM_N, seed + 3);
    let bias = data(QMM_N, seed + 4);
    let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); m * QMM_N], (m, Const::<272>))?;
    let bias_t = dev.tensor_from(&bias, (Const::<272>,))?;
    f(
        &dev.tensor_from(&a, (m, Const::<100>))?,
        &dev.tensor_from(&b, (Const::<272>, Const::<100>))?,
        &dev.tensor_from(&a_scale, (m,))?,
        &dev.tensor_from(&b_scale, (Const::<272>,))?,
        with_bias.then_some(&bias_t),
        &mut out,
    )?;
    let want = qmm_reference(&a, &b, &a_scale, &b_scale, with_bias.then_some(&bias[..]));
    Ok((out.to_vec()?, want))
}

/// quant_matmul over the sweep of its token count, bit for bit.
fn check_qmm<T: Float>(
    f: Qmm<T>,
    with_bias: bool,
    sizes: &pypto_rt::testing::KernelSizes,
) -> Result<usize, SweepFailure> {
    Sweep::new(sizes).run(Tolerance::exact(), |case| {
        let (got, want) = run_qmm(f, with_bias, case.dim("T"), case.seed())?;
        Ok((bits_as_f64(&got), bits_as_f64(&want)))
    })
}

#[test]
fn quant_matmul_dequantises_exactly_with_and_without_bias_in_fp16_and_bf16() {
    let cases = check_qmm::<half::f16>(
        |a, b, s, t, _, o| kernels::qmm_f16(a, b, s, t, o),
        false,
        &kernels::qmm_f16::SIZES,
    )
    .unwrap();
    assert!(cases > 5, "{cases} cases");
    check_qmm::<half::bf16>(
        |a, b, s, t, _, o| kernels::qmm_bf16(a, b, s, t, o),
        false,
        &kernels::qmm_bf16::SIZES,
    )
    .unwrap();
    check_qmm::<half::f16>(
        |a, b, s, t, c, o| kernels::qmm_f16_bias(a, b, s, t, c.unwrap(), o),
        true,
        &kernels::qmm_f16_bias::SIZES,
    )
    .unwrap();
    check_qmm::<half::bf16>(
        |a, b, s, t, c, o| kernels::qmm_bf16_bias(a, b, s, t, c.unwrap(), o),
        true,
        &kernels::qmm_bf16_bias::SIZES,
    )
    .unwrap();
}

#[test]
fn quant_matmul_gives_the_same_bits_at_every_block_count() {
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("quant_matmul", || {
        let (got, w) = run_qmm::<half::bf16>(
            |a, b, s, t, c, o| kernels::qmm_bf16_bias(a, b, s, t, c.unwrap(), o),
            true,
            300,
            5,
        )
        .unwrap();
        want = w;
        got
    });
    assert_eq!(bits_as_f64(&got), bits_as_f64(&want));
}

/// More rows than the workspace that hands the int32 tiles over could hold
/// whole (24 blocks × two slots of 128 × 256 values: 6000 × 272 values is
/// more): the cube writes only its slots, never the product's M × N.
#[test]
fn quant_matmul_takes_more_rows_than_its_workspace_holds() {
    let m = 6000;
    assert!(m * QMM_N > 24 * 2 * 128 * 256);
    let (got, want) = run_qmm::<half::f16>(
        |a, b, s, t, _, o| kernels::qmm_f16(a, b, s, t, o),
        false,
        m,
        11,
    )
    .unwrap();
    assert_eq!(bits_as_f64(&got), bits_as_f64(&want));
}
