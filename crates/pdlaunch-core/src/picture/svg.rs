//! The SVG writer: the layout the module doc describes, in integer coordinates.

use std::fmt::Write;

use super::{codes, shorten, worst, End, Graph, InstanceBox, LinkKind, Mark, ProcessBox};
use crate::deployment::Role;
use crate::rules::Severity;

const PAD: i64 = 16;
const HEADER_H: i64 = 70;
/// Left edge and width of the router, prefill and decode columns.
const COL_X: [i64; 3] = [PAD, 296, 816];
const COL_W: [i64; 3] = [220, 280, 280];
const HEAD_H: i64 = 24;
const ROW_H: i64 = 40;
const MORE_NODES_H: i64 = 20;
const GAP: i64 = 14;
const MORE_H: i64 = 46;
const LANE: i64 = 8;
const LEGEND_H: i64 = 40;
/// Characters of a finding's message in a hover text.
const MESSAGE_CHARS: usize = 300;
/// KV links that each carry their label; over this, one caption says what they share.
const KV_LABELS: usize = 4;
/// Characters of a value that fit a row (11 px text).
const ROW_CHARS: usize = 40;

const INK: &str = "#37474f";
const HTTP: &str = "#1565c0";
const KV: &str = "#2e7d32";
const BOOT: &str = "#78909c";

fn colour(s: Severity) -> &'static str {
    match s {
        Severity::Error => "#d32f2f",
        Severity::Warning => "#ed6c02",
        Severity::Note => "#0277bd",
    }
}

/// Text for XML character data and attribute values: the five special characters as entities,
/// and characters XML 1.0 cannot hold (control characters other than tab and newlines) as U+FFFD.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Where a drawn element sits.
#[derive(Clone, Copy, Default)]
struct Rect {
    x: i64,
    y: i64,
    w: i64,
    h: i64,
}

/// The position of every box, computed before anything is written (links go under the boxes).
struct Layout {
    router: Option<Rect>,
    instances: Vec<Rect>,
    /// The y of each instance's node-0 row centre, where its links attach.
    anchors: Vec<i64>,
    more: Vec<Rect>,
    /// Lane index of each router → decode link (by link index).
    lanes: Vec<Option<i64>>,
    width: i64,
    height: i64,
}

fn column(role: Option<Role>) -> usize {
    match role {
        Some(Role::Prefill) => 1,
        Some(Role::Decode) => 2,
        None => 0,
    }
}

fn instance_height(b: &InstanceBox) -> i64 {
    HEAD_H + ROW_H * b.processes.len() as i64 + if b.more_nodes > 0 { MORE_NODES_H } else { 0 } + 6
}

fn layout(g: &Graph) -> Layout {
    let mut lanes = Vec::with_capacity(g.links.len());
    let mut n_lanes = 0;
    for l in &g.links {
        let to_decode = l.kind == LinkKind::Http
            && match l.to {
                End::Instance(i) => g.instances[i].role == Some(Role::Decode),
                End::More(m) => g.more[m].role == Some(Role::Decode),
                End::Router => false,
            };
        lanes.push(to_decode.then(|| {
            n_lanes += 1;
            n_lanes - 1
        }));
    }
    let top = HEADER_H + 12 + LANE * n_lanes;
    let mut y = [top; 3];
    let router = g.router.as_ref().map(|r| {
        let rect = Rect { x: COL_X[0], y: top, w: COL_W[0], h: 46 + 16 * r.unmatched.len() as i64 };
        y[0] += rect.h + GAP;
        rect
    });
    let mut instances = Vec::with_capacity(g.instances.len());
    let mut anchors = Vec::with_capacity(g.instances.len());
    for b in &g.instances {
        let c = column(b.role);
        let rect = Rect { x: COL_X[c], y: y[c], w: COL_W[c], h: instance_height(b) };
        y[c] += rect.h + GAP;
        anchors.push(rect.y + HEAD_H + (ROW_H - 4) / 2);
        instances.push(rect);
    }
    let more = g
        .more
        .iter()
        .map(|m| {
            let c = column(m.role);
            let rect = Rect { x: COL_X[c], y: y[c], w: COL_W[c], h: MORE_H };
            y[c] += rect.h + GAP;
            rect
        })
        .collect();
    let bottom = y.into_iter().max().unwrap_or(top);
    Layout {
        router,
        instances,
        anchors,
        more,
        lanes,
        width: COL_X[2] + COL_W[2] + PAD + 12 + LANE * n_lanes,
        height: bottom + LEGEND_H,
    }
}

