//! A group's status ([`crate::core::group`]) over any [`Store`]: a free function over
//! the store's own `get` (one per member), not a trait method, so every backend has it
//! with no code of its own and the `.wasm` has one copy. The enqueue of a group is one
//! [`Store::enqueue_many`] of [`crate::core::group_plans`]: all or nothing; `cancel` and
//! `retry` per group are the store's `cancel` and `retry` of each member (the package's
//! `cancelGroup` and `retryGroup`, `js/groups.js`).

use crate::core::group::{member_id, GroupStatus, MAX_GROUP_SIZE};
use crate::core::plan::validate_item_id;
use crate::core::Record;

use super::{Store, StoreError};

/// The group `id` and its members as stored, or `None` when no member of it is
/// stored. Its size is read from the first member found (member ids are `id:0`,
/// `id:1`, …); a group none of whose members is stored any more (purged) is not
/// found, and looking for one that does not exist reads every possible member id
/// ([`MAX_GROUP_SIZE`] `get`s).
pub async fn status<S: Store>(store: &S, id: &str) -> Result<Option<GroupStatus>, StoreError> {
    validate_item_id(id)?;
    let mut members: Vec<Option<Record>> = Vec::new();
    let mut size = None;
    let mut index = 0;
    while index < size.unwrap_or(MAX_GROUP_SIZE) {
        let record = store.get(&member_id(id, index)).await?;
        if size.is_none() {
            size = record
                .as_ref()
                .and_then(Record::group)
                .filter(|g| g.id == id && g.index == index)
                .map(|g| g.size);
        }
        members.push(record);
        index += 1;
    }
    if size.is_none() {
        return Ok(None);
    }
    Ok(GroupStatus::of(id, members))
}
