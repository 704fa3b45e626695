//! Response files (`@file`) on the drop-ins' command lines, expanded as LLVM's `cl` library
//! expands them before it reads any option (`ExpansionContext::expandResponseFiles` with the
//! GNU tokenizer, checked against `llvm/lib/Support/CommandLine.cpp`):
//! * an argument `@NAME` is replaced by the arguments read from the file `NAME` (relative
//!   names from the working directory, also inside response files), and those are expanded in
//!   turn; a file that does not exist leaves `@NAME` as it is (libiberty's rule);
//! * a UTF-8 byte-order mark is dropped, UTF-16 (with its mark) is converted;
//! * the contents split at spaces, tabs, CR and LF; a backslash takes the next character as
//!   it is; `'…'` and `"…"` quote (a backslash escapes inside both).
//!
//! One difference: where LLVM prints an expansion error and goes on with no options at all
//! (llvm-profdata then says "no input files specified"), this is an error naming the file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `args` with every `@file` expanded; an error for a response file that exists but cannot
/// be read, or that includes itself.
pub fn expand(args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    if !args.iter().any(|a| a.as_encoded_bytes().starts_with(b"@")) {
        return Ok(args);
    }
    let mut args = args;
    // The files being expanded and the index just past each one's arguments.
    let mut stack: Vec<(PathBuf, usize)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        while stack.last().is_some_and(|&(_, end)| end <= i) {
            stack.pop();
        }
        let Some(name) = args[i].as_encoded_bytes().strip_prefix(b"@") else {
            i += 1;
            continue;
        };
        let path = absolute(Path::new(&os_from_bytes(name.to_vec())))?;
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                i += 1;
                continue;
            }
            Err(e) => return Err(cannot_open(&path, &e)),
        };
        if let Some((file, _)) = stack.iter().find(|(f, _)| same_file(f, &meta)) {
            return Err(format!("recursive expansion of: '{}'", file.display()));
        }
        let contents = std::fs::read(&path).map_err(|e| cannot_open(&path, &e))?;
        let expanded: Vec<OsString> = tokenize(&decode(&contents)?)
            .into_iter()
            .map(os_from_bytes)
            .collect();
        let added = expanded.len();
        args.splice(i..=i, expanded);
        for (_, end) in &mut stack {
            *end = *end + added - 1;
        }
        stack.push((path, i + added));
    }
    Ok(args)
}

fn cannot_open(path: &Path, e: &std::io::Error) -> String {
    // LLVM's words, its doubled "not" included, so that scripts matching them still match.
    format!("cannot not open file '{}': {e}", path.display())
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path)
        .map_err(|e| format!("cannot get absolute path for: {}: {e}", path.display()))
}

#[cfg(unix)]
fn same_file(file: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(file).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
}

