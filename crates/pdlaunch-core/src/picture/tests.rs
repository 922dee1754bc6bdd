use roxmltree::{Document, Node};

use super::*;
use crate::deployment::{Deployment, Instance};
use crate::examples::{example, EXAMPLES};
use crate::rules::testing::{deepseek, lint, llama, pd_script};

/// The SVG of a deployment, parsed: it must be well-formed XML.
fn parsed(svg_text: &str) -> Document<'_> {
    Document::parse(svg_text).unwrap_or_else(|e| panic!("not well-formed SVG: {e}\n{svg_text}"))
}

fn has_class(n: &Node, class: &str) -> bool {
    n.attribute("class").is_some_and(|c| c.split(' ').any(|x| x == class))
}

fn groups<'a>(doc: &'a Document, class: &str) -> Vec<Node<'a, 'a>> {
    doc.descendants().filter(|n| n.has_tag_name("g") && has_class(n, class)).collect()
}

/// The ids of the elements whose `data-findings` holds `code`.
fn carrying(doc: &Document, code: &str) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.attribute("data-findings").is_some_and(|f| f.split(' ').any(|c| c == code)))
        .map(|n| n.attribute("id").unwrap_or("(no id)").to_owned())
        .collect()
}

fn by_id<'a>(doc: &'a Document, id: &str) -> Node<'a, 'a> {
    doc.descendants().find(|n| n.attribute("id") == Some(id)).unwrap_or_else(|| panic!("no element {id}"))
}

/// The texts of an element and its descendants (titles included), joined.
fn text_of(n: Node) -> String {
    n.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect::<Vec<_>>().join("\n")
}

const RED: &str = "#d32f2f";

#[test]
fn every_example_draws_well_formed_svg_with_a_box_per_process_and_its_links() {
    for e in EXAMPLES {
        let d = example(e.name).unwrap();
        let plan = crate::plan::plan(&d);
        let text = svg(&of_deployment(&d));
        assert_eq!(text, svg(&of_deployment(&d)), "{}: the same deployment draws the same picture", e.name);
        let doc = parsed(&text);
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let boxes = groups(&doc, "process");
        assert_eq!(boxes.len(), plan.servers.len() + 1, "{}: one box per server and the router", e.name);
        for s in &plan.servers {
            let b = by_id(&doc, &s.id());
            assert!(text_of(b).contains(&s.host), "{}: {} shows its host", e.name, s.id());
        }
        let (np, nd) = (plan.role(Role::Prefill).count(), plan.role(Role::Decode).count());
        let (ip, id) = (d.prefill.instances.len(), d.decode.instances.len());
        assert!(np >= ip && nd >= id);
        assert_eq!(groups(&doc, "instance").len(), ip + id, "{}: one frame per instance", e.name);
        assert_eq!(groups(&doc, "http").len(), ip + id, "{}: the router reaches every instance", e.name);
        assert_eq!(groups(&doc, "kv").len(), ip * id, "{}: every prefill and decode pair", e.name);
        for p in 0..ip {
            assert!(doc.descendants().any(|n| n.attribute("id") == Some(&format!("http-prefill-{p}"))));
            for q in 0..id {
                let link = by_id(&doc, &format!("kv-prefill-{p}-decode-{q}"));
                let paths: Vec<Node> = link.children().filter(|c| c.has_tag_name("path")).collect();
                assert_eq!(paths.len(), 2, "{}: KV and bootstrap paths", e.name);
                let title = text_of(link);
                let backend = d.shared.transfer_backend.as_str();
                assert!(title.contains(backend) && title.contains("bootstrap server"), "{}: {title}", e.name);
            }
        }
        // The examples are clean of errors: nothing is red.
        assert!(crate::rules::check(&d).is_clean());
        let red = doc.descendants().filter(|n| n.attribute("stroke") == Some(RED));
        assert!(
            red.clone().all(|n| n.ancestors().any(|a| has_class(&a, "legend"))),
            "{}: only the legend is red in a clean example",
            e.name
        );
    }
}

