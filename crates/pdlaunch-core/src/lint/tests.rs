//! The linter end to end on small texts: the seed's page-size scenario in every variant, equal
//! settings spelled differently, symbolic values, `--config` files, fixes and reconstruction.

use super::*;
use crate::rules::testing::pd_script as pd;

fn inputs(files: &[(&str, &str)]) -> Vec<Input> {
    files
        .iter()
        .map(|(n, t)| match n.strip_prefix("config:") {
            Some(c) => Input::config(c, *t),
            None => Input::new(*n, *t),
        })
        .collect()
}

fn run(files: &[(&str, &str)]) -> Linted {
    lint(&inputs(files), &Options::default())
}

/// Fixes everything fixable and returns the new texts of all files (unchanged ones included).
fn fixed(files: &[(&str, &str)]) -> Vec<String> {
    let out = edit::fix_all(&inputs(files), &Options::default());
    files
        .iter()
        .map(|(n, t)| {
            let name = n.strip_prefix("config:").unwrap_or(n);
            out.iter().find(|f| f.name == name).map_or_else(|| (*t).to_owned(), |f| f.after.clone())
        })
        .collect()
}

fn codes(l: &Linted) -> Vec<&'static str> {
    l.findings.iter().filter(|f| f.finding.severity != Severity::Note).map(|f| f.finding.code).collect()
}

fn notes(l: &Linted) -> Vec<&'static str> {
    l.findings.iter().filter(|f| f.finding.severity == Severity::Note).map(|f| f.finding.code).collect()
}

#[test]
fn docs_example_is_clean() {
    let l = run(&[("pd.sh", &pd("", ""))]);
    assert_eq!(l.groups.len(), 1);
    assert_eq!(l.launches.len(), 3);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
}

#[test]
fn seed_64_vs_1() {
    let l = run(&[("pd.sh", &pd(" --page-size 64", " --page-size 1"))]);
    assert_eq!(codes(&l), ["PD001"], "{:#?}", l.findings);
    let f = &l.findings[0];
    assert!(
        f.finding.message.contains("page_size=64") && f.finding.message.contains("page_size=1"),
        "{}",
        f.finding.message
    );
    assert_eq!(f.places.len(), 2);
    assert_eq!((f.places[0].line, f.places[1].line), (1, 2));
    assert!(!f.places[0].missing && !f.places[1].missing);
}

#[test]
fn seed_64_vs_unset_points_at_the_command_missing_it() {
    let l = run(&[("pd.sh", &pd(" --page-size 64", ""))]);
    assert_eq!(codes(&l), ["PD001"], "{:#?}", l.findings);
    let f = &l.findings[0];
    assert!(f.finding.message.contains("unset: SGLang's default is 1"), "{}", f.finding.message);
    assert!(f.places[1].missing && f.places[1].line == 2, "{:?}", f.places);
}

#[test]
fn a_page_size_that_is_not_positive_is_named_not_called_unset() {
    let l = run(&[("pd.sh", &pd(" --page-size -5", " --page-size 16"))]);
    let f = l.findings.iter().find(|f| f.finding.code == "PD001").expect("PD001");
    assert!(
        f.finding.message.contains("(`--page-size -5` is not a positive integer; 1 assumed)"),
        "{}",
        f.finding.message
    );
    assert!(!f.finding.message.contains("unset"), "{}", f.finding.message);
    // Zero on both sides: no mismatch, but the prefill's startup check divides by it.
    let l = run(&[("pd.sh", &pd(" --page-size 0", " --page-size 0"))]);
    assert_eq!(codes(&l), ["PD016"], "{:#?}", l.findings);
}

#[test]
fn seed_unset_vs_unset_with_backends_that_snap_differently() {
    let l = run(&[("pd.sh", &pd(" --attention-backend fa3", " --attention-backend flashmla"))]);
    assert_eq!(codes(&l).iter().filter(|c| **c == "PD001").count(), 1, "{:#?}", l.findings);
    let f = l.findings.iter().find(|f| f.finding.code == "PD001").unwrap();
    assert!(f.finding.message.contains("snapped from 1 to 64 by attention backend flashmla"), "{}", f.finding.message);
    // Same backends: both unset pages resolve alike.
    let l = run(&[("pd.sh", &pd(" --attention-backend flashmla", " --attention-backend flashmla"))]);
    assert!(!codes(&l).contains(&"PD001"), "{:#?}", l.findings);
}

#[test]
fn unset_vs_unset_on_different_gpus_with_a_known_model() {
    // Llama on H200 defaults to fa3 (page 1), on B200 to trtllm_mha (page snapped to 64).
    let inputs = [Input::new("pd.sh", pd("", ""))];
    let opts = Options { prefill_gpu: Some(Gpu::H200), decode_gpu: Some(Gpu::B200), ..Options::default() };
    let l = lint(&inputs, &opts);
    assert!(codes(&l).contains(&"PD001"), "{:#?}", l.findings);
}

