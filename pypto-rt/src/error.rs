//! The errors a kernel call or a tensor conversion can return.

/// An axis of a kernel param, with the size it had in a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisSize {
    /// The param's name in the spec.
    pub param: &'static str,
    /// The axis, counted from 0.
    pub axis: usize,
    /// The axis's size in the call.
    pub size: usize,
}

impl std::fmt::Display for AxisSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}.{}` is {}", self.param, self.axis, self.size)
    }
}

/// Everything that can go wrong between typed tensors and a kernel launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A size that arrived at run time does not match a fixed size.
    #[error("{}axis {axis} has size {actual}, but {} fixes it at {expected}", context(kernel, param), if kernel.is_some() { "the kernel" } else { "the shape's type" })]
    ShapeMismatch {
        /// The kernel called, when the size came through a kernel call.
        kernel: Option<&'static str>,
        /// The param the size belongs to, when known.
        param: Option<&'static str>,
        /// The axis, counted from 0.
        axis: usize,
        /// The size the type or the kernel fixes.
        expected: usize,
        /// The size that arrived.
        actual: usize,
    },

    /// Runtime sizes of the wrong rank for a typed shape.
    #[error("the shape's type has rank {expected}, but {actual} sizes were given")]
    RankMismatch {
        /// The rank of the shape's type.
        expected: usize,
        /// How many sizes were given.
        actual: usize,
    },

    /// Data whose length does not match the shape's element count.
    #[error("the shape has {expected} elements, but the data has {actual}")]
    LengthMismatch {
        /// The shape's element count.
        expected: usize,
        /// The data's length.
        actual: usize,
    },

    /// A size too large: for `usize`, or for what a kernel argument carries.
    #[error("{}size overflow: {detail}", kernel.map(|k| format!("kernel `{k}`: ")).unwrap_or_default())]
    SizeOverflow {
        /// The kernel called, when the size came through a kernel call.
        kernel: Option<&'static str>,
        /// What overflowed, as a phrase for the message.
        detail: String,
    },

    /// A call whose block rule gives no blocks for its sizes (the rule's
    /// param has no elements) while an output has some: no block would
    /// write them, so the call is refused instead of returning an output
    /// nothing wrote.
    #[error(
        "kernel `{kernel}`: its block rule ({rule}) gives 0 blocks for these sizes, but output `{output}` has {elements} elements, which no block would write"
    )]
    NoBlocks {
        /// The kernel called.
        kernel: &'static str,
        /// The block rule, as a phrase.
        rule: String,
        /// The first output with elements.
        output: &'static str,
        /// Its element count.
        elements: usize,
    },

    /// Two axes that are one dim (a shared name, or tied by the kernel's
    /// template) had different sizes in one call.
    #[error("kernel `{kernel}`: {second} but {first}; they must be equal because {why}")]
    DimDisagreement {
        /// The kernel called.
        kernel: &'static str,
        /// Why the axes are one dim: the dim's name or the template's rule.
        why: String,
        /// The axis named first in the message (seen first in the call).
        first: AxisSize,
        /// The axis whose size disagrees with `first`.
        second: AxisSize,
    },

    /// A size the kernel splits evenly is not a multiple of the split.
    #[error("kernel `{kernel}`: {axis}, not a multiple of {of} ({why})")]
    NotMultiple {
        /// The kernel called.
        kernel: &'static str,
        /// The axis and its size.
        axis: AxisSize,
        /// The number the size must be a multiple of.
        of: u32,
        /// Why: the template's rule, for the message.
        why: String,
    },

    /// An axis the kernel splits into two halves is not twice the other.
    #[error("kernel `{kernel}`: {big}, but it must be twice `{}.{}` ({}) because {why}", small.param, small.axis, small.size)]
    NotTwice {
        /// The kernel called.
        kernel: &'static str,
        /// The axis that must be twice `small`.
        big: AxisSize,
        /// The axis that `big` must be twice.
        small: AxisSize,
        /// Why: the template's rule, for the message.
        why: String,
    },

    /// Sizes that break an arithmetic relation of the kernel's template
    /// (an `equals:` entry of its contract, such as flash attention's
    /// `q.last / heads == k.last / kv_heads`).
    #[error("kernel `{kernel}`: {}, but {why}: {problem}", and_list(axes))]
    NotEqual {
        /// The kernel called.
        kernel: &'static str,
        /// Every axis the relation reads, with its size in the call.
        axes: Vec<AxisSize>,
        /// The relation: the template, the equation as written, the
        /// options' values and where the template writes it.
        why: String,
        /// What broke it: the sides' values, or a division that leaves a
        /// remainder.
        problem: String,
    },

    /// Tensors of one call live on different devices.
    #[error("kernel `{kernel}`: param `{param}` is on {actual}, but the call runs on {expected}")]
    WrongDevice {
        /// The kernel called.
        kernel: &'static str,
        /// The param on another device.
        param: &'static str,
        /// The device the call runs on.
        expected: String,
        /// The device the param is on.
        actual: String,
    },

    /// Work of one device queued on a stream of another (a kernel call in
    /// [`crate::with_stream`], or [`crate::Stream::wait`] on an event).
    #[error("{what}: on {actual}, but the stream is on {stream}; use a stream of the same device")]
    WrongStream {
        /// The call or kernel.
        what: String,
        /// The device of its work.
        actual: String,
        /// The stream's device.
        stream: String,
    },

    /// The kernel itself reported an error (on the host backend, the Ascend C
    /// emulation's checks: buffer budgets, alignment, queue misuse, bounds).
    #[error("kernel `{kernel}`, block {block}: {message}")]
    Kernel {
        /// The kernel called.
        kernel: &'static str,
        /// The block that failed, counted from 0.
        block: u32,
        /// The kernel's (or the emulation's) message.
        message: String,
    },

    /// A call into the CANN runtime failed; `message` is the runtime's own
    /// (`aclGetRecentErrMsg`), which may be empty.
    #[error("`{call}` failed with ACL error {code}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Acl {
        /// The runtime function that failed.
        call: &'static str,
        /// Its `aclError` code.
        code: i32,
        /// The runtime's message; may be empty.
        message: String,
    },

    /// A device that was asked for cannot be used.
    #[error("{device} is not available: {reason}")]
    DeviceUnavailable {
        /// The device asked for (`npu:1`, ...).
        device: String,
        /// Why it cannot be used.
        reason: String,
    },

    /// `PYPTO_DEVICE` or [`crate::Device::parse`] got a name that is not a device.
    #[error("`{0}` is not a device; expected `host`, `npu` or `npu:N`")]
    UnknownDevice(String),

    /// No variant of a kernel with `variants:` (or `dispatch: runtime`)
    /// accepts the call's sizes: each variant's condition failed, or the
    /// sizes are not among the STATIC sizes it was built for.
    #[error("kernel `{kernel}` cannot run {sizes}: {why}")]
    NoVariant {
        /// The kernel called.
        kernel: &'static str,
        /// The sizes the variants were chosen by, e.g. `M = 17, K = 100`.
        sizes: String,
        /// Why each variant refused, in the spec's order.
        why: String,
    },

    /// The tensors are on an NPU the kernel was not compiled for.
    #[error("kernel `{kernel}` was not built for {device}: {reason}")]
    NotBuiltFor {
        /// The kernel called.
        kernel: &'static str,
        /// The device the tensors are on.
        device: String,
        /// What the kernel was built for instead.
        reason: String,
    },

    /// The NPU kernels the binary carries for the device's architecture
    /// could not be loaded, or lack the kernel's launch stub.
    #[error(
        "kernel `{kernel}`: its NPU library {library}, embedded in this binary, could not be loaded: {reason}"
    )]
    NpuLibrary {
        /// The kernel called.
        kernel: &'static str,
        /// The library's name (the file bisheng linked at build time).
        library: &'static str,
        /// What the dynamic loader said.
        reason: String,
    },

    /// Memory for a tensor could not be had (host or device).
    #[error("could not allocate {bytes} bytes: {reason}")]
    OutOfMemory {
        /// The size asked for.
        bytes: usize,
        /// The allocator's or the runtime's message.
        reason: String,
    },

    /// A `DT_BOOL` tensor holds a byte other than 0 and 1 (a kernel wrote
    /// it). Found after a host launch (the tensor, output or input, was
    /// reset to `false`), or when bytes from an NPU reach the host
    /// (`to_vec`, `to_device`, `copy_to`, `copy_from`: the host destination
    /// was reset to `false`), so no invalid `bool` is ever seen.
    #[error("{}", invalid_bool(kernel, param, *index, *value))]
    InvalidBool {
        /// The kernel that wrote it, when found after a host launch.
        kernel: Option<&'static str>,
        /// After a host launch, the tensor's param name; otherwise what
        /// was done instead, as a phrase for the message (`the copy's
        /// destination was reset to false`).
        param: &'static str,
        /// The first invalid element's index.
        index: usize,
        /// The byte it held.
        value: u8,
    },

    /// A kernel wrote outside a tensor where no guard page could stop it:
    /// in the bytes just before its start. Found after the launch, so no
    /// block is known.
    #[error(
        "kernel `{kernel}`: the bytes {before} before the start of `{param}` were written (a raw GM_ADDR write out of bounds); check the kernel's offsets"
    )]
    OutOfBounds {
        /// The kernel called.
        kernel: &'static str,
        /// The param whose memory was written before.
        param: &'static str,
        /// How far before the start the first changed byte is.
        before: usize,
    },

    /// A kernel wrote its tiling: the sizes and scalars pypto-rt passes
    /// it (`pypto_tiling_gm`), which kernels only read. Found after a host
    /// launch, which gave each launch its own copy. On an NPU nothing can
    /// stop the write: each kernel has tilings of its own, so it changes
    /// no other kernel's launch, but it changes that kernel's later
    /// launches of the same sizes.
    #[error(
        "kernel `{kernel}`: it wrote its tiling (the sizes and scalars pypto-rt passes it), which a kernel may only read; on an NPU that write would change the tiling of its later launches with the same sizes"
    )]
    TilingWritten {
        /// The kernel called.
        kernel: &'static str,
    },

    /// A forced block count ([`crate::BLOCKS_VAR`] or
    /// [`crate::with_host_blocks`]) that is not a whole number from 1 to
    /// [`crate::MAX_BLOCKS`].
    #[error(
        "{setting}: `{value}` is not a block count; use a whole number from 1 to {}",
        crate::MAX_BLOCKS
    )]
    BlockCount {
        /// `PYPTO_BLOCKS` or `pypto_rt::with_host_blocks`.
        setting: &'static str,
        /// The value given.
        value: String,
    },

    /// An environment setting (such as [`crate::SANITIZE_VAR`]) with a
    /// value it does not take.
    #[error("{setting}: `{value}` is not {expected}")]
    Setting {
        /// The variable's name.
        setting: &'static str,
        /// The value given.
        value: String,
        /// What the setting takes, as a phrase for the message.
        expected: &'static str,
    },

    /// The modelled NPU's trace (`PYPTO_PROFILE`) could not be written.
    #[error("{setting}: could not write the modelled timeline to {}: {message}", path.display())]
    ProfileWrite {
        /// The variable that named the file.
        setting: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        message: String,
    },

    /// A reshape to a shape with another element count.
    #[error(
        "cannot reshape a tensor of sizes {from:?} ({} elements) to sizes {to:?} ({} elements); a reshape keeps the element count",
        elements(from),
        elements(to)
    )]
    ReshapeMismatch {
        /// The tensor's sizes.
        from: Vec<usize>,
        /// The sizes asked for.
        to: Vec<usize>,
    },

    /// A slice along the first axis that is not inside it.
    #[error("cannot slice rows {start}..{end} of a tensor whose first axis has {len}")]
    SliceOutOfRange {
        /// The first row asked for.
        start: usize,
        /// One past the last row asked for.
        end: usize,
        /// The first axis's size.
        len: usize,
    },

    /// A copy between tensors of different sizes.
    #[error(
        "cannot copy a tensor of sizes {src:?} into one of sizes {dst:?}; copies need equal sizes (reshape one of them)"
    )]
    CopyMismatch {
        /// The destination's sizes.
        dst: Vec<usize>,
        /// The source's sizes.
        src: Vec<usize>,
    },

    /// Memory that cannot be adopted as a tensor (a null or misaligned
    /// pointer).
    #[error("cannot adopt memory at {ptr:#x} as a tensor of {dtype}: {reason}")]
    Adopt {
        /// The pointer given.
        ptr: usize,
        /// The element type's spec name.
        dtype: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// An operation that needs host memory, on a tensor of another device.
    #[error(
        "{operation} needs a tensor on the host, but this one is on {device}; copy it with `to_device(&Device::host())` first"
    )]
    NotOnHost {
        /// What was asked for.
        operation: &'static str,
        /// The tensor's device.
        device: String,
    },

    /// The device or its runtime failed.
    #[error("{0}")]
    Backend(String),
}

