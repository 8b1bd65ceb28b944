//! A profile as a Chrome trace-event file (what Perfetto and
//! chrome://tracing load): a process per launch, a thread per core × pipe,
//! instructions as slices named by their call site, flags as flow arrows.

use std::fmt::Write as _;

use super::{PIPES, Profile, memory_names};

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
                    None => s.name.to_string(),
                };
                push(
                    &mut out,
                    format!(
                        "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":{:.4},\"dur\":{:.4},\"name\":\"{}\",\"args\":{{\"bytes\":{},\"modelled\":{},\"reads\":\"{}\",\"writes\":\"{}\"}}}}",
                        tid(s.pipe),
                        us(start + s.start),
                        us(s.end - s.start),
                        escape(&label),
                        s.bytes,
                        s.modelled,
                        memory_names(s.reads).join(" "),
                        memory_names(s.writes).join(" ")
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

/// Pipe colours of the SVG swimlanes (S V M MTE1 MTE2 MTE3 ALL FIX).
const COLOURS: [&str; 8] = [
    "#8c8c8c", "#2e7d32", "#c62828", "#ef6c00", "#1565c0", "#6a1b9a", "#000000", "#00838f",
];

/// The profile as an SVG swimlane picture: one lane per block, core and
/// pipe that did anything, time left to right, instructions as bars
/// coloured by pipe (bars closer than a pixel are drawn as one). Launches
/// follow one another, as in [`chrome_trace`].
pub fn svg(profile: &Profile) -> String {
    const WIDTH: f64 = 1400.0;
    const LEFT: f64 = 190.0;
    const LANE: f64 = 14.0;
    const TOP: f64 = 48.0;
    let total = profile.cycles().max(1) as f64;
    let scale = WIDTH / total;
    // (label, colour, bars as pixel spans)
    type Lane = (String, &'static str, Vec<(f64, f64)>);
    let mut lanes: Vec<Lane> = Vec::new();
    let mut offset = 0u64;
    for launch in &profile.launches {
        for core in &launch.cores {
            let start = offset
                + launch
                    .schedule
                    .get(core.block as usize)
                    .map_or(0, |&(s, _)| s);
            for (p, name) in PIPES.iter().enumerate() {
                let mut spans: Vec<(u64, u64)> = core
                    .slices
                    .iter()
                    .filter(|s| usize::from(s.pipe) == p)
                    .map(|s| (start + s.start, start + s.end))
                    .collect();
                if spans.is_empty() {
                    continue;
                }
                spans.sort_unstable();
                let mut bars: Vec<(f64, f64)> = Vec::new();
                for (a, b) in spans {
                    let (x0, x1) = (a as f64 * scale, b as f64 * scale);
                    match bars.last_mut() {
                        Some(last) if x0 - last.1 < 1.0 => last.1 = last.1.max(x1),
                        _ => bars.push((x0, x1)),
                    }
                }
                lanes.push((
                    format!(
                        "{} b{} {} {name}",
                        launch.kernel,
                        core.block,
                        core.core.label()
                    ),
                    COLOURS[p],
                    bars,
                ));
            }
        }
        offset += launch.cycles;
    }
    let height = TOP + LANE * lanes.len() as f64 + 40.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"10\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"8\" y=\"18\" font-size=\"13\">Modelled timeline on {} (a model, not a measurement): {:.2} us</text>\n",
        LEFT + WIDTH + 20.0,
        escape_xml(profile.arch.name()),
        profile.micros()
    );
    // A time axis in microseconds.
    let micros = profile.micros();
    let step = nice_step(micros / 8.0);
    let mut t = 0.0;
    while t <= micros + 1e-9 && step > 0.0 {
        let x = LEFT + t / micros.max(1e-12) * WIDTH;
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{t:.1} us</text>",
            TOP - 8.0,
            height - 30.0,
            TOP - 12.0
        );
        t += step;
    }
    for (i, (label, colour, bars)) in lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + LANE * 0.75,
            escape_xml(label)
        );
        for (x0, x1) in bars {
            let _ = writeln!(
                out,
                "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{colour}\"/>",
                LEFT + x0,
                y + 1.0,
                (x1 - x0).max(0.5),
                LANE - 2.0
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// 1, 2 or 5 times a power of ten, near `x`.
fn nice_step(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let p = 10f64.powf(x.log10().floor());
    let m = x / p;
    p * if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else {
        5.0
    }
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
