//! PD058: what a prefill's bootstrap server publishes is not what the prefill or its decodes use.

use super::fleet::{Fleet, RouteInfo};
use super::{Check, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::Origin;

/// A decode learns a prefill's parallel sizes, page size and KV-cache dtype from the prefill's
/// bootstrap server (`GET /route?prefill_dp_rank=-1&...`, `try_ensure_parallel_info` in
/// `disaggregation/common/conn.py`), not from the prefill's arguments. A bootstrap server that
/// does not answer, has not heard from every rank (503), or publishes other values than the
/// prefill's own (its port belongs to another prefill) breaks the pairing at run time.
pub static RULE: Rule = Rule {
    code: "PD058",
    name: "bootstrap-info-mismatch",
    severity: Severity::Error,
    summary: "a prefill's bootstrap server does not answer, or publishes values its prefill or decodes do not use",
    explanation: "Each decode asks the prefill's bootstrap server (the prefill's host, \
        `--disaggregation-bootstrap-port`) for the prefill's attention TP, CP, DP and PP sizes, page size and \
        KV-cache dtype before its first transfer, and compares the page size and dtype with its own. A \
        bootstrap server that does not answer leaves the decode's requests in bootstrapping until they time \
        out; one that answers 503 has not heard from every prefill rank yet (a rank that failed to start, or \
        one still loading). One that publishes other values than its prefill reports is another prefill's \
        (two prefills given one bootstrap port on one host): the decodes pair with the wrong KV layout.",
    sglang_errors: &[
        "Failed to get prefill server info: {response.status_code}, {response.text}",
        "Error fetching prefill server info from bootstrap: {e}",
        "Prefill server not fully registered yet ({self._registered_count} workers registered).",
    ],
    fix: "Make the bootstrap server answer with its own prefill's values: restart the prefill if a rank is \
        missing, and give each prefill on a host its own `--disaggregation-bootstrap-port`.",
    check: Check::Fleet(check),
};

fn check(fleet: &Fleet) -> Vec<Finding> {
    let mut out = Vec::new();
    let decodes: Vec<&ServerView> = fleet.answered().map(|(_, v)| v).filter(|v| v.role == Some(Role::Decode)).collect();
    let model = &fleet.ctx.model;
    for (p, view) in fleet.answered().filter(|(_, v)| v.role == Some(Role::Prefill)) {
        let Some((route_url, route)) = &p.route else { continue };
        let info = match route {
            Ok(info) => info,
            Err(why) => {
                let registering = why.contains("503");
                let (sev, what) = if registering {
                    (Severity::Warning, "has not heard from every prefill rank yet")
                } else {
                    (Severity::Error, "does not answer")
                };
                let message = format!(
                    "the bootstrap server of the prefill at {} ({route_url}) {what}: {why}; decodes paired with \
                     it keep their requests in bootstrapping until they time out",
                    p.url
                );
                let fix = if registering {
                    "wait for the prefill's ranks to finish loading; if it stays so, a rank failed: restart the prefill"
                } else {
                    "check that the prefill's bootstrap port is open from the decodes' hosts, and that the prefill \
                     runs with `--disaggregation-bootstrap-port` set to that port"
                };
                out.push(Finding::new(&RULE, message, fix).severity(sev).at(view, "disaggregation_bootstrap_port"));
                continue;
            }
        };
        let page = view.page_size(model).value;
        let dtype = view.kv_cache_dtype(model).value;
        let own: [(&str, &str, Option<String>, String); 4] = [
            ("page_size", "page_size", info.page_size.map(|v| v.to_string()), page.to_string()),
            ("kv_cache_dtype", "kv_cache_dtype", info.kv_cache_dtype.clone(), dtype.clone()),
            ("attn_tp_size", "tp_size", Some(info.attn_tp_size.to_string()), view.attn_tp().to_string()),
            ("pp_size", "pp_size", Some(info.pp_size.to_string()), view.size("pp_size").to_string()),
        ];
        for (field, dest, published, reported) in own {
            let Some(published) = published else { continue };
            if published == reported {
                continue;
            }
            let message = format!(
                "the bootstrap server at {route_url} publishes {field}={published}, but the prefill at {} reports \
                 {field}={reported}: the bootstrap port answers for another prefill",
                p.url
            );
            let fix = format!(
                "give the prefill at {} a `--disaggregation-bootstrap-port` no other prefill on its host uses, \
                 and restart it",
                p.url
            );
            out.push(Finding::new(&RULE, message, fix).at(view, dest).at_origin(
                route_url.clone(),
                None,
                Origin::Field { path: format!("route.{field}") },
            ));
        }
        out.extend(decodes.iter().flat_map(|d| against_decode(route_url, info, &page, &dtype, d, fleet)));
    }
    out
}

/// The decode `d`'s own check of what the bootstrap server publishes, where the prefill's
/// reported values do not already say it (PD001 and PD002 compare those).
fn against_decode(
    route_url: &str,
    info: &RouteInfo,
    page: &u32,
    dtype: &str,
    d: &ServerView,
    fleet: &Fleet,
) -> Vec<Finding> {
    let model = &fleet.ctx.model;
    let mut out = Vec::new();
    let d_page = d.page_size(model).value;
    if let Some(published) = info.page_size.filter(|&v| v != d_page && v != *page) {
        out.push(
            Finding::new(
                &RULE,
                format!(
                    "the bootstrap server at {route_url} publishes page_size={published}, but the decode at {} uses \
                     page_size={d_page}: its first transfer fails",
                    d.label
                ),
                "restart the prefill whose bootstrap port this is with the fleet's page size",
            )
            .at(d, "page_size"),
        );
    }
    let d_dtype = d.kv_cache_dtype(model).value;
    if let Some(published) = info.kv_cache_dtype.as_deref().filter(|v| *v != d_dtype && *v != dtype) {
        out.push(
            Finding::new(
                &RULE,
                format!(
                    "the bootstrap server at {route_url} publishes kv_cache_dtype={published}, but the decode at {} \
                     uses kv_cache_dtype={d_dtype}: its first transfer fails",
                    d.label
                ),
                "restart the prefill whose bootstrap port this is with the fleet's KV-cache dtype",
            )
            .at(d, "kv_cache_dtype"),
        );
    }
    out
}
