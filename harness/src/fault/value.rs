//! The fault type, reached at the crate root only (`grpc_chaos::Fault`);
//! its builders are this module's parent's.

use super::FaultKind;

/// A fault to inject into a run; add it with [`Sim::fault`](crate::Sim::fault).
#[derive(Debug, Clone)]
#[must_use = "a fault does nothing until it is added with Sim::fault"]
pub struct Fault(pub(crate) FaultKind);
