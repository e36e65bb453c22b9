//! The user's guide: one page per topic, each example a doctest.
//!
//! Start with [`own_services`], a test of two services calling each other
//! in your own suite; then configure [your server as in
//! production](production_server) and read [what the trace
//! says](reading_a_trace). The other pages stand alone:
//!
//! | page | what it covers |
//! |---|---|
//! | [`own_services`] | a test in your own suite: dependencies, protos, recorded and plain channels |
//! | [`production_server`] | tonic's own `Server` builder, its options and layers, in the sim |
//! | [`serve_fn`] | your own `async fn serve(incoming, shutdown)` on a sim host |
//! | [`faults`] | every fault, how they compose, the wire tap's rules |
//! | [`partitions`] | partitions, black holes, pauses; checks and misconfigurations |
//! | [`handler_panics`] | what a panicking handler does, measured against production |
//! | [`rules_and_policies`] | frame rules and connection policies of your own |
//! | [`replicas`] | replica sets behind one name, tonic's p2c balancer, discovery, health checking (gRFC A17) |
//! | [`keepalive`] | server keepalive enforcement (grpc-go, C-core, Java, etcd) |
//! | [`middleboxes`] | load balancers and proxies in front of a host or on a link |
//! | [`retries`] | gRFC A6 retries and their conformance check |
//! | [`reading_a_trace`] | the text render, the summary, the JSON, the HTML page, Perfetto, Mermaid, snapshots |
//! | [`exploration`] | fault spaces, random schedules, the instant sweep, invariants, shrinking, replaying a find |
//! | [`determinism`] | seeds, failure artifacts, replay, seed sweeps (exploration), the canary, the wall clock |
//! | [`hostile_peers`] | raw HTTP/2 peers that break the protocol |
//! | [`tls`] | TLS between hosts: certificates from the seed, expiry on simulated time, mTLS, rotation, what tonic reports |
//! | [`catalog`] | the failure stories the `grpc-chaos` CLI runs |
//!
//! The pages hold documentation only: no items of the crate live here.
//! Their examples use the repository's reference services
//! (`grpc-chaos-scenarios`: a `Scoreboard` gateway that saves into a
//! `Store`) in place of yours.

#[doc = include_str!("own_services.md")]
pub mod own_services {}

#[doc = include_str!("production_server.md")]
pub mod production_server {}

#[doc = include_str!("serve_fn.md")]
pub mod serve_fn {}

#[doc = include_str!("faults.md")]
pub mod faults {}

#[doc = include_str!("partitions.md")]
pub mod partitions {}

#[doc = include_str!("handler_panics.md")]
pub mod handler_panics {}

#[doc = include_str!("rules_and_policies.md")]
pub mod rules_and_policies {}

#[doc = include_str!("replicas.md")]
pub mod replicas {}

#[doc = include_str!("keepalive.md")]
pub mod keepalive {}

#[doc = include_str!("middleboxes.md")]
pub mod middleboxes {}

#[doc = include_str!("retries.md")]
pub mod retries {}

#[doc = include_str!("reading_a_trace.md")]
pub mod reading_a_trace {}

#[doc = include_str!("exploration.md")]
pub mod exploration {}

#[doc = include_str!("determinism.md")]
pub mod determinism {}

#[doc = include_str!("hostile_peers.md")]
pub mod hostile_peers {}

#[doc = include_str!("catalog.md")]
pub mod catalog {}

#[doc = include_str!("tls.md")]
pub mod tls {}