#[test]
fn equal_but_spelled_differently_is_clean() {
    for (p, d) in [
        (" --page-size 64 --tp-size 2", " --page-size=64 --tensor-parallel-size 2"),
        (" --disaggregation-transfer-backend mooncake --page-size 1", ""),
        (" --kv-cache-dtype auto", ""),
        (" --tp 2", " --tp-size=2"),
        (" --context-length 128k", " --context-length 128000"),
    ] {
        let l = run(&[("pd.sh", &pd(p, d))]);
        assert!(codes(&l).is_empty(), "{p} / {d}: {:#?}", l.findings);
    }
    // `--model` is an alias of `--model-path`.
    let text = pd("", "").replacen("--model-path", "--model", 1);
    let l = run(&[("pd.sh", &text)]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
}

#[test]
fn repeated_flag_warns_and_fix_keeps_the_last() {
    let text = pd(" --page-size 1 --page-size 64", " --page-size 64");
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(codes(&l), ["PD041"], "{:#?}", l.findings);
    let after = fixed(&[("pd.sh", &text)]);
    assert!(after[0].contains("mlx5_roce0 --page-size 64 &\n"), "{}", after[0]);
    let again = run(&[("pd.sh", &after[0])]);
    assert!(codes(&again).is_empty(), "{:#?}", again.findings);
}

#[test]
fn fixes_make_the_findings_go_away() {
    for (p, d) in [
        (" --page-size 64", " --page-size 1"),
        (" --page-size 64", ""),
        (" --attention-backend fa3", " --attention-backend flashmla"),
        (" --kv-cache-dtype fp8_e4m3", " --kv-cache-dtype auto"),
        (" --disaggregation-transfer-backend nixl", ""),
        (" --page-size=64", " --page-size=16"),
    ] {
        let text = pd(p, d);
        let l = run(&[("pd.sh", &text)]);
        assert!(!l.is_clean(), "{p} / {d}");
        let after = fixed(&[("pd.sh", &text)]);
        let again = run(&[("pd.sh", &after[0])]);
        assert!(again.is_clean(), "{p} / {d}:\n{}\n{:#?}", after[0], again.findings);
    }
}

#[test]
fn symbolic_values_are_noted_not_guessed() {
    let l = run(&[("pd.sh", &pd(" --page-size ${PAGE_SIZE}", " --page-size 64"))]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    let n = l.findings.iter().find(|f| f.finding.code == "PD044").expect("a note");
    assert!(n.finding.message.contains("${PAGE_SIZE}") && n.finding.message.contains("PD001"), "{}", n.finding.message);
    // Defined in the same script: expanded and checked.
    let text = format!("PAGE_SIZE=1\n{}", pd(" --page-size $PAGE_SIZE", " --page-size 64"));
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(codes(&l), ["PD001"], "{:#?}", l.findings);
    let fixed = edit::fix_all(&[Input::new("pd.sh", text.clone())], &Options::default());
    assert!(fixed[0].after.starts_with("PAGE_SIZE=64\n"), "the fix edits the assignment: {}", fixed[0].after);
    // Extra arguments hidden in a variable.
    let l = run(&[("pd.sh", &pd(" $EXTRA_ARGS", ""))]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    assert!(notes(&l).contains(&"PD044"));
}

#[test]
fn config_files_are_read_and_their_traps_reported() {
    let script = "python -m sglang.launch_server --config prefill.yaml --port 30000 &\n\
                  python -m sglang.launch_server --config=decode.yaml --port 30001\n";
    let pconf = "model-path: m\ndisaggregation-mode: prefill\npage-size: 64\n";
    let dconf = "model-path: m\ndisaggregation-mode: decode\npage-size: 64\n";
    let l = run(&[("run.sh", script), ("config:prefill.yaml", pconf), ("config:decode.yaml", dconf)]);
    let c = codes(&l);
    assert!(c.contains(&"PD042"), "{:#?}", l.findings);
    let after = fixed(&[("run.sh", script), ("config:prefill.yaml", pconf), ("config:decode.yaml", dconf)]);
    let again = run(&[("run.sh", &after[0]), ("config:prefill.yaml", pconf), ("config:decode.yaml", dconf)]);
    assert!(again.is_clean(), "{}\n{:#?}", after[0], again.findings);
    // Underscore keys: reported once, by PD043.
    let bad = "model-path: m\ndisaggregation-mode: decode\npage_size: 64\n";
    let l = run(&[
        ("run.sh", &script.replace("--config=", "--config ")),
        ("config:prefill.yaml", pconf),
        ("config:decode.yaml", bad),
    ]);
    assert!(codes(&l).contains(&"PD043"), "{:#?}", l.findings);
    assert!(!codes(&l).contains(&"PD024"), "{:#?}", l.findings);
    let f = l.findings.iter().find(|f| f.finding.code == "PD043").unwrap();
    assert_eq!((f.places[0].file.as_str(), f.places[0].line), ("decode.yaml", 3));
}

#[test]
fn missing_mode_is_an_error_with_the_intended_role_and_a_fix() {
    let text = pd("", "").replace("--disaggregation-mode decode ", "");
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(codes(&l), ["PD037"], "{:#?}", l.findings);
    assert!(l.findings[0].finding.message.contains("decode[0]"), "{}", l.findings[0].finding.message);
    let after = fixed(&[("pd.sh", &text)]);
    assert!(run(&[("pd.sh", &after[0])]).is_clean(), "{}", after[0]);
}

#[test]
fn a_lone_aggregated_server_is_not_pd() {
    let l = run(&[("serve.sh", "python3 -m sglang.launch_server --model-path m --port 30000\n")]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    assert!(notes(&l).contains(&"PD045"), "{:#?}", l.findings);
}

#[test]
fn separate_files_are_grouped_by_router_and_model() {
    let p =
        "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --port 30000 --page-size 64\n";
    let d = "python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --port 30001\n";
    let l = run(&[("prefill.sh", p), ("decode.sh", d)]);
    assert_eq!(l.groups.len(), 1);
    assert_eq!(codes(&l), ["PD001"]);
    assert_eq!(l.findings[0].places[0].file, "prefill.sh");
    assert_eq!(l.findings[0].places[1].file, "decode.sh");
}

#[test]
fn reconstructs_the_deployment() {
    let l =
        run(&[("pd.sh", &pd(" --page-size 16 --watchdog-timeout 600", " --page-size 16 --max-running-requests 128"))]);
    let r = reconstruct::deployment(&l, 0).unwrap();
    let d = &r.deployment;
    assert_eq!(d.shared.page_size, 16);
    assert_eq!(d.model.path, "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(d.prefill.extra_args, ["--watchdog-timeout", "600"]);
    assert_eq!(d.decode.max_running_requests, Some(128));
    assert_eq!(d.decode.instances[0].nodes[0].base_gpu_id, Some(4));
    assert_eq!(d.router.port, 8000);
    assert!(crate::rules::check(d).is_clean(), "{:#?}", crate::rules::check(d));
}

/// Reading back goes through the flags' bindings: a field of both sides takes the first
/// server's value, and a note names the server that disagrees; a value its field cannot hold
/// and a spelling for the other side's servers stay verbatim in the side's `extra_args`.
#[test]
fn reading_back_keeps_the_first_value_and_leaves_the_rest_verbatim() {
    let prefill = " --page-size 64 --max-running-requests -5 --cuda-graph-max-bs-decode 8 --chunked-prefill-size 4096";
    let l = run(&[("pd.sh", &pd(prefill, " --page-size 16"))]);
    let r = reconstruct::deployment(&l, 0).unwrap();
    let d = &r.deployment;
    assert_eq!(d.shared.page_size, 64);
    assert_eq!(d.prefill.chunked_prefill_size, Some(4096));
    assert_eq!(d.prefill.max_running_requests, None);
    assert_eq!(d.prefill.cuda_graph_max_bs, None);
    assert_eq!(d.prefill.extra_args, ["--max-running-requests", "-5", "--cuda-graph-max-bs-decode", "8"]);
    let note = r.notes.iter().find(|n| n.contains("--page-size 16")).expect("a note on the page size");
    assert!(
        note.ends_with(
            "has `--page-size 16` but an earlier server has `64`; the deployment renders `64` on both sides"
        ),
        "{note}"
    );
}

/// A model path naming a built-in model (here a checkpoint that shares DeepSeek-V3's
/// `config.json`) gives the rules its geometry, and the reconstructed deployment names the
/// preset, so that checking it finds what the lint found.
#[test]
fn a_recognised_model_path_carries_its_preset_into_the_deployment() {
    let text = pd(" --tp-size 4", " --tp-size 3").replace("meta-llama/Llama-3.1-8B-Instruct", "/models/DeepSeek-R1/");
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(l.groups[0].preset.map(|p| p.name), Some("deepseek-v3"));
    // 128 attention heads do not divide over TP 3 (PD038), nor 4 by 3 (PD007).
    assert_eq!(codes(&l), ["PD007", "PD038"], "{:#?}", l.findings);
    let r = reconstruct::deployment(&l, 0).expect("reconstructs");
    assert_eq!(r.deployment.model.preset.as_deref(), Some("deepseek-v3"));
    assert_eq!(r.deployment.model.path, "/models/DeepSeek-R1/");
    let checked = crate::rules::check(&r.deployment);
    let checked: Vec<_> = checked.findings.iter().filter(|f| f.severity != Severity::Note).map(|f| f.code).collect();
    assert_eq!(checked, codes(&l));

    // An unknown model has no preset to carry.
    let l = run(&[("pd.sh", &pd("", "").replace("meta-llama/Llama-3.1-8B-Instruct", "acme/house-model"))]);
    assert!(l.groups[0].preset.is_none());
    let r = reconstruct::deployment(&l, 0).expect("reconstructs");
    assert_eq!(r.deployment.model.preset, None);
}

#[test]
fn leader_worker_sets_and_dynamo_graphs_are_read() {
    let lws = "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: dsv3-decode}\nspec:\n  leaderWorkerTemplate:\n    size: 2\n    leaderTemplate:\n      spec:\n        containers:\n        - name: leader\n          command: [python3, -m, sglang.launch_server, --model-path, m, --disaggregation-mode, decode,\n            --dist-init-addr, $(LWS_LEADER_ADDRESS):5000, --nnodes, \"2\", --node-rank, \"0\", --tp-size, \"2\", --page-size, \"64\", --port, \"30001\"]\n    workerTemplate:\n      spec:\n        containers:\n        - name: worker\n          command: [python3, -m, sglang.launch_server, --model-path, m, --disaggregation-mode, decode,\n            --dist-init-addr, $(LWS_LEADER_ADDRESS):5000, --nnodes, \"2\", --node-rank, \"1\", --tp-size, \"2\", --page-size, \"64\", --port, \"30001\"]\n";
    let dgd = "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: dsv3}\nspec:\n  services:\n    prefill:\n      subComponentType: prefill\n      extraPodSpec:\n        mainContainer:\n          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.6.0\n          command: [python3, -m, dynamo.sglang]\n          args: [--model-path, m, --disaggregation-mode, prefill, --page-size, \"16\", --port, \"30000\", --migration-limit, \"3\"]\n";
    let l = run(&[("lws.yaml", lws), ("dgd.yaml", dgd)]);
    assert_eq!(l.launches.len(), 3, "{:?}", l.launches);
    assert_eq!(l.groups.len(), 1);
    // One decode instance of two nodes; page size 16 vs 64 across the pair; Dynamo's own option
    // is not reported as unknown.
    assert_eq!(l.groups[0].servers.iter().filter(|s| s.view.node == 1).count(), 1);
    assert_eq!(codes(&l), ["PD001"], "{:#?}", l.findings);
    // An option neither Dynamo nor SGLang knows stops the worker: reported as for any server.
    let typo = dgd.replace("--migration-limit, \"3\"", "--migration-limit, \"3\", --page-szie, \"16\"");
    let l = run(&[("lws.yaml", lws), ("dgd.yaml", &typo)]);
    assert_eq!(codes(&l), ["PD001", "PD024"], "{:#?}", l.findings);
}

/// SGLang's LeaderWorkerSet guide: one command per template, with `--nnodes $(LWS_GROUP_SIZE)`
/// and `--node-rank $(LWS_WORKER_INDEX)`; the leader alone sets `--host` and `--port`, and a
/// Service per role names the leaders for the router.
fn lws(role: &str, size: u32, leader: bool, extra: &str) -> String {
    let command = |rank0: bool| {
        let serve = if rank0 { "--port, \"30000\", --host, 0.0.0.0, " } else { "" };
        format!(
            "        containers:\n        - name: sglang\n          image: lmsysorg/sglang:v0.5.6.post2\n          \
             command: [python3, -m, sglang.launch_server, {serve}--model-path, /work/models, \
             --disaggregation-mode, {role}, --tp, \"16\", --page-size, \"64\", \
             --dist-init-addr, $(LWS_LEADER_ADDRESS):20102, --nnodes, $(LWS_GROUP_SIZE), \
             --node-rank, $(LWS_WORKER_INDEX){extra}]\n          \
             env:\n          - name: LWS_WORKER_INDEX\n            valueFrom:\n              fieldRef:\n                \
             fieldPath: metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']\n"
        )
    };
    let leader_template =
        if leader { format!("    leaderTemplate:\n      spec:\n{}", command(true)) } else { String::new() };
    format!(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n  name: r1-{role}\nspec:\n  \
         leaderWorkerTemplate:\n    size: {size}\n{leader_template}    workerTemplate:\n      spec:\n{}",
        command(!leader)
    )
}

const LWS_ROUTER: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: r1-lb\nspec:\n  template:\n    \
    spec:\n      containers:\n      - name: lb\n        command: [python, -m, sglang_router.launch_router, \
    --pd-disaggregation, --prefill, http://r1-prefill:30000, --decode, http://r1-decode:30000, --port, \"8000\"]\n";

/// Each pod of a LeaderWorkerSet group is one node of one instance: the leader rank 0, the
/// workers the ranks after it, `--nnodes` the group size.
#[test]
fn leader_worker_sets_start_one_node_per_pod() {
    for size in [2u32, 4] {
        let p = lws("prefill", size, true, "");
        let d = lws("decode", size, true, "");
        let l = run(&[("p.yaml", &p), ("d.yaml", &d), ("lb.yaml", LWS_ROUTER)]);
        assert_eq!(l.groups.len(), 1);
        assert_eq!(l.launches.len(), 2 * size as usize + 1, "{:?}", l.launches);
        assert!(codes(&l).is_empty(), "size {size}: {:#?}", l.findings);
        // Each object's leader address is its own: the two rendezvous are told apart.
        assert!(!notes(&l).contains(&"PD044"), "size {size}: {:#?}", l.findings);
        let dist = |side: &str| {
            l.groups[0].servers.iter().find(|s| s.view.label.starts_with(side)).unwrap().view.explicit("dist_init_addr")
        };
        assert_eq!(dist("prefill").as_deref(), Some("r1-prefill-0.r1-prefill:20102"));
        assert_eq!(dist("decode").as_deref(), Some("r1-decode-0.r1-decode:20102"));
        let r = reconstruct::deployment(&l, 0).expect("reconstructs");
        for side in [&r.deployment.prefill, &r.deployment.decode] {
            assert_eq!(side.instances.len(), 1, "size {size}: {:?}", r.notes);
            assert_eq!(side.instances[0].nodes.len(), size as usize, "size {size}: {:?}", r.notes);
        }
    }
    // Without a leader template the worker template starts the leader too.
    let p = lws("prefill", 2, false, "");
    let l = run(&[("p.yaml", &p), ("d.yaml", &lws("decode", 2, true, "")), ("lb.yaml", LWS_ROUTER)]);
    let ranks: Vec<usize> =
        l.groups[0].servers.iter().filter(|s| s.view.label.starts_with("prefill")).map(|s| s.view.node).collect();
    assert_eq!(ranks, [0, 1]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    // The worker template stands for every worker pod: its repeated flag is found on each, and
    // reported once for the three pods, since it is written once.
    let p = lws("prefill", 4, true, ", --page-size, \"64\"");
    let l = run(&[("p.yaml", &p), ("d.yaml", &lws("decode", 4, true, "")), ("lb.yaml", LWS_ROUTER)]);
    let worker: Vec<&str> = l
        .findings
        .iter()
        .filter(|f| f.finding.code == "PD041" && f.places.iter().all(|p| p.line == 24))
        .map(|f| f.finding.message.as_str())
        .collect();
    assert_eq!(worker.len(), 1, "{:#?}", l.findings);
    assert!(
        worker[0].contains("prefill[0] node 1 (p.yaml:24)")
            && worker[0].ends_with("(and 2 more like it at the same places)")
    );
}

/// A group of hundreds of servers and findings: every finding once, each place once.
#[test]
fn a_large_group_reports_each_finding_once() {
    let docs: Vec<String> = (0..40).map(|_| lws("prefill", 4, true, ", --page-size, x")).collect();
    let text = docs.join("---\n");
    let l = run(&[("p.yaml", &text), ("d.yaml", &lws("decode", 4, true, "")), ("lb.yaml", LWS_ROUTER)]);
    assert_eq!(l.launches.len(), 40 * 4 + 4 + 1);
    assert!(l.findings.len() > 64, "{}", l.findings.len());
    for (i, f) in l.findings.iter().enumerate() {
        let again =
            l.findings[..i].iter().any(|o| o.finding.code == f.finding.code && o.finding.message == f.finding.message);
        assert!(!again, "reported twice: {}", f.finding.message);
        for (j, p) in f.places.iter().enumerate() {
            assert!(!f.places[..j].contains(p), "placed twice: {p:?}");
        }
    }
}

/// A two-node prefill written out node by node, whose node 1 copy kept an old page size and
/// context length: PD046 names both options, and the fix gives node 1 the values of node 0. The
/// options that name the node itself, or that only node 0's front end reads, may differ.
#[test]
fn nodes_of_one_server_must_share_their_arguments() {
    let node = |rank: u32, host: &str, own: &str| {
        format!(
            "python -m sglang.launch_server --model-path m --disaggregation-mode prefill --tp-size 16 \
             --dist-init-addr 10.0.0.1:5000 --nnodes 2 --node-rank {rank} --host {host} --port 30000 \
             --disaggregation-ib-device mlx5_{rank}{own} &\n"
        )
    };
    let decode = "python -m sglang.launch_server --model-path m --disaggregation-mode decode --tp-size 16 \
        --dist-init-addr 10.0.0.3:5000 --nnodes 2 --node-rank 0 --host 10.0.0.3 --port 30000 --page-size 64 --context-length 8192 &\n\
        python -m sglang.launch_server --model-path m --disaggregation-mode decode --tp-size 16 \
        --dist-init-addr 10.0.0.3:5000 --nnodes 2 --node-rank 1 --host 10.0.0.4 --base-gpu-id 0 --page-size 64 --context-length 8192 &\n";
    let text = [
        node(0, "10.0.0.1", " --page-size 64 --context-length 8192 --enable-metrics --log-level debug"),
        node(1, "10.0.0.2", " --page-size 16"),
        decode.to_owned(),
    ]
    .concat();
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(codes(&l), ["PD046"], "{:#?}", l.findings);
    let f = &l.findings[0].finding;
    assert_eq!(
        f.message,
        "prefill[0] node 1 (pd.sh:2) starts with other arguments than prefill[0] node 0 (pd.sh:1): \
         --page-size `16` (node 0: `64`), --context-length unset (node 0: `8192`)"
    );
    let after = fixed(&[("pd.sh", &text)]);
    assert!(after[0].lines().nth(1).unwrap().ends_with("--page-size 64 --context-length 8192 &"), "{}", after[0]);
    assert!(codes(&run(&[("pd.sh", &after[0])])).is_empty());

    // One worker template stands for nodes 1 to 3: one finding names them all.
    let p = lws("prefill", 4, true, "").replacen(
        "--page-size, \"64\"",
        "--page-size, \"64\", --context-length, \"4096\"",
        1,
    );
    let l = run(&[("p.yaml", &p), ("d.yaml", &lws("decode", 4, true, "")), ("lb.yaml", LWS_ROUTER)]);
    let f: Vec<_> = l.findings.iter().filter(|f| f.finding.code == "PD046").collect();
    assert_eq!(f.len(), 1, "{:#?}", l.findings);
    assert!(
        f[0].finding.message.starts_with(
            "prefill[0] node 1 (p.yaml:24), prefill[0] node 2 (p.yaml:24), \
        prefill[0] node 3 (p.yaml:24) start with other arguments than prefill[0] node 0 (p.yaml:13): --context-length \
        unset (node 0: `4096`)"
        ),
        "{}",
        f[0].finding.message
    );
}

/// Two 2-node prefills whose rank-0 nodes rendezvous at the same `--dist-init-addr` (found by
/// `proptests::round_trip`): each rank appears twice, so they are two instances, and PD019
/// names both; the reconstruction keeps both, each with its own port.
#[test]
fn two_instances_on_one_rendezvous_stay_two_instances() {
    let server = |mode: &str, port: u32, gpu: u32, extra: &str| {
        format!(
            "python -m sglang.launch_server --model-path m --disaggregation-mode {mode} --host 10.0.0.1 \
             --port {port} --base-gpu-id {gpu}{extra} &\n"
        )
    };
    let multi = |bootstrap: u32, rank: u32| {
        format!(
            " --disaggregation-bootstrap-port {bootstrap} --dist-init-addr 10.0.0.1:6060 --nnodes 2 --node-rank {rank}"
        )
    };
    let text = [
        server("prefill", 30000, 0, &multi(8998, 0)),
        server("prefill", 30000, 1, &multi(8998, 1)),
        server("prefill", 30002, 2, &multi(8999, 0)),
        server("prefill", 30002, 3, &multi(8999, 1)),
        server("decode", 30001, 4, ""),
        "python -m sglang_router.launch_router --pd-disaggregation --prefill http://10.0.0.1:30000 8998 \
         --prefill http://10.0.0.1:30002 8999 --decode http://10.0.0.1:30001 --host 0.0.0.0 --port 8000\n"
            .to_owned(),
    ]
    .concat();
    let l = run(&[("pd.sh", &text)]);
    assert_eq!(l.groups.len(), 1);
    let clash = l
        .findings
        .iter()
        .find(|f| f.finding.code == "PD019" && f.finding.message.contains("6060"))
        .expect("rendezvous collision reported");
    assert!(
        clash.finding.message.contains("prefill[0] node 0") && clash.finding.message.contains("prefill[1] node 0"),
        "{}",
        clash.finding.message
    );
    let r = reconstruct::deployment(&l, 0).expect("reconstructs");
    let ports: Vec<_> = r.deployment.prefill.instances.iter().map(|i| (i.port, i.nodes.len())).collect();
    assert_eq!(ports, [(Some(30000), 2), (Some(30002), 2)], "notes: {:?}", r.notes);
}

#[test]
fn a_node_rank_past_nnodes_is_left_out_of_the_reconstruction() {
    let p = " --nnodes 2 --node-rank 2147483647 --dist-init-addr 10.0.0.1:5000 --host 10.0.0.1";
    let l = run(&[("pd.sh", &pd(p, ""))]);
    let r = reconstruct::deployment(&l, 0).expect("reconstructs");
    assert_eq!(r.deployment.prefill.instances[0].nodes.len(), 2, "notes: {:?}", r.notes);
    assert!(
        r.notes.iter().any(|n| n.contains("has node rank 2147483647 but its instance spans 2 node(s): it is left out")),
        "{:?}",
        r.notes
    );
}

#[test]
fn fixes_name_flags_not_deployment_fields() {
    let l = run(&[("pd.sh", &pd(" --page-size 64", " --kv-cache-dtype fp8_e4m3"))]);
    let texts: Vec<String> = l.findings.iter().map(|f| format!("{} {}", f.finding.message, f.finding.fix)).collect();
    let page = texts.iter().find(|t| t.contains("page_size=64")).expect("PD001");
    assert!(page.contains("set `--page-size` of every server to 64"), "{page}");
    let dtype = texts.iter().find(|t| t.contains("kv_cache_dtype=auto")).expect("PD002");
    assert!(dtype.contains("`--kv-cache-dtype` of every server"), "{dtype}");
    for t in &texts {
        assert!(!t.contains("`shared.") && !t.contains("`decode.") && !t.contains("`prefill."), "{t}");
    }
}

/// A SLURM job whose prefill and decode each run on two nodes through one srun: `{P}` is the
/// prefill's srun command around `{ARGS}`, its server arguments after the model path.
fn srun_job(prefill: &str) -> String {
    let args = "--disaggregation-mode prefill --tp-size 16 --dist-init-addr n1:5000 --host 0.0.0.0 --port 30000";
    let prefill = prefill.replace("{ARGS}", args);
    format!(
        "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --gres=gpu:h200:8\n\
         srun -w n[1-2] {prefill} &\n\
         srun --nodes=2 --ntasks-per-node=1 -w n[3-4] bash -c 'python3 -m sglang.launch_server --model-path m \
         --disaggregation-mode decode --tp-size 16 --dist-init-addr n3:5000 --nnodes 2 --node-rank $SLURM_NODEID \
         --host 0.0.0.0 --port 30001' &\n\
         python3 -m sglang_router.launch_router --pd-disaggregation --prefill http://n1:30000 --decode http://n3:30001 --port 8000\n"
    )
}

#[test]
fn srun_starts_a_command_on_each_node_of_its_step() {
    let node_ranks = |l: &Linted, side: &str| -> Vec<usize> {
        l.groups[0].servers.iter().filter(|s| s.view.label.starts_with(side)).map(|s| s.view.node).collect()
    };
    // Single quotes leave `$SLURM_NODEID` to each task's shell: one node each, ranks 0 and 1.
    for prefill in [
        "--nodes=2 bash -c 'python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank $SLURM_NODEID'",
        "-N2 -n 2 bash -c \"python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank \\${SLURM_PROCID}\"",
    ] {
        let l = run(&[("job.sbatch", &srun_job(prefill))]);
        assert_eq!(l.launches.len(), 5, "{prefill}");
        assert_eq!(node_ranks(&l, "prefill"), [0, 1], "{prefill}");
        assert_eq!(node_ranks(&l, "decode"), [0, 1], "{prefill}");
        assert!(codes(&l).is_empty() && !notes(&l).contains(&"PD044"), "{prefill}: {:#?}", l.findings);
    }
    // A server of one node runs once per node: two replicas.
    let l = run(&[("job.sbatch", &srun_job("-N 2 python3 -m sglang.launch_server --model-path m {ARGS}"))]);
    assert_eq!(l.launches.len(), 5);
    assert_eq!(l.groups[0].servers.iter().filter(|s| s.view.label.starts_with("prefill")).count(), 2);
    // Several tasks per node, one node, or a count known at run time: read once, as before.
    for prefill in ["-N 2 -n 4", "--nodes=2 --ntasks-per-node=2", "-N 1", "-N 2-4", "-N $NODES", "-N 65"] {
        let command = format!("{prefill} bash -c 'python3 -m sglang.launch_server --model-path m {{ARGS}}'");
        assert_eq!(run(&[("job.sbatch", &srun_job(&command))]).launches.len(), 4, "{prefill}");
    }
}

#[test]
fn srun_giving_every_node_one_rank_is_reported() {
    let cases = [
        // Expanded by the script's shell: on the srun line, or inside double quotes.
        ("--nodes=2 python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank $SLURM_NODEID", "`$SLURM_NODEID` is expanded once"),
        ("-N 2 bash -c \"python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank ${SLURM_NODEID}\"", "`${SLURM_NODEID}` is expanded once"),
        // A literal rank, or none, is the same on every node.
        ("-N 2 bash -c 'python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank 0'", "the same `--node-rank 0`"),
        ("-N 2 python3 -m sglang.launch_server --model-path m {ARGS} --nnodes=2", "the same `--node-rank 0`"),
    ];
    for (prefill, says) in cases {
        let l = run(&[("job.sbatch", &srun_job(prefill))]);
        let f: Vec<_> = l.findings.iter().filter(|f| f.finding.code == "PD047").collect();
        assert_eq!(f.len(), 1, "{prefill}: {:#?}", l.findings);
        let message = &f[0].finding.message;
        assert!(
            message.starts_with("prefill[0] node 0 (job.sbatch:4): srun starts this server on 2 nodes"),
            "{message}"
        );
        assert!(message.contains(says), "{prefill}: {message}");
        assert!(!notes(&l).contains(&"PD044"), "the variable is explained, not reported unknown: {:#?}", l.findings);
    }
    // A rank in a variable of the script's own stays unknown.
    let l = run(&[(
        "job.sbatch",
        &srun_job("-N 2 python3 -m sglang.launch_server --model-path m {ARGS} --nnodes 2 --node-rank $RANK"),
    )]);
    assert!(!codes(&l).contains(&"PD047"), "{:#?}", l.findings);
}

#[test]
fn srun_inside_an_srun_task_is_not_read_per_node_again() {
    // A 64-node step whose tasks each start a 64-node step: read per node once (64 launches, not
    // 4,096), as deeper nesting would multiply further.
    let job = "srun -N 64 bash -c 'srun -N 64 bash -c \"python3 -m sglang.launch_server --model-path m --port \\$SLURM_NODEID\"'";
    let l = run(&[("job.sh", job)]);
    assert_eq!(l.launches.len(), 64);
}

#[test]
fn node_ranks_must_cover_zero_to_nnodes() {
    // Two-node servers written out once per node; `{P1}` is the prefill's second line's rank and
    // `{N}` every node's `--nnodes`.
    let job = |rank1: &str, nnodes: &str| {
        let node = |mode: &str, rank: &str, host: &str, rdv: &str, port: u16| {
            format!(
                "python3 -m sglang.launch_server --model-path m --disaggregation-mode {mode} --tp 16 --nnodes {nnodes} \
                 --node-rank {rank} --dist-init-addr {rdv}:5000 --host {host} --port {port}\n"
            )
        };
        [
            node("prefill", "0", "h1", "h1", 30000),
            node("prefill", rank1, "h2", "h1", 30000),
            node("decode", "0", "h3", "h3", 30000),
            node("decode", "1", "h4", "h3", 30000),
            "python3 -m sglang_router.launch_router --pd-disaggregation --prefill http://h1:30000 --decode \
             http://h3:30000 --port 8000\n"
                .to_owned(),
        ]
        .concat()
    };
    let pd048 = |l: &Linted| -> Vec<(Severity, String)> {
        l.findings
            .iter()
            .filter(|f| f.finding.code == "PD048")
            .map(|f| (f.finding.severity, f.finding.message.clone()))
            .collect()
    };
    assert!(pd048(&run(&[("nodes.sh", &job("1", "2"))])).is_empty());
    // A copied line that kept its rank past the node count.
    let f = pd048(&run(&[("nodes.sh", &job("2", "2"))]));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, Severity::Error);
    assert!(f[0].1.contains("prefill[0] node 2 (nodes.sh:2) has `--node-rank 2` but `--nnodes 2`"), "{}", f[0].1);
    // `--nnodes` raised without the node: each side waits for its node 2.
    let f = pd048(&run(&[("nodes.sh", &job("1", "3"))]));
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0].0, Severity::Warning);
    assert!(f[0].1.contains("has `--nnodes 3`, but the linted material starts only nodes 0 and 1"), "{}", f[0].1);
    // One node of a server in the material says nothing about files not linted.
    let node0 = job("1", "3").lines().next().unwrap().to_owned();
    assert!(pd048(&run(&[("node0.sh", &node0)])).is_empty());
}

#[test]
fn skipped_geometry_notes_say_how_to_name_the_model_to_the_linter() {
    let text = "python3 -m sglang.launch_server --model-path /m/local --disaggregation-mode prefill --tp 8 &\n\
                python3 -m sglang.launch_server --model-path /m/local --disaggregation-mode decode --tp 8 \
                --port 30001 --max-running-requests 64 &\n";
    let l = run(&[("run.sh", text)]);
    let skipped: Vec<_> = l.findings.iter().filter(|f| f.finding.message.contains("model geometry unknown")).collect();
    assert!(skipped.len() >= 3, "{:#?}", l.findings);
    for f in skipped {
        assert!(f.finding.fix.starts_with("name the model to the linter"), "{}", f.finding.fix);
    }
    let named =
        lint(&inputs(&[("run.sh", text)]), &Options { model_preset: Some("qwen3-32b".into()), ..Options::default() });
    assert!(
        !named.findings.iter().any(|f| f.finding.message.contains("model geometry unknown")),
        "{:#?}",
        named.findings
    );
}

#[test]
fn copies_on_one_gpu_and_port_are_each_reported_once() {
    // A prefill line pasted four times on one machine: each copy after the first takes GPU 0, port
    // 30000 and bootstrap port 8998 again. One finding per copy and resource, against the first.
    let line = "python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --host 10.0.0.1 \
                --port 30000 &\n";
    let text = format!(
        "{}python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --host 10.0.0.2 &\n",
        line.repeat(4)
    );
    let l = run(&[("copies.sh", &text)]);
    let count = |code: &str| l.findings.iter().filter(|f| f.finding.code == code).count();
    assert_eq!(count("PD020"), 3, "{:#?}", l.findings);
    assert_eq!(count("PD019"), 6, "HTTP and bootstrap port of each copy: {:#?}", l.findings);
    for f in l.findings.iter().filter(|f| f.finding.code == "PD020") {
        assert!(f.finding.message.starts_with("prefill[0] (copies.sh:1) uses"), "{}", f.finding.message);
    }
}

#[test]
fn an_srun_node_is_the_machine_of_its_step() {
    // Prefill and decode sent to one node, each on GPUs 0-7: they share the node's GPUs.
    let job = |decode_node: &str| {
        format!(
            "#!/bin/bash\n#SBATCH --gres=gpu:h200:8\n\
             srun -N1 -w node01 python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill --tp 8 \
             --host 0.0.0.0 --port 30000 &\n\
             srun --nodes=1 {decode_node} python3 -m sglang.launch_server --model-path m --disaggregation-mode decode \
             --tp 8 --host 0.0.0.0 --port 30001 &\n"
        )
    };
    let gpu = |l: &Linted| l.findings.iter().filter(|f| f.finding.code == "PD020").count();
    for same in ["-w node01", "--nodelist=node01", "--nodelist node01", "-wnode01"] {
        let l = run(&[("job.sbatch", &job(same))]);
        assert_eq!(gpu(&l), 1, "{same}: {:#?}", l.findings);
        assert!(l.groups[0].servers.iter().all(|s| s.view.host == "node01"), "{same}");
    }
    // Another node, a list, a range or a variable: no machine in common is known.
    // A step with GPUs of its own (Slurm sets its CUDA_VISIBLE_DEVICES) shares no GPU index meaning.
    for other in ["-w node02", "-w node01,node02", "-w node[01-02]", "-w $DECODE_NODE", "", "-w node01 --gres=gpu:8"] {
        let l = run(&[("job.sbatch", &job(other))]);
        assert_eq!(gpu(&l), 0, "{other}: {:#?}", l.findings);
    }
}

#[test]
fn an_element_of_the_job_nodes_array_names_one_node() {
    // `nodes=($(scontrol show hostnames ...))`, then one step per element, both binding the
    // address of the node they run on: the same element is one node, another element another.
    let job = |p: &str, d: &str| {
        format!(
            "#!/bin/bash\nnodes=($(scontrol show hostnames \"$SLURM_JOB_NODELIST\"))\n\
             srun -N1 -n1 -w {p} bash -c 'python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill \
             --tp 8 --host $(hostname -i) --port 30000' &\n\
             srun -N1 -n1 -w {d} bash -c 'python3 -m sglang.launch_server --model-path m --disaggregation-mode decode \
             --tp 8 --host $(hostname -i) --port 30000' &\nwait\n"
        )
    };
    let said = |l: &Linted| -> Vec<(&str, Severity)> {
        let mut v: Vec<_> = l
            .findings
            .iter()
            .filter(|f| matches!(f.finding.code, "PD019" | "PD020"))
            .map(|f| (f.finding.code, f.finding.severity))
            .collect();
        crate::sort::sort(&mut v);
        v
    };
    let l = run(&[("job.sbatch", &job("${nodes[0]}", "${nodes[0]}"))]);
    assert_eq!(said(&l), [("PD019", Severity::Error), ("PD020", Severity::Error)], "{:#?}", l.findings);
    let l = run(&[("job.sbatch", &job("${nodes[0]}", "${nodes[1]}"))]);
    assert_eq!(said(&l), [], "{:#?}", l.findings);
    // A loop's index names a node per iteration, a command substitution none: Slurm may pack
    // such steps on one node, so what would collide there is a note.
    for (p, d) in [("${nodes[$i]}", "${nodes[$i]}"), ("$(hostname)", "$(hostname)")] {
        let l = run(&[("job.sbatch", &job(p, d))]);
        assert_eq!(said(&l), [("PD019", Severity::Note), ("PD020", Severity::Note)], "{p}: {:#?}", l.findings);
    }
}

#[test]
fn pods_are_machines_of_their_own() {
    // Two pods binding `$(POD_IP)` on one port: two machines. Two containers of one pod: one.
    let container = |role: &str, port: u16| {
        format!(
            "    - name: {role}\n      image: lmsysorg/sglang:v0.5.10.post1\n      env:\n        - name: POD_IP\n          \
             valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}\n      command: [python3, -m, sglang.launch_server, \
             --model-path, m, --disaggregation-mode, {role}, --host, $(POD_IP), --port, \"{port}\"]\n"
        )
    };
    let pod = |name: &str, containers: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n{containers}")
    };
    let ports = |l: &Linted| -> Vec<Severity> {
        l.findings.iter().filter(|f| f.finding.code == "PD019").map(|f| f.finding.severity).collect()
    };
    let two = [pod("p", &container("prefill", 30000)), pod("d", &container("decode", 30000))].join("---\n");
    let l = run(&[("pods.yaml", &two)]);
    assert_eq!(ports(&l), [], "{:#?}", l.findings);
    let one = pod("pd", &[container("prefill", 30000), container("decode", 30000)].concat());
    let l = run(&[("pod.yaml", &one)]);
    assert_eq!(ports(&l), [Severity::Error], "{:#?}", l.findings);
    assert!(l.findings.iter().any(|f| f.finding.message.contains("(the pod at pod.yaml:5)")), "{:#?}", l.findings);
}

#[test]
fn a_release_between_known_ones_is_read_with_the_one_before_and_said() {
    let script = |image: &str| {
        format!(
            "services:\n  prefill:\n    image: {image}\n    command: python3 -m sglang.launch_server --model-path m \
             --disaggregation-mode prefill --port 30000 --cuda-graph-max-bs 8\n  decode:\n    image: {image}\n    \
             command: python3 -m sglang.launch_server --model-path m --disaggregation-mode decode --port 30001 \
             --cuda-graph-max-bs 8\n"
        )
    };
    // `--cuda-graph-max-bs` is ambiguous in 0.5.23 only: an image of 0.5.8 is read with 0.5.6.
    let l = run(&[("compose.yaml", &script("lmsysorg/sglang:v0.5.8.post1-cu130"))]);
    assert_eq!(l.groups[0].release, Release::V0_5_6);
    assert_eq!(codes(&l), Vec::<&str>::new(), "{:#?}", l.findings);
    let note = l.findings.iter().find(|f| f.finding.message.contains("the material names")).expect("a note");
    assert_eq!((note.finding.code, note.finding.severity), ("PD024", Severity::Note));
    assert!(note.finding.message.contains("SGLang 0.5.8.post1") && note.finding.message.contains("0.5.6.post2"));
    // A known release says nothing.
    let l = run(&[("compose.yaml", &script("lmsysorg/sglang:v0.5.19"))]);
    assert!(l.findings.iter().all(|f| f.finding.code != "PD024"), "{:#?}", l.findings);
    // An option 0.5.6 lacks but 0.5.10 has may be 0.5.8's: a note, where 0.5.6 itself is an error.
    let newer = |image: &str| script(image).replace("--cuda-graph-max-bs 8", "--disable-piecewise-cuda-graph");
    let l = run(&[("compose.yaml", &newer("lmsysorg/sglang:v0.5.8"))]);
    let unknown: Vec<_> = l.findings.iter().filter(|f| f.finding.message.contains("has no option")).collect();
    assert!(!unknown.is_empty() && unknown.iter().all(|f| f.finding.severity == Severity::Note), "{unknown:#?}");
    assert!(unknown[0].finding.message.ends_with("0.5.8 lies between 0.5.6.post2 and 0.5.10.post1, which has it"));
    let l = run(&[("compose.yaml", &newer("lmsysorg/sglang:v0.5.6.post2"))]);
    assert!(codes(&l).contains(&"PD024"), "{:#?}", l.findings);
}

/// The replicas of a LeaderWorkerSet are instances on pods of their own, named after the object
/// and the group: replicas sharing a port are told apart, a router entry may name the pod in any
/// form that resolves in the cluster, and a literal rendezvous address they share is an error.
#[test]
fn leader_worker_set_replicas_are_instances_on_pods_of_their_own() {
    let two = crate::render::render_kubernetes(&crate::examples::example("qwen3-2p1d-nixl").unwrap()).unwrap().contents;
    let l = run(&[("k8s.yaml", &two)]);
    assert_eq!(l.launches.len(), 4);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    let hosts: Vec<&str> = l.groups[0].servers.iter().map(|s| s.view.host.as_str()).collect();
    assert_eq!(
        hosts,
        [
            "qwen3-2p1d-nixl-prefill-0.qwen3-2p1d-nixl-prefill",
            "qwen3-2p1d-nixl-prefill-1.qwen3-2p1d-nixl-prefill",
            "qwen3-2p1d-nixl-decode-0.qwen3-2p1d-nixl-decode"
        ]
    );
    // In a namespace, and with the router naming the pods by their full names.
    let ns = two
        .replace("\nmetadata:\n  name:", "\nmetadata:\n  namespace: prod\n  name:")
        .replace("-prefill:30000", "-prefill.prod.svc.cluster.local:30000");
    assert!(codes(&run(&[("k8s.yaml", &ns)])).is_empty());
    // One literal rendezvous address for every group: the groups would meet at one leader.
    let mut d = crate::examples::example("deepseek-v3-dp-deepep").unwrap();
    d.prefill.instances.push(d.prefill.instances[0].clone());
    let text = crate::render::render_kubernetes(&d).unwrap().contents.replace("$(LWS_LEADER_ADDRESS)", "10.0.0.1");
    let l = run(&[("k8s.yaml", &text)]);
    assert_eq!(l.launches.len(), 7);
    let found: Vec<&str> = l
        .findings
        .iter()
        .filter(|f| f.finding.severity == Severity::Error)
        .map(|f| f.finding.message.as_str())
        .collect();
    assert!(!found.is_empty() && found.iter().all(|m| m.contains("ports 5000-5006 on host 10.0.0.1")), "{found:#?}");
}

/// A router that finds its servers by their pods' labels (SGLang's gateway guide): each pod its
/// selectors match is an entry at the discovery port, a prefill's bootstrap port is its pod's
/// annotation, and a selector that matches no pod leaves that side unserved.
#[test]
fn a_discovering_router_serves_the_pods_its_selectors_match() {
    let worker = |role: &str, port: u16, annotation: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: llama-{role}, namespace: prod}}\nspec:\n  template:\n    \
             metadata:\n      labels: {{app: sglang-worker, component: {role}}}\n{annotation}    spec:\n      containers:\n      \
             - name: {role}\n        command: [python3, -m, sglang.launch_server, --model-path, meta-llama/Llama-3.1-8B-Instruct, \
             --disaggregation-mode, {role}, --host, 0.0.0.0, --port, '{port}']\n---\n"
        )
    };
    let router = |selector: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: gateway, namespace: prod}}\nspec:\n  template:\n    spec:\n      \
             containers:\n      - name: router\n        command: [python3, -m, sglang_router.launch_router, --pd-disaggregation, \
             --service-discovery, --prefill-selector, app=sglang-worker, component={selector}, --decode-selector, \
             app=sglang-worker, component=decode, --service-discovery-port, '8000', --service-discovery-namespace, prod]\n"
        )
    };
    let bootstrap = |port: &str| format!("      annotations: {{sglang.ai/bootstrap-port: '{port}'}}\n");
    let text = worker("prefill", 8000, &bootstrap("8998")) + &worker("decode", 8000, "") + &router("prefill");
    let l = run(&[("gw.yaml", &text)]);
    assert_eq!(l.groups.len(), 1, "{:#?}", l.groups);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    let r = l.groups[0].router.as_ref().unwrap();
    assert_eq!((r.view.prefills.len(), r.view.decodes.len(), r.view.prefills[0].bootstrap_port), (1, 1, Some(8998)));
    // The annotation names another port than the prefill binds: PD017, with no words to fix.
    let text = worker("prefill", 8000, &bootstrap("9000")) + &worker("decode", 8000, "") + &router("prefill");
    let l = run(&[("gw.yaml", &text)]);
    assert!(codes(&l).contains(&"PD017"), "{:#?}", l.findings);
    assert_eq!(fixed(&[("gw.yaml", &text)]), std::slice::from_ref(&text));
    // The reconstruction discovers too.
    let back = crate::lint::reconstruct::deployment(&run(&[("gw.yaml", &text)]), 0).unwrap().deployment;
    assert!(back.kubernetes.service_discovery && back.kubernetes.namespace.as_deref() == Some("prod"));
    assert!(back.router.extra_args.is_empty(), "{:?}", back.router.extra_args);
    // A selector that matches no pod, and a server on another port than the router reaches.
    let text = worker("prefill", 8000, &bootstrap("8998")) + &worker("decode", 8001, "") + &router("prefil");
    let l = run(&[("gw.yaml", &text)]);
    assert!(l.groups.iter().all(|g| g.router.as_ref().is_none_or(|r| r.view.prefills.is_empty())));
    let misses: Vec<&str> =
        l.findings.iter().filter(|f| f.finding.code == "PD049").map(|f| f.finding.message.as_str()).collect();
    assert_eq!(misses.len(), 2, "{:#?}", l.findings);
    assert!(misses[0].contains(
        "`--prefill-selector app=sglang-worker component=prefil` matches no prefill server pod in namespace prod"
    ));
    assert!(
        misses[1].contains("reaches decode[0] (gw.yaml:24)") && misses[1].contains("listens on 8001"),
        "{}",
        misses[1]
    );
    // Pods of another namespace are not the router's.
    // The router's own namespace, from its pod's environment: not known here, so no filter.
    let own = (worker("prefill", 8000, &bootstrap("8998")) + &worker("decode", 8000, "") + &router("prefill"))
        .replace("--service-discovery-namespace, prod]", "--service-discovery-namespace, $(POD_NAMESPACE)]");
    assert!(own.contains("$(POD_NAMESPACE)"));
    let l = run(&[("gw.yaml", &own)]);
    assert!(codes(&l).is_empty() && l.groups.len() == 1, "{:#?}", l.findings);
    let back = crate::lint::reconstruct::deployment(&l, 0).unwrap().deployment;
    assert_eq!(back.kubernetes.namespace.as_deref(), Some("prod"), "the pods' namespace, not the variable");
    let nowhere = own.replace(", namespace: prod}", "}");
    let back = crate::lint::reconstruct::deployment(&run(&[("gw.yaml", &nowhere)]), 0).unwrap().deployment;
    assert!(back.kubernetes.service_discovery && back.kubernetes.namespace.is_none(), "{:?}", back.kubernetes);
    let elsewhere = text.replace("llama-decode, namespace: prod", "llama-decode, namespace: dev");
    assert_ne!(elsewhere, text);
    let l = run(&[("gw.yaml", &elsewhere)]);
    assert!(l.findings.iter().any(|f| f.finding.message.contains("matches no decode server pod")), "{:#?}", l.findings);
}

