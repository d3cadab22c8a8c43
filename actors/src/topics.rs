//! Topics: the one way handlers reach topics and configurations. Changes go to the
//! actor that owns them, which writes its table one change at a time: topics and
//! their configurations to the topic-admin actor, broker configurations and features
//! to the config catalog. Reads take the views those actors last published, without
//! asking.

use std::sync::Arc;

use actix::dev::Request;
use actix::Addr;
use tokio::sync::watch;

use crate::config_catalog::{AlterBrokerConfigs, ClusterConfig, ConfigCatalog, UpdateFeature};
use crate::settings::TopicRules;
use crate::topic_admin::{
    AlterTopicConfigs, BrokerConfigsChanged, CreatePartitions, CreateTopic, DeleteTopic, Refresh,
    TopicAdmin, TopicTable,
};

#[derive(Clone)]
pub struct Topics {
    admin: Addr<TopicAdmin>,
    table: watch::Receiver<Arc<TopicTable>>,
    catalog: Addr<ConfigCatalog>,
    configs: watch::Receiver<Arc<ClusterConfig>>,
    /// The topic rules of the static settings (Kafka keeps them read-only).
    rules: TopicRules,
}

impl Topics {
    pub fn new(
        (admin, table): (Addr<TopicAdmin>, watch::Receiver<Arc<TopicTable>>),
        (catalog, configs): (Addr<ConfigCatalog>, watch::Receiver<Arc<ClusterConfig>>),
        rules: TopicRules,
    ) -> Self {
        Topics {
            admin,
            table,
            catalog,
            configs,
            rules,
        }
    }

    /// The topic table as of now.
    pub fn table(&self) -> Arc<TopicTable> {
        self.table.borrow().clone()
    }

    /// The configurations in force as of now.
    pub fn config(&self) -> Arc<ClusterConfig> {
        self.configs.borrow().clone()
    }

    /// The topic rules: the static settings `num.partitions`, … come from. The one
    /// place they are read.
    pub fn rules(&self) -> TopicRules {
        self.rules
    }

    /// The topic table read again from the store since this call: a topic made through
    /// another gateway or a native client is seen at once.
    pub async fn refresh(&self) -> Arc<TopicTable> {
        let asked = std::time::Instant::now();
        let _ = self.admin.send(Refresh { asked }).await;
        self.table()
    }

    /// The topic table, read again first when it lacks any of the topics `names`.
    pub async fn table_knowing(&self, mut names: impl Iterator<Item = &str>) -> Arc<TopicTable> {
        let table = self.table();
        match names.all(|name| table.get(name).is_some()) {
            true => table,
            false => self.refresh().await,
        }
    }

    // Changes, each sent now, so changes sent in request order arrive in it.

    pub fn create(&self, topic: CreateTopic) -> Request<TopicAdmin, CreateTopic> {
        self.admin.send(topic)
    }

    /// Answered Timeout once the deletion's deadline passes, unfinished or not.
    pub fn delete(&self, topic: DeleteTopic) -> Request<TopicAdmin, DeleteTopic> {
        let wait = (topic.deadline).saturating_duration_since(std::time::Instant::now());
        self.admin.send(topic).timeout(wait)
    }

    pub fn create_partitions(
        &self,
        growth: CreatePartitions,
    ) -> Request<TopicAdmin, CreatePartitions> {
        self.admin.send(growth)
    }

    pub fn alter_configs(
        &self,
        change: AlterTopicConfigs,
    ) -> Request<TopicAdmin, AlterTopicConfigs> {
        self.admin.send(change)
    }

    /// Topics follow a change of the broker configurations they inherit.
    pub fn broker_configs_changed(
        &self,
        change: BrokerConfigsChanged,
    ) -> Request<TopicAdmin, BrokerConfigsChanged> {
        self.admin.send(change)
    }

    pub fn alter_broker_configs(
        &self,
        change: AlterBrokerConfigs,
    ) -> Request<ConfigCatalog, AlterBrokerConfigs> {
        self.catalog.send(change)
    }

    pub fn update_feature(&self, change: UpdateFeature) -> Request<ConfigCatalog, UpdateFeature> {
        self.catalog.send(change)
    }
}
