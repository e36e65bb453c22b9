//! The ends of the calls the harness saw only on the wire
//! ([`EventKind::CallSeenOnWire`]: a call through
//! [`Host::tonic_channel`](crate::Host::tonic_channel)), read from the
//! frames of their stream when the trace is built: the server's trailers,
//! or an RST_STREAM. Each end becomes the event a recorded call would have
//! (`CallEnded`, `CallDropped`), at the frame that shows it, so `calls()`,
//! the rows and the findings treat both kinds of call alike.
//!
//! What the wire cannot tell is not made up: the status is the one the
//! trailers carry (the peer's, shown as sent) or the one tonic maps an
//! RST_STREAM to (`status.rs`, `code_from_h2`, which follows
//! `PROTOCOL-HTTP2.md`); a caller that reset its own stream at or after
//! the `grpc-timeout` it sent is tonic's deadline timer (tonic then says
//! CANCELLED "Timeout expired", the spec DEADLINE_EXCEEDED): that timer
//! starts as the request is sent, so one that reset it earlier dropped the
//! call. A call whose connection
//! went away before either stays open: what tonic told its caller then is
//! not on the wire.

use crate::recorder::event;
use std::collections::HashMap;
use std::time::Duration;

use crate::recorder::event::{CallId, Event, EventKind, Fate, FrameDetail, Outcome, ShownHeader};
use crate::wire::{percent_decode, BlockKind, ErrorCode};

/// An open call seen on the wire.
struct Open {
    call: CallId,
    caller: String,
    path: String,
    started: Duration,
    timeout: Option<Duration>,
}

/// `events` with an end after the frame that ends each call seen on the
/// wire.
pub(in crate::trace) fn complete(events: Vec<Event>) -> Vec<Event> {
    if !events
        .iter()
        .any(|e| matches!(e.kind, EventKind::CallSeenOnWire { .. }))
    {
        return events;
    }
    let mut streams: HashMap<CallId, (u32, u32)> = HashMap::new();
    let mut open: HashMap<(u32, u32), Open> = HashMap::new();
    let mut out = Vec::with_capacity(events.len() + 8);
    for e in events {
        let end = match &e.kind {
            EventKind::CallSeenOnWire { call, conn, stream } => {
                streams.insert(*call, (*conn, *stream));
                None
            }
            EventKind::CallStarted(call_started) => {
                let event::CallStarted {
                    call,
                    path,
                    timeout,
                    ..
                } = &**call_started;
                if let Some(key) = streams.remove(call) {
                    open.insert(
                        key,
                        Open {
                            call: *call,
                            caller: e.host.to_string(),
                            path: path.clone(),
                            started: e.at(),
                            timeout: *timeout,
                        },
                    );
                }
                None
            }
            EventKind::Frame {
                conn,
                stream,
                detail,
                fate,
                ..
            } => open
                .get(&(*conn, *stream))
                .and_then(|call| ends(call, &e, detail, fate))
                .map(|kind| (open.remove(&(*conn, *stream)), kind)),
            _ => None,
        };
        let at = e.at();
        out.push(e);
        if let Some((Some(call), kind)) = end {
            out.push(Event::new(at, &call.caller, kind));
        }
    }
    out
}

/// The end `frame` (`e`'s) gives `call`, if it ends it.
fn ends(call: &Open, e: &Event, detail: &FrameDetail, fate: &Fate) -> Option<EventKind> {
    let from_caller = e.host == call.caller;
    // A frame of the server's that never reached the caller ends nothing.
    let arrived = !matches!(
        fate,
        Fate::Dropped | Fate::Lost | Fate::LostBehind | Fate::Swallowed | Fate::Replaced { .. }
    );
    let ended = |outcome| EventKind::CallEnded {
        call: call.call,
        path: call.path.clone().into(),
        outcome: Box::new(outcome),
    };
    match detail {
        FrameDetail::Headers(block)
            if !from_caller
                && arrived
                && matches!(block.kind(), BlockKind::Trailers | BlockKind::TrailersOnly) =>
        {
            let status = block.get(ShownHeader::GrpcStatus);
            let code = status
                .and_then(|s| s.parse::<i32>().ok())
                .map(tonic::Code::from_i32)
                .unwrap_or(tonic::Code::Unknown);
            let message = match status {
                Some(_) => {
                    percent_decode(block.get(ShownHeader::GrpcMessage).unwrap_or("").as_bytes())
                }
                None => "no grpc-status in the trailers".to_owned(),
            };
            let name = crate::spec::code_name(code);
            Some(ended(Outcome {
                code: name,
                message,
                spec_code: name,
                rule: None,
            }))
        }
        FrameDetail::RstStream { code } if from_caller => {
            // tonic's timer for the grpc-timeout starts as the request
            // reaches the connection (`GrpcTimeout` is layered over the
            // connection in tonic's `transport/channel/service/
            // connection.rs`), as its HEADERS leave, and fires at the first
            // tick at or after its instant (measured:
            // tests/tests/trace/trace_queries.rs, the reset lands at exactly the
            // grpc-timeout). A reset before it is the call dropped.
            let at_deadline = call
                .timeout
                .is_some_and(|t| e.at() >= call.started + t && *code == ErrorCode::Cancel);
            Some(if at_deadline {
                ended(Outcome {
                    code: "CANCELLED",
                    message: "Timeout expired".to_owned(),
                    spec_code: "DEADLINE_EXCEEDED",
                    rule: Some(crate::spec::rules::DEADLINE),
                })
            } else {
                EventKind::CallDropped {
                    call: call.call,
                    path: call.path.clone(),
                }
            })
        }
        FrameDetail::RstStream { code } if arrived => {
            let name = crate::spec::code_name(reset_code(*code));
            Some(ended(Outcome {
                code: name,
                message: format!("RST_STREAM {code} from the server"),
                spec_code: name,
                rule: None,
            }))
        }
        _ => None,
    }
}

/// The code tonic gives a stream the server reset (`status.rs`,
/// `code_from_h2`), which is `PROTOCOL-HTTP2.md`'s table.
fn reset_code(code: ErrorCode) -> tonic::Code {
    match code {
        ErrorCode::NoError
        | ErrorCode::ProtocolError
        | ErrorCode::InternalError
        | ErrorCode::FlowControlError
        | ErrorCode::SettingsTimeout
        | ErrorCode::FrameSizeError
        | ErrorCode::CompressionError
        | ErrorCode::ConnectError => tonic::Code::Internal,
        ErrorCode::RefusedStream => tonic::Code::Unavailable,
        ErrorCode::Cancel => tonic::Code::Cancelled,
        ErrorCode::EnhanceYourCalm => tonic::Code::ResourceExhausted,
        ErrorCode::InadequateSecurity => tonic::Code::PermissionDenied,
        _ => tonic::Code::Unknown,
    }
}