#[test]
fn a_page_size_drift_marks_the_link_of_each_pair_it_concerns() {
    let mut d = llama();
    d.decode.extra_args = vec!["--page-size".into(), "1".into()];
    let text = svg(&of_deployment(&d));
    let doc = parsed(&text);
    assert_eq!(carrying(&doc, "PD001"), ["kv-prefill-0-decode-0"]);
    let link = by_id(&doc, "kv-prefill-0-decode-0");
    assert!(link.descendants().any(|n| n.attribute("stroke") == Some(RED)), "the link is red");
    let badge = link.descendants().find(|n| has_class(n, "badge")).expect("the link has a badge");
    assert_eq!(text_of(badge), "PD001");
    assert!(text_of(link).contains("page_size=1"), "the hover text quotes the finding");

    // Two prefills and one decode: the decode's drift concerns both pairs, and only them.
    let mut d = example("qwen3-2p1d-nixl").unwrap();
    d.decode.extra_args = vec!["--page-size".into(), "1".into()];
    let doc_text = svg(&of_deployment(&d));
    let doc = parsed(&doc_text);
    assert_eq!(carrying(&doc, "PD001"), ["kv-prefill-0-decode-0", "kv-prefill-1-decode-0"]);
}

#[test]
fn a_gpu_collision_marks_both_boxes_and_their_gpu_ranges() {
    let mut d = llama();
    d.decode.instances[0].nodes[0].base_gpu_id = Some(0);
    assert!(crate::rules::check(&d).findings.iter().any(|f| f.code == "PD020"));
    let text = svg(&of_deployment(&d));
    let doc = parsed(&text);
    assert_eq!(carrying(&doc, "PD020"), ["prefill-0-node-0", "decode-0-node-0"]);
    for id in ["prefill-0-node-0", "decode-0-node-0"] {
        let gpus = by_id(&doc, id).descendants().find(|n| has_class(n, "gpus")).unwrap();
        assert_eq!(gpus.attribute("fill"), Some(RED), "{id}");
        assert_eq!(gpus.attribute("data-flagged"), Some("true"));
        assert_eq!(text_of(gpus), "GPU 0");
    }
    assert!(!carrying(&doc, "PD020").iter().any(|id| id.starts_with("kv-")), "a GPU collision is not a link's");
}

#[test]
fn a_port_collision_marks_the_boxes_and_their_ports() {
    let mut d = llama();
    d.decode.instances[0].port = Some(30000);
    let text = svg(&of_deployment(&d));
    let doc = parsed(&text);
    assert_eq!(carrying(&doc, "PD019"), ["prefill-0-node-0", "decode-0-node-0"]);
    let ports = by_id(&doc, "decode-0-node-0").descendants().find(|n| has_class(n, "ports")).unwrap();
    assert_eq!(ports.attribute("data-flagged"), Some("true"));
    assert!(text_of(ports).contains(":30000"));
}

#[test]
fn hostile_values_stay_well_formed_and_are_shown_as_written() {
    let mut d = llama();
    let host = "a<b&\"c'";
    d.prefill.instances[0].nodes[0].host = host.into();
    d.decode.instances[0].nodes[0].host = "x\u{1}y]]>--".into();
    d.model.path = "m]]><script>alert(1)</script>&amp;".into();
    d.name = "n\"ame<\n%% injected".into();
    d.decode.extra_args = vec!["--page-size".into(), "1".into()];
    let g = of_deployment(&d);
    let text = svg(&g);
    let doc = parsed(&text);
    assert!(!text.contains("<script"));
    assert!(text_of(by_id(&doc, "prefill-0-node-0")).contains(host), "the host reads back as written");
    assert!(text_of(doc.root_element()).contains("m]]><script>alert(1)</script>&amp;"));
    assert_eq!(carrying(&doc, "PD001"), ["kv-prefill-0-decode-0"]);

    let m = mermaid(&g);
    for bad in ["a<b", "<script", "\"c'", "]]>", "\n%% injected"] {
        assert!(!m.contains(bad), "Mermaid holds {bad:?} raw:\n{m}");
    }
    // Every label is one quoted string: an even count of quotes on each line.
    for line in m.lines() {
        assert_eq!(line.matches('"').count() % 2, 0, "{line}");
    }
}

/// `instances` instances per side of `nodes` nodes each, every node on its own host.
fn fleet(prefill: usize, decode: usize, nodes: usize) -> Deployment {
    let mut d = deepseek();
    for (role, count) in [(Role::Prefill, prefill), (Role::Decode, decode)] {
        let side = match role {
            Role::Prefill => &mut d.prefill,
            Role::Decode => &mut d.decode,
        };
        side.tp = 8 * nodes as u32;
        let template: Instance = side.instances[0].clone();
        side.instances = (0..count)
            .map(|i| {
                let mut inst = template.clone();
                let node = inst.nodes[0].clone();
                inst.nodes = (0..nodes)
                    .map(|n| {
                        let mut node = node.clone();
                        node.host = format!("{role}-{i}-{n}.cluster");
                        node
                    })
                    .collect();
                inst
            })
            .collect();
    }
    d
}

