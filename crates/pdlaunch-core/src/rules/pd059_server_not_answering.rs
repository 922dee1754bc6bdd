//! PD059: a server the probe was pointed at does not answer it.

use super::fleet::Fleet;
use super::{Check, Finding, Rule, Severity};
use crate::plan::Origin;

/// `pdlaunch probe` asks each server for `/server_info` (then the deprecated `/get_server_info`).
/// A server that refuses the connection, times out, answers with an HTTP error, or answers with
/// something that is not SGLang's server info cannot be checked; the probe reports it and checks
/// the others.
pub static RULE: Rule = Rule {
    code: "PD059",
    name: "server-not-answering",
    severity: Severity::Error,
    summary: "a server of the fleet does not answer /server_info with SGLang's server info",
    explanation: "The probe reads what each running server really uses from its `/server_info` (or, before \
        SGLang 0.5.23, `/get_server_info`). A server that does not answer is down, hung, or not where it \
        was said to be; one that answers something else (an HTML error page, a truncated or oversized body, \
        values of the wrong type) is not an SGLang server, or is behind a proxy that rewrites it. Either way \
        its settings are unknown and the rules cannot compare it with its peers.",
    sglang_errors: &[],
    fix: "Check that the server runs and listens at that address (`curl URL/health`); restart it, or take it \
        out of the fleet's list.",
    check: Check::Fleet(check),
};

fn check(fleet: &Fleet) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some((router, Err(why))) = &fleet.router {
        out.push(
            Finding::new(&RULE, format!("the router at {router} did not give its workers: {why}"), fix(router))
                .at_origin(router.clone(), None, Origin::Field { path: "/workers".into() }),
        );
    }
    for p in fleet.servers.iter().filter(|p| !p.from_router) {
        let Err(why) = &p.answer else { continue };
        let role = p.role.map(|r| format!("{} ", r.as_str())).unwrap_or_default();
        out.push(
            Finding::new(&RULE, format!("the {role}server at {} did not answer the probe: {why}", p.url), fix(&p.url))
                .at_origin(p.url.clone(), None, Origin::Field { path: "/server_info".into() }),
        );
    }
    out
}

fn fix(url: &str) -> String {
    format!(
        "check that it runs and listens at {url} (`curl {url}/health`); restart it, or take it out of the \
         fleet's list"
    )
}
