//! One JSON document with the argv and environment of every process, for other tools.

use serde_json::json;

use super::RenderedFile;
use crate::plan::Plan;

/// The plan as JSON.
pub fn render_json(plan: &Plan) -> RenderedFile {
    let servers: Vec<_> = plan
        .servers
        .iter()
        .map(|p| {
            json!({
                "id": p.id(),
                "role": p.role,
                "instance": p.instance,
                "node_rank": p.node,
                "nnodes": p.nnodes,
                "host": p.host,
                "gpus": {"base": p.gpus.0, "count": p.gpus.1},
                "argv": plan.server_argv(p),
                "env": p.env,
            })
        })
        .collect();
    let doc = json!({
        "generator": format!("pdlaunch {}", env!("CARGO_PKG_VERSION")),
        "deployment": plan.name,
        "sglang_version": plan.release,
        "router_version": plan.router_release,
        "servers": servers,
        "router": {
            "id": "router",
            "host": plan.router.host,
            "port": plan.router.port,
            "argv": plan.router_argv(),
            "env": plan.router.env,
        },
    });
    let mut contents = serde_json::to_string_pretty(&doc).expect("plain JSON values serialize");
    contents.push('\n');
    RenderedFile { name: format!("{}.json", plan.name), contents, executable: false }
}
