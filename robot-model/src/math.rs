//! The little 3×3 algebra the loader needs: placements composed and inverted, inertia tensors
//! rotated and moved, definiteness checks. Plain arrays, row-major (as [`Placement`]).

use control_core::tree::Placement;

/// A 3×3 matrix, row-major.
pub(crate) type M3 = [[f64; 3]; 3];
/// A 3-vector.
pub(crate) type V3 = [f64; 3];

pub(crate) fn mul(a: &M3, b: &M3) -> M3 {
    let mut c = [[0.0; 3]; 3];
    for (r, row) in c.iter_mut().enumerate() {
        for (k, x) in row.iter_mut().enumerate() {
            *x = a[r][0] * b[0][k] + a[r][1] * b[1][k] + a[r][2] * b[2][k];
        }
    }
    c
}

pub(crate) fn transpose(a: &M3) -> M3 {
    let mut t = [[0.0; 3]; 3];
    for (r, row) in a.iter().enumerate() {
        for (k, &x) in row.iter().enumerate() {
            t[k][r] = x;
        }
    }
    t
}

pub(crate) fn mul_v(a: &M3, v: &V3) -> V3 {
    [
        a[0][0] * v[0] + a[0][1] * v[1] + a[0][2] * v[2],
        a[1][0] * v[0] + a[1][1] * v[1] + a[1][2] * v[2],
        a[2][0] * v[0] + a[2][1] * v[1] + a[2][2] * v[2],
    ]
}

