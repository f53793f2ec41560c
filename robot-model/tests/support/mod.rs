//! Where the real robots are: `scripts/example-robot-data.sh` (it finds example-robot-data, or
//! installs it). A test that needs them fails with the script's message when it cannot: it never
//! passes without the data.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The absolute path of example-robot-data's `robots` folder (the script runs once per test
/// binary).
pub fn robots_dir() -> PathBuf {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/example-robot-data.sh"
        );
        let out = Command::new("sh")
            .arg(script)
            .output()
            .map_err(|e| format!("cannot run {script}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || stdout.is_empty() {
            return Err(format!(
                "{script} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(PathBuf::from(stdout))
    });
    match dir {
        Ok(d) => d.clone(),
        Err(e) => panic!("the real robots are needed: {e}"),
    }
}
