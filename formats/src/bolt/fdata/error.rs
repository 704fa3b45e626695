//! Errors of the fdata reader: the line, the column and byte offset, and what was expected.
//! The caller adds the file name.

use std::fmt;

/// An fdata parse error: where it happened and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdataError {
    /// 1-based line number.
    pub line: u64,
    /// 1-based byte column in that line.
    pub column: usize,
    /// Byte offset of the error in the input.
    pub offset: u64,
    /// What went wrong.
    pub kind: FdataErrorKind,
}

/// What went wrong in an fdata line; [`FdataError`] adds where.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdataErrorKind {
    /// A line does not start with a location tag of the expected family.
    ExpectedTag {
        /// The tags that would fit here (e.g. `"0, 1 or 2"`).
        expected: &'static str,
        /// The text found instead.
        found: String,
    },
    /// The location tag is not followed by a space.
    ExpectedSpaceAfterTag {
        /// The text found after the tag.
        found: String,
    },
    /// The line ends before the named field.
    MissingField(&'static str),
    /// A backslash ends the line, escaping nothing.
    DanglingEscape,
    /// The named field is not a hexadecimal number that fits 64 bits.
    BadHex {
        /// The field's name (e.g. `"offset"`).
        field: &'static str,
        /// The field's text.
        found: String,
    },
    /// The named field is not a decimal number that fits a signed 64-bit integer.
    BadDecimal {
        /// The field's name (e.g. `"count"`).
        field: &'static str,
        /// The field's text.
        found: String,
    },
    /// More fields than the line's form has; `form` describes the expected line.
    TrailingField {
        /// The line's form, as documented for that kind of line.
        form: &'static str,
        /// The first surplus field.
        found: String,
    },
    /// A `no_lbr` or `boltedcollection` header line is malformed.
    BadHeader {
        /// The header keyword (`"no_lbr"` or `"boltedcollection"`).
        header: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A header appears twice, or after data lines.
    MisplacedHeader(&'static str),
}

impl FdataError {
    pub(crate) fn new(line: u64, column: usize, offset: u64, kind: FdataErrorKind) -> Self {
        FdataError {
            line,
            column,
            offset,
            kind,
        }
    }
}

impl fmt::Display for FdataErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FdataErrorKind::*;
        match self {
            ExpectedTag { expected, found } => write!(f, "expected {expected}, found {found}"),
            ExpectedSpaceAfterTag { found } => {
                write!(f, "expected a space after the location tag, found {found}")
            }
            MissingField(field) => write!(f, "expected {field}, found the end of the line"),
            DanglingEscape => write!(f, "expected a character after the backslash escape"),
            BadHex { field, found } => write!(
                f,
                "expected a hexadecimal {field} (at most 64 bits), found {found}"
            ),
            BadDecimal { field, found } => write!(
                f,
                "expected a decimal {field} (a signed 64-bit integer), found {found}"
            ),
            TrailingField { form, found } => write!(
                f,
                "expected the end of the line ({form}), found another field {found}"
            ),
            BadHeader { header, problem } => write!(f, "malformed {header} line: {problem}"),
            MisplacedHeader(header) => write!(
                f,
                "a {header} header may appear only once, before every data line"
            ),
        }
    }
}

impl fmt::Display for FdataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {} (byte offset {}): {}",
            self.line, self.column, self.offset, self.kind
        )
    }
}

impl std::error::Error for FdataError {}

/// Quotes a field for an error message: lossy UTF-8, escaped, at most 40 characters.
pub(crate) fn quoted(field: &[u8]) -> String {
    const MAX: usize = 40;
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > MAX {
        let short: String = text.chars().take(MAX).collect();
        format!("{short:?}…")
    } else {
        format!("{text:?}")
    }
}
