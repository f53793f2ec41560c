//! The convex hull of a point cloud: how the replay draws a collision mesh, as the plant
//! simulates it (the robot plant hulls every collision mesh's vertices, `sim_host::robot`).
//!
//! Quickhull with exact predicates. The points are snapped to an integer grid of 2²⁰ steps
//! along the cloud's largest extent (a step is under 1e-6 of the mesh's size, below the f32
//! resolution mesh files are written in), so whether a point lies above a face is an exact
//! integer sign (i128): no tolerance, no folded or sliver faces. A first tetrahedron from
//! extreme points; each other point kept in the outside set of one face it lies above; then,
//! while a face has points outside, its farthest point replaces the faces it sees (a connected
//! region of a convex hull, found by walking from that face) with a fan of faces from the
//! region's border to it, and the points those faces held go to the new faces they lie above
//! (or are inside). Points on a face's plane are not added. The hull's vertices are its grid
//! points (within half a step of the input points: drawn through the input points themselves,
//! a sliver face could tilt); faces are outward (counter-clockwise seen from outside).

use std::collections::{HashMap, HashSet};

type P = [f64; 3];
type I = [i64; 3];

/// Grid steps along the cloud's largest extent.
const GRID: f64 = (1u64 << 20) as f64;

fn sub(a: I, b: I) -> [i128; 3] {
    [
        i128::from(a[0] - b[0]),
        i128::from(a[1] - b[1]),
        i128::from(a[2] - b[2]),
    ]
}

fn cross(a: [i128; 3], b: [i128; 3]) -> [i128; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [i128; 3], b: [i128; 3]) -> i128 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A convex hull: its vertices and its outward triangles (indices into the vertices).
#[derive(Debug, Clone, PartialEq)]
pub struct Hull {
    /// The hull's vertices (points of the cloud).
    pub vertices: Vec<P>,
    /// Triangles, counter-clockwise seen from outside.
    pub triangles: Vec<[u32; 3]>,
}

#[derive(Debug, Clone)]
struct Face {
    v: [usize; 3],
    /// (b − a) × (c − a): outward, not normalised.
    n: [i128; 3],
    /// n · a.
    d: i128,
    alive: bool,
    /// Points above this face (not yet on the hull).
    outside: Vec<usize>,
}

struct Builder<'a> {
    pts: &'a [I],
    faces: Vec<Face>,
    /// Directed edge (a, b) → the face that has it (a → b in its winding).
    edges: HashMap<(usize, usize), usize>,
}

impl Builder<'_> {
    fn face(&self, v: [usize; 3]) -> Face {
        let [a, b, c] = v.map(|i| self.pts[i]);
        let n = cross(sub(b, a), sub(c, a));
        Face {
            v,
            n,
            d: dot(n, sub(a, [0; 3])),
            alive: true,
            outside: Vec::new(),
        }
    }

    /// How far point `p` lies above face `f`, times |n|: > 0 above, 0 in its plane.
    fn height(&self, f: usize, p: usize) -> i128 {
        let f = &self.faces[f];
        dot(f.n, sub(self.pts[p], [0; 3])) - f.d
    }

    fn add(&mut self, v: [usize; 3]) -> usize {
        let f = self.face(v);
        let k = self.faces.len();
        for e in [(v[0], v[1]), (v[1], v[2]), (v[2], v[0])] {
            self.edges.insert(e, k);
        }
        self.faces.push(f);
        k
    }

    /// Give each of `points` to the first of `faces` it lies above (none: it is inside).
    fn assign(&mut self, points: &[usize], faces: &[usize]) {
        for &i in points {
            if let Some(&f) = faces.iter().find(|&&f| self.height(f, i) > 0) {
                self.faces[f].outside.push(i);
            }
        }
    }

    /// Put point `i`, above face `start`, on the hull: the faces it sees give way to faces
    /// from their border to it; their outside points go to the new faces. The new faces.
    fn insert(&mut self, i: usize, start: usize) -> Vec<usize> {
        // The faces i sees: connected to `start` (the hull is exactly convex).
        let mut visible = vec![start];
        let mut seen = HashSet::from([start]);
        let mut k = 0;
        while let Some(&f) = visible.get(k) {
            k += 1;
            let v = self.faces[f].v;
            for (a, b) in [(v[0], v[1]), (v[1], v[2]), (v[2], v[0])] {
                if let Some(&g) = self.edges.get(&(b, a))
                    && !seen.contains(&g)
                    && self.height(g, i) > 0
                {
                    seen.insert(g);
                    visible.push(g);
                }
            }
        }
        let mut horizon = Vec::new();
        for &f in &visible {
            let v = self.faces[f].v;
            for (a, b) in [(v[0], v[1]), (v[1], v[2]), (v[2], v[0])] {
                let twin = self.edges.get(&(b, a)).copied();
                if twin.is_none_or(|g| !seen.contains(&g)) {
                    horizon.push((a, b));
                }
            }
        }
        let mut orphans = Vec::new();
        for &f in &visible {
            let face = &mut self.faces[f];
            face.alive = false;
            orphans.extend(face.outside.drain(..).filter(|&j| j != i));
            let v = face.v;
            for e in [(v[0], v[1]), (v[1], v[2]), (v[2], v[0])] {
                if self.edges.get(&e) == Some(&f) {
                    self.edges.remove(&e);
                }
            }
        }
        let new: Vec<usize> = horizon
            .into_iter()
            .map(|(a, b)| self.add([a, b, i]))
            .collect();
        self.assign(&orphans, &new);
        new
    }
}

