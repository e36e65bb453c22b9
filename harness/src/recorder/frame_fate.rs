//! [`FrameFate`]: a frame event's [`Fate`] and, for a frame the harness
//! wrote that breaks RFC 9113, the rule it breaks — one pointer, null for
//! the frame nearly every event records (passed, valid).

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::event::Fate;

/// What the frame faults did with a recorded frame
/// ([`EventKind::Frame`](super::event::EventKind::Frame)), and the RFC 9113
/// rule it breaks, if the harness wrote it and it breaks one.
///
/// It derefs to the [`Fate`] and compares with one (`fate == Fate::Passed`).
/// Shape: 8 bytes. A frame that [`Fate::Passed`] and breaks no rule (nearly
/// every frame) allocates nothing; any other fate, or a broken rule, is
/// boxed (a fault or an injection touched the frame: rare).
///
/// In JSON, beside the event's other fields: `"invalid": "…"` when a rule
/// is broken (absent otherwise), then `"fate": {"fate": "passed"}` (the
/// [`Fate`]'s own form), then `"fate_invalid": "…"` when the fate breaks a
/// rule ([`FrameFate::fate_invalid`]; absent otherwise), then
/// `"by_policy": true, "policy": "<name>"` for a frame a connection policy
/// wrote (absent otherwise; the name as [`FrameFate::policy`] gives it).
///
/// ```
/// use grpc_chaos::recorder::event::{Fate, FrameFate};
/// let passed = FrameFate::from(Fate::Passed);
/// assert!(passed == Fate::Passed && passed.invalid().is_none());
/// let broken = FrameFate::breaking(Fate::Injected, "RST_STREAM on stream 0 (RFC 9113 §6.4)");
/// assert_eq!(*broken, Fate::Injected);
/// assert_eq!(broken.invalid(), Some("RST_STREAM on stream 0 (RFC 9113 §6.4)"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct FrameFate(Option<Box<Touched>>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Touched {
    fate: Fate,
    invalid: Option<Box<str>>,
    /// The rule the fate breaks at the receiver (a preface's SETTINGS
    /// dropped): the frame is valid, its absence is not.
    fate_invalid: Option<Box<str>>,
    /// The connection policy (keepalive enforcement, a middlebox, a
    /// user's policy) that wrote the frame, rather than a `Fault::inject`:
    /// its name, shared with the policy's other frames.
    policy: Option<Arc<str>>,
}

/// What a null [`FrameFate`] derefs to.
static PASSED: Fate = Fate::Passed;

impl FrameFate {
    /// A frame the harness wrote that breaks `rule` (naming the RFC 9113
    /// section), with its `fate`.
    pub fn breaking(fate: Fate, rule: impl Into<Box<str>>) -> Self {
        Self(Some(Box::new(Touched {
            fate,
            invalid: Some(rule.into()),
            fate_invalid: None,
            policy: None,
        })))
    }

    /// A frame (valid, whoever wrote it) whose `fate` breaks `rule`
    /// (naming the RFC 9113 section) at its receiver: dropped or swallowed,
    /// or replaced by nothing that takes its place — a connection
    /// preface's SETTINGS (§3.4), for one.
    pub fn fate_breaking(fate: Fate, rule: impl Into<Box<str>>) -> Self {
        Self(Some(Box::new(Touched {
            fate,
            invalid: None,
            fate_invalid: Some(rule.into()),
            policy: None,
        })))
    }

    /// A frame the connection policy named `policy` wrote
    /// ([`Fate::Injected`]), breaking `rule` if there is one: a keepalive
    /// policy's GOAWAY, a middlebox's PING ACK. Not a fault's injection, so
    /// the summary does not count it among the faults fired, and its row
    /// says `[sent by <policy>]`, not `[injected]`. `policy` is the name
    /// [`ConnectionPolicy::name`](crate::policy::ConnectionPolicy::name)
    /// gives (`AWS ALB`, `the keepalive policy`).
    pub fn sent_by_policy(policy: Arc<str>, rule: Option<impl Into<Box<str>>>) -> Self {
        Self(Some(Box::new(Touched {
            fate: Fate::Injected,
            invalid: rule.map(Into::into),
            fate_invalid: None,
            policy: Some(policy),
        })))
    }

    /// Whether a connection policy wrote the frame (see
    /// [`FrameFate::sent_by_policy`]).
    pub fn by_policy(&self) -> bool {
        self.policy().is_some()
    }

    /// The name of the connection policy that wrote the frame, if one did
    /// (see [`FrameFate::sent_by_policy`]).
    pub fn policy(&self) -> Option<&str> {
        self.0.as_ref().and_then(|t| t.policy.as_deref())
    }

    /// `fate`, and `rule` if there is one.
    pub fn with_rule(fate: Fate, rule: Option<impl Into<Box<str>>>) -> Self {
        match rule {
            Some(rule) => Self::breaking(fate, rule),
            None => fate.into(),
        }
    }

