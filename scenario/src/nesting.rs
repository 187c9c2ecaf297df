//! A bound on flow nesting, checked before the YAML parser sees the text. libyaml's scanner
//! revisits every open flow level on each token, so a 40 KB file of `[[[[…]]]]` took 10 s to
//! refuse (a 200 KB one 30 s; issue [M16], "Slow inputs"). No scenario nests anywhere near
//! [`MAX_FLOW_DEPTH`]: the deepest field, a node's card capability, sits at about eight.

/// The deepest flow collection (`[` … `]`, `{` … `}`) a scenario file may open.
pub const MAX_FLOW_DEPTH: usize = 64;

/// The 1-based `(line, column)` where the text opens flow level `MAX_FLOW_DEPTH + 1`, if it
/// does. Quoted strings and comments are skipped; a `[` or `{` counts only where a flow
/// collection can start (after `:`, `-`, `,`, `[`, `{`, or at the start of a line), so a plain
/// scalar such as `see [1` does not.
pub fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for (i, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut opens_here = true; // a collection may start at the start of a line
        let mut after_space = true;
        for (col, c) in line.chars().enumerate() {
            if let Some(q) = quote {
                match c {
                    '\\' if q == '"' && !escaped => escaped = true,
                    _ if c == q && !escaped => quote = None,
                    _ => escaped = false,
                }
                continue;
            }
            match c {
                '"' | '\'' if opens_here => quote = Some(c),
                '#' if after_space => break,
                '[' | '{' if opens_here => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some((i + 1, col + 1));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            after_space = c.is_whitespace();
            if !after_space {
                opens_here = matches!(c, ':' | '-' | ',' | '[' | '{');
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_found_where_it_passes_the_bound() {
        let deep = format!("events: {}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(too_deep(&deep), Some((1, 9 + MAX_FLOW_DEPTH)));
        let ok = format!(
            "a: {}{}",
            "[".repeat(MAX_FLOW_DEPTH),
            "]".repeat(MAX_FLOW_DEPTH)
        );
        assert_eq!(too_deep(&ok), None);
        let nested_maps = format!("a: {}1{}", "{b: ".repeat(70), "}".repeat(70));
        assert!(too_deep(&nested_maps).is_some());
    }

    #[test]
    fn brackets_in_strings_comments_and_plain_scalars_do_not_count() {
        let text = format!(
            "description: see [1 and [2\nname: \"{}\"\n# {}\nx: '{}'\n",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100)
        );
        assert_eq!(too_deep(&text), None);
    }
}