#[cfg(not(unix))]
fn same_file(_: &Path, _: &std::fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn os_from_bytes(bytes: Vec<u8>) -> OsString {
    std::os::unix::ffi::OsStringExt::from_vec(bytes)
}

#[cfg(not(unix))]
fn os_from_bytes(bytes: Vec<u8>) -> OsString {
    OsString::from(String::from_utf8_lossy(&bytes).into_owned())
}

/// The text of a response file: without a UTF-8 byte-order mark, UTF-16 converted.
fn decode(contents: &[u8]) -> Result<Vec<u8>, String> {
    let utf16 = match contents {
        [0xFF, 0xFE, rest @ ..] => Some((rest, u16::from_le_bytes as fn([u8; 2]) -> u16)),
        [0xFE, 0xFF, rest @ ..] => Some((rest, u16::from_be_bytes as fn([u8; 2]) -> u16)),
        _ => None,
    };
    if let Some((rest, unit)) = utf16 {
        let bad = || "Could not convert UTF16 to UTF8".to_string();
        if rest.len() % 2 != 0 {
            return Err(bad());
        }
        let units = rest.chunks_exact(2).map(|c| unit([c[0], c[1]]));
        let text: String = char::decode_utf16(units)
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        return Ok(text.into_bytes());
    }
    Ok(contents
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(contents)
        .to_vec())
}

/// LLVM's GNU tokenizer: whitespace-separated words, backslash escapes, `'` and `"` quotes.
fn tokenize(src: &[u8]) -> Vec<Vec<u8>> {
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let mut words = Vec::new();
    let mut word = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if !in_word && is_space(c) {
            i += 1;
            continue;
        }
        in_word = true;
        match c {
            b'\\' if i + 1 < src.len() => {
                word.push(src[i + 1]);
                i += 2;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < src.len() && src[i] != c {
                    if src[i] == b'\\' && i + 1 < src.len() {
                        i += 1;
                    }
                    word.push(src[i]);
                    i += 1;
                }
                // Past the closing quote (an unclosed one ends the text).
                i += 1;
            }
            c if is_space(c) => {
                words.push(std::mem::take(&mut word));
                in_word = false;
                i += 1;
            }
            c => {
                word.push(c);
                i += 1;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        tokenize(src.as_bytes())
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    #[test]
    fn words_split_at_whitespace_with_quotes_and_escapes() {
        assert_eq!(words("  a\tb\r\nc  "), ["a", "b", "c"]);
        assert_eq!(words(r#"'a b' "c d" e\ f"#), ["a b", "c d", "e f"]);
        assert_eq!(
            words(r#""a\"b" 'c\'d' x'y z'w"#),
            [r#"a"b"#, "c'd", "xy zw"]
        );
        assert_eq!(words(r"a\\b \"), [r"a\b", r"\"]);
        // An empty quoted word is a word; an unclosed quote runs to the end.
        assert_eq!(words(r#"'' "open"#), ["", "open"]);
    }

    #[test]
    fn byte_order_marks() {
        assert_eq!(decode(b"\xEF\xBB\xBF-x").unwrap(), b"-x");
        assert_eq!(decode(b"\xFF\xFE-\0x\0").unwrap(), b"-x");
        assert_eq!(decode(b"\xFE\xFF\0-\0x").unwrap(), b"-x");
        assert!(decode(b"\xFF\xFE-").is_err());
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn files_expand_in_place_and_recursively() {
        let d = tempfile::tempdir().unwrap();
        let (outer, inner) = (d.path().join("outer"), d.path().join("inner"));
        std::fs::write(&inner, "--b 'c d'").unwrap();
        std::fs::write(&outer, format!("--a @{} e", inner.display())).unwrap();
        let missing = d.path().join("missing");
        let args = os(&[
            "x",
            &format!("@{}", outer.display()),
            &format!("@{}", missing.display()),
            "y",
        ]);
        let want = os(&[
            "x",
            "--a",
            "--b",
            "c d",
            "e",
            &format!("@{}", missing.display()),
            "y",
        ]);
        assert_eq!(expand(args).unwrap(), want);
    }

    #[test]
    fn a_file_that_includes_itself_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, format!("-x @{}", b.display())).unwrap();
        std::fs::write(&b, format!("-y @{}", a.display())).unwrap();
        let err = expand(os(&[&format!("@{}", a.display())])).unwrap_err();
        assert_eq!(err, format!("recursive expansion of: '{}'", a.display()));
        // The same file twice, one after the other, is not recursion.
        std::fs::write(&b, "-y").unwrap();
        let twice = os(&[&format!("@{}", b.display()), &format!("@{}", b.display())]);
        assert_eq!(expand(twice).unwrap(), os(&["-y", "-y"]));
    }

    #[test]
    fn an_unreadable_file_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let err = expand(os(&[&format!("@{}", d.path().display())])).unwrap_err();
        assert!(
            err.starts_with(&format!("cannot not open file '{}': ", d.path().display())),
            "{err}"
        );
    }
}
