//! PD047: `srun` starts a multi-node server on several nodes with one node rank for all.

use super::material::{Material, WrittenServer};
use super::{Check, Finding, Rule, Severity};
use crate::plan::Origin;
use crate::read::source::Word;

/// `srun --nodes=N` starts its command once per node with the same argv. A multi-node SGLang
/// server needs a different `--node-rank` on each node, so the rank must be expanded by each
/// task's own shell. Written straight on the srun line (or inside a double-quoted `bash -c`),
/// `$SLURM_NODEID` is expanded once, by the shell running the script, before srun starts.
pub static RULE: Rule = Rule {
    code: "PD047",
    name: "srun-same-node-rank",
    severity: Severity::Error,
    summary: "`srun --nodes=N` starts a multi-node server with the same `--node-rank` on every node",
    explanation: "srun runs one argv on all the nodes of its step. `--node-rank $SLURM_NODEID` on the srun line \
        is expanded by the batch script's shell before srun starts (0 in an sbatch script, where the script runs \
        as node 0 of the job), and a literal rank is the same everywhere. Every node then joins the rendezvous \
        as the same rank: the second one cannot bind the rendezvous port, or the instance waits for ranks that \
        never come and the server hangs at start-up.",
    sglang_errors: &[
        "every node of a multi-node server starts as the same node rank; the rendezvous never completes",
        "The server socket has failed to listen on any local network address",
    ],
    fix: "Let each node's shell expand the rank: `srun --nodes=2 --ntasks-per-node=1 bash -c 'exec python3 -m \
        sglang.launch_server ... --node-rank $SLURM_NODEID'` (single quotes), or start each node with its own \
        srun and a literal `--node-rank`.",
    check: Check::Material(check),
};

/// Each multi-node server that the linter read srun start with one node rank on every node: at
/// the variable its shell expanded too early (which PD044 then leaves to this rule), else at the
/// command.
fn check(m: &Material, found: &mut Vec<Finding>) {
    for s in &m.servers {
        let Some(same) = s.srun_same_rank else { continue };
        let label = &s.view.label;
        let f = match expanded(s) {
            Some((var, w)) => finding(label, same.nodes, SameRank::Expanded(var), m.origin(w)),
            None => {
                let rank = s.view.explicit("node_rank").unwrap_or_else(|| "0".to_owned());
                finding(label, same.nodes, SameRank::Literal(&rank), m.origin_at(s.file, s.at))
            }
        };
        found.push(f);
    }
}

/// The per-task variable that the script's shell expanded before srun started the server on
/// every node, and the word of its arguments that holds it.
pub(super) fn expanded<'a>(s: &WrittenServer<'a>) -> Option<(&'a str, &'a Word)> {
    let var = s.srun_same_rank?.var.as_deref()?;
    s.words.iter().find(|w| w.unknown.iter().any(|u| u == var)).map(|w| (var, w))
}
/// Why every node of the step gets one node rank.
enum SameRank<'a> {
    /// A per-task variable, as written, that the script's shell expanded before srun ran.
    Expanded(&'a str),
    /// A rank written literally (or SGLang's default, 0).
    Literal(&'a str),
}

/// The finding for the server `label` that srun starts on `nodes` nodes, pointing at `origin`
/// (the variable, or the command).
fn finding(label: &str, nodes: u32, why: SameRank, origin: Origin) -> Finding {
    let why = match why {
        SameRank::Expanded(var) => format!(
            "`{var}` is expanded once, by the shell that runs srun, before srun starts the tasks, so every node \
             gets the same `--node-rank`"
        ),
        SameRank::Literal(rank) => format!("it gives every node the same arguments, so the same `--node-rank {rank}`"),
    };
    let message = format!(
        "{label}: srun starts this server on {nodes} nodes, but {why}: they all join as one node rank, and the \
         server cannot form"
    );
    let fix = "let each node's shell expand its rank: `srun ... bash -c '... --node-rank $SLURM_NODEID'` (single \
               quotes), or start each node with its own srun and a literal `--node-rank`";
    let mut f = Finding::new(&RULE, message, fix).at_origin(label, Some("--node-rank"), origin);
    f.sglang_error = Some(RULE.sglang_errors[0]);
    f
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::linted;

    /// A two-node prefill that srun starts on two nodes; `{RANK}` ends its command.
    fn job(command: &str) -> String {
        let server = "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --tp-size 16 \
                      --dist-init-addr n1:5000 --nnodes 2 --port 30000";
        format!("#!/bin/bash\n#SBATCH --nodes=2\nsrun --nodes=2 {}\n", command.replace("{SERVER}", server))
    }

    #[test]
    fn a_rank_the_scripts_shell_expands_breaks_and_one_each_task_expands_passes() {
        let found = linted(&[("job.sbatch", &job("{SERVER} --node-rank $SLURM_NODEID"))], "PD047");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`$SLURM_NODEID` is expanded once, by the shell that runs srun"), "{}", found[0]);
        let found = linted(&[("job.sbatch", &job("{SERVER}"))], "PD047");
        assert!(found.len() == 1 && found[0].contains("the same `--node-rank 0`"), "{found:?}");
        let per_task = job("bash -c '{SERVER} --node-rank $SLURM_NODEID'");
        assert!(linted(&[("job.sbatch", &per_task)], "PD047").is_empty());
    }
}
