//! PD020: GPU counts, ranges and node counts that do not add up.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;
use crate::effective::ServerView;
use crate::plan::Origin;

/// Each instance needs `tp × pp` GPUs spread evenly over its nodes, and no GPU may serve two
/// processes.
///
/// SGLang asserts that the node count divides `tp × pp`. It starts one scheduler per GPU from
/// `--base-gpu-id` upward (step `--gpu-id-step`), relative to `CUDA_VISIBLE_DEVICES`; two
/// processes whose ranges meet on one machine share a GPU, and a range past the installed GPUs
/// fails on the first CUDA call.
pub static RULE: Rule = Rule {
    code: "PD020",
    name: "gpu-topology",
    severity: Severity::Error,
    summary: "GPU counts, GPU ranges or node counts of an instance do not add up",
    explanation: "An instance runs `tp_size × pp_size` GPU workers split evenly over its `--nnodes` nodes; SGLang \
        asserts that the node count divides that product. Each node's workers take GPUs `--base-gpu-id` upward, so \
        two processes on one machine whose ranges overlap share GPUs: the second one finds less memory than its \
        peers (SGLang raises \"The memory capacity is unbalanced\") or runs out of memory. A range that ends past \
        the GPUs the machine has fails with \"invalid device ordinal\". The per-node GPU counts in the deployment \
        must add up to `tp × pp`, otherwise pdlaunch's own GPU assignment (base GPU of colocated processes) is wrong.",
    sglang_errors: &[
        "tp_size must be divisible by number of nodes",
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. {details}",
        "CUDA error: invalid device ordinal",
    ],
    fix: "Give every node `tp × pp / nodes` GPUs, give colocated processes disjoint `base_gpu_id` ranges, and keep \
        each range within the node's `gpus_installed`.",
    check: Check::Deployment(check),
};

/// The deployment path of a server's node, when checking a deployment.
fn node_path(ctx: &Context, s: &ServerView) -> Option<String> {
    let role = s.role.or_else(|| Role::BOTH.into_iter().find(|r| s.label.starts_with(r.as_str())))?;
    ctx.deployment.map(|_| format!("{}.instances[{}].nodes[{}]", role, s.instance, s.node))
}

/// `tp_size × pp_size`: the GPUs one server uses over all its nodes.
fn tp_pp(s: &ServerView) -> u64 {
    u64::from(s.size("tp_size")) * u64::from(s.size("pp_size"))
}

