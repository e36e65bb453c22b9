//! Splitting an exploration across CI workers: each runs a part of the
//! schedules ([`Explorer::partition`]), writes its report as JSON
//! ([`Report::to_json`]), and one job merges them ([`Report::merge`])
//! into the report the whole run would have made.

use std::collections::HashMap;

use super::report::{Ended, FailureGroup, Report};
use super::Explorer;
use crate::error::{Error, Kind};

impl<S> Explorer<S> {
    /// Runs only part `index` of `count` of the schedules: those whose
    /// number `n` has `n % count == index` (the same numbers, so the same
    /// schedules, the whole run would make; a run budget counts the whole
    /// run's, so each part runs about `budget / count`). Give each CI
    /// worker its index (a test per part, which `cargo nextest run
    /// --partition count:i/N` hands out, or an index from the CI's own
    /// matrix), write each report with [`Report::to_json`], and
    /// [`Report::merge`] them. Default: the whole run, `(0, 1)`.
    ///
    /// A part's failures shrink on that worker; the merged report keeps,
    /// per invariant, the failure of the lowest schedule number, as the
    /// whole run would. Under a wall-time budget each worker stops on its
    /// own clock, and the merge is what they ran.
    ///
    /// A `count` of 0 or an `index` not below it is an error from
    /// [`Explorer::explore`].
    pub fn partition(mut self, index: usize, count: usize) -> Self {
        self.part = (index, count);
        self
    }

    /// Whether schedule `number` is this part's.
    pub(super) fn owns(&self, number: u64) -> bool {
        let (index, count) = self.part;
        count != 0 && number % count as u64 == index as u64
    }

    /// How many of the first `runs` schedule numbers are this part's.
    pub(super) fn owned_of(&self, runs: usize) -> usize {
        let (index, count) = self.part;
        match count {
            0 => 0,
            _ => runs.saturating_sub(index).div_ceil(count),
        }
    }

    /// The partition as the report names it: `None` for the whole run.
    pub(super) fn partition_named(&self) -> Option<(usize, usize)> {
        (self.part != (0, 1)).then_some(self.part)
    }

    /// A partition that runs nothing, as an error.
    pub(super) fn check_partition(&self) -> Result<(), Error> {
        let (index, count) = self.part;
        if index < count {
            return Ok(());
        }
        Err(Error::new(Kind::Misconfigured(format!(
            "Explorer::partition({index}, {count}) runs nothing: give a count of 1 or more and \
             an index below it (0 to {})",
            count.saturating_sub(1)
        ))))
    }
}

impl Report {
    /// The report as JSON (serde): what a CI worker writes for
    /// [`Report::merge`]. Every field, the schedules whole.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("a report is plain data and always serializes: {e}"))
    }

    /// A report from [`Report::to_json`]'s JSON.
    ///
    /// # Errors
    /// Misconfigured, with serde's reason, when `json` is not such a
    /// report.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        serde_json::from_str(json).map_err(|e| {
            Error::new(Kind::Misconfigured(format!(
                "not an exploration report (Report::to_json): {e}"
            )))
        })
    }

    /// Merges the reports of the parts of one exploration
    /// ([`Explorer::partition`]) into the report of the whole: runs,
    /// coverage and "sometimes" counts added up; per invariant the runs
    /// that broke it added up and the failure of the lowest schedule
    /// number kept (with its shrinking and artifacts, from the worker that
    /// ran it); the groups in the order the whole run finds them. With a
    /// run budget, equal to the whole run's report, but for the artifact
    /// folders, which are each worker's.
    ///
    /// # Errors
    /// Misconfigured when the reports are not every part of one
    /// exploration: none given, a whole run among them, parts of
    /// different counts, one part twice or missing, or different modes,
    /// seeds, spaces or sweeps.
    pub fn merge(reports: impl IntoIterator<Item = Report>) -> Result<Report, Error> {
        let reports: Vec<Report> = reports.into_iter().collect();
        check_parts(&reports)?;
        let mut merged = reports[0].clone();
        merged.partition = None;
        merged.runs = reports.iter().map(|r| r.runs).sum();
        merged.ended = reports
            .iter()
            .map(|r| r.ended)
            .find(|e| *e != Ended::AllRuns)
            .unwrap_or(Ended::AllRuns);
        for (i, c) in merged.coverage.iter_mut().enumerate() {
            c.schedules = reports.iter().map(|r| r.coverage[i].schedules).sum();
        }
        merged.sometimes = sometimes(&reports);
        merged.failures = failures(&reports);
        Ok(merged)
    }
}

