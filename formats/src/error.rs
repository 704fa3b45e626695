//! What the format errors share: [`Cause`], the underlying error (io, zstd, zlib, …) an error
//! was built from, kept so that `std::error::Error::source` can hand it out.

use std::fmt;
use std::sync::Arc;

/// The underlying error of a format error. Cheap to clone; two causes compare equal when
/// their messages do, so that format errors can stay `Clone + PartialEq`.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Cause(Arc::new(e))
    }

    /// The wrapped error, for `source()`.
    pub fn error(&self) -> &(dyn std::error::Error + 'static) {
        &*self.0
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

impl From<std::io::Error> for Cause {
    fn from(e: std::io::Error) -> Self {
        Cause::new(e)
    }
}

/// How many characters of an input line an error message echoes.
pub const EXCERPT_CHARS: usize = 80;

/// An input line (or field) as an error message echoes it: lossy UTF-8, control characters
/// other than tab escaped so the message stays on one line, and cut to [`EXCERPT_CHARS`] characters followed
/// by `…`.
pub fn excerpt(text: &[u8]) -> String {
    // Enough bytes for the characters shown even if every one is 4 bytes long.
    let head = &text[..text.len().min(4 * EXCERPT_CHARS + 4)];
    let mut chars: Vec<char> = String::from_utf8_lossy(head).chars().collect();
    let cut = chars.len() > EXCERPT_CHARS || head.len() < text.len();
    chars.truncate(EXCERPT_CHARS);
    let mut out = String::with_capacity(chars.len() + 3);
    for c in chars {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt(b"foo:1:2"), "foo:1:2");
        assert_eq!(excerpt(b"a\rb\tc\n"), "a\\rb\tc\\n");
        let long = "x:".repeat(1000);
        let shown = excerpt(long.as_bytes());
        assert_eq!(shown.chars().count(), EXCERPT_CHARS + 1);
        assert!(shown.ends_with('…'));
        // Exactly the limit: nothing cut.
        let exact = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(exact.as_bytes()), exact);
        let over = "é".repeat(EXCERPT_CHARS + 1);
        assert_eq!(excerpt(over.as_bytes()), format!("{exact}…"));
    }
}
