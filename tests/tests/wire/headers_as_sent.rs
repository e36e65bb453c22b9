//! HEADERS rows show the headers that matter as sent: the user's metadata
//! (ASCII values as sent, `-bin` values by their length), `grpc-encoding`,
//! `grpc-accept-encoding`, a `content-type` other than `application/grpc`;
//! what every tonic call carries stays out of the row unless asked for,
//! and the JSON keeps every field.
//!
//! The workspace builds tonic without its `gzip`/`deflate`/`zstd`
//! features, so tonic itself never sends `grpc-encoding` or
//! `grpc-accept-encoding` here (`client/grpc.rs` sends the first only with
//! a send encoding, the second only with an accept encoding enabled).
//! The encodings are exercised by a raw peer instead (`Host::raw_connect`),
//! which tonic's server answers as it would a real compressing client.

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{FrameDetail, HeaderFields, ShownHeader};
use grpc_chaos::trace::{MaskMetadata, RenderOptions};
use grpc_chaos::wire::{encode, frame::PREFACE, BlockKind};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::metadata::MetadataValue;

/// A player that saves once with ASCII metadata (`tenant`,
/// `authorization`) and a binary one (`trace-bin`, three octets), in a run
/// that records credentials as sent when `show_credentials`.
fn with_metadata_showing(show_credentials: bool) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(3)
        .show_credentials(show_credentials)
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |player| async move {
        let mut req = tonic::Request::new(SaveRequest {
            match_id: "m1".into(),
            points: 1,
        });
        req.metadata_mut().insert("tenant", "blue".parse()?);
        req.metadata_mut().insert("authorization", "token".parse()?);
        req.metadata_mut()
            .insert_bin("trace-bin", MetadataValue::from_bytes(&[0, 1, 2]));
        StoreClient::new(player.channel("store")).save(req).await?;
        Ok(())
    });
    sim.run()
}

/// [`with_metadata_showing`] with credentials shown.
fn with_metadata() -> grpc_chaos::Result<Trace> {
    with_metadata_showing(true)
}

/// The typed fields of the first request HEADERS the player wrote.
fn request_block(trace: &Trace) -> HeaderFields {
    trace
        .events_on("player")
        .find_map(|e| match &e.kind {
            EventKind::Frame {
                detail: FrameDetail::Headers(b),
                ..
            } if b.kind() == BlockKind::Request => Some(b.clone()),
            _ => None,
        })
        .expect("a request block")
}