/// A router entry that reaches several prefill pods through one address (a Service) pairs the
/// decode with one of them only: PD051. An entry per pod, a multi-node server's pods, decode
/// replicas and the groups' own machines are not.
#[test]
fn prefill_pods_behind_one_address_are_found() {
    let server = |kind: &str, name: &str, role: &str, replicas: u32, extra: &str| {
        format!(
            "apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  template:\n    \
             spec:\n      containers:\n      - name: {role}\n        command: [python3, -m, sglang.launch_server, \
             --model-path, meta-llama/Llama-3.1-8B-Instruct, --disaggregation-mode, {role}, --host, 0.0.0.0, --port, \
             '30000'{extra}]\n---\n"
        )
    };
    let router = |prefills: &[&str]| {
        let entries: String = prefills.iter().map(|p| format!("--prefill, 'http://{p}:30000', '8998', ")).collect();
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: router}}\nspec:\n  template:\n    spec:\n      \
             containers:\n      - name: router\n        command: [python3, -m, sglang_router.launch_router, \
             --pd-disaggregation, {entries}--decode, 'http://d:30000']\n"
        )
    };
    let behind = |text: &str| -> Vec<String> {
        let l = run(&[("k.yaml", text)]);
        let errors: Vec<&str> = codes(&l).into_iter().filter(|c| *c != "PD051").collect();
        assert!(errors.is_empty(), "{:#?}", l.findings);
        l.findings.iter().filter(|f| f.finding.code == "PD051").map(|f| f.finding.message.clone()).collect()
    };
    let decode = server("Deployment", "d", "decode", 3, "");
    // Two replicas of a prefill Deployment behind its Service.
    let text = server("Deployment", "p", "prefill", 2, "") + &decode + &router(&["p"]);
    let found = behind(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with(
        "router entry `--prefill http://p:30000 8998` reaches 2 prefill pods through one address (the 2 replicas of \
         prefill[0] (k.yaml:10))"
    ), "{}", found[0]);
    // One replica, or an address that is an IP, reaches one pod.
    assert!(behind(&(server("Deployment", "p", "prefill", 1, "") + &decode + &router(&["p"]))).is_empty());
    assert!(behind(&(server("Deployment", "p", "prefill", 2, "") + &decode + &router(&["10.1.2.3"]))).is_empty());
    // A StatefulSet's pods listed by name, each or one: each entry reaches one pod.
    let set = server("StatefulSet", "p", "prefill", 2, "");
    assert!(behind(&(set.clone() + &decode + &router(&["p-0.p", "p-1.p"]))).is_empty());
    assert!(behind(&(set.clone() + &decode + &router(&["p-0.p.llm.svc.cluster.local"]))).is_empty());
    assert_eq!(behind(&(set + &decode + &router(&["p"]))).len(), 1);
    // Two replicas that are the two nodes of one server.
    let nodes = server("StatefulSet", "p", "prefill", 2, ", --tp-size, '2', --nnodes, '2', --node-rank, $(POD_INDEX)");
    let decode2 = server("Deployment", "d", "decode", 3, ", --tp-size, '2'");
    assert!(behind(&(nodes + &decode2 + &router(&["p"]))).is_empty());

    // The groups of a LeaderWorkerSet behind its Service: one finding, and no port or GPU shared,
    // since each leader is a pod of its own.
    let lws = |prefill: &str| {
        format!(
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: p}}\nspec:\n  replicas: 2\n  \
             leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n        containers:\n        - name: prefill\n          \
             command: [python3, -m, sglang.launch_server, --model-path, meta-llama/Llama-3.1-8B-Instruct, \
             --disaggregation-mode, prefill, --host, 0.0.0.0, --port, '30000']\n---\n{decode}{}",
            router(&[prefill])
        )
    };
    let found = behind(&lws("p"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("reaches 2 prefill pods through one address (the leaders of prefill[0]"), "{}", found[0]);
    // The router lists one leader: it reaches that pod, and the other group is its own machine.
    assert!(behind(&lws("p-0.p")).is_empty());
    // Reconstructed, each group is at its leader's name, not at the Service both were reached at.
    let back = crate::lint::reconstruct::deployment(&run(&[("k.yaml", &lws("p"))]), 0).unwrap().deployment;
    let leaders: Vec<&str> = back.prefill.instances.iter().map(|i| i.nodes[0].host.as_str()).collect();
    assert_eq!(leaders, ["p-0.p", "p-1.p"]);
    assert!(crate::rules::check(&back).is_clean());

    // Reconstructed, the replicas are instances of their own, at their pods' names, so the
    // deployment renders one router entry per prefill pod and checks clean.
    let text = server("StatefulSet", "p", "prefill", 2, "") + &decode + &router(&["p"]);
    let back = crate::lint::reconstruct::deployment(&run(&[("k.yaml", &text)]), 0).unwrap();
    let hosts =
        |s: &crate::deployment::Side| -> Vec<String> { s.instances.iter().map(|i| i.nodes[0].host.clone()).collect() };
    assert_eq!(hosts(&back.deployment.prefill), ["p-0.p", "p-1.p"]);
    assert_eq!(hosts(&back.deployment.decode), ["d-0.d", "d-1.d", "d-2.d"]);
    assert!(back.notes.iter().any(|n| n.contains("stands for the 2 replicas of `p`")), "{:?}", back.notes);
    let report = crate::rules::check(&back.deployment);
    assert!(report.is_clean(), "{:#?}", report.findings);
}

