//! `llvm-profdata merge --function=REGEX --no-function=REGEX` (`filterFunctions` of LLVM 19):
//! applied to the merged profile's names just before it is written; a name is dropped when the
//! negative pattern matches it, or when there is a positive pattern that does not. Matching is
//! a search (unanchored), as `llvm::Regex::match` does.
//!
//! `llvm::Regex` is the BSD POSIX extended-regex engine. Patterns are translated to the `regex`
//! crate's syntax (byte-oriented, `.` matching every byte) so that they mean the same:
//! * `\c` outside a bracket expression is the literal `c` (`\d` is `d`, not a digit class);
//! * a backslash inside a bracket expression is literal (`[\d]` is `\` or `d`);
//! * `[` inside a bracket is literal unless it opens `[:class:]`, `[.c.]` or `[=c=]`;
//! * `{` not followed by a digit is literal;
//! * an empty alternative (`a|`, `(|a)`) is an error, as in LLVM.
//!
//! Not reproduced (refused with an error rather than matched differently): back-references
//! (`\1`), multi-character collating elements, and a repetition operator directly applied to
//! another one (`a**`), which the `regex` crate rejects.
//!
//! As in LLVM, a pattern that starts with `?` (an MSVC-mangled name) is matched literally. The
//! MD5-name matching of `filterFunctions` only applies to sample profiles.

use regex::bytes::{Regex, RegexBuilder};

/// The positive and negative name patterns.
#[derive(Clone, Debug, Default)]
pub struct NameFilter {
    keep: Option<Regex>,
    drop: Option<Regex>,
}

impl NameFilter {
    /// Compiles `--function` and `--no-function` (empty = not given).
    pub fn new(function: &str, no_function: &str) -> Result<NameFilter, PatternError> {
        Ok(NameFilter {
            keep: compile(function)?,
            drop: compile(no_function)?,
        })
    }

    /// Whether either pattern was given (otherwise every name is kept).
    pub fn is_active(&self) -> bool {
        self.keep.is_some() || self.drop.is_some()
    }

    /// Whether `name` stays in the output (the negative filter wins).
    pub fn keeps(&self, name: &[u8]) -> bool {
        if self.drop.as_ref().is_some_and(|r| r.is_match(name)) {
            return false;
        }
        self.keep.as_ref().is_none_or(|r| r.is_match(name))
    }
}

/// A `--function`/`--no-function` pattern that cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum PatternError {
    /// Not a POSIX extended regular expression (LLVM's `Regex` message), or a construct the
    /// translation does not support.
    Syntax(&'static str),
    /// The translated expression was refused by the regex engine.
    Regex {
        /// The pattern as given.
        pattern: String,
        /// The regex engine's reason.
        source: regex::Error,
    },
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatternError::Syntax(m) => f.write_str(m),
            PatternError::Regex { pattern, source } => {
                write!(f, "invalid regular expression '{pattern}': {source}")
            }
        }
    }
}

impl std::error::Error for PatternError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PatternError::Regex { source, .. } => Some(source),
            PatternError::Syntax(_) => None,
        }
    }
}

fn compile(pattern: &str) -> Result<Option<Regex>, PatternError> {
    if pattern.is_empty() {
        return Ok(None);
    }
    // `[?@$_0-9A-Za-z]+` always finds the leading `?` itself, so every such pattern is literal.
    let translated = if pattern.starts_with('?') {
        literal(pattern.as_bytes())
    } else {
        translate(pattern.as_bytes()).map_err(PatternError::Syntax)?
    };
    RegexBuilder::new(&translated)
        .unicode(false)
        .dot_matches_new_line(true)
        .build()
        .map(Some)
        .map_err(|source| PatternError::Regex {
            pattern: pattern.to_string(),
            source,
        })
}

fn push_literal(out: &mut String, byte: u8) {
    if byte.is_ascii_alphanumeric() || byte == b' ' || byte == b'_' {
        out.push(byte as char);
    } else {
        out.push_str(&format!("\\x{byte:02x}"));
    }
}

fn literal(pattern: &[u8]) -> String {
    let mut out = String::new();
    for &b in pattern {
        push_literal(&mut out, b);
    }
    out
}