/// The picture as a standalone SVG document.
pub fn svg(g: &Graph) -> String {
    let lay = layout(g);
    let mut s = String::with_capacity(4096 + 1500 * (g.instances.len() + g.links.len()));
    let (w, h) = (lay.width, lay.height);
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\" fill=\"{INK}\">"
    );
    let _ = writeln!(s, "<!-- Generated by pdlaunch {} -->", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "<title>{}</title>", esc(&format!("{}: {}", g.title, g.subtitle)));
    s.push_str("<defs>\n");
    for (name, c) in [
        ("http", HTTP),
        ("kv", KV),
        ("boot", BOOT),
        ("error", colour(Severity::Error)),
        ("warning", colour(Severity::Warning)),
        ("note", colour(Severity::Note)),
    ] {
        let _ = writeln!(
            s,
            "<marker id=\"arrow-{name}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"9\" \
             markerHeight=\"9\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"{c}\"/></marker>"
        );
    }
    s.push_str("</defs>\n");
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>");
    header(&mut s, g);
    s.push_str("<g class=\"links\">\n");
    kv_caption(&mut s, g, &lay);
    for (k, _) in g.links.iter().enumerate() {
        link(&mut s, g, &lay, k);
    }
    s.push_str("</g>\n");
    if let (Some(r), Some(rect)) = (&g.router, lay.router) {
        let mut lines = vec![(format!("listens on {}", r.listen), false)];
        // `--decode http://h:1` reads `no decode at h:1`, to fit the box.
        lines.extend(r.unmatched.iter().map(|u| {
            let (flag, url) = u.split_once(" http://").unwrap_or(("", u));
            (format!("no {} at {url}", flag.trim_start_matches('-')), true)
        }));
        let mut title = format!("router\nlistens on {}", r.listen);
        for u in &r.unmatched {
            let _ = write!(title, "\n{u}: reaches no server of this picture");
        }
        simple_box(&mut s, "router", "router", rect, "#fff8e1", "router", &lines, &title, &g.findings, &r.findings);
    }
    for (i, b) in g.instances.iter().enumerate() {
        instance(&mut s, g, b, lay.instances[i]);
    }
    for (m, more) in g.more.iter().enumerate() {
        let fill = if more.role == Some(Role::Decode) { "#e8f5e9" } else { "#e3f2fd" };
        let title = format!("{}: drawn as a count to keep the picture readable", more.text());
        let lines = [(format!("{} processes, not drawn", more.processes), false)];
        simple_box(
            &mut s,
            "more",
            &more.id,
            lay.more[m],
            fill,
            &more.heading(),
            &lines,
            &title,
            &g.findings,
            &more.findings,
        );
    }
    legend(&mut s, h);
    s.push_str("</svg>\n");
    s
}

/// The findings' hover lines: `PD001 error: message`.
fn finding_lines(marks: &[Mark], findings: &[usize]) -> String {
    let mut out = String::new();
    for &i in findings {
        let m = &marks[i];
        // A finding may list every server; the hover keeps its start, `check` prints the rest.
        let _ = write!(out, "\n{} {}: {}", m.code, m.severity.as_str(), shorten(&m.message, MESSAGE_CHARS));
    }
    out
}

