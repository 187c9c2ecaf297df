//! Writes the input of the audit benchmark ([M15]): a kubectl-style dump (`{"kind": "List",
//! "items": [...]}` of the kinds docs/audit.md's command lists) of the walkthrough cluster's
//! nodes replicated to N nodes, reconciled by the reference operator.
//! Run: `cargo run --release -p live --example audit_dump -- 4000 dump.json`

use live::operator::{admission::write_joint_check, reconcile, write_mock};
use live::server::store::Store;
use serde_json::Value;

fn main() {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let out = args.next().unwrap_or_else(|| "dump.json".into());
    let mut cluster = model::examples::walkthrough();
    let base = std::mem::take(&mut cluster.nodes);
    cluster.nodes = (0..nodes)
        .map(|i| {
            let mut node = base[i % base.len()].clone();
            node.name = format!("{}-{}", node.name, i / base.len());
            node.labels
                .insert(model::labels::HOSTNAME.into(), node.name.as_str().into());
            node
        })
        .collect();
    let mut store = Store::default();
    let mocked =
        write_mock(&mut store, &cluster).and_then(|()| write_joint_check(&mut store, true));
    if let Err(e) = mocked {
        eprintln!(
            "audit_dump: mocking the replicated walkthrough: {}",
            e.message
        );
        std::process::exit(1);
    }
    if let Err(e) = reconcile(&mut store, &cluster.settings, None) {
        eprintln!("audit_dump: reconciling the replicated walkthrough: {e}");
        std::process::exit(1);
    }
    let dump = live::audit::kubectl_dump(&store);
    if let Err(e) = std::fs::write(&out, dump.to_string()) {
        eprintln!("audit_dump: writing {out}: {e}");
        std::process::exit(1);
    }
    println!("{out}: {nodes} nodes, {} objects", items_len(&dump));
}

fn items_len(dump: &Value) -> usize {
    dump["items"].as_array().map_or(0, Vec::len)
}
