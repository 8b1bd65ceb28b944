//! A launch's blocks on the chip's cores, and the tables a profile prints.

use std::fmt;

use super::{CoreProfile, LaunchProfile, ModelArch, PIPES, Profile};

/// Schedules `blocks` on the chip: a block takes the core (of its kind)
/// that frees first, in block order, so a launch with more blocks than
/// cores runs in waves; a mixed launch's block b starts no earlier than b
/// times [`ModelArch::mixed_block_stagger_micros`].
pub(super) fn schedule(
    arch: ModelArch,
    kernel: &'static str,
    blocks: u32,
    cores: Vec<CoreProfile>,
    truncated: bool,
) -> LaunchProfile {
    let mixed = cores.iter().any(|c| {
        matches!(
            c.core,
            super::CoreKind::MixedCube
                | super::CoreKind::MixedVector0
                | super::CoreKind::MixedVector1
        )
    });
    let vector_only = cores.iter().all(|c| c.core == super::CoreKind::Vector);
    let slots = if vector_only {
        arch.ai_cores() * 2
    } else {
        arch.ai_cores()
    } as usize;
    let stagger = if mixed {
        (arch.mixed_block_stagger_micros() * arch.clock_mhz()).round() as u64
    } else {
        0
    };
    let mut free = vec![0u64; slots.max(1)];
    let mut schedule = Vec::with_capacity(blocks as usize);
    let mut end = 0u64;
    let mut at = 0usize;
    for block in 0..blocks {
        // The block's length: its slowest core.
        let mut length = 0u64;
        while at < cores.len() && cores[at].block < block {
            at += 1;
        }
        let mut i = at;
        while i < cores.len() && cores[i].block == block {
            length = length.max(cores[i].cycles);
            i += 1;
        }
        let (slot, start) = free
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .unwrap_or((0, 0));
        let start = start.max(u64::from(block) * stagger);
        free[slot] = start + length;
        end = end.max(start + length);
        schedule.push((start, slot as u32));
    }
    LaunchProfile {
        kernel,
        blocks,
        cores,
        schedule,
        cycles: arch.launch_cycles(mixed) + end,
        truncated,
    }
}

impl LaunchProfile {
    /// Busy cycles per pipe over every core.
    pub fn busy(&self) -> [u64; 8] {
        let mut busy = [0u64; 8];
        for c in &self.cores {
            for (b, c) in busy.iter_mut().zip(c.busy) {
                *b += c;
            }
        }
        busy
    }

    /// Per pipe, the fraction of the launch's time that pipe was busy,
    /// averaged over the cores that have it (the cube pipes on cube
    /// cores, the vector pipe on vector cores).
    pub fn busy_fraction(&self) -> [f64; 8] {
        let mut out = [0.0; 8];
        if self.cycles == 0 {
            return out;
        }
        for (p, slot) in out.iter_mut().enumerate() {
            let users: Vec<&CoreProfile> = self.cores.iter().filter(|c| c.busy[p] > 0).collect();
            if users.is_empty() {
                continue;
            }
            let waves = (self.blocks as usize)
                .div_ceil(self.schedule_width().max(1))
                .max(1);
            let cores = users.len().div_ceil(waves).max(1);
            let busy: u64 = users.iter().map(|c| c.busy[p]).sum();
            *slot = busy as f64 / (cores as f64 * self.cycles as f64);
        }
        out
    }

    fn schedule_width(&self) -> usize {
        let mut slots: Vec<u32> = self.schedule.iter().map(|&(_, s)| s).collect();
        slots.sort_unstable();
        slots.dedup();
        slots.len()
    }

    /// The pipe busy the largest fraction of the time: what bounds the launch.
    pub fn bound(&self) -> &'static str {
        let f = self.busy_fraction();
        let (p, _) =
            f.iter()
                .enumerate()
                .filter(|&(p, _)| p != 6)
                .fold(
                    (0, -1.0),
                    |best, (p, &v)| if v > best.1 { (p, v) } else { best },
                );
        PIPES[p]
    }

    /// Instructions with no figure in the cost table.
    pub fn unmodelled(&self) -> u64 {
        self.cores.iter().map(|c| c.unmodelled).sum()
    }
}

impl Profile {
    /// Modelled cycles of every launch, one after another.
    pub fn cycles(&self) -> u64 {
        self.launches.iter().map(|l| l.cycles).sum()
    }

    /// Modelled microseconds of every launch, one after another.
    pub fn micros(&self) -> f64 {
        self.arch.micros(self.cycles())
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "modelled on {} (a model, not a measurement): {:.2} us, {} cycles",
            self.arch,
            self.micros(),
            self.cycles()
        )?;
        write!(
            f,
            "{:<24} {:>6} {:>10} {:>6}",
            "kernel", "blocks", "us", "bound"
        )?;
        for p in PIPES.iter().filter(|&&p| p != "ALL") {
            write!(f, " {p:>5}")?;
        }
        writeln!(f)?;
        for l in &self.launches {
            write!(
                f,
                "{:<24} {:>6} {:>10.2} {:>6}",
                l.kernel,
                l.blocks,
                self.arch.micros(l.cycles),
                l.bound()
            )?;
            let frac = l.busy_fraction();
            for (p, v) in frac.iter().enumerate() {
                if p != 6 {
                    write!(f, " {:>4.0}%", v * 100.0)?;
                }
            }
            let unmodelled = l.unmodelled();
            if unmodelled > 0 {
                write!(f, "  ({unmodelled} instructions without a cost)")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
