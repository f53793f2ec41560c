//! Dense kernels on slices and on row-major matrices stored as arrays of rows, without indexing
//! that could panic: every access is an iterator, a `get` or a clamped split. Lengths that
//! disagree are cut to the shorter operand (the callers pass lengths they have checked).

/// `v[..n]`, or all of `v` when it is shorter.
#[inline]
pub(super) fn head(v: &[f64], n: usize) -> &[f64] {
    v.split_at(n.min(v.len())).0
}

/// `v[..n]` mutably, or all of `v` when it is shorter.
#[inline]
pub(super) fn head_mut(v: &mut [f64], n: usize) -> &mut [f64] {
    let n = n.min(v.len());
    v.split_at_mut(n).0
}

/// `v[from..]`, or the empty slice past the end.
#[inline]
pub(super) fn tail(v: &[f64], from: usize) -> &[f64] {
    v.split_at(from.min(v.len())).1
}

/// `v[from..]` mutably, or the empty slice past the end.
#[inline]
pub(super) fn tail_mut(v: &mut [f64], from: usize) -> &mut [f64] {
    let from = from.min(v.len());
    v.split_at_mut(from).1
}

/// `v[from..to]`, clamped.
#[inline]
pub(super) fn range(v: &[f64], from: usize, to: usize) -> &[f64] {
    tail(head(v, to), from)
}

/// `v[from..to]` mutably, clamped.
#[inline]
pub(super) fn range_mut(v: &mut [f64], from: usize, to: usize) -> &mut [f64] {
    tail_mut(head_mut(v, to), from)
}

/// `v[i]`, or 0 past the end.
#[inline]
pub(super) fn at(v: &[f64], i: usize) -> f64 {
    v.get(i).copied().unwrap_or(0.0)
}

/// `v[i] = x`, or nothing past the end.
#[inline]
pub(super) fn put(v: &mut [f64], i: usize, x: f64) {
    if let Some(e) = v.get_mut(i) {
        *e = x;
    }
}

/// Row `i` of a matrix, or the empty slice past the end.
#[inline]
pub(super) fn row<const N: usize>(rows: &[[f64; N]], i: usize) -> &[f64] {
    rows.get(i).map_or(&[], |r| r.as_slice())
}

/// Row `i` of a matrix mutably, or the empty slice past the end.
#[inline]
pub(super) fn row_mut<const N: usize>(rows: &mut [[f64; N]], i: usize) -> &mut [f64] {
    rows.get_mut(i).map_or(&mut [], |r| r.as_mut_slice())
}

/// The first `n` rows, or all of them.
#[inline]
pub(super) fn rows_head<const N: usize>(rows: &[[f64; N]], n: usize) -> &[[f64; N]] {
    rows.split_at(n.min(rows.len())).0
}

/// The first `n` rows mutably, or all of them.
#[inline]
pub(super) fn rows_head_mut<const N: usize>(rows: &mut [[f64; N]], n: usize) -> &mut [[f64; N]] {
    let n = n.min(rows.len());
    rows.split_at_mut(n).0
}

/// Rows `from..to`, clamped.
#[inline]
pub(super) fn rows_range<const N: usize>(rows: &[[f64; N]], from: usize, to: usize) -> &[[f64; N]] {
    let head = rows_head(rows, to);
    head.split_at(from.min(head.len())).1
}

/// Rows `from..to` mutably, clamped.
#[inline]
pub(super) fn rows_range_mut<const N: usize>(
    rows: &mut [[f64; N]],
    from: usize,
    to: usize,
) -> &mut [[f64; N]] {
    let head = rows_head_mut(rows, to);
    let from = from.min(head.len());
    head.split_at_mut(from).1
}

/// Inner product over the common length, with four accumulators.
#[inline]
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (head(a, n), head(b, n));
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, u), v) in acc.iter_mut().zip(x).zip(y) {
            *s += u * v;
        }
    }
    let mut tail_sum = 0.0;
    for (u, v) in ra.iter().zip(rb) {
        tail_sum += u * v;
    }
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail_sum
}

