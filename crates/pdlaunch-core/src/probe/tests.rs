use super::*;

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("../../../../tests/fixtures/probe/", $path))
    };
}

fn server(url: &str, body: &str, route: Option<&str>) -> Server {
    let info = Info::read(body);
    let route = route.map(|r| (format!("{url}-bootstrap"), read_route(r)));
    Server { url: url.into(), role: info.as_ref().ok().and_then(Info::role), worker: None, info, route }
}

fn codes(f: &[Finding]) -> Vec<&'static str> {
    f.iter().filter(|f| f.severity != crate::rules::Severity::Note).map(|f| f.code).collect()
}

fn clean() -> Vec<Server> {
    vec![
        server("http://p0", fixture!("clean/p0.server_info.json"), Some(fixture!("clean/p0.route.json"))),
        server("http://p1", fixture!("clean/p1.server_info.json"), Some(fixture!("clean/p1.route.json"))),
        server("http://d0", fixture!("clean/d0.server_info.json"), None),
        server("http://d1", fixture!("clean/d1.server_info.json"), None),
    ]
}

#[test]
fn a_clean_fleet_is_clean() {
    let f = check(clean(), None, None);
    assert!(codes(&f).is_empty(), "{f:#?}");
}

#[test]
fn the_view_reads_what_the_server_reports() {
    let info = Info::read(fixture!("page-size/d1.server_info.json")).unwrap();
    let v = view("http://d1", &info, info.release());
    assert_eq!(v.role, Some(Role::Decode));
    assert_eq!(v.int("page_size"), Some(1));
    assert_eq!(v.origin("page_size").map(ToString::to_string).as_deref(), Some("server_info.page_size"));
    assert_eq!(v.value("model_path").as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
    assert!(v.parsed.problems.is_empty(), "{:?}", v.parsed.problems);
}

#[test]
fn a_decode_restarted_with_page_size_1_is_pd001_at_its_url() {
    let mut s = clean();
    s[3] = server("http://d1", fixture!("page-size/d1.server_info.json"), None);
    let f = check(s, None, None);
    let pd001: Vec<&Finding> = f.iter().filter(|f| f.code == "PD001").collect();
    assert!(!pd001.is_empty(), "{f:#?}");
    assert!(pd001.iter().all(|f| f.locations.iter().any(|l| l.process == "http://d1")), "{pd001:#?}");
    assert!(pd001[0].message.contains("16") && pd001[0].message.contains('1'), "{}", pd001[0].message);
}

#[test]
fn a_dtype_only_resolution_shows_is_pd002() {
    let s = vec![
        server("http://p0", fixture!("dtype/p0.server_info.json"), Some(fixture!("dtype/p0.route.json"))),
        server("http://d0", fixture!("dtype/d0.server_info.json"), None),
    ];
    let f = check(s, None, None);
    let pd002: Vec<&Finding> = f.iter().filter(|f| f.code == "PD002").collect();
    assert_eq!(pd002.len(), 1, "{f:#?}");
    assert!(pd002[0].message.contains("fp8_e4m3") && pd002[0].message.contains("bfloat16"), "{}", pd002[0].message);
}

#[test]
fn a_replica_on_another_release_is_pd057() {
    let mut s = clean();
    s[3] = server("http://d1", fixture!("release/d1.server_info.json"), None);
    let f = check(s, None, None);
    let drift: Vec<&Finding> = f.iter().filter(|f| f.code == "PD057").collect();
    assert_eq!(drift.len(), 1, "{f:#?}");
    assert!(drift[0].message.contains("http://d1 runs SGLang 0.5.19"), "{}", drift[0].message);
    assert!(drift[0].message.contains("0.5.23"), "{}", drift[0].message);
}

#[test]
fn a_server_that_did_not_answer_is_pd059_and_the_rest_is_checked() {
    let mut s = clean();
    s.push(Server {
        url: "http://d2".into(),
        role: Some(Role::Decode),
        worker: None,
        info: Err("connection refused".into()),
        route: None,
    });
    s[3] = server("http://d1", fixture!("page-size/d1.server_info.json"), None);
    let f = check(s, None, None);
    let c = codes(&f);
    assert!(c.contains(&"PD059") && c.contains(&"PD001"), "{f:#?}");
    let gone = f.iter().find(|f| f.code == "PD059").unwrap();
    assert!(gone.message.contains("http://d2") && gone.message.contains("connection refused"), "{}", gone.message);
}

#[test]
fn a_router_worker_that_is_gone_is_pd060_with_its_removal() {
    let mut s = clean();
    s.push(Server {
        url: "http://d2".into(),
        role: Some(Role::Decode),
        worker: Some(Some("abc".into())),
        info: Err("connection refused".into()),
        route: None,
    });
    let f = check(s, Some(("http://router".into(), Ok(()))), None);
    assert_eq!(codes(&f), ["PD060"], "{f:#?}");
    assert!(f[0].fix.contains("curl -X DELETE http://router/workers/abc"), "{}", f[0].fix);
}

#[test]
fn hostile_documents_are_clear_errors() {
    let e = Info::read(fixture!("hostile/wrong-types.server_info.json")).unwrap_err();
    assert!(e.contains("`page_size` is \"sixteen\" where SGLang reports an integer"), "{e}");
    let e = Info::read(fixture!("hostile/not-an-object.server_info.json")).unwrap_err();
    assert!(e.contains("an array"), "{e}");
    let e = Info::read(fixture!("hostile/truncated.server_info.json")).unwrap_err();
    assert!(e.starts_with("the answer is not JSON"), "{e}");
    let e = read_route(fixture!("hostile/route-wrong-types.route.json")).unwrap_err();
    assert!(e.contains("`attn_tp_size` is \"one\""), "{e}");
    assert!(Info::read("<html>502 Bad Gateway</html>").unwrap_err().contains("not JSON"));
    assert!(Info::read("{}").unwrap_err().contains("not SGLang's server info"));
    assert!(read_workers("{\"workers\": 3}").is_err());
}

#[test]
fn a_bootstrap_server_of_another_prefill_is_pd058() {
    let mut s = clean();
    // p1's bootstrap port answers with the DeepSeek prefill's info (page 64, fp8).
    s[1] = server("http://p1", fixture!("clean/p1.server_info.json"), Some(fixture!("dtype/p0.route.json")));
    let f = check(s, None, None);
    let m: Vec<&str> = f.iter().filter(|f| f.code == "PD058").map(|f| f.message.as_str()).collect();
    assert!(
        m.iter().any(|m| m.contains("publishes page_size=64, but the prefill at http://p1 reports page_size=16")),
        "{m:#?}"
    );
    assert!(m.iter().any(|m| m.contains("the decode at http://d0 uses kv_cache_dtype=auto")), "{m:#?}");
    let mut s = clean();
    s[0].route =
        Some(("http://p0:31000/route".into(), Err("HTTP 503: Prefill server not fully registered yet".into())));
    let f = check(s, None, None);
    let w: Vec<&Finding> = f.iter().filter(|f| f.code == "PD058").collect();
    assert_eq!(w.len(), 1, "{f:#?}");
    assert_eq!(w[0].severity, crate::rules::Severity::Warning);
}

#[test]
fn drift_from_the_deployment_names_the_field_and_both_values() {
    let d: Deployment = crate::load::parse_deployment(
        "name: llama\nmodel: {path: meta-llama/Llama-3.1-8B-Instruct}\n\
         shared: {page_size: 16, transfer_backend: mooncake}\n\
         prefill: {gpu: h200, instances: [{nodes: [{host: 127.0.0.1}]}]}\n\
         decode: {gpu: h200, instances: [{nodes: [{host: 127.0.0.1}]}]}\n",
        "pd.yaml",
        crate::load::Syntax::Yaml,
    )
    .unwrap();
    let f = check(clean(), None, Some(("pd.yaml", &d)));
    assert!(!codes(&f).contains(&"PD057"), "{f:#?}");
    let mut s = clean();
    s[3] = server("http://d1", fixture!("page-size/d1.server_info.json"), None);
    let f = check(s, None, Some(("pd.yaml", &d)));
    let drift: Vec<&Finding> = f.iter().filter(|f| f.code == "PD057").collect();
    assert_eq!(drift.len(), 1, "{drift:#?}");
    let m = &drift[0].message;
    assert!(m.contains("http://d1 runs --page-size `1` where pd.yaml renders `16` (`shared.page_size`)"), "{m}");
    assert!(drift[0].fix.contains("pdlaunch render pd.yaml"), "{}", drift[0].fix);
}

#[test]
fn pasted_documents_are_checked_as_a_fleet() {
    let text = [fixture!("clean/p0.server_info.json"), fixture!("page-size/d1.server_info.json")].concat();
    let f = check_pasted(&text).unwrap();
    assert!(codes(&f).contains(&"PD001"), "{f:#?}");
    let array = format!("[{}, {}]", fixture!("clean/p0.server_info.json"), fixture!("clean/d0.server_info.json"));
    assert!(codes(&check_pasted(&array).unwrap()).is_empty());
    assert!(check_pasted("").is_err());
    assert!(check_pasted("{\"page_size\": 1}").unwrap_err().starts_with("document 1:"));
}
