//! The rows of a connection policy (keepalive enforcement, a middlebox):
//! pings, strikes, what it did, closes and resets.

use super::discarded_words;
use crate::recorder::event::{self, Event, EventKind};
use crate::trace::render::act_words;
use crate::trace::render::words;

/// The `where` column and text of a policy event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    keepalive(e).or_else(|| middlebox(e))
}

/// The keepalive policy: pings and their verdicts, strikes reset, its close.
fn keepalive(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::KeepalivePing(keepalive_ping) => {
            let event::KeepalivePing {
                conn,
                from,
                verdict,
                strikes,
                gap,
                allowed,
                open_calls,
                after_reset,
            } = &**keepalive_ping;
            (
                host,
                format!(
                    "c{conn} PING from {from}: {}",
                    words::ping_verdict(
                        *verdict,
                        *strikes,
                        *gap,
                        *allowed,
                        *open_calls,
                        *after_reset
                    )
                ),
            )
        }
        EventKind::KeepaliveStrikesReset {
            conn,
            to,
            cleared,
            frame,
        } => (
            format!("{host}→{to}"),
            format!("c{conn} {frame} resets ping strikes ({cleared} cleared)"),
        ),
        EventKind::KeepaliveDataReset {
            conn,
            to,
            cleared,
            stream,
        } => (
            format!("{host}→{to}"),
            format!(
                "c{conn} ping strikes reset ({cleared} cleared): the server's WINDOW_UPDATE for \
                 {to}'s DATA on s{stream}, as C-core writes it (not on the wire)"
            ),
        ),
        EventKind::KeepaliveClosed { conn, to, reason } => (
            format!("{host}→{to}"),
            format!("c{conn} connection closed by the keepalive policy ({reason})"),
        ),
        _ => return None,
    })
}

/// A middlebox (or any connection policy): what it did, its closes and
/// resets.
fn middlebox(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::PolicyClosed(policy_closed) => {
            let event::PolicyClosed {
                conn,
                to,
                policy,
                reason,
            } = &**policy_closed;
            (
                format!("{host}→{to}"),
                format!(
                    "c{conn} connection closed by {policy} ({})",
                    act_words::policy_end(reason)
                ),
            )
        }
        EventKind::PolicyReset(policy_reset) => {
            let event::PolicyReset {
                conn,
                to,
                policy,
                reason,
                discarded,
            } = &**policy_reset;
            let text = format!(
                "c{conn} reset at both ends by {policy} ({}){}",
                act_words::policy_end(reason),
                discarded_words(*discarded)
            );
            (format!("{host}→{to}"), text)
        }
        EventKind::PolicyActed(policy_acted) => {
            let event::PolicyActed {
                conn,
                to,
                policy,
                action,
            } = &**policy_acted;
            (
                format!("{host}→{to}"),
                format!("c{conn} {policy}: {}", act_words::policy(action)),
            )
        }
        _ => return None,
    })
}
