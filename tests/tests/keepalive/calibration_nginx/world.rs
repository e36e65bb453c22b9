//! nginx's recorded scenarios in the sim (`super::super::calibration::backend`
//! has the world): the client's schedule is `calibration/nginx/record.py`'s,
//! scenario by scenario.

use std::time::Duration;

use super::super::calibration::backend::{self, rallies, with_behaviour, Pings};
use grpc_chaos::policy::Middlebox;
use grpc_chaos::{Channel, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::{Rally, WatchRequest};
use grpc_chaos_tests::ms;

/// The client side of `scenario`, bounded by the recording's window.
async fn drive(scenario: &str, channel: Channel) {
    let mut c = ScoreboardClient::new(channel);
    let half = ms(500);
    backend::bounded(window(scenario), async {
        if backend::shared(scenario, &mut c).await {
            return;
        }
        match scenario {
            // idle_after_call with PINGs every second (see `run`).
            "idle_with_pings" => {
                backend::shared("idle_after_call", &mut c).await;
            }
            "unary_silent_backend" => {
                let _ = c.hit(with_behaviour(Rally::default(), "silent")).await;
            }
            "upload_messages_then_end" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 6, true), "silent"))
                    .await;
            }
            "upload_messages_no_end" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 6, false), "silent"))
                    .await;
            }
            "silent_client_stream" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 0, false), "silent"))
                    .await;
            }
            "headers_then_silent" | "backend_pings" => {
                let b = if scenario == "backend_pings" {
                    "pings"
                } else {
                    "headers-then-silent"
                };
                if let Ok(r) = c.watch(with_behaviour(WatchRequest::default(), b)).await {
                    let mut s = r.into_inner();
                    while let Ok(Some(_)) = s.message().await {}
                }
            }
            "client_data_after_headers" => {
                let out = rallies(half, 8, false);
                if let Ok(r) = c.rally(with_behaviour(out, "headers-only")).await {
                    let mut s = r.into_inner();
                    while let Ok(Some(_)) = s.message().await {}
                }
            }
            other => panic!("no sim scenario {other}"),
        }
    })
    .await;
}

/// How long `record.py` reads in `scenario`, from its request.
pub fn window(scenario: &str) -> Duration {
    ms(match scenario {
        "settings_and_unary" => 1_200,
        "never_used" | "idle_after_call" => 11_000,
        "unary_silent_backend" | "silent_client_stream" => 6_000,
        "upload_messages_then_end" | "upload_messages_no_end" | "idle_with_pings" => 9_000,
        _ => 7_000,
    })
}

/// Runs `scenario` with the box `mb` in front of the backend.
pub fn run(scenario: &'static str, mb: Middlebox) -> grpc_chaos::Result<Trace> {
    // The backend's PINGs, as h2peer's every 0.6 s; the client's every
    // second, as record.py's.
    let pings = Pings {
        backend: scenario == "backend_pings",
        client: scenario == "idle_with_pings",
    };
    backend::run(mb, pings, Vec::new(), move |channel| {
        drive(scenario, channel)
    })
}