#[test]
fn eight_by_eight_of_four_nodes_stays_within_bounds_and_larger_fleets_collapse() {
    let d = fleet(8, 8, 4);
    let g = of_deployment(&d);
    assert!(g.more.is_empty());
    let text = svg(&g);
    let doc = parsed(&text);
    assert_eq!(groups(&doc, "process").len(), 8 * 4 * 2 + 1);
    assert_eq!(groups(&doc, "kv").len(), 64);
    assert!(text.len() < 200_000, "8P8D of 4 nodes is {} bytes", text.len());
    let size = |a: &str| doc.root_element().attribute(a).unwrap().parse::<i64>().unwrap();
    assert!(size("width") <= 1300 && size("height") <= 2000, "{} x {}", size("width"), size("height"));

    let mut d = fleet(20, 9, 4);
    // Instances 14 and 15 share a host and a port: a finding on two hidden instances.
    d.prefill.instances[15].nodes[0].host = d.prefill.instances[14].nodes[0].host.clone();
    d.prefill.instances[15].port = Some(30000);
    let g = of_deployment(&d);
    let text = svg(&g);
    let doc = parsed(&text);
    assert_eq!(groups(&doc, "instance").len(), 16, "8 instances per side are drawn");
    let more = by_id(&doc, "more-prefill");
    assert!(text_of(more).contains("+ 12 more prefill instances (48 processes)"), "{}", text_of(more));
    assert!(text_of(by_id(&doc, "more-decode")).contains("+ 1 more decode instance (4 processes)"));
    assert_eq!(carrying(&doc, "PD019"), ["more-prefill"]);
    assert_eq!(groups(&doc, "process").len(), 8 * 4 * 2 + 1 + 2);
    assert!(text.len() < 220_000, "{} bytes", text.len());
    assert!(doc.descendants().any(|n| n.attribute("id") == Some("http-more-prefill")));

    // TP 48 over 6 nodes: PD038 names every one of the 174 servers, yet the picture stays small.
    let d = fleet(20, 9, 6);
    let text = svg(&of_deployment(&d));
    let doc = parsed(&text);
    assert!(carrying(&doc, "PD038").len() > 60, "PD038 is on the drawn boxes");
    assert!(text.len() < 220_000, "{} bytes", text.len());

    // An instance of many nodes draws four and counts the rest.
    let g = of_deployment(&fleet(1, 1, 6));
    assert_eq!(g.instances[0].processes.len(), MAX_NODES);
    assert_eq!(g.instances[0].more_nodes, 2);
    parsed(&svg(&g));
}

#[test]
fn mermaid_has_a_node_per_process_and_the_links_of_the_svg() {
    let d = llama();
    let m = mermaid(&of_deployment(&d));
    let lines: Vec<&str> = m.lines().map(str::trim).collect();
    assert_eq!(lines.iter().filter(|l| l.starts_with("subgraph ")).count(), 2);
    let nodes: Vec<&str> = lines
        .iter()
        .filter(|l| !l.starts_with("subgraph") && l.contains("[\"") && !l.contains("--"))
        .map(|l| l.split('[').next().unwrap())
        .collect();
    // PD040's note names no box: it sits on a node of the whole deployment.
    assert_eq!(nodes, ["deployment", "router", "prefill_0_node_0", "decode_0_node_0"], "{m}");
    assert_eq!(lines.iter().filter(|l| l.contains(" --> ")).count(), 2, "router to each server");
    assert_eq!(lines.iter().filter(|l| l.contains(" ==>")).count(), 1, "KV prefill to decode");
    assert_eq!(lines.iter().filter(|l| l.contains(" -.->")).count(), 1, "bootstrap decode to prefill");
    assert!(m.contains("prefill_0_node_0 ==>|\"KV mooncake · IB mlx5_roce0\"| decode_0_node_0"), "{m}");
    assert!(!m.contains("finding_error") && !m.contains("linkStyle"), "a clean deployment has no red:\n{m}");

    let mut d = llama();
    d.decode.extra_args = vec!["--page-size".into(), "1".into()];
    let m = mermaid(&of_deployment(&d));
    assert!(m.contains("linkStyle 2,3 stroke:#d32f2f"), "the KV and bootstrap edges are red:\n{m}");
    assert!(m.contains("! PD001"), "{m}");
    let mut d = llama();
    d.decode.instances[0].nodes[0].base_gpu_id = Some(0);
    let m = mermaid(&of_deployment(&d));
    assert!(m.contains("class prefill_0_node_0,decode_0_node_0 finding_error"), "{m}");
}

