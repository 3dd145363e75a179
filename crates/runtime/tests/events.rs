//! The events recorder end to end over the in-memory sink: a recorder's events go through
//! the queue and the worker's correlation to the sink.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, ObjectReference, Pod};
use runtime::Error;
use runtime::events::{
    EventType, FakeSink, Recorder, RecorderConfig, SinkCall, event_name, object_reference,
};

/// A clock that moves only when told to, starting at 1 700 000 000 s.
#[derive(Clone)]
struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    fn new() -> Self {
        ManualClock(Arc::new(AtomicI64::new(1_700_000_000)))
    }

    fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_second(self.0.load(Ordering::SeqCst)).unwrap()
    }
}

fn config(clock: &ManualClock) -> RecorderConfig {
    let mut config = RecorderConfig::new("replicaset-controller", "");
    let c = clock.clone();
    config.clock = Arc::new(move || c.now());
    config.retry_sleep = Duration::from_millis(1);
    config
}

fn pod(name: &str) -> ObjectReference {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = Some("prod".into());
    pod.metadata.uid = Some(format!("uid-{name}"));
    pod.metadata.resource_version = Some("12".into());
    object_reference(&pod)
}

fn creates(sink: &FakeSink) -> Vec<Event> {
    sink.calls()
        .into_iter()
        .filter_map(|c| match c {
            SinkCall::Create(e) => Some(*e),
            SinkCall::Patch(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn an_event_seen_twice_is_created_then_patched_with_count_2() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    let first = clock.now();
    recorder.event(
        &pod("web-0"),
        EventType::Warning,
        "FailedCreate",
        "quota exceeded",
    );
    clock.advance(7);
    recorder.clone().eventf(
        &pod("web-0"),
        EventType::Warning,
        "FailedCreate",
        format_args!("quota {}", "exceeded"),
    );
    drop(recorder);
    worker.run().await;

    let calls = sink.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let SinkCall::Create(created) = &calls[0] else {
        panic!("expected a create first: {calls:?}");
    };
    let name = event_name("web-0", first);
    assert_eq!(created.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(created.metadata.namespace.as_deref(), Some("prod"));
    assert_eq!(created.count, Some(1));
    assert_eq!(created.type_.as_deref(), Some("Warning"));
    assert_eq!(
        created.involved_object.resource_version.as_deref(),
        Some("12")
    );
    assert_eq!(
        created.reporting_component.as_deref(),
        Some("replicaset-controller")
    );
    let SinkCall::Patch(patch) = &calls[1] else {
        panic!("expected a patch second: {calls:?}");
    };
    assert_eq!(patch.name, name);
    assert_eq!(patch.namespace, "prod");
    assert_eq!(patch.count, 2);
    assert_eq!(patch.last_timestamp, clock.now());
    assert_eq!(patch.message, "quota exceeded");

    let stored = sink.events();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].count, Some(2));
    assert_eq!(stored[0].first_timestamp.as_ref().map(|t| t.0), Some(first));
    assert_eq!(
        stored[0].last_timestamp.as_ref().map(|t| t.0),
        Some(clock.now())
    );
}

#[tokio::test]
async fn similar_events_are_aggregated() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    for i in 0..12 {
        recorder.event(
            &pod("web-0"),
            EventType::Warning,
            "BackOff",
            &format!("back-off {i}"),
        );
        clock.advance(1);
    }
    drop(recorder);
    worker.run().await;

    let stored = sink.events();
    // Nine individual events, then one aggregate counted three times.
    assert_eq!(stored.len(), 10, "{stored:?}");
    let aggregates: Vec<_> = stored
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .unwrap_or_default()
                .starts_with("(combined from similar events): ")
        })
        .collect();
    assert_eq!(aggregates.len(), 1);
    assert_eq!(aggregates[0].count, Some(3));
    assert_eq!(
        aggregates[0].message.as_deref(),
        Some("(combined from similar events): back-off 11")
    );
    assert_eq!(creates(&sink).len(), 10);
}

