//! The architectures the model knows, one row each: the chip's shape and
//! every cost, with where each figure comes from. Figures marked
//! *estimate* have no public source; they are the tunables calibration
//! fits (BENCHMARKS.md, "The modelled NPU").

use super::abi::ModelParams;

/// An NPU the model can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelArch {
    /// Atlas A2 (Ascend 910B1): 24 AI cores at 1850 MHz.
    AtlasA2,
    /// Atlas A2 (Ascend 910B4): 20 AI cores at 1500 MHz.
    AtlasA2B4,
    /// Atlas A3 (Ascend 910_9391): 24 AI cores at 1850 MHz.
    AtlasA3,
}

impl ModelArch {
    /// Every modelled architecture.
    pub const ALL: [ModelArch; 3] = [ModelArch::AtlasA2, ModelArch::AtlasA2B4, ModelArch::AtlasA3];

    /// The name printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            ModelArch::AtlasA2 => "Atlas A2 (910B1)",
            ModelArch::AtlasA2B4 => "Atlas A2 (910B4)",
            ModelArch::AtlasA3 => "Atlas A3 (910_9391)",
        }
    }

    /// AI cores (each one cube core and two vector cores). Source: the
    /// vendor's platform ini files (hicann/runtime `Ascend910B*.ini`).
    pub fn ai_cores(self) -> u32 {
        match self {
            ModelArch::AtlasA2 | ModelArch::AtlasA3 => 24,
            ModelArch::AtlasA2B4 => 20,
        }
    }

    /// The AI cores' clock in MHz. Source: the platform ini files.
    pub fn clock_mhz(self) -> f64 {
        match self {
            ModelArch::AtlasA2 | ModelArch::AtlasA3 => 1850.0,
            ModelArch::AtlasA2B4 => 1500.0,
        }
    }

    /// Microseconds a launch costs besides its blocks' work: task
    /// dispatch, the cores' start and the end of the task. No public
    /// figure; fitted (BENCHMARKS.md, "The modelled NPU"): a cube or vector
    /// kernel's from the 1536³ GEMM (NPU-PERF-FACTS §1; 11.9 before first
    /// reads were charged at the HBM rate), a mixed kernel's
    /// (whose cube and vector cores start as one task) from flash attention
    /// at S0 = 128, split between S1 = 1024 and 4096 (§2: the two columns'
    /// fixed parts disagree, so the fit makes their errors equal and opposite).
    pub fn launch_micros(self, mixed: bool) -> f64 {
        if mixed { 21.5 } else { 7.2 }
    }

    /// Microseconds between the starts of consecutive blocks of a mixed
    /// launch (block b starts no earlier than b times this): each AI core's
    /// cube and vector cores are started one block after another. No public
    /// figure; fitted (BENCHMARKS.md, "The modelled NPU") on flash
    /// attention at eight blocks, S0 = 1024, split between S1 = 1024 and
    /// 4096 (NPU-PERF-FACTS §2), the rows [`ModelArch::launch_micros`] is
    /// fitted on at one block.
    pub fn mixed_block_stagger_micros(self) -> f64 {
        2.8
    }

    /// [`ModelArch::launch_micros`] in cycles of this architecture's clock.
    pub fn launch_cycles(self, mixed: bool) -> u64 {
        (self.launch_micros(mixed) * self.clock_mhz()).round() as u64
    }

    /// Microseconds for `cycles` of this architecture's clock.
    pub fn micros(self, cycles: u64) -> f64 {
        cycles as f64 / self.clock_mhz()
    }

    /// The chip's L2 read bandwidth in bytes per cycle, shared by every core
    /// that moves global-memory data (a mixed block's cube core and both
    /// vector cores count): the platform ini's per-core L2 read rate, 110
    /// bytes per cycle, times the AI cores. No vendor figure for the L2 as
    /// a whole; an estimate from the ini (DESIGN.md §6).
    pub fn chip_l2_bytes_per_cycle(self) -> f64 {
        110.0 * f64::from(self.ai_cores())
    }

    /// The chip's L2 write bandwidth in bytes per cycle, shared as
    /// [`ModelArch::chip_l2_bytes_per_cycle`]: the platform ini's per-core
    /// L2 write rate, 86 bytes per cycle, times the AI cores (an estimate
    /// from the ini).
    pub fn chip_l2_write_bytes_per_cycle(self) -> f64 {
        86.0 * f64::from(self.ai_cores())
    }

    /// The chip's HBM bandwidth in bytes per cycle, which first reads of a
    /// launch's inputs share: the platform ini's per-core GM rate, 32 bytes
    /// per cycle, times the AI cores (768 on A2/A3: 1.42 TB/s at 1850 MHz;
    /// third parties claim 1.2 TB/s for 910B; no vendor figure; DESIGN.md
    /// §6, NPU-PERF-FACTS §3).
    pub fn chip_hbm_bytes_per_cycle(self) -> f64 {
        32.0 * f64::from(self.ai_cores())
    }

    pub(crate) fn params(self) -> ModelParams {
        ModelParams {
            // Scalar issue of one instruction (estimate).
            issue: 1.0,
            // PyPTO's cost model: a vector instruction costs
            // ceil(repeats·256 / parallel) + latency + ~15 (DESIGN.md §6).
            vec_head: 15.0,
            // ... with parallel 256 B/cycle for add/mul/max,
            vec_simple_bytes: 256.0,
            // 128 for fp32 exp/div,
            vec_f32_special_bytes: 128.0,
            // 64 for fp16 exp/div;
            vec_f16_special_bytes: 64.0,
            // latencies: add 6 (mul 7),
            vec_latency: 6.0,
            // exp 12, div 13,
            vec_special_latency: 13.0,
            // reductions ~20.
            vec_reduce_latency: 20.0,
            // PyPTO's models: ~300 cycles per MTE2 transfer.
            mte2_latency: 300.0,
            // Platform ini: L2 read 110 bytes per cycle per core (data
            // read again comes from the 192 MiB L2; first reads of the
            // inputs at the HBM rate, chip_hbm_bytes).
            mte2_bytes: 110.0,
            // PyPTO's models: ~150-300 per MTE3 transfer.
            mte3_latency: 200.0,
            // Platform ini: L2 write 86 bytes per cycle per core.
            mte3_bytes: 86.0,
            // L1 -> L0 transfer latency (estimate).
            mte1_latency: 20.0,
            // Platform ini: L1 -> L0A 512, L1 -> L0B 256 bytes per cycle.
            // Fitted: half of each (one factor), from the LoadData busy
            // ratio of the 6144³ GEMM (NPU-PERF-FACTS §1).
            l0a_bytes: 256.0,
            l0b_bytes: 128.0,
            // UB -> UB on the vector pipe: one repeat a cycle (as add).
            ub_copy_bytes: 256.0,
            // Cube pipeline fill per Mmad (estimate).
            mmad_latency: 20.0,
            // Fixpipe start-up (estimate).
            fix_latency: 50.0,
            // GE's autofuse table says L0C -> GM 32 bytes per cycle; fitted
            // 72, from the Fixpipe busy ratios of the 1536³ and 6144³
            // GEMMs (both give 71-73).
            fix_bytes: 72.0,
            // PTO-ISA: an intra-core set/wait flag ~1 cycle.
            flag: 1.0,
            // Unpublished (DESIGN.md §6: a tunable; estimate).
            cross_core: 100.0,
            // A scalar load or store of local memory (estimate).
            scalar_access: 10.0,
            // The chip's L2 and HBM bandwidths (see their methods).
            chip_l2_bytes: self.chip_l2_bytes_per_cycle(),
            chip_l2_write_bytes: self.chip_l2_write_bytes_per_cycle(),
            chip_hbm_bytes: self.chip_hbm_bytes_per_cycle(),
        }
    }
}

impl std::fmt::Display for ModelArch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
