//! Finds the line and column of a field path in block-style YAML text, for errors found after
//! parsing (unknown keys, validation). Best effort: flow style (`{a: 1}`, `[x, y]`) is followed
//! as far as block style goes, and the deepest position found is returned.

use crate::path::Segment;

/// The structure of one non-blank, non-comment line: the columns of its leading `- ` markers
/// and the key it starts, if any (columns 0-based).
#[derive(Debug)]
struct Line {
    number: usize,
    dashes: Vec<usize>,
    key: Option<(usize, String)>,
}

impl Line {
    /// The smallest column this line has a token at (dash or key).
    fn first_column(&self) -> Option<usize> {
        self.dashes
            .first()
            .copied()
            .or(self.key.as_ref().map(|(c, _)| *c))
    }
}

/// Reads the key at the start of `rest`: `name:`, `name: value`, `"quoted": value`.
fn key_of(rest: &str) -> Option<String> {
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let inner = rest.get(1..)?;
        let end = inner.find(q)?;
        let after = inner.get(end + 1..)?.trim_start();
        return (after == ":" || after.starts_with(": ")).then(|| inner[..end].to_string());
    }
    if rest.starts_with(['{', '[', '|', '>', '&', '*', '!', '#']) {
        return None;
    }
    let end = if let Some(i) = rest.find(": ") {
        i
    } else if let Some(stripped) = rest.strip_suffix(':') {
        stripped.len()
    } else {
        return None;
    };
    Some(rest[..end].trim_end().to_string())
}

fn scan(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let mut column = raw.len() - raw.trim_start_matches(' ').len();
        let mut rest = &raw[column..];
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with("---") {
            continue;
        }
        let mut dashes = Vec::new();
        while rest == "-" || rest.starts_with("- ") {
            dashes.push(column);
            let after = rest.get(1..).unwrap_or("");
            let spaces = after.len() - after.trim_start_matches(' ').len();
            column += 1 + spaces;
            rest = &after[spaces..];
        }
        let key = key_of(rest).map(|k| (column, k));
        lines.push(Line {
            number: i + 1,
            dashes,
            key,
        });
    }
    lines
}

/// The 1-based (line, column) of the deepest part of `path` found in `text`.
pub fn locate(text: &str, path: &[Segment]) -> Option<(usize, usize)> {
    let lines = scan(text);
    let (mut lo, mut hi) = (0usize, lines.len());
    // Tokens of the current value sit right of `level` (keys) or at/right of it (dashes).
    let mut level: Option<usize> = None;
    let mut after_key = false;
    let mut found = None;
    for seg in path {
        let range = lines.get(lo..hi)?;
        let right_of = |c: usize| level.is_none_or(|l| c > l);
        match seg {
            Segment::Key(k) => {
                let Some(col) = range
                    .iter()
                    .filter_map(|l| l.key.as_ref().map(|(c, _)| *c))
                    .filter(|c| right_of(*c))
                    .min()
                else {
                    return found;
                };
                let Some(i) = range.iter().position(|l| {
                    l.key
                        .as_ref()
                        .is_some_and(|(c, name)| *c == col && name == k)
                }) else {
                    return found;
                };
                let start = lo + i;
                // The value ends at the next sibling key or at anything left of this mapping;
                // a `- ` at the key's own column continues it (a sequence under the key).
                let end = lines
                    .iter()
                    .enumerate()
                    .take(hi)
                    .skip(start + 1)
                    .find(|(_, l)| {
                        let key_ends =
                            l.dashes.is_empty() && l.key.as_ref().is_some_and(|(c, _)| *c <= col);
                        let dash_ends = l.dashes.first().is_some_and(|d| *d < col);
                        key_ends || dash_ends
                    })
                    .map_or(hi, |(j, _)| j);
                found = Some((lines[start].number, col + 1));
                (lo, hi) = (start, end);
                level = Some(col);
                after_key = true;
            }
            Segment::Index(n) => {
                let skip = usize::from(after_key);
                let at_or_right = |c: usize| level.is_none_or(|l| c >= l);
                let Some(col) = range
                    .iter()
                    .skip(skip)
                    .filter_map(|l| l.dashes.iter().copied().find(|d| at_or_right(*d)))
                    .min()
                else {
                    return found;
                };
                let items: Vec<usize> = (lo + skip..hi)
                    .filter(|&j| lines[j].dashes.contains(&col))
                    .collect();
                let Some(&start) = items.get(*n) else {
                    return found;
                };
                let end = (start + 1..hi)
                    .find(|&j| {
                        lines[j].dashes.contains(&col)
                            || lines[j].first_column().is_some_and(|c| c < col)
                    })
                    .unwrap_or(hi);
                found = Some((lines[start].number, col + 1));
                (lo, hi) = (start, end);
                level = Some(col);
                after_key = false;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::FieldPath;

    const DOC: &str = "\
name: two cards
cluster:
  nodes:
  - name: gpu-0
    labels:
      kubernetes.io/os: linux
    devices:
      groups:
      - manufacturer: nvidia
        id: a10g
        cards:
        - id: GPU-0
          ledger:
            mode: Shared
        - id: GPU-1
          ledger:
            mode: 9
  namespaces:
  - name: default
events:
- event: node-leave
  name: gpu-0
";

    fn at(dotted: &str) -> Option<(usize, usize)> {
        let p = FieldPath::parse_dotted(&FieldPath::root(), dotted);
        locate(DOC, p.segments())
    }

    #[test]
    fn finds_nested_keys_and_items() {
        assert_eq!(at("name"), Some((1, 1)));
        assert_eq!(at("cluster.nodes"), Some((3, 3)));
        assert_eq!(at("cluster.nodes[0]"), Some((4, 3)));
        assert_eq!(at("cluster.nodes[0].name"), Some((4, 5)));
        assert_eq!(
            at("cluster.nodes[0].devices.groups[0].cards[1].ledger.mode"),
            Some((17, 13))
        );
        assert_eq!(
            at("cluster.nodes[0].devices.groups[0].cards[0].ledger.mode"),
            Some((14, 13))
        );
        assert_eq!(at("cluster.namespaces[0].name"), Some((19, 5)));
        assert_eq!(at("events[0].name"), Some((22, 3)));
    }

    #[test]
    fn quoted_label_keys_and_missing_parts_fall_back_to_the_deepest_found() {
        let p = FieldPath::root()
            .key("cluster")
            .key("nodes")
            .index(0)
            .key("labels")
            .key("kubernetes.io/os");
        assert_eq!(locate(DOC, p.segments()), Some((6, 7)));
        // No third node: the sequence itself is the best answer.
        assert_eq!(at("cluster.nodes[2].name"), Some((3, 3)));
        assert_eq!(at("nothing.here"), None);
    }

    #[test]
    fn sibling_keys_are_not_taken_from_a_later_item() {
        // `ledger` of cards[0] must not be found in cards[1]'s lines.
        assert_eq!(
            at("cluster.nodes[0].devices.groups[0].cards[0].ledger"),
            Some((13, 11))
        );
        assert_eq!(
            at("cluster.nodes[0].devices.groups[0].cards[1].index"),
            Some((15, 9))
        );
    }
}
