//! A profile as a Chrome trace-event file (what Perfetto and
//! chrome://tracing load): a process per launch, a thread per core × pipe,
//! instructions as slices named by their call site, flags as flow arrows.

use std::fmt::Write as _;

use super::{PIPES, Profile};

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The profile as Chrome trace-event JSON; times in microseconds of the
/// modelled clock, launches one after another.
pub fn chrome_trace(profile: &Profile) -> String {
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut push = |out: &mut String, event: String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&event);
    };
    let us = |cycles: u64| profile.arch.micros(cycles);
    let mut offset = 0u64;
    let mut flow_id = 0u64;
    for (li, launch) in profile.launches.iter().enumerate() {
        let pid = li + 1;
        push(
            &mut out,
            format!(
                "{{\"ph\":\"M\",\"pid\":{pid},\"name\":\"process_name\",\"args\":{{\"name\":\"{} (modelled, {})\"}}}}",
                escape(launch.kernel),
                escape(profile.arch.name())
            ),
        );
        for core in &launch.cores {
            let start = offset
                + launch
                    .schedule
                    .get(core.block as usize)
                    .map_or(0, |&(s, _)| s);
            let tid = |pipe: u8| {
                u64::from(core.block) * 64 + u64::from(core.core.index()) * 8 + u64::from(pipe)
            };
            for (p, name) in PIPES.iter().enumerate() {
                if core.busy[p] == 0 && !core.slices.iter().any(|s| usize::from(s.pipe) == p) {
                    continue;
                }
                push(
                    &mut out,
                    format!(
                        "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"block {} {} {}\"}}}}",
                        tid(p as u8),
                        core.block,
                        core.core.label(),
                        name
                    ),
                );
            }
            for s in &core.slices {
                let label = match &s.site {
                    Some(site) => format!("{} ({site})", s.name),
                    None => s.name.clone(),
                };
                push(
                    &mut out,
                    format!(
                        "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":{:.4},\"dur\":{:.4},\"name\":\"{}\",\"args\":{{\"bytes\":{},\"modelled\":{}}}}}",
                        tid(s.pipe),
                        us(start + s.start),
                        us(s.end - s.start),
                        escape(&label),
                        s.bytes,
                        s.modelled
                    ),
                );
            }
            for fl in &core.flows {
                flow_id += 1;
                let from = u64::from(core.block) * 64
                    + u64::from(fl.from_core) * 8
                    + u64::from(fl.from_pipe);
                let to =
                    u64::from(core.block) * 64 + u64::from(fl.to_core) * 8 + u64::from(fl.to_pipe);
                push(
                    &mut out,
                    format!(
                        "{{\"ph\":\"s\",\"pid\":{pid},\"tid\":{from},\"ts\":{:.4},\"id\":{flow_id},\"name\":\"flag\",\"cat\":\"flag\"}}",
                        us(start + fl.set)
                    ),
                );
                push(
                    &mut out,
                    format!(
                        "{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{pid},\"tid\":{to},\"ts\":{:.4},\"id\":{flow_id},\"name\":\"flag\",\"cat\":\"flag\"}}",
                        us(start + fl.wait)
                    ),
                );
            }
        }
        offset += launch.cycles;
    }
    out.push_str("\n]}\n");
    out
}
