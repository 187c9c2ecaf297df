//! Human renderings of model results and of runs. Formatting only: nothing here decides a
//! rule. It owns the run directory's layout (`summary.json`, `divergences.csv`,
//! `counterexamples/`, `junit.xml`, `plots/`), writing it through `scenario::RunDir` and
//! re-rendering it for `verify report`.

use std::fmt::Write as _;

pub mod counterexample;
pub mod coverage;
pub mod findings;
pub mod merge;
pub mod plots;
pub mod record;
pub mod render;
pub mod summary;
pub mod terminal;
pub mod why;

pub use counterexample::{counterexample_markdown, view_pairs, Counterexample, ViewPair};
pub use coverage::{check_floors, parse_floors, Coverage, Floor, FloorCheck};
pub use findings::{FindingEntry, KnownFinding, Ledger, LedgerError, Signature, Status};
pub use merge::{merge_runs, MergeError};
pub use record::{Recorded, RunRecorder};
pub use render::{load_run, render_run, LoadedRun, ReportFormat};
pub use summary::{CounterexampleEntry, Figures, RunSummary, Seeds, Verdict};

use model::derive::Derived;
use model::objects::{InstanceType, ResourceView};

/// `onceMaxRequest/remaining`, the InstanceType printer-column spelling.
fn pair(v: &ResourceView) -> String {
    format!("{}/{}", v.once_max_request, v.remaining)
}

/// The ACCELERATOR(EX/SH/SL/PT) or CPU column of an InstanceType.
fn capacity_column(it: &InstanceType) -> String {
    let s = &it.status;
    if it.spec.acceleratable {
        format!(
            "{} {} {} {}",
            pair(&s.views.exclusive),
            pair(&s.views.shared),
            pair(&s.views.sliced),
            pair(&s.views.partitioned.view)
        )
    } else {
        format!("cpu {}", pair(&s.cpu))
    }
}

/// Left-aligned columns sized to their widest cell.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let text: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", text.join("  ").trim_end());
    };
    line(header.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// The whole derivation as terminal tables, one section per object kind.
pub fn derived_table(d: &Derived) -> String {
    let mut out = String::new();
    let nodes: Vec<Vec<String>> = d
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.name.to_string(),
                if n.eligible { "yes" } else { "no" }.to_string(),
                n.flavors
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ]
        })
        .collect();
    let _ = writeln!(out, "Nodes ({})", d.nodes.len());
    out += &table(&["NAME", "ELIGIBLE", "FLAVORS"], &nodes);

    let flavors: Vec<Vec<String>> = d
        .resource_flavors
        .iter()
        .map(|f| {
            vec![
                f.name.to_string(),
                f.nodes.len().to_string(),
                f.capacity.to_string(),
            ]
        })
        .collect();
    let _ = writeln!(out, "\nResourceFlavors ({})", d.resource_flavors.len());
    out += &table(&["NAME", "NODES", "CAPACITY"], &flavors);

    let types: Vec<Vec<String>> = d
        .instance_types
        .iter()
        .map(|it| {
            vec![
                it.name.to_string(),
                it.status.entrance.to_string(),
                format!(
                    "{}/{}/{}",
                    it.spec.unit_resources.cpu, it.spec.unit_resources.ram, it.spec.local_storage
                ),
                capacity_column(it),
                format!("{:?}", it.status.phase),
            ]
        })
        .collect();
    let _ = writeln!(out, "\nInstanceTypes ({})", d.instance_types.len());
    out += &table(
        &[
            "NAME",
            "ENTRANCE",
            "UNIT(CPU/RAM)/STORAGE",
            "EX SH SL PT | CPU",
            "PHASE",
        ],
        &types,
    );

    let queues: Vec<Vec<String>> = d
        .cluster_queues
        .iter()
        .map(|q| {
            let covered = q
                .resource_groups
                .iter()
                .flat_map(|g| g.covered_resources.iter().cloned())
                .collect::<Vec<_>>()
                .join(",");
            let quotas = q
                .resource_groups
                .iter()
                .flat_map(|g| g.flavors.iter())
                .map(|f| format!("{}={}", f.flavor, f.nominal_quota))
                .collect::<Vec<_>>()
                .join(" ");
            vec![
                q.name.to_string(),
                q.stop_policy.name().to_string(),
                covered,
                q.admission_checks.join(","),
                quotas,
            ]
        })
        .collect();
    let _ = writeln!(out, "\nClusterQueues ({})", d.cluster_queues.len());
    out += &table(
        &["NAME", "STOP", "COVERS", "CHECKS", "FLAVOR=NOMINAL"],
        &queues,
    );

    let namespaces: std::collections::BTreeSet<&str> = d
        .local_queues
        .iter()
        .map(|l| l.namespace.as_str())
        .collect();
    let _ = writeln!(
        out,
        "\nLocalQueues ({}): one per ClusterQueue in namespaces {}",
        d.local_queues.len(),
        namespaces.into_iter().collect::<Vec<_>>().join(", ")
    );
    out
}
