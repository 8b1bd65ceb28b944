//! Devices: where tensors live and kernels run.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use crate::acl::{self, Acl};
use crate::dtype::DType;
use crate::error::Error;
use crate::shape::Shape;
use crate::stream::{Stream, StreamState};
use crate::tensor::Tensor;

/// The variable that overrides [`Device::default`]: `host`, `npu` or `npu:N`.
pub const DEVICE_VAR: &str = "PYPTO_DEVICE";

/// Where tensors live and kernels run: the host (CPU) backend, which runs
/// kernels' Ascend C sources against the host emulation of the API, or an
/// Ascend NPU through the CANN runtime.
///
/// Cloning is cheap; clones are the same device.
#[derive(Clone)]
pub struct Device {
    kind: DeviceKind,
}

#[derive(Clone)]
enum DeviceKind {
    Host,
    Npu(Arc<Npu>),
}

/// The NPU architecture a kernel binary is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NpuArch {
    /// Atlas A2 and A3 (`dav-2201`).
    Dav2201,
    /// Ascend 950PR/DT (`dav-3510`).
    Dav3510,
}

impl NpuArch {
    /// The architecture of a SoC, from the names the runtime reports:
    /// `Ascend910B…` (Atlas A2), `Ascend910_93…` (Atlas A3),
    /// `Ascend950…` (Ascend 950).
    pub fn from_soc_name(soc: &str) -> Option<NpuArch> {
        if soc.starts_with("Ascend910B") || soc.starts_with("Ascend910_93") {
            Some(NpuArch::Dav2201)
        } else if soc.starts_with("Ascend950") {
            Some(NpuArch::Dav3510)
        } else {
            None
        }
    }
}

impl fmt::Display for NpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NpuArch::Dav2201 => "dav-2201 (Atlas A2/A3)",
            NpuArch::Dav3510 => "dav-3510 (Ascend 950)",
        })
    }
}

/// One NPU, opened once per process.
pub(crate) struct Npu {
    pub(crate) index: i32,
    pub(crate) soc: String,
    pub(crate) arch: Option<NpuArch>,
    pub(crate) acl: &'static Acl,
    /// The stream kernel calls go to unless `with_stream` names another.
    pub(crate) default_stream: Arc<StreamState>,
    /// Launch data (tiling) already on the device, per kernel and by
    /// content: launches of a kernel with sizes seen before reuse its copy
    /// instead of copying it again.
    pub(crate) tilings: Mutex<TilingCache>,
}

/// Device copies of tilings, never freed before the process ends (they are
/// small, and a launch still queued may read any of them). Each kernel
/// (launch stub) has copies of its own, never shared with another kernel:
/// device memory has no read-only pages, so a kernel that writes its
/// tiling (a raw `GM_ADDR` store) changes the copy it was given, which may
/// then change its own later launches of those sizes, but never another
/// kernel's. The host backend reports such a write as
/// [`crate::Error::TilingWritten`].
///
/// The same type is each stream's index of the copies its launches used
/// (see [`crate::stream::Queue::tilings`]), so that a launch finds its
/// tiling under the stream's lock instead of this cache's.
#[derive(Default)]
pub(crate) struct TilingCache {
    /// By launch stub address, then by the tiling's words: device address.
    entries: std::collections::HashMap<usize, std::collections::HashMap<Box<[u64]>, usize>>,
    /// How many copies `entries` holds, over all kernels.
    count: usize,
}

impl TilingCache {
    /// The device copy of `words` for the kernel whose launch stub is at
    /// `kernel`, if kept.
    pub(crate) fn get(&self, kernel: usize, words: &[u64]) -> Option<usize> {
        self.entries.get(&kernel)?.get(words).copied()
    }

    /// Keeps `ptr` as the copy of `words` for `kernel`; `false` (and kept
    /// nowhere) when [`MAX_TILINGS`] copies are kept already or the key's
    /// memory cannot be had.
    pub(crate) fn insert(&mut self, kernel: usize, words: &[u64], ptr: usize) -> bool {
        if self.count >= MAX_TILINGS {
            return false;
        }
        let mut key = Vec::new();
        if key.try_reserve_exact(words.len()).is_err() {
            return false;
        }
        key.extend_from_slice(words);
        self.entries
            .entry(kernel)
            .or_default()
            .insert(key.into_boxed_slice(), ptr);
        self.count += 1;
        true
    }
}

/// Most distinct tilings kept per device; launches past it copy their
/// tiling each time (and free it when their stream has passed them).
pub(crate) const MAX_TILINGS: usize = 4096;

/// Makes device `index` current on the calling thread. The runtime is
/// asked which device is current rather than a cache of ours: another
/// component on this thread (torch_npu, aclnn) may have changed it.
pub(crate) fn enter(acl: &Acl, index: i32) -> Result<(), Error> {
    if acl.current_device() != Some(index) {
        acl.set_device(index)?;
    }
    Ok(())
}

impl Npu {
    /// Makes this device current on the calling thread.
    pub(crate) fn enter(&self) -> Result<(), Error> {
        enter(self.acl, self.index)
    }
}