/// ` data-findings="..."` when there are findings.
fn data_findings(marks: &[Mark], findings: &[usize]) -> String {
    if findings.is_empty() {
        String::new()
    } else {
        format!(" data-findings=\"{}\"", esc(&codes(marks, findings)))
    }
}

/// A badge with the codes, its right edge at `right`, top at `y`.
fn badge(s: &mut String, marks: &[Mark], findings: &[usize], right: i64, y: i64) {
    let Some(sev) = worst(marks, findings) else { return };
    let text = codes(marks, findings);
    let w = 10 + 7 * text.chars().count() as i64;
    let _ = writeln!(
        s,
        "<g class=\"badge\"><rect x=\"{}\" y=\"{y}\" width=\"{w}\" height=\"16\" rx=\"8\" fill=\"{}\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" font-weight=\"bold\" fill=\"#ffffff\" text-anchor=\"middle\">{}</text></g>",
        right - w,
        colour(sev),
        right - w / 2,
        y + 12,
        esc(&text)
    );
}

fn header(s: &mut String, g: &Graph) {
    let _ = writeln!(s, "<g class=\"header\"{}>", data_findings(&g.findings, &g.unplaced));
    let _ = writeln!(
        s,
        "<text x=\"{PAD}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>",
        esc(&shorten(&g.title, 80))
    );
    let _ = writeln!(s, "<text x=\"{PAD}\" y=\"42\">{}</text>", esc(&shorten(&g.subtitle, 140)));
    if !g.unplaced.is_empty() {
        let title = format!("Findings about the whole deployment:{}", finding_lines(&g.findings, &g.unplaced));
        let _ = writeln!(s, "<title>{}</title>", esc(&title));
        let _ = writeln!(s, "<text x=\"{PAD}\" y=\"62\">about the whole deployment:</text>");
        let text = codes(&g.findings, &g.unplaced);
        badge(s, &g.findings, &g.unplaced, PAD + 170 + 10 + 7 * text.chars().count() as i64, 50);
    }
    s.push_str("</g>\n");
}

/// Characters of 11 px text that fit the width of `r`.
fn box_chars(r: Rect) -> usize {
    usize::try_from((r.w - 20) / 7).unwrap_or(0)
}

/// A box with a heading and plain lines: the router and the collapsed instances.
#[allow(clippy::too_many_arguments)]
fn simple_box(
    s: &mut String,
    class: &str,
    id: &str,
    r: Rect,
    fill: &str,
    heading: &str,
    lines: &[(String, bool)],
    title: &str,
    marks: &[Mark],
    findings: &[usize],
) {
    let (stroke, width) = match worst(marks, findings) {
        Some(sev) => (colour(sev), 3),
        None => (INK, 1),
    };
    let _ = writeln!(s, "<g class=\"process {class}\" id=\"{}\"{}>", esc(id), data_findings(marks, findings));
    let _ = writeln!(s, "<title>{}</title>", esc(&format!("{title}{}", finding_lines(marks, findings))));
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>",
        r.x, r.y, r.w, r.h
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>",
        r.x + 10,
        r.y + 18,
        esc(&shorten(heading, box_chars(r)))
    );
    for (k, (line, bad)) in lines.iter().enumerate() {
        let fill = if *bad { colour(Severity::Error) } else { INK };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"{fill}\">{}</text>",
            r.x + 10,
            r.y + 36 + 16 * k as i64,
            esc(&shorten(line, usize::try_from((r.w - 20) / 6).unwrap_or(0)))
        );
    }
    badge(s, marks, findings, r.x + r.w - 4, r.y - 8);
    s.push_str("</g>\n");
}

