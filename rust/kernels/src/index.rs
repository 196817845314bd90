//! Row accumulation at indices: the gradient of embedding and of indexing along the first dim.

use std::ops::AddAssign;

/// `target[index[i]] += values[i]` for each row i in order, rows `row` elements long: NumPy's
/// `add.at` over the first axis, in its order (so the same bits when an index repeats) without
/// its per-element dispatch. A negative index counts from the end, as in NumPy. Returns false
/// with nothing written when an index is out of range (the caller lets NumPy raise).
///
/// # Panics
/// If `row` is 0, `values` is not `index.len()` rows, or `target` is not whole rows.
pub fn index_add_rows<T: Copy + AddAssign>(
    target: &mut [T],
    index: &[i64],
    values: &[T],
    row: usize,
) -> bool {
    assert!(
        row > 0 && values.len() == index.len() * row && target.len().is_multiple_of(row),
        "index_add_rows: {} values are not {} rows of {row}, or {} targets not whole rows",
        values.len(),
        index.len(),
        target.len()
    );
    let rows = (target.len() / row) as i64;
    let at = |i: i64| if i < 0 { i + rows } else { i };
    if index.iter().any(|&i| !(0..rows).contains(&at(i))) {
        return false;
    }
    for (&i, v) in index.iter().zip(values.chunks_exact(row)) {
        let start = at(i) as usize * row;
        for (t, &x) in target[start..start + row].iter_mut().zip(v) {
            *t += x;
        }
    }
    true
}