/// Opened NPUs by index, so that every `Device` of one index shares its
/// stream.
static OPENED: OnceLock<Mutex<Vec<Arc<Npu>>>> = OnceLock::new();

fn open_npu(index: u32) -> Result<Arc<Npu>, Error> {
    let unavailable = |reason: String| Error::DeviceUnavailable {
        device: format!("npu:{index}"),
        reason,
    };
    let acl = acl::get().map_err(unavailable)?;
    let opened = OPENED.get_or_init(|| Mutex::new(Vec::new()));
    let mut opened = crate::sync::lock(opened);
    let wanted = i32::try_from(index).map_err(|_| unavailable("no such index".into()))?;
    if let Some(npu) = opened.iter().find(|n| n.index == wanted) {
        return Ok(npu.clone());
    }
    let count = acl.device_count()?;
    if index >= count {
        return Err(unavailable(format!(
            "the runtime ({}) reports {count} NPU{}",
            acl.path,
            if count == 1 { "" } else { "s" }
        )));
    }
    acl.set_device(wanted)?;
    let soc = acl.soc_name().unwrap_or_default();
    let stream = acl.create_stream(wanted)?;
    let npu = Arc::new(Npu {
        index: wanted,
        arch: NpuArch::from_soc_name(&soc),
        soc,
        acl,
        // Destroyed at exit with the other streams this process created.
        default_stream: Arc::new(StreamState::new(acl, wanted, stream, false)),
        tilings: Mutex::new(TilingCache::default()),
    });
    opened.push(npu.clone());
    Ok(npu)
}

impl Default for Device {
    /// `PYPTO_DEVICE` when set; otherwise the first NPU when the CANN
    /// runtime finds one, else the host. A `PYPTO_DEVICE` that cannot be
    /// honoured is reported on stderr and the host is used; call
    /// [`Device::from_env`] to get that as an error instead.
    fn default() -> Self {
        Device::from_env().unwrap_or_else(|e| {
            eprintln!("pypto-rt: {e}; using the host");
            Device::host()
        })
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        match (&self.kind, &other.kind) {
            (DeviceKind::Host, DeviceKind::Host) => true,
            (DeviceKind::Npu(a), DeviceKind::Npu(b)) => a.index == b.index,
            _ => false,
        }
    }
}

impl Eq for Device {}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DeviceKind::Host => f.write_str("the host (CPU)"),
            DeviceKind::Npu(npu) if npu.soc.is_empty() => write!(f, "npu:{}", npu.index),
            DeviceKind::Npu(npu) => write!(f, "npu:{} ({})", npu.index, npu.soc),
        }
    }
}

impl Device {
    /// The host backend: kernels run on CPU threads.
    pub fn host() -> Self {
        Device {
            kind: DeviceKind::Host,
        }
    }

    /// NPU `index`, through the CANN runtime.
    pub fn npu(index: u32) -> Result<Self, Error> {
        Ok(Device {
            kind: DeviceKind::Npu(open_npu(index)?),
        })
    }

    /// The device `PYPTO_DEVICE` names (`host`, `npu` for `npu:0`, or
    /// `npu:N`); when it is unset, the first NPU if the runtime finds one,
    /// else the host.
    pub fn from_env() -> Result<Self, Error> {
        match std::env::var(DEVICE_VAR) {
            Ok(value) if !value.is_empty() => Device::parse(&value),
            _ => Ok(Device::npu(0).unwrap_or_else(|_| Device::host())),
        }
    }

    /// A device from its name: `host`, `npu` (the first NPU) or `npu:N`.
    pub fn parse(name: &str) -> Result<Self, Error> {
        let index = match name.trim() {
            "host" | "cpu" => return Ok(Device::host()),
            "npu" => Some(0),
            other => other.strip_prefix("npu:").and_then(|n| n.parse().ok()),
        };
        match index {
            Some(index) => Device::npu(index),
            None => Err(Error::UnknownDevice(name.to_owned())),
        }
    }

    /// Whether this is the host backend.
    pub fn is_host(&self) -> bool {
        matches!(self.kind, DeviceKind::Host)
    }

    /// The NPU's index, or `None` for the host.
    pub fn npu_index(&self) -> Option<u32> {
        match &self.kind {
            DeviceKind::Host => None,
            DeviceKind::Npu(npu) => Some(npu.index as u32),
        }
    }

    /// The NPU's architecture when its SoC name is one pypto-rs knows.
    pub fn npu_arch(&self) -> Option<NpuArch> {
        match &self.kind {
            DeviceKind::Host => None,
            DeviceKind::Npu(npu) => npu.arch,
        }
    }

    /// The stream kernel calls on this device go to unless [`with_stream`]
    /// names another. On the host backend calls run when they are made.
    ///
    /// [`with_stream`]: crate::with_stream
    pub fn default_stream(&self) -> Stream {
        Stream::from_state(
            self.clone(),
            self.as_npu().map(|npu| npu.default_stream.clone()),
        )
    }

