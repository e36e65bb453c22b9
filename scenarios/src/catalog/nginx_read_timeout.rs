//! Seed 003 #8 with a real proxy's rules: nginx's `grpc_read_timeout`
//! (60 s between two reads from the backend) is shorter than the player's
//! 120 s deadline, and the store takes 90 s. At 60 s nginx answers the
//! call itself with its 504 error page and drops the upstream stream: the
//! call fails a minute before its deadline, the store's handler is
//! cancelled, and tonic — which reads the HTML page as a gRPC message —
//! reports INTERNAL, where a client that honoured the 504 would say
//! UNAVAILABLE (gRPC `http-grpc-status-mapping.md`).

use grpc_chaos::policy::Middlebox;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::{CallEnd, RunEnd};
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{ms, with_timeout};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{Store, SAVE};

/// The player's deadline.
const DEADLINE: u64 = 120_000;
/// nginx's `grpc_read_timeout` default.
const READ_TIMEOUT: u64 = 60_000;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "nginx-read-timeout",
    source: "nginx ngx_http_grpc_module (grpc_read_timeout 60s), ngx_http_special_response.c; grpc doc/http-grpc-status-mapping.md",
    story: "An nginx in front of a slow backend gives up at its read timeout, long before the client's deadline, and answers with its own 504 page.",
    checks: "player deadline 120s, store 90s slow, nginx grpc_read_timeout 60s: the call fails at 60s (nginx's 504 page; tonic INTERNAL), the store handler is cancelled by nginx's upstream reset",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(130_000))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(90_000)));
    sim.middlebox("store", Middlebox::nginx());
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        let request = with_timeout(SaveRequest::default(), ms(DEADLINE));
        let status = store
            .save(request)
            .await
            .expect_err("nginx gives up before the store answers");
        tracing::info!(code = ?status.code(), "player's call failed");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let player = trace.calls_from("player").next();
    let ended = player.and_then(|c| c.latency());
    let code = match player.map(|c| &c.end) {
        Some(CallEnd::Status(o)) => o.code.to_owned(),
        Some(CallEnd::StoppedReading { flag, .. }) => format!(
            "INTERNAL (tonic's decoder read the page as a message with Compressed-Flag {flag})"
        ),
        Some(other) => format!("{other:?}"),
        None => "never".to_owned(),
    };
    let store = trace.runs_on("store").find(|r| r.path == SAVE);
    let dropped = store.is_some_and(|r| r.end == RunEnd::Dropped);
    let page = trace.render().contains(":status=504");
    let happened = format!(
        "player's call ended {code} after {} (nginx's 504 page: {}); store handler {}",
        ended.map_or("never".to_owned(), fmt_duration),
        if page { "sent" } else { "not sent" },
        if dropped { "dropped" } else { "not dropped" }
    );
    let at_nginx = ended.is_some_and(|t| t >= ms(READ_TIMEOUT) && t < ms(READ_TIMEOUT + 100));
    Report::from_checks(
        happened,
        &[
            (
                at_nginx,
                format!("the call did not end at nginx's {READ_TIMEOUT}ms read timeout"),
            ),
            (page, "nginx's 504 response is not in the trace".into()),
            (
                dropped,
                "nginx's upstream reset did not cancel the store handler".into(),
            ),
        ],
    )
    .with_findings(trace)
}
