//! One sort for the whole crate. Each distinct `sort`/`sort_by` call site over another
//! element type or closure type is a copy of the standard library's sort in the `.wasm`
//! (about 3 KB raw each, twiggy): the crate had three (records by a [`RecordOrder`],
//! strings, positions). Every sort now goes through [`sorted_by`], one stable sort of
//! positions by a comparison given as a trait object; the others permute by its answer.

use std::cmp::Ordering;

use super::record::{Record, RecordOrder};

/// The positions `0..len` in ascending order of `cmp` (stable: equal elements keep
/// their order).
pub fn sorted_by(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Sorts `items` by `cmp` (stable) through [`sorted_by`]: only the small permutation is
/// generic.
pub fn sort_with<T>(items: &mut Vec<T>, cmp: &dyn Fn(&T, &T) -> Ordering) {
    let order = sorted_by(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// Sorts strings ascending (stable) and drops repeats.
pub fn sort_dedup(strings: &mut Vec<String>) {
    sort_with(strings, &|a, b| a.cmp(b));
    strings.dedup();
}

/// Sorts records by `order` ([`super::claim_order`] or [`super::list_order`]), stable.
pub fn sort_records(records: &mut Vec<&Record>, order: RecordOrder) {
    sort_with(records, &|a, b| order(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_and_dedups() {
        let mut s: Vec<String> = ["b", "a", "c", "a", "b"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        sort_dedup(&mut s);
        assert_eq!(s, ["a", "b", "c"]);
        let keys = [3, 1, 2, 1];
        assert_eq!(sorted_by(4, &|a, b| keys[a].cmp(&keys[b])), [1, 3, 2, 0]);
        let mut empty: Vec<String> = Vec::new();
        sort_dedup(&mut empty);
        assert!(empty.is_empty());
    }
}
