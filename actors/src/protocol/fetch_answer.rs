//! A Fetch answer whose records stay the store's buffers. Its frame is a list of
//! buffers: the answer's own fields, then each partition's stored batches as they are
//! (refcounted, never copied) between them, written with vectored writes, as a Kafka
//! broker sends log segments with no copy in user space.
//!
//! `kafka-protocol` encodes every field but the records, so which field goes in which
//! version stays its business alone. The response is encoded twice, every record set
//! once empty and once null: the two differ exactly in each record set's length prefix
//! (no other field counts the records' bytes: arrays count items, and the records sit
//! in no tagged field), in the order the partitions are encoded. Each prefix is then
//! rewritten for its batches, which go in after it.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchResponse};
use kafka_protocol::protocol::Encodable;

use super::envelope::{begin_response, encode_failed, seal};
use super::framing::AnswerFrame;
use super::WireError;

/// A Fetch response and its partitions' record sets, apart.
#[derive(Debug, Default)]
pub struct FetchAnswer {
    /// Every partition's `records` left `None`: they are `record_sets`.
    response: FetchResponse,
    /// Each partition's batches, in the order `response` lists its partitions, topic
    /// after topic. A partition without batches answers an empty record set (clients
    /// read a null one as an error).
    record_sets: Vec<Vec<Bytes>>,
}

impl FetchAnswer {
    /// `record_sets` holds one entry per partition of `response`, in its order; the
    /// partitions' own `records` are dropped.
    pub fn new(mut response: FetchResponse, record_sets: Vec<Vec<Bytes>>) -> FetchAnswer {
        set_records(&mut response, None);
        let partitions = response.responses.iter().map(|t| t.partitions.len());
        assert_eq!(
            partitions.sum::<usize>(),
            record_sets.len(),
            "one record set per partition answered"
        );
        FetchAnswer {
            response,
            record_sets,
        }
    }

    /// The response, every record set left out.
    pub fn response(&self) -> &FetchResponse {
        &self.response
    }

    pub fn set_throttle_time_ms(&mut self, ms: i32) {
        self.response.throttle_time_ms = ms;
    }

    /// Bytes of the body at `version`, records included: what a consumer quota counts.
    pub fn size(&self, version: i16) -> usize {
        let compact = compact(version);
        // The response as it is holds null record sets: add each set and the bytes its
        // length takes over a null one's.
        let sets = self.record_sets.iter().map(|set| {
            let len = set.iter().map(Bytes::len).sum();
            len + length_width(Some(len), compact) - length_width(None, compact)
        });
        self.response.compute_size(version).unwrap_or(0) + sets.sum::<usize>()
    }

    /// The frame at `version`: its size, the header, the body with the stored batches
    /// after each record set's length prefix.
    pub fn encode(mut self, version: i16, correlation_id: i32) -> Result<AnswerFrame, WireError> {
        let fail = encode_failed(ApiKey::Fetch, version);
        let lost = |what: &str| fail(anyhow::anyhow!("record sets located wrongly: {what}"));
        let compact = compact(version);
        let prefix = |len: Option<usize>| {
            let mut buf = BytesMut::new();
            put_length(&mut buf, len, compact).map(|()| buf)
        };
        let (empty_prefix, null_prefix) = (prefix(Some(0))?, prefix(None)?);

        let frame = |response: &FetchResponse| {
            let head = response.compute_size(version).map_err(&fail)?;
            let mut buf = BytesMut::with_capacity(64 + head);
            begin_response(&mut buf, ApiKey::Fetch, version, correlation_id)?;
            response.encode(&mut buf, version).map_err(&fail)?;
            Ok::<_, WireError>(buf)
        };
        let null = frame(&self.response)?;
        set_records(&mut self.response, Some(Bytes::new()));
        let empty = frame(&self.response)?;
        if empty.len() != null.len() {
            return Err(lost("the two encodings differ in length"));
        }

        // The head: `empty` with each prefix rewritten, and where each set goes in it.
        let mut head = BytesMut::with_capacity(empty.len() + 4 * self.record_sets.len());
        let mut set_at = Vec::with_capacity(self.record_sets.len());
        let mut sets = self.record_sets.into_iter();
        let mut copied = 0;
        while let Some(at) = first_difference(&empty[copied..], &null[copied..]) {
            let at = copied + at;
            if !(empty[at..].starts_with(&empty_prefix) && null[at..].starts_with(&null_prefix)) {
                return Err(lost("a difference that is not a record set's length"));
            }
            let set = sets
                .next()
                .ok_or_else(|| lost("more record sets than partitions"))?;
            let len: usize = set.iter().map(Bytes::len).sum();
            head.extend_from_slice(&empty[copied..at]);
            put_length(&mut head, Some(len), compact)?;
            set_at.push((head.len(), set));
            copied = at + empty_prefix.len();
        }
        if sets.next().is_some() {
            return Err(lost("fewer record sets in the frame than partitions"));
        }
        head.extend_from_slice(&empty[copied..]);
        let records: usize = set_at.iter().flat_map(|(_, s)| s).map(Bytes::len).sum();
        seal(&mut head, records)?;

        let head = head.freeze();
        let mut pieces = Vec::with_capacity(1 + 2 * set_at.len());
        let mut cut = 0;
        for (at, set) in set_at.into_iter().filter(|(_, s)| !s.is_empty()) {
            pieces.push(head.slice(cut..at));
            pieces.extend(set);
            cut = at;
        }
        pieces.push(head.slice(cut..));
        Ok(AnswerFrame::new(pieces))
    }
}

