//! Transaction markers: the control batches a transaction coordinator writes into every
//! partition of a transaction when it ends. A marker is a batch of its own, flagged
//! control and transactional, carrying the producer's id and epoch and one record whose
//! key says commit or abort (Kafka's `EndTransactionMarker`):
//! key = version i16 (0) | type i16 (0 abort, 1 commit);
//! value = version i16 (0) | coordinator epoch i32.
//! Readers skip the record; read-committed readers take it as the end of the
//! producer's transaction in that partition.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::records::{
    BatchHeader, ATTRIBUTES_AT, CONTROL_BIT, CRC_AT, HEADER_LEN, LENGTH_AT, LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Marker {
    Abort,
    Commit,
}

impl Marker {
    fn kafka_type(self) -> i16 {
        match self {
            Marker::Abort => 0,
            Marker::Commit => 1,
        }
    }
}

/// The record of a marker, with its length prefix: attributes, timestamp and offset
/// deltas 0, the 4-byte key, the 6-byte value, no headers. Every varint here is one
/// byte (zigzag of a small number).
fn record(marker: Marker, coordinator_epoch: i32) -> BytesMut {
    let mut r = BytesMut::with_capacity(17);
    r.put_u8(16 << 1); // record length
    r.put_u8(0); // attributes
    r.put_u8(0); // timestamp delta
    r.put_u8(0); // offset delta
    r.put_u8(4 << 1);
    r.put_i16(0);
    r.put_i16(marker.kafka_type());
    r.put_u8(6 << 1);
    r.put_i16(0);
    r.put_i32(coordinator_epoch);
    r.put_u8(0); // headers
    r
}

/// The marker's whole batch, at base offset 0 (the log places it).
pub fn batch(
    marker: Marker,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    timestamp: i64,
) -> Bytes {
    let record = record(marker, coordinator_epoch);
    let mut b = BytesMut::with_capacity(HEADER_LEN + record.len());
    b.put_i64(0); // base offset
    b.put_i32((HEADER_LEN - LOG_OVERHEAD + record.len()) as i32);
    b.put_i32(0); // leader epoch
    b.put_i8(2); // magic
    b.put_u32(0); // CRC, below
    b.put_i16(CONTROL_BIT | TRANSACTIONAL_BIT);
    b.put_i32(0); // last offset delta
    b.put_i64(timestamp);
    b.put_i64(timestamp);
    b.put_i64(producer_id);
    b.put_i16(producer_epoch);
    b.put_i32(-1); // base sequence: markers have none
    b.put_i32(1);
    b.extend_from_slice(&record);
    let crc = crc32c::crc32c(&b[ATTRIBUTES_AT..]);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    debug_assert_eq!((&b[LENGTH_AT..]).get_i32() as usize + LOG_OVERHEAD, b.len());
    b.freeze()
}

/// What a stored control batch marks; `None` for any other batch, or a control
/// record of a kind this gateway does not know.
pub fn read(batch: &[u8]) -> Option<Marker> {
    let header = BatchHeader::parse(batch);
    if !header.control || batch.len() < HEADER_LEN + 9 {
        return None;
    }
    // Length, attributes, timestamp and offset deltas, key length: one byte each.
    let mut key = &batch[HEADER_LEN + 5..];
    let _version = key.get_i16();
    match key.get_i16() {
        0 => Some(Marker::Abort),
        1 => Some(Marker::Commit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::RecordBatchDecoder;

    #[test]
    fn kafka_protocol_reads_a_marker_as_kafka_writes_it() {
        for (marker, kind) in [(Marker::Abort, 0i16), (Marker::Commit, 1)] {
            let mut bytes = batch(marker, 42, 3, 7, 1_700_000_000_000);
            assert_eq!(read(&bytes), Some(marker));
            let header = BatchHeader::parse(&bytes);
            assert!(header.control && header.transactional);
            assert_eq!((header.producer_id, header.producer_epoch), (42, 3));
            let set = RecordBatchDecoder::decode(&mut bytes).unwrap();
            let record = &set.records[0];
            assert!(record.control && record.transactional);
            assert_eq!(record.key.as_deref(), Some(&[0, 0, 0, kind as u8][..]));
            assert_eq!(record.value.as_deref(), Some(&[0, 0, 0, 0, 0, 7][..]));
        }
    }

    #[test]
    fn a_data_batch_is_no_marker() {
        let mut bytes = BytesMut::from(&batch(Marker::Commit, 1, 0, 0, 0)[..]);
        bytes[ATTRIBUTES_AT + 1] &= !(CONTROL_BIT as u8);
        assert_eq!(read(&bytes), None);
    }
}
