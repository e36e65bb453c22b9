//! The words of what handler faults and middleboxes did
//! ([`FaultAction`], [`PolicyAction`]): the recorder keeps the numbers,
//! codes and durations; this is the one place that says them. The rows,
//! the waits' reasons and a middlebox's close reasons all read from here.

use std::fmt::Write as _;

use crate::recorder::event::{
    FaultAction, FaultReply, IdleReset, PolicyAction, PolicyEnd, TimerRanOut, UpstreamReply,
    UpstreamSince, Writer,
};
use crate::units::fmt_duration;

/// `delay 2000ms`, `abort UNAVAILABLE pushback=500ms`, `hang`,
/// `fail 1/3 with UNAVAILABLE after headers`.
pub(crate) fn fault(action: &FaultAction) -> String {
    match action {
        FaultAction::Delay { by } => format!("delay {}", fmt_duration(*by)),
        FaultAction::Abort { code, reply } => format!("abort {code}{}", fault_reply(reply)),
        FaultAction::Hang => "hang".to_owned(),
        FaultAction::FailFirst {
            nth,
            of,
            code,
            reply,
        } => format!("fail {nth}/{of} with {code}{}", fault_reply(reply)),
    }
}

/// ` pushback=500ms`, ` after headers`, or nothing.
fn fault_reply(reply: &FaultReply) -> String {
    let mut out = String::new();
    if let Some(ms) = reply.pushback_ms {
        let _ = write!(out, " pushback={ms}ms");
    }
    if reply.after_headers {
        out.push_str(" after headers");
    }
    out
}

/// What a middlebox did, as its row says it after `c1 <name>: `.
pub(crate) fn policy(action: &PolicyAction) -> String {
    match action {
        PolicyAction::ResetStream { stream, code, why } => {
            format!("RST_STREAM({code}) on s{stream} both ways: {}", timer(why))
        }
        PolicyAction::ForgetFlow { why } => format!(
            "forgets the flow, nothing sent: {}; the next frame either way is answered with a \
             reset",
            timer(why)
        ),
        PolicyAction::GoAwayThenClose {
            code,
            last_stream,
            why,
        } => format!(
            "GOAWAY({code}, last s{last_stream}) then close: {}",
            timer(why)
        ),
        PolicyAction::AnswersServerPings => "answers the server's PINGs itself: this and every \
                                             later PING the server writes on the connection is \
                                             ACKed by the box and does not reach the client"
            .to_owned(),
        PolicyAction::AnswersPings => "answers PINGs itself: this and every later PING of the \
                                       connection is ACKed by the box and does not reach the \
                                       server"
            .to_owned(),
        PolicyAction::LifetimeGoAway {
            last_stream,
            after,
            grace,
        } => format!(
            "GOAWAY(NO_ERROR, last s{last_stream}): connection lifetime {} reached; close in {}",
            fmt_duration(*after),
            fmt_duration(*grace)
        ),
        PolicyAction::UpstreamTimeout {
            stream,
            after,
            since,
            reply,
            reset_upstream,
            upstream_code,
        } => format!(
            "s{stream} upstream timeout {} ({}): {}; {}",
            fmt_duration(*after),
            upstream_since(since),
            upstream_reply(reply),
            if *reset_upstream {
                format!("RST_STREAM({upstream_code}) to the server")
            } else {
                "the server's handler is not told (reset_upstream: false)".to_owned()
            }
        ),
        PolicyAction::LateHeaders { stream } => format!(
            "s{stream} was ended by the box: the server's late HEADERS goes on with END_STREAM \
             cleared, so the client's HPACK decoder stays in step and h2 answers a stream \
             error, which the box swallows"
        ),
        PolicyAction::RefusedStream {
            stream,
            open,
            limit,
        } => format!(
            "RST_STREAM(REFUSED_STREAM) on s{stream}: {open} streams open, the limit it \
             advertised is {limit} (RFC 9113 §5.1.2); the header block goes on to the server \
             with `connection: close` appended, so its HPACK decoder stays in step and h2 \
             rejects the request before any handler"
        ),
        PolicyAction::DrainStarted {
            code,
            drain_timeout,
            why,
        } => format!(
            "GOAWAY({code}, last s2147483647) starts a drain: {}; the last stream's GOAWAY \
             in {}",
            timer(why),
            fmt_duration(*drain_timeout)
        ),
        PolicyAction::DrainGoAway {
            code,
            last_stream,
            close_delay,
        } => format!(
            "GOAWAY({code}, last s{last_stream}): the drain is over; close in {}",
            fmt_duration(*close_delay)
        ),
        PolicyAction::StreamIdleReply {
            reply,
            upstream_code,
            why,
            ..
        } => format!(
            "{}: {}; RST_STREAM({upstream_code}) to the server",
            timer(why),
            upstream_reply(reply)
        ),
        PolicyAction::RewritesServerReset { stream, from, to } => format!(
            "the server's RST_STREAM({from}) on s{stream} goes on to the client as \
             RST_STREAM({to}), the box's own reset"
        ),
        PolicyAction::AdvertisesMaxStreams { value } => format!(
            "advertises SETTINGS_MAX_CONCURRENT_STREAMS = {value} to the client, in place of \
             the server's SETTINGS"
        ),
    }
}

