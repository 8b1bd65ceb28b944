//! Dynamic graph sizes: two rounds of mean-aggregation message passing (a
//! GCN layer each: gather each edge's source features, sum them into the
//! destination nodes, divide by the in-degree, multiply by the layer's
//! weights) on three graphs of different sizes, with one compiled set of
//! kernels (examples/kernels/graph.yaml): the node count N and edge count E
//! are DYNAMIC, so nothing is rebuilt between graphs.
//!
//! Each round computes the mean twice, as scatter_add then a division by
//! the in-degree, and as segment_mean over the edges sorted by destination
//! (CSR offsets); both sum in fp32 in edge order, so they agree bit for bit.
//! Every round is checked against plain Rust in f64; a mismatch exits
//! with an error (status 1).
//!
//! Run with `cargo run --example graph`.

use anyhow::{Context, ensure};
use pypto_rt::{Const, Device, Tensor};

// Only its test data is used here.
#[allow(dead_code)]
#[path = "common/reference.rs"]
mod reference;

// `mod kernels`: the typed wrappers examples/build.rs generated.
pypto_rt::include_kernels!();

/// Features per node (`F` in the spec).
const F: usize = 32;

type Nodes = Tensor<f32, (usize, Const<F>)>;
type Weights = Tensor<f32, (Const<F>, Const<F>)>;
type Index = Tensor<i32, (usize,)>;

/// A directed graph: edge `e` runs from `src[e]` to `dst[e]`.
struct Graph {
    nodes: usize,
    src: Vec<i32>,
    dst: Vec<i32>,
}

impl Graph {
    /// `edges` random edges among `nodes` nodes, a quarter of them into
    /// node 0 (a hub), none into the last node (its mean is zero).
    fn random(nodes: usize, edges: usize, seed: u64) -> Graph {
        let pick = |v: f32, n: usize| (((v + 4.0) / 8.0 * n as f32) as usize).min(n - 1) as i32;
        let src = reference::data(edges, seed)
            .into_iter()
            .map(|v| pick(v, nodes))
            .collect();
        let dst = reference::data(edges, seed + 1)
            .into_iter()
            .enumerate()
            .map(|(e, v)| if e % 4 == 0 { 0 } else { pick(v, nodes - 1) })
            .collect();
        Graph { nodes, src, dst }
    }

    fn in_degree(&self) -> Vec<usize> {
        let mut deg = vec![0; self.nodes];
        for &d in &self.dst {
            deg[d as usize] += 1;
        }
        deg
    }

    /// The edges in order of destination (stable, so each node's edges
    /// keep their order): their sources, and the CSR offsets of each
    /// node's run.
    fn by_destination(&self) -> (Vec<i32>, Vec<i32>) {
        let mut order: Vec<usize> = (0..self.src.len()).collect();
        order.sort_by_key(|&e| self.dst[e]);
        let src = order.iter().map(|&e| self.src[e]).collect();
        let mut offsets = vec![0i32];
        for deg in self.in_degree() {
            offsets.push(offsets.last().unwrap() + deg as i32);
        }
        (src, offsets)
    }
}

/// The graph's tensors on the device.
struct OnDevice {
    src: Index,
    dst: Index,
    /// Sources in order of destination, and their CSR offsets.
    sorted_src: Index,
    offsets: Index,
    /// 1 / in-degree (0 for a node without in-edges), on every feature.
    inv_deg: Nodes,
}

fn upload(dev: &Device, g: &Graph) -> anyhow::Result<OnDevice> {
    let (sorted, offsets) = g.by_destination();
    let inv: Vec<f32> = g
        .in_degree()
        .iter()
        .flat_map(|&d| [if d > 0 { 1.0 / d as f32 } else { 0.0 }; F])
        .collect();
    Ok(OnDevice {
        src: dev.tensor_from(&g.src, (g.src.len(),))?,
        dst: dev.tensor_from(&g.dst, (g.dst.len(),))?,
        sorted_src: dev.tensor_from(&sorted, (sorted.len(),))?,
        offsets: dev.tensor_from(&offsets, (offsets.len(),))?,
        inv_deg: dev.tensor_from(&inv, (g.nodes, Const::<F>))?,
    })
}

