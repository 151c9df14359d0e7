//! A group's operations ([`crate::core::group`]) over any [`Store`]: its status, and
//! `cancel` and `retry` of every member. Free functions over the store's own operations
//! (one `get` per member, one `cancel` or `retry` per member, each atomic), not trait
//! methods, so every backend has them with no code of its own and the `.wasm` has one
//! copy. The enqueue of a group is one [`Store::enqueue_many`] of
//! [`crate::core::group_plans`]: all or nothing.

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
                .and_then(|r| r.group.as_ref())
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

/// Applies `op` (`cancel` or `retry`, chosen by `cancel`) to every member that it
/// applies to, one by one; a member that changed meanwhile so that it no longer does
/// (an item error: it became terminal, its deadline passed) stays as it is. Answers
/// the records it changed and the group's status after; `None` for no such group.
pub async fn apply<S: Store>(
    store: &S,
    id: &str,
    cancel: bool,
    now_ms: u64,
) -> Result<Option<(Vec<Record>, GroupStatus)>, StoreError> {
    let Some(before) = status(store, id).await? else {
        return Ok(None);
    };
    let ids: Vec<String> = if cancel {
        before.cancellable().map(str::to_string).collect()
    } else {
        before.retryable().map(str::to_string).collect()
    };
    let mut changed = Vec::with_capacity(ids.len());
    for member in &ids {
        let result = if cancel {
            store.cancel(member, now_ms).await
        } else {
            store.retry(member, now_ms).await
        };
        match result {
            Ok(record) => changed.push(record),
            Err(e) if e.is_item_error() => {}
            Err(e) => return Err(e),
        }
    }
    // Each member as it is now: as changed here, or as read.
    let members = before
        .members
        .into_iter()
        .map(|m| m.map(|r| changed.iter().find(|c| c.id == r.id).cloned().unwrap_or(r)))
        .collect();
    Ok(GroupStatus::of(id, members).map(|after| (changed, after)))
}