/// Which timer ran out: `idle timeout 350000ms: no frame since 1ms`,
/// `s1 idle timeout 60000ms: no DATA or HEADERS from the client since …`,
/// `stream lifetime 5000ms reached (opened at 1ms)`. Also a middlebox's close
/// reason.
pub(crate) fn timer(why: &TimerRanOut) -> String {
    match why {
        TimerRanOut::Idle {
            stream,
            after,
            reset_by,
            written_by,
            since,
        } => {
            let what = match stream {
                Some(id) => format!("s{id} idle timeout"),
                None => "idle timeout".to_owned(),
            };
            let writers = match written_by {
                None => "",
                Some(Writer::Client) => " from the client",
                Some(Writer::Server) => " from the server",
            };
            let since = fmt_duration(*since);
            let reset = match reset_by {
                IdleReset::Never => format!("open since {since}"),
                IdleReset::AnyFrame => format!("no frame{writers} since {since}"),
                IdleReset::Frames(types) if types.is_empty() => {
                    format!("no nothing{writers} since {since}")
                }
                IdleReset::Frames(types) => {
                    let names: Vec<String> = types.iter().map(ToString::to_string).collect();
                    format!("no {}{writers} since {since}", names.join(" or "))
                }
            };
            format!("{what} {}: {reset}", fmt_duration(*after))
        }
        TimerRanOut::StreamLifetime { after, opened } => format!(
            "stream lifetime {} reached (opened at {})",
            fmt_duration(*after),
            fmt_duration(*opened)
        ),
    }
}

/// `from the end of the request at 5ms`, `nothing read from the server
/// since 5ms`.
fn upstream_since(since: &UpstreamSince) -> String {
    match since {
        UpstreamSince::RequestEnd { at } => {
            format!("from the end of the request at {}", fmt_duration(*at))
        }
        UpstreamSince::LastRead { at } => {
            format!("nothing read from the server since {}", fmt_duration(*at))
        }
    }
}

/// What the client got: `RST_STREAM(CANCEL) to the client (its response
/// headers went out)`, `a trailers-only response grpc-status=14 "…" to the
/// client`, `:status 504 (text/plain, 24 bytes of body) to the client`.
fn upstream_reply(reply: &UpstreamReply) -> String {
    match reply {
        UpstreamReply::RstStream { code } => {
            format!("RST_STREAM({code}) to the client (its response headers went out)")
        }
        UpstreamReply::TrailersOnly { status, message } => {
            format!("a trailers-only response grpc-status={status} {message:?} to the client")
        }
        UpstreamReply::Http {
            status,
            content_type,
            body_len,
        } => format!(":status {status} ({content_type}, {body_len} bytes of body) to the client"),
    }
}

