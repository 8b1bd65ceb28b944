//! A launch's blocks on the chip's cores, and the tables a profile prints.

use std::fmt;

use super::abi::GM_BIN;
use super::{CoreKind, CoreProfile, LaunchProfile, ModelArch, PIPES, Profile};

/// One core's global-memory traffic over time, from its start: bytes read
/// and written per [`GM_BIN`] cycles.
pub(super) struct GmBins {
    pub block: u32,
    pub core: CoreKind,
    pub bins: Vec<(f64, f64)>,
}

/// Schedules `blocks` on the chip: a block takes the core (of its kind)
/// that frees first, in block order, so a launch with more blocks than
/// cores runs in waves; a mixed launch's block b starts no earlier than b
/// times [`ModelArch::mixed_block_stagger_micros`]; then shares the chip's
/// L2 bandwidth between the cores by what they moved and when (`bins`,
/// [`gm_stall`]).
pub(super) fn schedule(
    arch: ModelArch,
    kernel: &'static str,
    blocks: u32,
    cores: Vec<CoreProfile>,
    bins: &[GmBins],
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
    let gm_stall = gm_stall(arch, &schedule, bins);
    LaunchProfile {
        kernel,
        blocks,
        cores,
        schedule,
        cycles: arch.launch_cycles(mixed) + end + gm_stall,
        gm_stall,
        truncated,
    }
}

/// The cycles a launch loses to the chip's shared L2 bandwidth. Each
/// core streams at its own rate on its timeline; here every core's bytes
/// per [`GM_BIN`] cycles, placed at its block's start, add up to what the
/// chip is asked for over time, reads and writes apart. The L2 serves
/// [`ModelArch::chip_l2_bytes_per_cycle`] (reads) and
/// [`ModelArch::chip_l2_write_bytes_per_cycle`] (writes); what exceeds it
/// waits, served in order, and the longest wait at any point is the
/// stall: the cores stream together, so all of them are held up by it. A
/// post-pass over the finished timelines, it depends on how many cores
/// actually stream at once (not on how many were launched) and is the
/// same every run, though the cores run on their own threads. Its limit:
/// a core's later work is shifted by the stall, not re-timed (a core that
/// had slack absorbs none of it).
fn gm_stall(arch: ModelArch, schedule: &[(u64, u32)], bins: &[GmBins]) -> u64 {
    let width = GM_BIN as f64;
    let mut demand: Vec<(f64, f64)> = Vec::new();
    for core in bins {
        let Some(&(start, _)) = schedule.get(core.block as usize) else {
            continue;
        };
        let first = usize::try_from(start / GM_BIN).unwrap_or(usize::MAX);
        // A block starting inside a bin puts each of its bins across two.
        let late = (start % GM_BIN) as f64 / width;
        let need = first.saturating_add(core.bins.len() + 1);
        if demand.len() < need {
            demand.resize(need, (0.0, 0.0));
        }
        for (i, &(read, write)) in core.bins.iter().enumerate() {
            let here = &mut demand[first + i];
            here.0 += read * (1.0 - late);
            here.1 += write * (1.0 - late);
            let next = &mut demand[first + i + 1];
            next.0 += read * late;
            next.1 += write * late;
        }
    }
    let caps = (
        arch.chip_l2_bytes_per_cycle(),
        arch.chip_l2_write_bytes_per_cycle(),
    );
    let (mut queued, mut worst) = ((0.0f64, 0.0f64), 0.0f64);
    for (read, write) in demand {
        queued.0 = (queued.0 + read - caps.0 * width).max(0.0);
        queued.1 = (queued.1 + write - caps.1 * width).max(0.0);
        worst = worst.max(queued.0 / caps.0).max(queued.1 / caps.1);
    }
    // Rounded: sums of fractions of bins must not turn a cap that is just
    // met into a cycle's stall.
    worst.round() as u64
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
            // The modelled cores that ran them: a slot of the schedule (an AI
            // core) and a kind of core on it. Blocks beyond the chip's cores
            // run in waves on the same ones; blocks with nothing to do take
            // no core's time.
            let mut ran: Vec<(u32, u32)> = users
                .iter()
                .filter_map(|c| {
                    let &(_, slot) = self.schedule.get(c.block as usize)?;
                    Some((slot, c.core as u32))
                })
                .collect();
            ran.sort_unstable();
            ran.dedup();
            let cores = ran.len().max(1);
            let busy: u64 = users.iter().map(|c| c.busy[p]).sum();
            *slot = busy as f64 / (cores as f64 * self.cycles as f64);
        }
        out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `cores` cores of one block each, every one asking for `rate` bytes
    /// read per cycle over `bins` bins from the launch's start.
    fn streaming(cores: u32, rate: f64, bins: usize) -> (Vec<(u64, u32)>, Vec<GmBins>) {
        let schedule = (0..cores).map(|b| (0, b)).collect();
        let bins = (0..cores)
            .map(|block| GmBins {
                block,
                core: CoreKind::Vector,
                bins: vec![(rate * GM_BIN as f64, 0.0); bins],
            })
            .collect();
        (schedule, bins)
    }

    #[test]
    fn the_chip_s_l2_binds_only_when_the_cores_ask_for_more_than_it_serves() {
        let arch = ModelArch::AtlasA3;
        // 24 cores at the per-core L2 rate: exactly the chip's, no stall.
        let (schedule, bins) = streaming(24, 110.0, 10);
        assert_eq!(gm_stall(arch, &schedule, &bins), 0);
        // 48 at that rate ask for twice the chip's: what took 10 bins takes 20.
        let (schedule, bins) = streaming(48, 110.0, 10);
        assert_eq!(arch.chip_l2_bytes_per_cycle(), 2640.0);
        assert_eq!(gm_stall(arch, &schedule, &bins), 10 * GM_BIN);
        // Writes have their own cap: 48 cores writing at 86 B/cycle.
        let mut bins = bins;
        for core in &mut bins {
            for b in &mut core.bins {
                *b = (0.0, 86.0 * GM_BIN as f64);
            }
        }
        assert_eq!(gm_stall(arch, &schedule, &bins), 10 * GM_BIN);
        // A burst the L2 drains before the next: the longest wait counts.
        let (schedule, mut bins) = streaming(48, 110.0, 4);
        for core in &mut bins {
            core.bins[1] = (0.0, 0.0);
            core.bins[2] = (0.0, 0.0);
        }
        assert_eq!(gm_stall(arch, &schedule, &bins), GM_BIN);
    }
}
