//! The rows of a fault: a handler fault that fired, a hold released, a
//! fault that never fired.

use crate::recorder::event::{self, Event, EventKind, LayerSide};
use crate::trace::render::act_words;

/// The `where` column and text of a fault event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::FaultFired(fault_fired) => {
            let event::FaultFired {
                run,
                path,
                action,
                side,
            } = &**fault_fired;
            let side = match side {
                None => "",
                Some(LayerSide::OutsideLayers) => " (outside the server's layers)",
                Some(LayerSide::InsideLayers) => " (inside the server's layers)",
            };
            (
                host,
                format!("{run} fault {} on {path}{side}", act_words::fault(action)),
            )
        }
        EventKind::HoldReleased { name, timed } => (
            host,
            if *timed {
                format!("hold {name:?} released by Fault::release")
            } else {
                format!("hold {name:?} released")
            },
        ),
        EventKind::FaultNeverFired { fault } => (host, format!("fault never fired: {fault}")),
        _ => return None,
    })
}