#[test]
fn a_linted_group_draws_what_was_read_with_the_lint_findings() {
    let l = lint(&[("run.sh", &pd_script("", " --page-size 64"))]);
    assert!(l.findings.iter().any(|f| f.finding.code == "PD001"));
    let g = of_lint_group(&l, 0).expect("one group");
    let text = svg(&g);
    let doc = parsed(&text);
    assert_eq!(groups(&doc, "process").len(), 3);
    assert_eq!(groups(&doc, "http").len(), 2, "the router's entries reach both servers: {:?}", g.router);
    assert_eq!(carrying(&doc, "PD001"), ["kv-prefill-0-decode-0"]);
    let decode = text_of(by_id(&doc, "decode-0-node-0"));
    assert!(decode.contains("GPU 4") && decode.contains("run.sh:2"), "{decode}");
    assert!(of_lint_group(&l, 1).is_none());
}

#[test]
fn render_gives_one_file_per_picture_format_and_every_other_format_too() {
    let d = llama();
    let svg_files = render(&d, Format::Svg).unwrap();
    assert_eq!(svg_files.len(), 1);
    assert_eq!(svg_files[0].name, "deployment.svg");
    assert!(svg_files[0].contents.contains("Generated by pdlaunch"));
    assert_eq!(render(&d, Format::Mermaid).unwrap()[0].name, "deployment.mmd");
    assert_eq!(render(&d, Format::Shell).unwrap(), crate::render::render(&d, Format::Shell).unwrap());
    assert!(crate::render::render(&d, Format::Svg).is_err(), "the renderer points at the picture");
    assert_eq!(Format::parse("svg"), Some(Format::Svg));
    assert_eq!(Format::parse("mermaid"), Some(Format::Mermaid));
}

#[test]
fn a_router_entry_finding_marks_the_routers_link_to_that_server() {
    let script = pd_script("", "").replace("--prefill http://127.0.0.1:30000", "--prefill http://127.0.0.1:30000 9000");
    let l = lint(&[("run.sh", &script)]);
    assert!(l.findings.iter().any(|f| f.finding.code == "PD017"), "{:?}", l.findings);
    let text = svg(&of_lint_group(&l, 0).unwrap());
    let doc = parsed(&text);
    assert_eq!(carrying(&doc, "PD017"), ["http-prefill-0"]);
    assert!(text_of(by_id(&doc, "http-prefill-0")).contains("bootstrap 9000"));
}

#[test]
fn a_router_entry_that_reaches_no_server_is_written_in_the_router_box() {
    let mut d = llama();
    d.decode.extra_args = vec!["--port".into(), "31000".into()];
    let g = of_deployment(&d);
    let router = g.router.as_ref().unwrap();
    assert_eq!(router.unmatched, ["--decode http://10.0.0.11:30001"]);
    let text = svg(&g);
    let doc = parsed(&text);
    assert_eq!(groups(&doc, "http").len(), 1, "only the prefill is reached");
    let router = text_of(by_id(&doc, "router"));
    assert!(router.contains("no decode at 10.0.0.11:30001") && router.contains("--decode http://10.0.0.11:30001"));
}

#[test]
fn the_pair_rules_are_rules_and_a_side_wide_finding_stays_on_the_boxes() {
    for code in PAIR_CODES {
        assert!(crate::rules::rule(code).is_some_and(|r| r.code == *code), "{code} is no rule");
    }
    // TP 3 divides neither side's 8 KV heads: PD038 names both sides' servers, each its own problem.
    let mut d = llama();
    d.prefill.tp = 3;
    d.decode.tp = 3;
    d.prefill.instances[0].nodes[0].host = "10.0.0.12".into();
    let g = of_deployment(&d);
    let text = svg(&g);
    let doc = parsed(&text);
    assert_eq!(carrying(&doc, "PD038"), ["prefill-0-node-0", "decode-0-node-0"], "{:?}", g.findings);
}

#[test]
fn a_server_of_unknown_role_is_drawn_in_the_first_column_with_its_finding() {
    let script = "python -m sglang.launch_server --model-path m --port 30000\n\
                  python -m sglang.launch_server --model-path m --port 30001 --disaggregation-mode decode\n";
    let l = lint(&[("x.txt", script)]);
    let text = svg(&of_lint_group(&l, 0).expect("a group"));
    let doc = parsed(&text);
    let unknown = by_id(&doc, "server-0");
    assert_eq!(unknown.attribute("data-role"), Some("unknown"));
    let frame = unknown.children().find(|n| n.has_tag_name("rect")).unwrap();
    assert_eq!(frame.attribute("x"), Some("16"), "drawn in the router's column");
    assert_eq!(carrying(&doc, "PD037"), ["server-0-node-0"]);
    assert_eq!(groups(&doc, "kv").len(), 0, "a server of no role pairs with nothing");
}
