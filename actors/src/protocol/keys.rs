//! Which records of a batch carry no key, read from its decompressed records section:
//! a compacted topic refuses them, as Kafka's `LogValidator.validateKey` does. Only
//! each record's length, attributes, timestamp and offset deltas and key length are
//! read; values and headers are skipped.

/// A records section that does not hold the records its header counts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("record {0} of the batch is cut short")]
    Truncated(i32),
    #[error("record {0} of the batch has a malformed length")]
    Malformed(i32),
}

/// The indexes within the batch (from 0, in order) of the records with a null key,
/// among the `count` records of `records`.
pub fn keyless(records: &[u8], count: i32) -> Result<Vec<i32>, KeyError> {
    let mut rest = records;
    let mut found = Vec::new();
    for index in 0..count {
        let malformed = |_| KeyError::Malformed(index);
        let len = varint(&mut rest, index)?;
        let len = usize::try_from(len).map_err(malformed)?;
        let mut record = rest.get(..len).ok_or(KeyError::Truncated(index))?;
        rest = &rest[len..];
        record = record.get(1..).ok_or(KeyError::Truncated(index))?; // attributes
        varint(&mut record, index)?; // timestamp delta
        varint(&mut record, index)?; // offset delta
        if varint(&mut record, index)? == -1 {
            found.push(index);
        }
    }
    Ok(found)
}

/// A zigzag varint (up to a varlong's ten bytes) of record `index`, `data` moved past it.
fn varint(data: &mut &[u8], index: i32) -> Result<i64, KeyError> {
    let mut raw: u64 = 0;
    for shift in (0..70).step_by(7) {
        let (&b, rest) = data.split_first().ok_or(KeyError::Truncated(index))?;
        *data = rest;
        raw |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    Err(KeyError::Malformed(index))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::HEADER_LEN;
    use bytes::{Bytes, BytesMut};
    use indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    fn records(keys: &[Option<&'static str>]) -> Vec<u8> {
        let records: Vec<Record> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // One batch: the encoder splits where offset − sequence changes.
                sequence: i as i32 - 1,
                timestamp: 1_700_000_000_000 + i as i64,
                key: key.map(|k| Bytes::from_static(k.as_bytes())),
                value: Some(Bytes::from(vec![b'v'; 300])),
                headers: IndexMap::from([("h".into(), Some(Bytes::from_static(b"x")))]),
            })
            .collect();
        let mut batch = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut batch, &records, &options).unwrap();
        batch[HEADER_LEN..].to_vec()
    }

    #[test]
    fn null_keys_are_found_by_their_index_and_empty_keys_are_keys() {
        let section = records(&[Some("a"), None, Some(""), None, Some("b")]);
        assert_eq!(keyless(&section, 5), Ok(vec![1, 3]));
        assert_eq!(keyless(&records(&[Some("a")]), 1), Ok(vec![]));
    }

    #[test]
    fn a_section_short_of_its_records_is_refused() {
        let section = records(&[Some("a"), None]);
        assert_eq!(keyless(&section, 3), Err(KeyError::Truncated(2)));
        let cut = &section[..section.len() - 1];
        assert_eq!(keyless(cut, 2), Err(KeyError::Truncated(1)));
        assert_eq!(keyless(&[0xff; 11], 1), Err(KeyError::Malformed(0)));
        assert_eq!(
            keyless(&[0x01], 1),
            Err(KeyError::Malformed(0)),
            "length -1"
        );
    }
}
