//! The rules on a group: the registry's checks of the servers' and router's views (worded in
//! flags, not deployment fields), less the findings that read a value only known at run time,
//! then the checks of the written material, each finding placed in the files.

use std::borrow::Cow;

use super::launch::{self, Launch};
use super::{group, place, terms, unknown, Group, LintFinding};
use crate::effective::ServerView;
use crate::read::source::SourceFile;
use crate::release::RouterRelease;
use crate::rules::material::{Material, WrittenRouter};
use crate::rules::{self, Context, Finding, RouterView};

/// Runs the registry on a group, lending it the group's views (no copies).
pub(super) fn run_rules(group: &mut Group) -> Vec<Finding> {
    let servers: Vec<ServerView> = group
        .servers
        .iter_mut()
        .map(|s| std::mem::replace(&mut s.view, group::placeholder_view(group.release)))
        .collect();
    let router = group.router.as_mut().map(|r| {
        let release = r.view.release;
        std::mem::replace(&mut r.view, placeholder_router(release))
    });
    let ctx = Context {
        servers,
        router,
        model: group.model.clone(),
        release: group.release,
        deployment: None,
        dropped: Vec::new(),
    };
    let mut findings = rules::run(&ctx);
    findings.extend(if_one_machine(&ctx, &findings));
    for f in &mut findings {
        if let Cow::Owned(m) = terms::in_flag_terms(&f.message) {
            f.message = m;
        }
        if let Cow::Owned(fix) = terms::in_flag_terms(&f.fix) {
            f.fix = fix;
        }
    }
    let Context { servers, router, .. } = ctx;
    for (s, v) in group.servers.iter_mut().zip(servers) {
        s.view = v;
    }
    if let (Some(r), Some(v)) = (group.router.as_mut(), router) {
        r.view = v;
    }
    findings
}

/// The port and GPU collisions (PD019, PD020) of servers whose equal host is a per-machine
/// placeholder, were they on one machine, as notes that say what they assume: the material does
/// not say that they share one.
fn if_one_machine(ctx: &Context, found: &[Finding]) -> Vec<Finding> {
    if ctx.servers.iter().all(|s| !s.placeholder_assumed) {
        return Vec::new();
    }
    let together = Context {
        servers: ctx
            .servers
            .iter()
            .map(|s| {
                let mut s = s.clone();
                if s.placeholder_assumed {
                    s.placeholder_machine = None;
                }
                s
            })
            .collect(),
        router: ctx.router.clone(),
        model: ctx.model.clone(),
        release: ctx.release,
        deployment: None,
        dropped: Vec::new(),
    };
    let mut out = Vec::new();
    for rule in rules::RULES.iter().filter(|r| matches!(r.code, "PD019" | "PD020")) {
        let rules::Check::Deployment(check) = rule.check else { continue };
        for mut f in check(&together) {
            let same = |g: &Finding| g.code == f.code && g.locations == f.locations;
            if found.iter().any(same) || out.iter().any(same) {
                continue;
            }
            // The nodes of one server never share a machine: nothing to say of them.
            let of = |l: &rules::Location| ctx.servers.iter().find(|s| s.label == l.process);
            let servers: Vec<&ServerView> = f.locations.iter().filter_map(of).collect();
            let one_server = servers.windows(2).all(|w| (w[0].role, w[0].instance) == (w[1].role, w[1].instance))
                && servers.windows(2).any(|w| w[0].node != w[1].node);
            if one_server {
                continue;
            }
            let host = servers.first().map(|s| s.host.clone()).unwrap_or_default();
            f.message = format!(
                "if these run on one machine (`{host}` is a placeholder each machine fills in; the material does \
                 not say they share one): {}",
                f.message
            );
            f.severity = rules::Severity::Note;
            f.sglang_error = None;
            out.push(f);
        }
    }
    out
}

fn placeholder_router(release: RouterRelease) -> RouterView {
    RouterView {
        host: String::new(),
        port: 0,
        prefills: Vec::new(),
        decodes: Vec::new(),
        tokens: Vec::new(),
        parsed: Default::default(),
        origins: Vec::new(),
        release,
    }
}

/// The findings of a group at their places: those of the views' checks, less those that read a
/// value only known at run time, then those of the material's checks, merged where they are at
/// the same places.
pub(super) fn lint_group(
    g: usize,
    group: &Group,
    mut findings: Vec<Finding>,
    files: &[SourceFile],
    launches: &[Launch],
    services: &[launch::Service],
) -> Vec<LintFinding> {
    let unknown = unknown::withdraw(group, files, &mut findings);
    let material = Material {
        files,
        release: group.release,
        version: group.version.as_deref(),
        servers: group.servers.iter().map(|s| s.written(launches)).collect(),
        router: group.router.as_ref().map(|r| WrittenRouter {
            view: &r.view,
            words: &r.words,
            misses: &r.misses,
            breaks: &launches[r.launch].breaks,
        }),
        services,
        unknown: &unknown,
    };
    for check in rules::RULES.iter().filter_map(|r| r.check.of_material()) {
        check(&material, &mut findings);
    }
    crate::sort::sort_by(&mut findings, |a, b| a.severity.cmp(&b.severity).then(a.code.cmp(b.code)));
    let locator = place::Locator::new(group, files);
    place::merge_same_places(
        findings
            .into_iter()
            .map(|f| LintFinding { places: locator.places(&f, launches), group: g, finding: f })
            .collect(),
    )
}
