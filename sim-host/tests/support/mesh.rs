//! Mesh files for the robot plant's tests: one box's corners and triangles, written as binary or
//! ASCII STL. Shared by the unit tests (`src/robot.rs`, through `src/lib.rs`) and the
//! integration tests (`tests/robot.rs`).

/// The 8 corners of an axis-aligned box from `lo` to `hi` and its 12 triangles.
pub fn box_mesh(lo: [f32; 3], hi: [f32; 3]) -> (Vec<[f32; 3]>, Vec<[usize; 3]>) {
    let v: Vec<[f32; 3]> = (0..8)
        .map(|i| {
            [
                if i & 1 == 0 { lo[0] } else { hi[0] },
                if i & 2 == 0 { lo[1] } else { hi[1] },
                if i & 4 == 0 { lo[2] } else { hi[2] },
            ]
        })
        .collect();
    let f = vec![
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    (v, f)
}

/// A binary STL of the triangles `f` over the vertices `v` (zero header, zero normals).
pub fn binary_stl(v: &[[f32; 3]], f: &[[usize; 3]]) -> Vec<u8> {
    let mut out = vec![0u8; 80];
    out.extend(u32::try_from(f.len()).unwrap().to_le_bytes());
    for t in f {
        out.extend([0f32; 3].iter().flat_map(|x| x.to_le_bytes()));
        for &i in t {
            out.extend(v[i].iter().flat_map(|x| x.to_le_bytes()));
        }
        out.extend([0u8; 2]);
    }
    out
}

/// An ASCII STL solid `name` of the triangles `f` over the vertices `v` (zero normals).
pub fn ascii_stl(name: &str, v: &[[f32; 3]], f: &[[usize; 3]]) -> Vec<u8> {
    let mut s = format!("solid {name}\n");
    for t in f {
        s += "  facet normal 0 0 0\n    outer loop\n";
        for &i in t {
            s += &format!("      vertex {} {} {}\n", v[i][0], v[i][1], v[i][2]);
        }
        s += "    endloop\n  endfacet\n";
    }
    s += &format!("endsolid {name}\n");
    s.into_bytes()
}
