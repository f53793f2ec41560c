//! Reading the files a user hands over: scenario files (`hil run`), scene files (`sim-host
//! --scene`), URDF robot descriptions and study records. One reader for all of them, trusting
//! nothing about the file.
//!
//! [`read_text`] accepts only a regular file (a symlink to one is followed): a FIFO, a device
//! (`/dev/zero`), a socket or a folder is refused from its metadata before it is opened, so a
//! FIFO is never opened and nothing blocks. The file is then opened with `O_NONBLOCK` (which
//! changes nothing for a regular file, and keeps a FIFO swapped in after the check from blocking
//! the open) and checked again through the open descriptor (`fstat`), which closes the race
//! between the two. At most the limit of its [`InputKind`] is read (a file that grows while it
//! is read is refused, not truncated), and the text must be UTF-8. Every refusal is an
//! [`InputError`] naming the file and the reason: "not a regular file (a FIFO)", "larger than
//! the 1 MiB limit for a scenario file (1073741824 bytes)".
//!
//! [`read_urdf`] also refuses XML nested deeper than [`MAX_XML_DEPTH`] elements or holding more
//! than [`MAX_XML_ELEMENTS`], before any XML parser sees the text (urdf-rs's parser recurses once
//! per level and overflows the stack on a deep enough file, and holds every element in memory).
//!
//! [`exact`] is the serde helper for fixed-size vectors (`[f64; N]`) read from a format that
//! would otherwise drop extra elements silently (TOML does): exactly N numbers or an error that
//! the caller reports under the field's path.
//!
//! The bounds on what a URDF's `<inertial>` and lengths may hold, which robot-model checks for
//! every description (the robot plant's, the humanoid's, the controller's), are here too ([`MAX_URDF_MASS_KG`],
//! [`MAX_URDF_INERTIA_KG_M2`], [`MAX_URDF_LENGTH_M`]).

use std::fmt;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Largest scenario file (`hil run`), bytes: 1 MiB (the shipped ones are under 4 KiB).
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;
/// Largest scene file (`sim-host --scene`), bytes: 16 MiB (hil writes them; the largest arm
/// scene a scenario can ask for, 10 000 balls and weights, is about 7 MB).
pub const MAX_SCENE_BYTES: u64 = 16 << 20;
/// Largest study records file (`hil study merge`), bytes: 64 MiB (a cell's line is about 1 KB).
pub const MAX_RECORDS_BYTES: u64 = 64 << 20;
// The URDF limits and bounds are robot-model's (one reader for the plants and the controller's
// model): the largest URDF file (16 MiB), the deepest nesting (64) and most elements (100 000)
// [`read_urdf`] accepts, and the bounds on a URDF's masses, inertias and lengths.
pub use robot_model::{
    MAX_URDF_BYTES, MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG, MAX_XML_DEPTH,
    MAX_XML_ELEMENTS, check_xml,
};

/// What an input file is: names it in errors and sets its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A `hil run` scenario file (TOML), at most [`MAX_SCENARIO_BYTES`].
    Scenario,
    /// A plant scene file (JSON), at most [`MAX_SCENE_BYTES`].
    Scene,
    /// A URDF robot description, at most [`MAX_URDF_BYTES`].
    Urdf,
    /// A study records file (`cells.jsonl`), at most [`MAX_RECORDS_BYTES`].
    Records,
}

impl InputKind {
    /// The largest file of this kind, bytes.
    pub const fn max_bytes(self) -> u64 {
        match self {
            Self::Scenario => MAX_SCENARIO_BYTES,
            Self::Scene => MAX_SCENE_BYTES,
            Self::Urdf => MAX_URDF_BYTES,
            Self::Records => MAX_RECORDS_BYTES,
        }
    }

    /// "scenario file", "scene file", "URDF file", "records file".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Scenario => "scenario file",
            Self::Scene => "scene file",
            Self::Urdf => "URDF file",
            Self::Records => "records file",
        }
    }
}

/// An input file refused: which file and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file, as given.
    pub file: PathBuf,
    /// Why: "not a regular file (a FIFO)", "larger than the 1 MiB limit for a scenario file
    /// (5000000 bytes)", "cannot read: …".
    pub reason: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

