//! Groups: several records enqueued and reported as one unit, e.g. the gift wraps of
//! one NIP-17 message to N recipients plus the copy to self. Each member is a record of
//! its own (its event sent byte for byte, its own targets, policy and evidence); what
//! makes them a group is their ids, derived from the group's (member `i` of group `g` is
//! the item `g:i`, [`member_id`]), and the group's size, stored in each member
//! ([`super::Plan::group_size`]): its [`GroupRef`] is read from the two. So a group is
//! found from its id with one `get` per member, on every store, with no index of its
//! own; and an enqueue of the group is one all-or-nothing `enqueue_many`.
//!
//! [`group_plans`] makes the members' plans. A group's status ("delivered to 3 of 4"),
//! its `cancel` and `retry` are the package's JavaScript (`js/groups.js`), over the
//! store's `get`, `cancel` and `retry` of each member: in the `.wasm` the status
//! measured 2 002 B gzipped (2 008 B in the edge build).

use serde::Serialize;

use super::error::CoreError;
use super::plan::{validate_item_id, Plan};

/// The most members one group may have.
pub const MAX_GROUP_SIZE: u32 = 256; // also in `GroupRef::of`'s message

/// A record's place in its group, read from its item id (`<id>:<index>`) and its
/// stored group size ([`GroupRef::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GroupRef<'a> {
    /// The group id (an item id; the members' ids are `id:index`).
    pub id: &'a str,
    /// This member's index, `0..size`.
    pub index: u32,
    /// How many members the group has.
    pub size: u32,
}

impl<'a> GroupRef<'a> {
    /// The place of the item `item_id` in a group of `size`: its id split at its last
    /// `:`, the index after it. `invalid_argument` (`group`) when the id is not a member
    /// id (`<group>:<index>`, the index in decimal without leading zeros, below `size`)
    /// or the size is not 1..=[`MAX_GROUP_SIZE`].
    pub fn of(item_id: &'a str, size: u32) -> Result<GroupRef<'a>, CoreError> {
        let bad = || {
            CoreError::arg(
                "group",
                "a member of a group (1..=256) has the id `<group>:<index>`, its index below the size",
            )
        };
        // The last `:` (an ASCII byte: the split is on a character boundary); none
        // leaves an empty group id, refused below.
        let colon = item_id.bytes().rposition(|b| b == b':').unwrap_or(0);
        let (id, digits) = item_id.split_at(colon);
        let digits = &digits.as_bytes()[digits.len().min(1)..];
        // Decimal, no sign, no leading zero (one id per place), at most 3 digits (below
        // 256): read by hand, not formatted back to compare.
        let decimal = matches!(digits.len(), 1..=3)
            && digits.iter().all(u8::is_ascii_digit)
            && (digits[0] != b'0' || digits.len() == 1);
        let index = match decimal {
            true => digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')),
            false => u32::MAX,
        };
        if id.is_empty() || size == 0 || size > MAX_GROUP_SIZE || index >= size {
            return Err(bad());
        }
        Ok(GroupRef { id, index, size })
    }
}

/// The item id of member `index` of group `group`: `group:index`.
pub fn member_id(group: &str, index: u32) -> String {
    format!("{group}:{index}")
}

/// The plans of a group's members, in order: each gets its member id and the group's
/// size (its [`GroupRef`] is read from the two). A member id that is not a valid item id (a group id too long for its
/// indexes) is `invalid_item_id`; an empty or too large group is `invalid_argument`
/// (`group`). Everything else is checked when the plans are normalized.
pub fn group_plans(group: &str, plans: Vec<Plan>) -> Result<Vec<Plan>, CoreError> {
    let size = u32::try_from(plans.len())
        .ok()
        .filter(|n| (1..=MAX_GROUP_SIZE).contains(n))
        .ok_or_else(|| {
            CoreError::arg("group", format!("must have 1..={MAX_GROUP_SIZE} members"))
        })?;
    validate_item_id(group)?;
    let mut out = Vec::with_capacity(plans.len());
    for (index, plan) in (0..size).zip(plans) {
        let id = member_id(group, index);
        validate_item_id(&id)?;
        let mut plan = plan.with_id(id);
        plan.group_size = Some(size);
        out.push(plan);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{new_record, Policy, Record};
    use crate::store::conformance::fixture_plan;

    const RELAYS: [&str; 1] = ["wss://a.example"];

    fn members(n: u32) -> Vec<Record> {
        let plans = (1..=n)
            .map(|i| fixture_plan(i, &RELAYS, Policy::All))
            .collect();
        group_plans("dm-1", plans)
            .unwrap()
            .into_iter()
            .map(|p| {
                let p = p.normalize().unwrap();
                let digest = p.digest();
                new_record(p, digest, 10)
            })
            .collect()
    }

    #[test]
    fn members_get_derived_ids_and_their_place() {
        let m = members(3);
        let ids: Vec<&str> = m.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["dm-1:0", "dm-1:1", "dm-1:2"]);
        for (i, r) in m.iter().enumerate() {
            let g = r.group().unwrap();
            assert_eq!((g.id, g.index, g.size), ("dm-1", i as u32, 3));
        }
        // Read from the id: split at the last `:`.
        let g = GroupRef::of("a:b:2", 3).unwrap();
        assert_eq!((g.id, g.index, g.size), ("a:b", 2, 3));
        for (id, size) in [
            ("a", 1),
            ("a:1", 1),
            (":0", 1),
            ("a:01", 2),
            ("a:+1", 2),
            ("a:x", 1),
            ("a:0", 0),
            ("a:0", MAX_GROUP_SIZE + 1),
        ] {
            assert!(GroupRef::of(id, size).is_err(), "{id} of {size}");
        }
    }

    #[test]
    fn bad_groups_are_refused() {
        let plan = || fixture_plan(1, &RELAYS, Policy::All);
        assert_eq!(
            group_plans("g", vec![]).unwrap_err().code(),
            "invalid_argument"
        );
        let big = (0..=MAX_GROUP_SIZE).map(|_| plan()).collect();
        assert_eq!(
            group_plans("g", big).unwrap_err().code(),
            "invalid_argument"
        );
        assert_eq!(
            group_plans("bad id", vec![plan()]).unwrap_err().code(),
            "invalid_item_id"
        );
        let long = "g".repeat(127);
        assert_eq!(
            group_plans(&long, vec![plan()]).unwrap_err().code(),
            "invalid_item_id"
        );
        // A plan whose id is not its member id does not normalize.
        let mut p = group_plans("g", vec![plan()])
            .unwrap()
            .remove(0)
            .with_id("g:1");
        assert_eq!(
            p.clone().normalize().unwrap_err().code(),
            "invalid_argument"
        );
        p = p.with_id("g:0");
        assert!(p.normalize().is_ok());
    }
}