/// One GCN round on the device: mean over in-edges, times `w`, then relu
/// if asked. Checks that scatter_add + normalise and segment_mean agree.
fn round(dev: &Device, g: &OnDevice, h: &Nodes, w: &Weights, relu: bool) -> anyhow::Result<Nodes> {
    let (n, e) = (h.sizes()[0], g.src.sizes()[0]);
    let mut msgs = dev.zeros((e, Const::<F>))?;
    kernels::gcn_gather(h, &g.src, &mut msgs).context("gather_rows")?;
    let mut agg = dev.zeros((n, Const::<F>))?;
    kernels::gcn_scatter(&msgs, &g.dst, &mut agg).context("scatter_add")?;
    let mut mean = dev.zeros((n, Const::<F>))?;
    kernels::gcn_normalise(&agg, &g.inv_deg, &mut mean).context("normalise")?;

    let mut sorted = dev.zeros((e, Const::<F>))?;
    kernels::gcn_gather(h, &g.sorted_src, &mut sorted).context("gather_rows, sorted")?;
    let mut csr_mean = dev.zeros((n, Const::<F>))?;
    kernels::gcn_mean(&sorted, &g.offsets, &mut csr_mean).context("segment_mean")?;
    ensure!(
        mean.to_vec()? == csr_mean.to_vec()?,
        "scatter_add + normalise and segment_mean differ"
    );

    let mut out = dev.zeros((n, Const::<F>))?;
    kernels::gcn_matmul(&mean, w, &mut out).context("matmul")?;
    if relu {
        let mut activated = dev.zeros((n, Const::<F>))?;
        kernels::gcn_relu(&out, &mut activated).context("relu")?;
        out = activated;
    }
    Ok(out)
}

/// The same round in plain Rust, f64.
fn reference_round(g: &Graph, h: &[f64], w: &[f64], relu: bool) -> Vec<f64> {
    let deg = g.in_degree();
    let mut mean = vec![0f64; g.nodes * F];
    for (&s, &d) in g.src.iter().zip(&g.dst) {
        let (s, d) = (s as usize, d as usize);
        for c in 0..F {
            mean[d * F + c] += h[s * F + c] / deg[d] as f64;
        }
    }
    let mut out = vec![0f64; g.nodes * F];
    for i in 0..g.nodes {
        for k in 0..F {
            for j in 0..F {
                out[i * F + j] += mean[i * F + k] * w[k * F + j];
            }
        }
    }
    if relu {
        out.iter_mut().for_each(|v| *v = v.max(0.0));
    }
    out
}

fn main() -> anyhow::Result<()> {
    let dev = Device::default();
    println!("device: {dev}");
    // Two layers' weights, scaled so that values stay near 1.
    let weights: Vec<Vec<f32>> = (0..2)
        .map(|l| {
            reference::data(F * F, 100 + l)
                .iter()
                .map(|v| v / 8.0)
                .collect()
        })
        .collect();
    let w: Vec<Weights> = weights
        .iter()
        .map(|w| dev.tensor_from(w, (Const::<F>, Const::<F>)))
        .collect::<Result<_, _>>()?;

    for (nodes, edges) in [(6usize, 10usize), (97, 700), (1000, 9000)] {
        let g = Graph::random(nodes, edges, nodes as u64);
        let on_dev = upload(&dev, &g)?;
        let h0: Vec<f32> = reference::data(nodes * F, 7 + nodes as u64);
        let mut h = dev.tensor_from(&h0, (nodes, Const::<F>))?;
        let mut want: Vec<f64> = h0.iter().map(|&v| f64::from(v)).collect();
        for layer in 0..2 {
            let relu = layer == 0;
            h = round(&dev, &on_dev, &h, &w[layer], relu)?;
            let wl: Vec<f64> = weights[layer].iter().map(|&v| f64::from(v)).collect();
            want = reference_round(&g, &want, &wl, relu);
            let got = h.to_vec()?;
            let scale = want.iter().fold(1f64, |m, v| m.max(v.abs()));
            let worst = got
                .iter()
                .zip(&want)
                .map(|(&a, b)| (f64::from(a) - b).abs())
                .fold(0f64, f64::max);
            ensure!(
                worst <= 1e-4 * scale,
                "graph N = {nodes}, E = {edges}, round {}: off from plain Rust by {worst:e} (scale {scale:.3})",
                layer + 1
            );
            println!(
                "ok: graph N = {nodes}, E = {edges} (node 0 receives {} edges, node {} none), round {}: \
                 {:?} matches plain Rust (max |diff| {worst:.1e}); scatter_add and segment_mean agree bit for bit",
                g.in_degree()[0],
                nodes - 1,
                layer + 1,
                h.sizes(),
            );
        }
    }
    println!("one compiled kernel set served all three graphs");
    Ok(())
}