/// Where `x` is non-zero, to blocks of four: `(lo, hi)` with every entry outside `lo..hi`
/// zero, `lo` a multiple of four and `hi` one or `x.len()` (`(0, 0)` for a zero `x`; NaN
/// counts as non-zero). Looked for a block at a time, which compares four entries at once.
pub(super) fn nonzero_span(x: &[f64]) -> (usize, usize) {
    // (A zero's bits, sign left out, are all zero: one OR over the block's integers, the
    // whole blocks without a branch per entry, the partial one at the end apart.)
    let n = x.len();
    let whole = n - n % 4;
    let body = head(x, whole);
    let rest = x.get(whole..).unwrap_or(&[]);
    let any4 = |c: &[f64]| match c {
        [a, b, c, d] => ((a.to_bits() | b.to_bits() | c.to_bits() | d.to_bits()) << 1) != 0,
        _ => false,
    };
    let rest_any = rest.iter().any(|v| (v.to_bits() << 1) != 0);
    let first = match body.chunks_exact(4).position(any4) {
        Some(first) => first,
        None if rest_any => whole / 4,
        None => return (0, 0),
    };
    let last = if rest_any {
        whole / 4
    } else {
        body.chunks_exact(4).rposition(any4).unwrap_or(first)
    };
    (4 * first, (4 * (last + 1)).min(n))
}

/// [`dot`]`(a, b)` for an `a` that is zero outside `span` ([`nonzero_span`]), bit for bit, over
/// that span widened to [`dot`]'s blocks of four (each entry then lands in the same running
/// sum as in the whole product, and the rest would add products that are zero to sums that
/// are never −0: each starts at +0). Entries of `b` outside it are not looked at.
#[inline]
pub(super) fn dot_span(a: &[f64], b: &[f64], (lo, hi): (usize, usize)) -> f64 {
    let n = a.len().min(b.len());
    let hi = hi.min(n);
    if lo >= hi {
        return 0.0;
    }
    let whole = n - n % 4;
    let from = lo - lo % 4;
    let to = if hi > whole { n } else { hi.div_ceil(4) * 4 };
    dot(range(a, from, to), range(b, from, to))
}

/// `y += alpha x` over the common length.
#[inline]
pub(super) fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `x *= alpha`.
#[inline]
pub(super) fn scal(alpha: f64, x: &mut [f64]) {
    for xi in x.iter_mut() {
        *xi *= alpha;
    }
}

/// `y = x` over the common length.
#[inline]
pub(super) fn copy(x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = *xi;
    }
}

/// `max(a, b)` as one comparison (`b` if either is NaN): cheaper than `f64::max` in hot loops
/// over data checked finite.
#[inline]
pub(super) fn fmax(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// Largest magnitude (0 for the empty slice; NaN if any entry is NaN). Four running maxima,
/// combined at the end: the same value as one (a maximum does not round), without one long
/// chain of comparisons.
#[inline]
pub(super) fn norm_inf(x: &[f64]) -> f64 {
    let pick = |m: f64, a: f64| if a > m || a.is_nan() { a } else { m };
    let mut lanes = [0.0f64; 4];
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = pick(*l, v.abs());
        }
    }
    let m = lanes.iter().fold(0.0f64, |m, l| pick(m, *l));
    rest.iter().fold(m, |m, v| pick(m, v.abs()))
}

/// Largest magnitude of entries known not to be NaN (0 for the empty slice): [`norm_inf`]'s
/// value on such data, with plain comparisons that vectorise (`norm_inf` also looks for NaN).
/// For data already checked finite, such as the solver's scaled copy of the problem.
#[inline]
pub(super) fn max_abs(x: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = fmax(v.abs(), *l);
        }
    }
    let m = lanes.iter().fold(0.0f64, |m, l| fmax(*l, m));
    rest.iter().fold(m, |m, v| fmax(v.abs(), m))
}

