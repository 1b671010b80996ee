//! The SSE event stream over the real API: a turn's events in order with `id:` and `event:`
//! fields, a reconnect with `Last-Event-ID` (or `?after=`) that replays exactly the events missed,
//! a reader too slow for the live channel that still gets every event once, the end of a stream
//! whose session is deleted, and the keep-alive comments of an idle one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Reply, Scripted, SseMessage, SseStream, TestServer};
use serde_json::json;

fn ids(messages: &[SseMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.id.unwrap()).collect()
}

#[tokio::test]
async fn a_turn_streams_its_events_in_order() {
    let model = Scripted::new([Reply::Text(vec!["Hel".into(), "lo".into()])]);
    let server = TestServer::start(Some(model)).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "hi"})).await;
    assert_eq!(status, 202, "{body}");
    let turn = body["turn_id"].clone();

    let mut seen = Vec::new();
    while let Some(message) = stream.next_within(Duration::from_secs(30)).await {
        let end = message.event == "turn_ended";
        seen.push(message);
        if end {
            break;
        }
    }
    let names: Vec<&str> = seen.iter().map(|m| m.event.as_str()).collect();
    assert_eq!(names.first(), Some(&"turn_started"), "{names:?}");
    assert_eq!(names.last(), Some(&"turn_ended"), "{names:?}");
    let deltas: Vec<&str> = seen
        .iter()
        .filter(|m| m.event == "text_delta")
        .map(|m| m.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas.concat(), "Hello");
    for message in &seen {
        // `event:` is the JSON's `type`, `id:` its `id`; every event is of this session and turn.
        assert_eq!(message.data["type"], message.event.as_str());
        assert_eq!(message.data["id"], message.id.unwrap());
        assert_eq!(message.data["session_id"], id.as_str());
        assert_eq!(message.data["turn_id"], turn, "{:?}", message);
        let twin: hands_server::docs::Event = serde_json::from_value(message.data.clone()).unwrap();
        assert_eq!(serde_json::to_value(twin).unwrap(), message.data);
    }
    let first = seen[0].id.unwrap();
    assert_eq!(ids(&seen), (first..first + seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(seen.last().unwrap().data["text"], "Hello");
}

#[tokio::test]
async fn reconnecting_with_last_event_id_replays_exactly_the_missed_events() {
    let model = Scripted::new([
        Reply::Text(vec!["a".into(), "b".into(), "c".into()]),
        Reply::Text(vec!["d".into(), "e".into()]),
    ]);
    let server = TestServer::start(Some(model)).await;
    let id = server.session(json!({})).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "1"})).await;
    assert_eq!(status, 202);
    let first = server.events_until(&id, 0, |m| m.event == "turn_ended").await;
    let all = ids(&first);
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>(), "ids start at 1 without gaps");
    assert!(all.len() >= 5, "{all:?}");

    // A client that saw up to the second event reconnects: it gets the rest, once each.
    let cut = all[1];
    let mut resumed = SseStream::open(&server, &id, Some(cut)).await;
    let mut replayed = Vec::new();
    for _ in cut..*all.last().unwrap() {
        replayed.push(resumed.next_within(Duration::from_secs(10)).await.unwrap());
    }
    assert_eq!(ids(&replayed), all[2..].to_vec());
    assert_eq!(replayed, first[2..].to_vec());
    // Nothing more until something happens; then the new events follow with the next ids.
    assert!(resumed.next_within(Duration::from_millis(300)).await.is_none());
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "2"})).await;
    assert_eq!(status, 202);
    let next = resumed.next_within(Duration::from_secs(30)).await.unwrap();
    assert_eq!(next.id, Some(all.last().unwrap() + 1));
    assert_eq!(next.event, "turn_started");

    // `?after=` does the same on a first connection, and the header wins over it.
    let reply = server
        .client
        .get(server.url(&format!("/v1/sessions/{id}/events?after={}", all.len() - 1)))
        .send()
        .await
        .unwrap();
    let mut after = SseStream::from_response(reply);
    assert_eq!(
        after.next_within(Duration::from_secs(10)).await.unwrap().id,
        Some(all.len() as u64)
    );
    let reply = server
        .client
        .get(server.url(&format!("/v1/sessions/{id}/events?after=0")))
        .header("Last-Event-ID", (all.len() - 1).to_string())
        .send()
        .await
        .unwrap();
    let mut both = SseStream::from_response(reply);
    assert_eq!(both.next_within(Duration::from_secs(10)).await.unwrap().id, Some(all.len() as u64));
}

