//! Field paths in a YAML tree (`prefill.instances[0].nodes[1].host`): how errors print them, the
//! node a path names, and the path of the node a place falls in.

use super::yaml::Node;

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A mapping's key.
    Key(String),
    /// A sequence's item.
    Index(usize),
}

/// `a.b[2].c`, as errors print a path (outermost step first).
pub fn render(steps: &[Step]) -> String {
    let mut s = String::new();
    for step in steps {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

/// The steps of a path printed as [`render`] prints it. Keys hold no `.` or `[` (a key that does
/// cannot be named this way).
pub fn parse(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        if !key.is_empty() {
            steps.push(Step::Key(key.to_owned()));
        }
        for index in rest.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse::<usize>() {
                steps.push(Step::Index(i));
            }
        }
    }
    steps
}

/// The source offset of what `path` names under `root`, the tree of `text`: a key's own place
/// for a step into a mapping (where a reader looks for the field), an item's `-` for a step
/// into a block sequence, the item itself in a flow one. `None` when the path leads nowhere.
pub fn find(root: &Node, text: &str, path: &[Step]) -> Option<usize> {
    let mut node = root;
    let mut at = root.start();
    for step in path {
        match step {
            Step::Key(k) => {
                let (key, value) = node.entry(k)?;
                at = key.start;
                node = value;
            }
            Step::Index(i) => {
                let Node::Seq(seq) = node else { return None };
                node = seq.items.get(*i)?;
                at = node.start();
                if !seq.flow {
                    // The item starts after its `-` and the blanks after that.
                    let b = text.as_bytes();
                    let mut dash = at.min(b.len());
                    while dash > 0 && matches!(b[dash - 1], b' ' | b'\t') {
                        dash -= 1;
                    }
                    if dash > 0 && b[dash - 1] == b'-' {
                        at = dash - 1;
                    }
                }
            }
        }
    }
    Some(at)
}

/// The path of the innermost node under `root` that starts before `offset` and is the last to
/// do so at its depth: where a reader going through the text stood at `offset` (a syntax error
/// there is about that field).
pub fn at(root: &Node, offset: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut node = root;
    loop {
        match node {
            Node::Map(m) => {
                let Some((k, v)) = m.entries.iter().rev().find(|(k, _)| k.start < offset) else { break };
                steps.push(Step::Key(k.text.to_string()));
                if v.start() >= offset {
                    break;
                }
                node = v;
            }
            Node::Seq(s) => {
                let Some(i) = s.items.iter().rposition(|n| n.start() < offset) else { break };
                steps.push(Step::Index(i));
                node = &s.items[i];
            }
            Node::Null(_) | Node::Scalar(_) => break,
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::yaml;

    #[test]
    fn paths_print_and_parse_back() {
        let steps = vec![Step::Key("a".into()), Step::Index(2), Step::Index(0), Step::Key("b".into())];
        assert_eq!(render(&steps), "a[2][0].b");
        assert_eq!(parse("a[2][0].b"), steps);
        assert_eq!(render(&[Step::Index(1)]), "[1]");
        assert_eq!(parse(""), vec![]);
    }

    /// A key is found at itself, a block item at its `-`, a flow item at itself.
    #[test]
    fn find_places_keys_and_items() {
        let text = "a:\n  - x\n  -   b: 1\n      c: [p, q]\n";
        let doc = yaml::parse(text).unwrap().remove(0);
        let at = |p: &str| find(&doc, text, &parse(p));
        assert_eq!(at("a"), Some(0));
        assert_eq!(at("a[1]"), text.find("-   b"));
        assert_eq!(at("a[1].c"), text.find("c:"));
        assert_eq!(at("a[1].c[1]"), text.find('q'));
        assert_eq!(at("a[2]"), None);
        assert_eq!(at("a.b"), None);
    }

    #[test]
    fn at_names_the_last_node_before_a_place() {
        let text = "a:\n  - x\n  - b: 1\n    c: 2\nd: 3\n";
        let doc = yaml::parse(text).unwrap().remove(0);
        assert_eq!(render(&at(&doc, text.find("c:").unwrap() + 1)), "a[1].c");
        assert_eq!(render(&at(&doc, text.find("b:").unwrap())), "a[0]", "the item starts at its key");
        assert_eq!(render(&at(&doc, text.find("b:").unwrap() + 1)), "a[1].b");
        assert_eq!(render(&at(&doc, text.len())), "d");
        assert_eq!(render(&at(&doc, 0)), "");
    }
}
