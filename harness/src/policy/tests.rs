//! Stories a strict server must tell, pinned to exact verdicts.

use std::time::Duration;

use super::*;
use crate::wire::ErrorCode;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

const FIVE_MIN: Duration = Duration::from_secs(300);
const TWO_HOURS: Duration = Duration::from_secs(7200);

/// PINGs every `every` from `every` on, `count` of them, with `calls` open.
fn steady_pings(
    enforcer: &mut Enforcer,
    every: Duration,
    count: u32,
    calls: usize,
) -> Vec<PingVerdict> {
    (1..=count)
        .map(|i| enforcer.on_ping_received(every * i, calls))
        .collect()
}

fn strike(n: u32, gap: Duration, allowed: Duration) -> PingVerdict {
    PingVerdict::Strike {
        n,
        of: 2,
        gap,
        allowed,
    }
}

fn no_headers(id: u32) -> OpenStream {
    OpenStream {
        id,
        response_headers_sent: false,
    }
}

// Story 1 (seed 000 §6): a client pinging every 30 s against grpc-go's 5 min.
#[test]
fn grpc_go_30s_pings_with_a_call_get_goaway_on_the_4th_ping() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_go());
    let verdicts = steady_pings(&mut enforcer, secs(30), 4, 1);
    assert_eq!(
        verdicts,
        [
            PingVerdict::Ok { gap: None },
            strike(1, secs(30), FIVE_MIN),
            strike(2, secs(30), FIVE_MIN),
            PingVerdict::TooManyPings {
                strikes: 3,
                gap: secs(30),
                allowed: FIVE_MIN
            },
        ]
    );
    assert_eq!(enforcer.gone_away_at(), Some(secs(120)));
    assert_eq!(
        reaction(enforcer.policy(), 1, &[no_headers(1)]),
        [
            Action::SendGoAway {
                last_stream_id: 1,
                code: ErrorCode::EnhanceYourCalm,
                debug: b"too_many_pings"
            },
            Action::CloseConnection,
        ]
    );
}

// Story 2 (FACTS.md, measured against grpcio 1.85).
#[test]
fn c_core_ends_each_open_call_with_unavailable_before_closing() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::c_core());
    let verdicts = steady_pings(&mut enforcer, secs(30), 4, 2);
    assert!(matches!(verdicts[0], PingVerdict::Ok { gap: None }));
    assert!(matches!(
        verdicts[3],
        PingVerdict::TooManyPings { strikes: 3, .. }
    ));

    // Stream 5 is a server stream that already sent its headers; the open
    // list arrives unsorted and comes out in stream order.
    let open = [
        no_headers(3),
        OpenStream {
            id: 5,
            response_headers_sent: true,
        },
        no_headers(1),
    ];
    assert_eq!(
        reaction(enforcer.policy(), 5, &open),
        [
            Action::SendGoAway {
                last_stream_id: 5,
                code: ErrorCode::EnhanceYourCalm,
                debug: b"too_many_pings"
            },
            Action::SendTrailersOnly {
                stream_id: 1,
                grpc_status: 14,
                message: "Too many pings"
            },
            Action::SendRstStream {
                stream_id: 1,
                code: ErrorCode::NoError
            },
            Action::SendTrailersOnly {
                stream_id: 3,
                grpc_status: 14,
                message: "Too many pings"
            },
            Action::SendRstStream {
                stream_id: 3,
                code: ErrorCode::NoError
            },
            Action::SendTrailers {
                stream_id: 5,
                grpc_status: 14,
                message: "Too many pings"
            },
            Action::SendRstStream {
                stream_id: 5,
                code: ErrorCode::NoError
            },
            Action::CloseConnection,
        ]
    );
}

// Story 3 (seed 000 §6.1): apiserver pings etcd every 30 s; etcd allows 5 s.
#[test]
fn etcd_never_strikes_a_30s_client_with_watches_open_for_10_minutes() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::etcd());
    let verdicts = steady_pings(&mut enforcer, secs(30), 20, 1);
    assert_eq!(verdicts.len(), 20);
    for verdict in &verdicts[1..] {
        assert_eq!(
            *verdict,
            PingVerdict::Ok {
                gap: Some(secs(30))
            }
        );
    }
    assert_eq!(enforcer.strikes(), 0);
}

#[test]
fn etcd_with_pings_permitted_without_calls_never_strikes_an_idle_client() {
    let policy = KeepalivePolicy {
        permit_without_calls: true,
        ..KeepalivePolicy::etcd()
    };
    let mut enforcer = Enforcer::new(policy);
    let verdicts = steady_pings(&mut enforcer, secs(30), 20, 0);
    assert!(verdicts.iter().all(|v| matches!(v, PingVerdict::Ok { .. })));
}