/// A POSIX ERE in the `regex` crate's syntax, or LLVM's error message.
fn translate(p: &[u8]) -> Result<String, &'static str> {
    let mut out = String::new();
    let mut i = 0;
    // Whether the current branch has an atom yet, one per open group (plus the top level).
    let mut branch_has_atom = vec![false];
    let mut after_atom = false;
    let mut after_repetition = false;
    while i < p.len() {
        let c = p[i];
        i += 1;
        match c {
            b'\\' => {
                let Some(&next) = p.get(i) else {
                    return Err("trailing backslash (\\)");
                };
                i += 1;
                if (b'1'..=b'9').contains(&next) {
                    return Err("back-references are not supported by profmill");
                }
                push_literal(&mut out, next);
                after_atom = true;
            }
            b'[' => {
                i = bracket(p, i, &mut out)?;
                after_atom = true;
            }
            b'(' => {
                // `()` is allowed: no branch is parsed when `)` follows at once.
                if p.get(i) == Some(&b')') {
                    out.push_str("()");
                    i += 1;
                    after_atom = true;
                } else {
                    out.push('(');
                    branch_has_atom.push(false);
                    after_atom = false;
                    after_repetition = false;
                    continue;
                }
            }
            b')' => {
                if branch_has_atom.len() == 1 {
                    return Err("parentheses not balanced");
                }
                if branch_has_atom.pop() != Some(true) {
                    return Err("empty (sub)expression");
                }
                out.push(')');
                after_atom = true;
            }
            b'|' => {
                if branch_has_atom.last() != Some(&true) {
                    return Err("empty (sub)expression");
                }
                *branch_has_atom.last_mut().unwrap_or(&mut false) = false;
                out.push('|');
                after_atom = false;
                after_repetition = false;
                continue;
            }
            b'*' | b'+' | b'?' => {
                if !after_atom {
                    return Err("repetition-operator operand invalid");
                }
                // The `regex` crate reads `a*?` as a lazy `a*`, not as `(a*)?`.
                if after_repetition {
                    return Err("a repetition of a repetition is not supported by profmill");
                }
                out.push(c as char);
                after_repetition = true;
                continue;
            }
            b'{' if p.get(i).is_some_and(u8::is_ascii_digit) => {
                if !after_atom {
                    return Err("repetition-operator operand invalid");
                }
                if after_repetition {
                    return Err("a repetition of a repetition is not supported by profmill");
                }
                let close = p[i..]
                    .iter()
                    .position(|&b| b == b'}')
                    .ok_or("braces not balanced")?;
                let bound = &p[i..i + close];
                if !bound.iter().all(|b| b.is_ascii_digit() || *b == b',') {
                    return Err("invalid repetition count(s)");
                }
                out.push('{');
                out.push_str(&String::from_utf8_lossy(bound));
                out.push('}');
                i += close + 1;
                after_repetition = true;
                continue;
            }
            // BSD regcomp refuses a repetition right after `^`.
            b'^' => {
                out.push('^');
                after_atom = false;
            }
            b'$' => {
                out.push('$');
                after_atom = true;
            }
            b'.' => {
                out.push('.');
                after_atom = true;
            }
            _ => {
                push_literal(&mut out, c);
                after_atom = true;
            }
        }
        after_repetition = false;
        if let Some(last) = branch_has_atom.last_mut() {
            *last = true;
        }
    }
    if branch_has_atom.len() > 1 {
        return Err("parentheses not balanced");
    }
    if branch_has_atom.last() != Some(&true) {
        return Err("empty (sub)expression");
    }
    Ok(out)
}

