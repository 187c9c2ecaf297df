//! Full derivation of a 1,000-node cluster with 8 cards per node, mixed vendors and modes.
//! Run: `cargo bench -p model --bench derive`.

use criterion::{criterion_group, criterion_main, Criterion};

fn derive_large(c: &mut Criterion) {
    let cluster = model::examples::large_mixed(1000, 8);
    c.bench_function("derive 1000 nodes x 8 cards", |b| {
        b.iter(|| model::derive::derive(std::hint::black_box(&cluster)))
    });
}

criterion_group!(benches, derive_large);
criterion_main!(benches);