// etcd passes PermitWithoutStream: false (server/embed/etcd.go), so an idle
// connection meets the 2 h rule even though MinTime is 5 s.
#[test]
fn etcd_still_enforces_two_hours_on_an_idle_connection() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::etcd());
    let verdicts = steady_pings(&mut enforcer, secs(30), 4, 0);
    assert_eq!(verdicts[1], strike(1, secs(30), TWO_HOURS));
    assert!(matches!(verdicts[3], PingVerdict::TooManyPings { .. }));
}

// Story 4: no calls, pings not permitted without calls.
#[test]
fn idle_connection_pinged_every_10s_gets_goaway_after_the_4th_ping() {
    let mut enforcer = Enforcer::new(KeepalivePolicy {
        min_time: secs(5),
        ..KeepalivePolicy::grpc_go()
    });
    let verdicts = steady_pings(&mut enforcer, secs(10), 4, 0);
    assert_eq!(
        verdicts,
        [
            PingVerdict::Ok { gap: None },
            strike(1, secs(10), TWO_HOURS),
            strike(2, secs(10), TWO_HOURS),
            PingVerdict::TooManyPings {
                strikes: 3,
                gap: secs(10),
                allowed: TWO_HOURS
            },
        ]
    );
}

// Story 5: the boundary belongs to the client.
#[test]
fn a_gap_exactly_equal_to_min_time_is_not_a_strike() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_go());
    let verdicts = steady_pings(&mut enforcer, FIVE_MIN, 10, 1);
    assert!(verdicts.iter().all(|v| matches!(v, PingVerdict::Ok { .. })));

    // One nanosecond less is a strike: the test above can fail.
    let just_short = FIVE_MIN - Duration::from_nanos(1);
    assert_eq!(
        enforcer.on_ping_received(FIVE_MIN * 10 + just_short, 1),
        strike(1, just_short, FIVE_MIN)
    );
}

#[test]
fn grpc_java_allows_a_gap_exactly_equal_to_min_time_from_connect() {
    let mut enforcer = Enforcer::opened_at(KeepalivePolicy::grpc_java_netty(), secs(7));
    let verdicts = steady_pings(&mut enforcer, FIVE_MIN, 3, 1);
    // First PING at 300 s is only 293 s after connecting at 7 s.
    assert_eq!(verdicts[0], strike(1, secs(293), FIVE_MIN));
    assert_eq!(
        verdicts[1],
        PingVerdict::Ok {
            gap: Some(secs(593))
        }
    );
    assert_eq!(
        verdicts[2],
        PingVerdict::Ok {
            gap: Some(FIVE_MIN)
        }
    );
}

// Story 6: a response flowing between PINGs forgives them.
#[test]
fn server_data_between_pings_resets_strikes() {
    for policy in [KeepalivePolicy::grpc_go(), KeepalivePolicy::c_core()] {
        let mut enforcer = Enforcer::new(policy);
        let mut verdicts = Vec::new();
        for i in 1..=20u32 {
            verdicts.push(enforcer.on_ping_received(secs(30) * i, 1));
            if i % 2 == 0 {
                assert!(enforcer.on_server_frame(ServerFrame::Data));
                assert_eq!(enforcer.strikes(), 0);
            }
        }
        for pair in verdicts.chunks(2) {
            assert_eq!(
                pair,
                [PingVerdict::Ok { gap: None }, strike(1, secs(30), FIVE_MIN)],
                "{policy:?}"
            );
        }
    }
}

#[test]
fn without_the_data_the_same_pings_get_goaway() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_go());
    let verdicts = steady_pings(&mut enforcer, secs(30), 20, 1);
    assert!(matches!(verdicts[3], PingVerdict::TooManyPings { .. }));
}

#[test]
fn server_headers_reset_strikes_in_every_preset() {
    for policy in [
        KeepalivePolicy::grpc_go(),
        KeepalivePolicy::c_core(),
        KeepalivePolicy::grpc_java_netty(),
        KeepalivePolicy::etcd(),
    ] {
        let mut enforcer = Enforcer::new(policy);
        let _ = steady_pings(&mut enforcer, Duration::from_millis(10), 2, 1);
        assert!(enforcer.strikes() >= 1, "{policy:?}");
        assert!(enforcer.on_server_frame(ServerFrame::Headers));
        assert_eq!(enforcer.strikes(), 0);
    }
}

#[test]
fn window_update_resets_c_core_but_not_grpc_go_or_java() {
    let resets = |policy| Enforcer::new(policy).on_server_frame(ServerFrame::WindowUpdate);
    assert!(resets(KeepalivePolicy::c_core()));
    assert!(!resets(KeepalivePolicy::grpc_go()));
    assert!(!resets(KeepalivePolicy::grpc_java_netty()));
}

