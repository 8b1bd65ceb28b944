//! Graph message passing over DYNAMIC node and edge counts (issue 27):
//! builtin/gather_rows, builtin/scatter_add, builtin/segment_sum and
//! builtin/segment_mean (kernels in tests/kernels/graph.yaml) against plain
//! Rust, in fp32, fp16 and bf16 (gather also int32), at node, edge and
//! feature counts of 1, around each template's tiles (one either side),
//! E = 0, and nodes that receive many edges; every block count; and the
//! errors an index or offset outside its range gives, word for word.
//!
//! The kernels sum in fp32 in edge (row) order and round once, so the
//! references do the same and the checks are exact, bit for bit; the
//! result is the same at every block count. The broken copies of
//! tests/support/mutants.rs (a dropped last edge, a dropped chunk tail, an
//! empty segment's mean as NaN) must fail the same checks.

use pypto_rt::{Device, Error, Tensor};
use pypto_tests::{Float, data, kernel_message, kernels, same_bits_at_every_block_count};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Index = Tensor<i32, (usize,)>;
/// gather_rows, scatter_add, segment_sum and segment_mean all take
/// (rows, int32 index or offsets, out).
type Graph<T> = fn(&Matrix<T>, &Index, &mut Matrix<T>) -> Result<(), Error>;

/// Columns of graph_rows' column tiles (`kColTile` in
/// builtin/partials/graph_rows.hbs).
const COL_TILE: usize = 4096;
/// fp32 sums one row tile of graph_rows holds (`kAccFloats`).
const ACC_FLOATS: usize = 12288;
/// Bytes of one input buffer of graph_rows (`kInBytes`) and of one chunk
/// of gather_rows (`kChunkBytes`).
const IN_BYTES: usize = 16384;
const CHUNK_BYTES: usize = 32768;

fn aligned(n: usize, size: usize) -> usize {
    (n * size).div_ceil(32) * 32 / size
}

/// `n` values in [-4, 4) rounded to `T`.
fn values<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed).into_iter().map(T::from_f32).collect()
}

/// `e` indices in [0, n), from a seed.
fn indices(e: usize, n: usize, seed: u64) -> Vec<i32> {
    data(e, seed)
        .into_iter()
        .map(|v| (((v + 4.0) / 8.0 * n as f32) as usize).min(n - 1) as i32)
        .collect()
}

/// Runs `f` on `rows` (`[r, cols]`) and `index`, into an output of
/// `out_rows` rows filled with NaN first (so that unwritten elements show).
fn call<T: Float>(
    f: Graph<T>,
    rows: &[T],
    r: usize,
    cols: usize,
    index: &[i32],
    out_rows: usize,
) -> Result<Vec<T>, Error> {
    let dev = Device::host();
    let x = dev.tensor_from(rows, (r, cols))?;
    let i = dev.tensor_from(index, (index.len(),))?;
    let nan = T::from_f32(f32::NAN);
    let mut out = dev.tensor_from(&vec![nan; out_rows * cols], (out_rows, cols))?;
    f(&x, &i, &mut out)?;
    out.to_vec()
}

fn gather_reference<T: Float>(x: &[T], cols: usize, index: &[i32]) -> Vec<T> {
    index
        .iter()
        .flat_map(|&i| {
            x[i as usize * cols..(i as usize + 1) * cols]
                .iter()
                .copied()
        })
        .collect()
}

/// fp32 sums in edge order, then `scale(count)`, rounded to `T` once: what
/// the kernels compute.
fn sums<T: Float>(
    src: &[T],
    cols: usize,
    nodes: usize,
    target: impl Fn(usize) -> Option<usize>,
    edges: usize,
    mean: bool,
) -> Vec<T> {
    let mut acc = vec![0f32; nodes * cols];
    let mut count = vec![0usize; nodes];
    for e in 0..edges {
        if let Some(n) = target(e) {
            count[n] += 1;
            for c in 0..cols {
                acc[n * cols + c] += src[e * cols + c].to_f32();
            }
        }
    }
    (0..nodes * cols)
        .map(|i| {
            let n = count[i / cols];
            let factor = if !mean {
                1.0
            } else if n > 0 {
                1.0 / n as f32
            } else {
                0.0
            };
            T::from_f32(if mean { acc[i] * factor } else { acc[i] })
        })
        .collect()
}

