//! Parse + validate + render of the DeepSeek example, the core's whole job for one deployment.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pdlaunch_core::examples::EXAMPLES;
use pdlaunch_core::load::{parse_deployment, Syntax};
use pdlaunch_core::render::{render, Format};
use pdlaunch_core::rules::check;

fn bench(c: &mut Criterion) {
    let yaml = EXAMPLES.iter().find(|e| e.name == "deepseek-v3-dp-deepep").expect("example").yaml;
    // Warm the lazily parsed SGLang specs so the figures are per-deployment work.
    let _ = check(&parse_deployment(yaml, "x", Syntax::Yaml).unwrap());
    c.bench_function("parse", |b| b.iter(|| parse_deployment(black_box(yaml), "x", Syntax::Yaml).unwrap()));
    let d = parse_deployment(yaml, "x", Syntax::Yaml).unwrap();
    c.bench_function("validate", |b| b.iter(|| check(black_box(&d))));
    c.bench_function("render_shell", |b| b.iter(|| render(black_box(&d), Format::Shell)));
    c.bench_function("parse_validate_render", |b| {
        b.iter(|| {
            let d = parse_deployment(black_box(yaml), "x", Syntax::Yaml).unwrap();
            let report = check(&d);
            let files = render(&d, Format::Shell);
            (report, files)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
