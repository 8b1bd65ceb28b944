//! The builtin kernel library's contracts: for each `builtin/NAME` template,
//! the params it takes and the shape relations it relies on. The model checks
//! specs against these; the wrappers check the same relations at run time.

use crate::model::DType;

/// What a param of a builtin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Input,
    Output,
    Scalar,
}

impl Role {
    pub fn describe(self) -> &'static str {
        match self {
            Role::Input => "an input tensor",
            Role::Output => "an output tensor",
            Role::Scalar => "a scalar",
        }
    }
}

/// One param a builtin expects, in call order.
#[derive(Debug, Clone, Copy)]
pub struct RoleSpec {
    /// The name the template's documentation uses; spec names may differ.
    pub name: &'static str,
    pub role: Role,
    /// Exact rank required, or `None` for any rank.
    pub rank: Option<usize>,
}

/// An axis of a param: `Last` is the innermost axis, whatever the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisRef {
    Index(usize),
    Last,
}

/// How a launch is split into blocks (the runtime's `BlockRule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    /// One block per row of a param: the product of all but its last axis.
    Rows { param: usize },
    /// One block per `per_block` elements of a param.
    Elements { param: usize, per_block: u32 },
    /// One block per index of a param's leading `axes` axes, times the
    /// value of an integer option when given (e.g. attention heads).
    Leading {
        param: usize,
        axes: usize,
        option: Option<&'static str>,
    },
}

/// A template option (`options:` in a spec) and its default.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    pub kind: OptionKind,
    pub doc: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    Int { min: i64, max: i64, default: i64 },
    Bool { default: bool },
}

/// An axis of the param at this position.
pub type ParamAxis = (usize, AxisRef);

#[derive(Debug, Clone, Copy)]
pub struct Contract {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [RoleSpec],
    /// Pairs of params (by position) whose shapes are identical.
    pub same_shape: &'static [(usize, usize)],
    /// Pairs of (param, axis) that are one dim.
    pub same_axis: &'static [(ParamAxis, ParamAxis)],
    /// The dtypes the template is written for; all tensors share one.
    pub dtypes: &'static [DType],
    pub blocks: Blocks,
    pub options: &'static [OptionSpec],
    /// Axes whose size must be a multiple of an integer option's value.
    pub divisible_by_option: &'static [(ParamAxis, &'static str)],
    /// Axes whose size must be a multiple of a constant, and why.
    pub multiple_of: &'static [(ParamAxis, u64, &'static str)],
    /// `(big, small)`: the small param has the big one's leading axes and
    /// half its last axis (swiglu's split).
    pub halved_last: Option<(usize, usize)>,
}

const FLOATS: &[DType] = &[DType::Fp32, DType::Fp16, DType::Bf16];
/// The cube path: fp32 accumulation for every input type.
const CUBE: &[DType] = FLOATS;
const MATMUL_N: &str = "the cube writes output columns in 16-wide fractals";

const fn input(name: &'static str, rank: Option<usize>) -> RoleSpec {
    RoleSpec {
        name,
        role: Role::Input,
        rank,
    }
}

const fn output(name: &'static str, rank: Option<usize>) -> RoleSpec {
    RoleSpec {
        name,
        role: Role::Output,
        rank,
    }
}

/// Elementwise kernels take a block per 8 Ki elements, so small tensors do
/// not pay for many blocks.
const ELEMENTWISE: Blocks = Blocks::Elements {
    param: 0,
    per_block: 8192,
};

const fn scalar(name: &'static str) -> RoleSpec {
    RoleSpec {
        name,
        role: Role::Scalar,
        rank: None,
    }
}

/// A unary elementwise builtin: x in, out of the same shape.
const fn unary(name: &'static str, summary: &'static str) -> Contract {
    Contract {
        name,
        summary,
        params: UNARY,
        same_shape: &[(0, 1)],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: ELEMENTWISE,
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    }
}

const BINARY: &[RoleSpec] = &[input("a", None), input("b", None), output("out", None)];
const UNARY: &[RoleSpec] = &[input("x", None), output("out", None)];