fn instance(s: &mut String, g: &Graph, b: &InstanceBox, r: Rect) {
    let fill = match b.role {
        Some(Role::Prefill) => "#e3f2fd",
        Some(Role::Decode) => "#e8f5e9",
        None => "#f5f5f5",
    };
    let (stroke, width) = match worst(&g.findings, &b.findings) {
        Some(sev) => (colour(sev), 3),
        None => (INK, 1),
    };
    let role = b.role.map_or("unknown", Role::as_str);
    let _ = writeln!(
        s,
        "<g class=\"instance\" id=\"{}\" data-role=\"{role}\"{}>",
        esc(&b.id),
        data_findings(&g.findings, &b.findings)
    );
    let mut title = b.label.clone();
    if let Some(be) = &b.backend {
        let _ = write!(title, "\ntransfer backend {be}");
    }
    if !b.ib_devices.is_empty() {
        let _ = write!(title, "\nIB devices {}", b.ib_devices.join(" "));
    }
    if b.more_nodes > 0 {
        let _ = write!(title, "\n{} more nodes not drawn", b.more_nodes);
    }
    let _ = writeln!(s, "<title>{}</title>", esc(&format!("{title}{}", finding_lines(&g.findings, &b.findings))));
    let _ = writeln!(
        s,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>",
        r.x, r.y, r.w, r.h
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>",
        r.x + 10,
        r.y + 16,
        esc(&shorten(&b.label, 42))
    );
    for (n, p) in b.processes.iter().enumerate() {
        process(s, g, p, Rect { x: r.x + 6, y: r.y + HEAD_H + ROW_H * n as i64, w: r.w - 12, h: ROW_H - 4 });
    }
    if b.more_nodes > 0 {
        let y = r.y + HEAD_H + ROW_H * b.processes.len() as i64 + 12;
        let s_ = if b.more_nodes == 1 { "" } else { "s" };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{y}\" font-style=\"italic\">+ {} more node{s_}</text>",
            r.x + 14,
            b.more_nodes
        );
    }
    badge(s, &g.findings, &b.findings, r.x + r.w - 4, r.y - 8);
    s.push_str("</g>\n");
}

fn process(s: &mut String, g: &Graph, p: &ProcessBox, r: Rect) {
    let worst_sev = worst(&g.findings, &p.findings);
    let (stroke, width) = match worst_sev {
        Some(sev) => (colour(sev), 3),
        None => ("#90a4ae", 1),
    };
    let _ = writeln!(s, "<g class=\"process\" id=\"{}\"{}>", esc(&p.id), data_findings(&g.findings, &p.findings));
    let mut title =
        format!("{}\nhost {}\n{}", p.label, if p.host.is_empty() { "unknown" } else { &p.host }, p.gpu_text());
    let ports = p.port_text();
    if !ports.is_empty() {
        let _ = write!(title, "\nports {ports}");
    }
    if let Some(d) = &p.dist_init {
        let _ = write!(title, "\n--dist-init-addr {d}");
    }
    if let Some(ib) = &p.ib_device {
        let _ = write!(title, "\nIB devices {ib}");
    }
    let _ = writeln!(s, "<title>{}</title>", esc(&format!("{title}{}", finding_lines(&g.findings, &p.findings))));
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"#ffffff\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>",
        r.x, r.y, r.w, r.h
    );
    let host = if p.host.is_empty() { "host unknown" } else { &p.host };
    let line1 = if p.node.1 > 1 { format!("node {} · {host}", p.node.0) } else { host.to_owned() };
    let line1 = if p.label.contains(['[', ']']) { line1 } else { format!("{} · {line1}", p.label) };
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">{}</text>", r.x + 8, r.y + 15, esc(&shorten(&line1, ROW_CHARS)));
    let flagged = colour(Severity::Error);
    let _ = writeln!(
        s,
        "<text class=\"gpus\" x=\"{}\" y=\"{}\" font-weight=\"bold\" fill=\"{}\"{}>{}</text>",
        r.x + 8,
        r.y + 30,
        if p.gpus_flagged { flagged } else { INK },
        if p.gpus_flagged { " data-flagged=\"true\"" } else { "" },
        esc(&p.gpu_text())
    );
    if !ports.is_empty() {
        // After the GPU range, which is bold and as long as its numbers.
        let gpu_w = 7 * p.gpu_text().chars().count() as i64;
        let _ = writeln!(
            s,
            "<text class=\"ports\" x=\"{}\" y=\"{}\" fill=\"{}\"{}>{}</text>",
            r.x + 8 + gpu_w.max(56) + 14,
            r.y + 30,
            if p.ports_flagged { flagged } else { INK },
            if p.ports_flagged { " data-flagged=\"true\"" } else { "" },
            esc(&ports)
        );
    }
    badge(s, &g.findings, &p.findings, r.x + r.w - 3, r.y + 2);
    s.push_str("</g>\n");
}