fn bad<T>(why: String) -> Result<T, Error> {
    Err(Error::new(Kind::Misconfigured(format!(
        "Report::merge: {why}"
    ))))
}

/// The reports are every part of one exploration, once each.
fn check_parts(reports: &[Report]) -> Result<(), Error> {
    let Some(first) = reports.first() else {
        return bad("no report to merge".into());
    };
    let Some((_, count)) = first.partition else {
        return bad("a report of a whole run (no Explorer::partition) has nothing to merge".into());
    };
    let mut seen = vec![false; count];
    for r in reports {
        let same = r.mode == first.mode
            && r.seed == first.seed
            && r.instants == first.instants
            && r.coverage
                .iter()
                .map(|c| &c.target)
                .eq(first.coverage.iter().map(|c| &c.target));
        if !same {
            return bad(format!(
                "the reports are of different explorations (mode, seed {} and {}, space or \
                 sweep differ): merge the parts of one",
                first.seed, r.seed
            ));
        }
        match r.partition {
            Some((i, n)) if n == count && i < n && !seen[i] => seen[i] = true,
            Some((i, n)) if n == count && i < n => {
                return bad(format!("partition {i}/{n} is given twice"));
            }
            other => {
                return bad(format!(
                    "a report of partition {other:?} among parts of {count}: merge the parts of \
                     one split"
                ));
            }
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|&i| !seen[i])
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return bad(format!("partitions {} are missing", missing.join(", ")));
    }
    Ok(())
}

/// Each "sometimes" assertion's count, added up, in the first report's
/// order (every part checks the same assertions).
fn sometimes(reports: &[Report]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for (name, n) in reports.iter().flat_map(|r| &r.sometimes) {
        match out.iter_mut().find(|(m, _)| m == name) {
            Some((_, total)) => *total += n,
            None => out.push((name.clone(), *n)),
        }
    }
    out
}

/// Per invariant, the group whose first failure has the lowest schedule
/// number, with the runs of every part's group added up; in the order the
/// whole run finds them: by that number, then (groups first found in one
/// schedule, so by one worker) in that worker's order.
fn failures(reports: &[Report]) -> Vec<FailureGroup> {
    let mut best: HashMap<&str, (u64, usize, &FailureGroup)> = HashMap::new();
    let mut runs: HashMap<&str, usize> = HashMap::new();
    for r in reports {
        for (pos, g) in r.failures.iter().enumerate() {
            *runs.entry(&g.invariant).or_default() += g.runs;
            let key = (g.first.schedule.number, pos, g);
            let e = best.entry(&g.invariant).or_insert(key);
            if key.0 < e.0 {
                *e = key;
            }
        }
    }
    let mut groups: Vec<(u64, usize, &FailureGroup)> = best.into_values().collect();
    groups.sort_by_key(|(number, pos, _)| (*number, *pos));
    groups
        .into_iter()
        .map(|(_, _, g)| FailureGroup {
            runs: runs[g.invariant.as_str()],
            ..g.clone()
        })
        .collect()
}

/// `tonic::Code` as its number (gRPC status codes, `grpc-status`), for
/// [`Target::HandlerFail`](super::Target::HandlerFail) in JSON.
pub(super) mod code {
    use serde::{Deserialize, Deserializer, Serializer};
    use tonic::Code;

    pub(crate) fn serialize<S: Serializer>(code: &Code, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(*code as i32)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        let n = i32::deserialize(d)?;
        match Code::from_i32(n) {
            Code::Unknown if n != Code::Unknown as i32 => Err(serde::de::Error::custom(format!(
                "{n} is not a gRPC status code (0 to 16)"
            ))),
            code => Ok(code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Target;
    use tonic::Code;

    #[test]
    fn a_handler_fail_keeps_its_code_through_json_and_a_bad_code_is_refused() {
        let fail = Target::HandlerFail {
            host: "store".into(),
            code: Code::ResourceExhausted,
        };
        let json = serde_json::to_string(&fail).expect("serializes");
        assert_eq!(json, r#"{"HandlerFail":{"host":"store","code":8}}"#);
        let back: Target = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, fail);
        let unknown: Target = serde_json::from_str(r#"{"HandlerFail":{"host":"store","code":2}}"#)
            .expect("2 is UNKNOWN");
        assert!(matches!(
            unknown,
            Target::HandlerFail {
                code: Code::Unknown,
                ..
            }
        ));
        let e = serde_json::from_str::<Target>(r#"{"HandlerFail":{"host":"store","code":17}}"#)
            .unwrap_err();
        assert!(
            e.to_string().contains("17 is not a gRPC status code"),
            "{e}"
        );
    }
}