    /// A new stream on this device, destroyed (after its work) when its
    /// last clone is dropped.
    pub fn new_stream(&self) -> Result<Stream, Error> {
        let state = match self.as_npu() {
            None => None,
            Some(npu) => {
                npu.enter()?;
                let raw = npu.acl.create_stream(npu.index)?;
                Some(Arc::new(StreamState::new(npu.acl, npu.index, raw, true)))
            }
        };
        Ok(Stream::from_state(self.clone(), state))
    }

    pub(crate) fn as_npu(&self) -> Option<&Arc<Npu>> {
        match &self.kind {
            DeviceKind::Host => None,
            DeviceKind::Npu(npu) => Some(npu),
        }
    }

    /// A tensor holding a copy of `data`, whose length must match `shape`.
    pub fn tensor_from<T: DType, S: Shape>(
        &self,
        data: &[T],
        shape: S,
    ) -> Result<Tensor<T, S>, Error> {
        check_len(data.len(), shape)?;
        Tensor::upload(self, shape, data)
    }

    /// A tensor holding the contents of `data`, whose length must match
    /// `shape`. The data is copied: host tensors live in memory of their
    /// own, between guard pages (see [`Tensor`]).
    pub fn tensor_from_vec<T: DType, S: Shape>(
        &self,
        data: Vec<T>,
        shape: S,
    ) -> Result<Tensor<T, S>, Error> {
        self.tensor_from(&data, shape)
    }

    /// A tensor from data and sizes that arrive at run time (e.g. read from
    /// a file): rank and every fixed axis are checked here, once.
    pub fn tensor_from_sizes<T: DType, S: Shape>(
        &self,
        data: &[T],
        sizes: &[usize],
    ) -> Result<Tensor<T, S>, Error> {
        let shape = S::from_sizes(sizes)?;
        self.tensor_from(data, shape)
    }

    /// A tensor of zeros. Memory that cannot be had is
    /// [`Error::OutOfMemory`] (or [`Error::SizeOverflow`] when the size does
    /// not fit the address space), never an abort.
    pub fn zeros<T: DType, S: Shape>(&self, shape: S) -> Result<Tensor<T, S>, Error> {
        let n = shape.num_elements()?;
        if self.is_host() {
            return Tensor::host_zeroed(self, shape, n);
        }
        let data = crate::tensor::try_zeroed_vec::<T>(n)?;
        Tensor::upload(self, shape, &data)
    }
}

fn check_len<S: Shape>(actual: usize, shape: S) -> Result<(), Error> {
    let expected = shape.num_elements()?;
    if actual != expected {
        return Err(Error::LengthMismatch { expected, actual });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soc_names_map_to_architectures() {
        for soc in [
            "Ascend910B1",
            "Ascend910B4",
            "Ascend910_9391",
            "Ascend910_9382",
        ] {
            assert_eq!(NpuArch::from_soc_name(soc), Some(NpuArch::Dav2201), "{soc}");
        }
        assert_eq!(
            NpuArch::from_soc_name("Ascend950PR_9599"),
            Some(NpuArch::Dav3510)
        );
        // The first Ascend 910 and inference cards are not targets.
        for soc in ["Ascend910A", "Ascend310P3", ""] {
            assert_eq!(NpuArch::from_soc_name(soc), None, "{soc}");
        }
    }

    #[test]
    fn tiling_caches_keep_copies_per_kernel_up_to_the_cap() {
        let mut cache = TilingCache::default();
        assert!(cache.insert(1, &[4, 64], 0x100));
        assert_eq!(cache.get(1, &[4, 64]), Some(0x100));
        assert_eq!(cache.get(1, &[4]), None);
        // Another kernel with the same words gets a copy of its own.
        assert_eq!(cache.get(2, &[4, 64]), None);
        assert!(cache.insert(2, &[4, 64], 0x200));
        assert_eq!(cache.get(1, &[4, 64]), Some(0x100));
        assert_eq!(cache.get(2, &[4, 64]), Some(0x200));
        for i in 2..MAX_TILINGS {
            assert!(cache.insert(3, &[i as u64], i));
        }
        // Full: nothing more is kept, and what was kept stays.
        assert!(!cache.insert(3, &[u64::MAX], 1));
        assert!(!cache.insert(4, &[], 1));
        assert_eq!(cache.get(3, &[u64::MAX]), None);
        assert_eq!(cache.get(3, &[2]), Some(2));
        assert_eq!(
            cache.get(3, &[MAX_TILINGS as u64 - 1]),
            Some(MAX_TILINGS - 1)
        );
    }

    #[test]
    fn device_names_parse_or_fail_clearly() {
        assert!(Device::parse("host").unwrap().is_host());
        assert!(Device::parse(" cpu ").unwrap().is_host());
        for bad in ["", "gpu", "npu:", "npu:-1", "npu0"] {
            assert_eq!(
                Device::parse(bad).unwrap_err(),
                Error::UnknownDevice(bad.to_owned())
            );
        }
    }
}