/// Where a link's end attaches: (x, y) on the box's left or right edge.
fn attach(lay: &Layout, e: End, left: bool) -> (i64, i64) {
    let (rect, y) = match e {
        End::Router => {
            let r = lay.router.unwrap_or_default();
            (r, r.y + 18)
        }
        End::Instance(i) => (lay.instances[i], lay.anchors[i]),
        End::More(m) => (lay.more[m], lay.more[m].y + MORE_H / 2),
    };
    (if left { rect.x } else { rect.x + rect.w }, y)
}

fn link(s: &mut String, g: &Graph, lay: &Layout, k: usize) {
    let l = &g.links[k];
    let sev = worst(&g.findings, &l.findings);
    let (class, base) = match l.kind {
        LinkKind::Http => ("http", HTTP),
        LinkKind::Kv => ("kv", KV),
    };
    let (stroke, width, marker) = match sev {
        Some(sev) => (colour(sev), 3, sev.as_str()),
        None => (base, if l.kind == LinkKind::Kv { 2 } else { 1 }, class),
    };
    let _ = writeln!(s, "<g class=\"link {class}\" id=\"{}\"{}>", esc(&l.id), data_findings(&g.findings, &l.findings));
    let _ = writeln!(s, "<title>{}</title>", esc(&format!("{}{}", l.detail, finding_lines(&g.findings, &l.findings))));
    let path = |s: &mut String, d: &str, stroke: &str, width: i64, marker: &str, dash: &str| {
        let _ = writeln!(
            s,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dash} marker-end=\"url(#arrow-{marker})\"/>"
        );
    };
    // The label's anchor and the badge's place.
    let (mid_x, mid_y);
    match (l.kind, lay.lanes[k]) {
        (LinkKind::Http, Some(lane)) => {
            // Up from the router's top, along a lane above the boxes, down the right of the decode
            // column and into the decode from the right.
            let r = lay.router.unwrap_or_default();
            let (tx, ty) = attach(lay, l.to, false);
            let x0 = r.x + 24 + 10 * lane;
            let ly = HEADER_H + 8 + LANE * lane;
            let rx = COL_X[2] + COL_W[2] + 12 + LANE * lane;
            let d = format!("M{x0} {}V{ly}H{rx}V{ty}H{}", r.y, tx + 2);
            path(s, &d, stroke, width, marker, "");
            mid_x = (COL_X[1] + COL_X[2]) / 2 + 40 * lane;
            mid_y = ly;
        }
        (LinkKind::Http, None) => {
            let (x1, y1) = attach(lay, l.from, false);
            let (x2, y2) = attach(lay, l.to, true);
            path(s, &format!("M{x1} {y1}L{} {y2}", x2 - 2), stroke, width, marker, "");
            mid_x = (x1 + x2) / 2;
            mid_y = (y1 + y2) / 2;
        }
        (LinkKind::Kv, _) => {
            let (x1, y1) = attach(lay, l.from, false);
            let (x2, y2) = attach(lay, l.to, true);
            path(s, &format!("M{x1} {}L{} {}", y1 - 3, x2 - 2, y2 - 3), stroke, width, marker, "");
            let boot = if sev.is_some() { stroke } else { BOOT };
            let boot_marker = if sev.is_some() { marker } else { "boot" };
            path(
                s,
                &format!("M{x2} {}L{} {}", y2 + 4, x1 + 2, y1 + 4),
                boot,
                1,
                boot_marker,
                " stroke-dasharray=\"5 4\"",
            );
            // Labels spread along the links so that neighbours do not sit on one another.
            let n = g.links.iter().filter(|x| x.kind == LinkKind::Kv).count() as i64;
            let j = g.links[..k].iter().filter(|x| x.kind == LinkKind::Kv).count() as i64;
            let (num, den) = if n <= 1 { (1, 2) } else { (1 + j % 3, 4) };
            mid_x = x1 + (x2 - x1) * num / den;
            mid_y = y1 + (y2 - y1) * num / den;
        }
    }
    let kv_links = g.links.iter().filter(|x| x.kind == LinkKind::Kv).count();
    let show_label = match l.kind {
        LinkKind::Kv => kv_links <= KV_LABELS,
        LinkKind::Http => false,
    };
    if show_label {
        let text = shorten(&l.label, 34);
        let w = 8 + 6 * text.chars().count() as i64;
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{w}\" height=\"14\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.85\"/>\
             <text x=\"{mid_x}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"{stroke}\">{}</text>",
            mid_x - w / 2,
            mid_y - 19,
            mid_y - 8,
            esc(&text)
        );
    }
    let w = 10 + 7 * codes(&g.findings, &l.findings).chars().count() as i64;
    badge(s, &g.findings, &l.findings, mid_x + w / 2, mid_y + 6);
    s.push_str("</g>\n");
}

