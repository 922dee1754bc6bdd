//! PD060: the router routes to a worker that does not answer.

use super::fleet::Fleet;
use super::{Check, Finding, Rule, Severity};
use crate::plan::Origin;

/// The router keeps sending requests to every worker of its list until its health checks drop
/// it (or forever, when they are off); a worker that is gone fails each request paired with it.
pub static RULE: Rule = Rule {
    code: "PD060",
    name: "router-worker-gone",
    severity: Severity::Error,
    summary: "the router's worker list names a server that does not answer",
    explanation: "The router pairs each request with one prefill and one decode of its worker list. A worker \
        that has gone (its pod rescheduled to another address, its process stopped) but is still listed \
        receives its share of requests: each fails, or waits until the router's timeout, until the router's \
        health check removes it, which it does not when health checks are off or too lenient. A rolling \
        update that adds the new workers but does not remove the old ones leaves such entries.",
    sglang_errors: &["Failed to connect to worker", "Worker {url} is not healthy"],
    fix: "Remove the worker from the router (`DELETE /workers/{id}` with the id the router's `/workers` \
        lists, or a restart with the current list), or restart the server at that address.",
    check: Check::Fleet(check),
};

fn check(fleet: &Fleet) -> Vec<Finding> {
    let router = fleet.router.as_ref().map_or("the router", |(r, _)| r.as_str());
    let mut out = Vec::new();
    for p in fleet.servers.iter().filter(|p| p.from_router) {
        let Err(why) = &p.answer else { continue };
        let role = p.role.map(|r| format!("{} ", r.as_str())).unwrap_or_default();
        let message = format!(
            "the router at {router} routes to the {role}worker {}, which does not answer: {why}; every request the \
             router pairs with it fails",
            p.url
        );
        let fix = match &p.worker_id {
            Some(id) => format!(
                "remove {} from the router's workers (`curl -X DELETE {router}/workers/{id}`), or restart the server \
                 there",
                p.url
            ),
            None => format!("remove {} from the router's workers, or restart the server there", p.url),
        };
        out.push(Finding::new(&RULE, message, fix).at_origin(p.url.clone(), None, Origin::Field { path: "/server_info".into() }));
    }
    out
}
