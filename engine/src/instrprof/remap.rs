//! `llvm-profdata merge --remapping-file`: the instrumentation-profile `SymbolRemapper` of
//! llvm-profdata.cpp (LLVM 19). Each non-blank line not starting with `#` is `old new`, split at
//! the first space; the first mapping of a name wins. Record names are mapped as they are read,
//! so records of two old names that map to one new name merge.

use crate::io::remap::RemapTable;

/// A parsed remapping file: old record name → new name.
#[derive(Clone, Debug, Default)]
pub struct Remapper {
    table: RemapTable,
}

impl Remapper {
    /// Parses a remapping file; the error names the file and line as llvm-profdata does.
    pub fn parse(text: &[u8], file: &str) -> Result<Remapper, RemapError> {
        let table = crate::io::remap::parse_remapping(text).map_err(|line| RemapError {
            file: file.to_string(),
            line,
        })?;
        Ok(Remapper { table })
    }

    /// The new name of `name`, or `name` itself.
    pub fn map<'a>(&'a self, name: &'a [u8]) -> &'a [u8] {
        self.table.get(name).map_or(name, Vec::as_slice)
    }
}

/// A line of a remapping file that is not `old_symbol new_symbol`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemapError {
    /// The remapping file.
    pub file: String,
    /// The line (1-based).
    pub line: usize,
}

impl std::fmt::Display for RemapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: unexpected line in remapping file\nnote: expected 'old_symbol new_symbol'",
            self.file, self.line
        )
    }
}

impl std::error::Error for RemapError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_mapping_wins_and_bad_lines_are_named() {
        let r = Remapper::parse(b"# c\n\na b\na c\r\nx y\n", "f").unwrap();
        assert_eq!(r.map(b"a"), b"b");
        assert_eq!(r.map(b"x"), b"y");
        assert_eq!(r.map(b"z"), b"z");
        let e = Remapper::parse(b"a b\nonly\n", "f").unwrap_err();
        assert!(e.to_string().starts_with("f:2: unexpected line"), "{e}");
        assert!(Remapper::parse(b"a b c\n", "f").is_err());
    }
}