fn scatter_reference<T: Float>(src: &[T], cols: usize, index: &[i32], nodes: usize) -> Vec<T> {
    sums(
        src,
        cols,
        nodes,
        |e| Some(index[e] as usize),
        index.len(),
        false,
    )
}

fn segment_reference<T: Float>(x: &[T], cols: usize, offsets: &[i32], mean: bool) -> Vec<T> {
    let nodes = offsets.len() - 1;
    let rows = x.len() / cols.max(1);
    let target =
        |e: usize| (0..nodes).find(|&n| offsets[n] as usize <= e && e < offsets[n + 1] as usize);
    sums(x, cols, nodes, target, rows, mean)
}

/// The first element where `got` and `want` differ in bits, as an error.
fn exact<T: Float>(what: &str, got: Result<Vec<T>, Error>, want: &[T]) -> Result<(), String> {
    let got = got.map_err(|e| format!("{what}: {e}"))?;
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, want {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| got[i].bits() != want[i].bits()) {
        Some(i) => Err(format!(
            "{what}: element {i} is {} ({:#x}), want {} ({:#x})",
            got[i].to_f32(),
            got[i].bits(),
            want[i].to_f32(),
            want[i].bits()
        )),
        None => Ok(()),
    }
}

/// CSR offsets of `nodes` segments: sizes from a seed in 0..=max (so some
/// are empty), the node `heavy` (if any) `heavy_rows` long.
fn offsets(nodes: usize, max: usize, heavy: Option<(usize, usize)>, seed: u64) -> Vec<i32> {
    let sizes = data(nodes, seed);
    let mut out = vec![0i32];
    for (n, s) in sizes.iter().enumerate() {
        let len = match heavy {
            Some((h, rows)) if h == n => rows,
            _ => (((s + 4.0) / 8.0 * (max + 1) as f32) as usize).min(max),
        };
        out.push(out[n] + len as i32);
    }
    out
}

/// Runs `f` at each block count `blocks` (None: the natural count).
fn at_blocks<R>(blocks: Option<u32>, f: impl FnOnce() -> R) -> R {
    match blocks {
        Some(n) => pypto_rt::with_host_blocks(n, f).unwrap(),
        None => f(),
    }
}

// ---- checks, shared with the broken builtins ----------------------------------

/// gather_rows at (N, E, F) sizes around 1, its chunk of rows and its
/// column tile; on one block too, so that one block's edges cross chunks.
fn check_gather<T: Float>(f: Graph<T>) -> Result<(), String> {
    let tile = CHUNK_BYTES / size_of::<T>();
    let row16 = CHUNK_BYTES / (aligned(16, size_of::<T>()) * size_of::<T>());
    let mut cases = vec![(1, 1, 1), (5, 1, 7), (1, 9, 16), (7, 0, 16), (300, 97, 33)];
    for e in [row16 - 1, row16, row16 + 1, 3 * row16 + 5] {
        cases.push((64, e, 16));
    }
    for cols in [tile - 1, tile, tile + 1] {
        cases.push((4, 3, cols));
    }
    for (seed, &(n, e, cols)) in cases.iter().enumerate() {
        let seed = seed as u64;
        let x: Vec<T> = values(n * cols, 10 + seed);
        let index = indices(e, n, 20 + seed);
        let want = gather_reference(&x, cols, &index);
        for blocks in [None, Some(1)] {
            let what = format!("gather {} N={n} E={e} F={cols} blocks {blocks:?}", T::NAME);
            exact(
                &what,
                at_blocks(blocks, || call(f, &x, n, cols, &index, e)),
                &want,
            )?;
        }
    }
    Ok(())
}