/// Why a policy closed or reset a connection, in the words its row and the
/// JSON export give: a policy's own words as it said them, the middlebox's
/// timer as [`timer`] says it, `frame after the idle timeout: RST; the flow
/// was forgotten at 1ms, this DATA from the client did not pass`,
/// `connection lifetime 5000ms: grace 1000ms after its GOAWAY over`.
pub(crate) fn policy_end(why: &PolicyEnd) -> String {
    match why {
        PolicyEnd::Said(words) => words.clone(),
        PolicyEnd::Timer(t) => timer(t),
        PolicyEnd::ForgottenFlow { at, frame, from } => format!(
            "frame after the idle timeout: RST; the flow was forgotten at {}, this {frame} from \
             the {} did not pass",
            fmt_duration(*at),
            match from {
                Writer::Client => "client",
                Writer::Server => "server",
            }
        ),
        PolicyEnd::LifetimeNoGrace { after } => format!(
            "connection lifetime {}: closed right after its GOAWAY",
            fmt_duration(*after)
        ),
        PolicyEnd::DrainOver { close_delay } => format!(
            "drain over: closed {} after its last GOAWAY",
            fmt_duration(*close_delay)
        ),
        PolicyEnd::LifetimeGraceOver { after, grace } => format!(
            "connection lifetime {}: grace {} after its GOAWAY over",
            fmt_duration(*after),
            fmt_duration(*grace)
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{fault, policy, timer};
    use crate::recorder::event::{
        FaultAction, FaultReply, IdleReset, PolicyAction, TimerRanOut, UpstreamReply,
        UpstreamSince, Writer,
    };
    use crate::wire::{ErrorCode, FrameType};

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn fault_acts_read_as_the_rules_say_them() {
        assert_eq!(fault(&FaultAction::Delay { by: MS(300) }), "delay 300ms");
        assert_eq!(fault(&FaultAction::Hang), "hang");
        let reply = FaultReply {
            pushback_ms: Some(500),
            after_headers: true,
        };
        let abort = FaultAction::Abort {
            code: "UNAVAILABLE",
            reply,
        };
        assert_eq!(
            fault(&abort),
            "abort UNAVAILABLE pushback=500ms after headers"
        );
        let fail = FaultAction::FailFirst {
            nth: 1,
            of: 3,
            code: "UNAVAILABLE",
            reply: FaultReply::default(),
        };
        assert_eq!(fault(&fail), "fail 1/3 with UNAVAILABLE");
    }

    #[test]
    fn an_idle_timer_says_what_would_have_reset_it() {
        let idle = |stream, reset_by, written_by| TimerRanOut::Idle {
            stream,
            after: MS(60_000),
            reset_by,
            written_by,
            since: MS(5),
        };
        let frames = IdleReset::Frames(vec![FrameType::Data, FrameType::Headers]);
        assert_eq!(
            timer(&idle(Some(3), frames, Some(Writer::Client))),
            "s3 idle timeout 60000ms: no DATA or HEADERS from the client since 5ms"
        );
        assert_eq!(
            timer(&idle(None, IdleReset::AnyFrame, None)),
            "idle timeout 60000ms: no frame since 5ms"
        );
        assert_eq!(
            timer(&idle(None, IdleReset::Never, None)),
            "idle timeout 60000ms: open since 5ms"
        );
        let life = TimerRanOut::StreamLifetime {
            after: MS(1000),
            opened: MS(2),
        };
        let reset = PolicyAction::ResetStream {
            stream: 1,
            code: ErrorCode::Cancel,
            why: life,
        };
        assert_eq!(
            policy(&reset),
            "RST_STREAM(CANCEL) on s1 both ways: stream lifetime 1000ms reached (opened at 2ms)"
        );
    }

    #[test]
    fn an_upstream_timeout_says_what_each_end_got() {
        let act = PolicyAction::UpstreamTimeout {
            stream: 1,
            after: MS(100),
            since: UpstreamSince::LastRead { at: MS(7) },
            reply: UpstreamReply::Http {
                status: 504,
                content_type: "text/plain".into(),
                body_len: 15,
            },
            reset_upstream: false,
            upstream_code: ErrorCode::Cancel,
        };
        assert_eq!(
            policy(&act),
            "s1 upstream timeout 100ms (nothing read from the server since 7ms): :status 504 \
             (text/plain, 15 bytes of body) to the client; the server's handler is not told \
             (reset_upstream: false)"
        );
    }
}