pub(crate) fn cross(a: &V3, b: &V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub(crate) fn norm(a: &V3) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

pub(crate) fn add(a: &V3, b: &V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `a ∘ b`: the frame `b` (given in frame `a`) in `a`'s parent.
pub(crate) fn compose(a: &Placement, b: &Placement) -> Placement {
    Placement {
        xyz_m: add(&a.xyz_m, &mul_v(&a.rotation, &b.xyz_m)),
        rotation: mul(&a.rotation, &b.rotation),
    }
}

/// The inverse placement: the parent frame in the child frame.
pub(crate) fn inverse(a: &Placement) -> Placement {
    let rt = transpose(&a.rotation);
    let p = mul_v(&rt, &a.xyz_m);
    Placement {
        xyz_m: [-p[0], -p[1], -p[2]],
        rotation: rt,
    }
}

/// Whether `a` is exactly the identity.
pub(crate) fn is_identity(a: &Placement) -> bool {
    *a == Placement::IDENTITY
}

/// The symmetric tensor of URDF's ixx, ixy, ixz, iyy, iyz, izz.
pub(crate) fn sym(i: &[f64; 6]) -> M3 {
    [[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]]
}

/// ixx, ixy, ixz, iyy, iyz, izz of a (nearly) symmetric tensor: each off-diagonal entry the mean
/// of its pair.
pub(crate) fn unsym(t: &M3) -> [f64; 6] {
    let s = |a: usize, b: usize| 0.5 * (t[a][b] + t[b][a]);
    [t[0][0], s(0, 1), s(0, 2), t[1][1], s(1, 2), t[2][2]]
}

/// `R I Rᵀ`: the tensor `i` given in a frame rotated by `r` from this one, in this one's axes.
pub(crate) fn rotate_inertia(r: &M3, i: &M3) -> M3 {
    mul(&mul(r, i), &transpose(r))
}

/// The parallel-axis term `m (|d|² E − d dᵀ)`: what a mass `m` at offset `d` from a point adds
/// to the inertia about that point.
pub(crate) fn parallel_axis(m: f64, d: &V3) -> M3 {
    let dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    let mut t = [[0.0; 3]; 3];
    for (r, row) in t.iter_mut().enumerate() {
        for (k, x) in row.iter_mut().enumerate() {
            let delta = if r == k { dd } else { 0.0 };
            *x = m * (delta - d[r] * d[k]);
        }
    }
    t
}

pub(crate) fn det(a: &M3) -> f64 {
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

/// Positive definite by Sylvester's criterion: the three leading principal minors > 0.
pub(crate) fn positive_definite(a: &M3) -> bool {
    a[0][0] > 0.0 && a[0][0] * a[1][1] - a[0][1] * a[1][0] > 0.0 && det(a) > 0.0
}

/// Positive semidefinite to rounding: every principal minor (not only the leading ones) ≥ 0,
/// each to a tolerance of 1e-12 relative to the largest entry (the check `sim_host::chain`
/// makes of a link's inertia).
pub(crate) fn positive_semidefinite(t: &M3) -> bool {
    let big = t.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
    let minor2 = |a: usize, b: usize| t[a][a] * t[b][b] - t[a][b] * t[b][a];
    let eps = 1e-12;
    [t[0][0], t[1][1], t[2][2]].iter().all(|&d| d >= -eps * big)
        && [minor2(0, 1), minor2(0, 2), minor2(1, 2)]
            .iter()
            .all(|&d| d >= -eps * big * big)
        && det(t) >= -eps * big * big * big
}

/// The eigenvalues of a symmetric matrix (the principal moments of an inertia), ascending; for
/// messages only (closed form, accurate to rounding relative to the largest).
pub(crate) fn eigenvalues(a: &M3) -> V3 {
    let p1 = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    let mut e = if p1 == 0.0 {
        [a[0][0], a[1][1], a[2][2]]
    } else {
        let q = (a[0][0] + a[1][1] + a[2][2]) / 3.0;
        let p2 = (a[0][0] - q).powi(2) + (a[1][1] - q).powi(2) + (a[2][2] - q).powi(2) + 2.0 * p1;
        let p = (p2 / 6.0).sqrt();
        let mut b = *a;
        for (k, row) in b.iter_mut().enumerate() {
            for x in row.iter_mut() {
                *x /= p;
            }
            row[k] -= q / p;
        }
        let r = (det(&b) / 2.0).clamp(-1.0, 1.0);
        let phi = r.acos() / 3.0;
        let e1 = q + 2.0 * p * phi.cos();
        let e3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
        [e1, 3.0 * q - e1 - e3, e3]
    };
    e.sort_by(f64::total_cmp);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &M3, b: &M3, tol: f64) -> bool {
        a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn compose_and_inverse_give_the_identity() {
        let a = Placement::from_xyz_rpy([0.1, -0.2, 0.3], [0.4, -0.5, 0.6]);
        let i = compose(&a, &inverse(&a));
        assert!(close(&i.rotation, &Placement::IDENTITY.rotation, 1e-15));
        assert!(i.xyz_m.iter().all(|x| x.abs() < 1e-16));
    }

    #[test]
    fn definiteness_and_eigenvalues() {
        let i = sym(&[2.0, 0.5, 0.0, 3.0, 0.0, 4.0]);
        assert!(positive_definite(&i) && positive_semidefinite(&i));
        let e = eigenvalues(&i);
        let want = [2.5 - 0.5f64.sqrt(), 2.5 + 0.5f64.sqrt(), 4.0];
        assert!(
            e.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{e:?}"
        );
        let flat = sym(&[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        assert!(!positive_definite(&flat) && positive_semidefinite(&flat));
        let bad = sym(&[1.0, 2.0, 0.0, 1.0, 0.0, 1.0]);
        assert!(!positive_semidefinite(&bad));
        assert!((eigenvalues(&bad)[0] + 1.0).abs() < 1e-15);
        // A principal minor that is not a leading one.
        let hidden = sym(&[0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        assert!(!positive_semidefinite(&hidden));
    }

    #[test]
    fn rotated_and_moved_inertia() {
        // A quarter turn about z swaps ixx and iyy.
        let r = Placement::from_xyz_rpy([0.0; 3], [0.0, 0.0, std::f64::consts::FRAC_PI_2]);
        let t = rotate_inertia(&r.rotation, &sym(&[1.0, 0.0, 0.0, 2.0, 0.0, 3.0]));
        assert!(close(&t, &sym(&[2.0, 0.0, 0.0, 1.0, 0.0, 3.0]), 1e-15));
        assert_eq!(
            parallel_axis(2.0, &[1.0, 0.0, 1.0]),
            sym(&[2.0, 0.0, -2.0, 4.0, 0.0, 2.0])
        );
    }
}
