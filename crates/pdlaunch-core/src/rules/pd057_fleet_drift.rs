//! PD057: a running server drifted from its deployment, or runs another release than its peers.

use super::fleet::{Fleet, Probed};
use super::{Check, Context, Finding, Rule, Severity};
use crate::effective::ServerView;
use crate::plan::Origin;
use crate::release::Release;

/// Clusters drift after launch: a pod restarted from another image, one replica patched by hand,
/// a rolling update half done, an autoscaled group started from an older template. The probe
/// compares what each server reports with what the deployment renders for its role, and the
/// release each reports with the deployment's (or, without one, with the other servers').
pub static RULE: Rule = Rule {
    code: "PD057",
    name: "fleet-drift",
    severity: Severity::Warning,
    summary: "a running server uses other values than its deployment renders, or another SGLang release than its peers",
    explanation: "A deployment checked before launch says nothing of the fleet a week later: a restarted pod may \
        run another image, a replica may have been started by hand with other flags, a rolling update may \
        have stopped halfway. The servers then disagree with the deployment, and sooner or later with each \
        other: a page-size or KV-dtype mismatch comes back as a decode crash at the first request that pairs \
        the two, a mixed release as transfers that fail on a changed wire format or bootstrap protocol.",
    sglang_errors: &[],
    fix: "Restart the drifted server with the command `pdlaunch render` writes for it; if the running value is \
        the one wanted, change the deployment and re-render, so the next restart keeps it.",
    check: Check::Fleet(check),
};

/// Options each process of a side has its own value of (addresses, ranks, GPUs): not drift.
const PER_PROCESS: &[&str] = &[
    "host",
    "port",
    "node_rank",
    "dist_init_addr",
    "base_gpu_id",
    "disaggregation_bootstrap_port",
    "nccl_port",
];

fn check(fleet: &Fleet) -> Vec<Finding> {
    let mut out = releases(fleet);
    let Some((file, planned)) = &fleet.planned else { return out };
    for (p, live) in fleet.answered() {
        let Some(role) = live.role else { continue };
        let port = live.port();
        let Some(want) =
            planned.role(role).find(|s| s.port() == port).or_else(|| planned.role(role).next())
        else {
            continue;
        };
        out.extend(values(file, planned, want, p, live, fleet));
    }
    out
}

/// The value of `dest` to compare: the effective page size and KV-cache dtype (a deployment's 16
/// that SGLang snaps to 64 is no drift), else the text SGLang starts from.
fn compared(s: &ServerView, ctx: &Context, dest: &str) -> Option<String> {
    match dest {
        "page_size" => Some(s.page_size(&ctx.model).value.to_string()),
        "kv_cache_dtype" => Some(s.kv_cache_dtype(&ctx.model).value),
        _ => s.value(dest),
    }
}

/// Two values' texts name the same value (`0.9` and `0.90`, `True` and `true`).
fn same(a: &Option<String>, b: &Option<String>) -> bool {
    match (a.as_deref(), b.as_deref()) {
        (Some(a), Some(b)) if a == b || a.eq_ignore_ascii_case(b) => true,
        (Some(a), Some(b)) => match (crate::float::parse(a), crate::float::parse(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
        (None, None) => true,
        (Some(v), None) | (None, Some(v)) => v.is_empty() || v == "false" || v == "None",
    }
}

fn values(
    file: &str,
    planned: &Context,
    want: &ServerView,
    p: &Probed,
    live: &ServerView,
    fleet: &Fleet,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut dests: Vec<&str> = Vec::new();
    for u in &want.parsed.uses {
        if !PER_PROCESS.contains(&u.dest) && !dests.contains(&u.dest) {
            dests.push(u.dest);
        }
    }
    for dest in dests {
        let (w, l) = (compared(want, planned, dest), compared(live, &fleet.ctx, dest));
        if same(&w, &l) {
            continue;
        }
        let flag = want.spec().by_dest(dest).map_or_else(|| dest.to_owned(), |f| f.flags[0].clone());
        let show = |v: &Option<String>| v.clone().map_or_else(|| "nothing".to_owned(), |v| format!("`{v}`"));
        let field = match want.origin(dest) {
            Some(Origin::Field { path }) => Some(path.clone()),
            _ => None,
        };
        let at = field.as_deref().map(|f| format!(" (`{f}`)")).unwrap_or_default();
        let message = format!(
            "the {} at {} runs {flag} {} where {file} renders {}{at}",
            live.role.map_or("server", |r| r.as_str()),
            p.url,
            show(&l),
            show(&w),
        );
        let fix = match &field {
            Some(f) => format!(
                "restart {} with the command `pdlaunch render {file}` writes for it; if {} is the value wanted, \
                 set `{f}` to it in {file} and re-render",
                p.url,
                show(&l)
            ),
            None => format!("restart {} with the command `pdlaunch render {file}` writes for it", p.url),
        };
        let mut finding = Finding::new(&RULE, message, fix).at(live, dest);
        if let Some(o) = want.origin(dest) {
            finding = finding.at_origin(file.to_owned(), Some(&flag), o.clone());
        }
        out.push(finding);
    }
    out
}

/// Servers that report another release than the deployment targets or, without a deployment,
/// than most of the fleet runs.
fn releases(fleet: &Fleet) -> Vec<Finding> {
    let key = |v: &str| Release::named(v).map_or_else(|| v.trim_start_matches('v').to_owned(), |r| r.to_string());
    let reported: Vec<(&Probed, String)> =
        fleet.servers.iter().filter_map(|p| p.version.as_deref().map(|v| (p, key(v)))).collect();
    let (expected, from) = match &fleet.planned {
        Some((file, ctx)) => (ctx.release.to_string(), format!("{file} targets")),
        None => {
            let mut counts: Vec<(&str, usize)> = Vec::new();
            for (_, v) in &reported {
                match counts.iter_mut().find(|(k, _)| k == v) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((v, 1)),
                }
            }
            // The most common release, the first seen among equals.
            let Some(&(top, n)) = counts.iter().rev().max_by_key(|(_, n)| *n) else { return Vec::new() };
            if counts.len() < 2 {
                return Vec::new();
            }
            (top.to_owned(), format!("{n} of the {} servers run", reported.len()))
        }
    };
    reported
        .into_iter()
        .filter(|(_, v)| *v != expected)
        .map(|(p, v)| {
            let message = format!("the server at {} runs SGLang {v} where {from} {expected}", p.url);
            let fix = format!(
                "restart {} from the image of SGLang {expected}, so that every prefill and decode runs one release",
                p.url
            );
            Finding::new(&RULE, message, fix).at_origin(
                p.url.clone(),
                None,
                Origin::Field { path: "server_info.version".into() },
            )
        })
        .collect()
}
