//! The parts of `live` depend one way (ARCHITECTURE.md, `live/`): the client and the wire
//! conversions never name the API server or the reference operator, and the typed resources
//! (`crd/`) name neither of those nor the client. A source scan, like rust-analyzer's tidy tests:
//! each file's code (comments left out) must not name a forbidden module of the crate.

use std::path::{Path, PathBuf};

/// `(directory under src/, modules of the crate its files must not name)`.
const RULES: [(&str, &[&str]); 3] = [
    ("client", &["server", "operator", "audit"]),
    ("wire", &["server", "operator", "client", "audit"]),
    ("crd", &["server", "operator", "client", "audit"]),
];

/// The forbidden modules `code` names: as `crate::m`, `super::super::m` (a file one level down
/// reaching the crate root) or inside a `crate::{…}` group.
fn named_modules<'a>(code: &str, forbidden: &[&'a str]) -> Vec<&'a str> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    let names = |m: &str| {
        ["crate::", "super::super::"].iter().any(|root| {
            compact
                .match_indices(&format!("{root}{m}"))
                .any(|(at, hit)| {
                    let next = compact[at + hit.len()..].chars().next();
                    !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
        }) || compact.match_indices("crate::{").any(|(at, _)| {
            let group = &compact[at + "crate::{".len()..];
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split([',', ':', '{'])
                .any(|part| part == m || part.starts_with(&format!("{m}::")))
        })
    };
    forbidden.iter().copied().filter(|m| names(m)).collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn the_client_wire_and_crd_parts_name_no_part_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (dir, forbidden) in RULES {
        let files = rust_files(&src.join(dir));
        assert!(!files.is_empty(), "no files under src/{dir}");
        for file in files {
            let code = std::fs::read_to_string(&file).unwrap_or_default();
            for m in named_modules(&code, forbidden) {
                broken.push(format!("{} names crate::{m}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_scan_finds_each_way_of_naming_a_module() {
    let forbidden = ["server", "operator"];
    assert_eq!(
        named_modules("use crate::server::store::Store;", &forbidden),
        ["server"]
    );
    assert_eq!(
        named_modules("let x = crate::operator::reconcile(s);", &forbidden),
        ["operator"]
    );
    assert_eq!(
        named_modules("use crate::{wire::kinds, server::store};", &forbidden),
        ["server"]
    );
    assert_eq!(
        named_modules("use crate::{\n    operator,\n};", &forbidden),
        ["operator"]
    );
    assert_eq!(
        named_modules("use super::super::server::http;", &forbidden),
        ["server"]
    );
    // comments, other modules and longer names are not a dependency
    let clean = "// see crate::server\n/// [`crate::operator`]\nuse crate::wire::kinds;\nuse crate::servers;";
    assert!(named_modules(clean, &forbidden).is_empty());
}
