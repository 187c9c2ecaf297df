//! Prints the objects a case file's cluster derives at each step (names, views, queues): a
//! helper for writing expectations. `cargo run -p cases --example derive_case -- FILE [STEP]`;
//! `-- --entrance NAME…` prints the entrance LocalQueue name of each InstanceType name.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: derive_case FILE [STEP] | derive_case --entrance INSTANCE_TYPE...");
        std::process::exit(2);
    };
    if file == "--entrance" {
        for it in args {
            println!("{it} {}", model::nodefeature::local_queue_name(&it));
        }
        return;
    }
    let step: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let c = match scenario::load_case(std::path::Path::new(&file)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut w = model::events::World::new(c.scenario.cluster.clone());
    for (k, e) in c.scenario.events.iter().enumerate().take(step) {
        println!("event {k}: {:?}", w.apply(e));
    }
    let d = w.observe();
    for rf in &d.resource_flavors {
        println!(
            "RF {} capacity {} nodes {:?}",
            rf.name, rf.capacity, rf.nodes
        );
    }
    for it in &d.instance_types {
        let v = &it.status.views;
        println!(
            "IT {} phase {:?} entrance {} EX {:?} SH {:?} SL {:?} PT {:?} cpu {:?}",
            it.name,
            it.status.phase,
            it.status.entrance,
            v.exclusive,
            v.shared,
            v.sliced,
            v.partitioned,
            it.status.cpu
        );
    }
    for q in &d.cluster_queues {
        println!(
            "CQ {} stop {:?} checks {:?} groups {:?}",
            q.name, q.stop_policy, q.admission_checks, q.resource_groups
        );
    }
    for l in &d.local_queues {
        println!("LQ {}/{} -> {}", l.namespace, l.name, l.cluster_queue);
    }
}
