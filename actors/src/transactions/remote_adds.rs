//! Partitions and groups that transactions v2 add on a gateway other than their id's
//! coordinator (gateways sharing Iggy): table `txn-adds`, keyed `<len>:<id><producer
//! id>:<epoch>:p:<partition>:<topic>` or `…:<epoch>:g:<group>`, with no value.
//!
//! The adding gateway writes its entry, then reads the id's state: while that shows
//! no decision at the batch's epoch, the coordinator has not decided yet, so it will
//! read the entry when it does (it reads these entries before deciding and again
//! when completing, and the table orders every write), and the batch may go in. A
//! decision it sees first refuses the batch. The coordinator also takes the entries
//! into its state on its ticks, so timeouts and DescribeTransactions count them.

use std::collections::BTreeSet;

use crate::offsets::table;
use crate::store::meta::Change;
use crate::store::{Meta, StoreResult, TopicPartition};

pub const TABLE: &str = "txn-adds";

/// What a batch or an offset commit adds to a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Added {
    Partition(TopicPartition),
    Group(String),
}

fn producer_prefix(id: &str, (producer_id, epoch): (i64, i16)) -> String {
    format!("{}{producer_id}:{epoch}:", table::group_prefix(id))
}

fn key(id: &str, producer: (i64, i16), added: &Added) -> String {
    let prefix = producer_prefix(id, producer);
    match added {
        Added::Partition(tp) => format!("{prefix}p:{}:{}", tp.partition, tp.topic),
        Added::Group(group) => format!("{prefix}g:{group}"),
    }
}

/// `(id, producer id, epoch, added)` of a key.
fn parse(key: &str) -> Option<(String, (i64, i16), Added)> {
    let (id, rest) = table::name(key)?;
    let mut parts = rest.splitn(4, ':');
    let producer_id = parts.next()?.parse().ok()?;
    let epoch = parts.next()?.parse().ok()?;
    let added = match (parts.next()?, parts.next()?) {
        ("p", rest) => {
            let (partition, topic) = rest.split_once(':')?;
            Added::Partition(TopicPartition {
                topic: topic.into(),
                partition: partition.parse().ok()?,
            })
        }
        ("g", group) => Added::Group(group.to_string()),
        _ => return None,
    };
    Some((id.to_string(), (producer_id, epoch), added))
}

/// Records that `producer`'s transaction of `id` takes `added`.
pub async fn write(meta: &Meta, id: &str, producer: (i64, i16), added: &Added) -> StoreResult<()> {
    let put = Change::Put {
        key: key(id, producer, added),
        value: bytes::Bytes::new(),
    };
    meta.write(TABLE, vec![put]).await.map(|_| ())
}

/// Takes an entry back (its batch was refused).
pub async fn withdraw(
    meta: &Meta,
    id: &str,
    producer: (i64, i16),
    added: &Added,
) -> StoreResult<()> {
    meta.delete(TABLE, vec![key(id, producer, added)]).await
}

/// What other gateways added to one transaction, and the keys to drop once it ended.
#[derive(Debug, Default)]
pub struct Adds {
    pub partitions: BTreeSet<(String, i32)>,
    pub groups: BTreeSet<String>,
    keys: Vec<String>,
}

impl Adds {
    fn take(&mut self, key: String, added: Added) {
        match added {
            Added::Partition(tp) => self.partitions.insert((tp.topic.to_string(), tp.partition)),
            Added::Group(group) => self.groups.insert(group),
        };
        self.keys.push(key);
    }
}

/// What other gateways added to `producer`'s transaction of `id`.
pub async fn of(meta: &Meta, id: &str, producer: (i64, i16)) -> StoreResult<Adds> {
    let scan = meta.scan(TABLE, &producer_prefix(id, producer)).await?;
    let mut adds = Adds::default();
    for (key, _) in scan.entries {
        if let Some((found, at, added)) = parse(&key) {
            if found == id && at == producer {
                adds.take(key, added);
            }
        }
    }
    Ok(adds)
}

/// Every transaction's adds, by id and producer.
pub async fn all(meta: &Meta) -> StoreResult<Vec<(String, (i64, i16), Adds)>> {
    let scan = meta.scan(TABLE, "").await?;
    let mut all: Vec<(String, (i64, i16), Adds)> = Vec::new();
    for (key, _) in scan.entries {
        let Some((id, producer, added)) = parse(&key) else {
            tracing::warn!(key = %key, "unreadable transaction add");
            continue;
        };
        match all.last_mut() {
            // Keys of one transaction are next to each other in a scan.
            Some((last, at, adds)) if *last == id && *at == producer => adds.take(key, added),
            _ => {
                let mut adds = Adds::default();
                adds.take(key, added);
                all.push((id, producer, adds));
            }
        }
    }
    Ok(all)
}

/// Drops a finished transaction's entries.
pub async fn clear(meta: &Meta, adds: Adds) -> StoreResult<()> {
    meta.delete(TABLE, adds.keys).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_transaction_and_what_it_adds() {
        let tp = TopicPartition {
            topic: "t:1".into(),
            partition: 7,
        };
        for added in [Added::Partition(tp), Added::Group("g:x".into())] {
            let k = key("id:9", (1000, 3), &added);
            assert_eq!(parse(&k), Some(("id:9".into(), (1000, 3), added)));
            assert!(k.starts_with(&producer_prefix("id:9", (1000, 3))));
        }
        // Another id that starts like this one is not under its prefix.
        let other = key("id:91", (1000, 3), &Added::Group("g".into()));
        assert!(!other.starts_with(&producer_prefix("id:9", (1000, 3))));
    }
}
