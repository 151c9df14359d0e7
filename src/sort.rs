//! Stable sorting through one small merge sort of its own. Each `slice::sort_by` over
//! a new element type adds its own copy of the standard library's sort (about 3 KB of
//! wasm, and one copy alone is about 1.5 KB gzipped); here every caller sorts a list of
//! indices with a `dyn` comparator, then moves the elements into that order. The result
//! is exactly that of `sort_by` with the same comparator (both are stable).

use std::cmp::Ordering;

/// Sorts `v` stably by `cmp`, like `v.sort_by(cmp)`.
pub(crate) fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = stable_order(v.len(), &|a, b| cmp(&v[a], &v[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(v).into_iter().map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// Sorts `v` stably by its natural order, like `v.sort()`.
pub(crate) fn sort<T: Ord>(v: &mut Vec<T>) {
    sort_by(v, T::cmp);
}

/// The indices `0..n` in stable sorted order under `cmp`: a bottom-up merge sort
/// (a few hundred bytes of wasm, where the standard library's driftsort costs about
/// 3.5 KB). Runs already in order are copied without merging, so sorted input costs
/// `n` comparisons per pass.
#[inline(never)]
fn stable_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut merged: Vec<usize> = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            if mid == end || cmp(order[mid - 1], order[mid]) != Ordering::Greater {
                merged[start..end].copy_from_slice(&order[start..end]);
            } else {
                let (mut i, mut j) = (start, mid);
                for slot in &mut merged[start..end] {
                    // Equal elements keep their order: the left run's first.
                    if j == end || (i < mid && cmp(order[i], order[j]) != Ordering::Greater) {
                        *slot = order[i];
                        i += 1;
                    } else {
                        *slot = order[j];
                        j += 1;
                    }
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_stable_sort() {
        let mut seed = 7u64;
        for len in 0..60 {
            let mut v: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((seed >> 60) as u8, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|a| a.0);
            sort_by(&mut v, |a, b| a.0.cmp(&b.0));
            assert_eq!(v, want);
        }
        // Longer inputs: random with repeats, already sorted, reversed, sawtooth.
        for len in [61, 64, 100, 257, 1000] {
            let inputs: [Vec<(u8, usize)>; 4] = [
                (0..len)
                    .map(|i| {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        ((seed >> 58) as u8, i)
                    })
                    .collect(),
                (0..len).map(|i| ((i / 3) as u8, i)).collect(),
                (0..len).map(|i| (255 - (i / 5) as u8, i)).collect(),
                (0..len).map(|i| ((i % 7) as u8, i)).collect(),
            ];
            for mut v in inputs {
                let mut want = v.clone();
                want.sort_by_key(|a| a.0);
                sort_by(&mut v, |a, b| a.0.cmp(&b.0));
                assert_eq!(v, want);
            }
        }
        let mut s = vec!["b".to_string(), "a".into(), "c".into(), "a".into()];
        sort(&mut s);
        assert_eq!(s, ["a", "a", "b", "c"]);
    }
}
