//! PD036: the two sides run on different GPU generations and let SGLang pick the backend.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::{Gpu, Role};
use crate::effective::ServerView;
use crate::plan::Origin;

/// SGLang picks the attention backend from the GPU and the model when `--attention-backend` is
/// not given (fa3 on Hopper, trtllm_mha / trtllm_mla on Blackwell, aiter on ROCm, ...), and the
/// backend in turn snaps the page size and, for DSA models, the KV row size. Different GPU
/// generations on the two sides therefore run different backends with identical flags.
///
/// When a side's GPU is unknown, rules that depend on these defaults cannot resolve them; a note
/// says so.
pub static RULE: Rule = Rule {
    code: "PD036",
    name: "mixed-gpu-auto-defaults",
    severity: Severity::Warning,
    summary: "prefill and decode run on different GPU generations with an automatic attention backend",
    explanation: "Without `--attention-backend`, each server picks a backend for its own GPU and model: `fa3` on \
        Hopper, `trtllm_mha` (MHA/GQA) or `trtllm_mla` (DeepSeek-V3 family) on Blackwell, `aiter` on ROCm. Those \
        backends force different page sizes (trtllm_* snaps to 64 unless 16/32/64/128 is pinned), and for DSA \
        models different KV row sizes, and they change numerics. A mixed fleet with identical flags can therefore \
        fail the page-size check on the first request, or transfer KV with a different layout. Pinning the backend \
        (and the page size) on both sides makes the pair deterministic.",
    sglang_errors: &[
        "Page size mismatch: prefill server has page_size={info.page_size}, but decode server has page_size={self.kv_args.page_size}. Both servers must use the same --page-size value.",
    ],
    fix: "Pin `shared.attention_backend` to a backend both GPU generations support (e.g. `flashinfer` on NVIDIA, \
        `triton` across NVIDIA and AMD) together with `shared.page_size`.",
    check: Check::Deployment(check),
};

fn generation(g: Gpu) -> String {
    match g.sm() {
        Some(sm) => format!("{} (SM{sm})", g.as_str()),
        None => format!("{} (ROCm)", g.as_str()),
    }
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<(Gpu, Gpu)> = Vec::new();
    for (p, d) in ctx.pairs() {
        let (Some(pg), Some(dg)) = (p.gpu, d.gpu) else {
            continue;
        };
        if pg.sm() == dg.sm() || seen.contains(&(pg, dg)) {
            continue;
        }
        let explicit = |s: &ServerView| s.explicit("attention_backend").is_some();
        if explicit(p) && explicit(d) {
            // Both pinned: any difference is an explicit mismatch (PD005's).
            continue;
        }
        let (pb, db) = (p.attention_backends(&ctx.model).0, d.attention_backends(&ctx.model).0);
        if pb.value.is_some() && pb.value == db.value {
            continue;
        }
        seen.push((pg, dg));
        let shown = |s: &ServerView, b: &crate::effective::Resolved<Option<String>>| match &b.value {
            Some(v) if explicit(s) => format!("--attention-backend {v}"),
            Some(v) => format!("SGLang's default {v}"),
            None => "a default pdlaunch cannot resolve (the model's attention kind is unknown)".to_owned(),
        };
        let message = format!(
            "{} runs on {} with {} and {} on {} with {}: the backends' page-size and KV-layout rules differ",
            p.label,
            generation(pg),
            shown(p, &pb),
            d.label,
            generation(dg),
            shown(d, &db)
        );
        let portable = if pg.is_hip() || dg.is_hip() { "triton" } else { "flashinfer" };
        let fix = format!(
            "pin `shared.attention_backend` (e.g. `{portable}`, available on both GPUs) and keep `shared.page_size` \
             explicit, so both sides run the same backend and page size"
        );
        out.push(Finding::new(&RULE, message, fix).at(p, "attention_backend").at(d, "attention_backend"));
    }
    for role in Role::BOTH {
        let unknown: Vec<&ServerView> =
            ctx.role(role).filter(|s| s.gpu.is_none() && s.explicit("attention_backend").is_none()).collect();
        if unknown.is_empty() {
            continue;
        }
        let labels = super::labels(&unknown);
        let message = format!(
            "the GPU of {labels} is unknown: SGLang's automatic attention backend (and the page size and KV dtype it \
             implies) cannot be resolved, so rules that depend on it assume nothing"
        );
        let (fix, origin) = if ctx.deployment.is_some() {
            (format!("set `{role}.gpu`"), Origin::Field { path: format!("{role}.gpu") })
        } else {
            let fix = format!(
                "name the {role} GPU model to the linter (`--{role}-gpu` on the command line, \"{R} GPU\" in the app), \
                 or pass `--attention-backend` explicitly on every server",
                R = if role == Role::Prefill { "Prefill" } else { "Decode" }
            );
            (fix, Origin::Derived)
        };
        let mut f = Finding::new(&RULE, message, fix).severity(Severity::Note);
        f.sglang_error = None;
        out.push(unknown.iter().fold(f, |f, s| f.at_origin(s.label.clone(), None, origin.clone())));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::choices::AttentionBackend;
    use crate::deployment::Gpu;
    use crate::rules::testing::*;
    use crate::rules::Severity;

    #[test]
    fn same_gpus_pass() {
        assert!(!codes(&llama()).contains(&"PD036"));
        assert!(!codes(&deepseek()).contains(&"PD036"));
    }

    #[test]
    fn hopper_prefill_blackwell_decode_warns() {
        let mut d = llama();
        d.decode.gpu = Some(Gpu::B200);
        let f = findings(&d, "PD036");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        let m = &f[0].message;
        assert!(
            m.contains("h200 (SM90) with SGLang's default fa3")
                && m.contains("b200 (SM100) with SGLang's default trtllm_mha"),
            "{m}"
        );
        assert!(f[0].fix.contains("shared.attention_backend") && f[0].fix.contains("flashinfer"), "{}", f[0].fix);
        d.shared.attention_backend = Some(AttentionBackend::Flashinfer);
        assert!(findings(&d, "PD036").is_empty());
    }

    #[test]
    fn unknown_gpu_is_a_note() {
        let mut d = llama();
        d.decode.gpu = None;
        let f = findings(&d, "PD036");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Note);
        assert!(f[0].message.contains("decode[0]") && f[0].fix.contains("`decode.gpu`"), "{f:?}");
    }
}