fn invalid_bool(kernel: &Option<&'static str>, param: &str, index: usize, value: u8) -> String {
    match kernel {
        Some(k) => format!(
            "kernel `{k}`: `{param}` element {index} holds byte {value}, which is not a DT_BOOL \
             (0 or 1); the tensor was reset to false"
        ),
        None => format!(
            "element {index} of a DT_BOOL tensor holds byte {value}, which is not a DT_BOOL (0 or \
             1), so {param}"
        ),
    }
}

/// `` `a.0` is 1``, `` `a.0` is 1 and `b.1` is 2``, …
fn and_list(axes: &[AxisSize]) -> String {
    let items: Vec<String> = axes.iter().map(ToString::to_string).collect();
    match &items[..] {
        [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => items.concat(),
    }
}

fn elements(sizes: &[usize]) -> String {
    sizes
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .map_or_else(|| "too many".to_owned(), |n| n.to_string())
}

fn context(kernel: &Option<&'static str>, param: &Option<&'static str>) -> String {
    match (kernel, param) {
        (Some(k), Some(p)) => format!("kernel `{k}`, param `{p}`: "),
        (Some(k), None) => format!("kernel `{k}`: "),
        (None, Some(p)) => format!("param `{p}`: "),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_sentences() {
        let e = Error::DimDisagreement {
            kernel: "attention",
            why: "both are the dim `B`".into(),
            first: AxisSize {
                param: "q",
                axis: 0,
                size: 4,
            },
            second: AxisSize {
                param: "k",
                axis: 0,
                size: 2,
            },
        };
        assert_eq!(
            e.to_string(),
            "kernel `attention`: `k.0` is 2 but `q.0` is 4; they must be equal because both are the dim `B`"
        );
        let e = Error::ShapeMismatch {
            kernel: Some("add_bias"),
            param: Some("bias"),
            axis: 0,
            expected: 128,
            actual: 64,
        };
        assert_eq!(
            e.to_string(),
            "kernel `add_bias`, param `bias`: axis 0 has size 64, but the kernel fixes it at 128"
        );
    }
}
