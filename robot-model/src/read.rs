//! Reading a URDF file without trusting it: a regular file only, bounded in size, nesting and
//! element count before any XML parser sees it. `sim_host::input::read_urdf` and
//! `sim_host::input::check_xml` are these ([`read_description`], [`check_xml`]), with the same
//! limits and messages as sim-host's reader of its other input files.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::LoadError;

/// Largest URDF file, bytes: 16 MiB (meshes are separate files; the largest robot description
/// of example-robot-data tried here, Talos, is about 110 KB).
pub const MAX_URDF_BYTES: u64 = 16 << 20;
/// Deepest element nesting accepted in a URDF (the root `<robot>` is level 1; URDF itself needs
/// about 5).
pub const MAX_XML_DEPTH: usize = 64;
/// Most elements accepted in a URDF. The parser holds a tree of every element: this bounds its
/// memory and time.
pub const MAX_XML_ELEMENTS: usize = 100_000;

/// `bytes` as the limits are written: "1 MiB", "16 MiB", or bytes (shared with `sim-host`'s
/// readers of its other input files).
pub fn size_name(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a file that is not a regular file is, for the refusal (shared with `sim-host`).
pub fn file_type_name(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// The metadata of a file accepted so far: a regular file within the limit.
fn check_metadata(meta: &std::fs::Metadata) -> Result<(), String> {
    let t = meta.file_type();
    if !t.is_file() {
        return Err(format!("not a regular file ({})", file_type_name(t)));
    }
    if meta.len() > MAX_URDF_BYTES {
        return Err(format!(
            "larger than the {} limit for a URDF file ({} bytes)",
            size_name(MAX_URDF_BYTES),
            meta.len()
        ));
    }
    Ok(())
}

/// The text of the URDF file `path`, refused unless it is safe to hand to an XML parser.
///
/// - A regular file only (a symlink to one is followed): a FIFO, a device (`/dev/zero`), a
///   socket or a folder is refused from its metadata before it is opened, so a FIFO is never
///   opened and nothing blocks. The file is then opened with `O_NONBLOCK` (which changes nothing
///   for a regular file, and keeps a FIFO swapped in after the check from blocking the open) and
///   checked again through the open descriptor, which closes the race between the two.
/// - At most [`MAX_URDF_BYTES`] are read (a file that grows while it is read is refused, not
///   truncated), and the text must be UTF-8.
/// - Elements nested at most [`MAX_XML_DEPTH`] deep, at most [`MAX_XML_ELEMENTS`] of them
///   ([`check_xml`]).
///
/// The error names the file (its [`LoadError::element`] is empty) and the reason: "not a regular
/// file (a FIFO)", "larger than the 16 MiB limit for a URDF file (20000000 bytes)", "cannot
/// read: …", "not UTF-8 text (invalid byte at offset 7)", "elements nested deeper than 64 levels
/// (line 3): at most 64".
pub fn read_description(path: &Path) -> Result<String, LoadError> {
    let fail = |reason: String| LoadError {
        file: path.to_path_buf(),
        element: String::new(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    check_metadata(&meta).map_err(fail)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    // The file opened may not be the one checked (replaced in between): check what is open.
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    check_metadata(&meta).map_err(fail)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_URDF_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_URDF_BYTES {
        return Err(fail(format!(
            "larger than the {} limit for a URDF file (it grew while it was read)",
            size_name(MAX_URDF_BYTES)
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    check_xml(&text, MAX_XML_DEPTH, MAX_XML_ELEMENTS).map_err(fail)?;
    Ok(text)
}

/// Refuses XML whose elements nest deeper than `max_depth` levels or number more than
/// `max_elements`, with the line where a limit is passed. A linear scan that parses nothing (so
/// it cannot itself recurse): start tags open a level (unless they close themselves, `/>`), end
/// tags close one; comments, CDATA, processing instructions and declarations (a DOCTYPE's
/// internal subset too) are skipped, and a `>` inside a quoted attribute value ends nothing.
/// Malformed markup is left to the parser to report. (`sim_host::input::check_xml` is this one.)
pub fn check_xml(text: &str, max_depth: usize, max_elements: usize) -> Result<(), String> {
    let b = text.as_bytes();
    let find = |from: usize, needle: &[u8]| -> Option<usize> {
        b.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| from + p)
    };
    let line = |at: usize| 1 + b[..at].iter().filter(|&&c| c == b'\n').count();
    let mut depth = 0usize;
    let mut elements = 0usize;
    let mut i = 0usize;
    while let Some(p) = b.get(i..).and_then(|r| r.iter().position(|&c| c == b'<')) {
        let at = i + p;
        let rest = &b[at..];
        let next = if rest.starts_with(b"<!--") {
            find(at + 4, b"-->").map(|e| e + 3)
        } else if rest.starts_with(b"<![CDATA[") {
            find(at + 9, b"]]>").map(|e| e + 3)
        } else if rest.starts_with(b"<?") {
            find(at + 2, b"?>").map(|e| e + 2)
        } else if rest.starts_with(b"<!") {
            // A declaration: to its `>`, past any internal subset in brackets and quotes.
            let mut brackets = 0usize;
            let mut quote = None;
            let mut end = None;
            for (k, &c) in rest.iter().enumerate().skip(2) {
                match (quote, c) {
                    (Some(q), c) if c == q => quote = None,
                    (Some(_), _) => {}
                    (None, b'"' | b'\'') => quote = Some(c),
                    (None, b'[') => brackets += 1,
                    (None, b']') => brackets = brackets.saturating_sub(1),
                    (None, b'>') if brackets == 0 => {
                        end = Some(at + k + 1);
                        break;
                    }
                    _ => {}
                }
            }
            end
        } else {
            // A start or end tag: to its `>`, outside quoted values.
            let mut quote = None;
            let mut end = None;
            for (k, &c) in rest.iter().enumerate().skip(1) {
                match (quote, c) {
                    (Some(q), c) if c == q => quote = None,
                    (Some(_), _) => {}
                    (None, b'"' | b'\'') => quote = Some(c),
                    (None, b'>') => {
                        end = Some(k);
                        break;
                    }
                    _ => {}
                }
            }
            let Some(k) = end else {
                return Ok(()); // unterminated: the parser's to report
            };
            if rest.get(1) == Some(&b'/') {
                depth = depth.saturating_sub(1);
            } else {
                elements += 1;
                if elements > max_elements {
                    return Err(format!(
                        "more than {max_elements} elements (line {}): at most {max_elements}",
                        line(at)
                    ));
                }
                if rest[k - 1] != b'/' {
                    depth += 1;
                    if depth > max_depth {
                        return Err(format!(
                            "elements nested deeper than {max_depth} levels (line {}): at most {max_depth}",
                            line(at)
                        ));
                    }
                }
            }
            Some(at + k + 1)
        };
        match next {
            Some(n) => i = n,
            None => return Ok(()), // unterminated: the parser's to report
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("robot-model-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn size_names() {
        assert_eq!(size_name(16 << 20), "16 MiB");
        assert_eq!(size_name(4 << 10), "4 KiB");
        assert_eq!(size_name(1000), "1000 bytes");
    }

    #[test]
    fn a_regular_file_is_read_and_not_utf8_refused() {
        let p = temp("ok.urdf");
        std::fs::write(&p, "<robot name=\"r\"><link name=\"a\"/></robot>").unwrap();
        assert!(read_description(&p).unwrap().starts_with("<robot"));
        std::fs::write(&p, b"<robot>\xff</robot>").unwrap();
        let e = read_description(&p).unwrap_err();
        assert_eq!(e.reason, "not UTF-8 text (invalid byte at offset 7)");
        assert_eq!(e.element, "");
        assert_eq!(e.file, p);
    }

    #[test]
    fn xml_depth_and_size_are_capped_by_a_scan_that_parses_nothing() {
        let nested = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        assert_eq!(check_xml(&nested(64), 64, 1000), Ok(()));
        assert_eq!(
            check_xml(&nested(65), 64, 1000).unwrap_err(),
            "elements nested deeper than 64 levels (line 1): at most 64"
        );
        assert!(check_xml(&nested(100_000), 64, MAX_XML_ELEMENTS).is_err());
        let flat = format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ELEMENT r ANY>]>\n<r>{}</r>",
            "<l a=\"x>y\" b='/>'/><!-- <c><c><c> --><![CDATA[<d><d>]]><j></j>".repeat(1000)
        );
        assert_eq!(check_xml(&flat, 2, 2001), Ok(()));
        let e = check_xml(&flat, 2, 2000).unwrap_err();
        assert!(e.starts_with("more than 2000 elements (line 3)"), "{e}");
    }
}
