//! PD010: the decode's pipeline-parallel size is neither the prefill's nor 1.

use super::{Check, Context, Finding, Rule, Severity};

/// The decode maps PP stages rank to rank (equal sizes) or pulls every prefill stage (decode PP 1).
///
/// Any other combination fails an assertion in the decode's rank mapping on the first request,
/// which kills the decode scheduler.
pub static RULE: Rule = Rule {
    code: "PD010",
    name: "decode-pp",
    severity: Severity::Error,
    summary: "decode PP size is neither equal to the prefill PP size nor 1",
    explanation: "The decode resolves which prefill PP stages hold its layers on the first request from a \
        prefill: with equal PP sizes stage i pulls from stage i, with decode PP 1 it pulls from all stages. \
        Every other combination fails an assertion there, which kills the decode scheduler. The transfer then \
        pairs the stage's layers with the decode's by layer id: peers that report none, or other layer sets (a \
        draft's layers on one side, another model), fail it.",
    sglang_errors: &[
        "Decode pp size ({self.pp_size}) should be equal to prefill pp size ({info.pp_size}) or 1",
        "PP-heterogeneous transfer requires layer ids on both peers; got src={n_src} dst={n_dst} entries",
        "DSA tail pointer count mismatch: src={len(src_ptrs)}, dst={len(dst_ptrs)}, prefill_layers=[{start_layer}, {expected_end})",
        "Decode peer is missing a transfer entry for model layer {lid}",
        "Destination KV descriptors do not match prefill pp configuration",
        "Destination MLA KV descriptors do not match prefill pp configuration",
        "PP-heterogeneous MLA transfer: decode KV cell geometry differs from prefill over layers [{start}, {end}): prefill item_lens={src_item_lens}, decode item_lens={dst_item_lens}",
    ],
    fix: "Set `decode.pp` to the prefill's PP size, or to 1.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, d) in ctx.pairs() {
        let (pp, dp) = (p.size("pp_size"), d.size("pp_size"));
        if dp == pp || dp == 1 {
            continue;
        }
        let message = format!("{} has pp_size={dp} but {} has pp_size={pp}", d.label, p.label);
        let fix = if pp == 1 {
            "set `decode.pp` to 1, like the prefill (or raise `prefill.pp` to match)".to_owned()
        } else {
            format!("set `decode.pp` to {pp} (stage to stage) or 1 (pull every prefill stage)")
        };
        out.push(Finding::new(&RULE, message, fix).at(d, "pp_size").at(p, "pp_size"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn equal_pp_and_decode_pp_one_pass() {
        assert!(!codes(&llama()).contains(&"PD010"));
        let mut d = llama();
        d.prefill.pp = 2;
        assert!(findings(&d, "PD010").is_empty(), "decode PP 1 pulls every prefill stage");
        d.decode.pp = 2;
        assert!(findings(&d, "PD010").is_empty());
    }

    #[test]
    fn decode_pp_larger_than_prefill_is_caught() {
        let mut d = llama();
        d.decode.pp = 2;
        let f = findings(&d, "PD010");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("decode[0] has pp_size=2 but prefill[0] has pp_size=1"), "{}", f[0].message);
        assert!(f[0].fix.contains("`decode.pp` to 1"), "{}", f[0].fix);
        assert!(f[0].locations.iter().any(|l| l.origin.to_string() == "decode.pp"));
    }
}
