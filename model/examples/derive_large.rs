//! Derives the benchmark cluster a number of times; used to read peak memory:
//! `cargo build --release -p model --example derive_large &&
//!  /usr/bin/time -v target/release/examples/derive_large 20 2>&1 | grep 'Maximum resident'`.

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let cluster = model::examples::large_mixed(1000, 8);
    let mut objects = 0;
    for _ in 0..runs {
        let d = model::derive::derive(&cluster);
        objects = d.resource_flavors.len() + d.instance_types.len() + d.local_queues.len();
    }
    println!("{runs} derivations, {objects} objects each");
}
