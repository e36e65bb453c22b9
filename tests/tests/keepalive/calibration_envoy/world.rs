//! Envoy's recorded scenarios in the sim (`super::super::calibration::backend`
//! has the world): the client's schedule is `calibration/envoy/record.py`'s,
//! scenario by scenario.

use std::time::Duration;

use super::super::calibration::backend::{self, rallies, with_behaviour, Pings};
use grpc_chaos::policy::Middlebox;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::Fault;
use grpc_chaos::{Channel, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::{Rally, WatchRequest};
use grpc_chaos_tests::ms;

async fn watch(c: &mut ScoreboardClient<Channel>, b: &'static str) {
    if let Ok(r) = c.watch(with_behaviour(WatchRequest::default(), b)).await {
        let mut s = r.into_inner();
        while let Ok(Some(_)) = s.message().await {}
    }
}

/// The client side of `scenario`, bounded by the recording's window.
async fn drive(scenario: &str, channel: Channel) {
    let mut c = ScoreboardClient::new(channel);
    let half = ms(500);
    backend::bounded(window(scenario), async {
        if backend::shared(scenario, &mut c).await {
            return;
        }
        match scenario {
            "route_timeout_before_headers" | "stream_idle_before_headers" => {
                let _ = c.hit(with_behaviour(Rally::default(), "silent")).await;
            }
            "route_timeout_after_headers" => watch(&mut c, "headers-only").await,
            "upstream_reset_after_headers" => watch(&mut c, "headers-then-reset").await,
            "stream_idle_after_headers" => watch(&mut c, "headers-then-silent").await,
            "backend_pings" => watch(&mut c, "pings").await,
            "over_stream_limit" => {
                tokio::time::sleep(ms(300)).await;
                let open = |c: &ScoreboardClient<Channel>| {
                    let mut c = c.clone();
                    async move {
                        let out = rallies(half, 0, false);
                        let _ = c.upload(with_behaviour(out, "silent")).await;
                    }
                };
                let third = async {
                    tokio::time::sleep(ms(300)).await;
                    open(&c).await;
                };
                tokio::join!(open(&c), open(&c), third);
            }
            other => panic!("no sim scenario {other}"),
        }
    })
    .await;
}

/// How long `record.py` reads in `scenario`, from its first request.
pub fn window(scenario: &str) -> Duration {
    ms(match scenario {
        "settings_and_unary" => 1_200,
        "never_used" | "idle_after_call" => 8_000,
        "upstream_reset_after_headers" => 4_000,
        "stream_idle_after_headers" => 6_000,
        "over_stream_limit" => 3_100,
        "backend_pings" => 7_000,
        _ => 5_000,
    })
}

/// Runs `scenario` with the box `mb` in front of the backend.
pub fn run(scenario: &'static str, mb: Middlebox) -> grpc_chaos::Result<Trace> {
    let pings = Pings {
        backend: scenario == "backend_pings",
        client: false,
    };
    // h2peer's `headers-then-reset` backend resets its stream 1 s after
    // the request (RST_STREAM(CANCEL)).
    let faults = if scenario == "upstream_reset_after_headers" {
        vec![Fault::inject("store", "player")
            .rst_stream(1, ErrorCode::Cancel)
            .at(ms(1_003))]
    } else {
        Vec::new()
    };
    backend::run(mb, pings, faults, move |channel| drive(scenario, channel))
}
