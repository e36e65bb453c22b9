//! The connection policies each server host was given
//! ([`Sim::keepalive_policy`](crate::Sim::keepalive_policy),
//! [`Sim::connection_policy`](crate::Sim::connection_policy)), and making
//! them for a connection as it opens. The wiring holds this plan, not the
//! run's whole state.

use std::fmt;
use std::sync::Arc;

use super::{ConnInfo, ConnectionPolicy, KeepaliveEnforcement, KeepalivePolicy};

/// Makes a connection's policy when it opens
/// ([`Sim::connection_policy`](crate::Sim::connection_policy)).
pub(crate) type PolicyFactory =
    Arc<dyn Fn(&ConnInfo<'_>) -> Box<dyn ConnectionPolicy> + Send + Sync>;

/// Keepalive enforcement and connection policies, per server host, in the
/// order added.
#[derive(Default)]
pub(crate) struct PolicyPlan {
    keepalive: Vec<(String, KeepalivePolicy)>,
    policies: Vec<(String, PolicyFactory)>,
}

impl PolicyPlan {
    pub(crate) fn new(
        keepalive: Vec<(String, KeepalivePolicy)>,
        policies: Vec<(String, PolicyFactory)>,
    ) -> Self {
        Self {
            keepalive,
            policies,
        }
    }

    /// The policies of the connection `info` describes, in chain order
    /// from the client: the connection policies of its server host in the
    /// order added, then keepalive enforcement (the server's own, nearest
    /// the server); empty when it has none.
    pub(crate) fn for_conn(&self, info: &ConnInfo<'_>) -> Vec<Box<dyn ConnectionPolicy>> {
        let server = info.server();
        let keepalive = self
            .keepalive
            .iter()
            .filter(|(h, _)| h == server)
            .map(|(_, p)| {
                Box::new(KeepaliveEnforcement::new(*p, info)) as Box<dyn ConnectionPolicy>
            });
        let others = self
            .policies
            .iter()
            .filter(|(h, _)| h == server)
            .map(|(_, make)| make(info));
        // The chain from the client to the server: the boxes in the order
        // added, then the server's own keepalive enforcement.
        others.chain(keepalive).collect()
    }
}

impl fmt::Debug for PolicyPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyPlan")
            .field("keepalive", &self.keepalive)
            .field("policies", &self.policies.len())
            .finish()
    }
}
