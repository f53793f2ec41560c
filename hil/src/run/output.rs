//! A run owns its output folder: one run at a time, and the folder is replaced as a whole.
//!
//! [`Claim::take`] is the pre-flight, done before any plant starts; [`Claim::publish`] ends the
//! run (complete or not: a run cut by a signal or a lost plant publishes its partial report the
//! same way). Everything that can be found out at the start is found out there, so a run never
//! fails at its end for a reason it could have seen before it began.
//!
//! - **Lock.** An exclusive, non-blocking `flock(2)` on `<parent>/.<name>.lock`, beside the
//!   folder, so that it outlives the folder's replacement. The holder writes its pid, command
//!   line and start time into the file; a second run into the same folder is refused (exit 2)
//!   naming them. The kernel releases the lock when the holder's process ends, however it ends
//!   (SIGKILL included), so a killed run never blocks the next one; the descriptor is
//!   close-on-exec, so no plant process inherits it. The lock file is left in place at the end,
//!   on purpose: a second run that opened it just before an unlink would lock the unlinked file
//!   while a third creates and locks a new one (two holders). A leftover lock file holds nothing.
//!   When the parent cannot be written (EACCES, EPERM, EROFS: typically a mount point the user
//!   owns under a folder they do not), the lock is `<out>/.hil-run.lock` and the run stages
//!   inside. Whichever it uses, a run also locks the other lock file when it exists, so two
//!   runs that chose differently (two users) still exclude each other.
//! - **Staging beside** (the usual case): the run writes into `<parent>/.<name>.partial-<pid>`,
//!   on the same filesystem as the folder. At the end the staged folder keeps only the files the
//!   run lists, then replaces the folder: `renameat2(RENAME_EXCHANGE)` where the filesystem has
//!   it (the folder is never missing), else the old folder is renamed to
//!   `<parent>/.<name>.old-<pid>` and the staged one into place. The old one is then removed.
//!   Failures: moving the old folder aside fails, or the exchange fails: nothing changed. The
//!   staged folder cannot be moved in: the old one is put back (if even that fails, the error
//!   names where it is). Either way the new outputs stay in the staging folder, named in the
//!   error (exit 1). The old folder cannot be removed: a warning; the run succeeded.
//! - **Staging inside**: when the folder cannot be renamed into place — it is a mount point
//!   (its `st_dev` differs from its parent's, or `/proc/self/mountinfo` lists it: bind mounts)
//!   or its parent is not writable — the run writes into `<out>/.partial-<pid>`. At the end every
//!   other entry of the folder (but `.hil-run.lock`) is moved into `<out>/.old-<pid>`, the staged
//!   entries are moved up (a copy, then a rename, where a rename cannot cross filesystems), and
//!   `.old-<pid>` is removed. A failure moves back what was moved (new entries into staging, old
//!   ones into the folder) and names what could not be; the new outputs stay in the staging
//!   folder, named in the error (exit 1).
//! - **Leftovers** of a killed run or a failed publish (`.partial-<pid>`, `.old-<pid>`,
//!   `.copy-<pid>`) are removed by the next run that holds the lock, which is why they can be: a run
//!   killed between the two renames of a swap left the folder missing and `.<name>.old-<pid>`
//!   beside it, and the next run puts that folder back first.
//! - **Refused folders** (exit 2): one that exists and is not a folder; the root, one holding
//!   the current folder or the home folder, a git checkout (a run replaces everything in it);
//!   one that cannot be created or locked; one held by another run.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The file stem of the built-in scenario (`scenarios/ball_blocking.toml`), for the default
/// output folder of a run without a scenario file.
pub const BUILT_IN_STEM: &str = "ball_blocking";

/// The lock file's name inside the folder, when the folder's parent cannot be written.
const INSIDE_LOCK: &str = ".hil-run.lock";

/// The default output folder of a run of `scenario_file`: `out/<file stem>`
/// (`scenarios/ball_blocking.toml` → `out/ball_blocking`; a copy `mine.toml` → `out/mine`,
/// whatever its `name`); `out/ball_blocking` for the built-in scenario (`None`).
pub fn default_out_dir(scenario_file: Option<&Path>) -> PathBuf {
    let stem = scenario_file
        .and_then(Path::file_stem)
        .unwrap_or(OsStr::new(BUILT_IN_STEM));
    Path::new("out").join(stem)
}