impl std::error::Error for InputError {}

use robot_model::{file_type_name, size_name};

/// The metadata of a file accepted so far: a regular file within `kind`'s limit.
fn check_metadata(meta: &std::fs::Metadata, kind: InputKind) -> Result<(), String> {
    let t = meta.file_type();
    if !t.is_file() {
        return Err(format!("not a regular file ({})", file_type_name(t)));
    }
    let max = kind.max_bytes();
    if meta.len() > max {
        return Err(format!(
            "larger than the {} limit for a {} ({} bytes)",
            size_name(max),
            kind.name(),
            meta.len()
        ));
    }
    Ok(())
}

/// The text of the input file `path` of kind `kind`: a regular file (checked before it is
/// opened and again through the open file) of at most `kind.max_bytes()` bytes of UTF-8. Never
/// blocks on a FIFO, never reads more than the limit plus one byte.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputError> {
    let fail = |reason: String| InputError {
        file: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    check_metadata(&meta, kind).map_err(fail)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    // The file opened may not be the one checked (replaced in between): check what is open.
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    check_metadata(&meta, kind).map_err(fail)?;
    let max = kind.max_bytes();
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(fail(format!(
            "larger than the {} limit for a {} (it grew while it was read)",
            size_name(max),
            kind.name()
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The text of the URDF file `path`: a regular file of at most [`MAX_URDF_BYTES`] of UTF-8 (as
/// [`read_text`] with [`InputKind::Urdf`] reads it, with the same messages), elements nested at
/// most [`MAX_XML_DEPTH`] deep, at most [`MAX_XML_ELEMENTS`] of them ([`check_xml`]): robot-model's
/// [`robot_model::read_description`], its error as an [`InputError`].
pub fn read_urdf(path: &Path) -> Result<String, InputError> {
    robot_model::read_description(path).map_err(|e| InputError {
        file: e.file,
        reason: e.reason,
    })
}

/// Serde `deserialize_with` helper for a fixed-size vector of numbers: exactly `N` of them. A
/// sequence with fewer or more is an error ("3 numbers expected, got 4"), which a path-tracking
/// deserializer reports under the field's path. (serde's own `[f64; N]` reads the first N
/// elements and, in TOML, silently drops the rest.)
pub fn exact<'de, D, const N: usize>(deserializer: D) -> Result<[f64; N], D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Exact<const N: usize>;
    impl<'de, const N: usize> serde::de::Visitor<'de> for Exact<N> {
        type Value = [f64; N];

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "an array of exactly {N} numbers")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<[f64; N], A::Error> {
            let mut out = [0.0; N];
            for (k, slot) in out.iter_mut().enumerate() {
                *slot = seq.next_element()?.ok_or_else(|| {
                    serde::de::Error::custom(format!("{N} numbers expected, got {k}"))
                })?;
            }
            let mut extra = 0usize;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                extra += 1;
            }
            if extra > 0 {
                return Err(serde::de::Error::custom(format!(
                    "{N} numbers expected, got {}",
                    N + extra
                )));
            }
            Ok(out)
        }
    }
    deserializer.deserialize_seq(Exact::<N>)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sim-host-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn mkfifo(path: &Path) {
        let _ = std::fs::remove_file(path);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_regular_file_is_read() {
        let p = temp("ok.toml");
        std::fs::write(&p, "name = \"x\"\n").unwrap();
        assert_eq!(
            read_text(&p, InputKind::Scenario).unwrap(),
            "name = \"x\"\n"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let p = temp("pipe.toml");
        mkfifo(&p);
        let e = read_text(&p, InputKind::Scenario).unwrap_err();
        assert_eq!(e.reason, "not a regular file (a FIFO)");
        assert_eq!(e.file, p);
        assert!(e.to_string().starts_with(p.to_str().unwrap()), "{e}");
    }

    #[test]
    fn devices_folders_and_missing_files_are_refused() {
        let e = read_text(Path::new("/dev/zero"), InputKind::Urdf).unwrap_err();
        assert_eq!(e.reason, "not a regular file (a character device)");
        let e = read_text(&std::env::temp_dir(), InputKind::Scene).unwrap_err();
        assert_eq!(e.reason, "not a regular file (a folder)");
        let e = read_text(Path::new("/nonexistent/x.toml"), InputKind::Scenario).unwrap_err();
        assert!(e.reason.starts_with("cannot read: "), "{e}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_read() {
        let p = temp("big.toml");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(MAX_SCENARIO_BYTES + 1).unwrap();
        let e = read_text(&p, InputKind::Scenario).unwrap_err();
        assert_eq!(
            e.reason,
            format!(
                "larger than the 1 MiB limit for a scenario file ({} bytes)",
                MAX_SCENARIO_BYTES + 1
            )
        );
        f.set_len(MAX_SCENARIO_BYTES).unwrap();
        assert_eq!(
            read_text(&p, InputKind::Scenario).unwrap().len() as u64,
            MAX_SCENARIO_BYTES
        );
        // The same size is within a URDF's limit.
        f.set_len(MAX_SCENARIO_BYTES + 1).unwrap();
        assert!(read_text(&p, InputKind::Urdf).is_ok());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let p = temp("bin.urdf");
        std::fs::write(&p, b"<robot>\xff</robot>").unwrap();
        let e = read_text(&p, InputKind::Urdf).unwrap_err();
        assert_eq!(e.reason, "not UTF-8 text (invalid byte at offset 7)");
    }

    #[test]
    fn xml_depth_and_size_are_capped_by_a_scan_that_parses_nothing() {
        let nested = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        assert_eq!(check_xml(&nested(64), 64, 1000), Ok(()));
        let e = check_xml(&nested(65), 64, 1000).unwrap_err();
        assert_eq!(
            e,
            "elements nested deeper than 64 levels (line 1): at most 64"
        );
        // 100 000 levels: refused, no stack overflow.
        assert!(check_xml(&nested(100_000), 64, MAX_XML_ELEMENTS).is_err());
        // Siblings, self-closing tags, end tags, comments, CDATA, declarations and `>` in values
        // do not nest.
        let flat = format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ELEMENT r ANY>]>\n<r>{}</r>",
            "<l a=\"x>y\" b='/>'/><!-- <c><c><c> --><![CDATA[<d><d>]]><j></j>".repeat(1000)
        );
        assert_eq!(check_xml(&flat, 2, 2001), Ok(()));
        // Elements are counted (self-closing ones too), not comments or CDATA.
        let e = check_xml(&flat, 2, 2000).unwrap_err();
        assert!(e.starts_with("more than 2000 elements (line 3)"), "{e}");
        let e = check_xml("<r>\n<l>\n<m/><m>", 2, 100).unwrap_err();
        assert!(e.contains("(line 3)"), "{e}");
        // The shipped models pass.
        for m in ["arm3.urdf", "arm3_fingertip.urdf", "humanoid15.urdf"] {
            let p = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../models")
                .join(m);
            read_urdf(&p).unwrap();
        }
    }

    #[test]
    fn read_urdf_names_the_file_and_the_limit() {
        let p = temp("deep.urdf");
        std::fs::write(
            &p,
            format!(
                "<robot name=\"r\">{}{}</robot>",
                "<link>".repeat(100_000),
                "</link>".repeat(100_000)
            ),
        )
        .unwrap();
        let e = read_urdf(&p).unwrap_err();
        assert_eq!(e.file, p);
        assert!(e.reason.contains("deeper than 64 levels"), "{e}");
    }

    #[test]
    fn exact_vectors_refuse_extra_and_missing_elements() {
        #[derive(Debug, serde::Deserialize)]
        struct V {
            #[serde(deserialize_with = "exact")]
            v: [f64; 3],
        }
        let ok: V = serde_json::from_str(r#"{"v": [1, 2, 3]}"#).unwrap();
        assert_eq!(ok.v, [1.0, 2.0, 3.0]);
        for (text, got) in [
            (r#"{"v": [1, 2, 3, 4]}"#, "got 4"),
            (r#"{"v": [1, 2]}"#, "got 2"),
        ] {
            let de = &mut serde_json::Deserializer::from_str(text);
            let e = serde_path_to_error::deserialize::<_, V>(de).unwrap_err();
            assert_eq!(e.path().to_string(), "v");
            assert!(e.inner().to_string().contains(got), "{e}");
        }
    }
}
