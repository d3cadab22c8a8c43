//! Which coordinator may write a group's committed offsets. A lease bounds when a
//! gateway sends a commit as the group's coordinator, not when the write lands: a link
//! to the store that holds it delivers it after another gateway took the group over and
//! stored later offsets, and written as it was sent it would move them back.
//!
//! So the coordinator that loads a group claims it with a token of its own, entry
//! `~<group>` of table `offsets` (no offset key starts with `~`), in a write that
//! expects the token it read; every commit it forwards then expects its token there.
//! A claim by another gateway, or by this one after its view lapsed, changes the token,
//! and a commit still on its way when that happened lands refused.

use bytes::Bytes;
use uuid::Uuid;

use super::table::TABLE;
use crate::store::meta::{Change, Expect};
use crate::store::{Meta, StoreResult};

/// A claim's token: the one every commit of the group made under that claim expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence(Bytes);

impl Fence {
    /// A token no other claim has.
    pub fn new() -> Fence {
        Fence(Bytes::copy_from_slice(Uuid::new_v4().as_bytes()))
    }

    /// What a commit of `group` made under this claim expects.
    pub fn expect(&self, group: &str) -> Expect {
        Expect {
            key: key(group),
            value: Some(self.0.clone()),
        }
    }
}

impl Default for Fence {
    fn default() -> Self {
        Fence::new()
    }
}

fn key(group: &str) -> String {
    format!("~{group}")
}

/// Claims `groups` with `fence`, in one write that expects the tokens read first:
/// whether it stood (`false`: another claim came between).
pub async fn claim(meta: &Meta, groups: &[&str], fence: &Fence) -> StoreResult<bool> {
    if groups.is_empty() {
        return Ok(true);
    }
    // One group's entry, or every group's (ListGroups loads them all).
    let prefix = match groups {
        [one] => key(one),
        _ => key(""),
    };
    let scan = meta.scan(TABLE, &prefix).await?;
    let (expect, claims) = groups
        .iter()
        .map(|group| {
            let key = key(group);
            let held = scan.entries.iter().find(|(k, _)| *k == key);
            let value = held.map(|(_, v)| v.clone());
            let claim = Change::Put {
                key: key.clone(),
                value: fence.0.clone(),
            };
            (Expect { key, value }, claim)
        })
        .unzip();
    Ok(meta.write_if(TABLE, expect, claims).await?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::MemoryMeta;

    #[actix_rt::test]
    async fn a_commit_expects_the_last_claim_only() {
        let meta = Meta::new(std::sync::Arc::new(MemoryMeta::default()));
        let (first, second) = (Fence::new(), Fence::new());
        assert!(claim(&meta, &["g", "h"], &first).await.unwrap());
        assert!(claim(&meta, &["g"], &second).await.unwrap());
        let commit = |fence: &Fence| {
            let meta = meta.clone();
            let expect = vec![fence.expect("g")];
            async move {
                let put = Change::Put {
                    key: "1:g1:t:0".into(),
                    value: Bytes::new(),
                };
                meta.write_if(TABLE, expect, vec![put]).await.unwrap()
            }
        };
        assert!(
            commit(&first).await.is_none(),
            "a superseded claim's commit"
        );
        assert!(commit(&second).await.is_some());
        // "h" is still under the first claim.
        let h = meta.write_if(TABLE, vec![first.expect("h")], vec![]).await;
        assert!(h.unwrap().is_some());
    }
}