/// Over more KV links than can carry a label each, one caption above the gap between the prefill
/// and decode columns: their common backend and IB devices, or where to find them.
fn kv_caption(s: &mut String, g: &Graph, lay: &Layout) {
    let mut kv = g.links.iter().filter(|l| l.kind == LinkKind::Kv);
    let Some(first) = kv.next() else { return };
    if g.links.iter().filter(|l| l.kind == LinkKind::Kv).count() <= KV_LABELS {
        return;
    }
    let text = if kv.all(|l| l.label == first.label) {
        format!("every pair: {}", first.label)
    } else {
        "pairs differ: hover a link".to_owned()
    };
    let top = lay.instances.iter().map(|r| r.y).min().unwrap_or(HEADER_H);
    let _ = writeln!(
        s,
        "<text class=\"caption\" x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"{KV}\">{}</text>",
        (COL_X[1] + COL_W[1] + COL_X[2]) / 2,
        top + 8,
        esc(&shorten(&text, 40))
    );
}

fn legend(s: &mut String, height: i64) {
    let y = height - 18;
    let _ = writeln!(
        s,
        "<g class=\"legend\" font-size=\"10\">\
         <path d=\"M{PAD} {y}h30\" stroke=\"{HTTP}\" marker-end=\"url(#arrow-http)\"/>\
         <text x=\"{}\" y=\"{}\">router sends requests</text>\
         <path d=\"M{} {y}h30\" stroke=\"{KV}\" stroke-width=\"2\" marker-end=\"url(#arrow-kv)\"/>\
         <text x=\"{}\" y=\"{}\">KV cache prefill → decode (backend · IB devices)</text>\
         <path d=\"M{} {y}h30\" stroke=\"{BOOT}\" stroke-dasharray=\"5 4\" marker-end=\"url(#arrow-boot)\"/>\
         <text x=\"{}\" y=\"{}\">decode asks the prefill's bootstrap server</text>\
         <rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"none\" stroke=\"{}\" stroke-width=\"3\"/>\
         <text x=\"{}\" y=\"{}\">a finding concerns it (hover for details)</text></g>",
        PAD + 36,
        y + 4,
        PAD + 170,
        PAD + 206,
        y + 4,
        PAD + 470,
        PAD + 506,
        y + 4,
        PAD + 750,
        y - 6,
        colour(Severity::Error),
        PAD + 768,
        y + 4,
    );
}
