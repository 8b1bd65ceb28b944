//! A plain-Rust model of the vector instructions' mask and repeat forms
//! (normal-mode bits or counter mode; block and repeat strides), shared by
//! the emulation tests that check every element of a mask form.

/// Which elements of which repeats an instruction touches.
pub enum Mask {
    /// Normal mode: the same bits in every repeat.
    Bits([u64; 2]),
    /// Counter mode: this many elements over all repeats.
    Counter(usize),
}

/// A mask form's reach: elements per repeat, repeats, and which are active.
pub struct Plan {
    /// Elements in one 256-byte repeat.
    pub per_repeat: usize,
    /// Repeats the instruction runs.
    pub repeats: usize,
    /// Which elements each repeat touches.
    pub mask: Mask,
}

impl Plan {
    /// Normal mode with these mask bits in every repeat.
    pub fn bits(elem: usize, repeats: usize, bits: [u64; 2]) -> Plan {
        Plan {
            per_repeat: 256 / elem,
            repeats,
            mask: Mask::Bits(bits),
        }
    }

    /// Normal mode, the first `n` elements of each repeat.
    pub fn first(elem: usize, repeats: usize, n: usize) -> Plan {
        Plan::bits(elem, repeats, first_bits(n))
    }

    /// Counter mode: `total` elements over as many repeats as they take.
    pub fn counter(elem: usize, total: usize) -> Plan {
        let per_repeat = 256 / elem;
        Plan {
            per_repeat,
            repeats: total.div_ceil(per_repeat),
            mask: Mask::Counter(total),
        }
    }

    /// The same element width, counting the first `n` elements in all (a
    /// count form).
    pub fn count(self, n: usize) -> Plan {
        Plan::counter(256 / self.per_repeat, n)
    }

    /// Whether element `e` of repeat `r` is touched.
    pub fn active(&self, r: usize, e: usize) -> bool {
        match self.mask {
            Mask::Bits(b) => (b[e / 64] >> (e % 64)) & 1 == 1,
            Mask::Counter(n) => r * self.per_repeat + e < n,
        }
    }
}

/// Element index of element `e` of repeat `r` of an operand of `elem`-byte
/// elements with block stride `blk` and repeat stride `rep` (32-byte blocks).
pub fn at(elem: usize, (blk, rep): (usize, usize), r: usize, e: usize) -> usize {
    let b = e * elem;
    (r * rep * 32 + (b / 32) * blk * 32 + b % 32) / elem
}

/// The normal-mode mask bits selecting the first `n` elements of a repeat.
pub fn first_bits(n: usize) -> [u64; 2] {
    let lo = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let hi = if n <= 64 {
        0
    } else if n >= 128 {
        u64::MAX
    } else {
        (1u64 << (n - 64)) - 1
    };
    [lo, hi]
}