    /// The fate.
    pub fn get(&self) -> Fate {
        **self
    }

    /// The RFC 9113 rule the frame breaks, for a frame the harness wrote
    /// that breaks one.
    pub fn invalid(&self) -> Option<&str> {
        self.0.as_ref().and_then(|t| t.invalid.as_deref())
    }

    /// The RFC 9113 rule the frame's fate breaks at its receiver (see
    /// [`FrameFate::fate_breaking`]): the trace shows it in the fate's
    /// brackets, `[dropped, invalid: …]`.
    pub fn fate_invalid(&self) -> Option<&str> {
        self.0.as_ref().and_then(|t| t.fate_invalid.as_deref())
    }
}

impl From<Fate> for FrameFate {
    fn from(fate: Fate) -> Self {
        match fate {
            Fate::Passed => Self(None),
            fate => Self(Some(Box::new(Touched {
                fate,
                invalid: None,
                fate_invalid: None,
                policy: None,
            }))),
        }
    }
}

impl std::ops::Deref for FrameFate {
    type Target = Fate;

    fn deref(&self) -> &Fate {
        self.0.as_ref().map_or(&PASSED, |t| &t.fate)
    }
}

impl PartialEq<Fate> for FrameFate {
    fn eq(&self, other: &Fate) -> bool {
        **self == *other
    }
}

impl PartialEq<FrameFate> for Fate {
    fn eq(&self, other: &FrameFate) -> bool {
        *self == **other
    }
}

/// `Passed`, `Injected, invalid: "…"`, `Dropped, fate invalid: "…"`: the
/// fate, and the rule when one is broken.
impl std::fmt::Debug for FrameFate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)?;
        if let Some(rule) = self.invalid() {
            write!(f, ", invalid: {rule:?}")?;
        }
        match self.fate_invalid() {
            Some(rule) => write!(f, ", fate invalid: {rule:?}"),
            None => Ok(()),
        }
    }
}

/// Flattened into the frame event: `invalid` (when set), then `fate`,
/// `fate_invalid`, `by_policy` and `policy` (when set).
impl Serialize for FrameFate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(rule) = self.invalid() {
            map.serialize_entry("invalid", rule)?;
        }
        map.serialize_entry("fate", &**self)?;
        if let Some(rule) = self.fate_invalid() {
            map.serialize_entry("fate_invalid", rule)?;
        }
        if let Some(policy) = self.policy() {
            map.serialize_entry("by_policy", &true)?;
            map.serialize_entry("policy", policy)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_touched_frame_allocates_and_every_fate_reads_back() {
        assert_eq!(std::mem::size_of::<FrameFate>(), 8);
        assert!(FrameFate::from(Fate::Passed).0.is_none());
        for fate in [
            Fate::Passed,
            Fate::Dropped,
            Fate::Delayed {
                until: Duration::from_millis(3),
            },
            Fate::Injected,
        ] {
            let boxed = FrameFate::from(fate);
            assert_eq!(boxed.get(), fate);
            assert_eq!(boxed.0.is_some(), fate != Fate::Passed);
        }
        let broken = FrameFate::with_rule(Fate::Injected, Some("rule"));
        assert_eq!(
            (broken.get(), broken.invalid()),
            (Fate::Injected, Some("rule"))
        );
        assert_eq!(format!("{broken:?}"), r#"Injected, invalid: "rule""#);
        assert!(!broken.by_policy() && !FrameFate::from(Fate::Injected).by_policy());
        let sent = FrameFate::sent_by_policy("AWS ALB".into(), None::<&str>);
        assert!(sent.by_policy() && sent == Fate::Injected && sent.invalid().is_none());
        assert_eq!(sent.policy(), Some("AWS ALB"));
        assert_eq!(FrameFate::from(Fate::Injected).policy(), None);
        let json = serde_json::to_string(&sent).expect("serializes");
        assert!(
            json.ends_with(r#","by_policy":true,"policy":"AWS ALB"}"#),
            "{json}"
        );
    }

    #[test]
    fn a_fate_that_breaks_a_rule_keeps_it_apart_from_the_frames_own() {
        let dropped = FrameFate::fate_breaking(Fate::Dropped, "rule");
        assert_eq!(
            (dropped.get(), dropped.invalid(), dropped.fate_invalid()),
            (Fate::Dropped, None, Some("rule"))
        );
        assert!(!dropped.by_policy());
        assert_eq!(format!("{dropped:?}"), r#"Dropped, fate invalid: "rule""#);
        assert_eq!(FrameFate::from(Fate::Dropped).fate_invalid(), None);
        let json = serde_json::to_string(&dropped).expect("serializes");
        assert_eq!(json, r#"{"fate":{"fate":"dropped"},"fate_invalid":"rule"}"#);
    }
}
