//! What a recording says, real or simulated, as marks: the frames that
//! matter to a gRPC client or to the backend, each with its time in ms
//! from the request's HEADERS (from the connection's start when there is
//! no request).

use std::time::Duration;

use grpc_chaos::recorder::event::{EventKind, Fate, FrameDetail, FrameFlags};
use grpc_chaos::Trace;
use serde_json::Value;

/// One frame (or the connection's end) as the comparison sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// ms from the request's HEADERS.
    pub t: f64,
    /// The stream (0: the connection).
    pub stream: u32,
    /// `HEADERS :status 504`, `RST_STREAM INTERNAL_ERROR`, `GOAWAY NO_ERROR
    /// last 1`, `PING`, `closed`; `SETTINGS k=v …` and `WINDOW_UPDATE n`.
    pub what: String,
}

/// One scenario's marks at both ends.
#[derive(Debug, Default, Clone)]
pub struct Recording {
    /// What the client received.
    pub client: Vec<Mark>,
    /// What the backend received on its connections from the box.
    pub backend: Vec<Mark>,
}

fn headers_word(fields: &[(String, String)], end_stream: bool) -> String {
    let key = ["grpc-status", ":status"]
        .iter()
        .find_map(|k| fields.iter().find(|(n, _)| n == k))
        .map_or(String::new(), |(n, v)| format!(" {n} {v}"));
    format!(
        "HEADERS{key}{}",
        if end_stream { " END_STREAM" } else { "" }
    )
}

fn end_word(end_stream: bool) -> &'static str {
    if end_stream {
        " END_STREAM"
    } else {
        ""
    }
}

/// The marks of a fixture's frame list (`client.frames` or a backend
/// connection's `frames`), times shifted by `t0`.
fn real_frames(frames: &Value, end: &Value, t0: f64) -> Vec<Mark> {
    let mut out = Vec::new();
    for f in frames.as_array().into_iter().flatten() {
        let flags: Vec<&str> = f["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let end_stream = flags.contains(&"END_STREAM");
        let what = match f["type"].as_str().unwrap_or("") {
            "HEADERS" => {
                let fields: Vec<(String, String)> = f["headers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        (
                            p[0].as_str().unwrap_or("").into(),
                            p[1].as_str().unwrap_or("").into(),
                        )
                    })
                    .collect();
                headers_word(&fields, end_stream)
            }
            "DATA" => format!("DATA{}", end_word(end_stream)),
            "RST_STREAM" => format!("RST_STREAM {}", f["error_code"].as_str().unwrap_or("?")),
            "GOAWAY" => format!(
                "GOAWAY {} last {}",
                f["error_code"].as_str().unwrap_or("?"),
                f["last_stream_id"]
            ),
            "PING" if flags.contains(&"ACK") => continue,
            "PING" => "PING".to_owned(),
            "SETTINGS" if flags.contains(&"ACK") => continue,
            "SETTINGS" => {
                let map = f["settings"].as_object().cloned().unwrap_or_default();
                let mut pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                pairs.sort();
                format!("SETTINGS {}", pairs.join(" "))
            }
            "WINDOW_UPDATE" => format!("WINDOW_UPDATE {}", f["increment"]),
            _ => continue,
        };
        out.push(Mark {
            t: f["t_ms"].as_f64().unwrap_or(0.0) - t0,
            stream: f["stream"].as_u64().unwrap_or(0) as u32,
            what,
        });
    }
    if let Some(at) = end["t_ms"].as_f64() {
        out.push(Mark {
            t: at - t0,
            stream: 0,
            what: "closed".to_owned(),
        });
    }
    out
}

/// A fixture's recording.
pub fn real(fixture: &Value) -> Recording {
    let t0 = fixture["client"]["requests"][0]["t_ms"]
        .as_f64()
        .unwrap_or(0.0);
    let client = real_frames(&fixture["client"]["frames"], &fixture["client"]["end"], t0);
    let mut backend = Vec::new();
    for c in fixture["backend_connections"]
        .as_array()
        .into_iter()
        .flatten()
    {
        backend.extend(real_frames(&c["frames"], &c["end"], t0));
    }
    Recording { client, backend }
}

fn ms_of(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A sim trace's recording: the frames that reached `client` and `server`
/// (passed or written by the box), the box's closes; times from the
/// client's first HEADERS (its first frame when it sent none).
pub fn sim(trace: &Trace, client: &str, server: &str) -> Recording {
    let to_server = |k: &EventKind| matches!(k, EventKind::Frame { to, .. } if &**to == server);
    let t0 = trace
        .events()
        .iter()
        .find(|e| {
            to_server(&e.kind)
                && matches!(
                    e.kind,
                    EventKind::Frame {
                        detail: FrameDetail::Headers(_),
                        ..
                    }
                )
        })
        .or_else(|| trace.events().iter().find(|e| to_server(&e.kind)))
        .map_or(0.0, |e| ms_of(e.at()));
    let mut out = Recording::default();
    for e in trace.events() {
        let t = ms_of(e.at()) - t0;
        match &e.kind {
            EventKind::Frame {
                to,
                stream,
                flags,
                detail,
                fate,
                ..
            } => {
                if matches!(**fate, Fate::Swallowed | Fate::Dropped) {
                    continue;
                }
                let Some(what) = sim_word(detail, *flags) else {
                    continue;
                };
                let mark = Mark {
                    t,
                    stream: *stream,
                    what,
                };
                if &**to == client {
                    out.client.push(mark);
                } else if &**to == server {
                    out.backend.push(mark);
                }
            }
            EventKind::PolicyClosed(_) => {
                let mark = Mark {
                    t,
                    stream: 0,
                    what: "closed".to_owned(),
                };
                out.client.push(mark.clone());
                out.backend.push(mark);
            }
            _ => {}
        }
    }
    out
}

fn sim_word(detail: &FrameDetail, flags: FrameFlags) -> Option<String> {
    let end_stream = flags.contains(FrameFlags::END_STREAM);
    Some(match detail {
        FrameDetail::Headers(h) => {
            let fields: Vec<(String, String)> =
                h.all().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
            headers_word(&fields, end_stream)
        }
        FrameDetail::Data { .. } => format!("DATA{}", end_word(end_stream)),
        FrameDetail::RstStream { code } => format!("RST_STREAM {code}"),
        FrameDetail::GoAway(g) => format!("GOAWAY {} last {}", g.code, g.last_stream_id),
        FrameDetail::Ping { .. } if flags.contains(FrameFlags::ACK) => return None,
        FrameDetail::Ping { .. } => "PING".to_owned(),
        FrameDetail::Settings { .. } if flags.contains(FrameFlags::ACK) => return None,
        FrameDetail::Settings { values } => {
            let mut pairs: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v}")).collect();
            pairs.sort();
            format!("SETTINGS {}", pairs.join(" "))
        }
        FrameDetail::WindowUpdate { increment } => format!("WINDOW_UPDATE {increment}"),
        _ => return None,
    })
}