/// Translates the bracket expression after `[` at `i`; returns the index after its `]`.
/// BSD's `p_bracket`: a leading `]` or `-` is literal, a `-` may otherwise only end the list.
fn bracket(p: &[u8], mut i: usize, out: &mut String) -> Result<usize, &'static str> {
    const UNBALANCED: &str = "brackets ([ ]) not balanced";
    out.push('[');
    if p.get(i) == Some(&b'^') {
        out.push('^');
        i += 1;
    }
    if let Some(&c @ (b']' | b'-')) = p.get(i) {
        push_class_byte(out, c);
        i += 1;
    }
    loop {
        match (p.get(i), p.get(i + 1)) {
            (None, _) => return Err(UNBALANCED),
            (Some(b']'), _) => {
                out.push(']');
                return Ok(i + 1);
            }
            (Some(b'-'), Some(b']')) => {
                push_class_byte(out, b'-');
                i += 1;
                continue;
            }
            (Some(b'-'), _) => return Err("invalid character range"),
            (Some(b'['), Some(b':')) => {
                let end = find(p, i + 2, b":]").ok_or(UNBALANCED)?;
                let name = &p[i + 2..end];
                if !CLASSES.contains(&name) {
                    return Err("invalid character class");
                }
                out.push_str("[:");
                out.push_str(&String::from_utf8_lossy(name));
                out.push_str(":]");
                i = end + 2;
                continue;
            }
            _ => {}
        }
        let (start, next) = symbol(p, i)?;
        i = next;
        // A range `start-end`, unless the `-` ends the list.
        if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&b| b != b']') {
            let (end, next) = symbol(p, i + 1)?;
            if end < start {
                return Err("invalid character range");
            }
            push_class_byte(out, start);
            out.push('-');
            push_class_byte(out, end);
            i = next;
        } else {
            push_class_byte(out, start);
        }
    }
}

const CLASSES: [&[u8]; 12] = [
    b"alnum", b"alpha", b"blank", b"cntrl", b"digit", b"graph", b"lower", b"print", b"punct",
    b"space", b"upper", b"xdigit",
];

/// One bracket symbol at `i`: a byte, or a one-byte `[.c.]` / `[=c=]`; and the index after it.
fn symbol(p: &[u8], i: usize) -> Result<(u8, usize), &'static str> {
    const UNBALANCED: &str = "brackets ([ ]) not balanced";
    let c = *p.get(i).ok_or(UNBALANCED)?;
    if let (b'[', Some(&d @ (b'.' | b'='))) = (c, p.get(i + 1)) {
        let end = find(p, i + 2, &[d, b']']).ok_or(UNBALANCED)?;
        let [byte] = p[i + 2..end] else {
            return Err("invalid collating element");
        };
        return Ok((byte, end + 2));
    }
    Ok((c, i + 1))
}

fn push_class_byte(out: &mut String, byte: u8) {
    if byte.is_ascii_alphanumeric() {
        out.push(byte as char);
    } else {
        out.push_str(&format!("\\x{byte:02x}"));
    }
}

fn find(p: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    p.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|k| from + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(pattern: &str, name: &str) -> bool {
        NameFilter::new(pattern, "").unwrap().keeps(name.as_bytes())
    }

    #[test]
    fn posix_meanings() {
        assert!(keeps("^ma", "main"));
        assert!(!keeps("^ma", "xmain"));
        assert!(keeps(r"\d", "d"));
        assert!(!keeps(r"\d", "7"));
        assert!(keeps(r"[\d]", "\\"));
        assert!(keeps("a{", "a{"));
        assert!(keeps("[[:digit:]]x", "1x"));
        assert!(keeps("[]a]", "]"));
        assert!(keeps("[a-]", "-"));
        assert!(keeps("f(o|i)+$", "fooi"));
        assert!(keeps("?foo@@Y", "x?foo@@YAHXZ"));
        assert!(!keeps("?foo@@Y", "foo"));
        assert!(keeps("a.b", "a\nb"));
    }

    #[test]
    fn llvm_errors() {
        for bad in [
            "(a", "a)", "a|", "|a", "(|a)", "*a", "a\\", "[a", "a{1", "\\1",
        ] {
            assert!(NameFilter::new(bad, "").is_err(), "{bad}");
        }
        assert!(NameFilter::new("()", "").is_ok());
    }

    #[test]
    fn negative_wins() {
        let f = NameFilter::new("o", "^f").unwrap();
        assert!(!f.keeps(b"foo"));
        assert!(f.keeps(b"boo"));
        assert!(!f.keeps(b"bar"));
    }
}