// Java resets the reference to the connection's open time, not to "none":
// the next PING is still checked.
#[test]
fn grpc_java_reset_measures_the_next_ping_from_connect() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_java_netty());
    assert_eq!(
        enforcer.on_ping_received(secs(30), 1),
        strike(1, secs(30), FIVE_MIN)
    );
    assert!(enforcer.on_server_frame(ServerFrame::Data));
    assert_eq!(
        enforcer.on_ping_received(secs(60), 1),
        strike(1, secs(60), FIVE_MIN)
    );
    assert!(enforcer.on_server_frame(ServerFrame::Data));
    // Once the connection is older than min_time, a reset forgives the next PING.
    assert_eq!(
        enforcer.on_ping_received(secs(400), 1),
        PingVerdict::Ok {
            gap: Some(secs(400))
        }
    );
}

// Story 7: once the GOAWAY is decided, nothing more happens.
#[test]
fn after_too_many_pings_the_enforcer_is_terminal() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_go());
    let verdicts = steady_pings(&mut enforcer, secs(30), 4, 1);
    assert!(matches!(verdicts[3], PingVerdict::TooManyPings { .. }));

    assert!(!enforcer.on_server_frame(ServerFrame::Data));
    for t in [secs(121), secs(500), secs(10_000)] {
        assert_eq!(
            enforcer.on_ping_received(t, 1),
            PingVerdict::AlreadyGoingAway { strikes: 3 }
        );
    }
    assert_eq!(enforcer.strikes(), 3);
    assert_eq!(enforcer.gone_away_at(), Some(secs(120)));
}

// grpc-java strikes the first PING (reference = connect) and keeps the last
// *accepted* PING as reference, so the story ends one PING earlier.
#[test]
fn grpc_java_30s_pings_get_goaway_on_the_3rd_ping() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_java_netty());
    let verdicts = steady_pings(&mut enforcer, secs(30), 3, 1);
    assert_eq!(
        verdicts,
        [
            strike(1, secs(30), FIVE_MIN),
            strike(2, secs(60), FIVE_MIN),
            PingVerdict::TooManyPings {
                strikes: 3,
                gap: secs(90),
                allowed: FIVE_MIN
            },
        ]
    );
    assert_eq!(
        reaction(enforcer.policy(), 3, &[no_headers(3), no_headers(1)]),
        [
            Action::SendGoAway {
                last_stream_id: 3,
                code: ErrorCode::EnhanceYourCalm,
                debug: TOO_MANY_PINGS
            },
            Action::SendRstStream {
                stream_id: 1,
                code: ErrorCode::Cancel
            },
            Action::SendRstStream {
                stream_id: 3,
                code: ErrorCode::Cancel
            },
            Action::CloseConnection,
        ]
    );
}

#[test]
fn striking_pings_move_the_reference_in_grpc_go_but_not_in_java() {
    let policy = |base: KeepalivePolicy| KeepalivePolicy {
        min_time: secs(10),
        ..base
    };
    let times = [secs(10), secs(15), secs(21)];

    let mut go = Enforcer::new(policy(KeepalivePolicy::grpc_go()));
    let go_verdicts: Vec<_> = times.iter().map(|&t| go.on_ping_received(t, 1)).collect();
    assert_eq!(
        go_verdicts,
        [
            PingVerdict::Ok { gap: None },
            strike(1, secs(5), secs(10)),
            strike(2, secs(6), secs(10)),
        ]
    );

    let mut java = Enforcer::new(policy(KeepalivePolicy::grpc_java_netty()));
    let java_verdicts: Vec<_> = times.iter().map(|&t| java.on_ping_received(t, 1)).collect();
    assert_eq!(
        java_verdicts,
        [
            PingVerdict::Ok {
                gap: Some(secs(10))
            },
            strike(1, secs(5), secs(10)),
            PingVerdict::Ok {
                gap: Some(secs(11))
            },
        ]
    );
}

#[test]
fn allowed_gap_depends_on_open_calls_and_permission() {
    let go = KeepalivePolicy::grpc_go();
    assert_eq!(go.allowed_gap(0), TWO_HOURS);
    assert_eq!(go.allowed_gap(1), FIVE_MIN);
    let permissive = KeepalivePolicy {
        permit_without_calls: true,
        ..go
    };
    assert_eq!(permissive.allowed_gap(0), FIVE_MIN);
}

