//! A story's result: what happened, the verdict, and findings about the
//! stack under test.

/// Whether the trace showed what the story must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It did.
    Pass,
    /// It did not; the reason names what was missing.
    Fail(String),
}

/// The judgement of one story's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// What happened, in one or two short sentences with the numbers.
    pub happened: String,
    /// Pass, or fail with the reason.
    pub verdict: Verdict,
    /// Behaviour of tonic/hyper/h2 that differs from the gRPC spec, seen in
    /// this run (not failures).
    pub findings: Vec<String>,
}

impl Report {
    /// A report whose checks all held.
    pub fn pass(happened: impl Into<String>) -> Self {
        Self {
            happened: happened.into(),
            verdict: Verdict::Pass,
            findings: Vec::new(),
        }
    }

    /// A failed report.
    pub fn failed(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            happened: reason.clone(),
            verdict: Verdict::Fail(reason),
            findings: Vec::new(),
        }
    }

    /// Builds a report from checks: the first failed check fails it.
    pub fn from_checks(happened: String, checks: &[(bool, String)]) -> Self {
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Self {
                happened,
                verdict: Verdict::Fail(why.clone()),
                findings: Vec::new(),
            },
            None => Self::pass(happened),
        }
    }

    /// Adds the tonic-vs-spec findings seen in `trace`.
    pub fn with_findings(mut self, trace: &grpc_chaos::Trace) -> Self {
        self.findings = findings(trace);
        self
    }

    /// True for [`Verdict::Pass`].
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}

/// Distinct "tonic said X where the spec requires Y" lines, in order of
/// first appearance.
pub(super) fn findings(trace: &grpc_chaos::Trace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for call in trace.calls() {
        let Some(line) = call.outcome().and_then(grpc_chaos::trace::finding) else {
            continue;
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}
