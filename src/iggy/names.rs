//! Where a Kafka topic lives in Iggy: by default the Iggy topic of the same name in
//! stream `iggy_stream`; the configuration file may give a topic another home
//! (`[[iggy_topics]] kafka = "…", stream = "…", topic = "…"`). Listing goes the other
//! way: an Iggy topic named by an override is served under its Kafka name only.

use std::collections::HashMap;

/// One configured home for a Kafka topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicOverride {
    pub kafka: String,
    pub stream: String,
    pub topic: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NamesError {
    #[error("Kafka topic '{0}' has two overrides")]
    TwiceKafka(String),
    #[error("Kafka topics '{first}' and '{second}' both map to Iggy topic '{stream}/{topic}'")]
    TwiceIggy {
        first: String,
        second: String,
        stream: String,
        topic: String,
    },
}

pub struct Names {
    default_stream: String,
    by_kafka: HashMap<String, (String, String)>,
    by_iggy: HashMap<(String, String), String>,
}

impl Names {
    /// Refuses two overrides of one Kafka name or onto one Iggy topic.
    pub fn new(default_stream: &str, overrides: &[TopicOverride]) -> Result<Names, NamesError> {
        let mut names = Names {
            default_stream: default_stream.to_string(),
            by_kafka: HashMap::new(),
            by_iggy: HashMap::new(),
        };
        for o in overrides {
            let home = (o.stream.clone(), o.topic.clone());
            if names
                .by_kafka
                .insert(o.kafka.clone(), home.clone())
                .is_some()
            {
                return Err(NamesError::TwiceKafka(o.kafka.clone()));
            }
            if let Some(first) = names.by_iggy.insert(home, o.kafka.clone()) {
                return Err(NamesError::TwiceIggy {
                    first,
                    second: o.kafka.clone(),
                    stream: o.stream.clone(),
                    topic: o.topic.clone(),
                });
            }
        }
        Ok(names)
    }

    /// `(stream, topic)` in Iggy of a Kafka topic.
    pub fn iggy<'a>(&'a self, kafka: &'a str) -> (&'a str, &'a str) {
        match self.by_kafka.get(kafka) {
            Some((stream, topic)) => (stream, topic),
            None => (&self.default_stream, kafka),
        }
    }

    /// The Kafka name of an Iggy topic, if the gateway serves it.
    pub fn kafka<'a>(&'a self, stream: &str, topic: &'a str) -> Option<&'a str> {
        match self.by_iggy.get(&(stream.to_string(), topic.to_string())) {
            Some(kafka) => Some(kafka),
            // A default-stream topic whose name an override took is not served twice.
            None if stream == self.default_stream && !self.by_kafka.contains_key(topic) => {
                Some(topic)
            }
            None => None,
        }
    }

    pub fn default_stream(&self) -> &str {
        &self.default_stream
    }

    /// Overrides into streams other than the default (listed one by one).
    pub fn elsewhere(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_kafka
            .iter()
            .filter(|(_, (s, _))| *s != self.default_stream)
            .map(|(k, (s, t))| (k.as_str(), s.as_str(), t.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(kafka: &str, stream: &str, topic: &str) -> TopicOverride {
        TopicOverride {
            kafka: kafka.into(),
            stream: stream.into(),
            topic: topic.into(),
        }
    }

    #[test]
    fn overrides_map_both_ways_and_take_their_iggy_names() {
        let names = Names::new(
            "kafka",
            &[
                o("orders", "legacy", "orders-v1"),
                o("audit", "kafka", "audit-log"),
            ],
        )
        .unwrap();
        assert_eq!(names.iggy("orders"), ("legacy", "orders-v1"));
        assert_eq!(names.iggy("plain"), ("kafka", "plain"));
        assert_eq!(names.kafka("legacy", "orders-v1"), Some("orders"));
        assert_eq!(names.kafka("kafka", "audit-log"), Some("audit"));
        assert_eq!(names.kafka("kafka", "plain"), Some("plain"));
        assert_eq!(
            names.kafka("kafka", "audit"),
            None,
            "name taken by an override"
        );
        assert_eq!(names.kafka("legacy", "other"), None);
        assert_eq!(
            names.elsewhere().collect::<Vec<_>>(),
            vec![("orders", "legacy", "orders-v1")]
        );
    }

    #[test]
    fn two_kafka_names_on_one_iggy_topic_are_refused() {
        let err = Names::new("kafka", &[o("a", "s", "t"), o("b", "s", "t")]);
        assert!(matches!(err, Err(NamesError::TwiceIggy { .. })));
        let err = Names::new("kafka", &[o("a", "s", "t"), o("a", "s", "u")]);
        assert_eq!(err.err(), Some(NamesError::TwiceKafka("a".into())));
    }
}
