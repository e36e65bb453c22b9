//! Where a trace goes as a whole: JSON, Perfetto, and the three files of
//! [`Trace::write_to`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{json, perfetto, RenderOptions, RunVerdict, Trace};

impl Serialize for Trace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json::Document::of(self).serialize(s)
    }
}

impl Trace {
    /// The trace as pretty-printed JSON, with the ids the text uses (`r1`,
    /// `h1`, `c1`) and every event whatever the render options:
    ///
    /// - `seed`, `ended_us` (*simulated* µs), `hosts`;
    /// - the views: `calls` and `handler_runs` (as [`Trace::calls`] and
    ///   [`Trace::handler_runs`], times in `_us`), `findings` (calls whose
    ///   code differs from the spec's, with the rule), `faults_never_fired`
    ///   (`host`, `fault`), `stalls` (as [`Trace::stalls`] with no
    ///   threshold, each with the text's sentence);
    /// - `events`: each with `at_us`, `host`, `event` (its kind in
    ///   snake_case) and its fields, frames as typed data
    ///   ([`FrameDetail`](crate::recorder::event::FrameDetail)).
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The trace as Chrome trace-event JSON, which Perfetto
    /// (<https://ui.perfetto.dev>, "Open trace file") and `chrome://tracing`
    /// open unchanged: one process per host (sorted by name); on it, each
    /// call it made and each handler run it served as a slice (nested
    /// under the run a call was made from, overlapping ones on further
    /// lanes), with a flow arrow from each call to the run that served it;
    /// the frames it sent, and every other event (faults, policies,
    /// connection changes, logs) as instants named in the text's words.
    /// Timestamps (`ts`, `dur`) are *simulated* µs since the start of the
    /// run. Byte-stable for a seed, like every render.
    pub fn to_perfetto(&self) -> String {
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_string(&perfetto::document(self)).unwrap_or_default()
    }

    /// Writes `<dir>/<name>.txt` (the summary, then the default render),
    /// `<dir>/<name>.json` (every event, every frame) and `<dir>/<name>.html`
    /// (the page with the default options: DATA runs folded), creating
    /// `dir`. Returns their paths, by format. The summary at the top of the
    /// text and the page says the run was not judged; give a verdict with
    /// [`Trace::write_with_verdict`].
    ///
    /// ```no_run
    /// # fn show(trace: &grpc_chaos::Trace) -> std::io::Result<()> {
    /// let files = trace.write_to("target/traces", "deadline-chain")?;
    /// println!("open {}", files.html.display());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// Any I/O error creating the directory or writing the files.
    pub fn write_to(&self, dir: impl AsRef<Path>, name: &str) -> std::io::Result<TraceFiles> {
        self.write_files(dir.as_ref(), name, None)
    }

    /// [`Trace::write_to`] with the run's verdict at the top of the `.txt`
    /// and the page: a story's verdict, or what failed (the failure
    /// artifacts of a failed run give its error).
    ///
    /// # Errors
    /// Any I/O error creating the directory or writing the files.
    pub fn write_with_verdict(
        &self,
        dir: impl AsRef<Path>,
        name: &str,
        verdict: &RunVerdict,
    ) -> std::io::Result<TraceFiles> {
        self.write_files(dir.as_ref(), name, Some(verdict))
    }

    fn write_files(
        &self,
        dir: &Path,
        name: &str,
        verdict: Option<&RunVerdict>,
    ) -> std::io::Result<TraceFiles> {
        std::fs::create_dir_all(dir)?;
        let options = RenderOptions::default();
        let txt = dir.join(format!("{name}.txt"));
        let json = dir.join(format!("{name}.json"));
        let html = dir.join(format!("{name}.html"));
        let text = self.render_summary(verdict) + "\n" + &self.render_with(&options);
        std::fs::write(&txt, text)?;
        std::fs::write(&json, self.to_json() + "\n")?;
        std::fs::write(&html, self.render_html_judged(&options, verdict))?;
        Ok(TraceFiles { txt, json, html })
    }
}

/// The files [`Trace::write_to`] wrote, by format. `#[non_exhaustive]`: a
/// format may be added without breaking callers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceFiles {
    /// `<dir>/<name>.txt`: [`Trace::render_summary`], a blank line, then
    /// the text render with the default [`RenderOptions`] (DATA runs
    /// folded, connection noise hidden; the JSON has every frame).
    pub txt: PathBuf,
    /// `<dir>/<name>.json`: [`Trace::to_json`].
    pub json: PathBuf,
    /// `<dir>/<name>.html`: the page with the default [`RenderOptions`].
    pub html: PathBuf,
}