/// Every builtin template, sorted by name.
pub const BUILTINS: &[Contract] = &[
    Contract {
        name: "add",
        summary: "out = a + b, elementwise",
        params: BINARY,
        same_shape: &[(0, 1), (0, 2)],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: ELEMENTWISE,
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    Contract {
        name: "add_bias",
        summary: "out = x + bias, bias broadcast over every row of x",
        params: &[
            input("x", None),
            input("bias", Some(1)),
            output("out", None),
        ],
        same_shape: &[(0, 2)],
        same_axis: &[((1, AxisRef::Index(0)), (0, AxisRef::Last))],
        dtypes: FLOATS,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    Contract {
        name: "attention",
        summary: "out = softmax(q·kᵀ/√d)·v over [batch, sequence, hidden]",
        params: &[
            input("q", Some(3)),
            input("k", Some(3)),
            input("v", Some(3)),
            output("out", Some(3)),
        ],
        same_shape: &[(0, 1), (0, 2), (0, 3)],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: Blocks::Leading {
            param: 0,
            axes: 1,
            option: Some("heads"),
        },
        options: &[
            OptionSpec {
                name: "heads",
                kind: OptionKind::Int {
                    min: 1,
                    max: 256,
                    default: 1,
                },
                doc: "attention heads; the hidden size is split into heads of hidden/heads",
            },
            OptionSpec {
                name: "causal",
                kind: OptionKind::Bool { default: false },
                doc: "mask keys after the query's position",
            },
        ],
        divisible_by_option: &[((0, AxisRef::Last), "heads")],
        multiple_of: &[],
        halved_last: None,
    },
    Contract {
        name: "batch_matmul",
        summary: "out[b] = a[b] · b[b] on the cube unit, fp32 accumulation",
        params: &[
            input("a", Some(3)),
            input("b", Some(3)),
            output("out", Some(3)),
        ],
        same_shape: &[],
        same_axis: &[
            ((0, AxisRef::Index(0)), (1, AxisRef::Index(0))),
            ((0, AxisRef::Index(0)), (2, AxisRef::Index(0))),
            ((0, AxisRef::Index(1)), (2, AxisRef::Index(1))),
            ((0, AxisRef::Index(2)), (1, AxisRef::Index(1))),
            ((1, AxisRef::Index(2)), (2, AxisRef::Index(2))),
        ],
        dtypes: CUBE,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[((1, AxisRef::Last), 16, MATMUL_N)],
        halved_last: None,
    },
    unary("gelu", "out = gelu(x), tanh form, elementwise"),
    Contract {
        name: "layer_norm",
        summary: "out = (x - mean) / sqrt(var + eps) * weight + bias over the last axis",
        params: &[
            input("x", None),
            input("weight", Some(1)),
            input("bias", Some(1)),
            scalar("eps"),
            output("out", None),
        ],
        same_shape: &[(0, 4)],
        same_axis: &[
            ((1, AxisRef::Index(0)), (0, AxisRef::Last)),
            ((2, AxisRef::Index(0)), (0, AxisRef::Last)),
        ],
        dtypes: FLOATS,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    Contract {
        name: "matmul",
        summary: "out = a · b on the cube unit, fp32 accumulation",
        params: &[
            input("a", Some(2)),
            input("b", Some(2)),
            output("out", Some(2)),
        ],
        same_shape: &[],
        same_axis: &[
            ((0, AxisRef::Index(0)), (2, AxisRef::Index(0))),
            ((0, AxisRef::Index(1)), (1, AxisRef::Index(0))),
            ((1, AxisRef::Index(1)), (2, AxisRef::Index(1))),
        ],
        dtypes: CUBE,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[((1, AxisRef::Last), 16, MATMUL_N)],
        halved_last: None,
    },
    Contract {
        name: "mul",
        summary: "out = a * b, elementwise",
        params: BINARY,
        same_shape: &[(0, 1), (0, 2)],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: ELEMENTWISE,
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    unary("relu", "out = max(x, 0), elementwise"),
    Contract {
        name: "rms_norm",
        summary: "out = x / sqrt(mean(x²) + eps) * weight over the last axis",
        params: &[
            input("x", None),
            input("weight", Some(1)),
            scalar("eps"),
            output("out", None),
        ],
        same_shape: &[(0, 3)],
        same_axis: &[((1, AxisRef::Index(0)), (0, AxisRef::Last))],
        dtypes: FLOATS,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    unary("silu", "out = x * sigmoid(x), elementwise"),
    Contract {
        name: "softmax",
        summary: "out = softmax(x) over the last axis, max-subtracted",
        params: UNARY,
        same_shape: &[(0, 1)],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: None,
    },
    Contract {
        name: "swiglu",
        summary: "out = silu(a) * b where x's last axis is [a, b], two equal halves",
        params: &[input("x", None), output("out", None)],
        same_shape: &[],
        same_axis: &[],
        dtypes: FLOATS,
        blocks: Blocks::Rows { param: 0 },
        options: &[],
        divisible_by_option: &[],
        multiple_of: &[],
        halved_last: Some((0, 1)),
    },
];

/// The contract of `builtin/NAME`.
pub fn find(name: &str) -> Option<&'static Contract> {
    BUILTINS.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_sorted_and_consistent() {
        let names: Vec<&str> = BUILTINS.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for c in BUILTINS {
            let n = c.params.len();
            for &(a, b) in c.same_shape {
                assert!(a < n && b < n, "{}", c.name);
            }
            for &((a, _), (b, _)) in c.same_axis {
                assert!(a < n && b < n, "{}", c.name);
            }
            assert!(
                c.params.iter().any(|p| p.role == Role::Output),
                "{}",
                c.name
            );
        }
    }
}