/// Whether record sets are COMPACT_BYTES at `version`: in flexible versions, which are
/// those whose response header is v1.
fn compact(version: i16) -> bool {
    ApiKey::Fetch.response_header_version(version) >= 1
}

/// Sets every partition's record set to `records`.
fn set_records(response: &mut FetchResponse, records: Option<Bytes>) {
    let partitions = response
        .responses
        .iter_mut()
        .flat_map(|t| &mut t.partitions);
    partitions.for_each(|p| p.records = records.clone());
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// A record set's length prefix, `None` for a null one: BYTES (int32, -1 for null) or,
/// in flexible versions, COMPACT_BYTES (unsigned varint of the length + 1, 0 for null).
fn put_length(buf: &mut BytesMut, len: Option<usize>, compact: bool) -> Result<(), WireError> {
    let too_large = WireError::AnswerTooLarge;
    match (len, compact) {
        (None, false) => buf.put_i32(-1),
        (Some(len), false) => buf.put_i32(i32::try_from(len).map_err(|_| too_large(len))?),
        (len, true) => {
            let mut v = compact_length(len).map_err(too_large)?;
            while v >= 0x80 {
                buf.put_u8(v as u8 | 0x80);
                v >>= 7;
            }
            buf.put_u8(v as u8);
        }
    }
    Ok(())
}

/// COMPACT_BYTES' length field: 0 for null, else the length + 1; `Err(len)` when over.
fn compact_length(len: Option<usize>) -> Result<u32, usize> {
    len.map_or(Ok(0), |len| u32::try_from(len + 1).map_err(|_| len))
}

/// Bytes `put_length` writes for `len`.
fn length_width(len: Option<usize>, compact: bool) -> usize {
    if !compact {
        return 4;
    }
    let v = compact_length(len).unwrap_or(u32::MAX);
    (32 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
        PartitionData, SnapshotId,
    };
    use kafka_protocol::messages::{BrokerId, ProducerId, ResponseKind, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use uuid::Uuid;

    use super::*;
    use crate::protocol::envelope::encode_response;
    use crate::protocol::versions::served_versions;

    /// For every served version, the frame's buffers one after the other are exactly
    /// `kafka-protocol`'s framing of the same response with each partition's batches
    /// concatenated as its records; and every batch is sent as the store's buffer.
    #[test]
    fn frames_are_kafka_protocols_encoding_at_every_served_version() {
        let served = served_versions(ApiKey::Fetch).expect("Fetch is served");
        for version in served.min..=served.max {
            let (response, record_sets) = sample(version);
            let whole = ResponseKind::Fetch(with_records(&response, &record_sets));
            let expected = encode_response(ApiKey::Fetch, version, 7, &whole)
                .unwrap_or_else(|e| panic!("v{version}: {e}"));

            let answer = FetchAnswer::new(response, record_sets.clone());
            let frame = answer
                .encode(version, 7)
                .unwrap_or_else(|e| panic!("v{version}: {e}"));
            let got = frame.pieces().concat();
            let at = first_difference(&got, &expected).unwrap_or(got.len().min(expected.len()));
            assert!(
                got[..] == expected[..],
                "v{version}: {} bytes against kafka-protocol's {}, first different at {at}",
                got.len(),
                expected.len(),
            );
            assert_eq!(frame.total_len(), expected.len(), "v{version}");
            for batch in record_sets.iter().flatten() {
                let as_stored = |p: &Bytes| p.as_ptr() == batch.as_ptr() && p.len() == batch.len();
                assert!(
                    frame.pieces().iter().any(as_stored),
                    "v{version}: a batch was copied"
                );
            }
        }
    }

    #[test]
    fn the_size_counts_the_records_as_the_whole_response_would() {
        let served = served_versions(ApiKey::Fetch).expect("Fetch is served");
        for version in served.min..=served.max {
            let (response, record_sets) = sample(version);
            let whole = with_records(&response, &record_sets);
            let answer = FetchAnswer::new(response, record_sets);
            let size = whole.compute_size(version).unwrap();
            assert_eq!(answer.size(version), size, "v{version}");
        }
    }

    /// `response` with each partition's batches concatenated as its records.
    fn with_records(response: &FetchResponse, record_sets: &[Vec<Bytes>]) -> FetchResponse {
        let mut whole = response.clone();
        let mut sets = record_sets.iter();
        for p in whole.responses.iter_mut().flat_map(|t| &mut t.partitions) {
            p.records = Some(sets.next().expect("a set per partition").concat().into());
        }
        whole
    }

    /// Batches of `sizes` bytes, each filled with its own byte.
    fn batches(fill: u8, sizes: &[usize]) -> Vec<Bytes> {
        let each = sizes.iter().zip(fill..);
        each.map(|(&n, b)| Bytes::from(vec![b; n])).collect()
    }

    /// Three topic entries (one topic twice, around another), partitions with no, one
    /// and many batches (record sets whose compact lengths take one to three bytes),
    /// aborted transactions, an error partition, and every field and tagged field the
    /// version has set to something other than its default.
    fn sample(version: i16) -> (FetchResponse, Vec<Vec<Bytes>>) {
        let flexible = version >= 12;
        let partition = |index: i32| {
            let mut p = PartitionData::default()
                .with_partition_index(index)
                .with_high_watermark(1_000 + index as i64)
                .with_last_stable_offset(900 + index as i64)
                .with_log_start_offset(if version >= 5 { 10 } else { -1 });
            if version >= 11 {
                p = p.with_preferred_read_replica(BrokerId(2));
            }
            p
        };
        let aborted = (1..=2).map(|i| {
            AbortedTransaction::default()
                .with_producer_id(ProducerId(40 + i))
                .with_first_offset(100 * i)
        });
        let mut with_tags = partition(2).with_aborted_transactions(Some(aborted.collect()));
        if flexible {
            with_tags = with_tags
                .with_diverging_epoch(EpochEndOffset::default().with_epoch(3).with_end_offset(77))
                .with_current_leader(
                    LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(1))
                        .with_leader_epoch(4),
                )
                .with_snapshot_id(SnapshotId::default().with_end_offset(5).with_epoch(6))
                .with_unknown_tagged_field(9, Bytes::from_static(b"tag"));
        }
        let failed = PartitionData::default()
            .with_partition_index(3)
            .with_error_code(1)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_aborted_transactions(Some(Vec::new()));
        let topic = |name: &str, partitions: Vec<PartitionData>| {
            let mut t = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                t = t.with_topic_id(Uuid::from_u128(name.len() as u128));
            } else {
                t = t.with_topic(TopicName(StrBytes::from_string(name.into())));
            }
            if flexible {
                t = t.with_unknown_tagged_field(1, Bytes::from_static(b"t"));
            }
            t
        };
        let responses = vec![
            topic("orders", vec![partition(0), partition(1), with_tags]),
            topic("audit", vec![failed, partition(5)]),
            topic("orders", vec![partition(4)]),
        ];
        let record_sets = vec![
            Vec::new(),
            batches(1, &[61]),
            batches(2, &[100, 27, 900]),
            Vec::new(),
            batches(5, &[20_000, 1, 300]),
            batches(9, &[126]),
        ];
        let mut response = FetchResponse::default()
            .with_throttle_time_ms(25)
            .with_responses(responses);
        if version >= 7 {
            response = response.with_error_code(0).with_session_id(12_345);
        }
        if flexible {
            response = response.with_unknown_tagged_field(5, Bytes::from_static(b"top"));
        }
        if version >= 16 {
            let node = NodeEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("gateway-1"))
                .with_port(9092)
                .with_rack(Some(StrBytes::from_static_str("r1")));
            response = response.with_node_endpoints(vec![node]);
        }
        (response, record_sets)
    }
}
