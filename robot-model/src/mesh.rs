//! Where a `<mesh filename>` is on this machine.
//!
//! - `package://PKG/rest` (also `package:///PKG/rest`, as `talos_data` writes it): `rest` in the
//!   first directory of package `PKG`, in this order, that holds it as a regular file:
//!   1. the URDF's ancestors, nearest first (its own folder, then up to `/`): an ancestor named
//!      `PKG`, then an ancestor's child `PKG`;
//!   2. each entry of `ROS_PACKAGE_PATH` (in order): the entry itself if it is named `PKG`, its
//!      child `PKG`, then `PKG` one level further down (`entry/*/PKG`, subfolders in name order);
//!   3. each entry of `AMENT_PREFIX_PATH`: `entry/share/PKG`.
//! - `file:///abs/path` (or `file://path`, relative to the URDF's folder): that path.
//! - An absolute path: itself; a relative path: relative to the URDF's folder.
//! - Any other scheme (`http://`, `model://`) is refused.
//!
//! The path found must be a regular file (symlinks followed). The refusal says where the loader
//! looked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The package search path for `package://` mesh names, beyond the URDF's own ancestors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MeshSearch {
    /// `ROS_PACKAGE_PATH`'s entries, in order.
    pub ros_package_path: Vec<PathBuf>,
    /// `AMENT_PREFIX_PATH`'s entries, in order (each a prefix holding `share/PKG`).
    pub ament_prefix_path: Vec<PathBuf>,
}

impl MeshSearch {
    /// The search path of this process's environment: `ROS_PACKAGE_PATH` and
    /// `AMENT_PREFIX_PATH`, split at `:` (empty entries dropped); empty when unset.
    pub fn from_env() -> Self {
        let split = |var: &str| -> Vec<PathBuf> {
            std::env::var_os(var)
                .map(|v| {
                    std::env::split_paths(&v)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            ros_package_path: split("ROS_PACKAGE_PATH"),
            ament_prefix_path: split("AMENT_PREFIX_PATH"),
        }
    }
}

/// Resolves the mesh names of one URDF, remembering each package's candidate folders.
pub(crate) struct Resolver<'a> {
    urdf_dir: PathBuf,
    search: &'a MeshSearch,
    packages: HashMap<String, Vec<PathBuf>>,
}

/// How a path that should be a mesh file is not one.
fn not_a_file(p: &Path) -> Option<&'static str> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => None,
        Ok(m) if m.is_dir() => Some("a folder"),
        Ok(_) => Some("not a regular file"),
        Err(_) => Some("missing"),
    }
}

/// At most `max` paths of a list, then how many more.
fn listed(paths: &[PathBuf], max: usize) -> String {
    let mut s = paths
        .iter()
        .take(max)
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > max {
        s.push_str(&format!(", … ({} more)", paths.len() - max));
    }
    s
}

impl<'a> Resolver<'a> {
    /// For the URDF at `source` (absolute).
    pub(crate) fn new(source: &Path, search: &'a MeshSearch) -> Self {
        Self {
            urdf_dir: source.parent().unwrap_or(Path::new("/")).to_path_buf(),
            search,
            packages: HashMap::new(),
        }
    }

    /// The folders that may be package `pkg`, in search order, without repeats.
    fn package_dirs(&mut self, pkg: &str) -> &[PathBuf] {
        let urdf_dir = &self.urdf_dir;
        let search = self.search;
        self.packages.entry(pkg.to_owned()).or_insert_with(|| {
            let mut dirs: Vec<PathBuf> = Vec::new();
            let mut add = |p: PathBuf| {
                if p.is_dir() && !dirs.contains(&p) {
                    dirs.push(p);
                }
            };
            let named = |p: &Path| p.file_name().is_some_and(|n| n == pkg);
            for a in urdf_dir.ancestors() {
                if named(a) {
                    add(a.to_path_buf());
                }
                add(a.join(pkg));
            }
            for e in &search.ros_package_path {
                if named(e) {
                    add(e.clone());
                }
                add(e.join(pkg));
                if let Ok(rd) = std::fs::read_dir(e) {
                    let mut subs: Vec<PathBuf> = rd
                        .filter_map(|d| d.ok().map(|d| d.path()))
                        .filter(|p| p.is_dir())
                        .collect();
                    subs.sort();
                    for s in subs {
                        add(s.join(pkg));
                    }
                }
            }
            for e in &search.ament_prefix_path {
                add(e.join("share").join(pkg));
            }
            dirs
        })
    }