/// scatter_add at sizes around 1 and graph_rows' tiles (rows of the sums,
/// input rows per load, column tiles), E = 0, unsorted edges, and one node
/// that takes most edges.
fn check_scatter<T: Float>(f: Graph<T>) -> Result<(), String> {
    let tile_rows = ACC_FLOATS / 16;
    let mut cases = vec![
        (1, 1, 1),
        (1, 50, 3),
        (6, 0, 16),
        (9, 40, 7),
        (200, 1000, 16),
    ];
    for n in [tile_rows - 1, tile_rows, tile_rows + 1] {
        cases.push((n, 2 * n, 16));
    }
    for cols in [COL_TILE - 1, COL_TILE, COL_TILE + 1] {
        cases.push((3, 7, cols));
    }
    for (seed, &(n, e, cols)) in cases.iter().enumerate() {
        let seed = seed as u64;
        let src: Vec<T> = values(e * cols, 30 + seed);
        let mut index = indices(e, n, 40 + seed);
        // Most edges of the last case to one node, the rest anywhere.
        if e >= 1000 {
            for (k, i) in index.iter_mut().enumerate() {
                if k % 5 != 0 {
                    *i = (n / 2) as i32;
                }
            }
        }
        let want = scatter_reference(&src, cols, &index, n);
        for blocks in [None, Some(1)] {
            let what = format!(
                "scatter_add {} N={n} E={e} F={cols} blocks {blocks:?}",
                T::NAME
            );
            exact(
                &what,
                at_blocks(blocks, || call(f, &src, e, cols, &index, n)),
                &want,
            )?;
        }
    }
    Ok(())
}

/// segment_sum or segment_mean at sizes around 1 and graph_rows' tiles,
/// empty segments, a segment of many rows (several loads), and offsets
/// that start past 0 and end before E.
fn check_segment<T: Float>(f: Graph<T>, mean: bool) -> Result<(), String> {
    let tile_rows = ACC_FLOATS / 16;
    let load16 = IN_BYTES / (aligned(16, size_of::<T>()) * size_of::<T>());
    let mut cases: Vec<(Vec<i32>, usize, usize)> = vec![
        (vec![0, 1], 1, 1),
        (vec![0, 0], 0, 5),
        (vec![0, 0, 0, 0], 3, 16),
        (vec![2, 2, 5, 6], 9, 7),
        (offsets(40, 6, None, 1), 0, 16),
    ];
    for rows in [load16 - 1, load16, load16 + 1, 5 * load16 + 3] {
        cases.push((offsets(5, 4, Some((2, rows)), 2), 0, 16));
    }
    for n in [tile_rows - 1, tile_rows, tile_rows + 1] {
        cases.push((offsets(n, 3, None, 3), 0, 16));
    }
    for cols in [COL_TILE - 1, COL_TILE, COL_TILE + 1] {
        cases.push((offsets(3, 3, Some((1, 0)), 4), 0, cols));
    }
    let name = if mean { "segment_mean" } else { "segment_sum" };
    for (seed, (offsets, extra, cols)) in cases.into_iter().enumerate() {
        let n = offsets.len() - 1;
        let rows = *offsets.last().unwrap() as usize + extra;
        let x: Vec<T> = values(rows * cols, 50 + seed as u64);
        let want = segment_reference(&x, cols, &offsets, mean);
        for blocks in [None, Some(1)] {
            let what = format!(
                "{name} {} N={n} E={rows} F={cols} blocks {blocks:?}",
                T::NAME
            );
            exact(
                &what,
                at_blocks(blocks, || call(f, &x, rows, cols, &offsets, n)),
                &want,
            )?;
        }
    }
    Ok(())
}

// ---- numbers -------------------------------------------------------------------

#[test]
fn gather_rows_picks_rows_in_every_dtype() {
    check_gather::<f32>(|x, i, o| kernels::gather_f32(x, i, o)).unwrap();
    check_gather::<half::f16>(|x, i, o| kernels::gather_f16(x, i, o)).unwrap();
    check_gather::<half::bf16>(|x, i, o| kernels::gather_bf16(x, i, o)).unwrap();
}