/// The row of the first request HEADERS `host` wrote.
fn request_row(text: &str, host: &str) -> String {
    text.lines()
        .find(|l| l.contains(&format!("{host}→")) && l.contains("HEADERS POST"))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn credentials_are_masked_by_default_in_every_render_and_the_json() -> grpc_chaos::Result {
    let trace = with_metadata_showing(false)?;
    let row = request_row(&trace.render(), "player");
    assert!(
        row.ends_with(
            "HEADERS POST /tt.v1.Store/Save tenant=blue authorization=<masked> trace-bin=<3 bytes>"
        ),
        "{row}"
    );
    // Nowhere, not even with every header and in the typed event.
    let mut all = RenderOptions::everything();
    all.all_headers = true;
    for (what, out) in [
        ("text", trace.render_with(&all)),
        ("JSON", trace.to_json()),
        ("page", trace.render_html_with(&all)),
        ("Perfetto", trace.to_perfetto()),
    ] {
        assert!(!out.contains("token"), "the {what} has the token");
    }
    assert!(
        trace.to_json().contains(r#""<masked>""#),
        "the key stays, masked"
    );
    let block = request_block(&trace);
    assert_eq!(block.field("authorization"), Some("<masked>"));
    assert_eq!(
        block.field("tenant"),
        Some("blue"),
        "other metadata as sent"
    );
    Ok(())
}

#[test]
fn metadata_is_shown_as_sent_and_binary_by_its_length() -> grpc_chaos::Result {
    let trace = with_metadata()?;
    let row = request_row(&trace.render(), "player");
    assert!(
        row.ends_with(
            "HEADERS POST /tt.v1.Store/Save tenant=blue authorization=token trace-bin=<3 bytes>"
        ),
        "{row}"
    );
    // What every tonic call carries stays out of the default row.
    for routine in ["user-agent", "te=", "content-type", "x-grpc-chaos-call"] {
        assert!(!row.contains(routine), "{routine} in {row}");
    }
    // The response's routine fields too: `:status=200` alone.
    let text = trace.render();
    let response = text
        .lines()
        .find(|l| l.contains("store→player") && l.contains("HEADERS :status"))
        .unwrap_or_default();
    assert!(response.ends_with("HEADERS :status=200"), "{response}");
    Ok(())
}

#[test]
fn every_header_and_masked_metadata_on_request() -> grpc_chaos::Result {
    let trace = with_metadata()?;
    let mut all = RenderOptions::default();
    all.all_headers = true;
    let row = request_row(&trace.render_with(&all), "player");
    for field in [
        ":scheme=http",
        ":authority=store:50051",
        "content-type=application/grpc",
        "te=trailers",
        "user-agent=tonic/0.14.9",
        "x-grpc-chaos-call=1",
        "tenant=blue",
        "trace-bin=<3 bytes>",
    ] {
        assert!(row.contains(field), "{field} not in {row}");
    }
    let mut masked = RenderOptions::default();
    masked.mask_metadata = MaskMetadata::Keys(vec!["authorization".into()]);
    let row = request_row(&trace.render_with(&masked), "player");
    assert!(
        row.contains("tenant=blue authorization=<masked> trace-bin"),
        "{row}"
    );
    masked.mask_metadata = MaskMetadata::All;
    let row = request_row(&trace.render_with(&masked), "player");
    assert!(
        row.ends_with("tenant=<masked> authorization=<masked> trace-bin=<masked>"),
        "{row}"
    );
    let page = trace.render_html_with(&masked);
    assert!(!page.contains("token"), "the page masks too");
    // The typed event and the JSON keep every field, values whole.
    let block = request_block(&trace);
    assert_eq!(block.field("trace-bin"), Some("AAEC"), "base64, as sent");
    assert_eq!(block.field("user-agent"), Some("tonic/0.14.9"));
    assert_eq!(
        block.get(ShownHeader::ContentType),
        Some("application/grpc")
    );
    let keys: Vec<&str> = block.metadata().map(|(k, _)| k).collect();
    assert_eq!(keys, ["tenant", "authorization", "trace-bin"]);
    let json = trace.to_json();
    assert!(json.contains(r#""trace-bin","#) && json.contains(r#""AAEC""#));
    assert!(json.contains(r#""te","#) && json.contains(r#""token""#));
    Ok(())
}

/// A raw client that sends a Save with `grpc-encoding: gzip`, a
/// `grpc-accept-encoding` and a `content-type` with a subtype, its message
/// flagged compressed.
fn compressed_request() -> Trace {
    let mut sim = Sim::builder().seed(5).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("mallory", |host| async move {
        tokio::time::sleep(ms(5)).await;
        let mut conn = host.raw_connect("store").await?;
        let mut bytes = PREFACE.to_vec();
        bytes.extend(encode::settings(&[]));
        let block = encode::hpack_literal(&[
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/tt.v1.Store/Save"),
            (":authority", "store:50051"),
            ("content-type", "application/grpc+proto"),
            ("te", "trailers"),
            ("grpc-encoding", "gzip"),
            ("grpc-accept-encoding", "gzip,identity"),
        ]);
        bytes.extend(encode::headers(1, &block, false, true));
        // A 2-octet "compressed" message: flag 1, length 2.
        bytes.extend(encode::data(1, &[1, 0, 0, 0, 2, 0x1f, 0x8b], true));
        conn.write_all(&bytes).await?;
        let mut buf = vec![0u8; 4096];
        let _ = tokio::time::timeout(ms(50), conn.read(&mut buf)).await;
        Ok(())
    });
    match sim.run() {
        Ok(trace) => trace,
        Err(e) => panic!("the run must go on: {e}"),
    }
}

#[test]
fn encodings_and_a_grpc_subtype_are_shown() {
    let trace = compressed_request();
    let text = trace.render();
    let row = request_row(&text, "mallory");
    assert!(
        row.ends_with(
            "HEADERS POST /tt.v1.Store/Save content-type=application/grpc+proto grpc-encoding=gzip grpc-accept-encoding=gzip,identity"
        ),
        "{row}\n{text}"
    );
    // tonic's server, built without gzip, refuses the message and says
    // what it accepts (`codec/compression.rs`, `from_encoding_header`).
    let answer = text
        .lines()
        .find(|l| l.contains("store→mallory") && l.contains("HEADERS trailers-only"))
        .unwrap_or_default();
    assert!(
        answer.ends_with("HEADERS trailers-only grpc-accept-encoding=identity grpc-status=12 grpc-message=\"Content%20is%20compressed%20with%20%60gzip%60%20which%20isn't%20supported\" END_STREAM"),
        "{answer}\n{text}"
    );
}

/// A DATA frame that starts a gRPC message says when its Compressed-Flag
/// is set; the JSON carries the flag of every DATA frame.
#[test]
fn a_data_row_says_compressed_when_the_flag_is_set() -> grpc_chaos::Result {
    let text = compressed_request().render();
    assert!(
        text.contains("mallory→store        c1 s1 DATA 7 bytes compressed END_STREAM"),
        "{text}"
    );
    // tonic sends identity messages: flag 0, nothing in the row.
    let trace = with_metadata()?;
    let text = trace.render();
    let data: Vec<&str> = text.lines().filter(|l| l.contains(" DATA ")).collect();
    assert!(
        !data.is_empty() && data.iter().all(|l| !l.contains("compressed")),
        "{text}"
    );
    let flags: Vec<Option<u8>> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                detail:
                    FrameDetail::Data {
                        compressed_flag, ..
                    },
                ..
            } => Some(*compressed_flag),
            _ => None,
        })
        .collect();
    // Each way: the message's frame, then the empty END_STREAM frame or
    // none (the response ends with trailers).
    assert!(
        flags.contains(&Some(0)) && flags.contains(&None),
        "{flags:?}"
    );
    assert!(trace.to_json().contains(r#""compressed_flag": 0"#));
    Ok(())
}
