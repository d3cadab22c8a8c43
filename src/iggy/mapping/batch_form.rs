//! The batch form (`iggy.message.format=batch`, `docs/IGGY_MAPPING.md`): a whole Kafka
//! batch in one message, then a header-less filler for each of its other records, whose
//! id says its place, so Iggy offsets stay Kafka's.

use std::sync::LazyLock;

use bytes::Bytes;
use iggy_kafka_actors::protocol::records::{BatchHeader, HEADER_LEN};

use super::{
    timestamp_from_origin, FromIggy, IggyParts, IggyView, MappingError, Stored, Tlv, BATCH_VERSION,
    MARKER, UINT8,
};
use crate::iggy::kafka_batch::{InBatch, KafkaRecord, ProducerStamp};

/// The user headers of a whole batch (version 4): the marker and `kafka.batch` (a
/// uint8, the form: 1), laid out once by the writer of every header list. Shared:
/// written without copying, read by comparison.
static BATCH_ONLY: LazyLock<Bytes> = LazyLock::new(|| {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[BATCH_VERSION]);
    tlv.entry(b"kafka.batch", UINT8, &[1]);
    tlv.0.freeze()
});

/// A filler's message id: its batch's random half, then this tag and its place in the
/// batch. Unique per message, as Iggy's deduplication (when on) needs.
const FILLER_TAG: u32 = 0x6b_66_6c_72; // "kflr"

/// A whole Kafka batch as one message (the batch form): its bytes as produced, the
/// shared [`BATCH_ONLY`] headers.
pub fn batch_to_iggy(batch: Bytes) -> IggyParts {
    IggyParts {
        payload: batch,
        headers: BATCH_ONLY.clone(),
    }
}

/// The id of the filler standing for record `place` (1, 2, …) of a whole batch whose
/// random half is `batch_id`.
pub fn filler_id(batch_id: u64, place: u32) -> u128 {
    (u128::from(batch_id) << 64) | (u128::from(FILLER_TAG) << 32) | u128::from(place)
}

/// The place of the record a filler stands for, when `id` is a filler's and the message
/// is empty, as fillers are.
fn filler_place(id: u128, empty: bool) -> Option<u32> {
    let tagged = (id >> 32) as u32 == FILLER_TAG && id as u32 > 0;
    (empty && tagged).then_some(id as u32)
}

/// The message as the batch form wrote it: a filler or a whole batch; None for any
/// other message.
pub(super) fn from_iggy(m: &IggyView<'_>) -> Option<Result<FromIggy, MappingError>> {
    let no_headers = m.user_headers.is_none_or(Bytes::is_empty);
    if let Some(place) = filler_place(m.id, m.payload.is_empty() && no_headers) {
        return Some(Ok(FromIggy {
            record: KafkaRecord {
                timestamp: timestamp_from_origin(m.origin_micros).unwrap_or_default(),
                key: None,
                value: None,
                headers: Vec::new(),
            },
            log_append_time: false,
            in_batch: InBatch::Continues(place),
            control: None,
            stored: Stored::Filler,
            codec: 0,
        }));
    }
    let whole = m.user_headers.is_some_and(|h| h == &*BATCH_ONLY);
    whole.then(|| whole_batch(m))
}

/// A whole batch: the producer stamp, timestamp type and first timestamp from its own
/// header, the batch itself as the value.
fn whole_batch(m: &IggyView<'_>) -> Result<FromIggy, MappingError> {
    if m.payload.len() < HEADER_LEN {
        return Err(MappingError::Batch);
    }
    let h = BatchHeader::parse(m.payload);
    let count = u32::try_from(h.record_count).map_err(|_| MappingError::Batch)?;
    if count == 0 || h.control {
        return Err(MappingError::Batch);
    }
    let in_batch = match h.is_idempotent() {
        true => InBatch::First(ProducerStamp {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            record_count: h.record_count,
            transactional: h.transactional,
        }),
        false => InBatch::Loose,
    };
    let first = if h.log_append_time {
        h.max_timestamp
    } else {
        h.base_timestamp
    };
    Ok(FromIggy {
        record: KafkaRecord {
            timestamp: timestamp_from_origin(m.origin_micros).unwrap_or(first),
            key: None,
            value: Some(m.payload.clone()),
            headers: Vec::new(),
        },
        log_append_time: h.log_append_time,
        in_batch,
        control: None,
        stored: Stored::Batch(count),
        codec: 0,
    })
}
