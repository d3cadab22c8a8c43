//! A soak: the checked workload (two idempotent producers, a transactional one, a
//! consumer group of two) against one gateway for `FAULTS_SOAK_SECS` seconds (20 by
//! default, so every landing runs it; minutes for a real soak) on each store, with the
//! gateway's resident memory sampled every second. The checker's verdict is the
//! assertion. Memory is printed, not asserted (these machines are noisy): resident
//! after the first tenth of the run, at its middle and at its end, the peak (VmHWM),
//! and the growth over the second half, which should stay near zero.

use std::time::{Duration, Instant};

use super::workload::{make_topic, Workload};
use crate::support::{memory_kib, on_every_store, Gateway, Store};

on_every_store!(a_soak_under_the_checked_workload_keeps_memory_flat);

fn a_soak_under_the_checked_workload_keeps_memory_flat(store: Store) {
    let length = Duration::from_secs(
        std::env::var("FAULTS_SOAK_SECS")
            .ok()
            .map(|s| s.parse().expect("FAULTS_SOAK_SECS: a number of seconds"))
            .unwrap_or(20),
    );
    let Some(gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let topic = match store {
        Store::Embedded => "faults-soak-embedded",
        Store::Iggy => "faults-soak-iggy",
    };
    make_topic(&gw.bootstrap(), topic);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&gw.bootstrap(), topic, dir.path());
    let start = Instant::now();
    let mut resident = Vec::new();
    while start.elapsed() < length {
        std::thread::sleep(Duration::from_secs(1));
        resident.push(memory_kib(gw.pid(), "VmRSS"));
    }
    let peak = memory_kib(gw.pid(), "VmHWM");
    let acked = workload.acked();
    let verdict = workload.finish();
    let at = |share: f64| resident[((resident.len() - 1) as f64 * share) as usize];
    let (middle, end) = (at(0.5), at(1.0));
    let minutes = length.as_secs_f64() / 60.0;
    println!(
        "soak on {store:?}, {length:?}: {acked} records acknowledged; gateway resident \
         {} KiB after a tenth, {middle} KiB at the middle, {end} KiB at the end, peak \
         {peak} KiB; second half {:+.0} KiB/min",
        at(0.1),
        (end as f64 - middle as f64) / (minutes / 2.0),
    );
    verdict.assert_valid();
}
