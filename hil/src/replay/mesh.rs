//! The vertices of a collision mesh file, for its hull in the replay: STL (binary and ASCII) and
//! Wavefront `.obj` (`v` lines), each vertex scaled per axis. Collada `.dae` is not read here
//! (its node transforms and units would need a Collada reader: the plant's, `mesh-loader`, is
//! not a dependency of hil); such a mesh is left out of the drawing, with a note on the page.
//! The limits are the plant's: at most 64 MiB and 2 000 000 vertices.

use std::io::Read;
use std::path::Path;

/// Largest mesh file read, bytes (the plant's `MAX_MESH_BYTES`).
const MAX_BYTES: u64 = sim_host::robot::MAX_MESH_BYTES;
/// Most vertices read (the plant's `MAX_MESH_VERTICES`).
const MAX_VERTICES: usize = sim_host::robot::MAX_MESH_VERTICES;

/// The vertices of the mesh file at `path`, scaled, or why not.
pub fn vertices(path: &Path, scale: [f64; 3]) -> Result<Vec<[f64; 3]>, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if ext != "stl" && ext != "obj" {
        return Err(format!(
            "`.{ext}` meshes are not read by the replay (STL and .obj are)"
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Err(String::from("not a regular file of at most 64 MiB"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read: {e}"))?;
    let raw = if ext == "stl" {
        binary_stl(&bytes).map_or_else(|| ascii_tokens(&bytes, "vertex"), Ok)?
    } else {
        ascii_tokens(&bytes, "v")?
    };
    if raw.len() > MAX_VERTICES {
        return Err(format!("more than {MAX_VERTICES} vertices"));
    }
    Ok(raw
        .into_iter()
        .map(|v| [v[0] * scale[0], v[1] * scale[1], v[2] * scale[2]])
        .collect())
}

/// A binary STL's vertices: `None` unless the size is exactly 84 + 50 × its triangle count
/// (a binary file may begin with `solid` too).
fn binary_stl(bytes: &[u8]) -> Option<Vec<[f64; 3]>> {
    let count = u32::from_le_bytes(bytes.get(80..84)?.try_into().ok()?) as usize;
    if bytes.len() != 84 + 50 * count {
        return None;
    }
    let f = |at: usize| -> f64 {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(f64::NAN, |b| f64::from(f32::from_le_bytes(b)))
    };
    Some(
        (0..count)
            .flat_map(|t| {
                let base = 84 + 50 * t + 12;
                (0..3).map(move |v| base + 12 * v)
            })
            .map(|at| [f(at), f(at + 4), f(at + 8)])
            .collect(),
    )
}

/// The three numbers after every `keyword` token at the start of a line (ASCII STL `vertex`,
/// OBJ `v`).
fn ascii_tokens(bytes: &[u8], keyword: &str) -> Result<Vec<[f64; 3]>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| String::from("not UTF-8 text"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some(keyword) {
            continue;
        }
        let mut v = [0.0; 3];
        for x in &mut v {
            *x = words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| format!("a `{keyword}` line without three numbers: {line:?}"))?;
        }
        out.push(v);
        if out.len() > MAX_VERTICES {
            break;
        }
    }
    if out.is_empty() {
        return Err(String::from("no vertices"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_ascii_stl_and_obj_give_the_same_scaled_vertices() {
        let dir = std::env::temp_dir().join(format!("hil-replay-mesh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tri = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.5]];
        let mut bin = b"solid but binary".to_vec();
        bin.resize(80, 0);
        bin.extend(1u32.to_le_bytes());
        bin.extend([0u8; 12]);
        for v in tri {
            for x in v {
                bin.extend(x.to_le_bytes());
            }
        }
        bin.extend([0u8; 2]);
        std::fs::write(dir.join("b.stl"), &bin).unwrap();
        std::fs::write(
            dir.join("a.STL"),
            "solid a\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 2 0.5\nendloop\nendfacet\nendsolid a\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("m.obj"),
            "# x\nv 0 0 0\nv 1 0 0\nvn 0 0 1\nv 0 2 0.5\nf 1 2 3\n",
        )
        .unwrap();
        std::fs::write(dir.join("m.dae"), "<COLLADA/>").unwrap();
        let want = vec![[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 2.0, -0.5]];
        for name in ["b.stl", "a.STL", "m.obj"] {
            assert_eq!(
                vertices(&dir.join(name), [2.0, 1.0, -1.0]).unwrap(),
                want,
                "{name}"
            );
        }
        assert!(vertices(&dir.join("m.dae"), [1.0; 3]).is_err());
        assert!(vertices(&dir.join("none.stl"), [1.0; 3]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
