//! ListTransactions (KIP-664): the transactional ids this gateway coordinates, as a
//! Kafka broker lists those of its transaction log partitions (the Java Admin asks
//! every broker and merges the answers). Filters as Kafka's
//! `TransactionStateManager.listTransactionStates`: states by Kafka's names (unknown
//! names answered back, matching nothing), producer ids, v1's duration (KIP-994) and
//! v2's transactional id pattern (KIP-1152, a whole-id match; an invalid one answers
//! INVALID_REGULAR_EXPRESSION). Ids without DESCRIBE on them are left out.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_transactions_request::ListTransactionsRequest;
use kafka_protocol::messages::list_transactions_response::{
    ListTransactionsResponse, TransactionState,
};
use kafka_protocol::messages::{ProducerId, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use regex::Regex;

use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::transactions::slot::now_ms;
use crate::transactions::state::{TxnState, KAFKA_STATE_NAMES};

/// What a listed id must match.
struct Filter {
    states: Vec<StrBytes>,
    producer_ids: Vec<i64>,
    /// Listed only when running longer than this many ms; none when negative.
    duration_ms: i64,
    pattern: Option<Regex>,
    now: i64,
}

impl Filter {
    fn keeps(&self, id: &str, s: &TxnState) -> bool {
        let state = s.phase.kafka_name();
        (self.states.is_empty() || self.states.iter().any(|f| f.as_str() == state))
            && (self.producer_ids.is_empty() || self.producer_ids.contains(&s.producer_id))
            // Kafka's comparison, with no start read as -1: such ids count as long running.
            && (self.duration_ms < 0 || self.now - s.start_ms() > self.duration_ms)
            && self.pattern.as_ref().is_none_or(|p| p.is_match(id))
    }
}

/// The pattern of a v2 request, matched against whole ids as Java's `matches()`; none
/// when absent or empty.
fn pattern(asked: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match asked {
        None | Some("") => Ok(None),
        Some(p) => Regex::new(&format!("^(?:{p})$")).map(Some),
    }
}

pub async fn handle(
    gw: Gateway,
    req: ListTransactionsRequest,
    access: Access,
) -> ListTransactionsResponse {
    let refused = |e: ResponseError| ListTransactionsResponse::default().with_error_code(e.code());
    let unknown: Vec<StrBytes> = (req.state_filters.iter())
        .filter(|f| !KAFKA_STATE_NAMES.contains(&f.as_str()))
        .cloned()
        .collect();
    let pattern = match pattern(req.transactional_id_pattern.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            tracing::info!(error = %e, "ListTransactions: invalid transactional id pattern");
            return refused(ResponseError::InvalidRegularExpression);
        }
    };
    let stored = match gw.transactions.stored().await {
        Ok(stored) => stored,
        Err(e) => {
            tracing::warn!(error = %e, "ListTransactions: transaction states not read");
            return refused(e.code());
        }
    };
    let filter = Filter {
        states: req.state_filters,
        producer_ids: req.producer_id_filters.iter().map(|p| p.0).collect(),
        duration_ms: req.duration_filter,
        pattern,
        now: now_ms(),
    };
    let cluster = gw.groups.cluster();
    let listed = stored
        .into_iter()
        .filter(|(id, s)| {
            cluster.coordinates(id)
                && filter.keeps(id, s)
                && access.permits(Operation::Describe, ResourceType::TransactionalId, id)
        })
        .map(|(id, s)| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(id)))
                .with_producer_id(ProducerId(s.producer_id))
                .with_transaction_state(StrBytes::from_static_str(s.phase.kafka_name()))
        });
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(listed.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transactions::state::Phase;

    fn state(producer_id: i64, phase: Phase, started_ms: i64) -> TxnState {
        TxnState {
            phase,
            started_ms,
            ..TxnState::new(producer_id, 60_000, 0)
        }
    }

    fn filter() -> Filter {
        Filter {
            states: Vec::new(),
            producer_ids: Vec::new(),
            duration_ms: -1,
            pattern: None,
            now: 10_000,
        }
    }

    #[test]
    fn each_filter_narrows_the_list_as_kafka_does() {
        let ongoing = state(1, Phase::Ongoing, 9_000);
        let done = state(2, Phase::CompleteCommit, 0);
        assert!(filter().keeps("a", &ongoing) && filter().keeps("b", &done));
        let by_state = Filter {
            states: vec![StrBytes::from_static_str("Ongoing")],
            ..filter()
        };
        assert!(by_state.keeps("a", &ongoing) && !by_state.keeps("b", &done));
        let by_producer = Filter {
            producer_ids: vec![2, 3],
            ..filter()
        };
        assert!(!by_producer.keeps("a", &ongoing) && by_producer.keeps("b", &done));
        // Running for 1000 ms: longer than 999, not longer than 1000; no start is -1.
        let longer = |duration_ms| Filter {
            duration_ms,
            ..filter()
        };
        assert!(longer(999).keeps("a", &ongoing) && !longer(1_000).keeps("a", &ongoing));
        assert!(longer(1_000).keeps("b", &done));
        let by_pattern = Filter {
            pattern: pattern(Some("orders-.*")).unwrap(),
            ..filter()
        };
        assert!(by_pattern.keeps("orders-1", &ongoing));
        assert!(
            !by_pattern.keeps("old-orders-1", &ongoing),
            "whole ids only"
        );
    }

    #[test]
    fn patterns_empty_absent_or_invalid() {
        assert!(pattern(None).unwrap().is_none());
        assert!(pattern(Some("")).unwrap().is_none());
        assert!(pattern(Some("(ab(cd")).is_err());
    }
}
