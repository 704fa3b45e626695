//! Symbol remapping files as llvm-profdata's `SymbolRemapper` reads them, for instrumentation
//! and sample profiles alike: `old new` per line, split at the first space.

use hashbrown::HashMap;

/// Old name → new name.
pub type RemapTable = HashMap<Vec<u8>, Vec<u8>>;

/// Parses a remapping file as LLVM's `line_iterator(SkipBlanks, '#')` walks it: empty lines
/// (`\n` or `\r\n`) and lines starting with `#` are skipped; every other line — a line of
/// spaces too — must be two names separated by one space. The first mapping of a name wins
/// (`DenseMap::insert`). The error is the 1-based number of the first bad line.
pub fn parse_remapping(text: &[u8]) -> Result<RemapTable, usize> {
    let mut table = HashMap::new();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        // line_iterator drops the '\r' of "\r\n" line ends.
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let (old, new) = match memchr::memchr(b' ', line) {
            Some(p) => (&line[..p], &line[p + 1..]),
            None => (line, &line[line.len()..]),
        };
        if old.is_empty() || new.is_empty() || new.contains(&b' ') {
            return Err(index + 1);
        }
        table.entry(old.to_vec()).or_insert_with(|| new.to_vec());
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_llvm_profdata_19_reads_them() {
        let table = parse_remapping(b"a b\r\n\n#comment\nc d\na e\n").unwrap();
        assert_eq!(table.get(&b"a"[..]).map(Vec::as_slice), Some(&b"b"[..]));
        assert_eq!(table.len(), 2);
        // A line of spaces is not blank to line_iterator: llvm-profdata-19 (instrumentation
        // and --sample alike) fails on it with "r.map:2: unexpected line".
        assert_eq!(parse_remapping(b"main foo\n  \n"), Err(2));
        assert_eq!(parse_remapping(b"a b c\n"), Err(1));
        assert_eq!(parse_remapping(b"lonely\n"), Err(1));
    }
}