/// Euclidean norm, scaled so that it does not overflow or underflow needlessly.
pub(super) fn norm2(x: &[f64]) -> f64 {
    let scale = norm_inf(x);
    if !(scale > 0.0) || !scale.is_finite() {
        return scale;
    }
    let inv = 1.0 / scale;
    let sum: f64 = x.iter().map(|v| (v * inv) * (v * inv)).sum();
    scale * libm::sqrt(sum)
}

/// Whether every entry is finite: the sum of the entries times zero, four running sums, is a
/// zero if they all are and NaN if any is not (`±∞ · 0` and `NaN · 0` are NaN), a multiply
/// and an add per entry that vectorise, without a branch per entry.
#[inline]
pub(super) fn all_finite(x: &[f64]) -> bool {
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    let mut acc = [0.0f64; 4];
    for c in chunks {
        for (s, v) in acc.iter_mut().zip(c) {
            *s += v * 0.0;
        }
    }
    let tail = rest.iter().fold(0.0f64, |s, v| s + v * 0.0);
    !((acc[0] + acc[1]) + (acc[2] + acc[3]) + tail).is_nan()
}

/// `out[i] = row_i · x` for the first `out.len()` rows.
pub(super) fn matvec<const N: usize>(rows: &[[f64; N]], cols: usize, x: &[f64], out: &mut [f64]) {
    let x = head(x, cols);
    for (o, r) in out.iter_mut().zip(rows) {
        *o = dot(head(r, cols), x);
    }
}

/// The lower triangle of the symmetric `p`'s block on the rows and columns `idx` into `dst`'s
/// leading rows; returns its largest diagonal entry.
pub(super) fn lower_block<const N: usize>(
    p: &[[f64; N]],
    idx: &[usize],
    dst: &mut [[f64; N]],
) -> f64 {
    let mut max_diag = 0.0f64;
    let run = run_start(idx);
    for (i, (drow, pi)) in rows_head_mut(dst, idx.len())
        .iter_mut()
        .zip(idx)
        .enumerate()
    {
        gather(row(p, *pi), idx, run, head_mut(drow, i + 1));
        max_diag = max_diag.max(at(drow, i));
    }
    max_diag
}

/// The first of `idx` if it is a run of consecutive indices (`k, k + 1, …`), over which
/// [`gather`] copies one slice; `None` for an empty `idx` or any other.
pub(super) fn run_start(idx: &[usize]) -> Option<usize> {
    let first = *idx.first()?;
    let consecutive = idx
        .iter()
        .enumerate()
        .all(|(i, v)| first.checked_add(i) == Some(*v));
    consecutive.then_some(first)
}

/// `dst[k] = src[idx[k]]` (0 past `src`'s end) for `k` below both lengths: one slice copied
/// where `idx` is a run from `run` ([`run_start`]), the same values.
pub(super) fn gather(src: &[f64], idx: &[usize], run: Option<usize>, dst: &mut [f64]) {
    let len = dst.len().min(idx.len());
    if let Some(slice) = run.and_then(|k0| src.get(k0..k0.checked_add(len)?)) {
        head_mut(dst, len).copy_from_slice(slice);
        return;
    }
    for (d, j) in dst.iter_mut().zip(idx) {
        *d = at(src, *j);
    }
}