/// The convex hull of `points` (non-finite ones ignored); `None` when they span no volume
/// (fewer than 4 distinct points, or all on one plane, to the grid).
pub fn convex_hull(points: &[P]) -> Option<Hull> {
    let finite: Vec<P> = points
        .iter()
        .copied()
        .filter(|p| p.iter().all(|x| x.is_finite()))
        .collect();
    let first = *finite.first()?;
    let (mut lo, mut hi) = (first, first);
    for p in &finite {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let scale = (0..3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
    if scale <= 0.0 {
        return None;
    }
    // Snapped to the grid (at most 2²⁰ per axis: products of three differences fit i128 with
    // room), each grid point once.
    let snap = |p: &P| -> I { [0, 1, 2].map(|k| ((p[k] - lo[k]) / scale * GRID).round() as i64) };
    let mut pts: Vec<I> = finite.iter().map(snap).collect();
    pts.sort_unstable();
    pts.dedup();
    if pts.len() < 4 {
        return None;
    }
    // The first tetrahedron: the two extremes along the widest axis, the point farthest from
    // their line, the point farthest from their plane.
    let axis = (0..3)
        .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
        .unwrap_or(0);
    let argmax = |f: &dyn Fn(I) -> i128| {
        (0..pts.len())
            .map(|i| (f(pts[i]), i))
            .max()
            .map_or((0, 0), |(v, i)| (i, v))
    };
    let i0 = argmax(&|p| -i128::from(p[axis])).0;
    let i1 = argmax(&|p| i128::from(p[axis])).0;
    let (a, b) = (pts[i0], pts[i1]);
    let line = |p: I| {
        let c = cross(sub(p, a), sub(b, a));
        dot(c, c)
    };
    let (i2, d2) = argmax(&line);
    if d2 == 0 {
        return None;
    }
    let c = pts[i2];
    let plane = cross(sub(b, a), sub(c, a));
    let (i3, d3) = argmax(&|p: I| dot(plane, sub(p, a)).abs());
    if d3 == 0 {
        return None;
    }
    let mut builder = Builder {
        pts: &pts,
        faces: Vec::new(),
        edges: HashMap::new(),
    };
    // Outward: the fourth vertex below each face.
    for [x, y, z, w] in [
        [i0, i1, i2, i3],
        [i0, i1, i3, i2],
        [i0, i2, i3, i1],
        [i1, i2, i3, i0],
    ] {
        let f = builder.face([x, y, z]);
        if dot(f.n, sub(pts[w], [0; 3])) - f.d > 0 {
            builder.add([x, z, y]);
        } else {
            builder.add([x, y, z]);
        }
    }
    let tet = [i0, i1, i2, i3];
    let rest: Vec<usize> = (0..pts.len()).filter(|i| !tet.contains(i)).collect();
    let first: Vec<usize> = (0..builder.faces.len()).collect();
    builder.assign(&rest, &first);
    let mut work = first;
    while let Some(f) = work.pop() {
        let face = &builder.faces[f];
        if !face.alive {
            continue;
        }
        // The point of its outside set farthest from it.
        let Some(far) = face
            .outside
            .iter()
            .copied()
            .max_by_key(|&p| builder.height(f, p))
        else {
            continue;
        };
        let new = builder.insert(far, f);
        work.extend(
            new.into_iter()
                .filter(|&g| !builder.faces[g].outside.is_empty()),
        );
    }
    let mut index: HashMap<usize, u32> = HashMap::new();
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    for f in builder.faces.iter().filter(|f| f.alive) {
        let mut t = [0u32; 3];
        for (slot, &v) in t.iter_mut().zip(&f.v) {
            *slot = *index.entry(v).or_insert_with(|| {
                let q = pts[v];
                vertices.push([0, 1, 2].map(|k| lo[k] + q[k] as f64 * scale / GRID));
                u32::try_from(vertices.len() - 1).unwrap_or(u32::MAX)
            });
        }
        triangles.push(t);
    }
    Some(Hull {
        vertices,
        triangles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every point inside or on the hull (to 4 grid steps: the faces are decided on the grid,
    /// drawn through the points), every face outward, and the surface closed (each edge in two
    /// faces, opposite ways; V − E + F = 2).
    fn check(points: &[P], h: &Hull, size: f64) {
        let tol = 4.0 * size / GRID;
        let f = |a: P, b: P| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let x = |a: P, b: P| {
            [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]
        };
        let d = |a: P, b: P| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let mut edges: HashMap<(u32, u32), usize> = HashMap::new();
        for t in &h.triangles {
            let [a, b, c] = t.map(|i| h.vertices[i as usize]);
            let n = x(f(b, a), f(c, a));
            let l = d(n, n).sqrt();
            assert!(l > 0.0, "a degenerate face");
            for p in points {
                assert!(d(n, f(*p, a)) / l <= tol, "{p:?} outside");
            }
            for e in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                *edges.entry(e).or_default() += 1;
            }
        }
        for (&(a, b), &n) in &edges {
            assert_eq!(n, 1, "edge {a}-{b} in {n} faces one way");
            assert_eq!(edges.get(&(b, a)), Some(&1), "edge {a}-{b} has no twin");
        }
        let (v, e, f) = (h.vertices.len(), edges.len() / 2, h.triangles.len());
        assert_eq!(v + f, e + 2);
    }

    #[test]
    fn a_cube_with_points_inside_and_on_its_faces_is_its_corners() {
        let mut points = Vec::new();
        for i in 0..27 {
            points.push([
                f64::from(i % 3) - 1.0,
                f64::from(i / 3 % 3) - 1.0,
                f64::from(i / 9) - 1.0,
            ]);
        }
        let h = convex_hull(&points).unwrap();
        check(&points, &h, 2.0);
        assert_eq!(h.vertices.len(), 8);
        assert_eq!(h.triangles.len(), 12);
    }

    #[test]
    fn points_on_a_sphere_are_all_on_the_hull() {
        // A deterministic spiral of points on the unit sphere, and its centre.
        let n = 500;
        let mut points: Vec<P> = (0..n)
            .map(|i| {
                let z = 1.0 - 2.0 * (f64::from(i) + 0.5) / f64::from(n);
                let r = (1.0 - z * z).sqrt();
                let phi = f64::from(i) * 2.399_963_229_728_653;
                [r * phi.cos(), r * phi.sin(), z]
            })
            .collect();
        points.push([0.0; 3]);
        let h = convex_hull(&points).unwrap();
        check(&points, &h, 2.0);
        assert_eq!(h.vertices.len(), 500);
    }

    #[test]
    fn a_finely_tessellated_cad_like_cloud_gives_a_closed_convex_hull() {
        // A rounded box: many points nearly on the same planes and cylinders (what CAD meshes
        // are made of), the case a tolerance-based hull folds on.
        let mut points = Vec::new();
        for i in 0..60 {
            for j in 0..60 {
                let (u, v) = (f64::from(i) / 59.0, f64::from(j) / 59.0);
                let a = u * std::f64::consts::TAU;
                points.push([0.03 * a.cos(), 0.03 * a.sin(), 0.08 * v]);
                points.push([0.02 * u, 0.02 * v, 0.08 + 1e-9 * f64::from(i * j % 7)]);
                points.push([0.029 * a.cos() * v, 0.029 * a.sin() * v, 0.0]);
            }
        }
        let h = convex_hull(&points).unwrap();
        check(&points, &h, 0.08);
    }

    #[test]
    fn flat_or_too_few_points_have_no_hull() {
        assert_eq!(
            convex_hull(&[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
            None
        );
        let flat: Vec<P> = (0..20)
            .map(|i| [f64::from(i % 5), f64::from(i / 5), 0.0])
            .collect();
        assert_eq!(convex_hull(&flat), None);
        assert_eq!(convex_hull(&[[f64::NAN; 3]; 8]), None);
    }
}