/// A Service between the router's prefill entry and the prefill: the decodes reach the bootstrap
/// server through it, so it must expose the bootstrap port and forward it to the one the prefill
/// binds (PD017); one that forwards a port to the right one links them.
#[test]
fn a_prefill_service_must_lead_to_the_bootstrap_server() {
    let text = |bound: u16, ports: &str, entry: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: p, namespace: llm}}\nspec:\n  template:\n    spec:\n      \
             containers:\n      - name: prefill\n        command: [python3, -m, sglang.launch_server, --model-path, \
             meta-llama/Llama-3.1-8B-Instruct, --disaggregation-mode, prefill, --host, 0.0.0.0, --port, '30000', \
             --disaggregation-bootstrap-port, '{bound}']\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {{name: p, namespace: llm}}\nspec:\n  selector: {{app: p}}\n  \
             ports: {ports}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: llm}}\nspec:\n  template:\n    spec:\n      \
             containers:\n      - name: decode\n        command: [python3, -m, sglang.launch_server, --model-path, \
             meta-llama/Llama-3.1-8B-Instruct, --disaggregation-mode, decode, --host, 0.0.0.0, --port, '30001']\n      \
             - name: router\n        command: [python3, -m, sglang_router.launch_router, --pd-disaggregation, \
             --prefill, 'http://{entry}:30000', '8998', --decode, 'http://127.0.0.1:30001']\n"
        )
    };
    let pd017 = |t: &str| -> Vec<String> {
        let l = run(&[("k.yaml", t)]);
        l.findings.iter().filter(|f| f.finding.code == "PD017").map(|f| f.finding.message.clone()).collect()
    };
    let both = "[{port: 30000}, {port: 8998}]";
    assert!(pd017(&text(8998, both, "p")).is_empty());
    let found = pd017(&text(8998, "[{port: 30000}]", "p.llm.svc.cluster.local"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("sends decodes to p.llm.svc.cluster.local:8998") && found[0].contains("exposes no port 8998")
    );
    // Forwarded to another port than the prefill binds; to the one it binds; to a named port.
    let found = pd017(&text(8998, "[{port: 30000}, {port: 8998, targetPort: 9000}]", "p"));
    assert!(found.len() == 1 && found[0].contains("forwards port 8998 to pod port 9000"), "{found:?}");
    assert!(pd017(&text(9000, "[{port: 30000}, {port: 8998, targetPort: 9000}]", "p")).is_empty());
    assert!(pd017(&text(8998, "[{port: 30000}, {port: 8998, targetPort: bootstrap}]", "p")).is_empty());
    // Without the Service the rule compares the two ports itself.
    assert_eq!(pd017(&text(9000, both, "p")).len(), 1);
    // A headless Service's name reaches the pods at any port; a Service of another namespace is
    // not the one the entry names.
    let headless = text(8998, "[{port: 30000}]", "p").replace("selector: {app: p}", "clusterIP: None");
    assert!(pd017(&headless).is_empty());
    assert!(pd017(&text(8998, "[{port: 30000}]", "p.other")).is_empty());
    // The router reaches the prefill at the pod port the Service forwards its entry's port to.
    let at_80 = |ports: &str| text(8998, ports, "p").replace("'http://p:30000'", "'http://p:80'");
    let l = run(&[("k.yaml", &at_80("[{port: 80, targetPort: 30000}, {port: 8998}]"))]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    assert_eq!(l.groups.len(), 1);
    let found = pd017(&at_80("[{port: 80}, {port: 8998}]"));
    assert!(found.len() == 1 && found[0].contains("matches no prefill server"), "{found:?}");
    // Ports that Kubernetes would refuse say nothing of where the Service leads.
    for unreadable in ["{}", "null", "[{port: 99999}]", "[{port: 0}]", "[8998]"] {
        assert!(pd017(&text(8998, unreadable, "p")).is_empty(), "{unreadable}");
    }
}

/// A Service port that names its target (`targetPort: http`) forwards to the container port of
/// that name in the pods it selects; the decode's port of the same name is not the prefill's.
#[test]
fn a_named_target_port_is_the_selected_pods_port_of_that_name() {
    let server = |role: &str, port: u16, bootstrap: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {role}}}\nspec:\n  template:\n    metadata:\n      \
             labels: {{app: {role}}}\n    spec:\n      containers:\n      - name: {role}\n        command: [python3, -m, \
             sglang.launch_server, --model-path, meta-llama/Llama-3.1-8B-Instruct, --disaggregation-mode, {role}, --host, \
             0.0.0.0, --port, '{port}']\n        ports: [{{name: http, containerPort: {port}}}{bootstrap}]\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {{name: {role}}}\nspec:\n  selector: {{app: {role}}}\n  ports: \
             [{{port: 80, targetPort: http}}, {{port: 8998, targetPort: bootstrap}}]\n---\n"
        )
    };
    let router =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: router}\nspec:\n  template:\n    spec:\n      \
                  containers:\n      - name: router\n        command: [python3, -m, sglang_router.launch_router, \
                  --pd-disaggregation, --prefill, 'http://prefill:80', '8998', --decode, 'http://decode:80']\n";
    let text =
        server("prefill", 30000, ", {name: bootstrap, containerPort: 8998}") + &server("decode", 30001, "") + router;
    let l = run(&[("k.yaml", &text)]);
    assert!(codes(&l).is_empty(), "{:#?}", l.findings);
    let r = l.groups[0].router.as_ref().unwrap();
    assert_eq!((r.view.prefills[0].server_port(), r.view.decodes[0].server_port()), (30000, 30001));
    // The prefill's container names no bootstrap port: where the Service leads is unknown.
    let text = server("prefill", 30000, "") + &server("decode", 30001, "") + router;
    assert!(codes(&run(&[("k.yaml", &text)])).is_empty());
    // The prefill names its bootstrap port elsewhere than it binds.
    let text =
        server("prefill", 30000, ", {name: bootstrap, containerPort: 9000}") + &server("decode", 30001, "") + router;
    let l = run(&[("k.yaml", &text)]);
    assert_eq!(codes(&l), ["PD017"], "{:#?}", l.findings);
}

