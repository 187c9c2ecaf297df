//! Field paths such as `cluster.nodes[0].devices.groups[0].cards[1].ledger.mode`, built from
//! whichever tool found the problem (serde_path_to_error, serde_ignored, the model's validator).

use std::fmt;

/// One step into a YAML document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// A path from the document root to a value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// This path with `key` appended.
    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.to_string()));
        next
    }

    /// This path with `index` appended.
    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    /// Parses the dotted spelling the model's validator uses (`nodes[0].devices.groups[1].id`)
    /// under `prefix`; a part it cannot read stays a key, so nothing is lost.
    pub fn parse_dotted(prefix: &FieldPath, dotted: &str) -> Self {
        let mut path = prefix.clone();
        for part in dotted.split('.').filter(|p| !p.is_empty()) {
            let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
            if !name.is_empty() {
                path.0.push(Segment::Key(name.to_string()));
            }
            while let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else {
                    path.0.push(Segment::Key(rest.to_string()));
                    break;
                };
                let (digits, after) = inner.split_at(end);
                match digits.parse::<usize>() {
                    Ok(i) => path.0.push(Segment::Index(i)),
                    Err(_) => path.0.push(Segment::Key(digits.to_string())),
                }
                rest = after.get(1..).unwrap_or("");
            }
        }
        path
    }

    /// The path serde_path_to_error recorded.
    pub fn from_serde(path: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment as S;
        FieldPath(
            path.iter()
                .filter_map(|s| match s {
                    S::Seq { index } => Some(Segment::Index(*index)),
                    S::Map { key } => Some(Segment::Key(key.clone())),
                    S::Enum { .. } | S::Unknown => None,
                    // The enum is non-exhaustive upstream; a future kind of step adds nothing
                    // a reader could follow.
                    #[allow(unreachable_patterns)]
                    _ => None,
                })
                .collect(),
        )
    }

    /// The path serde_ignored reported for an ignored key.
    pub fn from_ignored(path: &serde_ignored::Path<'_>) -> Self {
        use serde_ignored::Path as P;
        let mut rev = Vec::new();
        let mut at = path;
        loop {
            match at {
                P::Root => break,
                P::Seq { parent, index } => {
                    rev.push(Segment::Index(*index));
                    at = parent;
                }
                P::Map { parent, key } => {
                    rev.push(Segment::Key(key.clone()));
                    at = parent;
                }
                P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
                    at = parent
                }
            }
        }
        rev.reverse();
        FieldPath(rev)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str(".");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Index(n) => write!(f, "[{n}]")?,
                // Label keys such as `kubernetes.io/os` are quoted so the dots read as one key.
                Segment::Key(k) if k.contains(['.', '[', ']', ' ']) || k.is_empty() => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    write!(f, "{k:?}")?
                }
                Segment::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_read_keys_and_indices() {
        let p = FieldPath::parse_dotted(
            &FieldPath::root().key("cluster"),
            "nodes[0].devices.groups[1].cards[12].id",
        );
        assert_eq!(
            p.to_string(),
            "cluster.nodes[0].devices.groups[1].cards[12].id"
        );
        assert_eq!(p.segments().len(), 9);
        assert_eq!(p.segments()[2], Segment::Index(0));
    }

    #[test]
    fn a_broken_bracket_stays_readable() {
        let p = FieldPath::parse_dotted(&FieldPath::root(), "nodes[x].a[3");
        assert_eq!(
            p.0,
            vec![
                Segment::Key("nodes".into()),
                Segment::Key("x".into()),
                Segment::Key("a".into()),
                Segment::Key("[3".into()),
            ]
        );
    }

    #[test]
    fn label_keys_with_dots_are_quoted() {
        let p = FieldPath::root().key("labels").key("kubernetes.io/os");
        assert_eq!(p.to_string(), "labels.\"kubernetes.io/os\"");
        assert_eq!(FieldPath::root().to_string(), ".");
    }
}
