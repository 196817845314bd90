//! `index_add_rows` against the sequential definition NumPy's `add.at` follows: each row added
//! in index order, so repeated indices accumulate in that order (bit for bit); negative indices
//! count from the end; an out-of-range index writes nothing.

use proptest::prelude::*;
use rustgrad_kernels::index_add_rows;

fn reference(target: &[f32], index: &[i64], values: &[f32], row: usize) -> Vec<f32> {
    let mut out = target.to_vec();
    let rows = (target.len() / row) as i64;
    for (k, &i) in index.iter().enumerate() {
        let r = if i < 0 { i + rows } else { i } as usize;
        for j in 0..row {
            out[r * row + j] += values[k * row + j];
        }
    }
    out
}

proptest! {
    #[test]
    fn matches_the_sequential_sum(
        rows in 1usize..6,
        row in 1usize..5,
        picks in prop::collection::vec(-6i64..6, 0..12),
        seed in prop::collection::vec(-1e3f32..1e3, 64),
    ) {
        // a pick p < 0 becomes a negative index, counting from the end
        let n = rows as i64;
        let index: Vec<i64> = picks.iter().map(|&p| if p < 0 { p.rem_euclid(n) - n } else { p % n }).collect();
        let target: Vec<f32> = (0..rows * row).map(|k| seed[k % seed.len()]).collect();
        let values: Vec<f32> = (0..index.len() * row).map(|k| seed[(7 * k + 3) % seed.len()] * 1e-3).collect();
        let want = reference(&target, &index, &values, row);
        let mut got = target.clone();
        prop_assert!(index_add_rows(&mut got, &index, &values, row));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&got), bits(&want));
    }
}

#[test]
fn an_out_of_range_index_writes_nothing() {
    let mut t = vec![1.0f64; 6];
    assert!(!index_add_rows(&mut t, &[0, 3], &[1.0; 4], 2));
    assert!(!index_add_rows(&mut t, &[-4], &[1.0; 2], 2));
    assert_eq!(t, vec![1.0; 6]);
    assert!(index_add_rows(
        &mut t,
        &[-3, 2, 2],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        2
    ));
    assert_eq!(t, vec![2.0, 3.0, 1.0, 1.0, 9.0, 11.0]);
}

#[test]
#[should_panic(expected = "index_add_rows")]
fn values_of_the_wrong_length_panic() {
    index_add_rows(&mut [0.0f32; 4], &[0], &[1.0; 3], 2);
}