/// In-place Cholesky factorisation `S = L Lᵀ` of the leading `n × n` block, reading and writing
/// the lower triangle only (row `i`, columns `..=i`). A pivot that is not above `floor` (including
/// NaN) is replaced by `replacement` and counted. Returns the count and the smallest pivot met
/// (before replacement; NaN counts as −∞). The factor's diagonal holds `L_ii` itself.
///
/// Right-looking by panels of four columns: each panel is factored in place, copied transposed
/// into a scratch of four rows, and subtracted from the trailing rows as one rank-4 update per
/// row (contiguous, four products per entry loaded).
pub(super) fn cholesky<const N: usize>(
    rows: &mut [[f64; N]],
    n: usize,
    floor: f64,
    replacement: f64,
) -> (usize, f64) {
    let mut replaced = 0;
    let mut min_pivot = f64::INFINITY;
    let rows = rows_head_mut(rows, n);
    let n = rows.len();
    let mut panel = [[0.0f64; N]; 4];
    let mut kb = 0;
    while kb < n {
        let ke = (kb + 4).min(n);
        // The diagonal block, row by row (at most 4 × 4).
        for i in kb..ke {
            let (done, rest) = rows.split_at_mut(i);
            let Some(row_i) = rest.first_mut() else {
                break;
            };
            for j in kb..i {
                let row_j = row(done, j);
                let mut s = at(row_i, j);
                for t in kb..j {
                    s -= at(row_i, t) * at(row_j, t);
                }
                let d = at(row_j, j);
                put(row_i, j, if d > 0.0 { s / d } else { 0.0 });
            }
            let mut d = at(row_i, i);
            for t in kb..i {
                let v = at(row_i, t);
                d -= v * v;
            }
            min_pivot = if d.is_nan() {
                f64::NEG_INFINITY
            } else {
                min_pivot.min(d)
            };
            let d = if d > floor && d.is_finite() {
                d
            } else {
                replaced += 1;
                replacement
            };
            put(row_i, i, libm::sqrt(d));
        }
        if ke >= n {
            break;
        }
        // Below it (the block is a full 4 wide here): each row's four panel entries by
        // substitution, kept transposed in `panel`, then the row's rank-4 update from the rows
        // of the panel above it.
        let blk = |i: usize, j: usize| at(row(rows, kb + i), kb + j);
        let inv = |i: usize| {
            let d = blk(i, i);
            if d > 0.0 { 1.0 / d } else { 0.0 }
        };
        let (l10, l20, l21, l30, l31, l32) = (
            blk(1, 0),
            blk(2, 0),
            blk(2, 1),
            blk(3, 0),
            blk(3, 1),
            blk(3, 2),
        );
        let (i0, i1, i2, i3) = (inv(0), inv(1), inv(2), inv(3));
        for (i, row_i) in rows.iter_mut().enumerate().skip(ke) {
            let seg = range_mut(row_i, kb, ke);
            let Some((x0, x1, x2, x3)) = (match seg {
                [a0, a1, a2, a3] => Some((a0, a1, a2, a3)),
                _ => None,
            }) else {
                continue;
            };
            *x0 *= i0;
            *x1 = (*x1 - *x0 * l10) * i1;
            *x2 = (*x2 - *x0 * l20 - *x1 * l21) * i2;
            *x3 = (*x3 - *x0 * l30 - *x1 * l31 - *x2 * l32) * i3;
            let c = [*x0, *x1, *x2, *x3];
            for (p, v) in panel.iter_mut().zip(c) {
                put(p, i, v);
            }
            if c == [0.0; 4] {
                // Nothing to subtract (a zero block of a sparse matrix).
                continue;
            }
            let [p0, p1, p2, p3] = &panel;
            let seg = range_mut(row_i, ke, i + 1);
            for ((((x, a0), a1), a2), a3) in seg
                .iter_mut()
                .zip(range(p0, ke, i + 1))
                .zip(range(p1, ke, i + 1))
                .zip(range(p2, ke, i + 1))
                .zip(range(p3, ke, i + 1))
            {
                *x -= (c[0] * a0 + c[1] * a1) + (c[2] * a2 + c[3] * a3);
            }
        }
        kb = ke;
    }
    (replaced, min_pivot)
}

/// Solves `L Lᵀ x = b` in place with the factor from [`cholesky`].
pub(super) fn cholesky_solve<const N: usize>(rows: &[[f64; N]], n: usize, b: &mut [f64]) {
    forward_substitute(rows, n, b);
    back_substitute_transposed(rows, n, b);
}

