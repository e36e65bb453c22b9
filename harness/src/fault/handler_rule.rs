//! Handler fault rules: which requests they match and what they do.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Semaphore;
use tonic::Code;

/// How a failing handler fault answers (for retry stories).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    /// `grpc-retry-pushback-ms` to send with the status (gRFC A6).
    pub(crate) pushback_ms: Option<i64>,
    /// Send response headers first, then the status in trailers (the call
    /// is committed), instead of a trailers-only response.
    pub(crate) after_headers: bool,
}

impl Reply {
    /// The reply as the trace records it.
    pub(crate) fn recorded(&self) -> crate::recorder::event::FaultReply {
        crate::recorder::event::FaultReply {
            pushback_ms: self.pushback_ms,
            after_headers: self.after_headers,
        }
    }

    /// ` pushback=500ms`, ` after headers`: appended to the fault's trace text.
    pub(crate) fn describe(&self) -> String {
        let mut out = String::new();
        if let Some(ms) = self.pushback_ms {
            out.push_str(&format!(" pushback={ms}ms"));
        }
        if self.after_headers {
            out.push_str(" after headers");
        }
        out
    }
}

/// What a handler fault does to a matching request.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    Delay(Duration),
    Abort(Code, String, Reply),
    Hang,
    FailFirst(u32, Code, Reply),
    ConcurrencyLimit(usize),
}

impl Action {
    /// The action in the trace's words: `fail the first 3 with UNAVAILABLE`.
    pub(crate) fn describe(&self) -> String {
        let code = |c: &Code| crate::spec::code_name(*c);
        match self {
            Self::Delay(d) => format!("delay {}", crate::units::fmt_duration(*d)),
            Self::Abort(c, message, reply) => {
                format!("abort {} {message:?}{}", code(c), reply.describe())
            }
            Self::Hang => "hang".to_owned(),
            Self::FailFirst(n, c, reply) => {
                format!("fail the first {n} with {}{}", code(c), reply.describe())
            }
            Self::ConcurrencyLimit(n) => format!("concurrency limit {n}"),
        }
    }
}

/// One handler fault as added to the sim. Clones share their counters and
/// their semaphore, so "the first N" and "at most N at once" hold across
/// every connection and every restart of the host.
#[derive(Debug, Clone)]
pub(crate) struct HandlerRule {
    pub(crate) host: String,
    pub(crate) method: Option<String>,
    pub(crate) window: Option<(Duration, Duration)>,
    pub(crate) action: Action,
    /// Acts inside the server's own layers, not before them
    /// ([`HandlerFault::inside_layers`](crate::fault::HandlerFault::inside_layers)).
    pub(crate) inside: bool,
    state: Arc<RuleState>,
}

#[derive(Debug, Default)]
struct RuleState {
    matched: AtomicU32,
    /// Requests this rule matched (host, method, window), for the
    /// "never fired" report.
    fired: AtomicU32,
    limiter: OnceLock<Arc<Semaphore>>,
}

impl HandlerRule {
    pub(crate) fn new(
        host: String,
        method: Option<String>,
        window: Option<(Duration, Duration)>,
        action: Action,
    ) -> Self {
        Self {
            host,
            method,
            window,
            action,
            inside: false,
            state: Arc::default(),
        }
    }

    /// The rule, acting inside the server's own layers.
    pub(crate) fn inside_layers(mut self, inside: bool) -> Self {
        self.inside = inside;
        self
    }

    /// Whether a request for `path` on `host` arriving at `at` matches.
    pub(crate) fn matches(&self, host: &str, path: &str, at: Duration) -> bool {
        self.host == host
            && self.method.as_deref().is_none_or(|m| m == path)
            && self
                .window
                .is_none_or(|(from, until)| from <= at && at < until)
    }

    /// Notes that the rule matched a request.
    pub(crate) fn mark_fired(&self) {
        self.state.fired.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the rule ever matched a request.
    pub(crate) fn fired(&self) -> bool {
        self.state.fired.load(Ordering::Relaxed) > 0
    }

    /// The rule in the trace's words, for the "never fired" report.
    pub(crate) fn describe(&self) -> String {
        let method = self.method.as_deref().unwrap_or("every method");
        let window = self.window.map_or(String::new(), |(a, b)| {
            format!(
                " during [{}, {})",
                crate::units::fmt_duration(a),
                crate::units::fmt_duration(b)
            )
        });
        let inside = if self.inside {
            " inside the server's layers"
        } else {
            ""
        };
        format!(
            "handler fault on {}{inside} for {method}{window}: {}",
            self.host,
            self.action.describe()
        )
    }

    /// Counts a match and returns its number (1-based).
    pub(crate) fn count(&self) -> u32 {
        self.state.matched.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The semaphore of a concurrency limit of `n` slots.
    pub(crate) fn limiter(&self, n: usize) -> Arc<Semaphore> {
        self.state
            .limiter
            .get_or_init(|| Arc::new(Semaphore::new(n)))
            .clone()
    }

    /// The method path's service part, for checking it against what the host
    /// serves: `/tt.v1.Store/Save` → `tt.v1.Store`.
    pub(crate) fn service(&self) -> Option<&str> {
        let m = self.method.as_deref()?;
        m.strip_prefix('/')?.split_once('/').map(|(s, _)| s)
    }

    /// A method path is `/package.Service/Method` with both parts non-empty.
    pub(crate) fn method_is_well_formed(&self) -> bool {
        self.method.as_deref().is_none_or(|m| {
            m.strip_prefix('/')
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(s, m)| !s.is_empty() && !m.is_empty() && !m.contains('/'))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(method: Option<&str>, window: Option<(u64, u64)>) -> HandlerRule {
        HandlerRule::new(
            "store".into(),
            method.map(str::to_owned),
            window.map(|(a, b)| (Duration::from_millis(a), Duration::from_millis(b))),
            Action::Hang,
        )
    }

    #[test]
    fn matches_host_method_and_window() {
        let r = rule(Some("/tt.v1.Store/Save"), Some((100, 200)));
        let at = Duration::from_millis;
        assert!(r.matches("store", "/tt.v1.Store/Save", at(100)));
        assert!(
            !r.matches("store", "/tt.v1.Store/Save", at(200)),
            "window is half-open"
        );
        assert!(!r.matches("store", "/tt.v1.Store/Load", at(150)));
        assert!(!r.matches("gateway", "/tt.v1.Store/Save", at(150)));
        assert!(rule(None, None).matches("store", "/anything/Else", at(5)));
    }

    #[test]
    fn method_paths_are_checked() {
        assert!(rule(Some("/tt.v1.Store/Save"), None).method_is_well_formed());
        for bad in [
            "tt.v1.Store/Save",
            "/tt.v1.Store",
            "/tt.v1.Store/",
            "//Save",
            "/a/b/c",
        ] {
            assert!(!rule(Some(bad), None).method_is_well_formed(), "{bad}");
        }
        assert_eq!(
            rule(Some("/tt.v1.Store/Save"), None).service(),
            Some("tt.v1.Store")
        );
    }

    #[test]
    fn replies_describe_themselves_for_the_trace() {
        assert_eq!(Reply::default().describe(), "");
        let r = Reply {
            pushback_ms: Some(-1),
            after_headers: true,
        };
        assert_eq!(r.describe(), " pushback=-1ms after headers");
    }

    #[test]
    fn clones_share_counters() {
        let a = rule(None, None);
        let b = a.clone();
        assert_eq!(a.count(), 1);
        assert_eq!(b.count(), 2);
    }
}