/// A reader that does not read while thousands of events are emitted falls far behind the live
/// channel (its receiver lags); it still gets every event, in order, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_loses_no_events() {
    // 3000 events of 4 KiB: far more than the live channel (1024 events) and the socket buffers
    // hold, so the stream's receiver lags while nobody reads.
    const DELTAS: usize = 3000;
    let deltas: Vec<String> = (0..DELTAS).map(|i| format!("{i:05}{}", "x".repeat(4096))).collect();
    let model = Scripted::new([Reply::Text(deltas)]);
    let server = TestServer::start(Some(model)).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "go"})).await;
    assert_eq!(status, 202);
    // Do not read until the whole turn is over.
    tokio::time::timeout(Duration::from_secs(120), server.host.wait_turn(&id))
        .await
        .unwrap()
        .unwrap();

    let mut seen = Vec::new();
    while let Some(message) = stream.next_within(Duration::from_secs(30)).await {
        let end = message.event == "turn_ended";
        seen.push(message);
        if end {
            break;
        }
    }
    let got = ids(&seen);
    assert_eq!(got, (1..=got.len() as u64).collect::<Vec<_>>(), "a gap or a repeat");
    // The text arrives whole and in order (the loop may join deltas that queued up, so count
    // the pieces rather than the events).
    let text: String = seen
        .iter()
        .filter(|m| m.event == "text_delta")
        .map(|m| m.data["text"].as_str().unwrap())
        .collect();
    let pieces: Vec<&str> = text.split('x').filter(|p| !p.is_empty()).collect();
    assert_eq!(pieces.len(), DELTAS);
    assert!(pieces.iter().enumerate().all(|(i, p)| *p == format!("{i:05}")));
    let deltas = seen.iter().filter(|m| m.event == "text_delta").count();
    assert!(deltas > 2048, "only {deltas} events: too few to overrun the live channel");
}

#[tokio::test]
async fn the_stream_ends_when_its_session_is_deleted() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) = server.delete(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 204);
    let end = tokio::time::timeout(Duration::from_secs(15), stream.next()).await;
    assert_eq!(end.unwrap(), None, "the stream should end");
}

/// An idle stream gets a comment every 15 s (virtual time: the test's clock is paused and jumps
/// to the next timer whenever nothing else is ready).
#[tokio::test(start_paused = true)]
async fn an_idle_stream_gets_a_keep_alive_comment_every_15_s() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    // No client timeout: under the paused clock it would be the next timer to fire.
    let client = reqwest::Client::new();
    let mut response =
        client.get(server.url(&format!("/v1/sessions/{id}/events"))).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let opened = tokio::time::Instant::now();
    for n in 1..=2u32 {
        let chunk = response.chunk().await.unwrap().unwrap();
        let text = String::from_utf8(chunk.to_vec()).unwrap();
        assert!(text.starts_with(':'), "not a comment: {text:?}");
        let waited = opened.elapsed();
        assert!(
            waited >= hands_server::KEEP_ALIVE * n
                && waited < hands_server::KEEP_ALIVE * n + Duration::from_secs(1),
            "comment {n} after {waited:?}"
        );
    }
}

#[tokio::test]
async fn the_transcript_from_an_offset_is_its_tail() {
    let model = Scripted::new([Reply::Text(vec!["one".into()]), Reply::Text(vec!["two".into()])]);
    let server = TestServer::start(Some(model)).await;
    let id = server.session(json!({})).await;
    let mut after = 0;
    for text in ["first", "second"] {
        let (status, body) =
            server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": text})).await;
        assert_eq!(status, 202, "{body}");
        let events = server.events_until(&id, after, |m| m.event == "turn_ended").await;
        after = events.last().unwrap().id.unwrap();
    }
    let path = format!("/v1/sessions/{id}/messages");
    let (_, all) = server.get(&path).await;
    let all = all["messages"].as_array().unwrap().clone();
    assert_eq!(all.len(), 4, "{all:?}");
    let (status, tail) = server.get(&format!("{path}?offset=2")).await;
    assert_eq!(status, 200, "{tail}");
    assert_eq!(tail["messages"].as_array().unwrap(), &all[2..]);
    let (_, none) = server.get(&format!("{path}?offset=99")).await;
    assert_eq!(none["messages"], json!([]));
    let (status, bad) = server.get(&format!("{path}?offset=-1")).await;
    assert_eq!(status, 400, "{bad}");
}
