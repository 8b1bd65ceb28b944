//! The records the emulation's model fills (`pypto_emu/model/abi.h`; both
//! sides assert the same sizes).

use std::ffi::{c_char, c_void};

/// Costs in cycles, rates in bytes per cycle (`pypto_emu::ModelParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ModelParams {
    pub issue: f64,
    pub vec_head: f64,
    pub vec_simple_bytes: f64,
    pub vec_f32_special_bytes: f64,
    pub vec_f16_special_bytes: f64,
    pub vec_latency: f64,
    pub vec_special_latency: f64,
    pub vec_reduce_latency: f64,
    pub mte2_latency: f64,
    pub mte2_bytes: f64,
    pub mte3_latency: f64,
    pub mte3_bytes: f64,
    pub mte1_latency: f64,
    pub l0a_bytes: f64,
    pub l0b_bytes: f64,
    pub ub_copy_bytes: f64,
    pub mmad_latency: f64,
    pub fix_latency: f64,
    pub fix_bytes: f64,
    pub flag: f64,
    pub cross_core: f64,
    pub scalar_access: f64,
    pub chip_l2_bytes: f64,
    pub chip_l2_write_bytes: f64,
    pub chip_hbm_bytes: f64,
}

/// One instruction on one pipe (`pypto_emu::ModelEvent`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelEvent {
    pub start: u64,
    pub end: u64,
    pub name: *const c_char,
    pub file: *const c_char,
    pub line: u32,
    pub pipe: u8,
    pub modelled: u8,
    pub reads: u8,
    pub writes: u8,
    pub bytes: u64,
}

/// A flag from one pipe to another (`pypto_emu::ModelFlow`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelFlow {
    pub set: u64,
    pub wait: u64,
    pub from_pipe: u8,
    pub to_pipe: u8,
    pub from_core: u8,
    pub to_core: u8,
    pub reserved: u32,
}

/// The width in cycles of a core's global-memory bins
/// (`pypto_emu::model_gm_bin`).
pub(crate) const GM_BIN: u64 = 1024;

/// One core's totals (`pypto_emu::ModelCore`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelCore {
    pub end: u64,
    pub busy: [u64; 8],
    pub gm_read: u64,
    pub gm_write: u64,
    pub instructions: u64,
    pub unmodelled: u64,
    pub gm_cold: u64,
    pub gm_read_bins: *const f64,
    pub gm_write_bins: *const f64,
    pub n_gm_bins: u64,
}

/// Receives each core's timeline.
pub(crate) type CoreDone = unsafe extern "C" fn(
    ctx: *mut c_void,
    block: u32,
    core: u32,
    summary: *const ModelCore,
    events: *const ModelEvent,
    n_events: u64,
    flows: *const ModelFlow,
    n_flows: u64,
);

/// What a host launch passes to the emulation (`pypto_emu::ModelSink`).
#[repr(C)]
#[derive(Debug)]
pub struct ModelSink {
    pub(crate) params: *const ModelParams,
    pub(crate) ctx: *mut c_void,
    pub(crate) core_done: CoreDone,
    pub(crate) trace: u32,
    pub(crate) blocks: u32,
    pub(crate) ai_cores: u32,
    pub(crate) timing_only: u32,
    pub(crate) input_bytes: u64,
}

const _: () = {
    assert!(std::mem::size_of::<ModelParams>() == 25 * 8);
    assert!(std::mem::size_of::<ModelEvent>() == 48);
    assert!(std::mem::size_of::<ModelFlow>() == 24);
    assert!(std::mem::size_of::<ModelCore>() == 136);
    assert!(std::mem::size_of::<ModelSink>() == 48);
};