/// The forms a server is started in: (name, the command for `python -m sglang.launch_server
/// ARGS` given its ARGS).
const LAUNCHERS: &[(&str, &str)] = &[
    ("bare", "python -m sglang.launch_server {}"),
    ("sglang serve", "sglang serve {}"),
    ("dynamo.sglang", "python3 -m dynamo.sglang {}"),
    ("dynamo.sglang.worker", "python3 -m dynamo.sglang.worker {}"),
    ("dynamo.sglang.decode_worker", "python3 -m dynamo.sglang.decode_worker {}"),
    ("components/worker.py", "python3 components/worker.py --skip-tokenizer-init {}"),
    ("examples/sglang/components/decode_worker.py", "python3 examples/sglang/components/decode_worker.py {}"),
    ("sglang_router.launch_server", "python3 -m sglang_router.launch_server --router-policy cache_aware {} --router-dp-worker-base-port 31000"),
    ("smg server", "smg server {} --router-log-level info"),
    ("nohup", "nohup python3 -u -m sglang.launch_server {} > server.log 2>&1"),
    ("env", "env -u HF_TOKEN SGLANG_LOG=1 python -m sglang.launch_server {}"),
    ("numactl", "numactl --cpunodebind=0 --membind=0 python -m sglang.launch_server {}"),
    ("timeout", "timeout --signal=TERM 3h python -m sglang.launch_server {}"),
    ("nsys", "nsys profile -o trace-%p --trace=cuda,nvtx python -m sglang.launch_server {}"),
    ("srun", "srun --overlap -N1 -n1 python -m sglang.launch_server {}"),
    ("docker image command", "docker run --rm --gpus all --network host lmsysorg/sglang:latest python3 -m sglang.launch_server {}"),
    ("docker --entrypoint", "docker run --rm --gpus all --network host --entrypoint python3 lmsysorg/sglang:latest -m sglang.launch_server {}"),
    ("docker --entrypoint=", "docker run --rm --network host --entrypoint=sglang lmsysorg/sglang:latest serve {}"),
    ("bash -c", "bash -c 'exec python -m sglang.launch_server {}'"),
    ("uv run", "uv run --no-sync python -m sglang.launch_server {}"),
];