/// Solves `L y = b` in place (`L` the leading `n × n` lower triangle, from [`cholesky`]).
/// Each step multiplies by the pivot's reciprocal, which does not wait on the steps before
/// (a division would, and sits on the chain of dependent steps).
pub(super) fn forward_substitute<const N: usize>(rows: &[[f64; N]], n: usize, b: &mut [f64]) {
    for (i, r) in rows_head(rows, n).iter().enumerate() {
        let inv = 1.0 / at(r, i);
        let v = (at(b, i) - dot(head(r, i), head(b, i))) * inv;
        put(b, i, v);
    }
}

/// Solves `Lᵀ x = y` in place (`L` the leading `n × n` lower triangle, from [`cholesky`]),
/// multiplying by the pivots' reciprocals as [`forward_substitute`] does.
pub(super) fn back_substitute_transposed<const N: usize>(
    rows: &[[f64; N]],
    n: usize,
    b: &mut [f64],
) {
    for (i, r) in rows_head(rows, n).iter().enumerate().rev() {
        let xi = at(b, i) * (1.0 / at(r, i));
        put(b, i, xi);
        axpy(-xi, head(r, i), head_mut(b, i));
    }
}

/// Householder reflector `H = I − τ u uᵀ` with `u₀ = 1` such that `H x = (β, 0, …)`. `x` is
/// overwritten with `u`; returns `(τ, β)`. For `x` whose tail is zero, `τ = 0` (H = I).
pub(super) fn householder(x: &mut [f64]) -> (f64, f64) {
    let Some((first, rest)) = x.split_first_mut() else {
        return (0.0, 0.0);
    };
    let alpha = *first;
    let xnorm = norm2(rest);
    if !(xnorm > 0.0) {
        *first = 1.0;
        return (0.0, alpha);
    }
    let norm = libm::hypot(alpha, xnorm);
    let beta = if alpha >= 0.0 { -norm } else { norm };
    let tau = (beta - alpha) / beta;
    scal(1.0 / (alpha - beta), rest);
    *first = 1.0;
    (tau, beta)
}