/// Where a run writes before it publishes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// `<parent>/.<name>.partial-<pid>`, swapped with the folder at the end.
    Beside,
    /// `<out>/.partial-<pid>`, its entries moved up at the end.
    Inside,
}

/// A run's hold on its output folder: the lock, and the staging folder the run writes into.
/// Dropped without [`Claim::publish`], it removes the staging folder and releases the lock.
#[derive(Debug)]
pub struct Claim {
    /// The folder as the user named it (for messages).
    shown: PathBuf,
    /// The folder: its canonical parent joined with its name.
    out: PathBuf,
    staging: PathBuf,
    placement: Staging,
    /// Hold the flocks (the lock file, and the other one if it exists); closed (released) on
    /// drop.
    _lock: (File, Option<File>),
    /// Leave the staging folder on drop (it holds outputs a failed publish could not place).
    keep_staging: bool,
    /// Try `RENAME_EXCHANGE` first (off in tests of the two-rename swap).
    exchange: bool,
}

/// How [`Claim::take_with`] is told to behave differently, in tests.
#[derive(Debug, Clone, Copy)]
struct Options {
    force_inside: bool,
    /// As if the parent could not be written: the lock file inside.
    inside_lock: bool,
    exchange: bool,
}

impl Claim {
    /// Lock `out` for this run and make its staging folder; the pre-flight of the module docs.
    /// The error names the folder and the reason (for exit 2), and the holder when another run
    /// holds the folder.
    pub fn take(out: &Path) -> Result<Self, String> {
        let command: Vec<String> = std::env::args()
            .map(|a| {
                if a.is_empty() || a.contains(char::is_whitespace) {
                    format!("{a:?}")
                } else {
                    a
                }
            })
            .collect();
        Self::take_with(
            out,
            &command.join(" "),
            Options {
                force_inside: false,
                inside_lock: false,
                exchange: true,
            },
        )
    }

    fn take_with(shown: &Path, command: &str, options: Options) -> Result<Self, String> {
        let at = |why: String| format!("output folder {}: {why}", shown.display());
        let out = resolve(shown).map_err(at)?;
        refuse_precious(&out).map_err(at)?;
        let (parent, name) = match (out.parent(), out.file_name()) {
            (Some(p), Some(n)) => (p.to_path_buf(), n.to_string_lossy().into_owned()),
            _ => return Err(at("names no folder".into())),
        };
        let exists = out.is_dir();
        let beside_lock = parent.join(format!(".{name}.lock"));
        let inside_lock = out.join(INSIDE_LOCK);
        let opened = if options.inside_lock {
            Err(io::Error::from_raw_os_error(libc::EACCES))
        } else {
            open_lock(&beside_lock)
        };
        let (lock_path, lock, other_path, lock_inside) = match opened {
            Ok(f) => (beside_lock, f, inside_lock, false),
            Err(e) if exists && parent_unwritable(&e) => {
                let f = open_lock(&inside_lock).map_err(|e| {
                    at(format!(
                        "cannot create the lock file {}: {e}",
                        inside_lock.display()
                    ))
                })?;
                (inside_lock, f, beside_lock, true)
            }
            Err(e) => {
                return Err(at(format!(
                    "cannot create the lock file {}: {e}",
                    beside_lock.display()
                )));
            }
        };
        let held = |path: &Path| {
            at(format!(
                "in use by another run: {} (lock file {})",
                describe_holder(path),
                path.display()
            ))
        };
        match flock_exclusive(&lock) {
            Ok(true) => {}
            Ok(false) => return Err(held(&lock_path)),
            Err(e) => {
                return Err(at(format!("cannot lock {}: {e}", lock_path.display())));
            }
        }
        // The other lock file, if a run of another user made one: held too (read-only suffices
        // for flock), so runs that could not agree on a lock file still exclude each other.
        let other = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&other_path)
            .or_else(|_| File::open(&other_path));
        let other_lock = match other.map(|f| (flock_exclusive(&f), f)) {
            Ok((Ok(false), _)) => return Err(held(&other_path)),
            Ok((Ok(true), f)) => Some(f),
            _ => None,
        };
        write_holder(&lock, command).map_err(|e| {
            at(format!(
                "cannot write the lock file {}: {e}",
                lock_path.display()
            ))
        })?;
        if let Some(f) = &other_lock {
            // Where it could be opened for writing: a run refused on it names this one.
            let _ = write_holder(f, command);
        }