#[test]
fn tolerating_zero_goes_away_on_the_first_strike_and_no_limit_never_does() {
    let mut eager = Enforcer::new(KeepalivePolicy {
        max_strikes: MaxStrikes::Tolerate(0),
        ..KeepalivePolicy::c_core()
    });
    let verdicts = steady_pings(&mut eager, secs(1), 2, 1);
    assert!(matches!(
        verdicts[1],
        PingVerdict::TooManyPings { strikes: 1, .. }
    ));

    let mut patient = Enforcer::new(KeepalivePolicy {
        max_strikes: MaxStrikes::NoLimit,
        ..KeepalivePolicy::c_core()
    });
    let verdicts = steady_pings(&mut patient, secs(1), 1000, 1);
    assert!(verdicts
        .iter()
        .all(|v| !matches!(v, PingVerdict::TooManyPings { .. })));
    assert!(matches!(
        verdicts[999],
        PingVerdict::StrikeWithoutLimit { n: 999, .. }
    ));
    assert_eq!(patient.strikes(), 999);
}

/// C-core's `grpc.http2.max_ping_strikes = 0` is "no limit"
/// (`ping_abuse_policy.cc`: `ping_strikes_ > max_ping_strikes_ &&
/// max_ping_strikes_ != 0`), and copying it literally gives that.
#[test]
fn c_core_max_ping_strikes_zero_never_goes_away() {
    let mut copied = Enforcer::new(KeepalivePolicy {
        max_strikes: MaxStrikes::c_core(0),
        ..KeepalivePolicy::c_core()
    });
    let verdicts = steady_pings(&mut copied, secs(1), 100, 1);
    assert!(verdicts
        .iter()
        .all(|v| !matches!(v, PingVerdict::TooManyPings { .. })));
    assert_eq!(MaxStrikes::c_core(-3), MaxStrikes::NoLimit);
    assert_eq!(MaxStrikes::c_core(1), MaxStrikes::Tolerate(1));
    let mut one = Enforcer::new(KeepalivePolicy {
        max_strikes: MaxStrikes::c_core(1),
        ..KeepalivePolicy::c_core()
    });
    let verdicts = steady_pings(&mut one, secs(1), 3, 1);
    assert!(matches!(
        verdicts[1],
        PingVerdict::Strike { n: 1, of: 1, .. }
    ));
    assert!(matches!(
        verdicts[2],
        PingVerdict::TooManyPings { strikes: 2, .. }
    ));
}

#[test]
fn ping_in_the_past_counts_as_too_soon() {
    let mut enforcer = Enforcer::new(KeepalivePolicy::grpc_go());
    let _ = enforcer.on_ping_received(secs(100), 1);
    assert_eq!(
        enforcer.on_ping_received(secs(50), 1),
        strike(1, Duration::ZERO, FIVE_MIN)
    );
}

#[test]
fn presets_carry_their_documented_numbers() {
    let go = KeepalivePolicy::grpc_go();
    assert_eq!(
        (
            go.min_time,
            go.permit_without_calls,
            go.idle_min_time,
            go.max_strikes
        ),
        (FIVE_MIN, false, TWO_HOURS, MaxStrikes::Tolerate(2))
    );
    assert_eq!(go.reset_on, ResetOn::HEADERS_OR_DATA);
    assert_eq!(go.gap_from, GapFrom::PreviousPing);

    let c = KeepalivePolicy::c_core();
    assert_eq!(
        (
            c.min_time,
            c.permit_without_calls,
            c.idle_min_time,
            c.max_strikes
        ),
        (FIVE_MIN, false, TWO_HOURS, MaxStrikes::Tolerate(2))
    );
    assert_eq!(c.reset_on, ResetOn::C_CORE);
    assert_eq!(
        c.on_too_many_pings,
        OnTooManyPings::TrailersOnlyThenReset {
            status: 14,
            message: "Too many pings"
        }
    );

    let java = KeepalivePolicy::grpc_java_netty();
    assert_eq!(
        (java.min_time, java.max_strikes),
        (FIVE_MIN, MaxStrikes::Tolerate(2))
    );
    assert_eq!(java.gap_from, GapFrom::LastAcceptedPing);

    let etcd = KeepalivePolicy::etcd();
    assert_eq!(etcd.min_time, secs(5));
    assert!(!etcd.permit_without_calls);
    assert_eq!(etcd.on_too_many_pings, OnTooManyPings::CloseAfterGoAway);
}

#[test]
fn frame_type_bytes_map_to_server_frames() {
    assert_eq!(ServerFrame::from_type(0x0), Some(ServerFrame::Data));
    assert_eq!(ServerFrame::from_type(0x1), Some(ServerFrame::Headers));
    assert_eq!(ServerFrame::from_type(0x9), Some(ServerFrame::Headers));
    assert_eq!(ServerFrame::from_type(0x8), Some(ServerFrame::WindowUpdate));
    for other in [0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0xa, 0xff] {
        assert_eq!(ServerFrame::from_type(other), None);
    }
}

#[test]
fn public_types_serialize() {
    fn serializable<T: serde::Serialize>() {}
    serializable::<KeepalivePolicy>();
    serializable::<PingVerdict>();
    serializable::<Action>();
    serializable::<OpenStream>();
}