/// Applies `H = I − τ u uᵀ` to `v` (same length as `u`).
#[inline]
pub(super) fn apply_householder(u: &[f64], tau: f64, v: &mut [f64]) {
    if tau == 0.0 {
        return;
    }
    let t = tau * dot(u, v);
    axpy(-t, u, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_small_system() {
        let mut s = [[4.0, 0.0, 0.0], [2.0, 5.0, 0.0], [0.4, 1.0, 3.0]];
        let full = [[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]];
        assert_eq!(cholesky(&mut s, 3, 0.0, 1.0).0, 0);
        let mut b = [1.0, 2.0, 3.0];
        cholesky_solve(&s, 3, &mut b);
        for (r, want) in full.iter().zip([1.0, 2.0, 3.0]) {
            assert!((dot(r, &b) - want).abs() < 1e-12);
        }
    }

    /// The textbook (dot-product) Cholesky factor of the leading `n × n` lower triangle.
    #[allow(clippy::needless_range_loop)] // indices are the matrix's
    fn textbook_cholesky<const N: usize>(mut l: [[f64; N]; N], n: usize) -> [[f64; N]; N] {
        for i in 0..n {
            for j in 0..=i {
                let v = l[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
                l[i][j] = if i == j { v.sqrt() } else { v / l[j][j] };
            }
        }
        l
    }

    /// The panel factorisation against the textbook one on matrices of every size up to 13
    /// (every remainder of the panels), one with a pivot replaced.
    #[test]
    fn cholesky_matches_the_textbook_factor() {
        for n in 1..=13 {
            let b: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| ((i * 7 + j * 3) as f64 * 0.37).sin())
                        .collect()
                })
                .collect();
            let mut s = [[0.0f64; 13]; 13];
            for i in 0..n {
                for j in 0..=i {
                    s[i][j] = (0..n).map(|k| b[i][k] * b[j][k]).sum::<f64>()
                        + if i == j { 0.5 } else { 0.0 };
                }
            }
            let want = textbook_cholesky(s, n);
            let mut got = s;
            assert_eq!(cholesky(&mut got, n, 0.0, 1.0).0, 0);
            for i in 0..n {
                for j in 0..=i {
                    assert!((got[i][j] - want[i][j]).abs() < 1e-12, "n {n}: L[{i}][{j}]");
                }
            }
        }
        // A singular matrix: the second pivot (0) is replaced, and counted.
        let mut s = [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]];
        let (replaced, min_pivot) = cholesky(&mut s, 3, 1e-12, 4.0);
        assert_eq!(replaced, 1);
        assert!(min_pivot.abs() < 1e-15);
        assert_eq!(s[1][1], 2.0);
    }

    /// A block-diagonal matrix (the rows below a panel all zero in its columns: the rank-4
    /// updates are skipped) factors as the textbook does, and as its blocks do apart.
    #[test]
    #[allow(clippy::needless_range_loop)] // indices are the matrix's
    fn cholesky_skips_zero_blocks_exactly() {
        const N: usize = 11;
        let mut s = [[0.0f64; N]; N];
        let block = |i: usize| if i < 6 { 0 } else { 1 };
        for i in 0..N {
            for j in 0..=i {
                if block(i) == block(j) {
                    s[i][j] = ((i * 5 + j * 3) as f64 * 0.41).cos() * 0.3;
                }
            }
            s[i][i] = 3.0 + i as f64 * 0.1;
        }
        let want = textbook_cholesky(s, N);
        let mut got = s;
        assert_eq!(cholesky(&mut got, N, 0.0, 1.0).0, 0);
        for i in 0..N {
            for j in 0..=i {
                assert!((got[i][j] - want[i][j]).abs() < 1e-13, "L[{i}][{j}]");
                if block(i) != block(j) {
                    assert_eq!(got[i][j], 0.0, "L[{i}][{j}] across the blocks");
                }
            }
        }
    }

    /// A product over the non-zero span is the whole product, bit for bit, wherever the span
    /// starts and ends (within and across blocks of four, into the remainder) and whatever the
    /// signs of the zeros outside it.
    #[test]
    fn a_product_over_the_non_zero_span_is_the_whole_product() {
        for n in 0..14 {
            for lo in 0..=n {
                for hi in lo..=n {
                    for signed in [false, true] {
                        let zero = if signed { -0.0 } else { 0.0 };
                        let a: Vec<f64> = (0..n)
                            .map(|i| {
                                if (lo..hi).contains(&i) {
                                    ((i * 7 + 3) as f64 * 0.37).sin() * 1e3
                                } else {
                                    zero
                                }
                            })
                            .collect();
                        let b: Vec<f64> =
                            (0..n).map(|i| ((i * 5 + 1) as f64 * 0.91).cos()).collect();
                        let span = nonzero_span(&a);
                        if lo < hi {
                            assert_eq!(span.0, lo - lo % 4, "{span:?} {lo} {hi}");
                            assert_eq!(span.1, (hi.div_ceil(4) * 4).min(n), "{span:?} {lo} {hi}");
                        } else {
                            assert_eq!(span, (0, 0));
                        }
                        let whole = dot(&a, &b);
                        let part = dot_span(&a, &b, span);
                        assert_eq!(part.to_bits(), whole.to_bits(), "n {n} span {lo}..{hi}");
                        // A wider span than the non-zero one gives the same too.
                        let wide = dot_span(&a, &b, (lo.saturating_sub(1), (hi + 1).min(n)));
                        assert_eq!(wide.to_bits(), whole.to_bits(), "n {n} wide {lo}..{hi}");
                    }
                }
            }
        }
    }

    /// The span is the blocks of four from the first entry that is not ±0 to the last (NaN
    /// and ±∞ count), for every pattern of zeros, signed zeros, numbers and NaN up to ten
    /// entries.
    #[test]
    fn the_span_is_the_first_to_the_last_non_zero_block() {
        let values = [0.0, -0.0, 2.5, f64::NAN];
        for n in 0..=10usize {
            for code in 0..4usize.pow(n as u32) {
                let x: Vec<f64> = (0..n)
                    .map(|i| values[(code / 4usize.pow(i as u32)) % 4])
                    .collect();
                let nz = |v: &f64| *v != 0.0 || v.is_nan();
                let want = match (x.iter().position(nz), x.iter().rposition(nz)) {
                    (Some(f), Some(l)) => (f - f % 4, (l / 4 * 4 + 4).min(n)),
                    _ => (0, 0),
                };
                assert_eq!(nonzero_span(&x), want, "{x:?}");
            }
        }
    }

    /// A run of consecutive indices is found as one (and nothing else is), and the gather
    /// over it copies the same values as the one-at-a-time gather, signed zeros included, past
    /// the source's end too.
    #[test]
    fn a_gather_over_a_run_is_the_plain_gather() {
        assert_eq!(run_start(&[]), None);
        assert_eq!(run_start(&[3]), Some(3));
        assert_eq!(run_start(&[3, 4, 5]), Some(3));
        assert_eq!(run_start(&[3, 5, 6]), None);
        assert_eq!(run_start(&[4, 3]), None);
        assert_eq!(run_start(&[usize::MAX, 0]), None);
        let src: Vec<f64> = (0..12)
            .map(|i| if i % 5 == 0 { -0.0 } else { i as f64 * 1.5 })
            .collect();
        let plain = |idx: &[usize], len: usize| -> Vec<u64> {
            (0..len).map(|k| at(&src, idx[k]).to_bits()).collect()
        };
        for idx in [
            vec![0, 1, 2, 3],
            vec![5, 6, 7],
            vec![9, 10, 11, 12, 13],
            vec![2, 4, 6],
            vec![11, 10],
        ] {
            for len in 0..=idx.len() + 1 {
                let mut dst = vec![f64::NAN; len];
                gather(&src, &idx, run_start(&idx), &mut dst);
                let n = len.min(idx.len());
                let got: Vec<u64> = dst[..n].iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, plain(&idx, n), "{idx:?} {len}");
                assert!(dst[n..].iter().all(|v| v.is_nan()), "{idx:?} {len}");
            }
        }
    }

    /// The four-lane maximum and finiteness test agree with the one-at-a-time ones wherever
    /// the NaN, the infinity or the largest entry sits (every lane and the remainder).
    #[test]
    fn lane_reductions_match_the_plain_ones() {
        for len in 0..11 {
            for at_i in 0..len {
                for special in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, -7.5] {
                    let mut v: Vec<f64> = (0..len).map(|i| (i as f64 * 0.7).sin()).collect();
                    v[at_i] = special;
                    let plain = v.iter().fold(0.0f64, |m, x| {
                        let a = x.abs();
                        if a > m || a.is_nan() { a } else { m }
                    });
                    let got = norm_inf(&v);
                    assert!(got == plain || (got.is_nan() && plain.is_nan()), "{v:?}");
                    assert_eq!(all_finite(&v), v.iter().all(|x| x.is_finite()), "{v:?}");
                    if !special.is_nan() {
                        assert_eq!(max_abs(&v).to_bits(), plain.to_bits(), "{v:?}");
                    }
                }
            }
        }
        assert_eq!(norm_inf(&[]), 0.0);
        assert!(all_finite(&[]));
    }

    #[test]
    fn householder_zeroes_the_tail() {
        let x0 = [3.0, 1.0, -2.0, 0.5];
        let mut u = x0;
        let (tau, beta) = householder(&mut u);
        let mut v = x0;
        apply_householder(&u, tau, &mut v);
        assert!((v[0] - beta).abs() < 1e-12);
        assert!(v[1..].iter().all(|e| e.abs() < 1e-12));
        assert!((beta.abs() - norm2(&x0)).abs() < 1e-12);
    }

    #[test]
    fn dot_matches_a_plain_sum() {
        let a: [f64; 7] = core::array::from_fn(|i| i as f64 + 0.5);
        let b: [f64; 7] = core::array::from_fn(|i| 2.0 - i as f64);
        let want: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - want).abs() < 1e-12);
        assert_eq!(norm2(&[3.0, 4.0]), 5.0);
    }
}