        let placement = if options.force_inside || lock_inside || (exists && is_mount_point(&out)) {
            Staging::Inside
        } else {
            Staging::Beside
        };
        let pid = std::process::id();
        let staging = match placement {
            Staging::Beside => {
                clear_leftovers(&parent, &format!(".{name}."), Some(&out));
                parent.join(format!(".{name}.partial-{pid}"))
            }
            Staging::Inside => {
                clear_leftovers(&out, ".", None);
                out.join(format!(".partial-{pid}"))
            }
        };
        let _ = fs::remove_dir_all(&staging);
        fs::create_dir(&staging).map_err(|e| {
            at(format!(
                "cannot create the staging folder {}: {e}",
                staging.display()
            ))
        })?;
        Ok(Self {
            shown: shown.to_path_buf(),
            out,
            staging,
            placement,
            _lock: (lock, other_lock),
            keep_staging: false,
            exchange: options.exchange,
        })
    }

    /// The folder the run writes its outputs into.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// Replace the output folder with the staged one holding exactly `files` (anything else the
    /// run left in staging is dropped; a missing one is an error), then release the lock.
    /// Returns warnings (an old folder that could not be removed); the error says what happened
    /// to the old and the new outputs.
    pub fn publish(mut self, files: &[&str]) -> Result<Vec<String>, String> {
        let result = keep_only(&self.staging, files).and_then(|()| match self.placement {
            Staging::Beside => {
                let name = self.out.file_name().unwrap_or_default().to_string_lossy();
                let old = self
                    .out
                    .with_file_name(format!(".{name}.old-{}", std::process::id()));
                replace_beside(&self.staging, &self.out, &old, self.exchange)
            }
            Staging::Inside => {
                replace_inside(&self.staging, &self.out, &[OsString::from(INSIDE_LOCK)])
            }
        });
        result.map_err(|e| {
            let kept = fs::read_dir(&self.staging).is_ok_and(|mut d| d.next().is_some());
            self.keep_staging = kept;
            let kept = if kept {
                format!(
                    "; this run's outputs are kept in {}",
                    self.staging.display()
                )
            } else {
                String::new()
            };
            format!("output folder {}: {e}{kept}", self.shown.display())
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.keep_staging {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

/// The folder's path with its parent canonical (created when missing) and, when it exists, the
/// folder itself canonical (a symbolic link to a folder is followed).
fn resolve(shown: &Path) -> Result<PathBuf, String> {
    let abs = std::path::absolute(shown).map_err(|e| e.to_string())?;
    match fs::symlink_metadata(&abs) {
        Ok(_) => {
            let meta = fs::metadata(&abs).map_err(|e| e.to_string())?;
            if !meta.is_dir() {
                return Err("exists and is not a folder".into());
            }
            fs::canonicalize(&abs).map_err(|e| e.to_string())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
                return Err("names no folder".into());
            };
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            Ok(fs::canonicalize(parent)
                .map_err(|e| format!("{}: {e}", parent.display()))?
                .join(name))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Folders a run must not replace as a whole.
fn refuse_precious(out: &Path) -> Result<(), String> {
    let holds = |p: Option<PathBuf>| {
        p.and_then(|p| fs::canonicalize(p).ok())
            .is_some_and(|p| p.starts_with(out))
    };
    let why = if out.parent().is_none() {
        "it is the root folder"
    } else if holds(std::env::current_dir().ok()) {
        "it holds the current folder"
    } else if holds(std::env::var_os("HOME").map(PathBuf::from)) {
        "it holds the home folder"
    } else if out.join(".git").exists() {
        "it is a git checkout"
    } else if fs::read_dir(out).is_ok_and(|d| {
        // A killed run's leftovers inside a mount point do not count.
        d.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !(name.starts_with(".partial-") || name.starts_with(".old-") || name == ".hil-run.lock")
        })
    }) && !out.join("report.json").exists()
    {
        // `--out out` (every scenario's outputs) or a folder of the user's own.
        "it is not empty and holds no report.json (not a run's output folder)"
    } else {
        return Ok(());
    };
    Err(format!(
        "{why}; a run replaces its output folder as a whole, so it must be a folder of its own"
    ))
}

fn open_lock(path: &Path) -> io::Result<File> {
    // std opens with O_CLOEXEC: the plant processes do not inherit the lock.
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(path)
}

fn parent_unwritable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES | libc::EPERM | libc::EROFS)
    )
}

/// `flock(LOCK_EX | LOCK_NB)`: Ok(false) when another open file description holds it.
fn flock_exclusive(file: &File) -> io::Result<bool> {
    // SAFETY: flock(2) on a descriptor `file` owns and keeps open for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The holder's record: `pid N`, `command ...`, `started_unix_s T`, a line each.
fn write_holder(mut file: &File, command: &str) -> io::Result<()> {
    let record = format!(
        "pid {}\ncommand {}\nstarted_unix_s {}\n",
        std::process::id(),
        command.replace('\n', " "),
        unix_now_s()
    );
    file.set_len(0)?;
    io::Seek::seek(&mut file, io::SeekFrom::Start(0))?;
    file.write_all(record.as_bytes())
}

/// "pid N (command), started S s ago" from a holder's record, once it is whole.
fn parse_holder(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .map(str::to_owned)
    };
    let pid = field("pid")?;
    let started = field("started_unix_s")?.parse::<u64>().ok()?;
    let mut s = format!("pid {pid}");
    if let Some(c) = field("command") {
        s.push_str(&format!(" ({c})"));
    }
    s.push_str(&format!(
        ", started {} s ago",
        unix_now_s().saturating_sub(started)
    ));
    Some(s)
}

/// The holder of the lock at `path`; its record may be a moment behind its lock.
fn describe_holder(path: &Path) -> String {
    for _ in 0..25 {
        if let Some(h) = fs::read_to_string(path)
            .ok()
            .as_deref()
            .and_then(parse_holder)
        {
            return h;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    "a process that has not written its record".into()
}

/// Whether `path` (canonical) is a mount point: another device than its parent's, or listed
/// in /proc/self/mountinfo (a bind mount of the same filesystem).
fn is_mount_point(path: &Path) -> bool {
    let dev = |p: &Path| fs::metadata(p).map(|m| m.dev()).ok();
    if let Some(parent) = path.parent()
        && let (Some(d), Some(p)) = (dev(path), dev(parent))
        && d != p
    {
        return true;
    }
    let Ok(info) = fs::read("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.as_os_str().as_bytes();
    info.split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').nth(4))
        .any(|m| unescape_mountinfo(m) == want)
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let oct = s
            .get(i + 1..i + 4)
            .filter(|d| s[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(d) = oct {
            out.push(
                d.iter()
                    .fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')),
            );
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// Whether `name` is `<prefix><what>-<digits>` for one of the leftover kinds; the pid when so.
fn leftover(name: &OsStr, prefix: &str, what: &str) -> Option<u32> {
    name.to_str()?
        .strip_prefix(prefix)?
        .strip_prefix(what)?
        .strip_prefix('-')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

/// Remove what killed runs left in `dir` (`<prefix>partial-N`, `<prefix>old-N`, `.*.copy-N`);
/// with `restore`, an old folder whose replacement never arrived (`restore` is missing) is put
/// back first. Only called with the lock held: every such entry belongs to a run that is gone.
fn clear_leftovers(dir: &Path, prefix: &str, restore: Option<&Path>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut found: Vec<(PathBuf, bool)> = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let old = leftover(&name, prefix, "old").is_some();
        let copy = name.to_str().is_some_and(|n| {
            n.starts_with('.')
                && n.rsplit_once(".copy-")
                    .is_some_and(|(_, d)| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                && prefix == "."
        });
        if old || copy || leftover(&name, prefix, "partial").is_some() {
            found.push((e.path(), old));
        }
    }
    for (path, old) in found {
        if old
            && let Some(out) = restore
            && fs::symlink_metadata(out).is_err()
            && fs::rename(&path, out).is_ok()
        {
            eprintln!(
                "hil: put {} back as {} (a run was killed while replacing it)",
                path.display(),
                out.display()
            );
            continue;
        }
        let _ = remove_any(&path);
    }
}

fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Drop every entry of `staging` not in `files`; each of `files` must be there.
fn keep_only(staging: &Path, files: &[&str]) -> Result<(), String> {
    let entries =
        fs::read_dir(staging).map_err(|e| format!("cannot read {}: {e}", staging.display()))?;
    for e in entries.flatten() {
        if !files.iter().any(|f| OsStr::new(f) == e.file_name()) {
            let _ = remove_any(&e.path());
        }
    }
    match files
        .iter()
        .find(|f| fs::symlink_metadata(staging.join(f)).is_err())
    {
        Some(f) => Err(format!("the run did not write {f}")),
        None => Ok(()),
    }
}

/// `renameat2(a, b, RENAME_EXCHANGE)`: swap two paths atomically.
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both paths are NUL-terminated strings that outlive the call; the syscall reads them
    // and nothing else of this process.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn remove_old(old: &Path) -> Vec<String> {
    match fs::remove_dir_all(old) {
        Ok(()) => Vec::new(),
        Err(e) => vec![format!(
            "cannot remove the previous outputs {}: {e} (the next run into this folder removes them)",
            old.display()
        )],
    }
}

/// Staging beside: swap the staged folder into `out` (see the module docs).
fn replace_beside(
    staging: &Path,
    out: &Path,
    old: &Path,
    try_exchange: bool,
) -> Result<Vec<String>, String> {
    let into_place = |e: io::Error| format!("cannot move {} into place: {e}", staging.display());
    if fs::symlink_metadata(out).is_err() {
        fs::rename(staging, out).map_err(into_place)?;
        return Ok(Vec::new());
    }
    if try_exchange {
        match exchange(staging, out) {
            // The staging path now holds the previous outputs.
            Ok(()) => return Ok(remove_old(staging)),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
                ) => {}
            Err(e) => {
                return Err(format!(
                    "cannot swap {} into place: {e} (the previous outputs are untouched)",
                    staging.display()
                ));
            }
        }
    }
    fs::rename(out, old).map_err(|e| {
        format!(
            "cannot move the previous outputs aside to {}: {e} (they are untouched)",
            old.display()
        )
    })?;
    if let Err(e) = fs::rename(staging, out) {
        return Err(match fs::rename(old, out) {
            Ok(()) => format!("{}; the previous outputs are back in place", into_place(e)),
            Err(back) => format!(
                "{}; the previous outputs are in {} (cannot put them back: {back})",
                into_place(e),
                old.display()
            ),
        });
    }
    Ok(remove_old(old))
}

fn entries(dir: &Path, except: &[OsString]) -> Result<Vec<OsString>, String> {
    let mut names: Vec<OsString> = fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|n| !except.contains(n))
        .collect();
    names.sort();
    Ok(names)
}

/// Move `names` from `from` back to `to`; "" when all went, else what did not.
fn move_back(names: &[OsString], from: &Path, to: &Path) -> String {
    let stuck: Vec<String> = names
        .iter()
        .filter(|n| move_entry(&from.join(n), &to.join(n)).is_err())
        .map(|n| from.join(n).display().to_string())
        .collect();
    if stuck.is_empty() {
        String::new()
    } else {
        format!("; could not move back: {}", stuck.join(", "))
    }
}

/// Staging inside: move the folder's other entries aside, the staged ones up (see the module
/// docs). `keep` names entries of `out` that stay (the lock file when it is inside).
fn replace_inside(staging: &Path, out: &Path, keep: &[OsString]) -> Result<Vec<String>, String> {
    let old = out.join(format!(".old-{}", std::process::id()));
    fs::create_dir(&old).map_err(|e| format!("cannot create {}: {e}", old.display()))?;
    let mut except: Vec<OsString> = keep.to_vec();
    except.extend(
        [staging, &old]
            .iter()
            .filter_map(|p| p.file_name().map(OsStr::to_os_string)),
    );
    let previous = entries(out, &except)?;
    let mut aside = Vec::new();
    for name in previous {
        if let Err(e) = fs::rename(out.join(&name), old.join(&name)) {
            let undo = move_back(&aside, &old, out);
            let _ = fs::remove_dir(&old);
            return Err(format!(
                "cannot move {} aside: {e}{undo}",
                out.join(&name).display()
            ));
        }
        aside.push(name);
    }
    let mut placed = Vec::new();
    for name in entries(staging, &[])? {
        if let Err(e) = move_entry(&staging.join(&name), &out.join(&name)) {
            let undo_new = move_back(&placed, out, staging);
            let undo_old = move_back(&aside, &old, out);
            let _ = fs::remove_dir(&old);
            return Err(format!(
                "cannot move {} into place: {e}{undo_new}{undo_old}",
                staging.join(&name).display()
            ));
        }
        placed.push(name);
    }
    let _ = fs::remove_dir(staging);
    Ok(remove_old(&old))
}

/// Rename `from` to `to`; across filesystems (EXDEV), copy it beside `to` and rename the copy.
fn move_entry(from: &Path, to: &Path) -> io::Result<()> {
    match fs::rename(from, to) {
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => copy_then_rename(from, to),
        r => r,
    }
}

/// Copy `from` to `.<name>.copy-<pid>` beside `to`, rename that to `to`, remove `from`.
fn copy_then_rename(from: &Path, to: &Path) -> io::Result<()> {
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    let tmp = to.with_file_name(format!(".{name}.copy-{}", std::process::id()));
    let _ = remove_any(&tmp);
    if let Err(e) = copy_tree(from, &tmp).and_then(|()| fs::rename(&tmp, to)) {
        let _ = remove_any(&tmp);
        return Err(e);
    }
    remove_any(from)
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    if meta.is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from)?, to)
    } else if meta.is_dir() {
        fs::create_dir(to)?;
        for e in fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        fs::set_permissions(to, meta.permissions())
    } else {
        fs::copy(from, to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Options = Options {
        force_inside: false,
        inside_lock: false,
        exchange: true,
    };

    /// A fresh folder for one test, holding the output folder `out` (not created).
    fn place(test: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("hil-output-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out");
        (dir, out)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    fn run(out: &Path, options: Options, files: &[(&str, &str)]) -> Vec<String> {
        let claim = Claim::take_with(out, "hil run test", options).unwrap();
        for (f, text) in files {
            fs::write(claim.staging().join(f), text).unwrap();
        }
        fs::write(claim.staging().join("scratch.json"), "x").unwrap();
        let list: Vec<&str> = files.iter().map(|(f, _)| *f).collect();
        claim.publish(&list).unwrap()
    }

    #[test]
    fn default_folder_is_the_file_stem() {
        assert_eq!(
            default_out_dir(Some(Path::new("scenarios/ball_blocking.toml"))),
            Path::new("out/ball_blocking")
        );
        assert_eq!(
            default_out_dir(Some(Path::new("/x/mine.toml"))),
            Path::new("out/mine")
        );
        assert_eq!(default_out_dir(None), Path::new("out/ball_blocking"));
    }

    #[test]
    fn a_new_folder_gets_exactly_the_listed_files_and_no_leftovers() {
        let (dir, out) = place("new");
        let warnings = run(&out, TEST, &[("report.json", "1"), ("a.svg", "2")]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(names(&out), ["a.svg", "report.json"]);
        // Beside it only the lock file remains.
        assert_eq!(names(&dir), [".out.lock", "out"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_folder_is_replaced_whole_with_and_without_rename_exchange() {
        for exchange in [true, false] {
            let (dir, out) = place(&format!("replace-{exchange}"));
            fs::create_dir_all(out.join("sub")).unwrap();
            fs::write(out.join("stale.txt"), "old").unwrap();
            fs::write(out.join("report.json"), "old").unwrap();
            let options = Options {
                force_inside: false,
                inside_lock: false,
                exchange,
            };
            let claim = Claim::take_with(&out, "t", options).unwrap();
            assert_eq!(claim.placement, Staging::Beside);
            // The previous outputs stay until the end.
            assert_eq!(names(&out), ["report.json", "stale.txt", "sub"]);
            fs::write(claim.staging().join("report.json"), "new").unwrap();
            assert!(claim.publish(&["report.json"]).unwrap().is_empty());
            assert_eq!(names(&out), ["report.json"]);
            assert_eq!(fs::read_to_string(out.join("report.json")).unwrap(), "new");
            assert_eq!(names(&dir), [".out.lock", "out"]);
            let _ = fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn a_second_claim_is_refused_naming_the_holder_until_the_first_ends() {
        let (dir, out) = place("held");
        let first = Claim::take_with(&out, "hil run first.toml", TEST).unwrap();
        let err = Claim::take_with(&out, "hil run second.toml", TEST).unwrap_err();
        assert!(err.contains("in use by another run"), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains("hil run first.toml"), "{err}");
        assert!(err.contains(".out.lock"), "{err}");
        // The refused claim touched nothing of the first's.
        assert!(first.staging().is_dir());
        drop(first);
        let again = Claim::take_with(&out, "hil run second.toml", TEST).unwrap();
        let record = fs::read_to_string(dir.join(".out.lock")).unwrap();
        assert!(record.contains("command hil run second.toml\n"), "{record}");
        drop(again);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn runs_locking_beside_and_inside_exclude_each_other() {
        let (dir, out) = place("two-locks");
        fs::create_dir_all(&out).unwrap();
        let inside = Options {
            inside_lock: true,
            ..TEST
        };
        let first = Claim::take_with(&out, "hil run inside", inside).unwrap();
        assert_eq!(first.placement, Staging::Inside);
        let err = Claim::take_with(&out, "hil run beside", TEST).unwrap_err();
        assert!(
            err.contains("hil run inside") && err.contains(INSIDE_LOCK),
            "{err}"
        );
        fs::write(first.staging().join("report.json"), "new").unwrap();
        first.publish(&["report.json"]).unwrap();
        let first = Claim::take_with(&out, "hil run beside", TEST).unwrap();
        let err = Claim::take_with(&out, "hil run inside", inside).unwrap_err();
        assert!(err.contains("hil run beside"), "{err}");
        drop(first);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_or_a_precious_folder_is_refused() {
        let (dir, out) = place("file");
        fs::write(&out, "x").unwrap();
        let err = Claim::take_with(&out, "t", TEST).unwrap_err();
        assert!(err.contains("exists and is not a folder"), "{err}");
        assert!(err.contains(&out.display().to_string()), "{err}");
        let repo = dir.join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        let err = Claim::take_with(&repo, "t", TEST).unwrap_err();
        assert!(err.contains("git checkout"), "{err}");
        // A folder of the user's own: not empty, no report.json (`--out out` looks like this).
        let own = dir.join("own");
        fs::create_dir_all(own.join("ball_blocking")).unwrap();
        let err = Claim::take_with(&own, "t", TEST).unwrap_err();
        assert!(err.contains("holds no report.json"), "{err}");
        fs::write(own.join("report.json"), "{}").unwrap();
        drop(Claim::take_with(&own, "t", TEST).unwrap());
        let err = Claim::take_with(Path::new("."), "t", TEST).unwrap_err();
        assert!(err.contains("current folder"), "{err}");
        let err = Claim::take_with(Path::new("/"), "t", TEST).unwrap_err();
        assert!(
            err.contains("root folder") || err.contains("current folder"),
            "{err}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn staging_inside_replaces_the_entries_but_the_inside_lock_file() {
        let (dir, out) = place("inside");
        fs::create_dir_all(out.join("old_sub")).unwrap();
        fs::write(out.join("stale.txt"), "old").unwrap();
        // An earlier run's outputs.
        fs::write(out.join("report.json"), "{}").unwrap();
        fs::write(out.join(INSIDE_LOCK), "").unwrap();
        // A killed run's leftovers inside.
        fs::create_dir_all(out.join(".partial-999999999")).unwrap();
        fs::create_dir_all(out.join(".old-999999999")).unwrap();
        let options = Options {
            force_inside: true,
            inside_lock: false,
            exchange: true,
        };
        let claim = Claim::take_with(&out, "t", options).unwrap();
        assert_eq!(claim.placement, Staging::Inside);
        assert!(claim.staging().starts_with(&out));
        fs::write(claim.staging().join("report.json"), "new").unwrap();
        fs::create_dir(claim.staging().join("frames")).unwrap();
        fs::write(claim.staging().join("frames/1.txt"), "1").unwrap();
        claim.publish(&["report.json", "frames"]).unwrap();
        assert_eq!(names(&out), [INSIDE_LOCK, "frames", "report.json"]);
        assert_eq!(fs::read_to_string(out.join("frames/1.txt")).unwrap(), "1");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_swap_puts_the_previous_outputs_back() {
        let (dir, out) = place("failed");
        fs::create_dir_all(&out).unwrap();
        fs::write(out.join("report.json"), "old").unwrap();
        let missing = dir.join(".out.partial-1");
        let old = dir.join(".out.old-1");
        let err = replace_beside(&missing, &out, &old, false).unwrap_err();
        assert!(err.contains("back in place"), "{err}");
        assert_eq!(fs::read_to_string(out.join("report.json")).unwrap(), "old");
        assert!(!old.exists());
        // With RENAME_EXCHANGE the failure changes nothing.
        let err = replace_beside(&missing, &out, &old, true).unwrap_err();
        assert!(err.contains("untouched"), "{err}");
        assert_eq!(fs::read_to_string(out.join("report.json")).unwrap(), "old");
        // Inside: a staged entry that cannot move up undoes the move of the old ones.
        let staging = out.join(".partial-1");
        fs::create_dir(&staging).unwrap();
        fs::write(staging.join("report.json"), "new").unwrap();
        fs::create_dir(staging.join("sub")).unwrap();
        fs::create_dir_all(out.join("sub/full")).unwrap(); // a non-empty folder blocks a rename
        let keep = [OsString::from("sub")];
        let err = replace_inside(&staging, &out, &keep).unwrap_err();
        assert!(err.contains("cannot move"), "{err}");
        assert_eq!(fs::read_to_string(out.join("report.json")).unwrap(), "old");
        assert_eq!(
            fs::read_to_string(staging.join("report.json")).unwrap(),
            "new"
        );
        assert_eq!(names(&out), [".partial-1", "report.json", "sub"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_publish_keeps_the_new_outputs_and_names_them() {
        let (dir, out) = place("kept");
        let claim = Claim::take_with(&out, "t", TEST).unwrap();
        let staging = claim.staging().to_path_buf();
        fs::write(staging.join("report.json"), "new").unwrap();
        let err = claim.publish(&["report.json", "angle.svg"]).unwrap_err();
        assert!(err.contains("did not write angle.svg"), "{err}");
        assert!(err.contains(&staging.display().to_string()), "{err}");
        assert!(staging.join("report.json").is_file());
        // The next run removes them.
        let next = Claim::take_with(&out, "t", TEST).unwrap();
        assert_eq!(next.staging(), staging);
        assert!(names(&staging).is_empty());
        drop(next);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn leftovers_of_a_killed_run_are_cleared_or_put_back() {
        let (dir, out) = place("leftovers");
        // Killed between the two renames: the folder is missing, its old self beside it.
        fs::create_dir_all(dir.join(".out.old-999999999")).unwrap();
        fs::write(dir.join(".out.old-999999999/report.json"), "old").unwrap();
        fs::create_dir_all(dir.join(".out.partial-999999998")).unwrap();
        // Not leftovers of `out`: another folder's, a look-alike.
        fs::create_dir_all(dir.join(".other.partial-1")).unwrap();
        fs::create_dir_all(dir.join(".out.partial-1.partial-2")).unwrap();
        let claim = Claim::take_with(&out, "t", TEST).unwrap();
        assert_eq!(fs::read_to_string(out.join("report.json")).unwrap(), "old");
        let staging_name = claim
            .staging()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut want = vec![
            ".other.partial-1".to_owned(),
            ".out.lock".to_owned(),
            ".out.partial-1.partial-2".to_owned(),
            staging_name,
            "out".to_owned(),
        ];
        want.sort();
        assert_eq!(names(&dir), want);
        drop(claim);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn copy_then_rename_moves_a_tree() {
        let (dir, _) = place("copy");
        let from = dir.join("from");
        fs::create_dir_all(from.join("a/b")).unwrap();
        fs::write(from.join("a/b/c.txt"), "c").unwrap();
        std::os::unix::fs::symlink("b/c.txt", from.join("a/link")).unwrap();
        let to = dir.join("to");
        copy_then_rename(&from, &to).unwrap();
        assert!(!from.exists());
        assert_eq!(fs::read_to_string(to.join("a/b/c.txt")).unwrap(), "c");
        assert_eq!(fs::read_to_string(to.join("a/link")).unwrap(), "c");
        assert_eq!(names(&dir), ["to"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn mountinfo_paths_are_unescaped_and_the_root_is_a_mount_point() {
        assert_eq!(unescape_mountinfo(br"/mnt/a\040b\134c"), b"/mnt/a b\\c");
        assert_eq!(unescape_mountinfo(br"/x\04"), br"/x\04");
        assert!(!is_mount_point(
            &std::env::temp_dir().join("hil-surely-not-a-mount")
        ));
        assert!(is_mount_point(Path::new("/")));
        assert!(is_mount_point(Path::new("/proc")));
        assert_eq!(
            parse_holder("pid 7\ncommand hil run a.toml\nstarted_unix_s 0\n")
                .unwrap()
                .split(',')
                .next(),
            Some("pid 7 (hil run a.toml)")
        );
        assert_eq!(parse_holder("pid 7\n"), None);
    }
}