/// The errors and warnings of `l`, as (code, message).
fn said(l: &Linted) -> Vec<(&'static str, String)> {
    l.findings
        .iter()
        .filter(|f| f.finding.severity != Severity::Note)
        .map(|f| (f.finding.code, f.finding.message.clone()))
        .collect()
}

#[test]
fn every_launcher_reads_the_same_server_argv_and_gives_the_same_findings() {
    let mutants =
        [("", ""), (" --page-size 64", " --page-size 1"), ("", " --kv-cache-dtype fp8_e4m3"), (" --tp-size 2", "")];
    for (p, d) in mutants {
        let bare = pd(p, d);
        let lines: Vec<&str> = bare.lines().collect();
        let args = |line: &str| {
            line.strip_prefix("python -m sglang.launch_server ").unwrap().trim_end_matches(" &").to_owned()
        };
        let expected = run(&[("pd.sh", &bare)]);
        let expected_args: Vec<Vec<String>> =
            expected.launches.iter().map(|l| l.args.iter().map(|w| w.text.clone()).collect()).collect();
        for (name, form) in LAUNCHERS {
            let wrapped = format!(
                "{} &\n{} &\n{}\n",
                form.replace("{}", &args(lines[0])),
                form.replace("{}", &args(lines[1])),
                lines[2]
            );
            let l = run(&[("pd.sh", &wrapped)]);
            assert_eq!(l.launches.len(), 3, "{name}: {wrapped}");
            assert_eq!(l.groups.len(), 1, "{name}");
            assert_eq!(said(&l), said(&expected), "{name}: {wrapped}");
            // The argv SGLang's parser gets is the bare one's (with the `--skip-tokenizer-init`
            // of SGLang's that Dynamo's early workers required).
            for (k, server) in l.groups[0].servers.iter().enumerate() {
                let got: Vec<&str> =
                    server.words.iter().map(|w| w.text.as_str()).filter(|w| *w != "--skip-tokenizer-init").collect();
                let want = &expected_args[expected.groups[0].servers[k].launch];
                assert_eq!(got, *want, "{name}");
            }
        }
    }
}
