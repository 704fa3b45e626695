//! `GCOV_STRING_TABLE`: a path-compressed trie of a TU's symbol names. Both directions use an
//! explicit stack, so a deep trie (long names sharing prefixes) cannot overflow the call stack.

use std::sync::Arc;

use super::binary::{Input, Output};
use crate::sampleprof::error::{Error, Result};

const TERMINAL: u8 = 0x80;
const MAX_CHILDREN: usize = 0x7F;
const MAX_LABEL: usize = 0xFFFF;

/// Pending work of the writer, in pre-order.
enum Step {
    /// The node of the strings `lo..hi` (which share their first `depth` bytes).
    Node { lo: usize, hi: usize, depth: usize },
    /// An edge to the node of the strings `lo..hi`, labelled from `depth` on.
    Edge { lo: usize, hi: usize, depth: usize },
    /// An empty-labelled edge to a node holding the overflow children of a wide node.
    Overflow {
        groups: Vec<(usize, usize)>,
        depth: usize,
    },
}

/// Length of the common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Splits `strings[lo..hi]` (sorted, all longer than `depth`) by their byte at `depth`.
fn child_groups(strings: &[&[u8]], lo: usize, hi: usize, depth: usize) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let mut start = lo;
    for i in lo + 1..=hi {
        if i == hi || strings[i][depth] != strings[start][depth] {
            groups.push((start, i));
            start = i;
        }
    }
    groups
}

/// Writes the node header and queues the children (at most 127; the rest via an overflow).
fn write_children(stack: &mut Vec<Step>, groups: Vec<(usize, usize)>, depth: usize) {
    let direct = if groups.len() > MAX_CHILDREN {
        MAX_CHILDREN - 1
    } else {
        groups.len()
    };
    let mut queued: Vec<Step> = groups[..direct]
        .iter()
        .map(|&(lo, hi)| Step::Edge { lo, hi, depth })
        .collect();
    if groups.len() > direct {
        queued.push(Step::Overflow {
            groups: groups[direct..].to_vec(),
            depth,
        });
    }
    // Pre-order: the first child is written first, so it goes on top of the stack.
    stack.extend(queued.into_iter().rev());
}

/// Serializes the strings (sorted, unique); string `i` gets terminal ID `i`.
pub(crate) fn write_trie(strings: &[&[u8]], out: &mut Output) {
    out.uint(strings.len() as u64, 4);
    if strings.is_empty() {
        out.byte(0);
        return;
    }
    let mut stack = vec![Step::Node {
        lo: 0,
        hi: strings.len(),
        depth: 0,
    }];
    while let Some(step) = stack.pop() {
        match step {
            Step::Node { lo, hi, depth } => {
                // Sorted and unique: only the first string can end here.
                let terminal = strings[lo].len() == depth;
                let first_child = lo + usize::from(terminal);
                let groups = if first_child < hi {
                    child_groups(strings, first_child, hi, depth)
                } else {
                    Vec::new()
                };
                let shown = groups.len().min(MAX_CHILDREN) as u8;
                out.byte(if terminal { TERMINAL } else { 0 } | shown);
                if terminal {
                    out.uint(lo as u64, 4);
                }
                write_children(&mut stack, groups, depth);
            }
            Step::Edge { lo, hi, depth } => {
                let mut label = common_prefix(&strings[lo][depth..], &strings[hi - 1][depth..]);
                if lo + 1 == hi {
                    label = strings[lo].len() - depth;
                }
                let mut at = depth;
                // Labels longer than the 2-byte length field continue through chain nodes.
                while depth + label - at > MAX_LABEL {
                    out.uint(MAX_LABEL as u64, 2);
                    out.bytes(&strings[lo][at..at + MAX_LABEL]);
                    out.byte(1);
                    at += MAX_LABEL;
                }
                let end = depth + label;
                out.uint((end - at) as u64, 2);
                out.bytes(&strings[lo][at..end]);
                stack.push(Step::Node { lo, hi, depth: end });
            }
            Step::Overflow { groups, depth } => {
                out.uint(0, 2);
                let shown = groups.len().min(MAX_CHILDREN) as u8;
                out.byte(shown);
                write_children(&mut stack, groups, depth);
            }
        }
    }
}

/// Reads a string table: the strings by terminal ID. `limit` bounds the total bytes of the
/// decoded strings (a small trie can describe huge tables).
pub(crate) fn read_trie(input: &mut Input<'_>, limit: usize) -> Result<Vec<Arc<[u8]>>> {
    let at = input.pos();
    let n = input.uint(4, "GCOV_NUM_STRINGS")? as usize;
    // Every string needs its own terminal node of at least two bytes.
    if n > input.remaining() / 2 + 1 {
        return Err(input.malformed(
            at,
            format!(
                "GCOV_NUM_STRINGS {n} is more than the {} section bytes can hold",
                input.remaining()
            ),
        ));
    }
    let mut strings: Vec<Option<Arc<[u8]>>> = vec![None; n];
    let mut prefix: Vec<u8> = Vec::new();
    let mut decoded = 0usize;
    // (children still to read, prefix length at the node)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut read_node =
        |input: &mut Input<'_>, prefix: &[u8], stack: &mut Vec<(usize, usize)>| -> Result<()> {
            let bits = input.byte("TRIE_NODE_BITMASK")?;
            if bits & TERMINAL != 0 {
                let at = input.pos();
                let id = input.uint(4, "TRIE_TERMINAL_ID")?;
                let slot = strings.get_mut(id as usize).ok_or_else(|| {
                    input.malformed(
                        at,
                        format!("string ID {id} is not below GCOV_NUM_STRINGS {n}"),
                    )
                })?;
                if slot.is_some() {
                    return Err(input.malformed(at, format!("string ID {id} is used twice")));
                }
                decoded += prefix.len();
                if decoded > limit {
                    return Err(input.malformed(
                        at,
                        format!("the string table expands to more than {limit} bytes"),
                    ));
                }
                *slot = Some(Arc::from(prefix));
            }
            stack.push((usize::from(bits & !TERMINAL), prefix.len()));
            Ok(())
        };
    read_node(input, &prefix, &mut stack)?;
    while let Some(top) = stack.last_mut() {
        if top.0 == 0 {
            stack.pop();
            continue;
        }
        top.0 -= 1;
        prefix.truncate(top.1);
        let len = input.uint(2, "TRIE_EDGE_LABEL_LENGTH")? as usize;
        prefix.extend_from_slice(input.bytes(len, "TRIE_EDGE_LABEL")?);
        read_node(input, &prefix, &mut stack)?;
    }
    strings
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| Error::Malformed {
                offset: at as u64,
                what: format!("string ID {i} of {n} has no terminal node in the trie"),
            })
        })
        .collect()
}
