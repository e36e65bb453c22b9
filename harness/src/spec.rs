//! What tonic reports versus what the gRPC specification requires.
//!
//! tonic maps some failures to codes the spec does not use for them
//! (measured with tonic 0.14.9; see the rules below). The trace keeps both:
//! the status exactly as tonic reported it, and the spec's code with the
//! rule that maps one to the other. A difference is a *finding* about the
//! stack under test, not a harness failure.
//!
//! Only a status tonic generated itself is mapped: one made from a local
//! error (its deadline timer, a transport, hyper or h2 error), which tonic
//! marks by keeping that error as the status's
//! [`source`](std::error::Error::source). A status read from the peer's
//! `grpc-status` has no source: the peer chose it, and it is shown as
//! sent, even when its words are tonic's (`CANCELLED "Timeout expired"`
//! passed on by a gateway whose own deadline expired, or an `UNKNOWN`
//! whose message looks like an h2 error).

use tonic::{Code, Status};

/// The rules the harness applies, each with its source.
pub mod rules {
    /// tonic reports an expired client deadline as CANCELLED "Timeout
    /// expired"; gRPC `doc/statuscodes.md` and `PROTOCOL-HTTP2.md` (Client
    /// Cancellation) require DEADLINE_EXCEEDED.
    pub const DEADLINE: &str = "deadline expired: spec DEADLINE_EXCEEDED (statuscodes.md)";
    /// tonic reports an I/O failure on an open stream (connection reset,
    /// peer crashed, keepalive timeout on a flowing stream) as UNKNOWN; the
    /// spec lists connection failures under UNAVAILABLE (statuscodes.md).
    pub const CONNECTION: &str = "connection failed: spec UNAVAILABLE (statuscodes.md)";
    /// tonic reports a stream refused by GOAWAY(NO_ERROR) (its id above the
    /// GOAWAY's last-stream-id) as INTERNAL "h2 protocol error: http2
    /// error": it maps the h2 reason NO_ERROR to INTERNAL as it would for
    /// an RST_STREAM(NO_ERROR). RFC 9113 §6.8 says such a stream was not
    /// processed and is safe to retry, which gRPC maps to UNAVAILABLE
    /// (`PROTOCOL-HTTP2.md`, GOAWAY; statuscodes.md).
    pub const GOAWAY: &str = "stream not processed before GOAWAY: spec UNAVAILABLE (RFC 9113 §6.8)";
}

/// The gRPC status code names of grpc `doc/statuscodes.md`, indexed by code.
pub(crate) const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The gRPC name of a code, as in `doc/statuscodes.md` and service configs
/// (`DEADLINE_EXCEEDED`).
pub fn code_name(code: Code) -> &'static str {
    // `Code` is a fieldless enum with discriminants 0..=16, so the index is
    // in range; the fallback only guards a future tonic adding codes.
    CODE_NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// The code for a gRPC name (`"UNAVAILABLE"`); exact, upper-case match only,
/// as grpc-go's `codes.Code.UnmarshalJSON` accepts.
pub fn code_from_name(name: &str) -> Option<Code> {
    CODE_NAMES
        .iter()
        .position(|n| *n == name)
        .and_then(|i| i32::try_from(i).ok())
        .map(Code::from_i32)
}

/// The code the gRPC specification requires for the situation `status`
/// describes, and the rule used when it differs from `status.code()`.
///
/// ```
/// use tonic::{Code, Status, TimeoutExpired};
/// // What tonic makes of its own deadline timer firing.
/// let tonic_said = Status::from_error(Box::new(TimeoutExpired(())));
/// assert_eq!(tonic_said.code(), Code::Cancelled);
/// assert_eq!(grpc_chaos::spec::classify(&tonic_said).0, Code::DeadlineExceeded);
/// // The same words in a peer's trailers are the peer's choice.
/// let peer_sent = Status::cancelled("Timeout expired");
/// assert_eq!(grpc_chaos::spec::classify(&peer_sent).0, Code::Cancelled);
/// ```
pub fn classify(status: &Status) -> (Code, Option<&'static str>) {
    if !generated_locally(status) {
        return (status.code(), None);
    }
    let message = status.message();
    match status.code() {
        // tonic's `TimeoutExpired` error becomes this exact status.
        Code::Cancelled if message == "Timeout expired" => {
            (Code::DeadlineExceeded, Some(rules::DEADLINE))
        }
        Code::Unknown if is_connection_failure(message) => {
            (Code::Unavailable, Some(rules::CONNECTION))
        }
        Code::Internal
            if message.contains("GOAWAY")
                || message.contains("go away")
                || refused_by_goaway(status) =>
        {
            (Code::Unavailable, Some(rules::GOAWAY))
        }
        code => (code, None),
    }
}

