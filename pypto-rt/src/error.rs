//! The errors a kernel call or a tensor conversion can return.

/// An axis of a kernel param, with the size it had in a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisSize {
    pub param: &'static str,
    pub axis: usize,
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
        kernel: Option<&'static str>,
        param: Option<&'static str>,
        axis: usize,
        expected: usize,
        actual: usize,
    },

    /// Runtime sizes of the wrong rank for a typed shape.
    #[error("the shape's type has rank {expected}, but {actual} sizes were given")]
    RankMismatch { expected: usize, actual: usize },

    /// Data whose length does not match the shape's element count.
    #[error("the shape has {expected} elements, but the data has {actual}")]
    LengthMismatch { expected: usize, actual: usize },

    /// A size too large: for `usize`, or for what a kernel argument carries.
    #[error("{}size overflow: {detail}", kernel.map(|k| format!("kernel `{k}`: ")).unwrap_or_default())]
    SizeOverflow {
        kernel: Option<&'static str>,
        detail: String,
    },

    /// Two axes that are one dim (a shared name, or tied by the kernel's
    /// template) had different sizes in one call.
    #[error("kernel `{kernel}`: {second} but {first}; they must be equal because {why}")]
    DimDisagreement {
        kernel: &'static str,
        /// Why the axes are one dim: the dim's name or the template's rule.
        why: String,
        first: AxisSize,
        second: AxisSize,
    },

    /// A size the kernel splits evenly is not a multiple of the split.
    #[error("kernel `{kernel}`: {axis}, not a multiple of {of} ({why})")]
    NotMultiple {
        kernel: &'static str,
        axis: AxisSize,
        of: u32,
        why: String,
    },

    /// An axis the kernel splits into two halves is not twice the other.
    #[error("kernel `{kernel}`: {big}, but it must be twice `{}.{}` ({}) because {why}", small.param, small.axis, small.size)]
    NotTwice {
        kernel: &'static str,
        big: AxisSize,
        small: AxisSize,
        why: String,
    },

    /// Tensors of one call live on different devices.
    #[error("kernel `{kernel}`: param `{param}` is on {actual}, but the call runs on {expected}")]
    WrongDevice {
        kernel: &'static str,
        param: &'static str,
        expected: String,
        actual: String,
    },

    /// The kernel itself reported an error (on the host backend, the Ascend C
    /// emulation's checks: buffer budgets, alignment, queue misuse, bounds).
    #[error("kernel `{kernel}`, block {block}: {message}")]
    Kernel {
        kernel: &'static str,
        block: u32,
        message: String,
    },

    /// A call into the CANN runtime failed; `message` is the runtime's own
    /// (`aclGetRecentErrMsg`), which may be empty.
    #[error("`{call}` failed with ACL error {code}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Acl {
        call: &'static str,
        code: i32,
        message: String,
    },

    /// A device that was asked for cannot be used.
    #[error("{device} is not available: {reason}")]
    DeviceUnavailable { device: String, reason: String },

    /// `PYPTO_DEVICE` or [`crate::Device::parse`] got a name that is not a device.
    #[error("`{0}` is not a device; expected `host`, `npu` or `npu:N`")]
    UnknownDevice(String),

    /// The tensors are on an NPU the kernel was not compiled for.
    #[error("kernel `{kernel}` was not built for {device}: {reason}")]
    NotBuiltFor {
        kernel: &'static str,
        device: String,
        reason: String,
    },

    /// Memory for a tensor could not be had (host or device).
    #[error("could not allocate {bytes} bytes: {reason}")]
    OutOfMemory { bytes: usize, reason: String },

    /// A `DT_BOOL` tensor holds a byte other than 0 and 1 (a kernel wrote
    /// it). The tensor's elements were reset to `false`, so no invalid
    /// `bool` is ever seen.
    #[error("{}`{param}` element {index} holds byte {value}, which is not a DT_BOOL (0 or 1); the tensor was reset to false", kernel.map(|k| format!("kernel `{k}`: ")).unwrap_or_default())]
    InvalidBool {
        kernel: Option<&'static str>,
        param: &'static str,
        index: usize,
        value: u8,
    },

    /// A kernel wrote outside a tensor where no guard page could stop it:
    /// in the bytes just before its start. Found after the launch, so no
    /// block is known.
    #[error(
        "kernel `{kernel}`: the bytes {before} before the start of `{param}` were written (a raw GM_ADDR write out of bounds); check the kernel's offsets"
    )]
    OutOfBounds {
        kernel: &'static str,
        param: &'static str,
        /// How far before the start the first changed byte is.
        before: usize,
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
        value: String,
    },

    /// An environment setting (such as [`crate::SANITIZE_VAR`]) with a
    /// value it does not take.
    #[error("{setting}: `{value}` is not {expected}")]
    Setting {
        setting: &'static str,
        value: String,
        expected: &'static str,
    },

    /// The device or its runtime failed.
    #[error("{0}")]
    Backend(String),
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