    /// The regular file `filename` names, or why there is none (naming where it looked).
    pub(crate) fn resolve(&mut self, filename: &str) -> Result<PathBuf, String> {
        if let Some(rest) = filename.strip_prefix("package://") {
            let rest = rest.trim_start_matches('/');
            let (pkg, rel) = rest
                .split_once('/')
                .filter(|(p, r)| {
                    !matches!(*p, "" | "." | "..") && !r.trim_start_matches('/').is_empty()
                })
                .ok_or_else(|| {
                    "a package:// name needs a package and a path: package://PKG/path".to_owned()
                })?;
            let rel = rel.trim_start_matches('/');
            let dirs = self.package_dirs(pkg).to_vec();
            for d in &dirs {
                let p = d.join(rel);
                if not_a_file(&p).is_none() {
                    return Ok(p);
                }
            }
            let env = |name: &str, v: &[PathBuf]| {
                if v.is_empty() {
                    format!("{name} empty or unset")
                } else {
                    format!("{name} {}", listed(v, 8))
                }
            };
            let searched = format!(
                "the URDF's folder {} and its ancestors, {}, {}",
                self.urdf_dir.display(),
                env("ROS_PACKAGE_PATH", &self.search.ros_package_path),
                env("AMENT_PREFIX_PATH", &self.search.ament_prefix_path)
            );
            return Err(if dirs.is_empty() {
                format!("no folder of package {pkg:?} found (searched {searched})")
            } else {
                let tried: Vec<PathBuf> = dirs.iter().map(|d| d.join(rel)).collect();
                format!(
                    "no regular file {rel:?} in package {pkg:?}: tried {} (searched {searched})",
                    listed(&tried, 8)
                )
            });
        }
        let path = if let Some(rest) = filename.strip_prefix("file://") {
            PathBuf::from(rest)
        } else if let Some((scheme, _)) = filename.split_once("://") {
            return Err(format!(
                "the scheme {scheme:?}:// is not supported (package://, file://, or a path)"
            ));
        } else {
            PathBuf::from(filename)
        };
        let path = if path.is_absolute() {
            path
        } else {
            self.urdf_dir.join(path)
        };
        match not_a_file(&path) {
            None => Ok(path),
            Some(what) => Err(format!(
                "resolved to {}, which is {what}: a mesh must be a regular file",
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of folders and files under a fresh temporary folder.
    fn tree(name: &str, files: &[&str]) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("robot-model-mesh-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "solid\n").unwrap();
        }
        root
    }

    #[test]
    fn package_names_resolve_through_ancestors_and_search_paths() {
        let root = tree(
            "pkg",
            &[
                "ws/src/my_robot/urdf/r.urdf",
                "ws/src/my_robot/meshes/a.stl",
                "ws/src/other/meshes/b.stl",
                "ros/group/third/meshes/c.stl",
                "ament/share/fourth/meshes/d.stl",
            ],
        );
        let search = MeshSearch {
            ros_package_path: vec![root.join("ros")],
            ament_prefix_path: vec![root.join("ament")],
        };
        let mut r = Resolver::new(&root.join("ws/src/my_robot/urdf/r.urdf"), &search);
        // An ancestor named like the package, with two and three slashes.
        let a = root.join("ws/src/my_robot/meshes/a.stl");
        assert_eq!(r.resolve("package://my_robot/meshes/a.stl").unwrap(), a);
        assert_eq!(r.resolve("package:///my_robot/meshes/a.stl").unwrap(), a);
        // An ancestor holding the package.
        assert_eq!(
            r.resolve("package://other/meshes/b.stl").unwrap(),
            root.join("ws/src/other/meshes/b.stl")
        );
        // ROS_PACKAGE_PATH one level down, AMENT_PREFIX_PATH's share.
        assert_eq!(
            r.resolve("package://third/meshes/c.stl").unwrap(),
            root.join("ros/group/third/meshes/c.stl")
        );
        assert_eq!(
            r.resolve("package://fourth/meshes/d.stl").unwrap(),
            root.join("ament/share/fourth/meshes/d.stl")
        );
        // Relative, absolute and file:// paths.
        assert_eq!(
            r.resolve("../meshes/a.stl").unwrap(),
            root.join("ws/src/my_robot/urdf/../meshes/a.stl")
        );
        assert_eq!(r.resolve(a.to_str().unwrap()).unwrap(), a);
        assert_eq!(r.resolve(&format!("file://{}", a.display())).unwrap(), a);
        // Refusals say where the loader looked.
        let e = r.resolve("package://nowhere/x.stl").unwrap_err();
        assert!(
            e.starts_with("no folder of package \"nowhere\" found (searched the URDF's folder"),
            "{e}"
        );
        assert!(
            e.contains("ROS_PACKAGE_PATH") && !e.contains("AMENT_PREFIX_PATH empty"),
            "{e}"
        );
        let e = r.resolve("package://my_robot/meshes/zz.stl").unwrap_err();
        assert!(
            e.starts_with("no regular file \"meshes/zz.stl\" in package \"my_robot\": tried "),
            "{e}"
        );
        assert!(
            e.contains(
                &root
                    .join("ws/src/my_robot/meshes/zz.stl")
                    .display()
                    .to_string()
            ),
            "{e}"
        );
        let e = r.resolve("meshes").unwrap_err();
        assert!(
            e.ends_with("which is missing: a mesh must be a regular file"),
            "{e}"
        );
        let e = r.resolve("../meshes").unwrap_err();
        assert!(e.contains("which is a folder"), "{e}");
        assert!(
            r.resolve("http://example.com/a.stl")
                .unwrap_err()
                .contains("\"http\"://")
        );
        assert!(r.resolve("package://my_robot").is_err());
        assert!(r.resolve("package:///").is_err());
        assert!(r.resolve("package://../meshes/a.stl").is_err());
    }
}
