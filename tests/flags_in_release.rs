//! Every flag pdlaunch emits exists in the target release with a valid value: each rendered argv
//! is read back with SGLang's own argparse spec of that release (and the router's), and must
//! produce no error.

use pdlaunch_core::examples::{example, EXAMPLES};
use pdlaunch_core::plan::plan;
use pdlaunch_core::release::{Release, RouterRelease};
use pdlaunch_core::spec::parse_argv;

#[test]
fn examples_render_only_valid_flags_for_the_latest_releases() {
    for e in EXAMPLES {
        let d = example(e.name).unwrap();
        assert_eq!(d.sglang_version, Release::LATEST);
        let p = plan(&d);
        for s in &p.servers {
            let parsed = parse_argv(Release::LATEST.spec(), &s.arg_tokens());
            assert!(parsed.problems.is_empty(), "{} {}: {:?}", e.name, s.label(), parsed.problems);
        }
        let parsed = parse_argv(RouterRelease::LATEST.spec(), &p.router.arg_tokens());
        assert!(parsed.problems.is_empty(), "{} router: {:?}", e.name, parsed.problems);
    }
}

/// Retargeting an example to any known release renders spellings that release accepts (fields
/// it lacks are dropped from the argv and reported by PD025, never emitted as unknown flags).
#[test]
fn examples_retargeted_to_every_release_emit_no_unknown_flag() {
    for e in EXAMPLES {
        for release in Release::ALL {
            let mut d = example(e.name).unwrap();
            d.sglang_version = release;
            let p = plan(&d);
            for s in &p.servers {
                let parsed = parse_argv(release.spec(), &s.arg_tokens());
                let unknown: Vec<_> = parsed
                    .problems
                    .iter()
                    .filter(|pr| matches!(pr.kind, pdlaunch_core::spec::ArgProblemKind::Unknown { .. }))
                    .collect();
                assert!(unknown.is_empty(), "{} for {release} {}: {unknown:?}", e.name, s.label());
            }
        }
        for release in RouterRelease::ALL {
            let mut d = example(e.name).unwrap();
            d.router_version = release;
            let parsed = parse_argv(release.spec(), &plan(&d).router.arg_tokens());
            let unknown: Vec<_> = parsed
                .problems
                .iter()
                .filter(|pr| matches!(pr.kind, pdlaunch_core::spec::ArgProblemKind::Unknown { .. }))
                .collect();
            assert!(unknown.is_empty(), "{} for router {release}: {unknown:?}", e.name);
        }
    }
}

/// DP attention is spelled `--attn-dp-size` in 0.5.23 and `--dp-size N --enable-dp-attention`
/// before; the effective width is the same.
#[test]
fn dp_attention_spelling_follows_the_release() {
    let mut d = example("deepseek-v3-dp-deepep").unwrap();
    let tokens = |d: &pdlaunch_core::deployment::Deployment| plan(d).servers[0].arg_tokens().join(" ");
    assert!(tokens(&d).contains("--attn-dp-size 8"));
    assert!(!tokens(&d).contains("--enable-dp-attention"));
    d.sglang_version = Release::V0_5_19;
    assert!(tokens(&d).contains("--dp-size 8 --enable-dp-attention"));
    assert!(!tokens(&d).contains("--attn-dp-size"));
}