#[tokio::test]
async fn a_full_queue_drops_events_without_blocking() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    // Nobody consumes the queue yet: 1000 events fit, the rest are dropped at once.
    let started = Instant::now();
    for i in 0..1500 {
        recorder.event(
            &pod(&format!("pod-{i}")),
            EventType::Normal,
            "Scheduled",
            "assigned",
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(recorder);
    worker.run().await;
    let created = creates(&sink);
    assert_eq!(created.len(), 1000);
    assert_eq!(
        created.last().unwrap().involved_object.name.as_deref(),
        Some("pod-999")
    );
}

#[tokio::test]
async fn a_patch_of_a_deleted_event_creates_it_anew() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    recorder.event(&pod("web-0"), EventType::Normal, "Pulled", "pulled");
    clock.advance(1);
    let name = event_name("web-0", ManualClock::new().now());
    let sink2 = sink.clone();
    let deleting = {
        let recorder = recorder.clone();
        async move {
            // Let the worker create the first one, then expire it.
            while sink2.events().is_empty() {
                tokio::task::yield_now().await;
            }
            assert!(sink2.delete("prod", &name).is_some());
            recorder.event(&pod("web-0"), EventType::Normal, "Pulled", "pulled");
        }
    };
    drop(recorder);
    let ((), ()) = tokio::join!(worker.run(), deleting);

    let calls = sink.calls();
    assert!(
        matches!(
            calls.as_slice(),
            [SinkCall::Create(_), SinkCall::Patch(_), SinkCall::Create(_)]
        ),
        "{calls:?}"
    );
    let stored = sink.events();
    assert_eq!(stored.len(), 1);
    // Created again under the first name, with its count.
    assert_eq!(
        stored[0].metadata.name,
        Some(event_name("web-0", ManualClock::new().now()))
    );
    assert_eq!(stored[0].count, Some(2));
}

#[tokio::test]
async fn transport_failures_are_retried_up_to_12_times() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    for _ in 0..11 {
        sink.fail_next(Error::Transport("connection refused".into()));
    }
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    recorder.event(&pod("web-0"), EventType::Normal, "Pulled", "pulled");
    drop(recorder);
    worker.run().await;
    assert_eq!(sink.calls().len(), 12);
    assert_eq!(sink.events().len(), 1);

    // Twelve failures in a row: given up.
    let sink = FakeSink::new();
    for _ in 0..13 {
        sink.fail_next(Error::Transport("connection refused".into()));
    }
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    recorder.event(&pod("web-0"), EventType::Normal, "Pulled", "pulled");
    drop(recorder);
    worker.run().await;
    assert_eq!(sink.calls().len(), 12);
    assert!(sink.events().is_empty());
}

#[tokio::test]
async fn rejected_events_are_not_retried() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    sink.fail_next(Error::Rejected {
        code: 403,
        reason: "Forbidden".into(),
        message: "unable to create new content in namespace prod because it is being terminated"
            .into(),
        causes: vec!["NamespaceTerminating".into()],
    });
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    recorder.event(&pod("web-0"), EventType::Normal, "Pulled", "pulled");
    recorder.event(&pod("web-1"), EventType::Normal, "Pulled", "pulled");
    drop(recorder);
    worker.run().await;
    assert_eq!(sink.calls().len(), 2);
    let stored = sink.events();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].involved_object.name.as_deref(), Some("web-1"));
}

#[tokio::test]
async fn spam_is_dropped_after_a_burst_of_25() {
    let clock = ManualClock::new();
    let sink = FakeSink::new();
    let (recorder, worker) = Recorder::new(sink.clone(), config(&clock));
    for i in 0..40 {
        recorder.event(
            &pod("web-0"),
            EventType::Warning,
            &format!("Reason{i}"),
            "message",
        );
    }
    drop(recorder);
    worker.run().await;
    assert_eq!(sink.calls().len(), 25);
}

#[tokio::test]
async fn a_spawned_recorder_writes_in_the_background() {
    let sink = FakeSink::new();
    let recorder = Recorder::spawn(
        sink.clone(),
        RecorderConfig::new("default-scheduler", "node-1"),
    );
    recorder.event(
        &pod("web-0"),
        EventType::Normal,
        "Scheduled",
        "Successfully assigned prod/web-0 to node-1",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while sink.events().is_empty() {
        assert!(Instant::now() < deadline, "no event written");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let e = &sink.events()[0];
    assert_eq!(e.reason.as_deref(), Some("Scheduled"));
    let source = e.source.clone().unwrap();
    assert_eq!(source.component.as_deref(), Some("default-scheduler"));
    assert_eq!(source.host.as_deref(), Some("node-1"));
    assert_eq!(e.reporting_instance.as_deref(), Some("node-1"));
}
