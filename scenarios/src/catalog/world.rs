//! The reference world most stories share: player → gateway → store.

use std::time::Duration;

use grpc_chaos::{Sim, SimBuilder};

use crate::services::pb::Rally;
use crate::services::{DeadlineMode, Gateway, Store};

/// How the reference services are set up for a story.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup {
    pub(crate) mode: DeadlineMode,
    /// Gateway time before calling the store, *simulated*.
    pub(crate) think: Duration,
    /// Store time per Save, *simulated*.
    pub(crate) work: Duration,
}

/// A sim with `store` and `gateway` hosts serving the reference services.
pub(crate) fn sim(builder: SimBuilder, setup: Setup) -> Sim {
    let mut sim = builder.build();
    let work = setup.work;
    sim.server("store", move |s| {
        s.add_service(Store::with_work(work).into_server())
    });
    sim.server("gateway", move |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, setup.mode, setup.think).into_server())
    });
    sim
}

/// The n-th rally of a story.
pub(crate) fn rally(n: u32) -> Rally {
    Rally {
        match_id: "final".into(),
        player: format!("p{n}"),
        shots: 1,
    }
}

/// A request with a deadline.
pub(crate) fn with_timeout<T>(msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.set_timeout(timeout);
    req
}

/// `ms` milliseconds.
pub(crate) const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}