#[test]
fn gather_rows_moves_int32_bit_for_bit() {
    let dev = Device::host();
    let (n, e, cols) = (11, 70, 5);
    let x: Vec<i32> = (0..n * cols as i32).map(|v| v * 7919 - 40_000).collect();
    let index = indices(e, n as usize, 7);
    let want: Vec<i32> = index
        .iter()
        .flat_map(|&i| {
            x[i as usize * cols..(i as usize + 1) * cols]
                .iter()
                .copied()
        })
        .collect();
    let xt = dev.tensor_from(&x, (n as usize, cols)).unwrap();
    let it = dev.tensor_from(&index, (e,)).unwrap();
    let mut out = dev.tensor_from(&vec![-1i32; e * cols], (e, cols)).unwrap();
    kernels::gather_i32(&xt, &it, &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn scatter_add_sums_edges_into_nodes_in_every_dtype() {
    check_scatter::<f32>(|x, i, o| kernels::scatter_f32(x, i, o)).unwrap();
    check_scatter::<half::f16>(|x, i, o| kernels::scatter_f16(x, i, o)).unwrap();
    check_scatter::<half::bf16>(|x, i, o| kernels::scatter_bf16(x, i, o)).unwrap();
}

#[test]
fn segment_sum_and_mean_reduce_csr_segments_in_every_dtype() {
    check_segment::<f32>(|x, i, o| kernels::segsum_f32(x, i, o), false).unwrap();
    check_segment::<half::f16>(|x, i, o| kernels::segsum_f16(x, i, o), false).unwrap();
    check_segment::<half::bf16>(|x, i, o| kernels::segsum_bf16(x, i, o), false).unwrap();
    check_segment::<f32>(|x, i, o| kernels::segmean_f32(x, i, o), true).unwrap();
    check_segment::<half::f16>(|x, i, o| kernels::segmean_f16(x, i, o), true).unwrap();
    check_segment::<half::bf16>(|x, i, o| kernels::segmean_bf16(x, i, o), true).unwrap();
}

#[test]
fn an_empty_segments_mean_is_zero_not_nan() {
    let dev = Device::host();
    let x = dev.tensor_from(&[1.0f32, 2.0, 3.0, 4.0], (2, 2)).unwrap();
    let offsets = dev.tensor_from(&[0, 0, 2, 2], (4,)).unwrap();
    let mut out = dev.tensor_from(&[f32::NAN; 6], (3, 2)).unwrap();
    kernels::segmean_f32(&x, &offsets, &mut out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0.0, 0.0, 2.0, 3.0, 0.0, 0.0]);
}

#[test]
fn fixed_feature_counts_work_as_dynamic_ones() {
    use pypto_rt::Const;
    let dev = Device::host();
    let (n, e) = (13, 60);
    let x: Vec<f32> = values(n * 48, 61);
    let index = indices(e, n, 62);
    let xt = dev.tensor_from(&x, (n, Const::<48>)).unwrap();
    let it = dev.tensor_from(&index, (e,)).unwrap();
    let mut msgs = dev.zeros((e, Const::<48>)).unwrap();
    kernels::gather_f32_fixed(&xt, &it, &mut msgs).unwrap();
    assert_eq!(msgs.to_vec().unwrap(), gather_reference(&x, 48, &index));
    let mut agg = dev.zeros((n, Const::<48>)).unwrap();
    kernels::scatter_f32_fixed(&msgs, &it, &mut agg).unwrap();
    let m = msgs.to_vec().unwrap();
    assert_eq!(agg.to_vec().unwrap(), scatter_reference(&m, 48, &index, n));
    let ptr = offsets(n, 8, None, 63);
    let rows = *ptr.last().unwrap() as usize;
    let r: Vec<f32> = values(rows * 48, 64);
    let rt = dev.tensor_from(&r, (rows, Const::<48>)).unwrap();
    let pt = dev.tensor_from(&ptr, (n + 1,)).unwrap();
    let mut means = dev.zeros((n, Const::<48>)).unwrap();
    kernels::segmean_f32_fixed(&rt, &pt, &mut means).unwrap();
    assert_eq!(
        means.to_vec().unwrap(),
        segment_reference(&r, 48, &ptr, true)
    );
}

#[test]
fn every_block_count_gives_the_same_bits() {
    let (n, e, cols) = (100, 700, 24);
    let x: Vec<f32> = values(n * cols, 70);
    let src: Vec<f32> = values(e * cols, 71);
    let mut index = indices(e, n, 72);
    index[..300].fill(17); // one node with 300 edges and more
    let ptr = offsets(n, 12, Some((40, 300)), 73);
    let rows = *ptr.last().unwrap() as usize;
    let xr: Vec<f32> = values(rows * cols, 74);
    let got = same_bits_at_every_block_count("gather_rows", || {
        call(
            |a, b, c| kernels::gather_f32(a, b, c),
            &x,
            n,
            cols,
            &index,
            e,
        )
        .unwrap()
    });
    assert_eq!(got, gather_reference(&x, cols, &index));
    let got = same_bits_at_every_block_count("scatter_add", || {
        call(
            |a, b, c| kernels::scatter_f32(a, b, c),
            &src,
            e,
            cols,
            &index,
            n,
        )
        .unwrap()
    });
    assert_eq!(got, scatter_reference(&src, cols, &index, n));
    let h: Vec<half::f16> = values(e * cols, 75);
    let got = same_bits_at_every_block_count("scatter_add f16", || {
        call(
            |a, b, c| kernels::scatter_f16(a, b, c),
            &h,
            e,
            cols,
            &index,
            n,
        )
        .unwrap()
    });
    assert_eq!(got, scatter_reference(&h, cols, &index, n));
    let got = same_bits_at_every_block_count("segment_sum", || {
        call(
            |a, b, c| kernels::segsum_f32(a, b, c),
            &xr,
            rows,
            cols,
            &ptr,
            n,
        )
        .unwrap()
    });
    assert_eq!(got, segment_reference(&xr, cols, &ptr, false));
    let got = same_bits_at_every_block_count("segment_mean", || {
        call(
            |a, b, c| kernels::segmean_f32(a, b, c),
            &xr,
            rows,
            cols,
            &ptr,
            n,
        )
        .unwrap()
    });
    assert_eq!(got, segment_reference(&xr, cols, &ptr, true));
}

// ---- errors --------------------------------------------------------------------

/// The kernel error of a call, with the kernel it names.
fn error_of<T: Float>(
    f: Graph<T>,
    rows: &[T],
    r: usize,
    cols: usize,
    index: &[i32],
    out_rows: usize,
) -> (&'static str, String) {
    match call(f, rows, r, cols, index, out_rows).unwrap_err() {
        Error::Kernel {
            kernel, message, ..
        } => (kernel, message),
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

#[test]
fn an_index_outside_the_nodes_is_an_error_naming_param_position_and_value() {
    let x: Vec<f32> = values(5 * 3, 80);
    for (bad, blocks) in [
        (5, None),
        (-1, Some(1)),
        (i32::MAX, Some(48)),
        (i32::MIN, None),
    ] {
        let mut index = indices(40, 5, 81);
        index[23] = bad;
        let (kernel, message) = at_blocks(blocks, || {
            error_of(|a, b, c| kernels::gather_f32(a, b, c), &x, 5, 3, &index, 40)
        });
        assert_eq!(kernel, "gather_f32");
        let want = format!("gather_f32: index[23] = {bad} is outside [0, 5), the rows of x");
        assert!(message.contains(&want), "{message}");
        let src: Vec<f32> = values(40 * 3, 82);
        let (kernel, message) = at_blocks(blocks, || {
            error_of(
                |a, b, c| kernels::scatter_f32(a, b, c),
                &src,
                40,
                3,
                &index,
                5,
            )
        });
        assert_eq!(kernel, "scatter_f32");
        let want = format!("scatter_f32: index[23] = {bad} is outside [0, 5), the rows of out");
        assert!(message.contains(&want), "{message}");
    }
    // The spec's own param names.
    let dev = Device::host();
    let x = dev
        .tensor_from(&vec![0f32; 2 * 48], (2, pypto_rt::Const::<48>))
        .unwrap();
    let i = dev.tensor_from(&[1, 2], (2,)).unwrap();
    let mut out = dev.zeros((2, pypto_rt::Const::<48>)).unwrap();
    let message = kernel_message(kernels::gather_f32_fixed(&x, &i, &mut out).unwrap_err());
    assert!(
        message.contains("gather_f32_fixed: src[1] = 2 is outside [0, 2), the rows of feats"),
        "{message}"
    );
    let mut agg = dev.zeros((2, pypto_rt::Const::<48>)).unwrap();
    let message = kernel_message(kernels::scatter_f32_fixed(&x, &i, &mut agg).unwrap_err());
    assert!(
        message.contains("scatter_f32_fixed: dst[1] = 2 is outside [0, 2), the rows of agg"),
        "{message}"
    );
}

#[test]
fn bad_csr_offsets_are_errors_naming_param_position_and_value() {
    let x: Vec<f32> = values(10 * 4, 90);
    let cases: [(&[i32], usize, String); 5] = [
        (&[0, 3, 11, 12], 3, "offsets[2] = 11 is outside [0, 10], the rows of x".into()),
        (&[-1, 3, 4, 5], 3, "offsets[0] = -1 is outside [0, 10], the rows of x".into()),
        (&[0, 6, 4, 9], 3, "offsets[2] = 4 is less than offsets[1] = 6; CSR offsets must not decrease".into()),
        (
            &[0, 3, 4, 5],
            4,
            "offsets has 4 entries, but out has 4 rows; CSR offsets hold one entry more than there are segments (5)"
                .into(),
        ),
        (
            &[0, 3, 4, 5],
            2,
            "offsets has 4 entries, but out has 2 rows; CSR offsets hold one entry more than there are segments (3)"
                .into(),
        ),
    ];
    for (offsets, nodes, want) in &cases {
        for blocks in [None, Some(1)] {
            for (name, f) in [
                (
                    "segsum_f32",
                    (|a, b, c| kernels::segsum_f32(a, b, c)) as Graph<f32>,
                ),
                ("segmean_f32", |a, b, c| kernels::segmean_f32(a, b, c)),
            ] {
                let (kernel, message) =
                    at_blocks(blocks, || error_of(f, &x, 10, 4, offsets, *nodes));
                assert_eq!(kernel, name);
                assert!(message.contains(&format!("{name}: {want}")), "{message}");
            }
        }
    }
}

// ---- broken builtins -----------------------------------------------------------

#[test]
fn broken_builtins_fail_the_checks() {
    let gather = check_gather::<f32>(|x, i, o| kernels::broken_gather_rows_chunk_tail_f32(x, i, o));
    assert!(gather.is_err(), "the dropped chunk tail passed");
    let scatter =
        check_scatter::<f32>(|x, i, o| kernels::broken_scatter_add_last_edge_f32(x, i, o));
    assert!(scatter.is_err(), "the dropped last edge passed");
    let mean = check_segment::<f32>(
        |x, i, o| kernels::broken_segment_mean_empty_nan_f32(x, i, o),
        true,
    );
    let message = mean.expect_err("the NaN mean of an empty segment passed");
    assert!(message.contains("NaN"), "{message}");
    let mut graph: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| ["gather_rows", "scatter_add", "segment_mean"].contains(&m.builtin))
        .map(|m| m.name)
        .collect();
    graph.sort_unstable();
    assert_eq!(
        graph,
        [
            "broken_gather_rows_chunk_tail_f32",
            "broken_scatter_add_last_edge_f32",
            "broken_segment_mean_empty_nan_f32"
        ],
        "every graph mutant is checked here"
    );
}

// ---- the example's kernels -----------------------------------------------------

/// examples/kernels/graph.yaml's kernels (built here too), one GCN round as
/// examples/graph.rs runs it: scatter_add + normalise and segment_mean over
/// the edges sorted by destination agree bit for bit, and the round matches
/// plain Rust.
#[test]
fn the_graph_examples_kernels_agree_with_each_other_and_plain_rust() {
    use pypto_rt::Const;
    const F: usize = 32;
    let dev = Device::host();
    for (n, e) in [(1usize, 1usize), (9, 40), (150, 1200)] {
        let src = indices(e, n, 100 + n as u64);
        let dst = indices(e, n, 200 + n as u64);
        let mut order: Vec<usize> = (0..e).collect();
        order.sort_by_key(|&k| dst[k]);
        let sorted: Vec<i32> = order.iter().map(|&k| src[k]).collect();
        let mut deg = vec![0usize; n];
        dst.iter().for_each(|&d| deg[d as usize] += 1);
        let mut ptr = vec![0i32];
        deg.iter()
            .for_each(|&d| ptr.push(ptr.last().unwrap() + d as i32));
        let inv: Vec<f32> = deg
            .iter()
            .flat_map(|&d| [if d > 0 { 1.0 / d as f32 } else { 0.0 }; F])
            .collect();
        let h0: Vec<f32> = values(n * F, 300);
        let w: Vec<f32> = data(F * F, 301).iter().map(|v| v / 8.0).collect();
        let h = dev.tensor_from(&h0, (n, Const::<F>)).unwrap();
        let wt = dev.tensor_from(&w, (Const::<F>, Const::<F>)).unwrap();
        let tensor = |v: &[i32]| dev.tensor_from(v, (v.len(),)).unwrap();
        let mut msgs = dev.zeros((e, Const::<F>)).unwrap();
        kernels::gcn_gather(&h, &tensor(&src), &mut msgs).unwrap();
        let mut agg = dev.zeros((n, Const::<F>)).unwrap();
        kernels::gcn_scatter(&msgs, &tensor(&dst), &mut agg).unwrap();
        let inv_deg = dev.tensor_from(&inv, (n, Const::<F>)).unwrap();
        let mut mean = dev.zeros((n, Const::<F>)).unwrap();
        kernels::gcn_normalise(&agg, &inv_deg, &mut mean).unwrap();
        let mut sorted_msgs = dev.zeros((e, Const::<F>)).unwrap();
        kernels::gcn_gather(&h, &tensor(&sorted), &mut sorted_msgs).unwrap();
        let mut csr_mean = dev.zeros((n, Const::<F>)).unwrap();
        kernels::gcn_mean(&sorted_msgs, &tensor(&ptr), &mut csr_mean).unwrap();
        let mean = mean.to_vec().unwrap();
        assert_eq!(mean, csr_mean.to_vec().unwrap(), "N={n} E={e}");
        let mean_t = dev.tensor_from(&mean, (n, Const::<F>)).unwrap();
        let mut out = dev.zeros((n, Const::<F>)).unwrap();
        kernels::gcn_matmul(&mean_t, &wt, &mut out).unwrap();
        // Plain Rust, f64.
        let mut want_mean = vec![0f64; n * F];
        for k in 0..e {
            let (s, d) = (src[k] as usize, dst[k] as usize);
            for c in 0..F {
                want_mean[d * F + c] += f64::from(h0[s * F + c]) / deg[d] as f64;
            }
        }
        let got = out.to_vec().unwrap();
        for i in 0..n {
            for j in 0..F {
                let want: f64 = (0..F)
                    .map(|k| want_mean[i * F + k] * f64::from(w[k * F + j]))
                    .sum();
                let diff = (f64::from(got[i * F + j]) - want).abs();
                assert!(
                    diff <= 1e-5 * (1.0 + want.abs()),
                    "N={n} E={e} [{i}, {j}]: {} vs {want}",
                    got[i * F + j]
                );
            }
        }
    }
}
