//! Stable sorting through one shared instantiation of the standard library's stable
//! sort. Each `slice::sort_by` over a new element type adds its own copy of the sort
//! (about 3 KB of wasm); here every caller sorts a list of indices with a `dyn`
//! comparator, then moves the elements into that order. The result is exactly that of
//! `sort_by` with the same comparator (both are stable).

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

/// The indices `0..n` in stable sorted order under `cmp`.
#[inline(never)]
fn stable_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
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
        let mut s = vec!["b".to_string(), "a".into(), "c".into(), "a".into()];
        sort(&mut s);
        assert_eq!(s, ["a", "a", "b", "c"]);
    }
}
