//! PD052: a decode server that polls its arriving KV every 0 iterations.

use super::{Check, Context, Finding, Rule, Severity};
use crate::deployment::Role;

/// The decode's scheduler counts its iterations modulo `--disaggregation-decode-polling-interval`
/// (`disaggregation/decode.py`, `process_decode_queue`); SGLang does not check the value, so 0
/// passes argument parsing and model loading and stops the decode at its first iteration.
pub static RULE: Rule = Rule {
    code: "PD052",
    name: "decode-polling-interval-zero",
    severity: Severity::Error,
    summary: "a decode server polls arriving KV every 0 scheduler iterations",
    explanation: "A decode server looks for requests whose KV has arrived once every \
        `--disaggregation-decode-polling-interval` scheduler iterations, counting them modulo that value. \
        SGLang accepts any integer, so 0 passes start-up and model loading; the decode's scheduler then divides \
        by zero on its first iteration and the server stops.",
    sglang_errors: &["ZeroDivisionError: integer modulo by zero"],
    fix: "Set `decode.decode_polling_interval` to 1 (the default, every iteration) or more, or leave it unset.",
    check: Check::Deployment(check),
};

fn check(ctx: &Context) -> Vec<Finding> {
    const DEST: &str = "disaggregation_decode_polling_interval";
    let mut out = Vec::new();
    for s in ctx.role(Role::Decode).filter(|s| s.int(DEST) == Some(0)) {
        let fix = match s.origin(DEST).map(ToString::to_string) {
            Some(o) if o != "decode.decode_polling_interval" => {
                format!("remove the `0` at `{o}`, or give 1 or more; 1 (every iteration) is SGLang's default")
            }
            _ => "set `decode.decode_polling_interval` to 1 or more, or leave it unset (1 polls every iteration)"
                .to_owned(),
        };
        let message = format!(
            "{} has --disaggregation-decode-polling-interval 0: its scheduler divides by it and stops at the first \
             iteration",
            s.label
        );
        out.push(Finding::new(&RULE, message, fix).at(s, DEST));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::*;

    #[test]
    fn an_interval_of_one_or_more_passes() {
        assert!(findings(&llama(), "PD052").is_empty());
        let mut d = llama();
        d.decode.decode_polling_interval = Some(4);
        assert!(findings(&d, "PD052").is_empty());
        // The prefill does not read it.
        d.prefill.extra_args = vec!["--disaggregation-decode-polling-interval".into(), "0".into()];
        assert!(findings(&d, "PD052").is_empty());
        assert!(linted(&[("pd.sh", &pd_script("", " --disaggregation-decode-polling-interval 8"))], "PD052").is_empty());
    }

    #[test]
    fn an_interval_of_zero_breaks() {
        let mut d = llama();
        d.decode.decode_polling_interval = Some(0);
        let f = findings(&d, "PD052");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.starts_with("decode[0] has --disaggregation-decode-polling-interval 0"), "{}", f[0].message);
        assert!(f[0].fix.starts_with("set `decode.decode_polling_interval` to 1 or more"), "{}", f[0].fix);

        let mut d = llama();
        d.decode.extra_args = vec!["--disaggregation-decode-polling-interval".into(), "0".into()];
        let f = findings(&d, "PD052");
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.contains("`decode.extra_args[0]`"), "{}", f[0].fix);

        let script = pd_script("", " --disaggregation-decode-polling-interval 0");
        let m = linted(&[("pd.sh", &script)], "PD052");
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("--disaggregation-decode-polling-interval 0"), "{}", m[0]);
    }
}