/// The code the gRPC specification requires where tonic reported `status`.
///
/// Use it in assertions so a test states the behaviour the spec asks for,
/// while the trace still shows what tonic said.
pub fn spec_code(status: &Status) -> Code {
    classify(status).0
}

/// Whether tonic made `status` from a local error (see the module docs):
/// `Status::from_error` keeps that error as the source; a status decoded
/// from trailers (`Status::from_header_map`) has none.
fn generated_locally(status: &Status) -> bool {
    std::error::Error::source(status).is_some()
}

/// Whether the status comes from the peer's GOAWAY(NO_ERROR) failing the
/// stream. tonic's message does not say (it is `h2 protocol error: http2
/// error` for every h2 reason), so this reads the error chain tonic keeps as
/// the status's source: h2 0.4 renders a GOAWAY received from the peer as
/// `connection error received: <reason>`, and NO_ERROR as `not a result of
/// an error`, followed by ` (b"<debug data>")` when the GOAWAY carried
/// debug data. h2 fails a stream with a *graceful* GOAWAY only when the
/// stream was above last-stream-id (or was opened after the GOAWAY):
/// streams at or below it run on (h2 `Streams::recv_go_away`), so such a
/// stream was never processed.
fn refused_by_goaway(status: &Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        let text = e.to_string();
        if let Some(rest) = text.strip_prefix("connection error received: not a result of an error")
        {
            if rest.is_empty() || rest.starts_with(" (b\"") {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// tonic's messages for transport failures on an open stream
/// (`Status::from_error` on hyper/h2 errors).
fn is_connection_failure(message: &str) -> bool {
    [
        "h2 protocol error",
        "transport error",
        "connection",
        "broken pipe",
    ]
    .iter()
    .any(|m| message.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `status` as tonic makes it from a local error.
    fn local(mut status: Status) -> Status {
        status.set_source(std::sync::Arc::new(std::io::Error::other("local")));
        status
    }

    #[test]
    fn timeout_expired_is_deadline_exceeded() {
        let tonic_said = Status::from_error(Box::new(tonic::TimeoutExpired(())));
        let (code, rule) = classify(&tonic_said);
        assert_eq!(code, Code::DeadlineExceeded);
        assert_eq!(rule, Some(rules::DEADLINE));
    }

    #[test]
    fn a_peers_timeout_words_are_the_peers_code() {
        // A gateway passing on its own expired deadline sends these words
        // in trailers: the player's tonic reports what was sent.
        assert_eq!(
            classify(&Status::cancelled("Timeout expired")),
            (Code::Cancelled, None)
        );
        let sent = Status::unknown("h2 protocol error: error reading a body from connection");
        assert_eq!(classify(&sent), (Code::Unknown, None));
    }

    #[test]
    fn user_cancellation_stays_cancelled() {
        assert_eq!(
            classify(&local(Status::cancelled("user gave up"))),
            (Code::Cancelled, None)
        );
    }

    #[test]
    fn io_failure_on_open_stream_is_unavailable() {
        let s = local(Status::unknown(
            "h2 protocol error: error reading a body from connection",
        ));
        assert_eq!(classify(&s), (Code::Unavailable, Some(rules::CONNECTION)));
    }

    #[test]
    fn application_unknown_is_kept() {
        assert_eq!(classify(&Status::unknown("bad score")).0, Code::Unknown);
        assert_eq!(
            classify(&local(Status::unknown("bad score"))).0,
            Code::Unknown
        );
    }

    /// An error that displays as `text`, standing in for the h2 error at
    /// the end of the chain tonic keeps.
    #[derive(Debug)]
    struct H2Like(&'static str);

    impl std::fmt::Display for H2Like {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for H2Like {}

    fn internal_from(h2: &'static str) -> Status {
        let mut s = Status::internal("h2 protocol error: http2 error");
        s.set_source(std::sync::Arc::new(H2Like(h2)));
        s
    }

    #[test]
    fn graceful_goaway_above_last_stream_id_is_unavailable() {
        let s = internal_from("connection error received: not a result of an error");
        assert_eq!(classify(&s), (Code::Unavailable, Some(rules::GOAWAY)));
        // h2 adds the GOAWAY's debug data, when there is some.
        let s = internal_from(r#"connection error received: not a result of an error (b"bye")"#);
        assert_eq!(classify(&s), (Code::Unavailable, Some(rules::GOAWAY)));
    }

    #[test]
    fn reset_with_no_error_stays_internal() {
        // RST_STREAM(NO_ERROR) without a status: PROTOCOL-HTTP2.md maps it
        // to INTERNAL, as tonic does.
        let s = internal_from("stream error received: not a result of an error");
        assert_eq!(classify(&s), (Code::Internal, None));
        assert_eq!(
            classify(&local(Status::internal("h2 protocol error: http2 error"))),
            (Code::Internal, None)
        );
    }
}