/// `GPU 3`, `GPUs 0-7` or `GPUs 0,2`.
fn show(ids: &[String]) -> String {
    let nums: Option<Vec<u64>> = ids.iter().map(|i| i.parse().ok()).collect();
    match nums {
        _ if ids.len() == 1 => format!("GPU {}", ids[0]),
        Some(n) if n.len() > 1 && n.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("GPUs {}-{}", n[0], n[n.len() - 1])
        }
        _ => format!("GPUs {}", ids.join(",")),
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();

    // Node count must divide tp × pp (one report per instance, from node 0).
    for s in ctx.servers.iter().filter(|s| s.int("node_rank").unwrap_or(0) == 0) {
        let (tp, pp, nnodes) = (s.size("tp_size"), s.size("pp_size"), s.size("nnodes"));
        if !tp_pp(s).is_multiple_of(u64::from(nnodes)) {
            let side = s.label.split('[').next().unwrap_or("the side").to_owned();
            let message = format!(
                "{} spans {nnodes} nodes but tp_size × pp_size = {tp} × {pp} = {} is not divisible by {nnodes}",
                s.label.split(" node").next().unwrap_or(&s.label),
                tp_pp(s)
            );
            let fix = format!(
                "use a node count that divides {} (or change `{side}.tp`/`{side}.pp` to a multiple of {nnodes})",
                tp_pp(s)
            );
            out.push(Finding::new(&RULE, message, fix).at(s, "tp_size").at(s, "nnodes"));
        }
    }

    // Per-node GPU counts must add up to tp × pp (deployments only: lint input has no node counts).
    if let Some(d) = ctx.deployment {
        for role in Role::BOTH {
            let side = d.side(role);
            for (i, inst) in side.instances.iter().enumerate() {
                let servers: Vec<&ServerView> =
                    ctx.servers.iter().filter(|s| s.label.starts_with(role.as_str()) && s.instance == i).collect();
                let Some(head) = servers.first() else {
                    continue;
                };
                let want = tp_pp(head);
                let counts: Vec<u32> = servers.iter().filter_map(|s| s.gpus.map(|g| g.1)).collect();
                let sum: u64 = counts.iter().copied().map(u64::from).sum();
                let explicit = inst.nodes.iter().any(|n| n.gpus.is_some());
                if sum == want || (!explicit && !want.is_multiple_of(servers.len() as u64)) {
                    continue;
                }
                let parts: Vec<String> = counts.iter().map(u32::to_string).collect();
                let message = format!(
                    "{role}[{i}] has {} GPUs on its nodes ({}) but tp_size × pp_size = {want}",
                    sum,
                    parts.join(" + ")
                );
                let fix = format!(
                    "set `{role}.instances[{i}].nodes[*].gpus` so that they add up to {want} (or remove them: the \
                     default is tp × pp / nodes), or change `{role}.tp`/`{role}.pp`"
                );
                let mut f = Finding::new(&RULE, message, fix).at(head, "tp_size");
                for (n, node) in inst.nodes.iter().enumerate() {
                    if node.gpus.is_some() {
                        let path = format!("{role}.instances[{i}].nodes[{n}].gpus");
                        let label = servers.get(n).map_or_else(|| head.label.clone(), |s| s.label.clone());
                        f = f.at_origin(label, None, Origin::Field { path });
                    }
                }
                out.push(f);
            }
        }
    }

    // GPU ranges: overlaps on one machine, and ranges past the installed GPUs. A wildcard bind
    // address (lint input) does not say which machine a process is on, so only servers on a
    // known host are compared.
    let known = |s: &ServerView| !matches!(s.machine(), "" | "0.0.0.0" | "::" | "[::]");
    let ranges: Vec<(&ServerView, Vec<String>)> =
        ctx.servers.iter().filter(|s| ctx.deployment.is_some() || known(s)).map(|s| (s, s.gpu_ids())).collect();
    let base_origin = |s: &ServerView| match node_path(ctx, s) {
        Some(p) => Origin::Field { path: format!("{p}.base_gpu_id") },
        None => s.origin("base_gpu_id").cloned().unwrap_or(Origin::Derived),
    };
    // Each process against the first earlier one it shares GPUs with: moving it off that one's
    // GPUs is the fix, and n processes on one GPU make n - 1 findings, not n(n - 1)/2.
    for (j, (b, b_ids)) in ranges.iter().enumerate() {
        let first = ranges[..j].iter().find_map(|(a, a_ids)| {
            if !known(a) || a.machine() != b.machine() || a.label == b.label {
                return None;
            }
            let shared: Vec<String> = a_ids.iter().filter(|g| b_ids.contains(g)).cloned().collect();
            (!shared.is_empty()).then_some((a, a_ids, shared))
        });
        if let Some((a, a_ids, shared)) = first {
            let message = format!(
                "{} uses {} and {} uses {} on host {}: they share {}",
                a.label,
                show(a_ids),
                b.label,
                show(b_ids),
                a.machine(),
                show(&shared)
            );
            let next = a_ids.iter().filter_map(|g| g.parse::<u64>().ok()).max().map_or(0, |m| m + 1);
            let fix = match base_origin(b) {
                Origin::Derived => {
                    format!("start {} on GPUs that {} does not use (`--base-gpu-id {next}`)", b.label, a.label)
                }
                o => format!("set `{o}` to {next} (or another range {} does not use)", a.label),
            };
            let mut f = Finding::new(&RULE, message, fix)
                .at_origin(a.label.clone(), Some("--base-gpu-id"), base_origin(a))
                .at_origin(b.label.clone(), Some("--base-gpu-id"), base_origin(b));
            f.sglang_error = RULE.sglang_errors.get(1).copied();
            out.push(f);
        }
    }
    if let Some(d) = ctx.deployment {
        for (s, ids) in &ranges {
            let Some(role) = Role::BOTH.into_iter().find(|r| s.label.starts_with(r.as_str())) else {
                continue;
            };
            let node = d.side(role).instances.get(s.instance).and_then(|inst| inst.nodes.get(s.node));
            let Some(installed) = node.and_then(|n| n.gpus_installed) else {
                continue;
            };
            let max = ids.iter().filter_map(|g| g.parse::<u64>().ok()).max();
            let beyond_visible = ids.iter().any(|g| g.starts_with('#'));
            if max.is_some_and(|m| m < u64::from(installed)) && !beyond_visible {
                continue;
            }
            let message = format!(
                "{} uses {} on host {}, but that node has {installed} GPUs (`gpus_installed`){}",
                s.label,
                show(ids),
                s.host,
                if beyond_visible { " or CUDA_VISIBLE_DEVICES lists fewer" } else { "" }
            );
            let fix =
                format!("lower `{}` or the node's GPU count so that the range ends below {installed}", base_origin(s));
            out.push(
                Finding::new(&RULE, message, fix)
                    .at_origin(s.label.clone(), Some("--base-gpu-id"), base_origin(s))
                    .at_origin(
                        s.label.clone(),
                        None,
                        Origin::Field {
                            path: format!("{}.instances[{}].nodes[{}].gpus_installed", role, s.instance, s.node),
                        },
                    ),
            );
            out.last_mut().expect("just pushed").sglang_error = RULE.sglang_errors.get(2).copied();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn examples_fit_their_gpus() {
        assert!(!codes(&llama()).contains(&"PD020"));
        assert!(!codes(&deepseek()).contains(&"PD020"));
    }

    #[test]
    fn overlapping_base_gpu_on_one_host() {
        let mut d = llama();
        d.decode.instances[0].nodes[0].base_gpu_id = Some(0);
        let f = findings(&d, "PD020");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("prefill[0] uses GPU 0") && f[0].message.contains("share GPU 0"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].fix.contains("decode.instances[0].nodes[0].base_gpu_id") && f[0].fix.contains("to 1"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn lint_input_on_wildcard_hosts_is_not_compared() {
        use crate::rules::{run, Context};
        let server = |label: &str| {
            let args = "--disaggregation-mode prefill --host 0.0.0.0 --tp-size 2";
            crate::rules::testing::server(label, "0.0.0.0", args, None)
        };
        let ctx = Context {
            servers: vec![server("a.sh:1"), server("b.sh:1")],
            router: None,
            model: Default::default(),
            release: crate::release::Release::LATEST,
            deployment: None,
            dropped: Vec::new(),
        };
        assert!(!run(&ctx).iter().any(|f| f.code == "PD020" || f.code == "PD019"));
    }

    #[test]
    fn cuda_visible_devices_separates_ranges() {
        let mut d = llama();
        d.decode.instances[0].nodes[0].base_gpu_id = Some(0);
        d.prefill.env.insert("CUDA_VISIBLE_DEVICES".into(), "0".into());
        d.decode.env.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
        assert!(findings(&d, "PD020").is_empty());
    }

    #[test]
    fn node_gpu_counts_must_add_up() {
        let mut d = deepseek();
        d.prefill.instances[0].nodes[0].gpus = Some(4);
        let f = findings(&d, "PD020");
        assert!(f.iter().any(|f| f.message.contains("4 + 8") && f.message.contains("16")), "{f:?}");
    }

    #[test]
    fn node_count_must_divide_tp() {
        let mut d = deepseek();
        let mut third = d.decode.instances[0].nodes[1].clone();
        third.host = "10.0.2.3".into();
        d.decode.instances[0].nodes.push(third);
        let f = findings(&d, "PD020");
        assert!(f.iter().any(|f| f.message.contains("spans 3 nodes") && f.message.contains("16")), "{f:?}");
    }

    #[test]
    fn range_beyond_installed_gpus() {
        let mut d = llama();
        d.decode.instances[0].nodes[0].gpus_installed = Some(1);
        let f = findings(&d, "PD020");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("decode[0] uses GPU 1") && f[0].message.contains("has 1 GPUs"),
            "{}",
            f[0].message
        );
    }
}
